//! The dashboard in the real console against a real coordinator: slicing by provider gives
//! one series per provider whose totals agree with the coordinator's summary, clicking the
//! largest bar filters the intents table to the intents behind it, and pictures of the
//! dashboard on a fixed, generated data set (English, and Persian sliced by provider).
//!
//! The console runs with times in UTC (`--utc`), so the pictures do not depend on the zone
//! of the machine that takes them.
#![cfg(feature = "console")]

use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use egui::accesskit::Role;
use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;
use intentdesk::console::app::Tab;
use intentdesk::console::commands::ConsoleCommand;
use intentdesk::console::{ConsoleApp, ConsoleOptions};
use intentdesk::coordinator::{Config, run, token_sha256};
use intentdesk::store::Store;
use intentdesk::store::bulk::BulkSpec;
use intentdesk::store::metric_series::{ChartMetric, GroupBy};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

const ADMIN: &str = "dashboard-admin-token";
/// Guards against a hang; never a stand-in for synchronisation.
const PATIENCE: Duration = Duration::from_secs(60);
/// The generated data set ends here, and the console's clock is fixed here.
const END_MS: u64 = 1_764_489_600_000;

struct Rig {
    runtime: tokio::runtime::Runtime,
    base: String,
    _dir: tempfile::TempDir,
    _stop: oneshot::Sender<()>,
}

impl Rig {
    /// A coordinator on `db` (prepared by `prepare`); its reconciler does nothing, so the
    /// data stays as written.
    fn start(prepare: impl FnOnce(&Path)) -> Rig {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let dir = tempfile::tempdir().expect("temp dir");
        let db = dir.path().join("c.sqlite");
        prepare(&db);
        let text = format!(
            r#"
listen = "127.0.0.1:0"
database = "{db}"
reconcile_interval_ms = 3600000
reconcile_batch = 0
[[tokens]]
name = "admin"
token_sha256 = "{admin}"
role = "admin"
tenants = ["*"]
"#,
            db = db.display(),
            admin = token_sha256(ADMIN),
        );
        let config = Config::parse(&text, "test").expect("config");
        let (addr, stop): (SocketAddr, _) = runtime.block_on(async {
            let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
            let addr = listener.local_addr().expect("addr");
            let (stop, stopped) = oneshot::channel::<()>();
            tokio::spawn(run(listener, config, async {
                let _ = stopped.await;
            }));
            (addr, stop)
        });
        Rig {
            runtime,
            base: format!("http://{addr}"),
            _dir: dir,
            _stop: stop,
        }
    }

    fn get(&self, path: &str, query: &[(&str, &str)]) -> Value {
        self.runtime.block_on(async {
            reqwest::Client::new()
                .get(format!("{}{path}", self.base))
                .bearer_auth(ADMIN)
                .query(query)
                .send()
                .await
                .expect("get")
                .json()
                .await
                .expect("json")
        })
    }

    /// An intent with inference attempts on `providers`, one after another.
    fn intent(&self, key: &str, tenant: &str, providers: &[&str]) {
        self.runtime.block_on(async {
            let http = reqwest::Client::new();
            let body = json!({
                "tenant": tenant, "actor": "agent", "purpose": "compare quotes", "operation": "quote.compare",
                "tool": "llm.compare", "consequence": "compute", "args": {"item": "paper", "qty": 10},
                "deadline_secs": 600, "max_attempts": 5, "release_id": "r1", "locale": "en-US", "connector": "erp"
            });
            let created: Value = http
                .post(format!("{}/v1/intents", self.base))
                .bearer_auth(ADMIN)
                .header("Idempotency-Key", key)
                .json(&body)
                .send()
                .await
                .expect("create")
                .json()
                .await
                .expect("json");
            let id = created["id"].as_str().expect("id").to_string();
            http.post(format!("{}/v1/intents/{id}/authorize", self.base))
                .bearer_auth(ADMIN)
                .json(&json!({"authorization_version": "v1", "approver": "ann"}))
                .send()
                .await
                .expect("authorize");
            for p in providers {
                let status = http
                    .post(format!("{}/v1/intents/{id}/attempts", self.base))
                    .bearer_auth(ADMIN)
                    .json(&json!({"kind": "inference", "provider": p}))
                    .send()
                    .await
                    .expect("attempt")
                    .status();
                assert!(status.is_success(), "attempt refused: {status}");
            }
        });
    }

