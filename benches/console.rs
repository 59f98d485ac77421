//! Console speed, measured headless with the real app against a coordinator in its own
//! process (this binary, `intentdesk coordinator`), so the memory figure is the console's.
//!
//! Run: `cargo bench --bench console` (release profile). It needs the million-intent data
//! set that `cargo bench --bench store` generates under `target/bench-data/`.
//! Prints: frame time while scrolling (median, p99) two ways — the app's frame as a window
//! runs it (`Context::run_ui` with the app's logic and drawing, then `tessellate`: the CPU
//! part of a frame without a GPU; as CPU time of the UI thread and as wall clock) and
//! egui_kittest's whole step (which also rebuilds the
//! accessibility tree each frame) — then filter change to first rows, the console's
//! resident memory, and start-to-first-frame-with-data of the embedded default.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use egui_kittest::Harness;
use intentdesk::console::commands::ConsoleCommand;
use intentdesk::console::filters::Filters;
use intentdesk::console::{ConsoleApp, ConsoleOptions};
use intentdesk::coordinator::token_sha256;

const TOKEN: &str = "bench-token";

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted[rank.min(sorted.len()) - 1]
}

fn rss_mib(pid: &str) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

fn options(url: &str) -> ConsoleOptions {
    ConsoleOptions {
        label: "bench".into(),
        coordinator_url: url.to_string(),
        token: TOKEN.into(),
        offline: false,
        open: None,
        cache_path: None,
        fixed_now_ms: None,
        utc: false,
        ca_file: None,
    }
}

fn wheel() -> egui::Event {
    egui::Event::MouseWheel {
        unit: egui::MouseWheelUnit::Point,
        delta: egui::vec2(0.0, -220.0),
        phase: egui::TouchPhase::Move,
        source: egui::MouseWheelSource::Unknown,
        modifiers: egui::Modifiers::NONE,
    }
}

/// The coordinator in a child process on a free loopback port, answering `/healthz`.
struct Child {
    process: std::process::Child,
    url: String,
    _dir: tempfile::TempDir,
}

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}

