//! The deterministic simulation as CI runs it: a thousand seeded worlds from a seed that
//! changes with every run (printed, and settable with `INTENTDESK_SIM_SEED`), plus every
//! seed that once found a bug; a world run twice is the same world; and the checks do fail
//! when the coordinator's database breaks a promise.

use std::collections::BTreeSet;

use intentdesk::sim::world::World;
use intentdesk::sim::{REGRESSION_SEEDS, invariants, run_many, run_world, shrink, steps};
use intentdesk::store::sql::{ConnExt, params};

/// Worlds per run.
const SEEDS: u64 = 1_000;

#[test]
fn a_thousand_seeded_worlds_keep_every_promise() {
    let first = std::env::var("INTENTDESK_SIM_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64 % 1_000_000_000)
        });
    println!(
        "simulating {SEEDS} worlds from seed {first} and {} regression seeds",
        REGRESSION_SEEDS.len()
    );
    let (summary, _) =
        run_many(first, SEEDS, intentdesk::sim::DEFAULT_STEPS, true, 2).expect("the worlds run");
    println!(
        "{} worlds, {} steps in {:.1} s: {} intents, {} effects, {} crashes",
        summary.seeds,
        summary.steps,
        summary.seconds,
        summary.intents,
        summary.effects,
        summary.crashes
    );
    assert!(
        summary.effects > SEEDS / 2,
        "the worlds made too few effects to test anything: {summary:?}"
    );
    if let Some(&seed) = summary.failing_seeds.first() {
        let shrunk = shrink(seed, intentdesk::sim::DEFAULT_STEPS, 200)
            .expect("the seed runs again")
            .map(|o| o.history)
            .unwrap_or_default();
        panic!(
            "{} violations in seeds {:?}; the first: {:?}\nshrunk history of seed {seed}:\n{shrunk}\n\
             re-run: intentdesk simulate --seeds 1 --seed {seed} --history",
            summary.violations.len(),
            summary.failing_seeds,
            summary.violations.first()
        );
    }
}

#[test]
fn a_world_runs_the_same_twice() {
    let skip = BTreeSet::new();
    let a = run_world(424_242, 250, &skip).expect("runs");
    let b = run_world(424_242, 250, &skip).expect("runs");
    assert!(a.history.lines().count() > 100, "{}", a.history);
    assert_eq!(a.history, b.history);
    assert_eq!(
        (a.intents, a.effects, a.committed),
        (b.intents, b.effects, b.committed)
    );
}

