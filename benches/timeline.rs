//! Intent view speed: the timeline's frame time for an intent with 10,000 attempts while
//! zooming, and opening an intent to full detail over loopback (the request, reading the
//! answer, laying out the timeline and ledger, and the first frame).
//!
//! Run: `cargo bench --bench timeline` (release profile). Frames are measured headless:
//! egui's `run_ui` plus tessellation, the CPU part of a frame, without a GPU.
//! Figures and machine go into BENCHMARKS.md.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use intentdesk::client::Client;
use intentdesk::console::model::IntentDetail;
use intentdesk::console::views::ledger::Ledger;
use intentdesk::console::views::timeline::model::TimelineModel;
use intentdesk::console::views::timeline::{TimelineView, timeline_ui};
use intentdesk::coordinator::{Config, run, token_sha256};
use intentdesk::domain::{AttemptId, AttemptKind, AttemptOutcome, IntentId, Locale};
use intentdesk::i18n::Localizer;
use intentdesk::store::ops::*;
use intentdesk::store::{AttemptFinish, Store};
use intentdesk::wire::NewAttempt;
use serde_json::{Value, json};

const T0: u64 = 1_796_031_355_000;
const TOKEN: &str = "bench-token";
const SCREEN: egui::Vec2 = egui::vec2(1280.0, 800.0);

/// An intent with `n` attempts over ten minutes: retries across three providers, every
/// tenth a hedge of three, outcomes of every kind, a transition per attempt, receipts and
/// operator commands.
fn synthetic(n: usize) -> IntentDetail {
    let id = "int_01kbx7q3p9d2m8v4r6t0y5zs99";
    let providers = ["openai", "anthropic", "mistral"];
    let outcomes = ["succeeded", "failed", "timed_out", "lost", "abandoned"];
    let span = 600_000u64;
    let attempts: Vec<Value> = (0..n)
        .map(|i| {
            let start = (i as u64 * span) / n as u64;
            let hedge = (i % 10 < 3).then(|| format!("h{}", i / 10));
            json!({
                "id": format!("att_01kbx7q3p9d2m8v4r{i:07}"), "kind": if i % 7 == 0 { "lookup" } else { "inference" },
                "provider": providers[i % 3], "region": "eu-west", "release_id": "r7",
                "hedge_group": hedge, "outcome": outcomes[i % 5],
                "started_at_ms": T0 + start, "ended_at_ms": T0 + start + 40 + (i as u64 * 37) % 2_000,
            })
        })
        .collect();
    let transitions: Vec<Value> = (0..n)
        .map(|i| {
            let (from, to) = if i % 2 == 0 { ("executing", "indeterminate") } else { ("indeterminate", "executing") };
            json!({"from": from, "to": to, "event": "x", "at_ms": T0 + (i as u64 * span) / n as u64 + 20})
        })
        .collect();
    let receipts: Vec<Value> = (0..n / 100)
        .map(|i| json!({"id": format!("rcp_{i}"), "downstream_id": format!("PO-{i}"), "source": if i % 2 == 0 { "webhook" } else { "lookup" },
                       "authoritative": i == 0, "received_at_ms": T0 + i as u64 * 6_000}))
        .collect();
    let commands: Vec<Value> = (0..50)
        .map(|i| json!({"command_id": format!("cmd_{i}"), "kind": "reconcile", "actor": "ops", "role": "admin",
                       "status": "applied", "created_at_ms": T0 + i as u64 * 12_000}))
        .collect();
    serde_json::from_value(json!({
        "intent": {"id": id, "tenant": "acme", "operation": "quote.compare", "state": "indeterminate",
                   "created_at_ms": T0, "deadline_at_ms": T0 + span, "action_key": format!("po:acme:{id}")},
        "attempts": attempts, "transitions": transitions, "receipts": receipts, "commands": commands,
    }))
    .expect("detail")
}

fn context() -> egui::Context {
    let ctx = egui::Context::default();
    intentdesk::console::text::install_fonts(&ctx);
    ctx
}

fn input(events: Vec<egui::Event>) -> egui::RawInput {
    egui::RawInput {
        screen_rect: Some(egui::Rect::from_min_size(egui::Pos2::ZERO, SCREEN)),
        events,
        ..Default::default()
    }
}

/// One frame: the timeline's logic and drawing, then tessellation.
fn frame(
    ctx: &egui::Context,
    raw: egui::RawInput,
    i18n: &Localizer,
    detail: &IntentDetail,
    model: &TimelineModel,
    view: &mut TimelineView,
) -> usize {
    let output = ctx.run_ui(raw, |ui| {
        timeline_ui(ui, i18n, detail, model, view, 560.0);
    });
    let primitives = ctx.tessellate(output.shapes, output.pixels_per_point);
    primitives.len()
}

