//! What the read benchmarks share: the large data set (1,060,000 intents, about five
//! million attempts, over 30 days), the list pages and charts asked of it, and the loop
//! that times them over HTTP. Included by path next to `orders.rs`
//! (`#[path = "support/reads.rs"] mod reads;`).

use std::path::PathBuf;
use std::time::Instant;

use intentdesk::store::bulk::BulkSpec;
use intentdesk::store::{Durability, Location, Store};

use super::orders::{TOKEN, percentile};

/// The data set's last instant; charts end just after it.
pub const END_MS: u64 = 1_764_489_600_000;

/// The data set: 1,060,000 intents over 30 days, 5,025,888 attempts (seed 5).
pub fn data_spec() -> BulkSpec {
    BulkSpec {
        intents: 1_060_000,
        mean_attempts: 5.0,
        span_ms: 30 * 24 * 3_600_000,
        end_ms: END_MS,
        seed: 5,
    }
}

/// The data set in a SQLite file under `target/bench-data/`, generated the first time
/// (about a minute).
pub fn sqlite_data_set() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-data");
    std::fs::create_dir_all(&dir).expect("bench data folder");
    let path = dir.join("dashboard-5m.sqlite");
    if !path.exists() {
        let partial = dir.join("dashboard-5m.partial.sqlite");
        let _ = std::fs::remove_file(&partial);
        generate(&Location::Sqlite(partial.clone()));
        std::fs::rename(&partial, &path).expect("rename");
        for suffix in ["-wal", "-shm"] {
            let _ = std::fs::remove_file(dir.join(format!("dashboard-5m.partial.sqlite{suffix}")));
        }
    }
    path
}

/// The data set in the database `intentdesk_bench_5m` on the PostgreSQL server at `admin`
/// (a URL with the right to create databases), generated the first time (some minutes); the
/// database's URL. A database left half-made by an interrupted run is made again.
pub fn postgres_data_set(admin: &str) -> String {
    const NAME: &str = "intentdesk_bench_5m";
    let mut url = reqwest::Url::parse(admin).expect("a URL");
    url.set_path(&format!("/{NAME}"));
    let url = url.to_string();
    let connect = |url: &str| {
        postgres::Client::connect(url, postgres::NoTls)
            .unwrap_or_else(|e| panic!("{url} does not answer: {e}"))
    };
    let mut server = connect(admin);
    let exists = !server
        .query("SELECT 1 FROM pg_database WHERE datname = $1", &[&NAME])
        .expect("list databases")
        .is_empty();
    let complete = exists
        && connect(&url)
            .query_one("SELECT to_regclass('bench_data_complete') IS NOT NULL", &[])
            .expect("look for the marker")
            .get::<_, bool>(0);
    if !complete {
        // Two statements apart: neither may run inside a transaction block.
        for sql in [
            format!("DROP DATABASE IF EXISTS {NAME}"),
            format!("CREATE DATABASE {NAME}"),
        ] {
            server.batch_execute(&sql).expect("make the bench database");
        }
        generate(&Location::Postgres(url.clone()));
        connect(&url)
            .batch_execute("CREATE TABLE bench_data_complete ()")
            .expect("mark the data set complete");
    }
    url
}

fn generate(at: &Location) {
    let mut store = Store::open_at(at, Durability::ProcessCrash).expect("store");
    let started = Instant::now();
    let stats = store.generate_bulk(&data_spec()).expect("generate");
    eprintln!(
        "generated {} intents, {} attempts at {at} in {:.1?}",
        stats.intents,
        stats.attempts,
        started.elapsed()
    );
}

