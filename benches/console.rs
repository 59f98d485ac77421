//! Console speed, measured headless with the real app (egui_kittest drives frames without a
//! GPU; the figure is the CPU time of the app's logic and drawing per frame).
//!
//! Run: `cargo bench --bench console` (release profile). It needs the million-intent data
//! set that `cargo bench --bench store` generates under `target/bench-data/`.
//! Prints: frame time while scrolling (median, p99), filter change to first rows,
//! resident memory, and start-to-first-frame-with-data of the embedded default.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use egui_kittest::Harness;
use intentdesk::console::commands::ConsoleCommand;
use intentdesk::console::filters::Filters;
use intentdesk::console::{ConsoleApp, ConsoleOptions};
use intentdesk::coordinator::{Config, run, token_sha256};

const TOKEN: &str = "bench-token";

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted[rank.min(sorted.len()) - 1]
}

fn rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

fn harness(url: &str, runtime: &tokio::runtime::Handle) -> Harness<'static, ConsoleApp> {
    let options = ConsoleOptions {
        label: "bench".into(),
        coordinator_url: url.to_string(),
        token: TOKEN.into(),
        offline: false,
        open: None,
        cache_path: None,
        fixed_now_ms: None,
    };
    let handle = runtime.clone();
    Harness::builder()
        .with_size(egui::vec2(1400.0, 900.0))
        .build_eframe(move |cc| ConsoleApp::new(&cc.egui_ctx, None, options, &handle))
}

fn until(h: &mut Harness<'static, ConsoleApp>, what: &str, done: impl Fn(&ConsoleApp) -> bool) {
    let started = Instant::now();
    while !done(h.state()) {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "gave up: {what}"
        );
        h.step();
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn main() {
    let data = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-data/store-1m.sqlite");
    if !data.exists() {
        eprintln!(
            "run `cargo bench --bench store` first: it generates {}",
            data.display()
        );
        return;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let config = format!(
        "listen = \"127.0.0.1:0\"\ndatabase = \"{}\"\nreconcile_interval_ms = 86400000\nreconcile_batch = 1\n\
         [[tokens]]\nname = \"bench\"\ntoken_sha256 = \"{}\"\nrole = \"admin\"\ntenants = [\"*\"]\n",
        data.display(),
        token_sha256(TOKEN)
    );
    let config = Config::parse(&config, "bench").expect("config");
    let url = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        tokio::spawn(run(listener, config, std::future::pending()));
        url
    });

    let mut h = harness(&url, runtime.handle());
    until(&mut h, "first page", |app| {
        !app.table.rows.is_empty() && !app.table.loading
    });

    // Scrolling: a wheel event over the table every frame; pages load as the end nears.
    let mut frames = Vec::new();
    let center = egui::pos2(500.0, 500.0);
    for _ in 0..400 {
        h.hover_at(center);
        h.event(egui::Event::MouseWheel {
            unit: egui::MouseWheelUnit::Point,
            delta: egui::vec2(0.0, -220.0),
            phase: egui::TouchPhase::Move,
            source: egui::MouseWheelSource::Unknown,
            modifiers: egui::Modifiers::NONE,
        });
        let started = Instant::now();
        h.step();
        frames.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    frames.sort_by(f64::total_cmp);
    let rows = h.state().table.rows.len();
    println!(
        "scrolling: {} frames over {rows} loaded rows of {}{}: median {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        frames.len(),
        h.state().table.total,
        if h.state().table.total_exact { "" } else { "+" },
        percentile(&frames, 50.0),
        percentile(&frames, 99.0),
        frames[frames.len() - 1]
    );

    // Filter change to first rows, a few times.
    let mut changes = Vec::new();
    for (tenant, provider) in [
        ("acme", "anthropic"),
        ("globex", "openai"),
        ("initech", "mistral"),
        ("umbrella", "erp"),
    ] {
        let filters = Filters {
            tenants: vec![tenant.into()],
            providers: vec![provider.into()],
            ..Filters::default()
        };
        h.state_mut().queue(ConsoleCommand::SetFilters(filters));
        h.step();
        until(&mut h, "filtered rows", |app| {
            app.table.first_rows_after.is_some() && !app.table.loading
        });
        let took = h
            .state_mut()
            .table
            .first_rows_after
            .take()
            .expect("measured");
        changes.push(took.as_secs_f64() * 1000.0);
    }
    changes.sort_by(f64::total_cmp);
    println!(
        "filter change to first rows: median {:.1} ms, max {:.1} ms ({} changes)",
        percentile(&changes, 50.0),
        changes[changes.len() - 1],
        changes.len()
    );
    println!(
        "resident memory after scrolling and filtering: {:.0} MiB (whole process, coordinator included)",
        rss_mib()
    );
    drop(h);

    // The embedded default: start everything in a fresh data folder, time to a row on screen.
    let dir = tempfile::tempdir().expect("temp dir");
    let started = Instant::now();
    let embedded = runtime
        .block_on(intentdesk::embedded::Embedded::start(dir.path(), true))
        .expect("embedded");
    let options = ConsoleOptions {
        label: "embedded demo".into(),
        coordinator_url: embedded.coordinator_url.clone(),
        token: embedded.token.clone(),
        offline: false,
        open: None,
        cache_path: None,
        fixed_now_ms: None,
    };
    let handle = runtime.handle().clone();
    let mut h = Harness::builder()
        .with_size(egui::vec2(1400.0, 900.0))
        .build_eframe(move |cc| ConsoleApp::new(&cc.egui_ctx, None, options, &handle));
    until(&mut h, "a row in the embedded default", |app| {
        !app.table.rows.is_empty()
    });
    println!(
        "embedded default, start to first frame with data: {:.0} ms",
        started.elapsed().as_secs_f64() * 1000.0
    );
    drop(h);
    runtime.block_on(embedded.shutdown());
}
