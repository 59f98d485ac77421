//! The coordinator's handle on the store, whatever the backend: [`Db::write`] runs a write
//! all or nothing and answers once it is committed; [`Db::read`] runs a read off the async
//! threads. No async task ever waits on the database itself.
//!
//! A [`Backend`] decides how writes meet the database: SQLite's single writer commits the
//! writes waiting in its queue together (group commit); PostgreSQL's pool gives each write a
//! transaction of its own. Either way a caller hears its result only after its commit, so
//! an answer always describes durable state.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use tokio::sync::oneshot;

use super::queue::{Lane, WriteStats};
use super::{Store, StoreError};

/// Called after the write's commit with the commit's error, if any.
pub type Finish = Box<dyn FnOnce(Option<&StoreError>) + Send>;

/// One write as a backend runs it: inside a transaction, alone or with others, then
/// answered once.
pub trait Write: Send {
    /// Run the write in the backend's open transaction and keep its outcome. A backend that
    /// rolled the whole transaction back runs it again, and the last run's outcome counts.
    fn run(&mut self, store: &mut Store);
    /// How to answer the write once its transaction committed (or failed).
    fn finish(self: Box<Self>) -> Finish;
}

/// One write, queued.
pub type WriteJob = Box<dyn Write>;
/// One read.
pub type ReadJob = Box<dyn FnOnce(&mut Store) + Send>;

/// How a backend runs writes and reads.
pub trait Backend: Send + Sync {
    /// Queue a write in `lane`; its finish is called once its transaction committed (or
    /// failed).
    fn write(&self, job: WriteJob, lane: Lane) -> Result<(), StoreError>;
    /// Whether a writer still takes writes (false once every writer thread has ended).
    fn writer_alive(&self) -> bool;
    /// Run a read on a connection of the backend's, off the async threads.
    fn read(&self, job: ReadJob) -> Result<(), StoreError>;
    /// A connection of its own, for a long read that must not hold a shared one.
    fn open_reader(&self) -> Result<Store, StoreError>;
    /// How its writers have been committing.
    fn write_stats(&self) -> WriteStats;
}

/// A cheap, cloneable handle on one database.
#[derive(Clone)]
pub struct Db {
    backend: Arc<dyn Backend>,
    ingest: Arc<Admission>,
}

/// How many ingest writes may wait or run at once, and how many were shed.
struct Admission {
    cap: AtomicUsize,
    in_flight: AtomicUsize,
    shed: AtomicU64,
}

/// One admitted ingest write and the places it holds (one an intent it creates); they are
/// given back when the write is answered or dropped unanswered.
struct Admitted(Arc<Admission>, usize);

impl Drop for Admitted {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(self.1, Ordering::AcqRel);
    }
}

/// What the ingest lane holds now, for `/metrics`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IngestLoad {
    pub in_flight: usize,
    pub cap: usize,
    pub shed_total: u64,
}

impl Db {
    pub fn new(backend: Arc<dyn Backend>) -> Db {
        Db {
            backend,
            ingest: Arc::new(Admission {
                cap: AtomicUsize::new(usize::MAX),
                in_flight: AtomicUsize::new(0),
                shed: AtomicU64::new(0),
            }),
        }
    }

    /// Bound the ingest writes waiting or running at once to `cap`; past it
    /// [`Db::ingest`] answers [`StoreError::Overloaded`] at once.
    pub fn limit_ingest(&self, cap: usize) {
        self.ingest.cap.store(cap.max(1), Ordering::Relaxed);
    }

    /// The ingest lane's load and how many writes it shed since start.
    pub fn ingest_load(&self) -> IngestLoad {
        IngestLoad {
            in_flight: self.ingest.in_flight.load(Ordering::Acquire),
            cap: self.ingest.cap.load(Ordering::Relaxed),
            shed_total: self.ingest.shed.load(Ordering::Relaxed),
        }
    }

    /// How the writers have been committing.
    pub fn write_stats(&self) -> WriteStats {
        self.backend.write_stats()
    }

    /// Whether a writer still takes writes.
    pub fn writer_alive(&self) -> bool {
        self.backend.writer_alive()
    }

    /// Run `f` as one write of the coordinator's own, all or nothing, and answer once it
    /// is committed. It waits ahead of every ingest write and is never shed. `f` may run
    /// more than once, on state rolled back to what it was before (a backend's group commit
    /// does that to undo a failed write): what it does outside the store must be as good
    /// done twice (a notice, a counter), and its last run's outcome is the answer.
    pub async fn write<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        F: Fn(&mut Store) -> Result<T, StoreError> + Send + 'static,
        T: Send + 'static,
    {
        self.queue(f, Lane::Priority, None).await
    }

    /// Run `f` as one agent's ingest write: like [`Db::write`], but behind the
    /// coordinator's own writes, and refused at once with [`StoreError::Overloaded`] (nothing
    /// queued, nothing stored) when the ingest lane is full.
    pub async fn ingest<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        F: Fn(&mut Store) -> Result<T, StoreError> + Send + 'static,
        T: Send + 'static,
    {
        self.ingest_many(1, f).await
    }

