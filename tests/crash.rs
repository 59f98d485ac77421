//! The crash test: the real `intentdesk coordinator` binary runs as a child process under a
//! workload with sandbox faults on, and is killed with SIGKILL at seeded random moments,
//! then restarted on the same database, until the workload is done. Afterwards nothing may
//! be duplicated (the sandbox's ground truth), nothing lost (every intent an agent was given
//! still exists), and every intent must stand in a state its evidence supports.
//!
//! On SQLite one coordinator owns the file; on PostgreSQL three coordinators share one
//! database behind a round-robin load balancer (agents and the sandbox's receipts reach
//! whichever answers), and a seeded one of them is killed each time: another takes over
//! its claims once their leases run out.
//!
//! Several seeds, each bounded in time; waits poll for a condition, never sleep to
//! synchronise (the sleeps before each kill choose *when* to inject the fault).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use intentdesk::domain::{Jitter, SplitMix64};
use intentdesk::sandbox::{ExternalRef, SandboxState, WebhookTarget};
use intentdesk::store::Location;
use intentdesk::workload::report::{ReportSource, coordinator_report, settle, window_of};
use intentdesk::workload::{DriverConfig, Mix, drive};
use serde_json::Value;
use tokio::net::{TcpListener, TcpStream};
use tokio::process::{Child, Command};

mod common;
use common::backends::fresh_postgres;
use common::deploy::{self, Setup, Token};

const ADMIN: &str = "crash-admin-token";
const AGENT: &str = "crash-agent-token";
const ERP: &str = "crash-erp-connector-token";
const FAULTS: &str =
    "drop_after_commit=0.05,delay_ms=1500@0.03,overload=0.05,retry_after_secs=1,redeliver=2";
/// Guards against a hang; never a stand-in for synchronisation.
const PATIENCE: Duration = Duration::from_secs(30);

/// The coordinator child process and how to start it again.
struct Coordinator {
    config: PathBuf,
    log: PathBuf,
    base: String,
    child: Option<Child>,
    restarts: u32,
}

impl Coordinator {
    async fn start(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .expect("log file");
        let child = Command::new(env!("CARGO_BIN_EXE_intentdesk"))
            .args(["coordinator", "--config"])
            .arg(&self.config)
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .kill_on_drop(true)
            .spawn()
            .expect("the coordinator starts");
        self.child = Some(child);
        let http = intentdesk::tls::client(None)
            .expect("a TLS client")
            .no_proxy()
            .timeout(Duration::from_secs(2))
            .build()
            .expect("client");
        let deadline = Instant::now() + PATIENCE;
        loop {
            let healthy = http
                .get(format!("{}/healthz", self.base))
                .send()
                .await
                .is_ok_and(|r| r.status().is_success());
            if healthy {
                return;
            }
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                panic!("the coordinator exited with {status}: {}", tail(&self.log));
            }
            assert!(
                Instant::now() < deadline,
                "the coordinator never became healthy: {}",
                tail(&self.log)
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// SIGKILL: no shutdown, no flush, whatever was in flight is cut off.
    async fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.start_kill().expect("SIGKILL is delivered");
            child.wait().await.expect("the coordinator is reaped");
        }
    }
}

/// The record made under `key` holds `intent`'s own arguments, in canonical form: its id.
fn made_as_ordered(
    sandbox: &SandboxState,
    key: &ExternalRef,
    intent: &Value,
    what: &str,
) -> String {
    let record = intentdesk::sandbox::Resource::ALL
        .into_iter()
        .find_map(|r| sandbox.lookup(r, key))
        .expect("the record exists");
    let ordered: Value = intent["canonical_args"]
        .as_str()
        .and_then(|args| serde_json::from_str(args).ok())
        .expect("the intent's canonical arguments");
    assert_eq!(
        Value::Object(record.body),
        ordered,
        "the record holds the intent's own arguments: {what}"
    );
    record.id.as_str().to_string()
}

fn tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(30)..].join("\n")
}

/// A port that was free a moment ago, for a coordinator that must come back on it.
async fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind port 0");
    listener.local_addr().expect("addr").port()
}

/// A round-robin TCP load balancer in front of the coordinators on `ports`, as an operator
/// runs one: each connection goes to the next coordinator that accepts it.
async fn balance(listener: TcpListener, ports: Vec<u16>) {
    let next = Arc::new(AtomicUsize::new(0));
    while let Ok((mut inbound, _)) = listener.accept().await {
        let first = next.fetch_add(1, Ordering::Relaxed);
        let ports = ports.clone();
        tokio::spawn(async move {
            for i in 0..ports.len() {
                let port = ports[(first + i) % ports.len()];
                if let Ok(mut outbound) = TcpStream::connect(("127.0.0.1", port)).await {
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    return;
                }
            }
        });
    }
}