fn timeline_frames(c: &mut Criterion) {
    let detail = synthetic(10_000);
    let model = TimelineModel::build(&detail, T0 + 700_000);
    let i18n = Localizer::new(Locale::EnUs);
    let ctx = context();
    let mut view = TimelineView::default();
    for _ in 0..5 {
        frame(&ctx, input(vec![]), &i18n, &detail, &model, &mut view);
    }
    let pointer = egui::pos2(700.0, 300.0);
    let mut group = c.benchmark_group("timeline_10k");
    group
        .sample_size(200)
        .measurement_time(Duration::from_secs(8));
    // Ctrl+wheel over the plot: 40 frames in, 40 out, around the pointer.
    let mut step = 0usize;
    group.bench_function("frame_while_zooming", |b| {
        b.iter(|| {
            let factor = if (step / 40).is_multiple_of(2) {
                1.12
            } else {
                1.0 / 1.12
            };
            step += 1;
            let events = vec![
                egui::Event::PointerMoved(pointer),
                egui::Event::Zoom(factor),
            ];
            black_box(frame(
                &ctx,
                input(events),
                &i18n,
                &detail,
                &model,
                &mut view,
            ))
        })
    });
    group.bench_function("frame_idle", |b| {
        b.iter(|| {
            black_box(frame(
                &ctx,
                input(vec![]),
                &i18n,
                &detail,
                &model,
                &mut view,
            ))
        })
    });
    group.bench_function("lay_out_model_and_ledger", |b| {
        b.iter(|| {
            let m = TimelineModel::build(black_box(&detail), T0 + 700_000);
            let l = Ledger::build(&detail, T0 + 700_000);
            black_box((m.lanes.len(), l.rows.len()))
        })
    });
    group.finish();
}

/// A coordinator on loopback holding one intent with `attempts` finished attempts; returns
/// its URL and the intent id.
fn coordinator_with(
    runtime: &tokio::runtime::Runtime,
    dir: &std::path::Path,
    attempts: usize,
) -> (String, String) {
    let db = dir.join("bench.sqlite");
    let config = format!(
        "listen = \"127.0.0.1:0\"\ndatabase = \"{}\"\nreconcile_interval_ms = 86400000\nreconcile_batch = 0\n\
         [[tokens]]\nname = \"bench\"\ntoken_sha256 = \"{}\"\nrole = \"admin\"\ntenants = [\"*\"]\nmay_approve_own = true\n",
        db.display(),
        token_sha256(TOKEN)
    );
    let start = || {
        let config = Config::parse(&config, "bench").expect("config");
        runtime.block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind");
            let url = format!("http://{}", listener.local_addr().expect("addr"));
            let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
            let served = tokio::spawn(run(listener, config, async {
                let _ = stopped.await;
            }));
            (url, stop, served)
        })
    };
    let (url, stop, served) = start();
    let id = runtime.block_on(async {
        let http = intentdesk::tls::client(None).expect("a TLS client").build().expect("an HTTP client");
        let body = json!({"tenant": "acme", "actor": "agent", "purpose": "compare", "operation": "quote.compare",
            "tool": "llm", "consequence": "compute", "args": {"q": 1}, "deadline_secs": 600, "max_attempts": 50,
            "release_id": "r7", "locale": "en-US"});
        let created: Value = http
            .post(format!("{url}/v1/intents"))
            .bearer_auth(TOKEN)
            .header("Idempotency-Key", format!("bench-{attempts}"))
            .json(&body)
            .send()
            .await
            .expect("create")
            .json()
            .await
            .expect("json");
        let id = created["id"].as_str().expect("id").to_string();
        http.post(format!("{url}/v1/intents/{id}/authorize"))
            .bearer_auth(TOKEN)
            .json(&json!({"authorization_version": "v1"}))
            .send()
            .await
            .expect("authorize");
        id
    });
    // Lookups do not count against the budget, so any number can be written straight into
    // the store while the coordinator is stopped; then it starts again on the same file.
    let _ = stop.send(());
    runtime
        .block_on(served)
        .expect("coordinator task")
        .expect("coordinator stopped");
    let mut store = Store::open(&db).expect("store");
    let intent: IntentId = id.parse().expect("intent id");
    for i in 0..attempts {
        let at = T0 + i as u64 * 10;
        let attempt = AttemptId::generate(at, i as u128 + 1);
        let new = NewAttempt {
            kind: Some(AttemptKind::Lookup),
            provider: ["openai", "anthropic", "mistral"][i % 3].to_string(),
            region: Some("eu-west".into()),
            ..NewAttempt::default()
        };
        store
            .record_attempt(&intent, &attempt, &new, Some("agent"), at)
            .expect("attempt");
        let finish = AttemptFinish {
            outcome: Some(if i % 4 == 0 {
                AttemptOutcome::TimedOut
            } else {
                AttemptOutcome::Succeeded
            }),
            ..AttemptFinish::default()
        };
        store
            .finish_attempt(&intent, &attempt, &finish, at + 30)
            .expect("finish");
    }
    drop(store);
    let (url, stop, _) = start();
    // The coordinator serves until the bench ends.
    std::mem::forget(stop);
    (url, id)
}

fn open_on_loopback(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let i18n = Localizer::new(Locale::EnUs);
    let mut group = c.benchmark_group("open_intent_loopback");
    group
        .sample_size(30)
        .measurement_time(Duration::from_secs(10));
    for attempts in [50usize, 10_000] {
        let dir = tempfile::tempdir().expect("dir");
        let (url, id) = coordinator_with(&runtime, dir.path(), attempts);
        let client = Client::new(&url, TOKEN).expect("client");
        let ctx = context();
        group.bench_function(format!("{attempts}_attempts_to_first_frame"), |b| {
            b.iter(|| {
                let detail = runtime.block_on(client.intent(&id)).expect("detail");
                let now = T0 + 1_000_000;
                let model = TimelineModel::build(&detail, now);
                let ledger = Ledger::build(&detail, now);
                let mut view = TimelineView::default();
                let n = frame(&ctx, input(vec![]), &i18n, &detail, &model, &mut view);
                black_box((n, ledger.rows.len()))
            })
        });
    }
    group.finish();
}

criterion_group!(benches, timeline_frames, open_on_loopback);
criterion_main!(benches);
