//! The SQLite store: one module per table, each operation the coordinator needs in one
//! transaction, and the queries the console needs.
//!
//! SQLite specifics (pragmas, `RETURNING`, partial indexes) stay inside this module so a
//! PostgreSQL backend can follow with the same operations.
//!
//! Durability ([`Durability`]): WAL, and by default every commit synced to the disk before
//! it is answered (by the syncer thread beside the writer, `sqlite/sync.rs`), so an answered
//! write survives a power loss; with
//! `process_crash`, `synchronous = NORMAL`: it survives a crash of the process, and a power
//! loss can lose the last transactions since the previous checkpoint sync, never corrupt the
//! file. Every operation is one transaction, so an interrupted write leaves nothing
//! half-written.

mod apply;
mod approvals;
mod attempts;
pub mod bulk;
mod commands;
pub mod db;
pub(crate) mod events;
mod intents;
pub mod location;
pub mod lookups;
pub mod metric_source;
mod metrics;
pub mod migrations;
pub mod operator_queries;
mod outbox;
mod paging;
mod pauses;
mod payloads;
#[cfg(test)]
mod plans;
pub mod postgres;
mod query;
pub mod queue;
mod receipts;
mod revisits;
mod search;
pub mod sql;
pub mod sqlite;
mod sweeps;

use std::path::Path;
use std::sync::Arc;

use sql::{Conn, Dialect};

use crate::domain::{IdError, Refusal, UnknownName};

pub use apply::{Applied, ApplyContext, Approval, DispatchPlan, Locked, ReceiptSource};

/// The store's operations, one small trait per table module, all implemented by [`Store`]
/// over any backend's connection: `use crate::store::ops::*` brings them into scope.
pub mod ops {
    pub use super::StoreOps;
    pub use super::apply::Transitions;
    pub use super::approvals::Approvals;
    pub use super::attempts::Attempts;
    pub use super::commands::Commands;
    pub use super::events::ChangeFeed;
    pub use super::intents::Intents;
    pub use super::lookups::Lookups;
    pub use super::metrics::Metrics;
    pub use super::operator_queries::OperatorQueries;
    pub use super::outbox::Outbox;
    pub use super::pauses::Pauses;
    pub use super::payloads::Payloads;
    pub use super::query::Queries;
    pub use super::receipts::Receipts;
    pub use super::revisits::Revisits;
    pub use super::sweeps::Sweeps;
}

/// Everything the coordinator asks of a store, as one bound.
pub trait StoreOps:
    ops::Intents
    + ops::Transitions
    + ops::Approvals
    + ops::Attempts
    + ops::Outbox
    + ops::Receipts
    + ops::Commands
    + ops::OperatorQueries
    + ops::Pauses
    + ops::Payloads
    + ops::Queries
    + ops::Metrics
    + ops::ChangeFeed
    + ops::Sweeps
    + ops::Revisits
    + ops::Lookups
{
}

impl<T> StoreOps for T where
    T: ops::Intents
        + ops::Transitions
        + ops::Approvals
        + ops::Attempts
        + ops::Outbox
        + ops::Receipts
        + ops::Commands
        + ops::OperatorQueries
        + ops::Pauses
        + ops::Payloads
        + ops::Queries
        + ops::Metrics
        + ops::ChangeFeed
        + ops::Sweeps
        + ops::Revisits
        + ops::Lookups
{
}
pub use attempts::{AttemptFinish, ReportedFinish};
pub use commands::{CommandAction, NewCommand, RecordedCommand, TargetPage};
pub use db::Db;
pub use location::Location;
pub use lookups::{DueLookup, LookupPace};

/// The coordinator's handle on the database at `location`.
pub fn open_db(location: &Location, durability: Durability) -> Result<Db, StoreError> {
    match location {
        Location::Sqlite(path) => sqlite::db(path, durability),
        Location::Postgres(url) => postgres::db(url),
    }
}
pub use events::StoredEvent;
pub use intents::{CreateOutcome, LinkRefusal, Links, NewIntent};
pub use metrics::{MetricFilter, SERIES_METRICS};
pub use outbox::{Claim, ClaimedRow, ContractOf, HeldSend, SendTerms};
pub use query::{Cursor, IntentFilter, MAX_PAGE, SortKey, forget_at};
pub use receipts::{HELD_BY_ANOTHER, LOOKUP_HELD_BY_ANOTHER, ReceiptObservation};
pub use revisits::{MAX_REVISITS, Sighting};
pub use search::search_form;