/// Run world `seed` until an intent is committed with an effect; its id and key.
fn world_with_a_commit(seed: u64) -> (World, String, String) {
    let mut world = World::new(seed).expect("world");
    for step in 0..5_000 {
        world.step = step;
        steps::run_step(&mut world).expect("step");
        let committed: Option<(String, String)> = world
            .reader
            .conn()
            .one(
                "SELECT id, action_key FROM intents WHERE state = 'committed' AND tier IN ('write', 'financial')",
                params![],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .ok();
        if let Some((id, key)) = committed {
            assert!(world.violations.is_empty(), "{:?}", world.violations);
            return (world, id, key);
        }
    }
    panic!("no intent was committed in 5,000 steps of world {seed}");
}

/// The engineer's pauses are known to the checks that hold sends against them: a pause the
/// coordinator applied (answered 201, a new command) is remembered, so a send it covers is
/// a violation and the engineer may later resume it. (For a while only a command's replay,
/// 200, was remembered: no pause ever was, and that check could not fail.)
#[test]
fn the_engineers_pauses_are_remembered_for_the_checks() {
    let mut world = World::new(21).expect("world");
    for step in 0..5_000 {
        world.step = step;
        steps::run_step(&mut world).expect("step");
        if !world.pauses.is_empty() {
            return;
        }
    }
    panic!("no pause was remembered in 5,000 steps of world 21");
}

#[test]
fn the_checks_catch_a_cancelled_intent_with_an_effect() {
    let (mut world, id, _) = world_with_a_commit(11);
    world
        .write(move |s| {
            s.conn().run(
                "UPDATE intents SET state = 'cancelled' WHERE id = ?1",
                params![id.as_str()],
            )
        })
        .expect("tampered");
    invariants::after_step(&mut world).expect("checks run");
    let names: Vec<&str> = world.violations.iter().map(|v| v.name).collect();
    assert!(
        names.contains(&"a_cancelled_intent_has_no_effect"),
        "{names:?}"
    );
}

#[test]
fn the_checks_catch_a_commit_without_evidence() {
    let (mut world, id, _) = world_with_a_commit(12);
    world
        .write(move |s| {
            s.conn().run(
                "UPDATE intents SET downstream_ref = 'po-nowhere' WHERE id = ?1",
                params![id.as_str()],
            )
        })
        .expect("tampered");
    invariants::after_step(&mut world).expect("checks run");
    let names: Vec<&str> = world.violations.iter().map(|v| v.name).collect();
    assert!(names.contains(&"committed_only_with_evidence"), "{names:?}");
}

#[test]
fn the_checks_catch_an_answered_intent_that_vanished() {
    let (mut world, _, _) = world_with_a_commit(13);
    world
        .answered
        .insert("int_01kdvdna00anf73gc6j3q45j8b".to_string());
    invariants::after_step(&mut world).expect("checks run");
    let names: Vec<&str> = world.violations.iter().map(|v| v.name).collect();
    assert!(
        names.contains(&"every_answered_write_survives"),
        "{names:?}"
    );
}

/// A send that carries other arguments than its own order's is caught as it leaves: every
/// order's stored arguments are made those of an order never placed, and the world goes on
/// until one of the orders made before is sent.
#[test]
fn the_checks_catch_a_send_of_arguments_nobody_ordered() {
    let (mut world, _, _) = world_with_a_commit(15);
    world
        .write(|s| {
            s.conn().run(
                "UPDATE intent_payloads SET canonical_json = '{\"amount\":0,\"item\":\"A4 paper\",\"qty\":12}'",
                params![],
            )
        })
        .expect("tampered");
    for step in world.step + 1..world.step + 5_000 {
        world.step = step;
        steps::run_step(&mut world).expect("step");
        if world
            .violations
            .iter()
            .any(|v| v.name == "sends_what_was_ordered")
        {
            return;
        }
    }
    panic!(
        "nothing was sent in 5,000 steps of world 15, or its arguments went unnoticed: {:?}",
        world.violations
    );
}

#[test]
fn the_checks_catch_one_record_committed_for_two_intents() {
    let (mut world, _, _) = world_with_a_commit(14);
    // Two intents of one connector and operation, each committed by the coordinator's own
    // call; the later one's receipt is made to name the earlier one's record, a moment
    // after it (well within any hold).
    let pair = "SELECT r1.downstream_id, r1.received_at_ms, r2.seq FROM receipts r1 \
                JOIN intents i1 ON i1.seq = r1.intent_seq \
                JOIN receipts r2 ON r2.intent_seq <> r1.intent_seq AND r2.received_at_ms >= r1.received_at_ms \
                JOIN intents i2 ON i2.seq = r2.intent_seq \
                WHERE r1.authoritative = 1 AND r2.authoritative = 1 \
                AND r1.source IN ('dispatch', 'lookup') AND r2.source IN ('dispatch', 'lookup') \
                AND i1.connector = i2.connector AND i1.operation = i2.operation LIMIT 1";
    let mut found = None;
    for step in world.step + 1..world.step + 5_000 {
        world.step = step;
        steps::run_step(&mut world).expect("step");
        found = world
            .reader
            .conn()
            .one(pair, params![], |r| {
                Ok((r.get::<String>(0)?, r.get::<i64>(1)?, r.get::<i64>(2)?))
            })
            .ok();
        if found.is_some() {
            break;
        }
    }
    let (record, at_ms, second) =
        found.expect("two intents of one kind committed by our own calls");
    invariants::after_step(&mut world).expect("checks run");
    assert!(world.violations.is_empty(), "{:?}", world.violations);
    // What the promise leaves out is no violation: the same record brought by a webhook (a
    // connector's token could name any id), proved a year later (past any hold), or the
    // same id for another operation (another kind of record).
    let year_ms: i64 = 365 * 86_400_000;
    let cases = [
        ("webhook", at_ms + 1, "", false),
        ("dispatch", at_ms + year_ms, "", false),
        ("dispatch", at_ms + 1, " (another operation)", false),
        ("lookup", at_ms + 1, "", true),
    ];
    let operation: String = world
        .reader
        .conn()
        .one(
            "SELECT i.operation FROM intents i JOIN receipts r ON r.intent_seq = i.seq WHERE r.seq = ?1",
            params![second],
            |r| r.get(0),
        )
        .expect("the second intent's operation");
    for (source, received_at_ms, suffix, broken) in cases {
        let (record, operation) = (record.clone(), operation.clone());
        world
            .write(move |s| {
                s.conn().run(
                    "UPDATE receipts SET downstream_id = ?1, source = ?2, received_at_ms = ?3 \
                     WHERE seq = ?4",
                    params![record.as_str(), source, received_at_ms, second],
                )?;
                // The second intent's operation, with `suffix` after it (none: as it was).
                s.conn().run(
                    "UPDATE intents SET operation = ?1 \
                     WHERE seq = (SELECT intent_seq FROM receipts WHERE seq = ?2)",
                    params![format!("{operation}{suffix}"), second],
                )
            })
            .expect("tampered");
        invariants::after_step(&mut world).expect("checks run");
        let names: Vec<&str> = world.violations.iter().map(|v| v.name).collect();
        assert_eq!(
            names.contains(&"one_record_one_intent"),
            broken,
            "{source} at {received_at_ms}{suffix}: {names:?}"
        );
    }
}
