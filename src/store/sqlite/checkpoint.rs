//! Checkpoints off the writer's path. SQLite's automatic checkpoint runs inside the commit
//! that crosses its threshold, on the writer: it copies the log into the database file and
//! syncs both, and under load that stalled every write behind it for tens of milliseconds.
//! Here the writer's connection checkpoints nothing by itself; a thread of its own copies
//! the log into the database while the writer goes on ([`Checkpointer`]).
//!
//! While writes go on, that copy never finds the whole log copied, and SQLite starts the
//! log over only when it is, at the start of a write. So once the log is longer than its
//! limit ([`RESTART_BYTES`]) the checkpointer makes one last copy and stops, and the
//! writer, between two transactions, copies what is left itself (normally what was written
//! during that last copy) and waits briefly for the reads begun on the old log
//! ([`Restarts`]): the next commit writes the log from its start again, over blocks the
//! file already has, which a sync flushes without growing the file. Every write waits while
//! the writer copies and syncs the database file; the last copy keeps that short (without
//! it, the writer copied all that came since the checkpointer's previous copy, up to a
//! quarter of the limit: the stop took 4.5-6.6 ms at the median, and creates' p99 went past
//! 10 ms on a slow machine; docs/throughput-log.md). Should no last copy begin before the
//! log is an eighth of the limit past where that copy was due (a checkpointer that
//! stopped), the writer takes the turn and copies all of it. Were both to copy, the
//! writer's copy would find the checkpointer's under way and be refused; so the writer
//! tries again after its next commit, and once the log is a whole limit past where the last
//! copy was due (the checkpointer's thread waiting for a core in the middle of its copy) it
//! waits for that copy to end rather than let the log grow on: for a second at most, once a
//! copy, since a copy that takes longer is a disk that stopped answering, and the writes go
//! on without it. After the writer's copy, and after the checkpointer's (at once when one
//! failed, at most once a second otherwise), the kernel is asked on a descriptor of the
//! process's own whether the pages copied reached the disk; a page lost stops the process
//! before the log is written over (`super::write_back`). The writer's wait for the readers
//! is set with the `busy_timeout` pragma, which answers with a row: run as a statement that
//! answers nothing, it failed, the log was never started over, and under load it grew past
//! 1.7 GiB, every commit paying the file system for new blocks (docs/throughput-log.md).
//!
//! One reader holds its snapshot long every second: the metric index catching up with the
//! change feed, 46 ms at the median and up to 186 ms under creates on a two-core machine.
//! When the writer's copy fell on such a read, every write waited the whole wait for
//! readers and the copy failed: one to four times in each twelve seconds of creates,
//! 20.6-29.5 ms each (docs/throughput-log.md). So such reads tell the checkpointer when
//! they begin and end (`crate::store::LongReads`), and so does a list that searches a
//! text, which asks every intent's text when it finds nothing (150 ms on a million
//! intents); a list without one reads a page and its count along indexes. While one is
//! under way the writer leaves the log to the checkpointer, whose copies stop where the
//! read's snapshot began and so are not the last; once it ends, the checkpointer makes the
//! last copy (of all the read held up), and the writer copies what came after. A long read
//! waits for a writer's copy under way to end before it begins (for a second at most). No
//! try of the writer's could start the log over while such a read holds it, so none is
//! made: the log grows while the read lasts, as it did when every try failed, though only
//! to [`READS_HOLD`] times its limit: reads that keep one under way at nearly every commit
//! (a caller scraping the metrics back to back) do not hold it back further. A copy of the
//! writer's that a short read held up gives the turn back too: the checkpointer copies on,
//! and its last copy is due an eighth of the limit before the writer's next try.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::write_back::{LostWriteBack, WriteBackCheck};
use crate::store::sql::ConnExt;
use crate::store::{Durability, Store, StoreError};

/// The log's length past which the writer starts it over: 16 MiB, in frames of the file's
/// page size. Against 64 MiB: creates 8-15 % faster, whole orders the same
/// (docs/throughput-log.md).
pub const RESTART_BYTES: u64 = 16 << 20;

