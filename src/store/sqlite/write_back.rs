//! What the kernel says of the database file's pages once they were copied into it.
//!
//! A copy of the log (a checkpoint) writes pages into the database file and marks their
//! frames copied; when the log next starts over, those frames are written over and the
//! file holds the only copy of those pages on the disk. A copy that stops short of the
//! log's end does not sync the file at all; one that reaches it syncs it on its own
//! connection's descriptor. When the kernel fails to write such a page back, Linux tells
//! each open descriptor of the file once, at its next sync, and keeps the page in memory
//! as if it were written. A copy whose sync failed is tried again, its second sync on the
//! same descriptor succeeds, the log starts over, and what the page held lives only in
//! memory: a power loss, or the page's eviction, takes it back, long after it was
//! answered.
//!
//! [`WriteBackCheck`] is a descriptor of the file of this process's own, opened before its
//! first copy. Its sync reports any page of the file the kernel failed to write since it
//! last asked, whichever connection wrote it. The checkpointer asks at once after a copy
//! that failed, at most once a second after the others, and as it stops; the writer after
//! its own copy, before the next commit writes the log over, and before it closes.
//! A failure stops the process at once, as PostgreSQL stops on a failed sync: the log on
//! the disk still holds every frame since it last started over, and the next process
//! copies all of it again (SQLite rebuilds its index of the log at the first open after a
//! crash, with nothing marked copied, when no other process holds the file open). A normal
//! close would not do: the last connection to close finds everything marked copied,
//! copies nothing more, and deletes the log.
//!
//! What it cannot see: a failure told before its descriptor was opened (a process before
//! this one), one another process's connection was told and went past, and one on a file
//! system that does not tell each descriptor (Linux does since 4.13, for the common ones).
//!
//! The descriptor is never closed. Closing any descriptor of a file drops every lock this
//! process holds on it, SQLite's included (SQLite's own descriptors wait for its locks to
//! go before they close): another process could then take the file for itself, judge it
//! had the last connection, and delete the log under ours. One is kept a file, shared by
//! every check of it for the life of the process.

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use crate::store::StoreError;

/// A page of the database file the kernel could not write back: the process must stop
/// before the log is written over ([`LostWriteBack::stop_the_process`]).
#[derive(Debug, PartialEq, Eq)]
pub struct LostWriteBack(pub String);

impl LostWriteBack {
    /// Stop at once, without closing the file: its log is all that still holds what the
    /// lost pages held.
    pub fn stop_the_process(&self) -> ! {
        tracing::error!(
            error = %self.0,
            "the database file lost a write the kernel could not make; stopping at once so that its log is kept (the next start copies the log into the file again)"
        );
        eprintln!(
            "intentdesk: the database file lost a write the kernel could not make ({}); stopping at once so that its log is kept",
            self.0
        );
        std::process::abort()
    }
}

/// Asks the kernel whether every page of the database file written so far is on the disk.
pub struct WriteBackCheck(Box<dyn Fn() -> std::io::Result<()> + Send + Sync>);

impl std::fmt::Debug for WriteBackCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WriteBackCheck")
    }
}

/// The descriptors kept, one a file, by its device and inode: a file deleted and made again
/// at the same path is another (the kept descriptor holds the old inode's number).
type Kept = Mutex<HashMap<(u64, u64), Arc<File>>>;

fn kept() -> &'static Kept {
    static KEPT: OnceLock<Kept> = OnceLock::new();
    KEPT.get_or_init(Mutex::default)
}

