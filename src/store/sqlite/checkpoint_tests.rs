//! The checkpointer's state, the writer's restarts and the long reads, each against a file
//! or a checkpointer whose thread never runs.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::super::write_back::WriteBackCheck;
use super::{Checkpointer, RestartError, Restarts, Wake};
use crate::store::{Durability, Store};
use tempfile::TempDir;

/// A limit in frames: 16 MiB of 4 KiB pages.
const RESTART_FRAMES: u64 = 4_096;

const EAGER: u64 = RESTART_FRAMES / 4;

fn wake(frames: u64, copied_at: u64) -> Wake {
    Wake {
        frames,
        copied_at,
        limit: RESTART_FRAMES,
        ..Wake::default()
    }
}

#[test]
fn copies_early_only_after_enough_new_log() {
    assert!(!wake(EAGER - 1, 0).eager());
    assert!(wake(EAGER, 0).eager());
    assert!(!wake(3 * EAGER - 1, 2 * EAGER).eager());
    assert!(wake(3 * EAGER, 2 * EAGER).eager());
}

#[test]
fn past_the_limit_the_checkpointer_copies_once_more_then_the_rest_is_the_writers() {
    // Just past the limit, with little written since the last copy: a last copy now.
    let mut past = wake(RESTART_FRAMES + 1, RESTART_FRAMES - 10);
    past.written = true;
    assert!(!past.eager());
    assert!(!past.writers_turn());
    assert!(past.to_copy() && past.to_copy_early());
    // Once it began, the rest is the writer's, and the checkpointer copies no more.
    past.begin_copy();
    past.written = true;
    assert!(past.writers_turn());
    assert!(!past.to_copy() && !past.to_copy_early());
    // A copy begun at the limit is not the last one.
    let mut at = wake(RESTART_FRAMES, 0);
    at.begin_copy();
    assert!(!at.writers_turn());
    at.frames += 1;
    assert!(!at.writers_turn(), "no copy began past the limit yet");
}

/// A checkpointer whose thread never runs, in the state `wake`.
fn checkpointer(wake: Wake) -> Checkpointer {
    Checkpointer {
        state: std::sync::Mutex::new(wake),
        ready: std::sync::Condvar::new(),
        copied: std::sync::Condvar::new(),
        writers_copy_ended: std::sync::Condvar::new(),
    }
}

/// A copy marked under way, as the checkpointer's thread marks it.
fn marked(checkpointer: &Checkpointer) -> super::Copying<'_> {
    super::Copying::mark(checkpointer, &mut checkpointer.state.lock().expect("lock"))
}

/// Whether a copy is marked under way.
fn under_way(checkpointer: &Checkpointer) -> bool {
    checkpointer.state.lock().expect("lock").copying
}

/// Past the limit, with the checkpointer's last copy begun.
fn last_copy_begun() -> Wake {
    let mut wake = wake(RESTART_FRAMES + 5, RESTART_FRAMES - 10);
    wake.begin_copy();
    wake
}

#[test]
fn a_log_started_over_wants_a_last_copy_again() {
    // A log SQLite started over by itself: the writer's next commit says it is short.
    let by_itself = checkpointer(last_copy_begun());
    assert!(by_itself.claim_turn());
    by_itself.written(3);
    assert!(!by_itself.claim_turn());
    by_itself.written(RESTART_FRAMES + 2);
    assert!(!by_itself.claim_turn(), "no last copy yet in this log");
    // A log the writer started over: nothing to copy until its next commit.
    let by_the_writer = checkpointer(last_copy_begun());
    by_the_writer.state.lock().expect("lock").written = true;
    by_the_writer.started_over();
    let wake = by_the_writer.state.lock().expect("lock");
    assert!(!wake.to_copy() && !wake.writers_turn());
}

#[test]
fn a_turn_taken_without_the_last_copy_keeps_the_checkpointer_out() {
    let mut overdue = wake(RESTART_FRAMES + 5, RESTART_FRAMES - 10);
    overdue.written = true;
    let checkpointer = checkpointer(overdue);
    assert!(!checkpointer.claim_turn());
    assert!(checkpointer.state.lock().expect("lock").to_copy());
    checkpointer.written(RESTART_FRAMES + RESTART_FRAMES / 8 + 1);
    assert!(checkpointer.claim_turn());
    let wake = checkpointer.state.lock().expect("lock");
    assert!(!wake.to_copy() && !wake.to_copy_early());
}