fn write_config(
    dir: &Path,
    name: &str,
    port: u16,
    database: &Location,
    sandbox_url: &str,
) -> PathBuf {
    let tokens = vec![
        Token::all_tenants("admin", ADMIN),
        Token::all_tenants("agent", AGENT),
        Token::erp_connector(ERP),
    ];
    let mut setup = Setup::new(dir, sandbox_url, tokens);
    setup.database = database.clone();
    setup.listen = format!("127.0.0.1:{port}");
    // Every answered write is synced before it is answered; SIGKILL must lose none of them.
    setup.top_level = "durability = \"power_loss\"\n".into();
    setup.timeout_ms = 500;
    setup.dispatch_lease_ms = Some(2000);
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, setup.toml()).expect("write the config");
    path
}

/// Drive `intents` through `fleet` coordinators on `database` (behind a load balancer when
/// more than one), killing a seeded one of them `kills` times, then check the evidence.
async fn crash_run(seed: u64, intents: u64, kills: u32, fleet: usize, database: Option<Location>) {
    let dir = tempfile::tempdir().expect("temp dir");
    let database =
        database.unwrap_or_else(|| Location::Sqlite(dir.path().join("coordinator.sqlite")));
    let mut ports = Vec::new();
    for _ in 0..fleet {
        ports.push(free_port().await);
    }
    let base = if fleet == 1 {
        format!("http://127.0.0.1:{}", ports[0])
    } else {
        let balancer = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let base = format!("http://{}", balancer.local_addr().expect("addr"));
        tokio::spawn(balance(balancer, ports.clone()));
        base
    };

    let webhook = WebhookTarget {
        url: format!("{base}/v1/receipts/erp").parse().expect("URL"),
        token: Some(ERP.into()),
    };
    let downstream = deploy::sandbox(FAULTS, Some(webhook), Some(seed)).await;
    let sandbox_url = downstream.url.clone();
    let sandbox = downstream.state.clone();

    let mut coordinators = Vec::new();
    for (n, port) in ports.iter().enumerate() {
        let name = format!("coordinator-{n}");
        let mut coordinator = Coordinator {
            config: write_config(dir.path(), &name, *port, &database, &sandbox_url),
            log: dir.path().join(format!("{name}.log")),
            base: format!("http://127.0.0.1:{port}"),
            child: None,
            restarts: 0,
        };
        coordinator.start().await;
        coordinators.push(coordinator);
    }

    let rate = 200.0;
    let config = DriverConfig {
        coordinator: base.parse().expect("URL"),
        token: AGENT.to_string(),
        approver_token: Some(ADMIN.to_string()),
        seed,
        run_tag: format!("crash{seed}"),
        mix: Mix {
            latency_scale: 0.05,
            ..Mix::default()
        },
        rate_per_sec: rate,
        intents: Some(intents),
        concurrency: 64,
        batch: 1,
        request_timeout: Duration::from_secs(5),
        patience: PATIENCE,
        keep_intents: true,
        clock: intentdesk::clock::system_clock(),
    };
    let driver = tokio::spawn(async move { drive(&config, std::future::pending()).await });

    // Kill at seeded moments spread over the run's expected length.
    let mut dice = SplitMix64::new(seed);
    let span_ms = (intents as f64 / rate * 1000.0) as u64;
    let mut at: Vec<u64> = (0..kills)
        .map(|_| (dice.unit() * span_ms as f64) as u64)
        .collect();
    at.sort_unstable();
    let started = Instant::now();
    for kill_at in at {
        let due = Duration::from_millis(kill_at);
        if let Some(wait) = due.checked_sub(started.elapsed()) {
            tokio::time::sleep(wait).await;
        }
        let victim = &mut coordinators[(dice.unit() * fleet as f64) as usize % fleet];
        victim.kill().await;
        victim.restarts += 1;
        victim.start().await;
    }
    let log = driver
        .await
        .expect("the driver did not panic")
        .expect("the workload runs");
    assert_eq!(
        log.totals.errors, 0,
        "every agent call got through: {:?}",
        log.errors
    );
    let restarts: u32 = coordinators.iter().map(|c| c.restarts).sum();
    assert_eq!(restarts, kills);
    let logs = || {
        coordinators
            .iter()
            .map(|c| format!("{}:\n{}", c.log.display(), tail(&c.log)))
            .collect::<Vec<_>>()
            .join("\n")
    };

    let source = ReportSource::new(
        base.parse().expect("URL"),
        ADMIN,
        sandbox_url.parse().expect("URL"),
        intentdesk::clock::system_clock(),
    )
    .expect("source");
    let settled = settle(&source, window_of(&log), Duration::from_secs(90))
        .await
        .expect("settling answers");
    let report = coordinator_report(&source, &log, seed, FAULTS, settled)
        .await
        .expect("the report");
    eprintln!(
        "seed {seed}, {fleet} coordinator(s), {restarts} restarts:\n{}",
        report.to_table()
    );
    let context = format!("seed {seed}: {}\n{}", report.to_table(), logs());
    assert!(settled, "the run settled: {context}");

    // Zero duplicate effects, over every key the sandbox ever saw.
    assert_eq!(sandbox.effects_summary().duplicate_effects, 0, "{context}");
    assert_eq!(report.duplicate_effects, 0, "{context}");
    // Zero lost intents: every intent an agent was given exists.
    assert_eq!(report.intents, log.intents.len() as u64, "{context}");
    assert!(log.totals.intents_created >= intents, "{context}");
    assert_eq!(report.budget_exceeded, 0, "{context}");
    assert_eq!(
        report.states.get("executing"),
        None,
        "nothing left executing: {context}"
    );

    // Every intent in a state its evidence supports.
    let http = intentdesk::tls::client(None)
        .expect("a TLS client")
        .no_proxy()
        .build()
        .expect("client");
    let ids: HashSet<&str> = log.intents.iter().map(|d| d.id.as_str()).collect();
    assert_eq!(ids.len(), log.intents.len(), "one id per intent: {context}");
    for driven in &log.intents {
        let detail: Value = http
            .get(format!("{base}/v1/intents/{}", driven.id))
            .bearer_auth(ADMIN)
            .send()
            .await
            .expect("the coordinator answers")
            .json()
            .await
            .expect("JSON");
        let intent = &detail["intent"];
        let state = intent["state"].as_str().unwrap_or_default();
        let receipt = intent["downstream_ref"].as_str();
        let what = format!("{} ({}) is {state}: {context}", driven.id, driven.tier);
        if state == "committed" {
            assert!(
                receipt.is_some() && intent["receipt_id"].is_string(),
                "committed needs a receipt: {what}"
            );
        }
        if driven.tier.is_mutating() {
            let key = driven.action_key.as_str().parse().expect("key");
            let effects = sandbox.effects_for(&key);
            match state {
                "committed" => {
                    assert_eq!(effects, 1, "{what}");
                    let made = made_as_ordered(&sandbox, &key, intent, &what);
                    assert_eq!(
                        Some(made.as_str()),
                        receipt,
                        "the receipt names the record: {what}"
                    );
                }
                "indeterminate" => {
                    assert!(effects <= 1, "{what}");
                    if effects == 1 {
                        made_as_ordered(&sandbox, &key, intent, &what);
                    }
                }
                _ => assert_eq!(effects, 0, "nothing applied for a {state} intent: {what}"),
            }
        }
    }
    for coordinator in &mut coordinators {
        coordinator.kill().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_mid_load_seed_1() {
    crash_run(1, 2_500, 4, 1, None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_mid_load_seed_2() {
    crash_run(2, 500, 3, 1, None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_mid_load_seed_3() {
    crash_run(3, 500, 4, 1, None).await;
}

/// Three coordinators on one PostgreSQL database, a seeded one killed six times.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_coordinators_on_postgres_killed_mid_load() {
    let Some(url) = fresh_postgres() else { return };
    crash_run(4, 3_000, 6, 3, Some(Location::Postgres(url))).await;
}

/// SIGTERM, what a service manager or container runtime sends to stop a service, drains as
/// Ctrl-C does: the coordinator says it is stopping and exits 0. Without its own handler the
/// process died of the signal, cutting off whatever was in flight.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_stops_the_coordinator_as_ctrl_c_does() {
    let dir = tempfile::tempdir().expect("temp dir");
    let port = free_port().await;
    let database = Location::Sqlite(dir.path().join("coordinator.sqlite"));
    let downstream = deploy::sandbox(FAULTS, None, Some(1)).await;
    let mut coordinator = Coordinator {
        config: write_config(dir.path(), "term", port, &database, &downstream.url),
        log: dir.path().join("term.log"),
        base: format!("http://127.0.0.1:{port}"),
        child: None,
        restarts: 0,
    };
    coordinator.start().await;
    let mut child = coordinator.child.take().expect("running");
    common::terminate(&child).await;
    let status = tokio::time::timeout(PATIENCE, child.wait())
        .await
        .expect("the coordinator stops")
        .expect("reaped");
    assert!(
        status.success(),
        "the coordinator exited with {status}: {}",
        tail(&coordinator.log)
    );
}
