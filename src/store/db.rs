//! The coordinator's handle on the store, whatever the backend: [`Db::write`] runs a write
//! all or nothing and answers once it is committed; [`Db::read`] runs a read off the async
//! threads. No async task ever waits on the database itself.
//!
//! A [`Backend`] decides how writes meet the database: SQLite's single writer commits the
//! writes waiting in its queue together (group commit); PostgreSQL's pool gives each write a
//! transaction of its own. Either way a caller hears its result only after its commit, so
//! an answer always describes durable state.

use std::sync::Arc;

use tokio::sync::oneshot;

use super::{Store, StoreError};

/// Called after the write's commit with the commit's error, if any.
pub type Finish = Box<dyn FnOnce(Option<&StoreError>) + Send>;
/// One write: runs inside a transaction (alone or with others) and says how to finish.
pub type WriteJob = Box<dyn FnOnce(&mut Store) -> Finish + Send>;
/// One read.
pub type ReadJob = Box<dyn FnOnce(&mut Store) + Send>;

/// How a backend runs writes and reads.
pub trait Backend: Send + Sync {
    /// Queue a write; its finish is called once its transaction committed (or failed).
    fn write(&self, job: WriteJob) -> Result<(), StoreError>;
    /// Run a read on a connection of the backend's, off the async threads.
    fn read(&self, job: ReadJob) -> Result<(), StoreError>;
    /// A connection of its own, for a long read that must not hold a shared one.
    fn open_reader(&self) -> Result<Store, StoreError>;
}

/// A cheap, cloneable handle on one database.
#[derive(Clone)]
pub struct Db {
    backend: Arc<dyn Backend>,
}

impl Db {
    pub fn new(backend: Arc<dyn Backend>) -> Db {
        Db { backend }
    }

    /// Run `f` as one write, all or nothing, and answer once it is committed.
    pub async fn write<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        F: FnOnce(&mut Store) -> Result<T, StoreError> + Send + 'static,
        T: Send + 'static,
    {
        let (done, result) = oneshot::channel();
        let job: WriteJob = Box::new(move |store| {
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
        self.backend.write(job)?;
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
        self.backend.read(Box::new(move |store| {
            let _ = done.send(f(store));
        }))?;
        result
            .await
            .map_err(|_| StoreError::Unavailable("a read did not finish".into()))?
    }

    /// A connection of its own, for a long read.
    pub fn open_reader(&self) -> Result<Store, StoreError> {
        self.backend.open_reader()
    }
}