/// A file in WAL mode and the writer's restarts of its log, with `not_before` at 1: a
/// try sets it, whether or not it copied all of the log, so it says whether the writer
/// tried.
fn log_and_restarts() -> (TempDir, Store, Restarts) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let store =
        super::super::open(&dir.path().join("log.sqlite"), Durability::PowerLoss).expect("open");
    let mut restarts = Restarts::new(RESTART_FRAMES, holds());
    restarts.not_before = 1;
    (dir, store, restarts)
}

/// A file whose pages all reach the disk.
fn holds() -> WriteBackCheck {
    WriteBackCheck::answering(|| Ok(()))
}

/// A file with a page the kernel could not write back.
fn lost_a_page() -> WriteBackCheck {
    WriteBackCheck::answering(|| Err(std::io::Error::from_raw_os_error(5)))
}

#[test]
fn a_page_lost_after_the_writers_copy_stops_it_before_the_log_is_written_over() {
    let (_dir, store, mut restarts) = log_and_restarts();
    restarts.check = lost_a_page();
    let past = RESTART_FRAMES + 1;
    let mut copied = wake(past, RESTART_FRAMES - 10);
    copied.begin_copy();
    let checkpointer = checkpointer(copied);
    // As shipped before, the writer went on and its next commit wrote the log over.
    match restarts.restart(&store, past, &checkpointer) {
        Err(RestartError::Lost(lost)) => {
            assert!(lost.0.contains("the writer's copy"), "{lost:?}")
        }
        other => panic!("the writer went on: {other:?}"),
    }
    assert_eq!(restarts.not_before, 1, "no restart counted");
    // The checkpointer was not told the log started over: it would copy no more.
    assert!(checkpointer.state.lock().expect("lock").writers_turn());
}

#[test]
fn a_page_lost_after_a_checkpoint_is_told_within_a_second_even_when_the_copy_succeeded() {
    let (_dir, store, _restarts) = log_and_restarts();
    store
        .conn()
        .batch("CREATE TABLE t (x INTEGER)")
        .expect("a write to copy");
    let mut checked = None;
    assert!(matches!(
        super::copy_and_check(&store, &holds(), &mut checked),
        Ok(Ok(true))
    ));
    assert!(checked.is_some(), "the first copy is checked");
    store
        .conn()
        .batch("INSERT INTO t VALUES (1)")
        .expect("another");
    // Within a second of the last check, a copy that went well is not asked of again
    // (the last check put in the future: no wait for a core makes it a second ago).
    checked = Some(std::time::Instant::now() + std::time::Duration::from_secs(3600));
    assert!(matches!(
        super::copy_and_check(&store, &lost_a_page(), &mut checked),
        Ok(Ok(true))
    ));
    let long_ago = std::time::Instant::now().checked_sub(super::CHECK_EVERY);
    checked = long_ago;
    let lost = super::copy_and_check(&store, &lost_a_page(), &mut checked).expect_err("told");
    assert!(lost.0.contains("a checkpoint"), "{lost:?}");
}

/// Whether the writer tries to start a log `frames` long over, the checkpointer in
/// `wake`.
fn writer_tries(frames: u64, wake: Wake) -> bool {
    writer_tries_beside(frames, &checkpointer(wake))
}

/// Whether the writer tries to start a log `frames` long over beside `checkpointer`, told
/// the log's length first as the writer's loop tells it after each commit.
fn writer_tries_beside(frames: u64, checkpointer: &Checkpointer) -> bool {
    let (_dir, store, mut restarts) = log_and_restarts();
    checkpointer.written(frames);
    restarts
        .restart(&store, frames, checkpointer)
        .expect("restart");
    restarts.not_before != 1
}

/// The checkpointer's last copy begun, and the writer waiting `copy_wait` at most for a
/// copy under way.
fn beside_last_copy(copy_wait: Duration) -> (TempDir, Store, Restarts, Checkpointer) {
    let (dir, store, mut restarts) = log_and_restarts();
    restarts.copy_wait = copy_wait;
    (dir, store, restarts, checkpointer(last_copy_begun()))
}

/// A log [`super::FAR_PAST`] times its limit and a frame more, beside the checkpointer's last
/// copy begun ([`beside_last_copy`]).
fn far_past(copy_wait: Duration) -> (TempDir, Store, Restarts, Checkpointer, u64) {
    let (dir, store, restarts, checkpointer) = beside_last_copy(copy_wait);
    let far = RESTART_FRAMES * super::FAR_PAST + 1;
    checkpointer.written(far);
    (dir, store, restarts, checkpointer, far)
}

