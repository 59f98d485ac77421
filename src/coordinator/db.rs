//! The coordinator's handle on the store: one writer connection and a few readers, each
//! used on the blocking pool so no async task ever waits on SQLite.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::store::{Store, StoreError};

/// How many read connections to keep.
const READERS: usize = 4;

#[derive(Clone)]
pub struct Db {
    writer: Arc<Mutex<Store>>,
    readers: Arc<Vec<Mutex<Store>>>,
    next: Arc<AtomicUsize>,
}

impl Db {
    pub fn open(path: &PathBuf) -> Result<Db, StoreError> {
        let writer = Store::open(path)?;
        let readers = (0..READERS)
            .map(|_| Store::open(path).map(Mutex::new))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Db {
            writer: Arc::new(Mutex::new(writer)),
            readers: Arc::new(readers),
            next: Arc::new(AtomicUsize::new(0)),
        })
    }

    /// Run `f` on the writer connection off the async threads.
    pub async fn write<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        F: FnOnce(&mut Store) -> Result<T, StoreError> + Send + 'static,
        T: Send + 'static,
    {
        let writer = self.writer.clone();
        run_blocking(move || {
            let mut store = writer
                .lock()
                .map_err(|_| StoreError::Conflict("the store lock was poisoned".into()))?;
            f(&mut store)
        })
        .await
    }

    /// Run `f` on a read connection off the async threads.
    pub async fn read<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        F: FnOnce(&mut Store) -> Result<T, StoreError> + Send + 'static,
        T: Send + 'static,
    {
        let readers = self.readers.clone();
        let index = self.next.fetch_add(1, Ordering::Relaxed) % readers.len();
        run_blocking(move || {
            let mut store = readers[index]
                .lock()
                .map_err(|_| StoreError::Conflict("the store lock was poisoned".into()))?;
            f(&mut store)
        })
        .await
    }
}

async fn run_blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, StoreError> + Send + 'static,
) -> Result<T, StoreError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| StoreError::Conflict(format!("a store task failed: {e}")))?
}
