//! The log as our SQLite writes it. The SQLite this crate builds (`vendor/libsqlite3-sys`,
//! one change of ours) writes the frames a commit appends to the write-ahead log in a few
//! calls instead of two calls a frame. These tests hold what that change must not alter:
//! a log left behind by a process that never checkpointed nor closed is recovered whole,
//! frame by frame, by the next process to open the file: many small commits, a commit
//! larger than one gathering of frames, a transaction too large for the page cache
//! (written before its commit, some of its pages written over again), and a log written
//! over from its start once it was copied into the file. A frame that lands anywhere but
//! where SQLite would have put it alone fails the recovery.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, params};

use super::writer::wal_path;

/// A connection as the writer's: WAL, 2 KiB pages, no automatic checkpoint, so that
/// everything committed stays in the log.
fn open(path: &Path, cache_pages: i64) -> Connection {
    let conn = Connection::open(path).expect("a database");
    conn.execute_batch(&format!(
        "PRAGMA page_size = 2048; PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;
         PRAGMA wal_autocheckpoint = 0; PRAGMA cache_size = {cache_pages};
         CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, k TEXT UNIQUE, v BLOB);"
    ))
    .expect("pragmas and a table");
    conn
}

/// A folder with a database file opened as the writer's (with `cache_pages` of page cache),
/// and where its copy goes.
fn files(cache_pages: i64) -> (tempfile::TempDir, PathBuf, PathBuf, Connection) {
    let dir = tempfile::tempdir().expect("a folder");
    let (path, copy) = (dir.path().join("a.sqlite"), dir.path().join("b.sqlite"));
    let conn = open(&path, cache_pages);
    (dir, path, copy, conn)
}

/// The rows `ids` in commits of 30, as the writer's groups.
fn commit_in_groups_of_30(conn: &Connection, ids: std::ops::Range<i64>) {
    let mut first = ids.start;
    while first < ids.end {
        let last = (first + 30).min(ids.end);
        conn.execute_batch("BEGIN").expect("begin");
        insert(conn, first..last);
        conn.execute_batch("COMMIT").expect("commit");
        first = last;
    }
}

/// The database file and its log copied as they are on the disk while the connection
/// still holds them open: what a process that died at that moment leaves behind.
fn left_behind(from: &Path, to: &Path) {
    std::fs::copy(from, to).expect("the database file");
    std::fs::copy(wal_path(from), wal_path(to)).expect("the log");
}

/// Row `n`'s key and content: 300 to 999 bytes, so that rows fill pages unevenly.
fn row(n: i64) -> (String, Vec<u8>) {
    let fill = u8::try_from(n % 251).expect("below 251");
    (
        format!("key-{n:08}"),
        vec![fill; 300 + usize::try_from(n % 700).expect("small")],
    )
}

/// The files at `path` left behind as by a process that died (copied to `copy`) and opened
/// again: every row is back, each with its own content (one byte longer where `grown` says
/// so), and the file is whole.
fn assert_recovered_after_a_death(
    path: &Path,
    copy: &Path,
    rows: i64,
    grown: impl Fn(i64) -> bool,
) {
    left_behind(path, copy);
    let conn = Connection::open(copy).expect("the copy");
    let found: i64 = conn
        .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
        .expect("a count");
    assert_eq!(found, rows, "rows recovered from the log");
    let mut read = conn
        .prepare("SELECT id, k, v FROM t ORDER BY id")
        .expect("a statement");
    let mut each = read.query([]).expect("rows");
    while let Some(r) = each.next().expect("a row") {
        let id: i64 = r.get(0).expect("id");
        let (k, mut v) = row(id);
        if grown(id) {
            v.push(0xff);
        }
        assert_eq!(r.get::<_, String>(1).expect("k"), k);
        assert_eq!(r.get::<_, Vec<u8>>(2).expect("v"), v, "row {id}");
    }
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .expect("a check");
    assert_eq!(check, "ok");
}

fn insert(conn: &Connection, ids: std::ops::Range<i64>) {
    let mut stmt = conn
        .prepare_cached("INSERT INTO t (id, k, v) VALUES (?1, ?2, ?3)")
        .expect("a statement");
    for id in ids {
        let (k, v) = row(id);
        stmt.execute(params![id, k, v]).expect("an insert");
    }
}

/// How many frames the log of the database at `path` has room for: its header is 32 bytes,
/// each frame 24 and a 2 KiB page.
fn frames(path: &Path) -> u64 {
    let len = std::fs::metadata(wal_path(path)).expect("the log").len();
    len.saturating_sub(32) / (2048 + 24)
}

/// Many small commits, as the writer's groups, each appending a few dozen frames.
#[test]
fn commits_in_the_log_are_recovered_after_the_process_dies() {
    let (_dir, path, copy, conn) = files(2000);
    commit_in_groups_of_30(&conn, 0..6000);
    assert!(
        frames(&path) > 2000,
        "the commits are in the log, not the file"
    );
    assert_recovered_after_a_death(&path, &copy, 6000, |_| false);
}

/// One commit of more pages than one gathering holds, and of more than fit one call of
/// the file layer: written in several calls, recovered as one commit.
#[test]
fn a_commit_of_thousands_of_pages_is_recovered_whole() {
    let (_dir, path, copy, conn) = files(100_000);
    conn.execute_batch("BEGIN").expect("begin");
    insert(&conn, 0..8000);
    conn.execute_batch("COMMIT").expect("commit");
    assert!(frames(&path) > 1200, "one commit of many frames");
    assert_recovered_after_a_death(&path, &copy, 8000, |_| false);
}

/// A transaction larger than the page cache spills frames to the log before its commit,
/// and writes some of those pages again in place; the commit then recomputes their
/// checksums from what the file holds. All of it recovers.
#[test]
fn a_transaction_that_spills_and_writes_pages_again_is_recovered() {
    let (_dir, path, copy, conn) = files(16);
    conn.execute_batch("BEGIN").expect("begin");
    insert(&conn, 0..3000);
    // Pages spilled above are changed again.
    conn.execute(
        "UPDATE t SET v = CAST(v || x'ff' AS BLOB) WHERE id % 7 = 0",
        [],
    )
    .expect("an update");
    insert(&conn, 3000..3500);
    assert!(
        frames(&path) > 0,
        "pages spilled to the log before the commit"
    );
    conn.execute_batch("COMMIT").expect("commit");
    assert_recovered_after_a_death(&path, &copy, 3500, |id| id < 3000 && id % 7 == 0);
}

/// Once everything in the log is copied into the file, the next commit writes the log over
/// from its start, under new salts, past which the old, longer log still lies (its size
/// kept to a limit): the frames gathered must land at the new start, or the recovery finds
/// none of them.
#[test]
fn a_log_started_over_is_recovered_from_its_new_start() {
    let (_dir, path, copy, conn) = files(100_000);
    commit_in_groups_of_30(&conn, 0..3000);
    let before = frames(&path);
    let (busy, logged, copied): (i64, i64, i64) = conn
        .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .expect("a checkpoint");
    assert_eq!((busy, copied), (0, logged), "the whole log copied");
    conn.execute_batch("PRAGMA journal_size_limit = 1048576")
        .expect("a limit");
    conn.execute_batch("BEGIN").expect("begin");
    insert(&conn, 3000..5000);
    conn.execute_batch("COMMIT").expect("commit");
    let after = frames(&path);
    assert!(
        after < before,
        "the log started over and was cut to its limit ({before} frames, then {after})"
    );
    assert_recovered_after_a_death(&path, &copy, 5000, |_| false);
}