    fn harness(&self, fixed_now_ms: Option<u64>, size: egui::Vec2) -> Harness<'static, ConsoleApp> {
        let options = ConsoleOptions {
            label: "test".into(),
            coordinator_url: self.base.clone(),
            token: ADMIN.into(),
            offline: false,
            open: None,
            cache_path: None,
            fixed_now_ms,
            utc: true,
        };
        let handle = self.runtime.handle().clone();
        let mut harness = Harness::builder()
            .with_size(size)
            .build_eframe(move |cc| ConsoleApp::new(&cc.egui_ctx, None, options, &handle));
        harness.run_steps(2);
        harness
    }
}

/// Step the app until `done` holds, or fail after [`PATIENCE`].
fn until(
    harness: &mut Harness<'static, ConsoleApp>,
    what: &str,
    done: impl Fn(&ConsoleApp) -> bool,
) {
    let started = Instant::now();
    while !done(harness.state()) {
        if started.elapsed() > PATIENCE {
            let app = harness.state();
            let d = &app.dashboard;
            panic!(
                "gave up waiting: {what}; dashboard error {:?}, charts {}, tab {:?}, filters {:?}, rows {}",
                d.error,
                d.charts.len(),
                app.state.tab,
                app.state.filters,
                app.table.rows.len()
            );
        }
        harness.step();
        std::thread::sleep(Duration::from_millis(5));
    }
    harness.run_steps(2);
}

/// Everything the dashboard asked for has arrived, sliced by `group_by`.
fn loaded(app: &ConsoleApp, group_by: GroupBy) -> bool {
    let d = &app.dashboard;
    !d.loading()
        && d.charts.len() == 12
        && d.charts.values().all(|c| c.group_by == group_by)
        && d.histogram.as_ref().is_some_and(|h| h.group_by == group_by)
        && d.overview.is_some()
}

/// Twelve intents over three providers (and tenants), a few retried on a second provider.
fn seeded() -> Rig {
    let rig = Rig::start(|_| {});
    let plan: [(&str, &[&str]); 12] = [
        ("acme", &["openai"]),
        ("acme", &["openai", "anthropic"]),
        ("acme", &["openai"]),
        ("acme", &["openai", "openai", "mistral"]),
        ("globex", &["anthropic"]),
        ("globex", &["anthropic"]),
        ("globex", &["openai"]),
        ("globex", &["mistral", "anthropic"]),
        ("initech", &["openai"]),
        ("initech", &["openai"]),
        ("initech", &["mistral"]),
        ("initech", &["openai", "openai"]),
    ];
    for (n, (tenant, providers)) in plan.iter().enumerate() {
        rig.intent(&format!("k{n}"), tenant, providers);
    }
    rig
}

fn show_dashboard_by_provider(harness: &mut Harness<'static, ConsoleApp>) {
    harness
        .get_by_role_and_label(Role::Button, "Dashboard")
        .click();
    harness.run_steps(2);
    assert_eq!(harness.state().state.tab, Tab::Dashboard);
    harness.state_mut().state.dashboard.group_by = GroupBy::Provider;
    until(harness, "the dashboard sliced by provider", |app| {
        loaded(app, GroupBy::Provider)
            && app.dashboard.charts[&ChartMetric::Attempts]
                .series
                .iter()
                .map(|s| s.total)
                .sum::<f64>()
                == 17.0
    });
}

