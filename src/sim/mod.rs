//! Deterministic simulation of the coordinator: worlds built from a seed, each the real
//! coordinator (handlers, core, SQLite store) on a manual clock with a simulated
//! downstream, agents, an engineer, a forger and crashes, every invariant checked after
//! every step. A failing seed prints the history that led to it, shrunk to the steps that
//! matter, and runs the same again from `--seed`.

pub mod cli;
pub mod dice;
pub mod downstream;
pub mod history;
pub mod invariants;
pub mod steps;
pub mod world;

use std::collections::BTreeSet;
use std::time::Instant;

use serde::Serialize;

pub use self::cli::{SimulateArgs, run_cli};
use self::downstream::Faults;
use self::world::{Violation, World};
use crate::coordinator::core::reconcile::Trigger;
use crate::store::ops::*;

/// Seeds that once found a bug; every run replays them. Each found one of the bugs put
/// back on purpose to see the simulator catch it (BENCHMARKS.md), or a check that was
/// wrong.
pub const REGRESSION_SEEDS: &[u64] = &[
    1003, // a resend after an unproven send, without a lookup
    1010, // a planned send left pending, and sent, after the intent was closed
    1005, // an in-flight create guard only a finished request clears: the key sticks
    1085, // a vouched-for bare 503 that had applied, judged against the key's retention
    441,  // a create answered 303 after it applied, rejected as if nothing had been
    516,  // an answer naming no key and a record another intent holds, taken as a receipt
    169,  // an answer naming another key's record, taken as a receipt
];

/// Steps a world runs when not told otherwise.
pub const DEFAULT_STEPS: u64 = 300;

/// How one world ended.
#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    pub seed: u64,
    pub steps: u64,
    pub violations: Vec<Violation>,
    pub intents: i64,
    pub effects: u64,
    pub committed: i64,
    pub indeterminate: i64,
    /// Answers refused for naming a record another intent held.
    pub refused_held: i64,
    pub crashes: u32,
    #[serde(skip)]
    pub history: String,
}

/// Run world `seed` for `steps` steps, skipping the steps in `skip`, then let it settle.
pub fn run_world(seed: u64, steps: u64, skip: &BTreeSet<u64>) -> anyhow::Result<Outcome> {
    let mut world = World::new(seed)?;
    world
        .history
        .note(format!("world {seed}: {:?}", world.setup));
    for step in 0..steps {
        world.step = step;
        if skip.contains(&step) {
            continue;
        }
        steps::run_step(&mut world)?;
    }
    settle(&mut world, steps)?;
    let effects = {
        let downstream = world.downstream.lock();
        downstream
            .keys_with_effects()
            .map(|(_, r)| r.len() as u64)
            .sum()
    };
    Ok(Outcome {
        seed,
        steps,
        intents: invariants::count(&world, "SELECT count(*) FROM intents"),
        committed: invariants::count(
            &world,
            "SELECT count(*) FROM intents WHERE state = 'committed'",
        ),
        indeterminate: invariants::count(
            &world,
            "SELECT count(*) FROM intents WHERE state = 'indeterminate'",
        ),
        refused_held: world
            .reader
            .refused_answers()?
            .iter()
            .map(|(_, n)| *n as i64)
            .sum(),
        effects,
        crashes: world.incarnation,
        history: world.history.render(),
        violations: std::mem::take(&mut world.violations),
    })
}

/// Let the world come to rest: the downstream heals (its key policy stays), every send in
/// transit is recorded, and the dispatcher and reconciler run until nothing is left to do;
/// then the checks at rest.
fn settle(world: &mut World, from_step: u64) -> anyhow::Result<()> {
    {
        let mut downstream = world.downstream.lock();
        let (retention_ms, ignore_keys) = (
            downstream.faults.retention_ms,
            downstream.faults.ignore_keys,
        );
        downstream.faults = Faults {
            retention_ms,
            ignore_keys,
            ..Faults::none()
        };
    }
    world.history.begin(from_step);
    world
        .history
        .note("the downstream heals; the world settles".into());
    for round in 0..40 {
        world.step = from_step + round;
        world.downstream.lock().dice = world.dice(1);
        while !world.in_transit.is_empty() {
            steps::record(world, 0)?;
        }
        let busy = invariants::count(
            world,
            "SELECT count(*) FROM outbox WHERE status IN ('pending', 'claimed')",
        );
        let hooks = world.downstream.lock().webhooks.len();
        if round > 0 && busy == 0 && hooks == 0 {
            break;
        }
        steps::advance(world, world.setup.lease_ms + 1_000);
        loop {
            let (config, worker, now) = (
                world.state.config.clone(),
                world.state.worker.clone(),
                world.now(),
            );
            let claim = world.write(move |s| {
                crate::coordinator::core::dispatch::claim(s, &config, &worker, now, 64)
            })?;
            if claim.rows.is_empty() {
                break;
            }
            settle_sends(world, claim.rows);
            while !world.in_transit.is_empty() {
                steps::record(world, 0)?;
            }
        }
        let mut dice = world.dice(0);
        steps::sweep_once(world, &mut dice)?;
        // At rest an operator looks every unproven intent up, whatever its pacing.
        let due = world.write(|s| s.indeterminate_batch(500))?;
        for id in due {
            steps::look_up(world, &id, Trigger::Operator)?;
        }
        loop {
            let mut dice = world.dice(2);
            if world.downstream.lock().webhooks.is_empty() {
                break;
            }
            steps::deliver_webhook(world, &mut dice);
        }
        invariants::after_step(world)?;
    }
    invariants::at_rest(world);
    Ok(())
}