#[test]
fn the_writer_waits_for_the_checkpointers_last_copy_unless_the_log_runs_far_past() {
    let past = RESTART_FRAMES + 1;
    assert!(!writer_tries(past, wake(past, RESTART_FRAMES - 10)));
    let mut copied = wake(past, RESTART_FRAMES - 10);
    copied.begin_copy();
    assert!(writer_tries(past, copied));
    // A checkpointer that never made its last copy holds the log up only so far.
    let edge = RESTART_FRAMES + RESTART_FRAMES / 8;
    assert!(!writer_tries(edge, wake(edge, RESTART_FRAMES - 10)));
    let far = edge + 1;
    assert!(writer_tries(far, wake(far, RESTART_FRAMES - 10)));
}

#[test]
fn the_writer_waits_while_a_copy_is_under_way() {
    let (_dir, store, mut restarts) = log_and_restarts();
    let checkpointer = checkpointer(last_copy_begun());
    let mark = marked(&checkpointer);
    restarts
        .restart(&store, RESTART_FRAMES + 5, &checkpointer)
        .expect("restart");
    assert_eq!(restarts.not_before, 1, "no try while the copy runs");
    drop(mark);
    restarts
        .restart(&store, RESTART_FRAMES + 6, &checkpointer)
        .expect("restart");
    assert_ne!(restarts.not_before, 1, "a try once it ended");
}

#[test]
fn a_copy_that_panics_leaves_no_mark() {
    let checkpointer = checkpointer(Wake::default());
    let panicked = std::panic::catch_unwind(|| {
        let _copying = marked(&checkpointer);
        assert!(under_way(&checkpointer));
        panic!("a copy that fails badly");
    });
    assert!(panicked.is_err());
    assert!(!under_way(&checkpointer));
    assert!(checkpointer.wait_for_copy(Duration::ZERO));
}

#[test]
fn the_writes_wait_for_a_copy_that_never_ends_once_and_not_for_long() {
    let (_dir, store, mut restarts, checkpointer, far) = far_past(Duration::from_millis(10));
    let _mark = marked(&checkpointer);
    let copy = checkpointer.copy_under_way();
    assert!(copy.is_some());
    restarts
        .restart(&store, far, &checkpointer)
        .expect("restart");
    assert_eq!(restarts.gave_up_on, copy, "it gave up on that copy");
    assert_eq!(restarts.not_before, 1, "and made no try of its own");
    // The next commits do not wait for it again.
    restarts
        .restart(&store, far + 1, &checkpointer)
        .expect("restart");
    assert_eq!(restarts.not_before, 1);
}

#[test]
fn far_past_its_limit_the_writer_waits_for_the_copy_under_way() {
    // However long this test's own thread waits for a core, the writer does not give up.
    let (_dir, store, mut restarts, checkpointer, far) = far_past(Duration::from_secs(600));
    let released = AtomicBool::new(false);
    std::thread::scope(|s| {
        let mark = marked(&checkpointer);
        let (restarts, checkpointer, released) = (&mut restarts, &checkpointer, &released);
        let writer = s.spawn(move || {
            restarts
                .restart(&store, far, checkpointer)
                .expect("restart");
            released.load(Ordering::Acquire)
        });
        // A writer that does not wait returns at once; one that waits cannot return
        // while the mark is held, however long this looks.
        let looked_until = Instant::now() + Duration::from_millis(50);
        while !writer.is_finished() && Instant::now() < looked_until {
            std::thread::yield_now();
        }
        assert!(
            !writer.is_finished(),
            "the writer went on while the log was far past its limit"
        );
        released.store(true, Ordering::Release);
        drop(mark);
        assert!(
            writer.join().expect("writer"),
            "it returned before the copy ended"
        );
    });
    assert_ne!(restarts.not_before, 1, "it tried once the copy ended");
}