/// How many frames the log holds, as the writer's connection last said after a commit.
#[derive(Debug, Clone, Default)]
pub struct LogLength(Arc<AtomicU64>);

impl LogLength {
    pub fn set(&self, frames: u64) {
        self.0.store(frames, Ordering::Relaxed);
    }

    /// How many frames the log holds.
    pub fn frames(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// How often the checkpointer copies the log while writes go on. Each copy writes a page
/// once however often it changed since the last, and syncs the database file once, beside
/// the syncer's syncs of the log: every 100 ms made whole orders 6-9 % slower than every
/// second (docs/throughput-log.md).
const PERIOD: Duration = Duration::from_secs(1);

/// The checkpointer of one database file.
pub struct Checkpointer {
    state: Mutex<Wake>,
    ready: Condvar,
    /// A copy ended (told under `state`'s lock, so a writer waiting for it never misses it).
    copied: Condvar,
    /// The writer's copy ended: a long read waits for it to begin.
    writers_copy_ended: Condvar,
}

#[derive(Default)]
struct Wake {
    written: bool,
    closed: bool,
    /// The log's length at the last commit, and when the last copy began.
    frames: u64,
    copied_at: u64,
    /// The log's limit; the checkpointer copies early after a quarter of it, so that the
    /// writer finds little left to copy when the log reaches it.
    limit: u64,
    /// The checkpointer waits for a first write since its last copy.
    idle: bool,
    /// Since the log last started over, a copy began when the last was due
    /// ([`Wake::last_copy_due`]: what is left for the writer to copy is only what was
    /// written meanwhile), or the writer took its turn without one
    /// ([`Checkpointer::claim_turn`]).
    closing_copy: bool,
    /// How many copies have begun: which one is under way.
    copies: u64,
    /// A copy is under way ([`Copying`]): the writer's own would be refused.
    copying: bool,
    /// Long reads under way (`crate::store::LongReads`). While one is, and the log is short
    /// of [`READS_HOLD`] times its limit ([`Wake::reads_hold`]), no copy is the last: it
    /// stops where the read's snapshot began, and the rest is what the read held up. And
    /// the writer leaves the log to the checkpointer: the log cannot start over while the
    /// read holds it, and a try would only hold every write up.
    long_reads: usize,
    /// Past the limit, a copy is the last only once the log is this long: the larger of
    /// where the last long read ended and an eighth of the limit before the writer's next
    /// try after its copy was held up (0 when neither, since the log last started over).
    /// The writer takes the turn without a last copy an eighth of the limit after it, and
    /// waits for a copy under way only a limit after it ([`FAR_PAST`]). Where a read
    /// ended counts only up to [`READS_HOLD`] times the limit.
    last_from: u64,
    /// The writer has the turn ([`Checkpointer::claim_turn`]): no copy begins until it gives
    /// it back or the log starts over.
    claimed: bool,
    /// The writer's copy is under way ([`WritersCopy`]): a long read begins after it, not
    /// during it (the copy would wait for the read to end before it could start the log
    /// over, every write with it).
    writers_copy: bool,
}

impl Wake {
    /// Whether enough was written since the last copy to copy it now. A log started over
    /// is shorter than it was: all of it is new.
    fn eager(&self) -> bool {
        let new = if self.frames >= self.copied_at {
            self.frames - self.copied_at
        } else {
            self.frames
        };
        new >= self.limit / 4
    }

    /// Whether the log is past its limit.
    fn past_limit(&self) -> bool {
        self.frames > self.limit
    }

    /// Whether long reads hold the writer back: one is under way, and the log is not yet
    /// [`READS_HOLD`] times its limit.
    fn reads_hold(&self) -> bool {
        self.long_reads > 0 && self.frames <= self.limit * READS_HOLD
    }

    /// Where the last copy is due: the limit, or `last_from` past it.
    fn due_from(&self) -> u64 {
        self.limit.max(self.last_from)
    }

    /// Whether a copy begun now is the last before the writer's turn: the log is past its
    /// limit and `last_from`, and long reads no longer hold the writer back.
    fn last_copy_due(&self) -> bool {
        self.past_limit() && !self.reads_hold() && self.frames >= self.due_from()
    }

    /// Whether the log is past its limit and the checkpointer has begun its last copy:
    /// then the writer copies the rest and starts the log over, and another copy here
    /// would only stand in its way.
    fn writers_turn(&self) -> bool {
        self.claimed || (self.past_limit() && self.closing_copy && !self.reads_hold())
    }

    /// Whether there is log to copy, and it is the checkpointer's to copy.
    fn to_copy(&self) -> bool {
        self.written && !self.writers_turn()
    }

    /// Whether to copy before the period is out: much was written, or the last copy is
    /// due, so that the writer finds only a little left to copy.
    fn to_copy_early(&self) -> bool {
        (self.eager() || self.last_copy_due()) && !self.writers_turn()
    }

    /// A copy begins, of the log as long as the writer last said: the last one before the
    /// writer's turn when it is due.
    fn begin_copy(&mut self) {
        self.copies += 1;
        self.written = false;
        self.copied_at = self.frames;
        self.closing_copy |= self.last_copy_due();
    }

    /// The turn is the writer's no longer, and the checkpointer's next copy past the limit
    /// is the last only from `last_from` on.
    fn turn_given_back(&mut self, last_from: u64) {
        self.claimed = false;
        self.closing_copy = false;
        self.last_from = self.last_from.max(last_from);
    }

    /// The writer's copy emptied the log, which its next commit writes from the start:
    /// nothing is left to copy until then.
    fn started_over(&mut self) {
        self.written = false;
        self.frames = 0;
        self.copied_at = 0;
        self.closing_copy = false;
        self.claimed = false;
        self.last_from = 0;
    }
}

impl Checkpointer {
    /// Start checkpointing the database at `path` from a connection of its own, for a log
    /// the writer starts over past `limit` frames.
    pub fn start(
        path: &Path,
        durability: Durability,
        limit: u64,
    ) -> Result<Arc<Checkpointer>, StoreError> {
        let store = super::open(path, durability)?;
        // The process's descriptor of the file, shared with the writer's check: whichever
        // asks first is told of a failed write-back, and stops the process.
        let check = WriteBackCheck::of(path)?;
        let checkpointer = Arc::new(Checkpointer {
            state: Mutex::new(Wake {
                limit,
                ..Wake::default()
            }),
            ready: Condvar::new(),
            copied: Condvar::new(),
            writers_copy_ended: Condvar::new(),
        });
        let theirs = checkpointer.clone();
        std::thread::Builder::new()
            .name("store-checkpoint".into())
            .spawn(move || theirs.run(&store, &check))
            .map_err(|e| {
                StoreError::Unavailable(format!("cannot start the store checkpointer: {e}"))
            })?;
        Ok(checkpointer)
    }

    /// A commit was written, leaving the log `frames` long: it has something to copy.
    pub fn written(&self, frames: u64) {
        let mut wake = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        wake.written = true;
        if frames < wake.frames {
            // The writer started the log over: its next pass of the limit wants a last
            // copy again.
            wake.closing_copy = false;
            wake.claimed = false;
            wake.last_from = 0;
        }
        wake.frames = frames;
        // Woken only when this write is what it waits for, not at every commit.
        let wakes = if wake.idle {
            wake.to_copy()
        } else {
            wake.to_copy_early()
        };
        drop(wake);
        if wakes {
            self.ready.notify_one();
        }
    }

    /// Whether the rest of the log, as long as the writer last said, is the writer's to
    /// copy: the checkpointer began its last copy since the log passed its limit, or the
    /// log is an eighth of the limit past where that copy was due (a checkpointer that
    /// stopped) and the writer takes the turn without it. While long reads hold the
    /// writer back ([`Wake::reads_hold`]) the answer is no, and a turn the writer held when
    /// the read began (waiting for a copy under way) is given back. Once this answers yes
    /// no copy begins, until the log starts over or the writer gives the turn back.
    fn claim_turn(&self) -> bool {
        let mut wake = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if wake.reads_hold() {
            wake.turn_given_back(0);
            return false;
        }
        if !wake.claimed {
            let overdue = wake.frames > wake.due_from() + wake.limit / 8;
            if overdue && wake.past_limit() {
                wake.closing_copy = true;
            }
            wake.claimed = wake.past_limit() && wake.closing_copy;
        }
        wake.claimed
    }

    /// Whether the log, as long as the writer last said, is a whole limit past where the
    /// last copy was due ([`FAR_PAST`] times its limit when nothing moved that): a copy
    /// under way that lasted so long is waited for.
    fn far_past(&self) -> bool {
        let wake = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        wake.frames > wake.due_from() + wake.limit * (FAR_PAST - 1)
    }

    /// The writer's copy emptied the log.
    fn started_over(&self) {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .started_over();
    }

    /// The writer's copy begins, unless a long read that holds the writer back began since
    /// it took the turn: then the turn is given back.
    fn begin_writers_copy(&self) -> Option<WritersCopy<'_>> {
        let mut wake = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if wake.reads_hold() {
            wake.turn_given_back(0);
            return None;
        }
        wake.writers_copy = true;
        Some(WritersCopy(self))
    }

    /// The writer's copy left log behind (a read held it up, or it failed), and it tries
    /// again once the log is `next_try` long: the checkpointer copies meanwhile, and its
    /// last copy is due an eighth of the limit before that try, so that the try finds only
    /// what came after it.
    fn give_back_turn(&self, next_try: u64) {
        let mut wake = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let last_from = next_try.saturating_sub(wake.limit / 8);
        wake.turn_given_back(last_from);
    }

    /// Stop after the current checkpoint.
    pub fn close(&self) {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .closed = true;
        self.ready.notify_one();
    }

    fn run(&self, store: &Store, check: &WriteBackCheck) {
        let mut checked = None;
        let mut wake = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            wake.idle = true;
            while !wake.to_copy() && !wake.closed {
                wake = self
                    .ready
                    .wait(wake)
                    .unwrap_or_else(PoisonError::into_inner);
            }
            wake.idle = false;
            if wake.closed {
                drop(wake);
                // The last copy's pages, before this connection, or another, closes the
                // file and deletes its log.
                if let Err(lost) = check.held("the last checkpoint") {
                    lost.stop_the_process();
                }
                return;
            }
            wake.begin_copy();
            // Marked under the lock the writer takes to claim its turn: a writer that has
            // its turn finds this copy under way or done, and none begins after it.
            let copying = Copying::mark(self, &mut wake);
            drop(wake);
            // Passive: copies what no reader still needs, and waits for nobody.
            let copied = copy_and_check(store, check, &mut checked);
            drop(copying);
            match copied {
                Ok(Ok(_)) => {}
                Ok(Err(e)) => {
                    tracing::warn!(error = %e, "a checkpoint failed; the next one tries again")
                }
                Err(lost) => lost.stop_the_process(),
            }
            // At most one a period unless much was written: each copies all the log
            // written since the last.
            wake = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            if !wake.closed {
                wake = self
                    .ready
                    .wait_timeout_while(wake, PERIOD, |w| !w.closed && !w.to_copy_early())
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
            }
        }
    }

