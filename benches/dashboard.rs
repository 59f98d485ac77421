//! Dashboard speed, both halves:
//!
//! - the coordinator's answer to a chart request over five million attempts (1,060,000
//!   intents generated over 30 days into `target/bench-data/dashboard-5m.sqlite`, once; a
//!   real coordinator serves it over HTTP on loopback);
//! - the console's CPU time for one frame that draws six charts of 10,000-point series
//!   (layout and tessellation, headless; no GPU), and for the whole dashboard view with a
//!   10,000-point series per metric.
//!
//! Run: `cargo bench --bench dashboard`. Figures and machine go into BENCHMARKS.md.

use std::collections::BTreeSet;
use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use egui_plot::LineStyle;
use intentdesk::console::theme;
use intentdesk::console::views::charts::SeriesView;
use intentdesk::console::views::charts::time_chart::{Kind, TimeChart};
use intentdesk::console::{ConsoleApp, ConsoleOptions};
use intentdesk::coordinator::{Config, run, token_sha256};
use intentdesk::domain::Locale;
use intentdesk::i18n::Localizer;
use intentdesk::wire::{
    ALL_GROUP, AttemptsHistogram, Chart, ChartMetric, ChartSeries, GroupBy, HistogramGroup,
    Overview,
};
use serde_json::Value;
use tokio::net::TcpListener;

#[allow(dead_code)]
#[path = "support/orders.rs"]
mod orders;
#[allow(dead_code)]
#[path = "support/reads.rs"]
mod reads;
use orders::TOKEN;
use reads::{END_MS, charts, sqlite_data_set};

fn coordinator(c: &mut Criterion) {
    let db = sqlite_data_set();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let config = Config::parse(
        &format!(
            "listen = \"127.0.0.1:0\"\ndatabase = \"{}\"\nreconcile_interval_ms = 3600000\nreconcile_batch = 0\n\
             [[tokens]]\nname = \"bench\"\ntoken_sha256 = \"{}\"\nrole = \"admin\"\ntenants = [\"*\"]\nmay_approve_own = true\n",
            db.display(),
            token_sha256(TOKEN)
        ),
        "bench",
    )
    .expect("config");
    let base = runtime.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        tokio::spawn(run(listener, config, std::future::pending()));
        format!("http://{addr}")
    });
    let http = intentdesk::tls::client(None)
        .expect("a TLS client")
        .build()
        .expect("an HTTP client");
    let get = |query: &str, path: &str| -> Value {
        runtime.block_on(async {
            let response = http
                .get(format!("{base}{path}?{query}"))
                .bearer_auth(TOKEN)
                .send()
                .await
                .expect("send");
            assert!(response.status().is_success(), "{}", response.status());
            response.json().await.expect("json")
        })
    };
    let at = format!("at={}", END_MS + 1);
    let started = Instant::now();
    let first = get(&at, "/v1/metrics/overview");
    eprintln!(
        "first answer (loads the index of {} intents, {} attempts): {:.1?}",
        first["intents"],
        first["attempts"],
        started.elapsed()
    );

    let mut group = c.benchmark_group("dashboard_coordinator_5m_attempts");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(10));
    for (name, query) in charts() {
        group.bench_function(name, |b| {
            b.iter(|| black_box(get(&query, "/v1/metrics/chart")))
        });
    }
    group.bench_function("histogram_by_provider", |b| {
        b.iter(|| black_box(get("group_by=provider", "/v1/metrics/histogram")))
    });
    group.bench_function("overview", |b| {
        b.iter(|| black_box(get(&at, "/v1/metrics/overview")))
    });
    group.finish();
}

/// `n` points of a noisy series over a day.
fn series(n: usize, seed: u64) -> Vec<[f64; 3]> {
    let mut x = seed;
    (0..n)
        .map(|i| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let noise = (x >> 40) as f64 / (1u64 << 24) as f64;
            let t = END_MS as f64 - 86_400_000.0 + i as f64 * 8_640.0;
            [
                t,
                50.0 + 30.0 * (i as f64 / 500.0).sin() + 20.0 * noise,
                1.0,
            ]
        })
        .collect()
}

