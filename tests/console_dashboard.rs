//! The dashboard in the real console against a real coordinator: slicing by provider gives
//! one series per provider whose totals agree with the coordinator's summary, clicking the
//! largest bar filters the intents table to the intents behind it, and pictures of the
//! dashboard on a fixed, generated data set (English, and Persian sliced by provider).
//!
//! The console runs with times in UTC (`--utc`), so the pictures do not depend on the zone
//! of the machine that takes them.
#![cfg(feature = "console")]

use std::path::Path;

use egui::accesskit::Role;
use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;
use intentdesk::console::ConsoleApp;
use intentdesk::console::app::Tab;
use intentdesk::console::commands::ConsoleCommand;
use intentdesk::store::Store;
use intentdesk::store::bulk::BulkSpec;
use intentdesk::wire::{ChartMetric, GroupBy};

mod common;
use common::console::{Rig, RigOptions, until};

/// The generated data set ends here, and the console's clock is fixed here.
const END_MS: u64 = 1_764_489_600_000;

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
    let rig = Rig::start_with(RigOptions {
        reconcile: false,
        ..RigOptions::default()
    });
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
        rig.intent(tenant, &format!("k{n}"), providers);
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
    let mut harness = rig.harness(egui::vec2(1400.0, 1600.0));
    show_dashboard_by_provider(&mut harness);
    let app = harness.state();

    let attempts = &app.dashboard.charts[&ChartMetric::Attempts];
    let groups: Vec<&str> = attempts.series.iter().map(|s| s.group.as_str()).collect();
    assert_eq!(groups, ["anthropic", "mistral", "openai"]);
    let summary = rig.get("/v1/metrics/summary");
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
        let summary = rig.get_query("/v1/metrics/summary", &[("provider", group.group.as_str())]);
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
    rig.intent("acme", "k-live", &["mistral", "mistral"]);
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
                .is_some_and(|o| o.id == oldest.id.as_str() && o.detail.is_some())
        },
    );
}

#[test]
fn clicking_the_largest_bar_filters_the_table() {
    let rig = seeded();
    let mut harness = rig.harness(egui::vec2(1400.0, 1600.0));
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
    let listed = rig.get_query(
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
        .conn()
        .batch(
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
    snapshot_harness_of(egui::vec2(1400.0, 1500.0))
}

fn snapshot_harness_of(size: egui::Vec2) -> (Rig, Harness<'static, ConsoleApp>) {
    let rig = Rig::start_with(RigOptions {
        reconcile: false,
        prepare: Some(generated),
        ..RigOptions::default()
    });
    let mut harness = rig.harness_at(END_MS, size);
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
    let width = harness.ctx.content_rect().width();
    harness.mask(egui::Rect::from_min_max(
        egui::pos2(0.0, 0.0),
        egui::pos2(width, 54.0),
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

#[test]
fn the_dashboards_controls_in_persian_show_persian_digits() {
    let (_rig, mut harness) = snapshot_harness_of(egui::vec2(1400.0, 340.0));
    harness.state_mut().queue(ConsoleCommand::SwitchLocale);
    harness.run_steps(4);
    let fields = [
        ("اثرهای تکراری بیش از", "۰"),
        ("صدک ۹۹ تکثیر بیش از", "۳"),
        ("قدیمی‌ترین نامعلوم بیش از (دقیقه)", "۱۰"),
        ("افت بازده مفید از ساعت قبل (٪)", "۵۰"),
        ("نتیجه‌های دیررس (٪ تلاش‌ها)", "۵"),
    ];
    for (label, shown) in fields {
        let value = harness.get_by_label(label).value();
        assert_eq!(value.as_deref(), Some(shown), "{label}");
    }
    // One threshold refused in place, its reason in Persian beside it.
    harness.get_by_label(fields[4].0).click();
    harness.run_steps(2);
    harness.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::A);
    harness.event(egui::Event::Text("۱۲۰".into()));
    harness.run_steps(2);
    harness.key_press(egui::Key::Escape);
    harness.run_steps(2);
    assert!(
        harness
            .query_by_label("باید بین ۰ و ۱۰۰ باشد؛ ۵ همچنان برقرار است.")
            .is_some()
    );
    // The pointer rests on an empty place of the controls' line.
    harness.hover_at(egui::pos2(300.0, 80.0));
    snapshot_dashboard(&mut harness, "dashboard_controls_fa");
}
