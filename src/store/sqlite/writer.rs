//! The coordinator's handle on the store: one writer thread that commits the writes of
//! concurrent requests together (group commit), and a few read connections. No async task
//! ever waits on SQLite: writes go to the writer thread, reads to the blocking pool.
//!
//! Group commit: the writer takes every write waiting in its queue (up to [`MAX_BATCH`]),
//! runs each in its own savepoint — a failing write is rolled back alone — and commits them
//! in one transaction. A caller hears its result only after that commit, so an answer
//! always describes durable state.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};

use tokio::sync::oneshot;

use crate::store::{Durability, Store, StoreError};

/// How many read connections to keep.
const READERS: usize = 4;
/// The most writes committed together.
pub const MAX_BATCH: usize = 256;

/// Called after the batch's commit with its error, if any.
type Finish = Box<dyn FnOnce(Option<&StoreError>) + Send>;
type Job = Box<dyn FnOnce(&mut Store) -> Finish + Send>;

#[derive(Clone)]
pub struct Db {
    jobs: mpsc::Sender<Job>,
    readers: Arc<Vec<Mutex<Store>>>,
    next: Arc<AtomicUsize>,
}

impl Db {
    /// Open the database; the writer thread ends when the last handle is dropped. With
    /// [`Durability::PowerLoss`] each group commit is synced before any of its writes is
    /// answered: one sync per batch, however many writes it holds.
    pub fn open(path: &Path, durability: Durability) -> Result<Db, StoreError> {
        let writer = super::open_writer(path, durability)?;
        let readers = (0..READERS)
            .map(|_| super::open(path, durability).map(Mutex::new))
            .collect::<Result<Vec<_>, _>>()?;
        let (jobs, queue) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("store-writer".into())
            .spawn(move || write_loop(writer, queue))
            .map_err(|e| StoreError::Unavailable(format!("cannot start the store writer: {e}")))?;
        Ok(Db {
            jobs,
            readers: Arc::new(readers),
            next: Arc::new(AtomicUsize::new(0)),
        })
    }

    /// Run `f` on the writer, all or nothing, and answer once it is committed.
    pub async fn write<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        F: FnOnce(&mut Store) -> Result<T, StoreError> + Send + 'static,
        T: Send + 'static,
    {
        let (done, result) = oneshot::channel();
        let job: Job = Box::new(move |store| {
            let outcome = store.atomically(f);
            Box::new(move |commit_error: Option<&StoreError>| {
                let outcome = match commit_error {
                    None => outcome,
                    Some(e) => Err(StoreError::Unavailable(format!(
                        "the write was not committed: {e}"
                    ))),
                };
                let _ = done.send(outcome);
            })
        });
        self.jobs
            .send(job)
            .map_err(|_| StoreError::Unavailable("the store writer has stopped".into()))?;
        result.await.map_err(|_| {
            StoreError::Unavailable("the store writer stopped before answering".into())
        })?
    }

    /// Run `f` on a read connection off the async threads.
    pub async fn read<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        F: FnOnce(&mut Store) -> Result<T, StoreError> + Send + 'static,
        T: Send + 'static,
    {
        let readers = self.readers.clone();
        let index = self.next.fetch_add(1, Ordering::Relaxed) % readers.len();
        tokio::task::spawn_blocking(move || {
            let mut store = readers[index].lock().map_err(|_| {
                StoreError::Unavailable("a read connection lock was poisoned".into())
            })?;
            f(&mut store)
        })
        .await
        .map_err(|e| StoreError::Unavailable(format!("a store task failed: {e}")))?
    }
}

fn write_loop(mut store: Store, queue: mpsc::Receiver<Job>) {
    while let Ok(first) = queue.recv() {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match queue.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        let mut finishes = Vec::with_capacity(batch.len());
        let committed = store.batch(|s| {
            for job in batch {
                finishes.push(job(s));
            }
        });
        let error = committed.err();
        if let Some(e) = &error {
            tracing::error!(error = %e, writes = finishes.len(), "a group commit failed");
        }
        for finish in finishes {
            finish(error.as_ref());
        }
    }
}
