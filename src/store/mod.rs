//! The SQLite store: one module per table, each operation the coordinator needs in one
//! transaction, and the queries the console needs.
//!
//! SQLite specifics (pragmas, `RETURNING`, partial indexes) stay inside this module so a
//! PostgreSQL backend can follow with the same operations.
//!
//! Durability ([`Durability`]): WAL with `synchronous = FULL` by default, so a committed
//! transaction is on the disk before it is answered and survives a power loss; with
//! `process_crash`, `synchronous = NORMAL`: it survives a crash of the process, and a power
//! loss can lose the last transactions since the previous checkpoint sync, never corrupt the
//! file. Every operation is one transaction, so an interrupted write leaves nothing
//! half-written.

mod apply;
mod attempts;
pub mod bulk;
mod commands;
mod events;
mod intents;
pub mod metric_series;
mod metrics;
pub mod operator_queries;
mod outbox;
mod paging;
mod pauses;
mod query;
mod receipts;
mod schema;
mod sweeps;

use std::path::Path;
use std::time::Duration;

use rusqlite::Connection;

use crate::domain::{IdError, Refusal, UnknownName};

pub use apply::{Applied, ApplyContext, DispatchPlan, ReceiptSource};
pub use attempts::{AttemptFinish, ReportedFinish};
pub use commands::{CommandAction, NewCommand, RecordedCommand};
pub use events::StoredEvent;
pub use intents::{CreateOutcome, NewIntent};
pub use metrics::{MetricFilter, SERIES_METRICS};
pub use outbox::{Claim, ClaimedRow, ContractOf, HeldSend, OutboxRow};
pub use query::{Cursor, IntentFilter, MAX_PAGE, SortKey, forget_at, search_form};
pub use receipts::ReceiptObservation;

/// Everything that can go wrong in the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("{what} `{id}` not found")]
    NotFound { what: &'static str, id: String },
    #[error("refused: {0}")]
    Refused(#[from] Refusal),
    #[error("the database schema (version {found}) is newer than this program knows ({known})")]
    NewerSchema { found: i64, known: i64 },
    #[error("invalid cursor: {0}")]
    BadCursor(String),
    #[error("stored data is not valid: {0}")]
    Corrupt(String),
    /// The request cannot be served as asked (a client's mistake the store detects).
    #[error("{0}")]
    Conflict(String),
    /// The store cannot serve now (writer stopped, commit failed); not the client's fault.
    #[error("the store is unavailable: {0}")]
    Unavailable(String),
    /// The caller may not change this record (another's attempt, the coordinator's own).
    #[error("{0}")]
    Forbidden(String),
    /// An attempt that already ended was reported again with another outcome.
    #[error("attempt `{id}` already ended as {outcome}; an attempt ends once")]
    AlreadyEnded {
        id: String,
        outcome: crate::domain::AttemptOutcome,
    },
    /// A dispatcher's claim was taken over (its lease ran out): it may neither send nor
    /// record an outcome.
    #[error("outbox row {outbox_seq}: the claim was taken over; its outcome is not recorded")]
    Fenced { outbox_seq: i64 },
}

/// What a committed answer survives. The configuration's `durability`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Durability {
    /// `synchronous = FULL`: every commit is synced to the disk before it is answered
    /// (one sync per group commit), so an answered write survives a power loss.
    #[default]
    PowerLoss,
    /// `synchronous = NORMAL`: a commit survives a crash of the process; a power loss may
    /// lose the last commits since the previous checkpoint sync (never corrupt the file).
    ProcessCrash,
}

impl Durability {
    fn synchronous(self) -> &'static str {
        match self {
            Durability::PowerLoss => "FULL",
            Durability::ProcessCrash => "NORMAL",
        }
    }
}

impl From<IdError> for StoreError {
    fn from(e: IdError) -> Self {
        StoreError::Corrupt(e.to_string())
    }
}

impl From<UnknownName> for StoreError {
    fn from(e: UnknownName) -> Self {
        StoreError::Corrupt(e.to_string())
    }
}

impl From<serde_json::Error> for StoreError {
    fn from(e: serde_json::Error) -> Self {
        StoreError::Corrupt(e.to_string())
    }
}

