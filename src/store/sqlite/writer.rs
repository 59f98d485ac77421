//! SQLite's [`Backend`]: one writer thread that commits the writes of concurrent requests
//! together (group commit), and a few read connections used from the blocking pool.
//!
//! Group commit: the writer takes every write waiting in its queue (up to [`MAX_BATCH`]),
//! runs them one after another and commits them in one transaction. It runs them without
//! savepoints, which would copy every page a write touches: if one fails after it changed
//! rows, the writer rolls the transaction back and runs the group again with a savepoint
//! each, so a failing write is still undone alone (`commit_group`). With
//! [`Durability::PowerLoss`] that commit is synced before any of its writes is answered; the
//! sync is the syncer thread's (`super::sync`), so the writer commits the next batch while
//! the disk works, and one sync answers every batch committed before it. The coordinator's
//! own writes are taken ahead of agents' ingest ([`WriteQueue`]).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use super::checkpoint::{self, Checkpointer, LogLength, RestartError};
use super::sync::Syncer;
use super::write_back::WriteBackCheck;
use crate::store::db::{Backend, Db, Finish, ReadJob, WriteJob};
use crate::store::events::DurableFeed;
use crate::store::queue::{Lane, WriteQueue, WriteStats, Writer};
use crate::store::sql::{ConnExt, params};
use crate::store::{Durability, LongReads, Store, StoreError};

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
    /// Where the feed's readers stop, when commits are synced by the syncer.
    feed: Option<DurableFeed>,
    /// Told of the readers' long reads: the checkpointer, for a file with a log.
    long_reads: Option<Arc<dyn LongReads>>,
}

impl SqliteBackend {
    /// Open the file; the writer thread ends when the backend is dropped.
    pub fn open(path: &Path, durability: Durability) -> Result<SqliteBackend, StoreError> {
        Self::open_with_log_limit(path, durability, checkpoint::RESTART_BYTES)
    }

