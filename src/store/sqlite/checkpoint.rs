//! Checkpoints off the writer's path. SQLite's automatic checkpoint runs inside the commit
//! that crosses its threshold, on the writer: it copies the log into the database file and
//! syncs both, and under load that stalled every write behind it for tens of milliseconds.
//! Here the writer's connection checkpoints nothing by itself; a thread of its own copies
//! the log into the database while the writer goes on ([`Checkpointer`]). While writes go
//! on, that copy never finds the whole log copied, and SQLite starts the log over only when
//! it is: so once the log is longer than [`RESTART_FRAMES`] the writer checkpoints what is
//! left itself, and the next commit writes the log from its start again — over blocks the
//! file already has, which a sync flushes without growing the file.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;

use crate::store::sql::ConnExt;
use crate::store::{Durability, Store, StoreError};

/// The log's length, in frames (pages), past which the writer starts it over: 16,384 frames
/// of 4 KiB, 64 MiB.
pub const RESTART_FRAMES: u64 = 16_384;

/// How many frames the log holds, as the writer's connection last said after a commit.
#[derive(Debug, Clone, Default)]
pub struct LogLength(Arc<AtomicU64>);

impl LogLength {
    pub fn set(&self, frames: u64) {
        self.0.store(frames, Ordering::Relaxed);
    }

    /// How many frames the log holds.
    pub fn frames(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// How often the checkpointer copies the log while writes go on. Each copy writes a page
/// once however often it changed since the last, and syncs the database file once, beside
/// the syncer's syncs of the log: every 100 ms made whole orders 6-9 % slower than every
/// second (BENCHMARKS.md, the throughput section).
const PERIOD: Duration = Duration::from_secs(1);

/// ... or sooner, once this many frames were written since the last copy, so that the
/// writer's own checkpoint at [`RESTART_FRAMES`] finds little left to copy.
const EAGER_FRAMES: u64 = RESTART_FRAMES / 4;

/// The checkpointer of one database file.
pub struct Checkpointer {
    state: Mutex<Wake>,
    ready: Condvar,
}

#[derive(Default)]
struct Wake {
    written: bool,
    closed: bool,
    /// The log's length at the last commit, and when the last copy began.
    frames: u64,
    copied_at: u64,
    /// The checkpointer waits for a first write since its last copy.
    idle: bool,
}

impl Wake {
    /// Whether enough was written since the last copy to copy it now. A log started over
    /// is shorter than it was: all of it is new.
    fn eager(&self) -> bool {
        let new = if self.frames >= self.copied_at {
            self.frames - self.copied_at
        } else {
            self.frames
        };
        new >= EAGER_FRAMES
    }
}

impl Checkpointer {
    /// Start checkpointing the database at `path` from a connection of its own.
    pub fn start(path: &Path, durability: Durability) -> Result<Arc<Checkpointer>, StoreError> {
        let store = super::open(path, durability)?;
        let checkpointer = Arc::new(Checkpointer {
            state: Mutex::new(Wake::default()),
            ready: Condvar::new(),
        });
        let theirs = checkpointer.clone();
        std::thread::Builder::new()
            .name("store-checkpoint".into())
            .spawn(move || theirs.run(&store))
            .map_err(|e| {
                StoreError::Unavailable(format!("cannot start the store checkpointer: {e}"))
            })?;
        Ok(checkpointer)
    }

    /// A commit was written, leaving the log `frames` long: it has something to copy.
    pub fn written(&self, frames: u64) {
        let mut wake = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        wake.written = true;
        wake.frames = frames;
        // Woken only when this write is what it waits for, not at every commit.
        let wakes = wake.idle || wake.eager();
        drop(wake);
        if wakes {
            self.ready.notify_one();
        }
    }

    /// Stop after the current checkpoint.
    pub fn close(&self) {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .closed = true;
        self.ready.notify_one();
    }

    fn run(&self, store: &Store) {
        let mut wake = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            wake.idle = true;
            while !wake.written && !wake.closed {
                wake = self
                    .ready
                    .wait(wake)
                    .unwrap_or_else(PoisonError::into_inner);
            }
            wake.idle = false;
            if wake.closed {
                return;
            }
            wake.written = false;
            wake.copied_at = wake.frames;
            drop(wake);
            // Passive: copies what no reader still needs, and waits for nobody.
            if let Err(e) = checkpoint(store, "PASSIVE") {
                tracing::warn!(error = %e, "a checkpoint failed; the next one tries again");
            }
            // At most one a period unless much was written: each copies all the log
            // written since the last.
            wake = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            if !wake.closed {
                wake = self
                    .ready
                    .wait_timeout_while(wake, PERIOD, |w| !w.closed && !w.eager())
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
            }
        }
    }
}

/// Run a checkpoint of `mode`; true when it was blocked (by a reader, or another
/// checkpoint) and did not finish.
fn checkpoint(store: &Store, mode: &str) -> Result<bool, StoreError> {
    let sql = format!("PRAGMA wal_checkpoint({mode})");
    store
        .conn()
        .one(&sql, crate::store::sql::params![], |r| r.get::<i64>(0))
        .map(|busy| busy != 0)
}

/// How long the writer's own checkpoint waits for the readers of the old log before it
/// gives up: every write waits while it does.
const RESTART_WAIT_MS: u64 = 50;

/// When the writer starts the log over.
#[derive(Debug, Default)]
pub struct Restarts {
    /// After a restart that readers blocked, the next waits for this much more log.
    not_before: u64,
}

impl Restarts {
    /// Whether a log `frames` long is to be started over now.
    pub fn due(&self, frames: u64) -> bool {
        frames > RESTART_FRAMES.max(self.not_before)
    }