fn console(c: &mut Criterion) {
    let data: Vec<Vec<[f64; 3]>> = (0..6).map(|i| series(10_000, i)).collect();
    let i18n = Localizer::new(Locale::EnUs);
    let ctx = egui::Context::default();
    let mut hidden: Vec<BTreeSet<String>> = vec![BTreeSet::new(); 6];
    let x_range = (END_MS as f64 - 86_400_000.0, END_MS as f64);
    let mut frame = |ctx: &egui::Context| {
        let input = egui::RawInput {
            screen_rect: Some(egui::Rect::from_min_size(
                egui::Pos2::ZERO,
                egui::vec2(1400.0, 900.0),
            )),
            ..Default::default()
        };
        let mut output = ctx.run_ui(input, |ui| {
            egui::CentralPanel::default_margins().show(ui, |ui| {
                for row in 0..3 {
                    ui.columns(2, |cols| {
                        for (col, ui) in cols.iter_mut().enumerate() {
                            let i = row * 2 + col;
                            let format = |v: f64| format!("{v:.0}");
                            let chart = TimeChart {
                                id: ["a", "b", "c", "d", "e", "f"][i],
                                y_label: "count".into(),
                                kind: Kind::Lines,
                                series: vec![SeriesView {
                                    group: "all",
                                    label: "all".into(),
                                    color: theme::SERIES[i],
                                    style: LineStyle::Solid,
                                    points: &data[i],
                                }],
                                bucket_ms: 8_640,
                                x_range,
                                threshold: Some((80.0, "threshold".into())),
                                y_format: &format,
                                click_hint: String::new(),
                                height: 220.0,
                                hidden: &mut hidden[i],
                            };
                            black_box(chart.show(ui, &i18n));
                        }
                    });
                }
            });
        });
        let shapes = std::mem::take(&mut output.shapes);
        output.textures_delta.clear();
        black_box(ctx.tessellate(shapes, output.pixels_per_point));
    };
    // Warm up: fonts, caches.
    for _ in 0..5 {
        frame(&ctx);
    }
    let mut group = c.benchmark_group("dashboard_console");
    group
        .sample_size(50)
        .measurement_time(Duration::from_secs(10));
    group.bench_function("frame_six_charts_10k_points", |b| b.iter(|| frame(&ctx)));
    group.finish();
    whole_dashboard(c);
}

/// The whole dashboard view (every chart, the histogram, the board and the tiles) with a
/// 10,000-point series per metric, drawn by the real app (offline, so nothing is fetched).
fn whole_dashboard(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let ctx = egui::Context::default();
    let options = ConsoleOptions {
        label: "bench".into(),
        coordinator_url: "http://127.0.0.1:9".into(),
        token: String::new(),
        offline: true,
        open: None,
        cache_path: None,
        fixed_now_ms: Some(END_MS),
        utc: false,
        ca_file: None,
    };
    let mut app = ConsoleApp::new(&ctx, None, options, runtime.handle());
    let size = egui::vec2(1400.0, 1500.0);
    let frame = |ctx: &egui::Context, app: &mut ConsoleApp| {
        let input = egui::RawInput {
            screen_rect: Some(egui::Rect::from_min_size(egui::Pos2::ZERO, size)),
            ..Default::default()
        };
        let mut output = ctx.run_ui(input, |ui| {
            egui::CentralPanel::default_margins().show(ui, |ui| app.dashboard_ui(ui));
        });
        let shapes = std::mem::take(&mut output.shapes);
        output.textures_delta.clear();
        black_box(ctx.tessellate(shapes, output.pixels_per_point));
    };
    // The first frame asks for data (and fails, offline); then the data is put in place.
    frame(&ctx, &mut app);
    for (i, metric) in ChartMetric::ALL.iter().enumerate() {
        let points = series(10_000, i as u64);
        app.dashboard.charts.insert(
            *metric,
            Chart {
                metric: *metric,
                group_by: GroupBy::None,
                bucket_ms: 8_640,
                from_ms: END_MS - 86_400_000,
                to_ms: END_MS,
                series: vec![ChartSeries {
                    group: ALL_GROUP.into(),
                    total: points.iter().map(|p| p[1]).sum(),
                    points,
                }],
            },
        );
    }
    app.dashboard.histogram = Some(AttemptsHistogram {
        group_by: GroupBy::None,
        budget: 5,
        groups: vec![HistogramGroup {
            group: ALL_GROUP.into(),
            bins: (1..=12).map(|a| [a, 10_000 / a]).collect(),
            intents: 30_000,
            over_budget: 2_000,
        }],
    });
    app.dashboard.overview = Some(Overview::default());
    for _ in 0..5 {
        frame(&ctx, &mut app);
    }
    let mut group = c.benchmark_group("dashboard_console");
    group
        .sample_size(30)
        .measurement_time(Duration::from_secs(10));
    group.bench_function("frame_whole_dashboard_10k_points_per_metric", |b| {
        b.iter(|| frame(&ctx, &mut app))
    });
    group.finish();
}

criterion_group!(benches, console, coordinator);
criterion_main!(benches);