    /// [`Db::ingest`] for a write of `weight` agents' writes (a batch of intents): it holds
    /// that many places of the lane, and is admitted only when all of them are free (or the
    /// lane is empty, so a write heavier than the whole lane is not refused for ever).
    pub async fn ingest_many<T, F>(&self, weight: usize, f: F) -> Result<T, StoreError>
    where
        F: Fn(&mut Store) -> Result<T, StoreError> + Send + 'static,
        T: Send + 'static,
    {
        let admission = &self.ingest;
        let cap = admission.cap.load(Ordering::Relaxed);
        let weight = weight.max(1);
        let before = admission.in_flight.fetch_add(weight, Ordering::AcqRel);
        let place = Admitted(admission.clone(), weight);
        if before > 0 && before.saturating_add(weight) > cap {
            drop(place);
            admission.shed.fetch_add(weight as u64, Ordering::Relaxed);
            return Err(StoreError::Overloaded { waiting: before });
        }
        self.queue(f, Lane::Ingest, Some(place)).await
    }

    async fn queue<T, F>(&self, f: F, lane: Lane, place: Option<Admitted>) -> Result<T, StoreError>
    where
        F: Fn(&mut Store) -> Result<T, StoreError> + Send + 'static,
        T: Send + 'static,
    {
        let (done, result) = oneshot::channel();
        let job: WriteJob = Box::new(Job {
            f,
            outcome: None,
            done,
            place,
        });
        self.backend.write(job, lane)?;
        result
            .await
            .map_err(|_| StoreError::Unavailable("the store stopped before answering".into()))?
    }

    /// Run `f` on a read connection off the async threads.
    pub async fn read<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        F: FnOnce(&mut Store) -> Result<T, StoreError> + Send + 'static,
        T: Send + 'static,
    {
        let (done, result) = oneshot::channel();
        self.backend.read(read_job(f, done))?;
        result
            .await
            .map_err(|_| StoreError::Unavailable("a read did not finish".into()))?
    }

    /// A connection of its own, for a long read.
    pub fn open_reader(&self) -> Result<Store, StoreError> {
        self.backend.open_reader()
    }
}

/// The job of one read, answering on `done`. A read whose caller is gone by the time a
/// reader takes it up (its request timed out, or the client hung up while it queued) is
/// not run: under a burst of reads behind a slow one, the readers would otherwise work
/// through reads nobody waits for, and the reads still awaited would wait longer.
fn read_job<T, F>(f: F, done: oneshot::Sender<Result<T, StoreError>>) -> ReadJob
where
    F: FnOnce(&mut Store) -> Result<T, StoreError> + Send + 'static,
    T: Send + 'static,
{
    Box::new(move |store| {
        if done.is_closed() {
            return;
        }
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&mut *store)))
            .unwrap_or_else(|panic| {
                // Whatever the read had open is given up, so the connection serves on.
                let _ = store.conn().batch("ROLLBACK");
                Err(StoreError::Panicked(super::panic_message(&*panic)))
            });
        let _ = done.send(outcome);
    })
}

/// A write of [`Db::write`] or [`Db::ingest`] and whom to answer.
struct Job<F, T> {
    f: F,
    /// The last run's outcome; none until the write has run.
    outcome: Option<Result<T, StoreError>>,
    done: oneshot::Sender<Result<T, StoreError>>,
    place: Option<Admitted>,
}

impl<F, T> Write for Job<F, T>
where
    F: Fn(&mut Store) -> Result<T, StoreError> + Send,
    T: Send + 'static,
{
    fn run(&mut self, store: &mut Store) {
        self.outcome = Some(store.atomically(&self.f));
    }

    fn finish(self: Box<Self>) -> Finish {
        let Job {
            outcome,
            done,
            place,
            ..
        } = *self;
        Box::new(move |commit_error: Option<&StoreError>| {
            drop(place);
            let outcome = match (commit_error, outcome) {
                (None, Some(outcome)) => outcome,
                (Some(e), _) => Err(StoreError::Unavailable(format!(
                    "the write was not committed: {e}"
                ))),
                (None, None) => Err(StoreError::Unavailable("the write never ran".into())),
            };
            let _ = done.send(outcome);
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;

    /// A read whose caller stopped waiting before a reader took it up is not run; one still
    /// awaited is run and answered.
    #[test]
    fn a_read_nobody_waits_for_is_not_run() {
        let dir = tempfile::tempdir().expect("a folder");
        let mut store = Store::open(&dir.path().join("r.sqlite")).expect("a store");
        let ran = Arc::new(AtomicBool::new(false));
        let read = |ran: Arc<AtomicBool>| {
            move |_: &mut Store| {
                ran.store(true, Ordering::SeqCst);
                Ok(7)
            }
        };

        let (done, result) = oneshot::channel();
        drop(result);
        read_job(read(ran.clone()), done)(&mut store);
        assert!(!ran.load(Ordering::SeqCst));

        let (done, mut result) = oneshot::channel();
        read_job(read(ran.clone()), done)(&mut store);
        assert!(ran.load(Ordering::SeqCst));
        assert_eq!(result.try_recv().expect("an answer").expect("the read"), 7);
    }
}
