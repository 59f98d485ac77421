//! Whole orders with one, two and three coordinators on one PostgreSQL database, beside
//! one coordinator on SQLite, in the same run: real HTTP on loopback, a fault-free sandbox
//! as the fast downstream, 64 concurrent agents whose requests go round the coordinators
//! (an order's create, authorisation and dispatch each to the next one, as a round-robin
//! load balancer sends them). Everything shares the machine's cores with PostgreSQL.
//!
//! Run: `export INTENTDESK_TEST_POSTGRES=$(.ci/postgres start); cargo bench --bench fleet`
//! (`-- rounds N` repeats the four set-ups N times, alternating). Prints, per set-up:
//! orders per second until all are committed, and create latency at a steady 500 per
//! second (p50, p99).
//!
//! `-- reads` instead times list pages and dashboard charts over 1,060,000 intents and
//! about five million attempts, served by one coordinator on PostgreSQL and one on SQLite
//! in the same run (the data sets are generated the first time, into the database
//! `intentdesk_bench_5m` and under `target/bench-data/`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use intentdesk::coordinator::{Config, run, token_sha256};
use intentdesk::sandbox::{FaultSpec, SandboxState};
use intentdesk::store::Location;
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, oneshot};
use tokio::task::JoinHandle;

#[path = "support/orders.rs"]
mod orders;
use orders::{TOKEN, committed, create, percentile, whole_order};
#[path = "support/reads.rs"]
mod reads;

#[allow(dead_code)]
#[path = "../tests/common/backends.rs"]
mod backends;

const ORDERS: u64 = 6_000;
const AGENTS: usize = 64;

struct Running {
    urls: Vec<String>,
    stops: Vec<oneshot::Sender<()>>,
    tasks: Vec<JoinHandle<anyhow::Result<()>>>,
}

impl Running {
    async fn stop(self) {
        for stop in self.stops {
            let _ = stop.send(());
        }
        for task in self.tasks {
            let _ = task.await;
        }
    }
}

/// How each coordinator's reconciler runs.
#[derive(Clone, Copy)]
struct Reconcile {
    interval_ms: u64,
    batch: u32,
}

/// The orders' reconciler: every second, one intent a sweep.
const ORDERING: Reconcile = Reconcile {
    interval_ms: 1_000,
    batch: 1,
};

/// None: the data set is only read (its open intents are long past their deadlines, and a
/// reconciler would expire them one by one while the reads are timed).
const READ_ONLY: Reconcile = Reconcile {
    interval_ms: 86_400_000,
    batch: 0,
};

async fn coordinators(
    database: &Location,
    sandbox: &str,
    n: usize,
    reconcile: Reconcile,
) -> Running {
    let Reconcile { interval_ms, batch } = reconcile;
    let database = match database {
        Location::Sqlite(path) => path.display().to_string(),
        Location::Postgres(url) => url.clone(),
    };
    let mut running = Running {
        urls: Vec::new(),
        stops: Vec::new(),
        tasks: Vec::new(),
    };
    for _ in 0..n {
        let config = format!(
            "listen = \"127.0.0.1:0\"\ndatabase = '{database}'\ndurability = \"power_loss\"\n\
             reconcile_interval_ms = {interval_ms}\nreconcile_batch = {batch}\n\
             [[tokens]]\nname = \"bench\"\ntoken_sha256 = \"{}\"\nrole = \"admin\"\ntenants = [\"*\"]\nmay_approve_own = true\n\
             [[connectors]]\nname = \"erp\"\nbase_url = \"{sandbox}\"\nkey_retention_secs = 3600\n\
             timeout_ms = 2000\noperations = {{ \"purchase_order.create\" = \"purchase-orders\" }}\n",
            token_sha256(TOKEN)
        );
        let config = Config::parse(&config, "bench").expect("config");
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let (stop, stopped) = oneshot::channel::<()>();
        running
            .tasks
            .push(tokio::spawn(run(listener, config, async {
                let _ = stopped.await;
            })));
        running.stops.push(stop);
        // Serving once the store is open (a coordinator connects before it serves).
        let http = intentdesk::tls::client(None)
            .expect("a TLS client")
            .build()
            .expect("an HTTP client");
        while !http
            .get(format!("{url}/healthz"))
            .send()
            .await
            .is_ok_and(|r| r.status().is_success())
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        running.urls.push(url);
    }
    running
}