#[test]
fn slicing_by_provider_shows_one_series_per_provider_with_the_summary_totals() {
    let rig = seeded();
    let mut harness = rig.harness(None, egui::vec2(1400.0, 1600.0));
    show_dashboard_by_provider(&mut harness);
    let app = harness.state();

    let attempts = &app.dashboard.charts[&ChartMetric::Attempts];
    let groups: Vec<&str> = attempts.series.iter().map(|s| s.group.as_str()).collect();
    assert_eq!(groups, ["anthropic", "mistral", "openai"]);
    let summary = rig.get("/v1/metrics/summary", &[]);
    let total: f64 = attempts.series.iter().map(|s| s.total).sum();
    assert_eq!(
        total as u64,
        summary["attempts"].as_u64().expect("attempts")
    );
    let per_provider: Vec<u64> = attempts.series.iter().map(|s| s.total as u64).collect();
    assert_eq!(per_provider, [4, 3, 10], "attempts made by each provider");

    // Intent-level slices: a provider's intents are the intents the provider filter selects.
    let histogram = app.dashboard.histogram.as_ref().expect("histogram");
    for group in &histogram.groups {
        let summary = rig.get("/v1/metrics/summary", &[("provider", group.group.as_str())]);
        assert_eq!(
            Some(group.intents),
            summary["intents"].as_u64(),
            "{}",
            group.group
        );
    }
    let overview = app.dashboard.overview.as_ref().expect("overview");
    assert_eq!(
        overview.intents,
        summary["intents"].as_u64().expect("intents")
    );
    assert_eq!(
        overview.attempts,
        summary["attempts"].as_u64().expect("attempts")
    );
    assert_eq!(
        overview.amplification_p99,
        summary["amplification"]["p99"].as_u64().expect("p99")
    );

    // Live: new attempts reach the charts without the operator asking.
    rig.intent("k-live", "acme", &["mistral", "mistral"]);
    until(&mut harness, "the new attempts on the chart", |app| {
        let chart = &app.dashboard.charts[&ChartMetric::Attempts];
        chart.series.iter().map(|s| s.total).sum::<f64>() == 19.0
            && chart
                .series
                .iter()
                .any(|s| s.group == "mistral" && s.total == 5.0)
    });
}

#[test]
fn clicking_an_intent_on_the_ageing_board_opens_it() {
    let (_rig, mut harness) = snapshot_harness();
    let oldest = harness.state().dashboard.board[0].clone();
    assert_eq!(oldest.state.wire(), "indeterminate");
    harness.get_by_label(oldest.short_id()).click();
    until(
        &mut harness,
        "the oldest indeterminate intent opens",
        |app| {
            app.open
                .as_ref()
                .is_some_and(|o| o.id == oldest.id && o.detail.is_some())
        },
    );
}

#[test]
fn clicking_the_largest_bar_filters_the_table() {
    let rig = seeded();
    let mut harness = rig.harness(None, egui::vec2(1400.0, 1600.0));
    show_dashboard_by_provider(&mut harness);

    // The largest segment of the stacked attempts bars, and where it is on screen.
    let (group, start, pos) = {
        let app = harness.state();
        let chart = &app.dashboard.charts[&ChartMetric::Attempts];
        let mut best: Option<(f64, String, f64, f64)> = None;
        for (i, s) in chart.series.iter().enumerate() {
            for p in &s.points {
                let below: f64 = chart.series[..i]
                    .iter()
                    .filter_map(|o| o.points.iter().find(|q| q[0] == p[0]))
                    .map(|q| q[1])
                    .sum();
                if best.as_ref().is_none_or(|b| p[1] > b.0) {
                    best = Some((p[1], s.group.clone(), p[0], below + p[1] / 2.0));
                }
            }
        }
        let (_, group, start, y) = best.expect("a bar");
        let transform = app.dashboard.transforms["attempts"];
        let x = start + chart.bucket_ms as f64 / 2.0;
        let pos = transform.position_from_point(&egui_plot::PlotPoint::new(x, y));
        (group, start as u64, pos)
    };
    harness.hover_at(pos);
    harness.run_steps(1);

    for pressed in [true, false] {
        harness.event(egui::Event::PointerButton {
            pos,
            button: egui::PointerButton::Primary,
            pressed,
            modifiers: egui::Modifiers::NONE,
        });
        harness.run_steps(1);
    }
    until(
        &mut harness,
        "the table shows the intents behind the bar",
        |app| {
            app.state.tab == Tab::Intents
                && !app.table.loading
                && app.table.error.is_none()
                && !app.table.rows.is_empty()
        },
    );
    let app = harness.state();
    let f = &app.state.filters;
    let bucket_ms = app.dashboard.charts[&ChartMetric::Attempts].bucket_ms;
    assert_eq!(f.providers, std::slice::from_ref(&group));
    assert_eq!(
        (f.since_ms, f.until_ms),
        (Some(start), Some(start + bucket_ms))
    );
    for row in &app.table.rows {
        assert!(
            row.providers.contains(&group),
            "{} used {:?}",
            row.id,
            row.providers
        );
        assert!(row.created_at_ms >= start && row.created_at_ms < start + bucket_ms);
    }
    let (since, until) = (start.to_string(), (start + bucket_ms).to_string());
    let listed = rig.get(
        "/v1/intents",
        &[("provider", &group), ("since", &since), ("until", &until)],
    );
    assert_eq!(
        app.table.rows.len() as u64,
        listed["total"].as_u64().expect("total")
    );
}

