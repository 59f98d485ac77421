//! Pictures of the main screen, in English and in Persian, from a fixed data set and a
//! fixed clock: the real app, offline on its local cache, rendered headless.
#![cfg(feature = "console")]

use std::time::{Duration, Instant};

use egui_kittest::Harness;
use intentdesk::console::cache::Cache;
use intentdesk::console::commands::ConsoleCommand;
use intentdesk::console::model::{IntentDetail, IntentPage};
use intentdesk::console::views::intent_view::IntentTab;
use intentdesk::console::worker::cache_key;
use intentdesk::console::{ConsoleApp, ConsoleOptions};
use serde_json::json;

const NOW_MS: u64 = 1_764_489_600_000;
const URL: &str = "http://coordinator.example:7410";

fn page() -> IntentPage {
    let rows: Vec<serde_json::Value> = [
        (
            "acme",
            "purchase_order.create",
            "committed",
            1,
            3,
            95,
            Some("po-1f3a-101"),
            "en-US",
            vec!["erp"],
        ),
        (
            "pars-trading",
            "purchase_order.create",
            "indeterminate",
            2,
            3,
            240,
            None,
            "fa-IR",
            vec!["erp"],
        ),
        (
            "acme",
            "payment.initiate",
            "executing",
            1,
            3,
            30,
            None,
            "en-US",
            vec!["erp"],
        ),
        (
            "globex",
            "quote.compare",
            "committed",
            4,
            5,
            610,
            Some("req-88"),
            "en-US",
            vec!["openai", "anthropic"],
        ),
        (
            "pars-trading",
            "inventory.reserve",
            "rejected",
            3,
            3,
            1_800,
            None,
            "fa-IR",
            vec!["erp"],
        ),
        (
            "acme",
            "supplier.search",
            "committed",
            2,
            4,
            3_700,
            Some("req-12"),
            "en-US",
            vec!["mistral", "openai"],
        ),
        (
            "globex",
            "purchase_order.create",
            "indeterminate",
            3,
            3,
            7_300,
            None,
            "en-US",
            vec!["erp", "anthropic"],
        ),
        (
            "acme",
            "purchase_order.create",
            "quarantined",
            1,
            3,
            9_000,
            None,
            "en-US",
            vec!["erp"],
        ),
        (
            "initech",
            "payment.initiate",
            "cancelled",
            1,
            3,
            86_400,
            None,
            "en-US",
            vec!["erp"],
        ),
    ]
    .into_iter()
    .enumerate()
    .map(
        |(n, (tenant, operation, state, attempts, max, age_secs, receipt, locale, providers))| {
            let created = NOW_MS - age_secs * 1000;
            json!({
                "id": format!("int_01kb{n:02}p7q3x9d2m8v4r6t0y5zs"),
                "tenant": tenant, "operation": operation, "consequence": "write", "state": state, "attempts": attempts,
                "max_attempts": max, "created_at_ms": created, "updated_at_ms": created + 500,
                "deadline_at_ms": created + 600_000, "downstream_ref": receipt, "locale": locale,
                "providers": providers, "paused": n == 2,
                "action_key": format!("po:{tenant}:int_01kb{n:02}p7q3x9d2m8v4r6t0y5zs"),
            })
        },
    )
    .collect();
    serde_json::from_value(
        json!({ "items": rows, "next_cursor": null, "total": 9, "total_exact": true }),
    )
    .expect("page")
}

/// The indeterminate order of the page, whole: a Persian purchase order.
const OPEN_ID: &str = "int_01kb01p7q3x9d2m8v4r6t0y5zs";

