//! SQLite's [`Backend`]: one writer thread that commits the writes of concurrent requests
//! together (group commit), and a few read connections used from the blocking pool.
//!
//! Group commit: the writer takes every write waiting in its queue (up to [`MAX_BATCH`]),
//! runs each in its own savepoint — a failing write is rolled back alone — and commits them
//! in one transaction. With [`Durability::PowerLoss`] that commit is synced before any of its
//! writes is answered: one sync per batch, however many writes it holds. The coordinator's
//! own writes are taken ahead of agents' ingest ([`WriteQueue`]).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::store::db::{Backend, Db, ReadJob, WriteJob};
use crate::store::queue::{Lane, WriteQueue, Writer};
use crate::store::{Durability, Store, StoreError};

/// How many read connections to keep.
const READERS: usize = 4;
/// The most writes committed together.
pub const MAX_BATCH: usize = 256;

/// The writer's queue and the read connections of one database file.
pub struct SqliteBackend {
    writes: Arc<WriteQueue>,
    readers: Arc<Vec<Mutex<Store>>>,
    next: AtomicUsize,
    path: PathBuf,
    durability: Durability,
}

impl SqliteBackend {
    /// Open the file; the writer thread ends when the backend is dropped.
    pub fn open(path: &Path, durability: Durability) -> Result<SqliteBackend, StoreError> {
        let writer = super::open_writer(path, durability)?;
        let readers = (0..READERS)
            .map(|_| super::open(path, durability).map(Mutex::new))
            .collect::<Result<Vec<_>, _>>()?;
        let writes = WriteQueue::new();
        let queue = writes.writer();
        std::thread::Builder::new()
            .name("store-writer".into())
            .spawn(move || write_loop(writer, queue))
            .map_err(|e| StoreError::Unavailable(format!("cannot start the store writer: {e}")))?;
        Ok(SqliteBackend {
            writes,
            readers: Arc::new(readers),
            next: AtomicUsize::new(0),
            path: path.to_path_buf(),
            durability,
        })
    }
}

impl Backend for SqliteBackend {
    fn write(&self, job: WriteJob, lane: Lane) -> Result<(), StoreError> {
        self.writes.push(job, lane)
    }

    fn writer_alive(&self) -> bool {
        self.writes.is_open()
    }

    fn read(&self, job: ReadJob) -> Result<(), StoreError> {
        let readers = self.readers.clone();
        let index = self.next.fetch_add(1, Ordering::Relaxed) % readers.len();
        tokio::task::spawn_blocking(move || {
            match readers[index].lock() {
                Ok(mut store) => job(&mut store),
                Err(poisoned) => {
                    // A read that panicked leaves the connection as good as before: SQLite
                    // rolled back whatever it had open.
                    job(&mut poisoned.into_inner())
                }
            }
        });
        Ok(())
    }

    fn open_reader(&self) -> Result<Store, StoreError> {
        super::open(&self.path, self.durability)
    }
}

impl Drop for SqliteBackend {
    fn drop(&mut self) {
        self.writes.close();
    }
}

/// A database file as a [`Db`].
pub fn db(path: &Path, durability: Durability) -> Result<Db, StoreError> {
    Ok(Db::new(Arc::new(SqliteBackend::open(path, durability)?)))
}

fn write_loop(mut store: Store, writer: Writer) {
    loop {
        let batch = writer.queue().take(MAX_BATCH);
        if batch.is_empty() {
            return;
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