/// Orders per second, from the first create until every order is committed.
async fn whole_orders(http: &reqwest::Client, urls: &[String]) -> f64 {
    let permits = Arc::new(Semaphore::new(AGENTS));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for n in 0..ORDERS {
        let permit = permits.clone().acquire_owned().await.expect("permit");
        let (http, urls) = (http.clone(), urls.to_vec());
        tasks.push(tokio::spawn(async move {
            whole_order(&http, &urls, n).await;
            drop(permit);
        }));
    }
    for t in tasks {
        t.await.expect("order");
    }
    while committed(http, &urls[0]).await < ORDERS {
        assert!(
            started.elapsed() < Duration::from_secs(600),
            "orders never all committed"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    ORDERS as f64 / started.elapsed().as_secs_f64()
}

/// Create latencies (ms, sorted) at a steady 500 per second, round the coordinators.
async fn steady_creates(http: &reqwest::Client, urls: &[String]) -> Vec<f64> {
    let mut ticker = tokio::time::interval(Duration::from_millis(2));
    let mut tasks = Vec::new();
    for n in 0..5_000u64 {
        ticker.tick().await;
        let http = http.clone();
        let url = urls[(n % urls.len() as u64) as usize].clone();
        tasks.push(tokio::spawn(async move {
            let t = Instant::now();
            create(&http, &url, n, "steady").await;
            t.elapsed().as_secs_f64() * 1000.0
        }));
    }
    let mut latencies = Vec::new();
    for t in tasks {
        latencies.push(t.await.expect("create"));
    }
    latencies.sort_by(f64::total_cmp);
    latencies
}

/// `-- reads`: list pages and charts over the large data set, PostgreSQL beside SQLite.
async fn reads(http: &reqwest::Client, sandbox: &str, sets: &[(&str, Location)]) {
    for (backend, database) in sets {
        let running = coordinators(database, sandbox, 1, READ_ONLY).await;
        let url = &running.urls[0];
        let started = Instant::now();
        let overview: serde_json::Value = http
            .get(format!(
                "{url}/v1/metrics/overview?at={}",
                reads::END_MS + 1
            ))
            .bearer_auth(TOKEN)
            .send()
            .await
            .expect("overview")
            .json()
            .await
            .expect("json");
        println!(
            "{backend}: first dashboard answer (loads the metric index of {} intents, {} attempts) in {:.1?}",
            overview["intents"],
            overview["attempts"],
            started.elapsed()
        );
        let lists = reads::time_gets(http, url, "/v1/intents", &reads::list_queries(), 39).await;
        let charts =
            reads::time_gets(http, url, "/v1/metrics/chart", &reads::chart_queries(), 20).await;
        reads::print_figures(&format!("{backend}: list page"), &lists);
        reads::print_figures(&format!("{backend}: chart"), &charts);
        running.stop().await;
    }
}

fn main() {
    let rounds: usize = std::env::args()
        .skip_while(|a| a != "rounds")
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(1);
    let Ok(admin) = std::env::var(backends::POSTGRES_ENV) else {
        eprintln!(
            "set {}: export {}=$(.ci/postgres start)",
            backends::POSTGRES_ENV,
            backends::POSTGRES_ENV
        );
        std::process::exit(2);
    };
    // Made before the runtime starts: the blocking PostgreSQL client runs on no async thread.
    let read_sets = std::env::args().any(|a| a == "reads").then(|| {
        [
            (
                "postgres",
                Location::Postgres(reads::postgres_data_set(&admin)),
            ),
            ("sqlite", Location::Sqlite(reads::sqlite_data_set())),
        ]
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let sandbox_listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let sandbox = format!("http://{}", sandbox_listener.local_addr().expect("addr"));
        let state = SandboxState::new("none".parse::<FaultSpec>().expect("spec"), None);
        tokio::spawn(intentdesk::sandbox::run(
            sandbox_listener,
            state,
            std::future::pending(),
        ));
        let http = intentdesk::tls::client(None)
            .expect("a TLS client")
            .pool_max_idle_per_host(256)
            .build()
            .expect("client");
        if let Some(sets) = read_sets {
            reads(&http, &sandbox, &sets).await;
            return;
        }
        for round in 1..=rounds {
            for (backend, fleet) in [
                ("sqlite", 1),
                ("postgres", 1),
                ("postgres", 2),
                ("postgres", 3),
            ] {
                let dir = tempfile::tempdir().expect("temp dir");
                let database = match backend {
                    "sqlite" => Location::Sqlite(dir.path().join("fleet.sqlite")),
                    _ => Location::Postgres(backends::fresh_postgres().expect("a test server")),
                };
                let running = coordinators(&database, &sandbox, fleet, ORDERING).await;
                let orders = whole_orders(&http, &running.urls).await;
                let latencies = steady_creates(&http, &running.urls).await;
                println!(
                    "round {round}: {backend} x{fleet}: whole orders {orders:.0}/s; \
                     create at 500/s p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
                    percentile(&latencies, 50.0),
                    percentile(&latencies, 99.0),
                    latencies[latencies.len() - 1],
                );
                running.stop().await;
            }
        }
    });
}
