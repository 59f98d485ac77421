//! `intentdesk simulate`: run seeded worlds and report what they found.

use std::io::Write;

use super::{DEFAULT_STEPS, REGRESSION_SEEDS, run_many, run_world, shrink};

/// Run simulated worlds of the coordinator and check every invariant after every step.
#[derive(clap::Args, Debug, Clone)]
pub struct SimulateArgs {
    /// How many worlds to run, seeds `seed`, `seed + 1`, …
    #[arg(long, default_value_t = 100)]
    pub seeds: u64,
    /// The first seed (default: drawn from the clock, and printed).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Steps per world before it settles.
    #[arg(long, default_value_t = DEFAULT_STEPS)]
    pub steps: u64,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
    /// Leave out the seeds that once found a bug.
    #[arg(long)]
    pub no_regressions: bool,
    /// Print the whole history of every world run (with `--seeds 1`, to read one world).
    #[arg(long)]
    pub history: bool,
    /// Worlds run at once (default: one per core).
    #[arg(long)]
    pub threads: Option<usize>,
    /// The most re-runs spent shrinking a failing history.
    #[arg(long, default_value_t = 300)]
    pub shrink_runs: usize,
}

/// Run `simulate`; the exit code is 1 when any invariant was violated.
pub fn run_cli(args: SimulateArgs) -> anyhow::Result<u8> {
    let first = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64 % 1_000_000_000)
    });
    let threads = args
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, std::num::NonZero::get));
    eprintln!(
        "simulating {} worlds from seed {first}, {} steps each{}",
        args.seeds,
        args.steps,
        if args.no_regressions {
            String::new()
        } else {
            format!(", and {} regression seeds", REGRESSION_SEEDS.len())
        }
    );
    let (summary, outcomes) =
        run_many(first, args.seeds, args.steps, !args.no_regressions, threads)?;
    if args.history {
        for o in &outcomes {
            eprintln!("--- world {} ---\n{}", o.seed, o.history);
        }
    }
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&summary)?)?;
    } else {
        writeln!(
            out,
            "{} worlds, {} steps in {:.1} s ({:.0} steps/s, {:.0} worlds/min): {} intents, {} effects, \
             {} committed, {} indeterminate at rest, {} answers refused as another intent's record, \
             {} crashes; {} violations",
            summary.seeds,
            summary.steps,
            summary.seconds,
            summary.steps_per_second,
            summary.seeds_per_minute,
            summary.intents,
            summary.effects,
            summary.committed,
            summary.indeterminate_at_rest,
            summary.refused_held,
            summary.crashes,
            summary.violations.len()
        )?;
        for v in &summary.violations {
            writeln!(out, "  {} at step {}: {}", v.name, v.step, v.detail)?;
        }
    }
    let Some(&seed) = summary.failing_seeds.first() else {
        return Ok(0);
    };
    eprintln!("seed {seed} failed; shrinking its history…");
    match shrink(seed, args.steps, args.shrink_runs)? {
        Some(o) => {
            let lines = o.history.lines().count();
            eprintln!(
                "the shortest history found ({lines} lines) that still breaks {}:\n{}",
                o.violations.first().map_or("", |v| v.name),
                o.history
            );
        }
        None => {
            let o = run_world(seed, args.steps, &Default::default())?;
            eprintln!("(it did not fail again alone)\n{}", o.history);
        }
    }
    eprintln!(
        "run it again: intentdesk simulate --seeds 1 --seed {seed} --steps {} --history",
        args.steps
    );
    Ok(1)
}