    /// The copy under way, by its number, if any.
    fn copy_under_way(&self) -> Option<u64> {
        let wake = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        wake.copying.then_some(wake.copies)
    }

    /// Wait at most `longest` for a copy under way to end (none begins once the writer has
    /// its turn); whether it ended.
    fn wait_for_copy(&self, longest: Duration) -> bool {
        let wake = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let (wake, _) = self
            .copied
            .wait_timeout_while(wake, longest, |w| w.copying)
            .unwrap_or_else(PoisonError::into_inner);
        !wake.copying
    }
}

impl crate::store::LongReads for Checkpointer {
    /// Begins once a copy of the writer's under way has ended, waiting [`COPY_WAIT`] at most
    /// (a copy that takes longer is a disk that stopped answering). A copy begun before the
    /// read is no longer the last: the log written during the read is copied here once it
    /// ends, not by the writer while every write waits. (A turn the writer holds is given
    /// back at its next try.)
    fn begun(&self) {
        let wake = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let (mut wake, _) = self
            .writers_copy_ended
            .wait_timeout_while(wake, COPY_WAIT, |w| w.writers_copy)
            .unwrap_or_else(PoisonError::into_inner);
        wake.long_reads += 1;
        wake.closing_copy = false;
    }

    /// A long read ended. Once none is under way, the last copy is due where the log is
    /// now ([`READS_HOLD`] times its limit at most), and the checkpointer is woken for it
    /// if anything was written since its last copy (otherwise the next commit wakes it).
    fn ended(&self) {
        let mut wake = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        wake.long_reads = wake.long_reads.saturating_sub(1);
        if wake.long_reads == 0 {
            // Counted from READS_HOLD times the limit at most: reads that end one after
            // another would otherwise carry it along with the log.
            let ended_at = wake.frames.min(wake.limit * READS_HOLD);
            wake.last_from = wake.last_from.max(ended_at);
        }
        let wakes = wake.long_reads == 0 && wake.written && wake.to_copy_early();
        drop(wake);
        if wakes {
            self.ready.notify_one();
        }
    }
}

