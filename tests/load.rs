//! The workload and its report over real HTTP: a bounded run through a coordinator under
//! faults reports zero duplicate effects with every field the design lists; the naive
//! baseline under the same faults shows the duplicates the coordinator prevents; the steady
//! workload of the embedded default runs until it is told to stop.

use std::time::{Duration, Instant};

use intentdesk::sandbox::SandboxState;
use intentdesk::workload::naive::{NaiveConfig, run_naive};
use intentdesk::workload::report::{Report, ReportSource, coordinator_report, settle, window_of};
use intentdesk::workload::{DriveLog, DriverConfig, Mix, drive};

mod common;
use common::deploy::{self, Setup, Token};
use tokio::sync::oneshot;

const ADMIN: &str = "load-admin-token";
const APPROVER: &str = "load-approver-token";
/// Guards against a hang; never a stand-in for synchronisation.
const PATIENCE: Duration = Duration::from_secs(30);

struct Rig {
    base: String,
    sandbox_url: String,
    sandbox: SandboxState,
    _coordinator: deploy::Coordinator,
    _sandbox: deploy::Sandbox,
    _dir: tempfile::TempDir,
}

async fn start(faults: &str) -> Rig {
    let downstream = deploy::sandbox(faults, None, Some(5)).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let mut setup = Setup::new(
        dir.path(),
        &downstream.url,
        vec![
            Token::all_tenants("admin", ADMIN),
            Token::all_tenants("approver", APPROVER),
        ],
    );
    setup.timeout_ms = 400;
    let coordinator = deploy::Coordinator::start(&setup).await;
    Rig {
        base: coordinator.base.clone(),
        sandbox_url: downstream.url.clone(),
        sandbox: downstream.state.clone(),
        _coordinator: coordinator,
        _sandbox: downstream,
        _dir: dir,
    }
}

/// A bounded run of 150 plans (seed 21) through the rig's coordinator, `batch` intents a
/// create request, and its report once settled.
async fn run_and_report(rig: &Rig, faults: &str, batch: usize) -> (DriveLog, Report) {
    let config = DriverConfig {
        coordinator: rig.base.parse().expect("URL"),
        token: ADMIN.to_string(),
        approver_token: Some(APPROVER.to_string()),
        seed: 21,
        run_tag: format!("report-{batch}"),
        mix: fast_mix(),
        rate_per_sec: 100.0,
        intents: Some(150),
        concurrency: 32.max(batch),
        batch,
        request_timeout: Duration::from_secs(10),
        patience: PATIENCE,
        keep_intents: true,
        clock: intentdesk::clock::system_clock(),
    };
    let log = drive(&config, std::future::pending())
        .await
        .expect("the workload runs");
    assert_eq!(log.totals.errors, 0, "{:?}", log.errors);
    let source = ReportSource::new(
        rig.base.parse().expect("URL"),
        ADMIN,
        rig.sandbox_url.parse().expect("URL"),
        intentdesk::clock::system_clock(),
    )
    .expect("source");
    let settled = settle(&source, window_of(&log), Duration::from_secs(60))
        .await
        .expect("settles");
    let report = coordinator_report(&source, &log, 21, faults, settled)
        .await
        .expect("report");
    (log, report)
}

fn fast_mix() -> Mix {
    Mix {
        latency_scale: 0.05,
        ..Mix::default()
    }
}

#[tokio::test]
async fn a_run_under_faults_reports_every_field_and_no_duplicate_effect() {
    let faults = "drop_after_commit=0.2,delay_ms=1000@0.1,overload=0.1";
    let rig = start(faults).await;
    let (log, report) = run_and_report(&rig, faults, 1).await;
    let t = &log.totals;
    assert_eq!(
        t.create_requests,
        150 + t.replays_sent + t.changed_reuse_refused + t.changed_reuse_accepted + t.repeats,
        "one intent a request: {t:?}"
    );

    assert!(report.settled, "{}", report.to_table());
    assert_eq!(report.duplicate_effects, 0, "{}", report.to_table());
    assert_eq!(rig.sandbox.effects_summary().duplicate_effects, 0);
    assert_eq!(report.intents, log.totals.intents_created);
    assert_eq!(report.budget_exceeded, 0);
    assert!(
        report.amplification.mean >= 1.0 && report.amplification.max >= report.amplification.p99
    );
    assert_eq!(report.states.values().sum::<u64>(), report.intents);
    assert!(report.goodput_per_min > 0.0);
    let json = serde_json::to_value(&report).expect("serialises");
    for field in [
        "intents",
        "attempts",
        "duplicate_effects",
        "late_results",
        "goodput_per_min",
        "budget_exceeded",
    ] {
        assert!(json[field].is_number(), "{field} in {json}");
    }
    assert!(
        json["amplification"]["p99"].is_number()
            && json["indeterminate"]["oldest_age_secs"].is_number()
    );
    assert!(json["states"].is_object());
}

