//! The `load` subcommand: set the sandbox's faults, drive a bounded workload through a
//! coordinator (or, with `--naive`, straight at the sandbox), wait for it to settle and
//! print the logical-outcome report. The exit status is 1 when any duplicate effect
//! occurred.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;
use reqwest::Url;

use super::driver::{DriverConfig, drive, run_tag};
use super::generator::Mix;
use super::naive::{NaiveConfig, run_naive};
use super::report::{Report, ReportSource, coordinator_report, settle, window_of};
use crate::clock::{SharedClock, system_clock};
use crate::sandbox::FaultSpec;

/// Flags of `intentdesk load`.
#[derive(Debug, Clone, clap::Args)]
pub struct LoadArgs {
    /// The coordinator to drive (not used with --naive).
    #[arg(long, value_name = "URL", required_unless_present = "naive")]
    pub coordinator: Option<Url>,

    /// File holding an `agent` or `admin` bearer token for the coordinator.
    #[arg(long, value_name = "F", required_unless_present = "naive")]
    pub token_file: Option<PathBuf>,

    /// File holding a token that may read (viewer or above) for the report, when
    /// --token-file holds an agent token.
    #[arg(long, value_name = "F")]
    pub report_token_file: Option<PathBuf>,

    /// File holding the token approvals are sent with (an approver, supervisor or admin):
    /// an intent is approved by a principal other than the agent that created it. Without
    /// it, the --report-token-file token approves.
    #[arg(long, value_name = "F")]
    pub approver_token_file: Option<PathBuf>,

    /// The sandbox: its faults are set before the run and its effects are the ground truth.
    #[arg(long, value_name = "URL", default_value = "http://127.0.0.1:7420")]
    pub sandbox: Url,

    /// How many intents the agents ask for (replays and deliberate repeats come on top).
    #[arg(long, value_name = "N", default_value_t = 200)]
    pub intents: u64,

    /// Sandbox faults for the run, e.g. `drop_after_commit=0.1,overload=0.1`; `none` clears
    /// them. Without it the sandbox keeps its faults. They stay in force after the run.
    #[arg(long, value_name = "SPEC")]
    pub faults: Option<FaultSpec>,

    /// Seed of the workload (which intents, which provider failures).
    #[arg(long, value_name = "S", default_value_t = 1)]
    pub seed: u64,

    /// Print the report as one JSON object.
    #[arg(long)]
    pub json: bool,

    /// New intents per second.
    #[arg(long, value_name = "R", default_value_t = 20.0)]
    pub rate: f64,

    /// Intents in progress at once.
    #[arg(long, value_name = "C", default_value_t = 64)]
    pub concurrency: usize,

    /// Plans whose intents one create request carries: 1 sends each alone
    /// (`POST /v1/intents`); more send that many plans' intents together, with the second
    /// send of a key some plans make (`POST /v1/intents/batch`; at most 50 plans and no more
    /// than --concurrency), each still its own intent under its own key.
    #[arg(long, value_name = "N", default_value_t = 1, conflicts_with = "naive")]
    pub batch: usize,

    /// Run the naive baseline instead: no coordinator, every layer retries with fresh keys.
    #[arg(long)]
    pub naive: bool,

    /// The naive client's timeout for one downstream call, in milliseconds (give it the
    /// connector's timeout_ms to compare like with like).
    #[arg(long, value_name = "MS", default_value_t = 2000)]
    pub naive_timeout_ms: u64,

    /// Multiplies the simulated provider latencies and waits.
    #[arg(long, value_name = "X", default_value_t = 1.0)]
    pub latency_scale: f64,

    /// The longest wait for the run to settle before reporting, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 120)]
    pub settle_timeout_secs: u64,
}

/// Runs `intentdesk load`; the process exit code (1 when a duplicate effect occurred).
pub async fn run_cli(args: LoadArgs) -> anyhow::Result<i32> {
    anyhow::ensure!(
        args.latency_scale.is_finite() && args.latency_scale >= 0.0,
        "--latency-scale must be 0 or more"
    );
    let faults_shown = match &args.faults {
        Some(spec) => {
            set_faults(&args.sandbox, spec).await?;
            spec.to_string()
        }
        None => current_faults(&args.sandbox)
            .await
            .unwrap_or_else(|| "unknown".to_string()),
    };
    let mix = Mix {
        latency_scale: args.latency_scale,
        ..Mix::default()
    };
    let clock = system_clock();
    let tag = run_tag(args.seed, clock.now_ms());
    let report = if args.naive {
        let config = NaiveConfig {
            sandbox: args.sandbox.clone(),
            seed: args.seed,
            run_tag: tag,
            mix,
            rate_per_sec: args.rate,
            intents: args.intents,
            concurrency: args.concurrency,
            call_timeout: Duration::from_millis(args.naive_timeout_ms.max(1)),
            clock,
        };
        run_naive(&config, &faults_shown).await?
    } else {
        drive_and_report(&args, mix, tag, &faults_shown, clock).await?
    };
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        print!("{}", report.to_table());
    }
    Ok(if report.duplicate_effects > 0 { 1 } else { 0 })
}