/// The list pages timed: the console's filter mixes.
pub const LIST_MIXES: &[&str] = &[
    "limit=100",
    "tenant=acme&provider=anthropic&state=committed&limit=100",
    "state=indeterminate&sort=indeterminate_since&limit=100",
    "min_attempts=6&sort=-attempts&limit=100",
    "tenant=globex&tier=financial&limit=100",
    "tenant=acme&sort=deadline&limit=100",
    "tenant=initech&provider=openai&state=indeterminate&sort=indeterminate_since&limit=100",
    "tenant=umbrella&operation=payment.initiate&sort=-attempts&limit=100",
    // A release with no intents yet (just deployed, or mistyped).
    "release=r9&limit=100",
];

/// The charts timed, as (name, query): the dashboard's whole 30-day window in 300 buckets.
pub fn charts() -> Vec<(&'static str, String)> {
    let to = END_MS + 1;
    let window = |metric: &str, group_by: &str| {
        format!("metric={metric}&group_by={group_by}&buckets=300&to={to}")
    };
    vec![
        ("attempts_by_provider_30d", window("attempts", "provider")),
        (
            "amplification_p99_by_tenant_30d",
            window("amplification_p99", "tenant"),
        ),
        (
            "indeterminate_by_operation_30d",
            window("indeterminate", "operation"),
        ),
        ("late_results_30d", window("late_results", "none")),
        (
            "attempts_by_provider_30d_acme_only",
            format!("metric=attempts&group_by=provider&tenant=acme&to={to}"),
        ),
    ]
}

/// Latencies of one kind of request (ms, sorted).
pub struct Timed {
    pub name: String,
    pub ms: Vec<f64>,
}

impl Timed {
    pub fn p(&self, p: f64) -> f64 {
        percentile(&self.ms, p)
    }
}

/// `GET {url}{path}?{query}` for each of `queries`, `rounds` times round them (a first,
/// untimed round warms caches): each query's latencies, and all of them together last.
pub async fn time_gets(
    http: &reqwest::Client,
    url: &str,
    path: &str,
    queries: &[(String, String)],
    rounds: usize,
) -> Vec<Timed> {
    let mut per: Vec<Timed> = queries
        .iter()
        .map(|(name, _)| Timed {
            name: name.clone(),
            ms: Vec::new(),
        })
        .collect();
    for round in 0..=rounds {
        for (i, (_, query)) in queries.iter().enumerate() {
            let t = Instant::now();
            let r = http
                .get(format!("{url}{path}?{query}"))
                .bearer_auth(TOKEN)
                .send()
                .await
                .expect("request");
            assert!(r.status().is_success(), "{query}: {}", r.status());
            let _ = r.bytes().await.expect("body");
            if round > 0 {
                per[i].ms.push(t.elapsed().as_secs_f64() * 1000.0);
            }
        }
    }
    let mut all = Timed {
        name: "all".into(),
        ms: per.iter().flat_map(|t| t.ms.iter().copied()).collect(),
    };
    for t in per.iter_mut().chain(std::iter::once(&mut all)) {
        t.ms.sort_by(f64::total_cmp);
    }
    per.push(all);
    per
}

/// Print what `time_gets` measured: all of it under `label`, then each query.
pub fn print_figures(label: &str, timed: &[Timed]) {
    let (all, each) = timed.split_last().expect("all");
    println!(
        "{label}: p50 {:.1} ms, p95 {:.1} ms, max {:.1} ms ({} requests, {} kinds)",
        all.p(50.0),
        all.p(95.0),
        all.ms[all.ms.len() - 1],
        all.ms.len(),
        each.len()
    );
    for one in each {
        println!(
            "  {}: p50 {:.1} ms, p95 {:.1} ms",
            one.name,
            one.p(50.0),
            one.p(95.0)
        );
    }
}

/// The list mixes as `time_gets` takes them.
pub fn list_queries() -> Vec<(String, String)> {
    LIST_MIXES
        .iter()
        .map(|q| (q.to_string(), q.to_string()))
        .collect()
}

/// The charts as `time_gets` takes them.
pub fn chart_queries() -> Vec<(String, String)> {
    charts()
        .into_iter()
        .map(|(name, q)| (name.to_string(), q))
        .collect()
}
