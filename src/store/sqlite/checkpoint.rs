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

    /// Whether the log is long enough to be started over.
    pub fn too_long(&self) -> bool {
        self.0.load(Ordering::Relaxed) > RESTART_FRAMES
    }
}
/// How often the checkpointer copies the log while writes go on.
const PERIOD: Duration = Duration::from_millis(100);

/// The checkpointer of one database file.
pub struct Checkpointer {
    state: Mutex<Wake>,
    ready: Condvar,
}

#[derive(Default)]
struct Wake {
    written: bool,
    closed: bool,
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

    /// A commit was written: the log has something to copy.
    pub fn written(&self) {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .written = true;
        self.ready.notify_one();
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
            while !wake.written && !wake.closed {
                wake = self
                    .ready
                    .wait(wake)
                    .unwrap_or_else(PoisonError::into_inner);
            }
            if wake.closed {
                return;
            }
            wake.written = false;
            drop(wake);
            // Passive: copies what no reader still needs, and waits for nobody.
            if let Err(e) = checkpoint(store, "PASSIVE") {
                tracing::warn!(error = %e, "a checkpoint failed; the next one tries again");
            }
            // At most one a period: each copies all the log written since the last.
            wake = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            if !wake.closed {
                wake = self
                    .ready
                    .wait_timeout_while(wake, PERIOD, |w| !w.closed)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
            }
        }
    }
}

/// Run a checkpoint of `mode`.
fn checkpoint(store: &Store, mode: &str) -> Result<(), StoreError> {
    let sql = format!("PRAGMA wal_checkpoint({mode})");
    store
        .conn()
        .one(&sql, crate::store::sql::params![], |r| r.get::<i64>(0))
        .map(drop)
}

/// On the writer's connection: copy what the checkpointer has not yet, and wait for the
/// readers of the old log, so the next commit starts the log over.
pub fn restart(store: &Store) -> Result<(), StoreError> {
    checkpoint(store, "RESTART")
}