/// 3,000 intents over the six hours before [`END_MS`], plus spans of indeterminacy that
/// ended, duplicate effects and diverging proposals written beside them.
fn generated(db: &Path) {
    let mut store = Store::open(db).expect("store");
    store
        .generate_bulk(&BulkSpec {
            intents: 3_000,
            mean_attempts: 2.5,
            span_ms: 6 * 3_600_000,
            end_ms: END_MS,
            seed: 11,
        })
        .expect("generate");
    store
        .connection()
        .execute_batch(
            "INSERT INTO transitions (intent_seq, from_state, to_state, event, at_ms)
               SELECT seq, 'executing', 'indeterminate', 'outcome_unknown', created_at_ms + 1000 FROM intents
               WHERE state = 'committed' AND tier IN ('write', 'financial') AND seq % 6 = 0;
             INSERT INTO transitions (intent_seq, from_state, to_state, event, at_ms)
               SELECT seq, 'indeterminate', 'committed', 'receipt_found', created_at_ms + (seq % 45) * 60000 FROM intents
               WHERE state = 'committed' AND tier IN ('write', 'financial') AND seq % 6 = 0;
             INSERT INTO receipts (id, intent_seq, action_key, downstream_id, source, authoritative, received_at_ms)
               SELECT 'rct_dup' || seq, seq, action_key, 'dup-' || seq, 'webhook', 0, committed_at_ms + 30000 FROM intents
               WHERE state = 'committed' AND seq % 41 = 0;
             UPDATE attempts SET proposal_hash = CASE WHEN intent_seq % 3 = 0 THEN 'h' || (seq % 2) ELSE 'h' END
               WHERE intent_seq IN (SELECT seq FROM intents WHERE operation = 'quote.compare' AND attempts >= 2);",
        )
        .expect("extras");
}

fn snapshot_harness() -> (Rig, Harness<'static, ConsoleApp>) {
    let rig = Rig::start(generated);
    let mut harness = rig.harness(Some(END_MS), egui::vec2(1400.0, 1500.0));
    harness.state_mut().queue(ConsoleCommand::ShowDashboard);
    harness.run_steps(2);
    until(&mut harness, "the dashboard", |app| {
        loaded(app, GroupBy::None) && !app.dashboard.board.is_empty()
    });
    (rig, harness)
}

/// The pictures are of the dashboard: the bars above it belong to other views and are
/// masked, so changes there do not move these pictures.
fn snapshot_dashboard(harness: &mut Harness<'static, ConsoleApp>, name: &str) {
    harness.run_steps(4);
    harness.mask(egui::Rect::from_min_max(
        egui::pos2(0.0, 0.0),
        egui::pos2(1400.0, 54.0),
    ));
    harness.snapshot(name);
}

#[test]
fn the_dashboard_in_english() {
    let (_rig, mut harness) = snapshot_harness();
    // The generated data crosses both default thresholds: the badge is lit.
    assert!(
        harness
            .query_by_label_contains("amplification p99 8 > 3")
            .is_some()
    );
    snapshot_dashboard(&mut harness, "dashboard_en");
}

#[test]
fn the_dashboard_in_persian_sliced_by_provider() {
    let (_rig, mut harness) = snapshot_harness();
    harness.state_mut().state.dashboard.group_by = GroupBy::Provider;
    harness.state_mut().queue(ConsoleCommand::SwitchLocale);
    until(&mut harness, "sliced by provider", |app| {
        loaded(app, GroupBy::Provider)
    });
    snapshot_dashboard(&mut harness, "dashboard_provider_fa");
}