/// One connection to the database. Open one per thread; WAL lets readers run beside the
/// single writer.
pub struct Store {
    conn: Connection,
    /// Rows a list page walks in sort order before the planner takes over
    /// (`paging::DEFAULT_WINDOW`; smaller in tests, to cross many windows).
    list_window: i64,
}

impl Store {
    /// Open (or create) the database file and bring its schema up to date, with answers
    /// that survive power loss.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        Store::open_with(path, Durability::PowerLoss)
    }

    /// [`Store::open`] with the given durability.
    pub fn open_with(path: &Path, durability: Durability) -> Result<Store, StoreError> {
        let mut conn = Connection::open(path)?;
        conn.busy_timeout(Duration::from_secs(10))?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", durability.synchronous())?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        conn.pragma_update(None, "temp_store", "MEMORY")?;
        conn.pragma_update(None, "cache_size", -65_536)?; // 64 MiB
        conn.set_prepared_statement_cache_capacity(128);
        schema::migrate(&mut conn)?;
        Ok(Store {
            conn,
            list_window: paging::DEFAULT_WINDOW,
        })
    }

    /// Change how many rows a list page walks in sort order before the planner takes over.
    /// Pages are the same whatever it is; only their cost changes. For tests and benchmarks.
    pub fn set_list_window(&mut self, rows: u32) {
        self.list_window = i64::from(rows.max(1));
    }

    /// Keep each statement's plan whatever values are bound to it. SQLite otherwise
    /// re-prepares a statement when a bound value might change its plan, which on the
    /// writer's point lookups and inserts was a tenth of its time and never a better plan.
    pub fn stable_plans(&mut self) -> Result<(), StoreError> {
        self.conn.set_db_config(
            rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
            true,
        )?;
        Ok(())
    }

    /// Run several operations in one transaction (group commit). Each operation should run
    /// through [`Store::atomically`], so one that fails is rolled back alone; all that
    /// succeeded become durable together at the single commit.
    pub fn batch<T>(&mut self, f: impl FnOnce(&mut Store) -> T) -> Result<T, StoreError> {
        self.conn.execute_batch("BEGIN IMMEDIATE")?;
        let out = f(self);
        if let Err(e) = self.conn.execute_batch("COMMIT") {
            let _ = self.conn.execute_batch("ROLLBACK");
            return Err(e.into());
        }
        Ok(out)
    }

    /// Run `f` all or nothing: if it fails, everything it wrote is rolled back.
    pub fn atomically<T>(
        &mut self,
        f: impl FnOnce(&mut Store) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        // Cached statements: a savepoint opens and closes several times per request.
        self.conn.run("SAVEPOINT atomically", [])?;
        match f(self) {
            Ok(out) => {
                self.conn.run("RELEASE atomically", [])?;
                Ok(out)
            }
            Err(e) => {
                self.conn
                    .execute_batch("ROLLBACK TO atomically; RELEASE atomically")?;
                Err(e)
            }
        }
    }

    /// The raw connection, for benchmarks and data generators in this crate.
    pub fn connection(&mut self) -> &mut Connection {
        &mut self.conn
    }
}

/// Statements run through the connection's statement cache, so each is parsed and planned
/// once per connection rather than once per call.
pub(crate) trait Cached {
    fn run<P: rusqlite::Params>(&self, sql: &str, params: P) -> rusqlite::Result<usize>;
    fn one<T, P, F>(&self, sql: &str, params: P, f: F) -> rusqlite::Result<T>
    where
        P: rusqlite::Params,
        F: FnOnce(&rusqlite::Row<'_>) -> rusqlite::Result<T>;
}

impl Cached for Connection {
    fn run<P: rusqlite::Params>(&self, sql: &str, params: P) -> rusqlite::Result<usize> {
        self.prepare_cached(sql)?.execute(params)
    }

    fn one<T, P, F>(&self, sql: &str, params: P, f: F) -> rusqlite::Result<T>
    where
        P: rusqlite::Params,
        F: FnOnce(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
    {
        self.prepare_cached(sql)?.query_row(params, f)
    }
}

/// Conversions between the store's integer columns and the domain's unsigned values.
pub(crate) fn to_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

pub(crate) fn to_u64(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}