/// The same run with agents that create the intents of eight plans a request, and of fifty
/// (the most): each plan's intent and its replays travel in batches (a key sent again in the
/// same batch), and every promise of
/// one intent a request holds: no duplicate effect, every replay answered with the intent
/// its key names, every changed reuse refused, every intent settled.
#[tokio::test]
async fn a_run_in_batches_keeps_every_promise_of_one_intent_a_request() {
    for (batch, requests) in [(8, 19), (50, 3)] {
        batched_run(batch, requests).await;
    }
}

/// 150 plans in batches of `batch`: `requests` batch requests.
async fn batched_run(batch: usize, requests: u64) {
    let faults = "drop_after_commit=0.2,delay_ms=1000@0.1,overload=0.1";
    let rig = start(faults).await;
    let (log, report) = run_and_report(&rig, faults, batch).await;
    let totals = &log.totals;
    assert!(report.settled, "{}", report.to_table());
    assert_eq!(report.duplicate_effects, 0, "{}", report.to_table());
    assert_eq!(rig.sandbox.effects_summary().duplicate_effects, 0);
    assert_eq!(report.intents, totals.intents_created);
    assert_eq!(report.states.values().sum::<u64>(), report.intents);
    assert!(
        totals.replays_sent > 0 && totals.changed_reuse_refused > 0,
        "the mix sent keys again: {totals:?}"
    );
    assert_eq!(totals.replays_other_intent, 0, "{totals:?}");
    assert_eq!(totals.replays_same_intent, totals.replays_sent);
    assert_eq!(totals.changed_reuse_accepted, 0, "{totals:?}");
    // One request a batch, and one more for each deliberate repeat, which is sent alone.
    assert_eq!(
        totals.create_requests,
        requests + totals.repeats,
        "{totals:?}"
    );
}

/// A batch the coordinator would refuse, or one larger than the plans allowed in progress,
/// is refused before anything is sent, naming the batch.
#[tokio::test]
async fn a_batch_size_the_run_cannot_send_is_refused_before_it_starts() {
    for batch in [0, 33, 51] {
        let mut config = DriverConfig::steady(
            "http://127.0.0.1:9".parse().expect("URL"),
            ADMIN.to_string(),
            1,
            intentdesk::clock::system_clock(),
        );
        config.batch = batch;
        let refused = drive(&config, std::future::pending())
            .await
            .expect_err("refused");
        assert!(
            refused
                .to_string()
                .contains("the batch must be from 1 to 50 plans"),
            "{batch}: {refused}"
        );
    }
}

#[tokio::test]
async fn the_naive_baseline_duplicates_what_the_coordinator_would_not() {
    let rig = start("drop_after_commit=0.3").await;
    let config = NaiveConfig {
        sandbox: rig.sandbox_url.parse().expect("URL"),
        seed: 21,
        run_tag: "naive".to_string(),
        mix: fast_mix(),
        rate_per_sec: 200.0,
        intents: 60,
        concurrency: 32,
        call_timeout: Duration::from_millis(400),
        clock: intentdesk::clock::system_clock(),
    };
    let report = run_naive(&config, "drop_after_commit=0.3")
        .await
        .expect("the baseline runs");
    let naive = report.naive.clone().expect("naive figures");
    assert!(report.duplicate_effects > 0, "{}", report.to_table());
    assert!(
        naive.downstream_calls > naive.applied,
        "{}",
        report.to_table()
    );
    assert_eq!(report.intents, report.states.values().sum::<u64>());
    assert!(report.attempts >= report.intents);
}

#[tokio::test]
async fn the_steady_workload_runs_until_shutdown() {
    let rig = start("none").await;
    let mut config = DriverConfig::steady(
        rig.base.parse().expect("URL"),
        ADMIN.to_string(),
        3,
        intentdesk::clock::system_clock(),
    );
    config.mix.latency_scale = 0.05;
    let (stop, stopped) = oneshot::channel::<()>();
    let driver = tokio::spawn(async move {
        drive(&config, async {
            let _ = stopped.await;
        })
        .await
    });
    let http = intentdesk::tls::client(None)
        .expect("a TLS client")
        .build()
        .expect("an HTTP client");
    let deadline = Instant::now() + PATIENCE;
    loop {
        let page: serde_json::Value = http
            .get(format!("{}/v1/intents?limit=1", rig.base))
            .bearer_auth(ADMIN)
            .send()
            .await
            .expect("the coordinator answers")
            .json()
            .await
            .expect("JSON");
        if page["total"].as_u64().unwrap_or(0) >= 3 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the steady workload created nothing"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    stop.send(()).expect("the driver listens");
    let log = tokio::time::timeout(PATIENCE, driver)
        .await
        .expect("it stops")
        .expect("no panic")
        .expect("runs");
    // Three intents take at least two plans (a plan makes two when repeated on purpose).
    assert!(log.totals.planned >= 2, "{:?}", log.totals);
    assert!(
        log.intents.is_empty(),
        "the steady workload keeps only totals"
    );
}