fn coordinator_process(data: &std::path::Path, runtime: &tokio::runtime::Runtime) -> Child {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let dir = tempfile::tempdir().expect("temp dir");
    let config = dir.path().join("coordinator.toml");
    std::fs::write(
        &config,
        format!(
            "listen = \"127.0.0.1:{port}\"\ndatabase = \"{}\"\nreconcile_interval_ms = 86400000\nreconcile_batch = 1\n\
             [[tokens]]\nname = \"bench\"\ntoken_sha256 = \"{}\"\nrole = \"admin\"\ntenants = [\"*\"]\nmay_approve_own = true\n",
            data.display(),
            token_sha256(TOKEN)
        ),
    )
    .expect("config");
    let process = std::process::Command::new(env!("CARGO_BIN_EXE_intentdesk"))
        .arg("coordinator")
        .arg("--config")
        .arg(&config)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start the coordinator");
    let url = format!("http://127.0.0.1:{port}");
    let child = Child {
        process,
        url,
        _dir: dir,
    };
    let health = format!("{}/healthz", child.url);
    runtime.block_on(async {
        let started = Instant::now();
        while !reqwest::get(&health)
            .await
            .is_ok_and(|r| r.status().is_success())
        {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "the coordinator never answered"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // The coordinator loads the dashboard's metric index as it starts (seconds of one
        // core at a million intents); measure the console against a settled coordinator, as
        // it meets one that has been running. An overview answers once the load is done.
        let started = Instant::now();
        let overview = intentdesk::tls::client(None)
            .expect("a TLS client")
            .build()
            .expect("an HTTP client")
            .get(format!("{}/v1/metrics/overview", child.url))
            .bearer_auth(TOKEN)
            .send()
            .await
            .expect("overview");
        assert!(overview.status().is_success());
        println!(
            "(the coordinator's metric index was ready {} ms after it answered)",
            started.elapsed().as_millis()
        );
    });
    child
}

fn harness(url: &str, runtime: &tokio::runtime::Handle) -> Harness<'static, ConsoleApp> {
    let options = options(url);
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
    let child = coordinator_process(&data, &runtime);
    let url = child.url.clone();

    // The app's frame as a window runs it: logic, drawing, tessellation, at a 60 Hz pace so
    // scrolling animates and pages arrive as they would.
    {
        let ctx = egui::Context::default();
        let mut app = ConsoleApp::new(&ctx, None, options(&url), runtime.handle());
        let mut frame = eframe::Frame::_new_kittest();
        let screen = egui::Rect::from_min_size(egui::Pos2::ZERO, egui::vec2(1400.0, 900.0));
        let mut time = 0.0;
        let mut run = |events: Vec<egui::Event>, app: &mut ConsoleApp| {
            time += 1.0 / 60.0;
            let input = egui::RawInput {
                screen_rect: Some(screen),
                time: Some(time),
                predicted_dt: 1.0 / 60.0,
                events,
                ..Default::default()
            };
            let started = Instant::now();
            let cpu = cpu_time::ThreadTime::now();
            let output = ctx.run_ui(input, |ui| {
                eframe::App::logic(app, ui.ctx(), &mut frame);
                eframe::App::ui(app, ui, &mut frame);
            });
            let _ = ctx.tessellate(output.shapes, output.pixels_per_point);
            (
                cpu.elapsed().as_secs_f64() * 1000.0,
                started.elapsed().as_secs_f64() * 1000.0,
            )
        };
        let started = Instant::now();
        while app.table.rows.is_empty() || app.table.loading {
            assert!(
                started.elapsed() < Duration::from_secs(120),
                "gave up: first page"
            );
            run(Vec::new(), &mut app);
            std::thread::sleep(Duration::from_millis(16));
        }
        let center = egui::pos2(500.0, 500.0);
        let (mut cpu, mut wall) = (Vec::new(), Vec::new());
        for _ in 0..400 {
            let (c, w) = run(vec![egui::Event::PointerMoved(center), wheel()], &mut app);
            cpu.push(c);
            wall.push(w);
            std::thread::sleep(Duration::from_millis(16));
        }
        for (what, frames) in [
            ("CPU time of the UI thread", &mut cpu),
            ("wall clock", &mut wall),
        ] {
            frames.sort_by(f64::total_cmp);
            println!(
                "scrolling, the app's frame (run_ui + tessellate), {what}: {} frames over {} loaded rows: \
                 median {:.2} ms, p99 {:.2} ms, max {:.2} ms",
                frames.len(),
                app.table.rows.len(),
                percentile(frames, 50.0),
                percentile(frames, 99.0),
                frames[frames.len() - 1]
            );
        }
    }

    let mut h = harness(&url, runtime.handle());
    until(&mut h, "first page", |app| {
        !app.table.rows.is_empty() && !app.table.loading
    });

    // Scrolling: a wheel event over the table every frame; pages load as the end nears.
    let mut frames = Vec::new();
    let center = egui::pos2(500.0, 500.0);
    for _ in 0..400 {
        h.hover_at(center);
        h.event(wheel());
        let started = Instant::now();
        h.step();
        frames.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    frames.sort_by(f64::total_cmp);
    let rows = h.state().table.rows.len();
    println!(
        "scrolling, kittest's whole step: {} frames over {rows} loaded rows of {}{}: median {:.2} ms, p99 {:.2} ms, max {:.2} ms",
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
        "resident memory after scrolling and filtering: console {:.0} MiB (this process: two apps' \
         state, the kittest harness and the runtime); coordinator {:.0} MiB (its own process)",
        rss_mib("self"),
        rss_mib(&child.process.id().to_string())
    );
    drop(h);
    drop(child);

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
        utc: false,
        ca_file: None,
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