/// Everything that can go wrong in the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database error: {0}")]
    Database(String),
    /// A statement that had to return a row returned none.
    #[error("no row where one was expected")]
    NoRow,
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
    /// The ingest lane is full: the write was refused before it was queued.
    #[error("the write queue is full ({waiting} ingest writes waiting)")]
    Overloaded { waiting: usize },
    /// A dispatch of an intent that changes nothing downstream.
    #[error("{0}")]
    NotDispatchable(String),
    /// The operation panicked; its transaction was rolled back and the connection kept.
    #[error("the operation panicked: {0}")]
    Panicked(String),
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
    /// Every commit is synced to the disk before it is answered (one sync for all the
    /// commits written since the last), so an answered write survives a power loss.
    #[default]
    PowerLoss,
    /// `synchronous = NORMAL`: a commit survives a crash of the process; a power loss may
    /// lose the last commits since the previous checkpoint sync (never corrupt the file).
    ProcessCrash,
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

/// One connection to the database, on any backend. Open one per thread; the operations
/// (one module per table) each run in one transaction.
pub struct Store {
    conn: Box<dyn Conn + Send>,
    /// Rows a list page walks in sort order before the planner takes over
    /// (`paging::DEFAULT_WINDOW`; smaller in tests, to cross many windows).
    list_window: i64,
    /// At most how many intents a list's providers, or its pauses in force, hold for it to
    /// read those intents first (`query::FEW_READ_FIRST`; changed in tests, to read both
    /// ways).
    few_read_first: u32,
    /// At most how many pauses in force a list filtered by pauses writes as their scopes
    /// (`query::FEW_PAUSES`; changed in tests, to read both ways).
    few_pauses: u32,
    /// The last change-feed event this connection may show, when the backend answers
    /// commits before they are synced (`events::DurableFeed`).
    feed_bound: Option<events::DurableFeed>,
    /// Told of this connection's long reads, when the backend's writer wants to know.
    long_reads: Option<Arc<dyn LongReads>>,
}

/// Told when a read that may hold its snapshot long begins and ends: the metric index's
/// catch-up with the change feed, tens of milliseconds a second under load, and seconds
/// for a whole load. SQLite's writer starts its log over only once no read holds the old
/// one, and every write waits while it tries: it leaves the log to the checkpointer while
/// such a read is under way (`sqlite::checkpoint`).
pub trait LongReads: Send + Sync {
    /// Before the read's snapshot begins; it may wait briefly (for a copy of the writer's
    /// under way to end).
    fn begun(&self);
    /// Once the snapshot has ended.
    fn ended(&self);
}

/// How a read's transaction begins, ends, and is undone when its end fails.
pub(crate) struct ReadBounds {
    pub begin: &'static str,
    pub end: &'static str,
    pub undo: &'static [&'static str],
}

impl ReadBounds {
    /// A read-only transaction of its own, one snapshot on either backend.
    pub(crate) fn snapshot(dialect: Dialect) -> ReadBounds {
        ReadBounds {
            begin: dialect.begin_snapshot(),
            end: "COMMIT",
            undo: &["ROLLBACK"],
        }
    }

    /// A list's savepoint: a transaction of its own outside one, and inside one a part of
    /// it that ends without ending it. Meant for a read run outside any transaction, as
    /// readers run theirs: inside one, on PostgreSQL, the undo of an end that failed would
    /// end the outer transaction too.
    pub(crate) const LIST: ReadBounds = ReadBounds {
        begin: "SAVEPOINT list",
        end: "RELEASE list",
        undo: &["ROLLBACK TO list", "RELEASE list"],
    };
}

/// A long read under way, told ended when dropped, whatever ended it.
pub(crate) struct LongRead(Arc<dyn LongReads>);

impl Drop for LongRead {
    fn drop(&mut self) {
        self.0.ended();
    }
}

impl Store {
    /// The store's operations over `conn`, whose schema is up to date.
    pub fn on(conn: Box<dyn Conn + Send>) -> Store {
        Store {
            conn,
            list_window: paging::DEFAULT_WINDOW,
            few_read_first: query::FEW_READ_FIRST,
            few_pauses: query::FEW_PAUSES,
            feed_bound: None,
            long_reads: None,
        }
    }