    /// [`SqliteBackend::open`] with a log started over past `limit_bytes`.
    fn open_with_log_limit(
        path: &Path,
        durability: Durability,
        limit_bytes: u64,
    ) -> Result<SqliteBackend, StoreError> {
        let length = LogLength::default();
        let writer = super::open_writer_following(path, durability, &length)?;
        // SQLite names the log after the file a link leads to; the syncer must sync that
        // log, not a stale file beside the link.
        let real = real_path(path);
        // The log counts frames, one page each; a file made before keeps its page size.
        let page = page_size(&writer)?;
        let limit = (limit_bytes / page).max(1);
        let writes = WriteQueue::new();
        let syncer = match durability {
            Durability::PowerLoss => {
                // What a process before this one committed but had not synced when it
                // stopped is synced now, before the feed counts it as durable.
                if let Ok(wal) = std::fs::File::open(wal_path(&real)) {
                    wal.sync_data().map_err(|e| {
                        StoreError::Unavailable(format!(
                            "cannot sync the write-ahead log of {}: {e}",
                            path.display()
                        ))
                    })?;
                }
                // Then copied into the file, synced there, and the log emptied. Had that
                // process's syncer failed, the log's pages the kernel could not write are
                // still in memory, marked written: this sync, on a new descriptor, is not
                // told, and new commits would follow frames that are not on the disk (a
                // power loss then takes them all back). The copy puts those pages in the
                // file and syncs it. A read of another process may hold it up, for a second
                // at most: then the log stays as it is, and a warning says so.
                let wait = |ms: u64| checkpoint::busy_timeout(&writer, ms);
                let emptied = wait(1_000)
                    .and_then(|_| checkpoint::checkpoint(&writer, "TRUNCATE"))
                    .map_err(|e| {
                        StoreError::Unavailable(format!(
                            "cannot copy the write-ahead log of {} into it: {e}",
                            path.display()
                        ))
                    })?;
                wait(super::BUSY_TIMEOUT_MS)?;
                if !emptied {
                    tracing::warn!(
                        file = %path.display(),
                        "another process's read held the write-ahead log up: it was not copied into the file at the start"
                    );
                }
                let feed = DurableFeed::new(last_event(&writer)?);
                Syncer::start(&real, feed.clone(), writes.clone())?.map(|s| (s, feed))
            }
            Durability::ProcessCrash => None,
        };
        if syncer.is_some() {
            // The syncer makes each commit durable before it is answered.
            writer.conn().batch("PRAGMA synchronous = NORMAL")?;
        }
        let (syncer, feed) = syncer.unzip();
        // A file's log is copied into it by a thread of its own (an in-memory database has
        // no log to copy).
        let log = if wal_path(&real).exists() {
            // A log that grew longer (a long burst) is cut back when it is started over.
            writer.conn().one(
                &format!("PRAGMA journal_size_limit = {}", 2 * limit_bytes),
                params![],
                |r| r.get::<i64>(0),
            )?;
            Some(Log {
                page,
                checkpointer: Checkpointer::start(&real, durability, limit)?,
                length,
                restarts: checkpoint::Restarts::new(limit, WriteBackCheck::of(&real)?),
            })
        } else {
            writer
                .conn()
                .one("PRAGMA wal_autocheckpoint = 1000", params![], |r| {
                    r.get::<i64>(0)
                })?;
            None
        };
        let long_reads = log
            .as_ref()
            .map(|log| log.checkpointer.clone() as Arc<dyn LongReads>);
        let readers = (0..READERS)
            .map(|_| open_reader(path, durability, feed.as_ref(), &long_reads).map(Mutex::new))
            .collect::<Result<Vec<_>, _>>()?;
        let queue = writes.writer();
        std::thread::Builder::new()
            .name("store-writer".into())
            .spawn(move || write_loop(writer, queue, syncer, log))
            .map_err(|e| StoreError::Unavailable(format!("cannot start the store writer: {e}")))?;
        Ok(SqliteBackend {
            writes,
            readers: Arc::new(readers),
            next: AtomicUsize::new(0),
            path: path.to_path_buf(),
            durability,
            feed,
            long_reads,
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
        open_reader(
            &self.path,
            self.durability,
            self.feed.as_ref(),
            &self.long_reads,
        )
    }

    fn write_stats(&self) -> WriteStats {
        self.writes.stats()
    }
}

impl Drop for SqliteBackend {
    fn drop(&mut self) {
        self.writes.close();
    }
}

/// A file's write-ahead log, as the writer keeps it short: copied into the database by
/// the checkpointer, started over by the writer past its limit.
struct Log {
    /// The file's page size: a frame of the log holds one page.
    page: u64,
    checkpointer: Arc<Checkpointer>,
    length: LogLength,
    restarts: checkpoint::Restarts,
}

/// A database file as a [`Db`].
pub fn db(path: &Path, durability: Durability) -> Result<Db, StoreError> {
    Ok(Db::new(Arc::new(SqliteBackend::open(path, durability)?)))
}

/// A read connection, which sees the change feed only as far as it is durable, and tells
/// `long_reads` of its long reads.
fn open_reader(
    path: &Path,
    durability: Durability,
    feed: Option<&DurableFeed>,
    long_reads: &Option<Arc<dyn LongReads>>,
) -> Result<Store, StoreError> {
    let mut store = super::open(path, durability)?;
    if let Some(feed) = feed {
        store.bound_feed(feed.clone());
    }
    if let Some(watch) = long_reads {
        store.watch_long_reads(watch.clone());
    }
    Ok(store)
}

/// The file a path names, through any link, as SQLite opens it: the path itself when it
/// names no file (an in-memory database).
fn real_path(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Where SQLite keeps the log of the database at `path`.
pub(super) fn wal_path(path: &Path) -> PathBuf {
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    PathBuf::from(wal)
}

/// The size of the file's pages, in bytes.
fn page_size(store: &Store) -> Result<u64, StoreError> {
    let size: i64 = store
        .conn()
        .one("PRAGMA page_size", params![], |r| r.get(0))?;
    Ok(u64::try_from(size).unwrap_or(4096))
}

/// The newest change-feed event written.
fn last_event(store: &Store) -> Result<i64, StoreError> {
    store
        .conn()
        .one("SELECT coalesce(max(seq), 0) FROM events", params![], |r| {
            r.get(0)
        })
}

fn write_loop(mut store: Store, writer: Writer, syncer: Option<Arc<Syncer>>, mut log: Option<Log>) {
    let queue = writer.queue();
    let mut careful = Careful::default();
    loop {
        let jobs = queue.take(MAX_BATCH);
        if jobs.is_empty() {
            if let Some(syncer) = &syncer {
                syncer.close();
            }
            if let Some(log) = &log {
                log.checkpointer.close();
                log.restarts.check_before_close();
            }
            return;
        }
        let (group, committed, undone) =
            commit_group(&mut store, queue, syncer.as_deref(), jobs, careful.elide());
        careful.after(undone);
        if undone {
            queue.rerun();
        }
        let finishes: Vec<Finish> = group.into_iter().map(|job| job.finish()).collect();
        let error = committed.err();
        match &error {
            Some(e) => {
                tracing::error!(error = %e, writes = finishes.len(), "a group commit failed")
            }
            None => queue.committed(finishes.len()),
        }
        if let (Some(log), None) = (&log, &error) {
            queue.logged(log.length.frames() * log.page);
            log.checkpointer.written(log.length.frames());
        }
        match (&syncer, &error) {
            (Some(syncer), None) => match last_event(&store) {
                Ok(seq) => syncer.hand(finishes, seq),
                Err(e) => {
                    // Answered after the sync all the same; the feed's bound stays where it
                    // was until a later commit moves it.
                    tracing::error!(error = %e, "reading the newest event failed");
                    syncer.hand(finishes, 0);
                }
            },
            _ => {
                for finish in finishes {
                    finish(error.as_ref());
                }
            }
        }
        // After the answers are handed on: they do not wait for it.
        if let (Some(log), None) = (&mut log, &error) {
            let frames = log.length.frames();
            if log.restarts.due(frames) {
                match log.restarts.restart(&store, frames, &log.checkpointer) {
                    Ok(()) => {}
                    Err(RestartError::Store(e)) => {
                        tracing::warn!(error = %e, "starting the write-ahead log over failed; it grows on")
                    }
                    // Before the next commit writes the log over.
                    Err(RestartError::Lost(lost)) => lost.stop_the_process(),
                }
            }
        }
    }
}

/// After a group whose writes had to be undone and run again, how many groups run with
/// savepoints before the writer leaves them out again: a run of failing writes (refusals
/// an agent keeps asking for) costs one group in 17 an extra run, not each one.
const CAREFUL_GROUPS: u32 = 16;

/// How many groups are left to run with savepoints since the last one whose writes had to
/// be undone without them.
#[derive(Debug, Default)]
struct Careful(u32);

impl Careful {
    /// Whether the next group may leave its savepoints out.
    fn elide(&self) -> bool {
        self.0 == 0
    }

    /// Note how a group went.
    fn after(&mut self, undone: bool) {
        self.0 = if undone {
            CAREFUL_GROUPS
        } else {
            self.0.saturating_sub(1)
        };
    }
}

/// Run `jobs`, and the writes that join them while there is room, in one transaction and
/// commit it; answer nothing. With `elide`, the writes run without savepoints: a savepoint
/// copies every page a write touches before it changes it. If one of them fails (or
/// panics) after changing rows, what it wrote is undone only by rolling the whole
/// transaction back, and then every write of the group runs again with savepoints, each
/// failed one undone alone; the third value says whether that happened. Returns the group,
/// each write with its outcome.
fn commit_group(
    store: &mut Store,
    queue: &WriteQueue,
    syncer: Option<&Syncer>,
    mut jobs: Vec<WriteJob>,
    elide: bool,
) -> (Vec<WriteJob>, Result<(), StoreError>, bool) {
    if let Err(e) = begin(store) {
        return (jobs, Err(e), false);
    }
    elision(store, elide);
    let mut group: Vec<WriteJob> = Vec::with_capacity(jobs.len());
    let mut undone = false;
    'group: loop {
        let mut taken = std::mem::take(&mut jobs).into_iter();
        for mut job in taken.by_ref() {
            job.run(store);
            group.push(job);
            let unrolled = elide && unrolled(store);
            // A transaction lost is not run again: what a write did after the loss was
            // written without one.
            if lost(store) {
                elision(store, false);
                group.extend(taken);
                return (group, Err(lost_error()), false);
            }
            if unrolled {
                undone = true;
                group.extend(taken);
                break 'group;
            }
        }
        let room = MAX_BATCH - group.len();
        if room == 0 {
            break;
        }
        // Writes that came meanwhile join the transaction; while the syncer is busy, so do
        // those that come until it is free, as they would wait for its next sync anyway.
        // The transaction commits when nothing more is to join.
        jobs = match syncer {
            Some(syncer) => queue.take_while(room, || syncer.busy()),
            None => queue.take_while(room, || false),
        };
        if jobs.is_empty() {
            break;
        }
    }
    elision(store, false);
    if undone {
        if let Err(e) = begin(store) {
            return (group, Err(e), true);
        }
        for job in &mut group {
            job.run(store);
            if lost(store) {
                return (group, Err(lost_error()), true);
            }
        }
    }
    let committed = store.conn().batch("COMMIT");
    if committed.is_err() {
        let _ = store.conn().batch("ROLLBACK");
    }
    (group, committed, undone)
}

/// Open a group's transaction; one still open (the group before it undone) is rolled back
/// first.
fn begin(store: &Store) -> Result<(), StoreError> {
    if store.conn().in_transaction() == Some(true) {
        store.conn().batch("ROLLBACK")?;
    }
    store.conn().batch("BEGIN IMMEDIATE")
}

/// Whether SQLite rolled the group's transaction back by itself, as it does on a full disk
/// or an I/O error: the writes run so far are gone, and the group fails whole. (A write
/// that carried on past such an error wrote on without a transaction; it is answered as
/// failed all the same.)
fn lost(store: &Store) -> bool {
    store.conn().in_transaction() == Some(false)
}

fn lost_error() -> StoreError {
    StoreError::Unavailable("the database rolled the group's transaction back".into())
}

/// Leave the writer's savepoints out, or not.
fn elision(store: &Store, on: bool) {
    if let Some(elision) = store.conn().elision() {
        elision.set(on);
    }
}

/// Whether a write since the last call failed where no savepoint could undo it.
fn unrolled(store: &Store) -> bool {
    store
        .conn()
        .elision()
        .is_some_and(crate::store::sql::Elision::take_unrolled)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

    use super::SqliteBackend;
    use crate::store::db::Db;
    use crate::store::sql::{ConnExt, params};
    use crate::store::{Durability, StoreError};

    /// A reader of a file marks the metric index's snapshots as long reads for the file's
    /// checkpointer, from before the snapshot begins until it ends, however it ends.
    #[test]
    fn a_files_readers_tell_of_their_long_reads() {
        use crate::store::metric_source::MetricSource;
        let dir = tempfile::tempdir().expect("temporary directory");
        let path = dir.path().join("reads.sqlite");
        let backend = SqliteBackend::open(&path, Durability::PowerLoss).expect("open");
        for reader in backend.readers.iter() {
            assert!(reader.lock().expect("reader").long_reads.is_some());
        }
        let mut reader = crate::store::db::Backend::open_reader(&backend).expect("reader");
        assert!(reader.long_reads.is_some(), "the follower's own connection");
        let counted = Arc::new(Counted::default());
        reader.watch_long_reads(counted.clone());
        let during = std::sync::Mutex::new((0, 0));
        let failed = reader.snapshot(&mut |_| {
            *during.lock().expect("during") = counted.seen();
            Err(StoreError::Unavailable("a read that fails".into()))
        });
        assert!(failed.is_err());
        assert_eq!(
            *during.lock().expect("during"),
            (1, 0),
            "marked while it read"
        );
        assert_eq!(counted.seen(), (1, 1), "and told when it ended");
        reader.snapshot(&mut |_| Ok(())).expect("a read");
        assert_eq!(counted.seen(), (2, 2));
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            reader.snapshot(&mut |_| panic!("a read that panics"))
        }));
        assert!(panicked.is_err());
        assert_eq!(counted.seen(), (3, 3), "told even when the read panicked");
        reader
            .snapshot(&mut |_| Ok(()))
            .expect("a read after one that panicked, its snapshot ended");
    }

    /// A snapshot is told ended only once its transaction has ended, however the read
    /// ended: told earlier, the writer's copy would find the log still held.
    #[test]
    fn a_snapshot_is_told_ended_only_once_it_no_longer_holds_the_log() {
        use crate::store::metric_source::MetricSource;
        let (_dir, mut store, probe, write) = store_with_probe();
        // Something new in the log before each snapshot, for it to hold.
        let write = || write(&probe);
        let read = |s: &mut dyn MetricSource| s.last_event().map(|_| ());
        write();
        let failed = store.snapshot(&mut |s| {
            read(s)?;
            Err(StoreError::Unavailable("a read that fails".into()))
        });
        assert!(failed.is_err());
        write();
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            store.snapshot(&mut |s| {
                read(s).expect("a read");
                panic!("a read that panics")
            })
        }));
        assert!(panicked.is_err());
        write();
        store.snapshot(&mut |s| read(s)).expect("a read");
        assert_eq!(
            *probe.held.lock().expect("held"),
            [false, false, false],
            "the log was free each time the read was told ended"
        );
    }

    /// A list that searches a text is a long read, told ended only once its snapshot has
    /// ended, whether it answered or failed; a list without a term is not one.
    #[test]
    fn a_text_search_is_a_long_read_told_ended_once_its_snapshot_has_ended() {
        use crate::store::ops::Queries;
        use crate::store::{Cursor, IntentFilter, SortKey};
        let (_dir, mut store, probe, write) = store_with_probe();
        let searched = IntentFilter {
            q: Some("po-7".into()),
            ..IntentFilter::default()
        };
        write(&probe);
        store
            .list_intents(&IntentFilter::default(), SortKey::Created, false, None, 10)
            .expect("a list");
        assert!(probe.held.lock().expect("held").is_empty(), "not marked");
        write(&probe);
        store
            .list_intents(&searched, SortKey::Created, false, None, 10)
            .expect("a search");
        write(&probe);
        // Refused after its count was read, inside its snapshot.
        let other_order = Cursor {
            sort: SortKey::Attempts,
            ascending: true,
            value: 0,
            seq: 0,
        };
        let refused =
            store.list_intents(&searched, SortKey::Created, false, Some(&other_order), 10);
        assert!(
            matches!(refused, Err(StoreError::BadCursor(_))),
            "{refused:?}"
        );
        assert_eq!(
            *probe.held.lock().expect("held"),
            [false, false],
            "both searches marked, and the log free each time one was told ended"
        );
    }

    /// A store on a new file whose long reads a [`Probe`] on another connection watches,
    /// and a write from that connection that puts something new in the log for the next
    /// read to hold.
    fn store_with_probe() -> (
        tempfile::TempDir,
        crate::store::Store,
        Arc<Probe>,
        impl Fn(&Probe),
    ) {
        let dir = tempfile::tempdir().expect("temporary directory");
        let path = dir.path().join("probed.sqlite");
        let mut store = crate::store::Store::open(&path).expect("open");
        let other = rusqlite::Connection::open(&path).expect("open");
        // Asked without waiting: a snapshot still open answers busy at once.
        other
            .busy_timeout(std::time::Duration::ZERO)
            .expect("busy timeout");
        other.execute_batch("CREATE TABLE probe(x)").expect("write");
        let probe = Arc::new(Probe {
            other: std::sync::Mutex::new(other),
            held: Default::default(),
        });
        store.watch_long_reads(probe.clone());
        let write = |probe: &Probe| {
            let other = probe.other.lock().expect("other");
            other
                .execute_batch("INSERT INTO probe VALUES (1)")
                .expect("write");
        };
        (dir, store, probe, write)
    }

    /// When told a read ended, tries to start the log over from another connection without
    /// waiting, and keeps whether a reader still held it.
    struct Probe {
        other: std::sync::Mutex<rusqlite::Connection>,
        held: std::sync::Mutex<Vec<bool>>,
    }

    impl crate::store::LongReads for Probe {
        fn begun(&self) {}
        fn ended(&self) {
            let busy: i64 = self
                .other
                .lock()
                .expect("other")
                .query_row("PRAGMA wal_checkpoint(RESTART)", [], |r| r.get(0))
                .expect("checkpoint");
            self.held.lock().expect("held").push(busy != 0);
        }
    }

    /// Long reads begun and ended.
    #[derive(Default)]
    struct Counted(AtomicU64, AtomicU64);

    impl Counted {
        fn seen(&self) -> (u64, u64) {
            (self.0.load(Ordering::SeqCst), self.1.load(Ordering::SeqCst))
        }
    }

    impl crate::store::LongReads for Counted {
        fn begun(&self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
        fn ended(&self) {
            self.1.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// A new file takes the page size the writer is tuned for; a file made before keeps its
    /// own and opens as before, its log limit counted in its own pages.
    #[tokio::test]
    async fn a_new_file_has_small_pages_and_an_old_one_keeps_its_own() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let new = dir.path().join("new.sqlite");
        let old = dir.path().join("old.sqlite");
        {
            let conn = rusqlite::Connection::open(&old).expect("open");
            conn.execute_batch("PRAGMA page_size = 4096; CREATE TABLE before (x INTEGER);")
                .expect("an old file");
        }
        for (path, expected) in [(&new, super::super::PAGE_SIZE), (&old, 4096)] {
            let db = Db::new(Arc::new(
                SqliteBackend::open(path, Durability::PowerLoss).expect("open"),
            ));
            let page = db.read(|s| super::page_size(s)).await.expect("page size");
            assert_eq!(page, expected as u64, "{}", path.display());
            // Both take writes: the intents table is there, migrated.
            let count = db
                .write(|s| {
                    s.conn()
                        .one("SELECT count(*) FROM intents", params![], |r| {
                            r.get::<i64>(0)
                        })
                })
                .await
                .expect("a write");
            assert_eq!(count, 0);
        }
    }

    /// A log left behind by a process that stopped without closing is copied into the file,
    /// synced there and emptied before the store takes a write under `power_loss`. Had that
    /// process's syncer failed, the log's unwritten pages would still be in memory, marked
    /// written, and new commits would follow frames that are not on the disk.
    #[tokio::test]
    async fn a_log_left_behind_is_copied_into_the_file_before_a_write_follows_it() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let (path, copy) = (dir.path().join("a.sqlite"), dir.path().join("b.sqlite"));
        let conn = rusqlite::Connection::open(&path).expect("open");
        conn.execute_batch(
            "PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0;
             CREATE TABLE left (x INTEGER); INSERT INTO left VALUES (1), (2), (3);",
        )
        .expect("a process that commits");
        // What it leaves behind, its connection never closed.
        std::fs::copy(&path, &copy).expect("the file");
        std::fs::copy(super::wal_path(&path), super::wal_path(&copy)).expect("the log");
        assert!(
            std::fs::metadata(super::wal_path(&copy))
                .expect("log")
                .len()
                > 0
        );
        let db = Db::new(Arc::new(
            SqliteBackend::open(&copy, Durability::PowerLoss).expect("open"),
        ));
        let log = std::fs::metadata(super::wal_path(&copy))
            .expect("log")
            .len();
        assert_eq!(log, 0, "the log left behind is still to be built on");
        let rows = db
            .read(|s| {
                s.conn()
                    .one("SELECT count(*) FROM left", params![], |r| r.get::<i64>(0))
            })
            .await
            .expect("read");
        assert_eq!(rows, 3, "what the log held is in the file");
        drop(conn);
    }

    /// Through a link, SQLite writes the log beside the file the link leads to; the log the
    /// syncer syncs is that one, not a stale file beside the link (which a writer at
    /// `synchronous = NORMAL` would leave unsynced).
    #[tokio::test]
    async fn through_a_link_the_log_synced_is_the_one_sqlite_writes() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let (file, link) = (
            dir.path().join("real.sqlite"),
            dir.path().join("link.sqlite"),
        );
        std::fs::write(&file, b"").expect("an empty file");
        std::os::unix::fs::symlink(&file, &link).expect("a link");
        std::fs::write(super::wal_path(&link), b"stale").expect("a stale log beside the link");
        let real = std::fs::canonicalize(&file).expect("real");
        assert_eq!(
            super::wal_path(&super::real_path(&link)),
            super::wal_path(&real)
        );
        let db = Db::new(Arc::new(
            SqliteBackend::open(&link, Durability::PowerLoss).expect("open"),
        ));
        db.write(|s| s.conn().batch("CREATE TABLE t (x INTEGER)"))
            .await
            .expect("a write");
        assert!(
            super::wal_path(&real).exists(),
            "SQLite's log is the real file's"
        );
        assert_eq!(
            std::fs::read(super::wal_path(&link)).expect("stale"),
            b"stale",
            "the stale file is not SQLite's log"
        );
    }

    /// What a write of [`commit_group`]'s tests does.
    type Act = fn(&mut crate::store::Store) -> Result<(), StoreError>;

    /// A write's runs and its last outcome.
    type Ran = (u64, Result<(), StoreError>);

    /// A write of [`commit_group`]'s tests: what it does, how often it ran, its last
    /// outcome.
    struct Step {
        act: Act,
        runs: Arc<AtomicU64>,
        outcome: Arc<std::sync::Mutex<Option<Result<(), StoreError>>>>,
    }

    impl crate::store::db::Write for Step {
        fn run(&mut self, store: &mut crate::store::Store) {
            self.runs.fetch_add(1, Ordering::Relaxed);
            let outcome = store.atomically(self.act);
            *self.outcome.lock().expect("lock") = Some(outcome);
        }
        fn finish(self: Box<Self>) -> crate::store::db::Finish {
            Box::new(|_| {})
        }
    }

    fn insert(s: &crate::store::Store, n: i64) -> Result<usize, StoreError> {
        s.conn().run("INSERT INTO kept (n) VALUES (?1)", &[&n])
    }

    /// The writer's connection to a new file in `dir`, with the table the steps write.
    fn writer_with_table(dir: &tempfile::TempDir) -> crate::store::Store {
        let store = crate::store::sqlite::open_writer(
            &dir.path().join("group.sqlite"),
            Durability::ProcessCrash,
        )
        .expect("open");
        store
            .conn()
            .batch("CREATE TABLE kept (n INTEGER PRIMARY KEY)")
            .expect("table");
        store
    }

    /// Runs `acts` as one group with savepoints left out; returns whether the group was
    /// undone and run again, the rows kept, and each write's runs and last outcome.
    fn group_of(acts: &[Act]) -> (bool, Vec<i64>, Vec<Ran>) {
        let dir = tempfile::tempdir().expect("temporary directory");
        let mut store = writer_with_table(&dir);
        let steps: Vec<(Arc<AtomicU64>, Arc<std::sync::Mutex<_>>)> = acts
            .iter()
            .map(|_| (Arc::default(), Arc::default()))
            .collect();
        let jobs = acts
            .iter()
            .zip(&steps)
            .map(|(act, (runs, outcome))| {
                Box::new(Step {
                    act: *act,
                    runs: runs.clone(),
                    outcome: outcome.clone(),
                }) as crate::store::db::WriteJob
            })
            .collect();
        let queue = crate::store::queue::WriteQueue::new();
        let (group, committed, undone) = super::commit_group(&mut store, &queue, None, jobs, true);
        committed.expect("the group commits");
        assert_eq!(group.len(), acts.len(), "every write is in the group");
        let kept = store
            .conn()
            .rows("SELECT n FROM kept ORDER BY n", params![], |r| r.get(0))
            .expect("rows");
        let ran = steps
            .iter()
            .map(|(runs, outcome)| {
                let outcome = outcome.lock().expect("lock").take().expect("it ran");
                (runs.load(Ordering::Relaxed), outcome)
            })
            .collect();
        (undone, kept, ran)
    }

    /// Writes that all succeed run once each, without savepoints, and are committed.
    #[test]
    fn a_group_of_good_writes_runs_each_once() {
        let (undone, kept, ran) =
            group_of(&[|s| insert(s, 1).map(drop), |s| insert(s, 2).map(drop)]);
        assert!(!undone);
        assert_eq!(kept, [1, 2]);
        assert!(
            ran.iter()
                .all(|(runs, outcome)| *runs == 1 && outcome.is_ok()),
            "{ran:?}"
        );
    }

    /// With savepoints left out, a write that fails halfway, and an operation that fails
    /// halfway inside a write that carries on without it, are undone by rolling the group
    /// back and running it again with savepoints: what each wrote before failing is gone,
    /// everything else is kept, and each write answers as it would have with savepoints.
    #[test]
    fn a_write_that_fails_without_its_savepoint_is_undone_alone_by_running_the_group_again() {
        let (undone, kept, ran) = group_of(&[
            |s| insert(s, 1).map(drop),
            // An operation in its own savepoint fails after a row; the write goes on.
            |s| {
                let failed: Result<(), StoreError> = (|| {
                    let tx = s.conn().savepoint()?;
                    tx.run("INSERT INTO kept (n) VALUES (20)", params![])?;
                    Err(StoreError::Conflict(
                        "the operation changed its mind".into(),
                    ))
                })();
                assert!(failed.is_err());
                insert(s, 2).map(drop)
            },
            // A write after it: on the first run it never ran, as the group stopped there.
            |s| insert(s, 4).map(drop),
        ]);
        assert!(undone, "the group ran again");
        assert_eq!(kept, [1, 2, 4], "row 20 was undone, the rest kept");
        let runs: Vec<u64> = ran.iter().map(|(runs, _)| *runs).collect();
        assert_eq!(runs, [2, 2, 1], "the first two ran twice, the last once");
        assert!(ran.iter().all(|(_, outcome)| outcome.is_ok()), "{ran:?}");

        // Writes that fail after a row, by an error and by a panic: undone the same way,
        // each answering its own failure.
        let (undone, kept, ran) = group_of(&[
            |s| insert(s, 1).map(drop),
            |s| {
                insert(s, 30)?;
                Err(StoreError::Conflict("the write changed its mind".into()))
            },
            |s| {
                insert(s, 40)?;
                panic!("a write panics after a row")
            },
            |s| insert(s, 5).map(drop),
        ]);
        assert!(undone);
        assert_eq!(kept, [1, 5]);
        let runs: Vec<u64> = ran.iter().map(|(runs, _)| *runs).collect();
        assert_eq!(runs, [2, 2, 1, 1]);
        assert!(matches!(ran[1].1, Err(StoreError::Conflict(_))), "{ran:?}");
        assert!(matches!(ran[2].1, Err(StoreError::Panicked(_))), "{ran:?}");
        assert!(ran[0].1.is_ok() && ran[3].1.is_ok(), "{ran:?}");
    }

    /// After a group that had to be run again, the next sixteen keep their savepoints and
    /// the one after leaves them out again; another such group starts the count over.
    #[test]
    fn groups_after_one_run_again_keep_their_savepoints_for_a_while() {
        let mut careful = super::Careful::default();
        assert!(careful.elide(), "a fresh writer leaves savepoints out");
        careful.after(true);
        let kept: Vec<bool> = (0..super::CAREFUL_GROUPS + 1)
            .map(|_| {
                let elide = careful.elide();
                careful.after(false);
                elide
            })
            .collect();
        assert!(kept[..16].iter().all(|elide| !elide), "{kept:?}");
        assert!(kept[16], "the seventeenth leaves them out again");
        careful.after(true);
        assert!(!careful.elide());
    }

    /// A write refused before it changed a row, and an operation that gave up before it
    /// wrote, need no undoing: the group is not run again.
    #[test]
    fn a_write_refused_before_it_wrote_does_not_run_the_group_again() {
        let (undone, kept, ran) = group_of(&[
            |s| insert(s, 1).map(drop),
            |s| {
                let _ = s.conn().savepoint()?;
                Err(StoreError::Conflict("refused before any write".into()))
            },
            |s| {
                let gave_up: Result<(), StoreError> = (|| {
                    let _tx = s.conn().savepoint()?;
                    Err(StoreError::Conflict("nothing to do".into()))
                })();
                assert!(gave_up.is_err());
                insert(s, 3).map(drop)
            },
        ]);
        assert!(!undone, "nothing was written that needed undoing");
        assert_eq!(kept, [1, 3]);
        let runs: Vec<u64> = ran.iter().map(|(runs, _)| *runs).collect();
        assert_eq!(runs, [1, 1, 1]);
        assert!(matches!(ran[1].1, Err(StoreError::Conflict(_))), "{ran:?}");
    }

    /// A transaction SQLite rolled back by itself (here: a write that ends it) fails its
    /// group whole, with nothing kept and nothing run again, even where the write that lost
    /// it had changed rows and failed; the next group commits as usual.
    #[test]
    fn a_group_whose_transaction_was_lost_fails_whole_and_the_next_commits() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let mut store = writer_with_table(&dir);
        let queue = crate::store::queue::WriteQueue::new();
        let runs: Arc<AtomicU64> = Arc::default();
        let step = |act: Act, runs: Arc<AtomicU64>| {
            Box::new(Step {
                act,
                runs,
                outcome: Arc::default(),
            }) as crate::store::db::WriteJob
        };
        let losses: [Act; 2] = [
            |s| s.conn().batch("ROLLBACK"),
            |s| {
                insert(s, 7)?;
                s.conn().batch("ROLLBACK")?;
                Err(StoreError::Conflict("the disk is full".into()))
            },
        ];
        for elide in [true, false] {
            for lose in losses {
                runs.store(0, Ordering::Relaxed);
                let jobs = vec![
                    step(|s| insert(s, 1).map(drop), runs.clone()),
                    step(lose, Arc::default()),
                    step(|s| insert(s, 2).map(drop), Arc::default()),
                ];
                let (group, committed, undone) =
                    super::commit_group(&mut store, &queue, None, jobs, elide);
                assert_eq!(group.len(), 3);
                assert!(
                    matches!(committed, Err(StoreError::Unavailable(_))),
                    "{committed:?}"
                );
                assert!(!undone, "a lost transaction is not run again");
                assert_eq!(runs.load(Ordering::Relaxed), 1, "the first write ran once");
                let (_, committed, undone) = super::commit_group(
                    &mut store,
                    &queue,
                    None,
                    vec![step(|s| insert(s, 9).map(drop), Arc::default())],
                    elide,
                );
                committed.expect("the next group commits");
                assert!(!undone);
                let kept: Vec<i64> = store
                    .conn()
                    .rows("SELECT n FROM kept ORDER BY n", params![], |r| r.get(0))
                    .expect("rows");
                assert_eq!(kept, [9], "nothing of the lost group was kept");
                store
                    .conn()
                    .run("DELETE FROM kept", params![])
                    .expect("clear");
            }
        }
    }

    /// A write that touches thousands of pages and then fails is undone whole, and the
    /// writes queued beside it are kept. (Its savepoint's journal holds a copy of every page
    /// it touched; kept in memory, however large: a build that let it spill to a temporary
    /// file past 1 MiB failed this write as "database or disk is full".)
    #[tokio::test]
    async fn a_failed_write_of_thousands_of_pages_is_undone_whole() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let path = dir.path().join("large.sqlite");
        let db = Db::new(Arc::new(
            SqliteBackend::open(&path, Durability::ProcessCrash).expect("open"),
        ));
        // About 4 MiB of rows: 2,000 pages.
        db.write(|s| {
            s.conn().run(
                "CREATE TABLE wide (n INTEGER PRIMARY KEY, body TEXT NOT NULL)",
                params![],
            )?;
            s.conn().run(
                "WITH RECURSIVE k(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM k WHERE n < 4000) \
                 INSERT INTO wide SELECT n, printf('%.1000c', 'a') FROM k",
                params![],
            )?;
            Ok(())
        })
        .await
        .expect("rows");
        let before = db.write(|s| {
            s.conn()
                .run("UPDATE wide SET body = 'b' WHERE n = 1", params![])
        });
        let large = db.write(|s| {
            s.conn()
                .run("UPDATE wide SET body = printf('%.1000c', 'z')", params![])?;
            Err::<(), _>(StoreError::Conflict("changed its mind".into()))
        });
        let after = db.write(|s| {
            s.conn()
                .run("UPDATE wide SET body = 'c' WHERE n = 4000", params![])
        });
        let (before, large, after) = tokio::join!(before, large, after);
        assert_eq!((before.expect("before"), after.expect("after")), (1, 1));
        assert!(matches!(large, Err(StoreError::Conflict(_))), "{large:?}");
        assert_eq!(
            db.write_stats().reruns,
            1,
            "its group was run again with savepoints, once"
        );
        let bodies: Vec<(String, i64)> = db
            .read(|s| {
                s.conn().rows(
                    "SELECT substr(body, 1, 1), count(*) FROM wide GROUP BY 1 ORDER BY 1",
                    params![],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
            })
            .await
            .expect("bodies");
        assert_eq!(
            bodies,
            vec![("a".into(), 3998), ("b".into(), 1), ("c".into(), 1)],
            "the failed write left nothing, the two around it stayed"
        );
    }

    /// Under writes that never stop, the log stays near its limit: it is copied and started
    /// over, not left to grow while the writer and the checkpointer stand in each other's
    /// way. While the checkpointer waits for a core in the middle of a copy (up to a second),
    /// the log grows to at most twice its limit and one group (sixteen rows of 16 KiB here)
    /// before the writes wait for that copy.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_log_stays_near_its_limit_under_writes_that_never_stop() {
        log_under_writes(0).await;
    }

    /// ... and while readers read all along: a read open when the writer copies holds the
    /// part of the log it reads from, and the writer waits (briefly) for it to end.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_log_stays_near_its_limit_while_readers_read_all_along() {
        log_under_writes(2).await;
    }

    async fn log_under_writes(readers: usize) {
        const LIMIT: u64 = 1 << 20; // bytes
        let dir = tempfile::tempdir().expect("temporary directory");
        let path = dir.path().join("log.sqlite");
        let backend =
            SqliteBackend::open_with_log_limit(&path, Durability::PowerLoss, LIMIT).expect("open");
        let db = Db::new(Arc::new(backend));
        db.write(|s| {
            s.conn()
                .batch("CREATE TABLE scratch (id INTEGER PRIMARY KEY, body BLOB NOT NULL)")
        })
        .await
        .expect("table");

        // The log's length, read off the file while the writes go on: it grows only until
        // it is started over.
        let wal = super::wal_path(&path);
        let longest = Arc::new(AtomicU64::new(0));
        let done = Arc::new(AtomicBool::new(false));
        let watcher = {
            let (longest, done) = (longest.clone(), done.clone());
            std::thread::spawn(move || {
                while !done.load(Ordering::Relaxed) {
                    if let Ok(meta) = std::fs::metadata(&wal) {
                        longest.fetch_max(meta.len(), Ordering::Relaxed);
                    }
                    std::thread::yield_now();
                }
            })
        };
        // Readers, each reading every row in a transaction of its own, over and over.
        let readers = (0..readers)
            .map(|_| {
                let (path, done) = (path.clone(), done.clone());
                std::thread::spawn(move || {
                    let store =
                        crate::store::sqlite::open(&path, Durability::PowerLoss).expect("a reader");
                    let mut reads = 0u64;
                    while !done.load(Ordering::Relaxed) {
                        store.conn().batch("BEGIN").expect("begin");
                        store
                            .conn()
                            .one(
                                "SELECT coalesce(sum(length(body)), 0) FROM scratch",
                                &[],
                                |r| r.get::<i64>(0),
                            )
                            .expect("read");
                        store.conn().batch("COMMIT").expect("commit");
                        reads += 1;
                    }
                    reads
                })
            })
            .collect::<Vec<_>>();
        // Sixteen writers, each rewriting rows of 16 KiB: 16 MiB of rows, sixteen times the limit.
        let writers = (0..16u64).map(|w| {
            let db = db.clone();
            tokio::spawn(async move {
                for i in 0..64u64 {
                    db.write(move |s| {
                        s.conn().run(
                            "INSERT OR REPLACE INTO scratch (id, body) VALUES (?1, zeroblob(16384))",
                            &[&(((w * 64 + i) % 97) as i64)],
                        )?;
                        Ok::<_, StoreError>(())
                    })
                    .await
                    .expect("write");
                }
            })
        });
        for writer in writers.collect::<Vec<_>>() {
            writer.await.expect("writer");
        }
        done.store(true, Ordering::Relaxed);
        watcher.join().expect("watcher");
        for reader in readers {
            assert!(reader.join().expect("reader") > 0, "a reader read nothing");
        }

        let stats = db.write_stats();
        assert!(
            stats.log_restarts >= 4,
            "the log was started over {} times",
            stats.log_restarts
        );
        assert!(
            stats.log_bytes <= 4 * LIMIT,
            "{} KiB after the last commit",
            stats.log_bytes / 1024
        );
        let longest = longest.load(Ordering::Relaxed);
        assert!(
            longest <= 4 * LIMIT,
            "the log grew to {} KiB; its limit is {} KiB",
            longest / 1024,
            LIMIT / 1024
        );
    }
}