impl WriteBackCheck {
    /// The process's descriptor of the file at `path` (the file exists: the writer made it),
    /// opened now if this is its first check.
    pub fn of(path: &Path) -> Result<WriteBackCheck, StoreError> {
        let unavailable = |e: std::io::Error| {
            StoreError::Unavailable(format!(
                "cannot open {} to watch its writes: {e}",
                path.display()
            ))
        };
        // Found by the path's own device and inode, without opening it: a descriptor
        // opened and closed again would drop SQLite's locks on the file.
        let meta = std::fs::metadata(path).map_err(unavailable)?;
        let key = (meta.dev(), meta.ino());
        let mut kept = kept().lock().unwrap_or_else(PoisonError::into_inner);
        let file = match kept.get(&key) {
            Some(file) => file.clone(),
            None => {
                let file = File::open(path).map_err(unavailable)?;
                let meta = file.metadata().map_err(unavailable)?;
                let opened = (meta.dev(), meta.ino());
                let file = Arc::new(file);
                // Kept whatever file it turned out to be.
                kept.insert(opened, file.clone());
                if opened != key {
                    return Err(StoreError::Unavailable(format!(
                        "{} was replaced while it was opened",
                        path.display()
                    )));
                }
                file
            }
        };
        Ok(WriteBackCheck(Box::new(move || file.sync_data())))
    }

    /// A check that answers as `sync` does, for tests.
    #[cfg(test)]
    pub fn answering(sync: impl Fn() -> std::io::Result<()> + Send + Sync + 'static) -> Self {
        WriteBackCheck(Box::new(sync))
    }

    /// Whether every page written since the last check reached the disk, asked after `copy`.
    pub fn held(&self, copy: &str) -> Result<(), LostWriteBack> {
        (self.0)().map_err(|e| LostWriteBack(format!("syncing the file after {copy}: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::WriteBackCheck;

    #[test]
    fn a_failed_sync_is_a_lost_write_back_naming_the_copy() {
        let check = WriteBackCheck::answering(|| Err(std::io::Error::from_raw_os_error(5)));
        let lost = check.held("the writer's copy").expect_err("lost");
        assert!(lost.0.contains("the writer's copy"), "{lost:?}");
        assert!(lost.0.contains("Input/output error"), "{lost:?}");
    }

    /// This process's locks on the file at `path`, as the kernel lists them (their kind and
    /// byte range).
    fn locks_on(path: &std::path::Path) -> Vec<String> {
        use std::os::unix::fs::MetadataExt;
        let inode = format!(":{}", std::fs::metadata(path).expect("the file").ino());
        let me = std::process::id().to_string();
        std::fs::read_to_string("/proc/locks")
            .expect("the kernel's locks")
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .filter(|f| f.len() > 7 && f[4] == me && f[5].ends_with(&inode))
            .map(|f| format!("{} {} {}-{}", f[1], f[3], f[6], f[7]))
            .collect()
    }

    /// Checks made and dropped leave this process's locks on the file as they were.
    /// Closing a descriptor of the file drops every lock this process holds on it, SQLite's
    /// too: the lock a connection in WAL mode holds on the file from its first read, by
    /// which another process's last connection knows it is not the last one, before it
    /// copies and deletes the log.
    #[test]
    fn checks_leave_sqlites_locks_on_the_file_in_place() {
        let dir = tempfile::tempdir().expect("a folder");
        let path = dir.path().join("held.sqlite");
        let conn = rusqlite::Connection::open(&path).expect("open");
        conn.execute_batch("PRAGMA journal_mode = WAL; CREATE TABLE t (x INTEGER);")
            .expect("a file in WAL mode");
        let rows: i64 = conn
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .expect("a read");
        assert_eq!(rows, 0);
        let held = locks_on(&path);
        assert!(!held.is_empty(), "SQLite holds no lock on the file");
        for _ in 0..3 {
            drop(WriteBackCheck::of(&path).expect("a check"));
        }
        assert_eq!(locks_on(&path), held, "a check dropped SQLite's locks");
        drop(conn);
    }

    #[test]
    fn a_file_written_and_synced_holds() {
        let dir = tempfile::tempdir().expect("a folder");
        let path = dir.path().join("f");
        std::fs::write(&path, b"pages").expect("written");
        let check = WriteBackCheck::of(&path).expect("opened");
        assert_eq!(check.held("a copy"), Ok(()));
        assert!(WriteBackCheck::of(&dir.path().join("none")).is_err());
    }
}