/// The writer's copy under way, marked for the long reads until it ends, even by a panic:
/// a mark left behind would keep them waiting forever.
struct WritersCopy<'a>(&'a Checkpointer);

impl Drop for WritersCopy<'_> {
    fn drop(&mut self) {
        let mut wake = self.0.state.lock().unwrap_or_else(PoisonError::into_inner);
        wake.writers_copy = false;
        drop(wake);
        self.0.writers_copy_ended.notify_all();
    }
}

/// A copy under way, marked for the writer until it ends, even by a panic: a mark left
/// behind would keep the writer from ever starting the log over, or waiting for it forever.
struct Copying<'a>(&'a Checkpointer);

impl<'a> Copying<'a> {
    /// Mark a copy under way, in `wake`, the checkpointer's state as its lock holds it.
    fn mark(checkpointer: &'a Checkpointer, wake: &mut Wake) -> Copying<'a> {
        wake.copying = true;
        Copying(checkpointer)
    }
}

impl Drop for Copying<'_> {
    fn drop(&mut self) {
        let mut wake = self.0.state.lock().unwrap_or_else(PoisonError::into_inner);
        wake.copying = false;
        drop(wake);
        self.0.copied.notify_all();
    }
}

/// Copy the log into the database file; true when all of it is copied (and, for
/// `RESTART`, no reader still reads from it, so the next write starts it over). `PASSIVE`
/// copies what no reader still needs and waits for nobody; `RESTART` waits, as long as the
/// connection's busy timeout, for the readers of the old log. False when the wait ran out,
/// or another copy was under way.
pub(super) fn checkpoint(store: &Store, mode: &str) -> Result<bool, StoreError> {
    store.conn().one(
        &format!("PRAGMA wal_checkpoint({mode})"),
        crate::store::sql::params![],
        |r| Ok(r.get::<i64>(0)? == 0 && r.get::<i64>(1)? == r.get::<i64>(2)?),
    )
}