#[test]
fn a_copy_a_read_held_up_gives_the_turn_back_to_the_checkpointer() {
    let (dir, store, mut restarts) = log_and_restarts();
    store
        .conn()
        .batch("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1)")
        .expect("a write to copy");
    // Another connection's read of the log as it stands.
    let reader =
        super::super::open(&dir.path().join("log.sqlite"), Durability::PowerLoss).expect("open");
    reader
        .conn()
        .batch("BEGIN; SELECT count(*) FROM t")
        .expect("a read under way");
    store
        .conn()
        .batch("INSERT INTO t VALUES (2)")
        .expect("log the read holds back");
    let checkpointer = checkpointer(last_copy_begun());
    restarts
        .restart(&store, RESTART_FRAMES + 5, &checkpointer)
        .expect("restart");
    assert_eq!(
        restarts.not_before,
        RESTART_FRAMES + 5 + RESTART_FRAMES / 4,
        "the writer tried, and the read held its copy up"
    );
    // As shipped before, the turn stayed the writer's: the checkpointer copied nothing
    // until the writer's next try, a quarter of the limit later, and left all that was
    // written meanwhile to the writer, every write waiting while it copied.
    checkpointer.written(RESTART_FRAMES + 6);
    {
        let wake = checkpointer.state.lock().expect("lock");
        assert!(!wake.writers_turn(), "the turn was kept");
        assert!(wake.to_copy());
        assert!(
            !wake.to_copy_early(),
            "the last copy waits for the next try"
        );
    }
    reader.conn().batch("COMMIT").expect("the read ends");
    // Its last copy is due an eighth of the limit before that try.
    let next_try = restarts.not_before;
    let due = next_try - RESTART_FRAMES / 8;
    checkpointer.written(due - 1);
    checkpointer.state.lock().expect("lock").begin_copy();
    assert!(!checkpointer.claim_turn(), "a copy not yet the last");
    checkpointer.written(due);
    assert!(checkpointer.state.lock().expect("lock").to_copy_early());
    checkpointer.state.lock().expect("lock").begin_copy();
    assert!(checkpointer.claim_turn(), "the last copy began");
    // Without it, the writer takes the turn at its next try, not before.
    let stopped = checkpointer_of(RESTART_FRAMES + 5, RESTART_FRAMES - 10);
    stopped.give_back_turn(next_try);
    stopped.written(next_try);
    assert!(!stopped.claim_turn());
    stopped.written(next_try + 1);
    assert!(stopped.claim_turn());
}

/// A checkpointer whose thread never runs, with the log `frames` long and its last copy
/// begun at `copied_at`.
fn checkpointer_of(frames: u64, copied_at: u64) -> Checkpointer {
    let mut wake = wake(frames, copied_at);
    wake.written = true;
    checkpointer(wake)
}

#[test]
fn during_a_long_read_the_writer_does_not_try_and_the_last_copy_waits_for_its_end() {
    use crate::store::LongReads;
    let past = RESTART_FRAMES + 5;
    let far = RESTART_FRAMES * super::FAR_PAST + 1;
    let reading = || {
        let checkpointer = checkpointer(last_copy_begun());
        checkpointer.begun();
        checkpointer
    };
    let tries = writer_tries_beside;
    assert!(!tries(past, &reading()), "the writer waited for the read");
    assert!(!tries(RESTART_FRAMES * super::FAR_PAST, &reading()));
    assert!(
        !tries(far, &reading()),
        "no try can start the log over while the read holds it"
    );
    // The last copy began before the read: the log written during it is copied by the
    // checkpointer once it ends, before the writer's turn, however long the read lasted.
    let ended = reading();
    let overdue = RESTART_FRAMES + RESTART_FRAMES / 8 + 1;
    ended.written(overdue);
    {
        let wake = ended.state.lock().expect("lock");
        assert!(wake.to_copy(), "copies go on during the read");
        assert!(!wake.to_copy_early(), "but the last waits for its end");
    }
    ended.ended();
    assert!(!tries(overdue, &ended), "no last copy since the read began");
    assert!(ended.state.lock().expect("lock").to_copy_early());
    ended.state.lock().expect("lock").begin_copy();
    assert!(tries(overdue, &ended), "the last copy began after the read");
    // A checkpointer that makes no last copy after the read: the writer takes the turn
    // an eighth of the limit past where the read ended.
    let stopped = reading();
    stopped.written(overdue);
    stopped.ended();
    assert!(!tries(overdue + RESTART_FRAMES / 8, &stopped));
    assert!(tries(overdue + RESTART_FRAMES / 8 + 1, &stopped));
    // A copy begun during a read is not the last; one begun after it is.
    let during = reading();
    during.state.lock().expect("lock").begin_copy();
    during.ended();
    assert!(!tries(past, &during));
    during.state.lock().expect("lock").begin_copy();
    assert!(tries(past, &during));
    // The writer had the turn, and a copy under way kept it from copying, when the
    // read began: it gives the turn back.
    let claimed = checkpointer(last_copy_begun());
    assert!(claimed.claim_turn());
    let mark = marked(&claimed);
    assert!(!tries(past, &claimed), "no try while the copy runs");
    claimed.begun();
    drop(mark);
    assert!(!tries(past, &claimed), "the writer waited for the read");
    claimed.written(past + 1);
    assert!(claimed.state.lock().expect("lock").to_copy());
    claimed.ended();
    assert!(
        !tries(past + 1, &claimed),
        "no last copy since the read began"
    );
}

