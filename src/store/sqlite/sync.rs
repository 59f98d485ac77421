//! Durability off the writer's path. With [`Durability::PowerLoss`](crate::store::Durability)
//! the writer commits with `synchronous = NORMAL` (SQLite writes the commit's frames to the
//! WAL without waiting for the disk) and hands the commit's answers to the syncer thread,
//! which syncs the WAL file and only then answers them. One sync covers every commit written
//! before it; while one runs, the writer keeps its transaction open and lets the writes that
//! arrive join it, and commits when the syncer is free.
//!
//! What a synced WAL holds survives a power loss exactly as with `synchronous = FULL`: SQLite
//! syncs the WAL header itself whenever it starts the log again, and a commit is recovered
//! from the WAL once its frames are on the disk. What differs is only that other connections
//! can read a commit before it is synced; nothing acts on that:
//!
//! - every write is answered after its sync, so a caller never hears of a write that a power
//!   loss could take back, and a write decided from what it read (the dispatcher's claim, for
//!   one) is answered only once everything it read is on the disk too;
//! - the change feed, which outside clients resume from by sequence number, shows events only
//!   up to the last synced one ([`DurableFeed`]), so a number a client has seen is never
//!   given to another event after a power loss.

use std::fs::File;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use crate::store::StoreError;
use crate::store::db::Finish;
use crate::store::events::DurableFeed;
use crate::store::queue::WriteQueue;

/// Commits waiting for their sync.
#[derive(Default)]
struct Pending {
    answers: Vec<Finish>,
    /// The newest event these commits wrote.
    last_event: i64,
    closed: bool,
}

/// The writer's side of the syncer: where committed answers wait for the disk.
pub struct Syncer {
    pending: Mutex<Pending>,
    ready: Condvar,
    /// A sync is running or commits wait for one.
    busy: AtomicBool,
}

impl Syncer {
    /// Start the syncer of the database at `path`: `None` when its WAL file cannot be opened
    /// (an in-memory database), and the writer then syncs each commit itself.
    pub fn start(
        path: &Path,
        feed: DurableFeed,
        writes: Arc<WriteQueue>,
    ) -> Result<Option<Arc<Syncer>>, StoreError> {
        let Ok(wal) = File::open(super::writer::wal_path(path)) else {
            return Ok(None);
        };
        let syncer = Arc::new(Syncer {
            pending: Mutex::new(Pending::default()),
            ready: Condvar::new(),
            busy: AtomicBool::new(false),
        });
        let theirs = syncer.clone();
        std::thread::Builder::new()
            .name("store-syncer".into())
            .spawn(move || theirs.run(&wal, &feed, &writes))
            .map_err(|e| StoreError::Unavailable(format!("cannot start the store syncer: {e}")))?;
        Ok(Some(syncer))
    }

    fn lock(&self) -> MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Answer `answers` once the commit that holds them (and every one before it) is on the
    /// disk; `last_event` is the newest change-feed event written so far.
    pub fn hand(&self, answers: Vec<Finish>, last_event: i64) {
        let mut pending = self.lock();
        pending.answers.extend(answers);
        pending.last_event = pending.last_event.max(last_event);
        self.busy.store(true, Ordering::Release);
        drop(pending);
        self.ready.notify_one();
    }

    /// Whether a sync is running or commits wait for one. Until it is over, a new commit
    /// would only wait for the next one: the writer keeps its transaction open meanwhile and
    /// lets more writes join it, and is woken (`WriteQueue::wake`) when the syncer is free.
    pub fn busy(&self) -> bool {
        self.busy.load(Ordering::Acquire)
    }

    /// No more commits come: answer what waits, then end.
    pub fn close(&self) {
        self.lock().closed = true;
        self.ready.notify_one();
    }

    fn run(&self, wal: &File, feed: &DurableFeed, writes: &WriteQueue) {
        let mut failed: Option<String> = None;
        loop {
            let mut pending = self.lock();
            while pending.answers.is_empty() && !pending.closed {
                self.busy.store(false, Ordering::Release);
                writes.wake();
                pending = self
                    .ready
                    .wait(pending)
                    .unwrap_or_else(PoisonError::into_inner);
            }
            if pending.answers.is_empty() {
                return;
            }
            let answers = std::mem::take(&mut pending.answers);
            let last_event = pending.last_event;
            drop(pending);
            let synced = match &failed {
                Some(e) => Err(e.clone()),
                None => {
                    let began = Instant::now();
                    let synced = wal.sync_data().map_err(|e| e.to_string());
                    writes.synced(u64::try_from(began.elapsed().as_micros()).unwrap_or(u64::MAX));
                    synced
                }
            };
            match synced {
                Ok(()) => {
                    feed.advance(last_event);
                    for answer in answers {
                        answer(None);
                    }
                }
                Err(e) => {
                    // After a failed sync the kernel may have dropped the pages it could not
                    // write: nothing committed since the last good sync can be promised, now
                    // or later. The store stops taking writes; a restart copies the log
                    // into the file before anything follows it (`writer.rs`).
                    if failed.is_none() {
                        tracing::error!(error = %e, "syncing the write-ahead log failed; the store stops taking writes");
                        writes.close();
                        failed = Some(e.clone());
                    }
                    let error = StoreError::Unavailable(format!(
                        "the write may not be durable: syncing the log failed: {e}"
                    ));
                    for answer in answers {
                        answer(Some(&error));
                    }
                }
            }
        }
    }
}
