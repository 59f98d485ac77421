//! The SQLite backend: a [`Conn`](crate::store::sql::Conn) over rusqlite, the file's
//! pragmas and migrations, and the single writer that commits concurrent requests' writes
//! together ([`writer::Db`]). Nothing outside this module names rusqlite (the console's
//! own cache aside).
//!
//! Durability ([`Durability`]): WAL, and by default every commit synced to the disk before
//! it is answered (by the syncer thread beside the writer, `sqlite/sync.rs`), so an answered
//! write survives a power loss; with
//! `process_crash`, `synchronous = NORMAL`: it survives a crash of the process, and a power
//! loss can lose the last transactions since the previous checkpoint sync, never corrupt the
//! file.

mod checkpoint;
mod conn;
#[cfg(test)]
mod frames;
pub mod schema;
pub mod sync;
mod write_back;
pub mod writer;

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rusqlite::Connection;

use super::{Durability, Store, StoreError};
pub use conn::SqliteConn;
pub use writer::{MAX_BATCH, SqliteBackend, db};

impl Durability {
    fn synchronous(self) -> &'static str {
        match self {
            Durability::PowerLoss => "FULL",
            Durability::ProcessCrash => "NORMAL",
        }
    }
}

/// How long a connection waits for a lock another holds before it answers busy.
pub(super) const BUSY_TIMEOUT_MS: u64 = 10_000;

/// The page size of a new file. The writer's changes are small and scattered (a row, and an
/// entry in each of its indexes), and each page one touches is copied whole: into the log
/// at commit and into the file at the checkpoint (and into a savepoint's journal, where a
/// group runs again with savepoints after a failed write). Half
/// of SQLite's default halves those copies for a few more pages on the deeper trees:
/// whole orders ran 14 % faster and the log per order shrank by a third; measured again without
/// savepoints, 1 KiB and 4 KiB pages both cost the writer more (docs/throughput-log.md).
pub(super) const PAGE_SIZE: i64 = 2048;

/// A connection to the file with its pragmas set and its schema brought up to date.
fn connect(path: &Path, durability: Durability) -> Result<Connection, StoreError> {
    let mut conn = Connection::open(path)?;
    // First, so that no statement below answers busy without waiting.
    conn.busy_timeout(Duration::from_millis(BUSY_TIMEOUT_MS))?;
    // Only a file with nothing in it yet takes it; one made before keeps its own.
    conn.pragma_update(None, "page_size", PAGE_SIZE)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", durability.synchronous())?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    conn.pragma_update(None, "temp_store", "MEMORY")?;
    conn.pragma_update(None, "cache_size", -65_536)?; // 64 MiB
    conn.set_prepared_statement_cache_capacity(128);
    schema::migrate(&mut conn)?;
    Ok(conn)
}

/// Open (or create) the database file and bring its schema up to date.
pub fn open(path: &Path, durability: Durability) -> Result<Store, StoreError> {
    Ok(Store::on(Box::new(SqliteConn::new(connect(
        path, durability,
    )?))))
}

/// [`open`] for the single writer: each statement keeps its plan whatever values are bound
/// to it. SQLite otherwise re-prepares a statement when a bound value might change its plan,
/// which on the writer's point lookups and inserts was a tenth of its time and never a
/// better plan.
pub fn open_writer(path: &Path, durability: Durability) -> Result<Store, StoreError> {
    Ok(Store::on(Box::new(SqliteConn::new(writer_connection(
        path, durability,
    )?))))
}

/// [`open_writer`] that checkpoints nothing itself: `log` learns the log's length after
/// each commit, and the writer's loop decides (`checkpoint`).
fn open_writer_following(
    path: &Path,
    durability: Durability,
    log: &checkpoint::LogLength,
) -> Result<Store, StoreError> {
    let mut conn = writer_connection(path, durability)?;
    let log = log.clone();
    // Replaces the automatic checkpoint, which is itself a log hook.
    conn.wal_hook(Some(move |_: &mut rusqlite::hooks::Wal, frames: i32| {
        log.set(u64::try_from(frames).unwrap_or(0));
        Ok(())
    }))?;
    Ok(Store::on(Box::new(SqliteConn::new(conn))))
}

/// What each statement cost on one connection: by its text, how often it ran and how long
/// it took in all (from its first step to its reset, rows read included).
pub type StatementCosts = Arc<Mutex<HashMap<String, (u64, Duration)>>>;

/// [`open_writer`] that counts what each statement costs: for benchmarks that look for
/// where a write's time goes.
pub fn open_writer_profiled(
    path: &Path,
    durability: Durability,
) -> Result<(Store, StatementCosts), StoreError> {
    let mut conn = writer_connection(path, durability)?;
    let costs = StatementCosts::default();
    let sink = costs.clone();
    conn.trace_v2(
        rusqlite::trace::TraceEventCodes::SQLITE_TRACE_PROFILE,
        Some(move |event: rusqlite::trace::TraceEvent<'_>| {
            if let rusqlite::trace::TraceEvent::Profile(statement, took) = event {
                let mut costs = sink.lock().unwrap_or_else(PoisonError::into_inner);
                let entry = costs.entry(statement.sql().into_owned()).or_default();
                entry.0 += 1;
                entry.1 += took;
            }
        }),
    )?;
    Ok((Store::on(Box::new(SqliteConn::new(conn))), costs))
}

/// The writer's page cache, an eighth of the readers'. As each write transaction ends,
/// SQLite drops from the cache any page past the end of the file
/// (`pager_end_transaction`), and under whole orders that walked the writer's whole page
/// table, a pointer a page: with 64 MiB (32,768 pages) 2.9 % of the coordinator's CPU, with
/// this 0.3 %. What the writer reads is mostly what it wrote a moment before (the last
/// pages of each index, the rows of the intents in flight); what falls out is read back
/// from the operating system's cache (docs/throughput-log.md).
const WRITER_CACHE_KIB: i64 = 8_192;

fn writer_connection(path: &Path, durability: Durability) -> Result<Connection, StoreError> {
    let conn = connect(path, durability)?;
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
        true,
    )?;
    conn.pragma_update(None, "cache_size", -WRITER_CACHE_KIB)?;
    Ok(conn)
}