#[test]
fn a_long_read_begins_after_the_writers_copy_and_the_copy_after_a_read_begun() {
    use crate::store::LongReads;
    // A read begun between the writer's turn and its copy: the copy gives the turn back.
    let between = checkpointer(last_copy_begun());
    assert!(between.claim_turn());
    between.begun();
    assert!(between.begin_writers_copy().is_none());
    assert!(!between.state.lock().expect("lock").writers_turn());
    between.ended();
    assert!(between.begin_writers_copy().is_some());
    // A read that would begin during the writer's copy waits for it to end.
    let copying = checkpointer(last_copy_begun());
    let begun = AtomicBool::new(false);
    std::thread::scope(|s| {
        let copy = copying.begin_writers_copy().expect("no read under way");
        let (copying, begun) = (&copying, &begun);
        let reader = s.spawn(move || {
            copying.begun();
            begun.store(true, Ordering::Release);
        });
        let looked_until = Instant::now() + Duration::from_millis(50);
        while !reader.is_finished() && Instant::now() < looked_until {
            std::thread::yield_now();
        }
        assert!(
            !begun.load(Ordering::Acquire),
            "the read began during the copy"
        );
        drop(copy);
        reader.join().expect("reader");
    });
    assert_eq!(copying.state.lock().expect("lock").long_reads, 1);
}

#[test]
fn the_end_of_the_last_long_read_wakes_the_checkpointer_for_its_last_copy() {
    use crate::store::LongReads;
    let reading = checkpointer_of(RESTART_FRAMES + 5, RESTART_FRAMES - 10);
    reading.begun();
    let (waiting, told) = std::sync::mpsc::channel();
    std::thread::scope(|s| {
        let reading = &reading;
        let checkpointer = s.spawn(move || {
            // Waiting as the checkpointer waits between copies, before the read ends: the
            // lock is held from the word to the wait, which lets it go.
            let wake = reading.state.lock().expect("lock");
            waiting.send(()).expect("told");
            let (wake, waited) = reading
                .ready
                .wait_timeout(wake, Duration::from_secs(60))
                .expect("lock");
            (wake.to_copy_early(), waited.timed_out())
        });
        told.recv().expect("waiting");
        reading.ended();
        assert_eq!(
            checkpointer.join().expect("checkpointer"),
            (true, false),
            "woken for its last copy"
        );
    });
}

#[test]
fn a_long_read_far_past_the_limit_holds_no_write_up() {
    use crate::store::LongReads;
    let (_dir, store, mut restarts, checkpointer, far) = far_past(Duration::from_millis(10));
    checkpointer.begun();
    let _mark = marked(&checkpointer);
    restarts
        .restart(&store, far, &checkpointer)
        .expect("restart");
    assert_eq!(restarts.gave_up_on, None, "the writes waited for the copy");
    assert_eq!(restarts.not_before, 1, "and made no try");
}

#[test]
fn the_copy_a_long_read_held_up_is_waited_for_only_a_limit_past_the_reads_end() {
    use crate::store::LongReads;
    let (_dir, store, mut restarts, checkpointer) = beside_last_copy(Duration::from_millis(10));
    let ended_at = RESTART_FRAMES * super::FAR_PAST + 1;
    checkpointer.begun();
    checkpointer.written(ended_at);
    checkpointer.ended();
    // The last copy, of all the read held up, under way.
    checkpointer.state.lock().expect("lock").begin_copy();
    let _mark = marked(&checkpointer);
    let later = ended_at + RESTART_FRAMES;
    checkpointer.written(later);
    restarts
        .restart(&store, later, &checkpointer)
        .expect("restart");
    assert_eq!(restarts.gave_up_on, None, "the writes waited for the copy");
    checkpointer.written(later + 1);
    restarts
        .restart(&store, later + 1, &checkpointer)
        .expect("restart");
    assert!(
        restarts.gave_up_on.is_some(),
        "a copy that lasted a whole limit more is waited for"
    );
}

