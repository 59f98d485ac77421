//! The write queue every backend's writer threads take from: two lanes, the coordinator's
//! own writes (dispatcher, reconciler, operator commands, receipts) ahead of agents' ingest,
//! so a flood of new intents never delays the writes that finish the work already taken on.
//!
//! The queue is closed when its backend is dropped (the writers finish what is queued and
//! end) or when its last writer thread ends, however it ends: a push to a closed queue is an
//! error at once, never a write that waits for ever.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use super::StoreError;
use super::db::WriteJob;

/// Which lane a write waits in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lane {
    /// The coordinator's own writes: taken first.
    Priority,
    /// Agents' ingest: taken when no priority write waits; its length is bounded by
    /// [`Db`](super::db::Db)'s admission, not here.
    Ingest,
}

#[derive(Default)]
struct Lanes {
    priority: VecDeque<WriteJob>,
    ingest: VecDeque<WriteJob>,
    writers: usize,
    closed: bool,
}

/// A write queue with two lanes, shared by a backend and its writer threads.
#[derive(Default)]
pub struct WriteQueue {
    lanes: Mutex<Lanes>,
    ready: Condvar,
    counters: Counters,
}

/// How the writers have been committing, for `/metrics`: how many writes each commit holds
/// and what the syncs cost tell an operator whether the disk or the writer is the bound.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteStats {
    /// Transactions committed; a group commit is one.
    pub commits: u64,
    /// Writes those transactions held.
    pub writes: u64,
    /// Syncs of the log that answered them, where a thread of their own syncs (SQLite's
    /// syncer); 0 where each commit syncs itself.
    pub syncs: u64,
    /// Time spent in those syncs, in microseconds.
    pub sync_micros: u64,
    /// Bytes in SQLite's write-ahead log as the last commit left it; 0 elsewhere.
    pub log_bytes: u64,
    /// Times SQLite's log was started over from its beginning.
    pub log_restarts: u64,
    /// Groups SQLite's writer ran again with savepoints, after a write that failed without
    /// them had changed rows.
    pub reruns: u64,
}

#[derive(Default)]
struct Counters {
    commits: AtomicU64,
    writes: AtomicU64,
    syncs: AtomicU64,
    sync_micros: AtomicU64,
    log_bytes: AtomicU64,
    log_restarts: AtomicU64,
    reruns: AtomicU64,
}

impl WriteQueue {
    pub fn new() -> Arc<WriteQueue> {
        Arc::new(WriteQueue::default())
    }

    /// The lanes. Nothing runs user code while holding them, so a poisoned lock still
    /// holds consistent queues.
    fn lanes(&self) -> MutexGuard<'_, Lanes> {
        self.lanes.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queue `job` in `lane`; an error if no writer will ever take it.
    pub fn push(&self, job: WriteJob, lane: Lane) -> Result<(), StoreError> {
        let mut lanes = self.lanes();
        if lanes.closed {
            return Err(StoreError::Unavailable(
                "the store's writer has stopped".into(),
            ));
        }
        match lane {
            Lane::Priority => lanes.priority.push_back(job),
            Lane::Ingest => lanes.ingest.push_back(job),
        }
        drop(lanes);
        self.ready.notify_one();
        Ok(())
    }

    /// Wait for writes and take up to `max`, priority first; empty once the queue is
    /// closed and drained.
    pub fn take(&self, max: usize) -> Vec<WriteJob> {
        self.take_while(max, || true)
    }

    /// Take up to `max` writes, priority first, waiting for one only while `wait()` holds:
    /// empty when nothing waits and `wait()` is false, or once the queue is closed and
    /// drained. Whatever makes `wait()` false calls [`WriteQueue::wake`] after.
    pub fn take_while(&self, max: usize, wait: impl Fn() -> bool) -> Vec<WriteJob> {
        let mut lanes = self.lanes();
        while lanes.priority.is_empty() && lanes.ingest.is_empty() && !lanes.closed && wait() {
            lanes = self
                .ready
                .wait(lanes)
                .unwrap_or_else(PoisonError::into_inner);
        }
        let mut taken = Vec::with_capacity(max.min(lanes.priority.len() + lanes.ingest.len()));
        while taken.len() < max {
            match lanes.priority.pop_front() {
                Some(job) => taken.push(job),
                None => break,
            }
        }
        while taken.len() < max {
            match lanes.ingest.pop_front() {
                Some(job) => taken.push(job),
                None => break,
            }
        }
        taken
    }

    /// Wake the writers waiting in [`WriteQueue::take_while`], to look at their condition
    /// again.
    pub fn wake(&self) {
        let _lanes = self.lanes();
        self.ready.notify_all();
    }

    /// Count a commit of `writes` writes.
    pub fn committed(&self, writes: usize) {
        self.counters.commits.fetch_add(1, Ordering::Relaxed);
        self.counters
            .writes
            .fetch_add(writes as u64, Ordering::Relaxed);
    }

    /// Count a group run again with savepoints.
    pub fn rerun(&self) {
        self.counters.reruns.fetch_add(1, Ordering::Relaxed);
    }

