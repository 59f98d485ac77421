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
//! last asked, whichever connection wrote it. The checkpointer asks after each of its
//! copies, the writer after its own copy and before the next commit writes the log over.
//! A failure stops the process at once, as PostgreSQL stops on a failed sync: the log on
//! the disk still holds every frame since it last started over, and the next process
//! copies all of it again (SQLite rebuilds its index of the log at the first open after a
//! crash, with nothing marked copied). A normal close would not do: the last connection
//! to close finds everything marked copied, copies nothing more, and deletes the log.

use std::fs::File;
use std::path::Path;

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

impl WriteBackCheck {
    /// A descriptor of the file at `path` of its own (the file exists: the writer made it).
    pub fn of(path: &Path) -> Result<WriteBackCheck, StoreError> {
        let file = File::open(path).map_err(|e| {
            StoreError::Unavailable(format!(
                "cannot open {} to watch its writes: {e}",
                path.display()
            ))
        })?;
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