#[test]
fn a_read_under_way_at_every_try_holds_the_writer_back_only_so_far() {
    use crate::store::LongReads;
    // Reads one after another with no gap a commit falls in (a caller scraping the metrics
    // back to back): one is under way at every try.
    let bound = RESTART_FRAMES * super::READS_HOLD;
    let reading = || {
        let checkpointer = checkpointer(last_copy_begun());
        checkpointer.begun();
        checkpointer
    };
    assert!(!writer_tries_beside(bound, &reading()));
    assert!(
        writer_tries_beside(bound + 1, &reading()),
        "past the bound the writer tries while the read goes on"
    );
}

#[test]
fn reads_that_end_one_after_another_move_the_last_copy_only_so_far() {
    use crate::store::LongReads;
    // A checkpointer starved in the middle of a copy, and reads that each end as the log
    // grows: each end moves where the last copy is due.
    let (_dir, store, mut restarts, checkpointer) = beside_last_copy(Duration::from_millis(10));
    let _mark = marked(&checkpointer);
    let reads_end_at = |frames: u64, restarts: &mut Restarts| {
        checkpointer.begun();
        checkpointer.written(frames);
        checkpointer.ended();
        restarts
            .restart(&store, frames, &checkpointer)
            .expect("restart");
    };
    // Where the last copy is due stops at the bound, and a limit past it the copy under
    // way is waited for.
    let waits_from = RESTART_FRAMES * super::READS_HOLD + RESTART_FRAMES;
    let mut frames = RESTART_FRAMES;
    while frames <= waits_from {
        reads_end_at(frames, &mut restarts);
        assert_eq!(restarts.gave_up_on, None, "no wait at {frames}");
        frames += EAGER;
    }
    reads_end_at(waits_from + 1, &mut restarts);
    assert!(
        restarts.gave_up_on.is_some(),
        "the writes waited for the copy under way"
    );
}

#[test]
fn past_four_limits_a_try_that_failed_still_puts_the_wait_for_a_copy_a_limit_off() {
    let (_dir, store, mut restarts, checkpointer) = beside_last_copy(Duration::from_millis(10));
    // The writer's copy failed far past the limit (a read held it up); its next try is a
    // quarter of the limit later, and a copy of the checkpointer's begun meanwhile is
    // under way then.
    let failed_at = RESTART_FRAMES * (super::READS_HOLD + 2);
    let next_try = failed_at + EAGER;
    checkpointer.written(failed_at);
    checkpointer.give_back_turn(next_try);
    let _mark = marked(&checkpointer);
    checkpointer.written(next_try + 1);
    restarts
        .restart(&store, next_try + 1, &checkpointer)
        .expect("restart");
    assert_eq!(
        restarts.gave_up_on, None,
        "a copy begun a quarter of the limit ago is not waited for"
    );
}

#[test]
fn a_long_read_waits_a_second_at_most_for_the_writers_copy() {
    use crate::store::LongReads;
    let checkpointer = std::sync::Arc::new(checkpointer(last_copy_begun()));
    // A copy of the writer's that does not end while the read waits.
    let copy = checkpointer
        .begin_writers_copy()
        .expect("no read under way");
    let theirs = checkpointer.clone();
    let reader = std::thread::spawn(move || theirs.begun());
    let looked_until = Instant::now() + Duration::from_secs(30);
    while !reader.is_finished() && Instant::now() < looked_until {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(reader.is_finished(), "the read waited on");
    drop(copy);
    assert_eq!(checkpointer.state.lock().expect("lock").long_reads, 1);
}

#[test]
fn a_copy_that_left_log_waits_for_more() {
    let mut restarts = Restarts::new(RESTART_FRAMES, holds());
    assert!(!restarts.due(RESTART_FRAMES));
    assert!(restarts.due(RESTART_FRAMES + 1));
    restarts.not_before = RESTART_FRAMES + 1 + EAGER;
    assert!(!restarts.due(RESTART_FRAMES + EAGER));
    assert!(restarts.due(RESTART_FRAMES + 2 + EAGER));
    // SQLite started the log over by itself: the try put off is due again from the limit.
    assert!(!restarts.due(5));
    assert!(restarts.due(RESTART_FRAMES + 1));
}

#[test]
fn a_log_started_over_counts_from_its_start() {
    // The last copy began at a long log; the writer started it over since.
    assert!(!wake(10, 4 * EAGER).eager());
    assert!(wake(EAGER, 4 * EAGER).eager());
}