/// How often the checkpointer asks the kernel of the file's pages after a copy that went
/// well. Each check syncs the file, which a copy short of the log's end leaves unsynced;
/// after every copy, those syncs waited in the file system's journal beside the syncer's
/// and creates ran 6.5 % slower on the means of six alternated pairs
/// (docs/throughput-log.md).
const CHECK_EVERY: Duration = Duration::from_secs(1);

/// Set how long `store`'s connection waits for a lock another holds. The pragma answers
/// with the timeout set: a row, which `batch` would refuse.
pub(super) fn busy_timeout(store: &Store, ms: u64) -> Result<i64, StoreError> {
    store.conn().one(
        &format!("PRAGMA busy_timeout = {ms}"),
        crate::store::sql::params![],
        |r| r.get::<i64>(0),
    )
}

/// The checkpointer's copy, then what the kernel says of the file's pages: at once after a
/// copy that failed (its sync may have been told of a page lost, and tried again it would
/// succeed: `super::write_back`), otherwise when none was asked for [`CHECK_EVERY`];
/// `checked` is when it last asked.
fn copy_and_check(
    store: &Store,
    check: &WriteBackCheck,
    checked: &mut Option<Instant>,
) -> Result<Result<bool, StoreError>, LostWriteBack> {
    let copied = checkpoint(store, "PASSIVE");
    if copied.is_err() || checked.is_none_or(|at| at.elapsed() >= CHECK_EVERY) {
        check.held("a checkpoint")?;
        *checked = Some(Instant::now());
    }
    Ok(copied)
}