    /// Count a sync that took `micros`.
    pub fn synced(&self, micros: u64) {
        self.counters.syncs.fetch_add(1, Ordering::Relaxed);
        self.counters
            .sync_micros
            .fetch_add(micros, Ordering::Relaxed);
    }

    /// Note the log's length after a commit, in bytes; a log shorter than the last one
    /// noted was started over. Not only the writer's restarts past the limit count: SQLite
    /// starts the log over by itself at the first commit after a copy took all of it while
    /// no read was on it (so a fresh file shows one soon after its first writes).
    pub fn logged(&self, bytes: u64) {
        let before = self.counters.log_bytes.swap(bytes, Ordering::Relaxed);
        if bytes < before {
            self.counters.log_restarts.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The counts so far.
    pub fn stats(&self) -> WriteStats {
        let c = &self.counters;
        WriteStats {
            commits: c.commits.load(Ordering::Relaxed),
            writes: c.writes.load(Ordering::Relaxed),
            syncs: c.syncs.load(Ordering::Relaxed),
            sync_micros: c.sync_micros.load(Ordering::Relaxed),
            log_bytes: c.log_bytes.load(Ordering::Relaxed),
            log_restarts: c.log_restarts.load(Ordering::Relaxed),
            reruns: c.reruns.load(Ordering::Relaxed),
        }
    }

    /// Stop accepting writes; the writers take what is queued and then end.
    pub fn close(&self) {
        self.lanes().closed = true;
        self.ready.notify_all();
    }

    /// Whether a writer still takes from this queue.
    pub fn is_open(&self) -> bool {
        !self.lanes().closed
    }

    /// Register the calling thread as a writer: the queue closes when the last writer's
    /// guard drops, also when its thread panics.
    pub fn writer(self: &Arc<WriteQueue>) -> Writer {
        self.lanes().writers += 1;
        Writer(self.clone())
    }
}

/// A writer thread's hold on its queue; see [`WriteQueue::writer`].
pub struct Writer(Arc<WriteQueue>);

impl Writer {
    pub fn queue(&self) -> &WriteQueue {
        &self.0
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        let mut lanes = self.0.lanes();
        lanes.writers -= 1;
        if lanes.writers == 0 && !lanes.closed {
            lanes.closed = true;
            // What is still queued will never be taken: dropping it answers its callers.
            let mut stranded: Vec<WriteJob> = lanes.priority.drain(..).collect();
            stranded.extend(lanes.ingest.drain(..));
            drop(lanes);
            drop(stranded);
            self.0.ready.notify_all();
            tracing::error!("the store's last writer ended; writes are refused until restart");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A write that notes its tag when it runs.
    struct Tagged(&'static str, Arc<Mutex<Vec<&'static str>>>);

    impl crate::store::db::Write for Tagged {
        fn run(&mut self, _: &mut crate::store::Store) {
            self.1.lock().expect("lock").push(self.0);
        }
        fn finish(self: Box<Self>) -> crate::store::db::Finish {
            Box::new(|_| {})
        }
    }

    fn job(tag: &'static str, out: Arc<Mutex<Vec<&'static str>>>) -> WriteJob {
        Box::new(Tagged(tag, out))
    }

    fn run(mut job: WriteJob, store: &mut crate::store::Store) {
        job.run(store);
        job.finish()(None);
    }

    #[test]
    fn priority_writes_are_taken_before_ingest_and_in_order() {
        let queue = WriteQueue::new();
        let seen = Arc::new(Mutex::new(Vec::new()));
        queue
            .push(job("i1", seen.clone()), Lane::Ingest)
            .expect("queued");
        queue
            .push(job("p1", seen.clone()), Lane::Priority)
            .expect("queued");
        queue
            .push(job("i2", seen.clone()), Lane::Ingest)
            .expect("queued");
        queue
            .push(job("p2", seen.clone()), Lane::Priority)
            .expect("queued");
        let mut store =
            crate::store::sqlite::open(std::path::Path::new(":memory:"), Default::default())
                .expect("a store");
        for j in queue.take(3) {
            run(j, &mut store);
        }
        assert_eq!(*seen.lock().expect("lock"), ["p1", "p2", "i1"]);
        for j in queue.take(3) {
            run(j, &mut store);
        }
        assert_eq!(*seen.lock().expect("lock"), ["p1", "p2", "i1", "i2"]);
    }

    #[test]
    fn the_queue_closes_when_its_last_writer_ends_even_by_panic() {
        let queue = WriteQueue::new();
        let first = queue.writer();
        let second = queue.writer();
        drop(first);
        assert!(queue.is_open(), "one writer is still there");
        let held = queue.clone();
        let ended = std::thread::spawn(move || {
            let _writer = second;
            panic!("a writer thread dies");
        })
        .join();
        assert!(ended.is_err());
        assert!(!held.is_open());
        let refused = held.push(job("refused", Arc::default()), Lane::Priority);
        assert!(matches!(refused, Err(StoreError::Unavailable(_))));
    }
}