async fn drive_and_report(
    args: &LoadArgs,
    mix: Mix,
    tag: String,
    faults: &str,
    clock: SharedClock,
) -> anyhow::Result<Report> {
    let coordinator = args
        .coordinator
        .clone()
        .context("--coordinator is required without --naive")?;
    let token_file = args
        .token_file
        .as_deref()
        .context("--token-file is required without --naive")?;
    let token = read_token(token_file)?;
    let report_token = match &args.report_token_file {
        Some(path) => read_token(path)?,
        None => token.clone(),
    };
    let approver_token = match (&args.approver_token_file, &args.report_token_file) {
        (Some(path), _) => read_token(path)?,
        (None, Some(_)) => report_token.clone(),
        (None, None) => anyhow::bail!(
            "an intent is approved by a principal other than the agent that created it: give \
             --approver-token-file (an approver, supervisor or admin token), or an admin \
             --report-token-file, besides the agents' --token-file"
        ),
    };
    let config = DriverConfig {
        coordinator: coordinator.clone(),
        token,
        approver_token: Some(approver_token),
        seed: args.seed,
        run_tag: tag,
        mix,
        rate_per_sec: args.rate,
        intents: Some(args.intents),
        concurrency: args.concurrency,
        batch: args.batch,
        request_timeout: Duration::from_secs(10),
        patience: Duration::from_secs(60),
        keep_intents: true,
        clock: clock.clone(),
    };
    let log = drive(&config, std::future::pending::<()>()).await?;
    for error in &log.errors {
        tracing::warn!(%error, "workload error");
    }
    let source = ReportSource::new(coordinator, &report_token, args.sandbox.clone(), clock)?;
    let settled = settle(
        &source,
        window_of(&log),
        Duration::from_secs(args.settle_timeout_secs),
    )
    .await?;
    Ok(coordinator_report(&source, &log, args.seed, faults, settled).await?)
}

fn read_token(path: &Path) -> anyhow::Result<String> {
    let raw = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the token file {}", path.display()))?;
    let token = raw.trim();
    anyhow::ensure!(
        !token.is_empty(),
        "the token file {} is empty",
        path.display()
    );
    Ok(token.to_string())
}

fn client() -> anyhow::Result<reqwest::Client> {
    crate::tls::client(None)?
        .timeout(Duration::from_secs(10))
        .no_proxy()
        .build()
        .context("cannot build the HTTP client")
}

/// `POST {sandbox}/_sandbox/faults`.
pub async fn set_faults(sandbox: &Url, spec: &FaultSpec) -> anyhow::Result<()> {
    let url = sandbox
        .join("/_sandbox/faults")
        .context("the sandbox URL cannot take a path")?;
    let response = client()?
        .post(url)
        .body(spec.to_string())
        .send()
        .await
        .with_context(|| format!("cannot reach the sandbox at {sandbox}"))?;
    let status = response.status();
    anyhow::ensure!(
        status.is_success(),
        "the sandbox refused the faults ({status}): {}",
        response.text().await.unwrap_or_default()
    );
    Ok(())
}

async fn current_faults(sandbox: &Url) -> Option<String> {
    let url = sandbox.join("/_sandbox/faults").ok()?;
    let body: serde_json::Value = client()
        .ok()?
        .get(url)
        .send()
        .await
        .ok()?
        .json()
        .await
        .ok()?;
    body.get("faults")
        .and_then(|f| f.as_str())
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::LoadArgs;
    use clap::Parser;

    #[derive(Parser)]
    struct Wrapper {
        #[command(flatten)]
        args: LoadArgs,
    }

    #[test]
    fn the_designs_flags_parse() {
        let Wrapper { args } = Wrapper::try_parse_from([
            "load",
            "--coordinator",
            "http://127.0.0.1:7410",
            "--token-file",
            "t",
            "--sandbox",
            "http://127.0.0.1:7420",
            "--intents",
            "50",
            "--faults",
            "drop_after_commit=0.2,delay_ms=3000@0.1",
            "--seed",
            "9",
            "--json",
            "--rate",
            "5",
            "--concurrency",
            "8",
        ])
        .expect("parses");
        assert_eq!(args.intents, 50);
        assert_eq!(args.seed, 9);
        assert!(args.json && !args.naive);
        assert_eq!(
            args.faults.map(|f| f.to_string()).as_deref(),
            Some("drop_after_commit=0.2,delay_ms=3000@0.1")
        );
    }

    #[test]
    fn the_naive_baseline_needs_no_coordinator() {
        assert!(Wrapper::try_parse_from(["load", "--naive", "--intents", "5"]).is_ok());
        assert!(Wrapper::try_parse_from(["load", "--intents", "5"]).is_err());
    }

    #[test]
    fn a_bad_fault_spec_is_a_flag_error() {
        assert!(Wrapper::try_parse_from(["load", "--naive", "--faults", "overload=7"]).is_err());
    }
}