/// Why the writer did not start the log over.
#[derive(Debug)]
pub enum RestartError {
    /// The copy or the wait for readers failed; it is tried again after more log.
    Store(StoreError),
    /// A page the copy put in the file did not reach the disk: the log must not be
    /// written over, and the process stops.
    Lost(LostWriteBack),
}

impl From<StoreError> for RestartError {
    fn from(e: StoreError) -> Self {
        RestartError::Store(e)
    }
}

/// How long the writer's copy waits for reads begun on the old log to end: every write
/// waits while it does. Reads are short; one that is not, and is not marked as a long read
/// (a list's count over a million intents), is not waited for, and the writer tries again
/// later.
const RESTART_WAIT_MS: u64 = 20;

/// How many times its limit the log may grow while a copy of the checkpointer's is under
/// way before the writer, and every write with it, waits for that copy to end. When the
/// last copy was due past the limit ([`Wake::due_from`]: where a long read ended, or a
/// try of the writer's that failed put it), the log may grow `FAR_PAST - 1` limits past
/// that point instead. On a busy machine the checkpointer's thread can wait long for a
/// core in the middle of a copy; without this bound the log grew on all that while (four
/// to six times its limit in a unit test beside four threads that never sleep).
const FAR_PAST: u64 = 2;

/// How many times its limit the log may grow while long reads hold the writer back, and
/// how far a read's end may move where the last copy is due. Reads that keep one under
/// way at nearly every commit (a caller scraping the metrics back to back) would otherwise
/// keep the writer from trying, and each end would carry that point along with the log,
/// so that a copy under way was never waited for. Past this the writer tries while reads
/// go on (a try a read holds up gives the turn back, and the next is a quarter of the
/// limit later), and waits for a copy under way a limit past where the last copy was due:
/// this, unless a try of its own that failed put that point later.
const READS_HOLD: u64 = 4;

/// The longest the writes wait for one copy. A copy is SQLite's own reads and writes of the
/// file and one sync of it, a few milliseconds on this order path; one that takes longer
/// than this is a disk that has stopped answering, and the writes go on without it (the log
/// grows, as before the bound) rather than stall with it.
const COPY_WAIT: Duration = Duration::from_secs(1);

/// When the writer starts the log over.
#[derive(Debug)]
pub struct Restarts {
    /// The log's limit, in frames.
    limit: u64,
    /// After a copy that a read held up past [`RESTART_WAIT_MS`], the next waits for a
    /// quarter of the limit more: a long read (a list over a million intents) can hold
    /// the log for most of a second, and each try holds every write up.
    not_before: u64,
    /// The longest the writes wait for one copy ([`COPY_WAIT`]).
    copy_wait: Duration,
    /// The copy the writes waited for in vain: they do not wait for it again.
    gave_up_on: Option<u64>,
    /// The log's length when [`Restarts::due`] was last asked.
    seen: u64,
    /// Asked after the writer's copy, before the next commit writes the log over.
    check: WriteBackCheck,
}

impl Restarts {
    pub fn new(limit: u64, check: WriteBackCheck) -> Restarts {
        Restarts {
            limit,
            not_before: 0,
            copy_wait: COPY_WAIT,
            gave_up_on: None,
            seen: 0,
            check,
        }
    }