fn settle_sends(world: &mut World, rows: Vec<crate::store::ClaimedRow>) {
    steps::send_rows(world, rows);
}

/// What `simulate` reports.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub seeds: u64,
    pub first_seed: u64,
    pub steps: u64,
    pub violations: Vec<Violation>,
    /// The seeds that failed.
    pub failing_seeds: Vec<u64>,
    pub intents: i64,
    pub effects: u64,
    pub committed: i64,
    pub indeterminate_at_rest: i64,
    /// Answers (a create's or a lookup's) refused for naming a record another intent held.
    pub refused_held: i64,
    pub crashes: u64,
    pub seconds: f64,
    pub steps_per_second: f64,
    pub seeds_per_minute: f64,
}

/// Run `seeds` worlds from `first_seed` (and the regression seeds, if asked) on `threads`
/// threads.
pub fn run_many(
    first_seed: u64,
    seeds: u64,
    steps: u64,
    regressions: bool,
    threads: usize,
) -> anyhow::Result<(Summary, Vec<Outcome>)> {
    let started = Instant::now();
    let mut list: Vec<u64> = (0..seeds).map(|i| first_seed.wrapping_add(i)).collect();
    if regressions {
        list.extend_from_slice(REGRESSION_SEEDS);
    }
    let threads = threads.max(1);
    let outcomes: Vec<anyhow::Result<Outcome>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let mine: Vec<u64> = list.iter().copied().skip(t).step_by(threads).collect();
                scope.spawn(move || {
                    mine.into_iter()
                        .map(|seed| run_world(seed, steps, &BTreeSet::new()))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    });
    let outcomes: Vec<Outcome> = outcomes.into_iter().collect::<Result<_, _>>()?;
    let seconds = started.elapsed().as_secs_f64();
    let total_steps = outcomes.iter().map(|o| o.steps).sum::<u64>();
    let mut failing: Vec<u64> = outcomes
        .iter()
        .filter(|o| !o.violations.is_empty())
        .map(|o| o.seed)
        .collect();
    failing.sort_unstable();
    let summary = Summary {
        seeds: outcomes.len() as u64,
        first_seed,
        steps: total_steps,
        violations: outcomes
            .iter()
            .flat_map(|o| {
                o.violations.iter().map(move |v| Violation {
                    detail: format!("seed {}: {}", o.seed, v.detail),
                    ..v.clone()
                })
            })
            .collect(),
        failing_seeds: failing,
        intents: outcomes.iter().map(|o| o.intents).sum(),
        effects: outcomes.iter().map(|o| o.effects).sum(),
        committed: outcomes.iter().map(|o| o.committed).sum(),
        indeterminate_at_rest: outcomes.iter().map(|o| o.indeterminate).sum(),
        refused_held: outcomes.iter().map(|o| o.refused_held).sum(),
        crashes: outcomes.iter().map(|o| u64::from(o.crashes)).sum(),
        seconds,
        steps_per_second: total_steps as f64 / seconds.max(1e-9),
        seeds_per_minute: outcomes.len() as f64 * 60.0 / seconds.max(1e-9),
    };
    Ok((summary, outcomes))
}

/// The shortest history found that still breaks the first invariant `seed` breaks: steps
/// are dropped, in halves and then one by one, while the same invariant still fails.
pub fn shrink(seed: u64, steps: u64, budget_runs: usize) -> anyhow::Result<Option<Outcome>> {
    let first = run_world(seed, steps, &BTreeSet::new())?;
    let Some(target) = first.violations.first().cloned() else {
        return Ok(None);
    };
    // Steps after the failure cannot have caused it (unless it was found at rest).
    let steps = if target.step < steps {
        target.step + 1
    } else {
        steps
    };
    let fails = |skip: &BTreeSet<u64>| -> anyhow::Result<Option<Outcome>> {
        let o = run_world(seed, steps, skip)?;
        Ok(o.violations
            .iter()
            .any(|v| v.name == target.name)
            .then_some(o))
    };
    let mut skip = BTreeSet::new();
    let mut best = fails(&skip)?.unwrap_or(first);
    let mut runs = 1;
    let mut chunk = (steps / 2).max(1);
    while chunk >= 1 && runs < budget_runs {
        let mut start = 0;
        while start < steps && runs < budget_runs {
            let candidate: BTreeSet<u64> = skip
                .iter()
                .copied()
                .chain(start..(start + chunk).min(steps))
                .collect();
            if candidate.len() > skip.len() {
                runs += 1;
                if let Some(o) = fails(&candidate)? {
                    skip = candidate;
                    best = o;
                }
            }
            start += chunk;
        }
        if chunk == 1 {
            break;
        }
        chunk /= 2;
    }
    Ok(Some(best))
}