    /// On the writer's connection: copy what the checkpointer has not yet, and wait (briefly)
    /// for the readers of the old log, so the next commit starts the log over. When readers
    /// hold it past the wait, the log grows on and the next try comes after
    /// [`EAGER_FRAMES`] more, so a long read never holds every commit up.
    pub fn restart(&mut self, store: &Store, frames: u64) -> Result<(), StoreError> {
        let conn = store.conn();
        conn.batch(&format!("PRAGMA busy_timeout = {RESTART_WAIT_MS}"))?;
        let blocked = checkpoint(store, "RESTART");
        conn.batch(&format!("PRAGMA busy_timeout = {}", super::BUSY_TIMEOUT_MS))?;
        self.not_before = if blocked? { frames + EAGER_FRAMES } else { 0 };
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::{EAGER_FRAMES, RESTART_FRAMES, Restarts, Wake};

    fn wake(frames: u64, copied_at: u64) -> Wake {
        Wake {
            frames,
            copied_at,
            ..Wake::default()
        }
    }

    #[test]
    fn copies_early_only_after_enough_new_log() {
        assert!(!wake(EAGER_FRAMES - 1, 0).eager());
        assert!(wake(EAGER_FRAMES, 0).eager());
        assert!(!wake(3 * EAGER_FRAMES - 1, 2 * EAGER_FRAMES).eager());
        assert!(wake(3 * EAGER_FRAMES, 2 * EAGER_FRAMES).eager());
    }

    #[test]
    fn a_blocked_restart_waits_for_more_log() {
        let mut restarts = Restarts::default();
        assert!(!restarts.due(RESTART_FRAMES));
        assert!(restarts.due(RESTART_FRAMES + 1));
        restarts.not_before = RESTART_FRAMES + 1 + EAGER_FRAMES;
        assert!(!restarts.due(RESTART_FRAMES + EAGER_FRAMES));
        assert!(restarts.due(RESTART_FRAMES + 2 + EAGER_FRAMES));
    }

    #[test]
    fn a_log_started_over_counts_from_its_start() {
        // The last copy began at a long log; the writer started it over since.
        assert!(!wake(10, 4 * EAGER_FRAMES).eager());
        assert!(wake(EAGER_FRAMES, 4 * EAGER_FRAMES).eager());
    }
}