    /// Open (or create) a SQLite file and bring its schema up to date, with answers that
    /// survive power loss.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        sqlite::open(path, Durability::PowerLoss)
    }

    /// [`Store::open`] with the given durability.
    pub fn open_with(path: &Path, durability: Durability) -> Result<Store, StoreError> {
        sqlite::open(path, durability)
    }

    /// Open a store on the database at `location` (durability is SQLite's to choose; a
    /// PostgreSQL server has its own).
    ///
    /// A PostgreSQL store is used, and dropped, off any async runtime's threads: its blocking
    /// client runs a runtime of its own.
    pub fn open_at(location: &Location, durability: Durability) -> Result<Store, StoreError> {
        match location {
            Location::Sqlite(path) => sqlite::open(path, durability),
            Location::Postgres(url) => postgres::open(url),
        }
    }

    /// Show the change feed only up to `bound`.
    pub(crate) fn bound_feed(&mut self, bound: events::DurableFeed) {
        self.feed_bound = Some(bound);
    }

    /// Tell `watch` of this connection's long reads.
    pub(crate) fn watch_long_reads(&mut self, watch: Arc<dyn LongReads>) {
        self.long_reads = Some(watch);
    }

    /// Mark a long read under way on this connection until the answer is dropped.
    fn long_read(&self) -> Option<LongRead> {
        self.long_reads.as_ref().map(|watch| {
            watch.begun();
            LongRead(watch.clone())
        })
    }

    /// Run `read` in one transaction of this connection, begun and ended as `bounds` say.
    /// When `long`, the read is marked as a long read from before its transaction begins
    /// until that has ended (by its end, or by its undoing when the end fails), however
    /// `read` ended: a read told ended while its snapshot still held the log would let the
    /// writer's copy wait for it, and a connection left inside it could begin no other.
    /// (When both fail, the read is told ended all the same: a connection that can end no
    /// transaction has lost its file, and a mark left behind would hold the writer back for
    /// good.)
    pub(crate) fn held_read<T>(
        &mut self,
        long: bool,
        bounds: &ReadBounds,
        read: impl FnOnce(&mut Store) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mark = if long { self.long_read() } else { None };
        self.conn.batch(bounds.begin)?;
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| read(self)));
        let ended = self.conn.batch(bounds.end);
        if ended.is_err() {
            for undo in bounds.undo {
                let _ = self.conn.batch(undo);
            }
        }
        drop(mark);
        let value = result.unwrap_or_else(|panic| std::panic::resume_unwind(panic))?;
        ended?;
        Ok(value)
    }

    /// The newest change-feed event this connection may show.
    fn feed_upto(&self) -> i64 {
        self.feed_bound
            .as_ref()
            .map_or(i64::MAX, events::DurableFeed::upto)
    }

    /// Change how many rows a list page walks in sort order before the planner takes over.
    /// Pages are the same whatever it is; only their cost changes. For tests and benchmarks.
    pub fn set_list_window(&mut self, rows: u32) {
        self.list_window = i64::from(rows.max(1));
    }

    /// Change at most how many intents a list's providers, or its pauses in force, may
    /// hold for the list to read those intents first rather than ask it of each intent.
    /// Lists are the same whatever it is; only their cost changes. For tests and benchmarks.
    pub fn set_few_read_first(&mut self, intents: u32) {
        self.few_read_first = intents;
    }

    /// Change at most how many pauses in force a list filtered by pauses writes as their
    /// scopes rather than ask each intent. Lists are the same whatever it is; only their
    /// cost changes. For tests and benchmarks.
    pub fn set_few_pauses(&mut self, pauses: u32) {
        self.few_pauses = pauses;
    }

    /// Run several operations in one transaction (group commit). Each operation should run
    /// through [`Store::atomically`], so one that fails is rolled back alone (or, where the
    /// connection leaves savepoints out, marks it for the caller to undo the whole
    /// transaction); all that succeeded become durable together at the single commit.
    pub fn batch<T>(&mut self, f: impl FnOnce(&mut Store) -> T) -> Result<T, StoreError> {
        let begin = match self.conn.dialect() {
            Dialect::Sqlite => "BEGIN IMMEDIATE",
            Dialect::Postgres => "BEGIN",
        };
        self.conn.batch(begin)?;
        let out = f(self);
        if let Err(e) = self.conn.batch("COMMIT") {
            let _ = self.conn.batch("ROLLBACK");
            return Err(e);
        }
        Ok(out)
    }

    /// Run `f` all or nothing: if it fails, everything it wrote is rolled back. Where the
    /// connection leaves savepoints out ([`sql::Elision`]), a failure after rows were
    /// changed marks the connection instead, for its writer to roll back the whole
    /// transaction.
    pub fn atomically<T>(
        &mut self,
        f: impl FnOnce(&mut Store) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let elided = self.conn.elision().is_some_and(sql::Elision::is_on);
        let changes = if elided {
            self.conn.total_changes()
        } else {
            self.conn.batch("SAVEPOINT atomically")?;
            None
        };
        // A panic inside `f` is rolled back like an error, so the writer thread and its
        // transaction (other callers' writes) survive it.
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(self)))
            .unwrap_or_else(|panic| Err(StoreError::Panicked(panic_message(&*panic))));
        if elided {
            if outcome.is_err()
                && let Some(elision) = self.conn.elision()
            {
                elision.undo_since(changes, self.conn.total_changes());
            }
            return outcome;
        }
        match outcome {
            Ok(out) => {
                self.conn.batch("RELEASE atomically")?;
                Ok(out)
            }
            Err(e) => {
                self.conn.batch("ROLLBACK TO atomically")?;
                self.conn.batch("RELEASE atomically")?;
                Err(e)
            }
        }
    }

    /// The connection, for statements the operations do not cover (tests, benchmarks and
    /// data generators read and shape the data through it).
    pub fn conn(&self) -> &dyn Conn {
        self.conn.as_conn()
    }
}

/// The text a panic was raised with, when it has one.
pub fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}

/// Conversions between the store's integer columns and the domain's unsigned values.
pub(crate) fn to_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

pub(crate) fn to_u64(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}