    /// Before the writer's connection closes: the pages the last copies put in the file are
    /// on the disk, or the process stops with the log kept (the last connection to close
    /// would find it all copied, and delete it).
    pub fn check_before_close(&self) {
        if let Err(lost) = self.check.held("the last commit") {
            lost.stop_the_process();
        }
    }

    /// Whether a log `frames` long is to be started over now. A log shorter than the
    /// last one asked of was started over without the writer's copy (SQLite does, at a
    /// commit that finds it all copied and no reader in it): a try it put off is due again
    /// from the limit.
    pub fn due(&mut self, frames: u64) -> bool {
        if frames < self.seen {
            self.not_before = 0;
        }
        self.seen = frames;
        frames > self.limit.max(self.not_before)
    }

    /// On the writer's connection, between two transactions: copy what the checkpointer
    /// has not, and wait briefly for the reads begun on the old log, so that the next
    /// commit starts the log over. Until the checkpointer has begun its last copy (unless
    /// the log is an eighth past where it was due), and while any copy of its is under
    /// way, the writer tries again after its next commit, until the log is [`FAR_PAST`]
    /// times its limit, or a limit past where the last copy was due when that is later:
    /// then it waits for that copy to end. While long reads hold it back (up to
    /// [`READS_HOLD`] times the limit) it does not try at all. (When no commit follows, the
    /// rest stays in the log until one does: readers find it there, and closing the last
    /// connection copies it.)
    pub fn restart(
        &mut self,
        store: &Store,
        frames: u64,
        checkpointer: &Checkpointer,
    ) -> Result<(), RestartError> {
        // The checkpointer's last copy first, unless the log has gone well past its limit
        // without one (a checkpointer that stopped copying). The turn is claimed before
        // asking whether a copy is under way: once it is the writer's, none begins.
        if !checkpointer.claim_turn() {
            return Ok(());
        }
        let far_past = checkpointer.far_past();
        if let Some(copy) = checkpointer.copy_under_way() {
            if !far_past || self.gave_up_on == Some(copy) {
                return Ok(());
            }
            // A copy that has lasted while a whole limit more was written (a starved or
            // slow checkpointer) would let the log grow for as long as it goes on: the
            // writes wait for it instead, up to a bound.
            let began = std::time::Instant::now();
            let ended = checkpointer.wait_for_copy(self.copy_wait);
            let waited_ms = u64::try_from(began.elapsed().as_millis()).unwrap_or(u64::MAX);
            if !ended {
                self.gave_up_on = Some(copy);
                tracing::warn!(
                    log_frames = frames,
                    waited_ms,
                    "a checkpoint has not ended with the write-ahead log a limit past where it was due to start over; writes go on and the log grows"
                );
                return Ok(());
            }
            tracing::warn!(
                log_frames = frames,
                waited_ms,
                "the write-ahead log grew a limit past where it was due to start over during a checkpoint; writes waited for it to end"
            );
        }
        let Some(copying) = checkpointer.begin_writers_copy() else {
            return Ok(());
        };
        let wait = |ms: u64| busy_timeout(store, ms);
        let restarted = wait(RESTART_WAIT_MS).and_then(|_| checkpoint(store, "RESTART"));
        drop(copying);
        // Asked when the next commit will write the log over, and when the copy failed
        // (SQLite's own sync, tried again, would succeed with a page lost:
        // `super::write_back`). Not after a copy readers held short of the log's end: it
        // left its pages unsynced, and syncing them here would hold every write up.
        if !matches!(restarted, Ok(false)) {
            self.check
                .held("the writer's copy")
                .map_err(RestartError::Lost)?;
        }
        let restored = wait(super::BUSY_TIMEOUT_MS);
        // A failed copy waits for more log too, rather than being tried after each commit.
        self.not_before = match restarted {
            Ok(true) => {
                checkpointer.started_over();
                0
            }
            _ => {
                let next_try = frames + self.limit / 4;
                checkpointer.give_back_turn(next_try);
                next_try
            }
        };
        Ok(restarted.and(restored).map(|_| ())?)
    }
}

#[cfg(test)]
#[path = "checkpoint_tests.rs"]
mod tests;