fn detail() -> IntentDetail {
    let created = NOW_MS - 240_000;
    let args = json!({"supplier": "ACME-IR", "item": "کاغذ A4", "qty": 1200, "unit_price": 29_500, "currency": "IRR"});
    let hash = intentdesk::domain::canonical::canonicalize(&args)
        .expect("canonical")
        .hash;
    serde_json::from_value(json!({
        "intent": {
            "id": OPEN_ID, "tenant": "pars-trading", "actor": "agent:kharid-bot",
            "purpose": "سفارش PO-1234 برای ۱۲۰۰ واحد", "operation": "purchase_order.create",
            "tool": "erp.purchase_orders", "consequence": "write", "state": "indeterminate",
            "attempts": 2, "max_attempts": 3, "created_at_ms": created, "updated_at_ms": created + 9_000,
            "deadline_at_ms": created + 600_000, "indeterminate_since_ms": created + 9_000,
            "action_key": format!("po:pars-trading:{OPEN_ID}"), "connector": "erp", "release_id": "procure-agent@2.4.0",
            "locale": "fa-IR", "args": args, "canonical_args_hash": hash,
            "authorization_version": "procurement-policy-v7", "approver": "s.karimi",
        },
        "attempts": [
            {"id": "att_01kb01p7q3x9d2m8v4r6t0y5a1", "kind": "dispatch", "provider": "erp", "outcome": "failed",
             "http_status": 503, "sent": true, "started_at_ms": created + 200, "ended_at_ms": created + 700},
            {"id": "att_01kb01p7q3x9d2m8v4r6t0y5a2", "kind": "dispatch", "provider": "erp", "outcome": "lost",
             "sent": true, "detail": "the connection closed after the request was sent",
             "started_at_ms": created + 2_700, "ended_at_ms": created + 9_000},
        ],
        "transitions": [
            {"from": null, "to": "prepared", "event": "validated", "at_ms": created},
            {"from": "prepared", "to": "authorized", "event": "authorized", "at_ms": created + 100},
            {"from": "authorized", "to": "executing", "event": "dispatch", "at_ms": created + 200},
            {"from": "executing", "to": "indeterminate", "event": "outcome_unknown", "at_ms": created + 9_000},
        ],
        "key_forget_at_ms": created + 200 + 600_000,
    }))
    .expect("detail")
}

fn harness(dir: &std::path::Path) -> (tokio::runtime::Runtime, Harness<'static, ConsoleApp>) {
    harness_opening(dir, None)
}

fn harness_opening(
    dir: &std::path::Path,
    open: Option<&str>,
) -> (tokio::runtime::Runtime, Harness<'static, ConsoleApp>) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let cache_path = dir.join("cache.sqlite");
    let cache = Cache::open(&cache_path, URL).expect("cache");
    let query = vec![
        ("sort".to_string(), "-created".to_string()),
        ("limit".to_string(), "200".to_string()),
    ];
    runtime.block_on(cache.put_page(&cache_key(&query, None), &page()));
    runtime.block_on(cache.put_detail(OPEN_ID, &detail()));
    let options = ConsoleOptions {
        label: URL.into(),
        coordinator_url: URL.into(),
        token: String::new(),
        offline: true,
        open: open.map(str::to_string),
        cache_path: Some(cache_path),
        fixed_now_ms: Some(NOW_MS),
        utc: true,
        ca_file: None,
    };
    let handle = runtime.handle().clone();
    let height = if open.is_some() { 640.0 } else { 420.0 };
    let mut harness = Harness::builder()
        .with_size(egui::vec2(1280.0, height))
        .build_eframe(move |cc| ConsoleApp::new(&cc.egui_ctx, None, options, &handle));
    let started = Instant::now();
    let shown = |app: &ConsoleApp| {
        app.table.rows.len() == 9
            && (open.is_none() || app.open.as_ref().is_some_and(|o| o.detail.is_some()))
    };
    while !shown(harness.state()) {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the cached page never showed"
        );
        harness.step();
        std::thread::sleep(Duration::from_millis(2));
    }
    harness.run_steps(3);
    (runtime, harness)
}

#[test]
fn main_screen_in_english() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_runtime, mut harness) = harness(dir.path());
    harness.snapshot("console_main_en");
}

#[test]
fn main_screen_in_persian() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_runtime, mut harness) = harness(dir.path());
    harness.state_mut().queue(ConsoleCommand::SwitchLocale);
    harness.run_steps(4);
    harness.snapshot("console_main_fa");
}

#[test]
fn an_open_intent_in_persian_stands_beside_the_table() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_runtime, mut harness) = harness_opening(dir.path(), Some(OPEN_ID));
    harness.state_mut().queue(ConsoleCommand::SwitchLocale);
    harness.run_steps(4);
    harness.snapshot("console_intent_fa");
    harness.state_mut().intent_view.tab = IntentTab::Envelope;
    harness.run_steps(4);
    harness.snapshot("console_envelope_fa");
}

#[test]
fn an_open_intent_in_english() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_runtime, mut harness) = harness_opening(dir.path(), Some(OPEN_ID));
    harness.state_mut().intent_view.tab = IntentTab::Envelope;
    harness.run_steps(4);
    harness.snapshot("console_envelope_en");
}
