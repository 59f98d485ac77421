//! Coordinator speed over real HTTP on loopback, with a real SQLite file and a fault-free
//! sandbox as the fast downstream.
//!
//! Run: `cargo bench --bench coordinator` (release profile). Prints:
//! 1. throughput of whole orders: create -> authorize -> dispatch -> receipt (committed);
//! 2. create latency (p50, p99) at a steady 500 creates per second;
//! 3. list page latency (p50, p95) on the million-intent data set, if it exists
//!    (`cargo bench --bench store` generates it under target/bench-data/).
//!
//! `-- durability` and `-- list` run one part alone; `-- batch` compares creating intents
//! one a request with creating them in batches (`POST /v1/intents/batch`); `-- bodies` times
//! reading an order's request bodies.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use intentdesk::coordinator::{Config, run, token_sha256};
use intentdesk::sandbox::{FaultSpec, SandboxState};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

#[path = "support/orders.rs"]
mod orders;
use orders::{TOKEN, committed, create, order, percentile, whole_order};
#[allow(dead_code)]
#[path = "support/reads.rs"]
mod reads;
use reads::{list_queries, print_figures, time_gets};

async fn coordinator(db: &Path, sandbox: &str, reconcile_interval_ms: u64) -> String {
    coordinator_with(db, sandbox, reconcile_interval_ms, "power_loss", 1).await
}

async fn coordinator_with(
    db: &Path,
    sandbox: &str,
    reconcile_interval_ms: u64,
    durability: &str,
    reconcile_batch: u32,
) -> String {
    let config = format!(
        "listen = \"127.0.0.1:0\"\ndatabase = \"{}\"\ndurability = \"{durability}\"\n\
         reconcile_interval_ms = {reconcile_interval_ms}\nreconcile_batch = {reconcile_batch}\n\
         [[tokens]]\nname = \"bench\"\ntoken_sha256 = \"{}\"\nrole = \"admin\"\ntenants = [\"*\"]\nmay_approve_own = true\n\
         [[connectors]]\nname = \"erp\"\nbase_url = \"{sandbox}\"\nkey_retention_secs = 3600\ntimeout_ms = 2000\n\
         operations = {{ \"purchase_order.create\" = \"purchase-orders\" }}\n",
        db.display(),
        token_sha256(TOKEN)
    );
    let config = Config::parse(&config, "bench").expect("config");
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    tokio::spawn(run(listener, config, std::future::pending()));
    url
}

/// Whole orders with 64 agents in parallel: orders per second until all are committed.
async fn whole_orders(http: &reqwest::Client, url: &str, orders: u64) -> (f64, f64) {
    let permits = Arc::new(Semaphore::new(64));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for n in 0..orders {
        let permit = permits.clone().acquire_owned().await.expect("permit");
        let (http, url) = (http.clone(), url.to_string());
        tasks.push(tokio::spawn(async move {
            whole_order(&http, std::slice::from_ref(&url), n).await;
            drop(permit);
        }));
    }
    for t in tasks {
        t.await.expect("order");
    }
    let sent = started.elapsed();
    while committed(http, url).await < orders {
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "orders never all committed"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    (sent.as_secs_f64(), started.elapsed().as_secs_f64())
}

/// Create latencies (ms, sorted) at a steady `per_sec` for `count` creates.
async fn steady_creates(
    http: &reqwest::Client,
    url: &str,
    per_sec: u64,
    count: u64,
    tag: &str,
) -> Vec<f64> {
    let mut ticker = tokio::time::interval(Duration::from_micros(1_000_000 / per_sec));
    let mut tasks = Vec::new();
    for n in 0..count {
        ticker.tick().await;
        let (http, url, tag) = (http.clone(), url.to_string(), tag.to_string());
        tasks.push(tokio::spawn(async move {
            let t = Instant::now();
            create(&http, &url, n, &tag).await;
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

/// Creates from `callers` in a closed loop for `secs`: the latencies (ms, sorted).
async fn closed_loop_creates(
    http: &reqwest::Client,
    url: &str,
    callers: u64,
    secs: u64,
) -> Vec<f64> {
    let until = Instant::now() + Duration::from_secs(secs);
    let mut tasks = Vec::new();
    for caller in 0..callers {
        let (http, url) = (http.clone(), url.to_string());
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut n = 0u64;
            while Instant::now() < until {
                let t = Instant::now();
                create(&http, &url, n, &format!("loop{caller}")).await;
                latencies.push(t.elapsed().as_secs_f64() * 1000.0);
                n += 1;
            }
            latencies
        }));
    }
    let mut latencies = Vec::new();
    for t in tasks {
        latencies.extend(t.await.expect("caller"));
    }
    latencies.sort_by(f64::total_cmp);
    latencies
}

/// One durability round's figures.
struct Round {
    durability: &'static str,
    orders_per_sec: f64,
    steady_p50: f64,
    steady_p99: f64,
    loop_per_sec: f64,
    loop_p50: f64,
    loop_p99: f64,
}

/// `-- durability`: whole orders and create latency with `power_loss` and with
/// `process_crash`, alternating on fresh databases, so the cost of syncing every group
/// commit is a ratio from one run.
async fn durability_cost(http: &reqwest::Client, sandbox: &str) {
    let mut rounds = Vec::new();
    for round in 0..3 {
        for durability in ["power_loss", "process_crash"] {
            let dir = tempfile::tempdir().expect("temp dir");
            let db = dir.path().join("bench.sqlite");
            let url = coordinator_with(&db, sandbox, 1_000, durability, 1).await;
            let (_, all) = whole_orders(http, &url, 6_000).await;
            let steady = steady_creates(http, &url, 500, 5_000, "lat").await;
            let closed = closed_loop_creates(http, &url, 32, 10).await;
            let r = Round {
                durability,
                orders_per_sec: 6_000.0 / all,
                steady_p50: percentile(&steady, 50.0),
                steady_p99: percentile(&steady, 99.0),
                loop_per_sec: closed.len() as f64 / 10.0,
                loop_p50: percentile(&closed, 50.0),
                loop_p99: percentile(&closed, 99.0),
            };
            println!(
                "round {round} {durability}: whole orders {:.0}/s; creates at 500/s p50 {:.2} ms p99 {:.2} ms; \
                 32 callers closed loop {:.0}/s p50 {:.2} ms p99 {:.2} ms",
                r.orders_per_sec,
                r.steady_p50,
                r.steady_p99,
                r.loop_per_sec,
                r.loop_p50,
                r.loop_p99
            );
            rounds.push(r);
        }
    }
    let median = |d: &str, f: fn(&Round) -> f64| {
        let mut v: Vec<f64> = rounds.iter().filter(|r| r.durability == d).map(f).collect();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let pl = median("power_loss", |r| r.orders_per_sec);
    let pc = median("process_crash", |r| r.orders_per_sec);
    println!(
        "median whole orders: power_loss {pl:.0}/s, process_crash {pc:.0}/s => power_loss keeps {:.0} %",
        100.0 * pl / pc
    );
    for d in ["power_loss", "process_crash"] {
        println!(
            "median {d}: creates at 500/s p50 {:.2} ms p99 {:.2} ms; closed loop {:.0}/s p50 {:.2} ms p99 {:.2} ms",
            median(d, |r| r.steady_p50),
            median(d, |r| r.steady_p99),
            median(d, |r| r.loop_per_sec),
            median(d, |r| r.loop_p50),
            median(d, |r| r.loop_p99)
        );
    }
}

/// `-- batch`: intents created a second by callers in a closed loop for 10 s: 32 callers one
/// intent a request (`POST /v1/intents`) against 24 callers sending batches of 10 and 2
/// sending batches of 100 (`POST /v1/intents/batch`; the callers share one token, and a batch
/// takes one of its token's places for each intent: at most 240 and 200 in progress, within
/// the default `max_concurrent_per_token` of 256), each on a fresh database, three rounds in
/// turn.
async fn batch_ingest(http: &reqwest::Client, sandbox: &str) {
    const SECS: u64 = 10;
    for round in 0..3 {
        for (size, callers) in [(1u64, 32u64), (10, 24), (100, 2)] {
            let dir = tempfile::tempdir().expect("temp dir");
            let url = coordinator(&dir.path().join("bench.sqlite"), sandbox, 1_000).await;
            let until = Instant::now() + Duration::from_secs(SECS);
            let mut tasks = Vec::new();
            for caller in 0..callers {
                let (http, url) = (http.clone(), url.clone());
                tasks.push(tokio::spawn(async move {
                    let (mut latencies, mut n) = (Vec::new(), 0u64);
                    while Instant::now() < until {
                        let t = Instant::now();
                        if size == 1 {
                            create(&http, &url, n, &format!("c{caller}")).await;
                        } else {
                            let intents: Vec<serde_json::Value> = (n..n + size)
                                .map(|k| {
                                    let mut item = order(k);
                                    item["idempotency_key"] = format!("c{caller}-{k}").into();
                                    item
                                })
                                .collect();
                            let answer: serde_json::Value = http
                                .post(format!("{url}/v1/intents/batch"))
                                .bearer_auth(TOKEN)
                                .json(&serde_json::json!({ "intents": intents }))
                                .send()
                                .await
                                .expect("batch")
                                .json()
                                .await
                                .expect("json");
                            let created = answer["results"]
                                .as_array()
                                .map(|r| r.iter().filter(|x| x["status"] == 201).count());
                            assert_eq!(created, Some(size as usize), "{answer}");
                        }
                        latencies.push(t.elapsed().as_secs_f64() * 1000.0);
                        n += size;
                    }
                    (latencies, n)
                }));
            }
            let (mut latencies, mut intents) = (Vec::new(), 0u64);
            for t in tasks {
                let (l, n) = t.await.expect("caller");
                latencies.extend(l);
                intents += n;
            }
            latencies.sort_by(f64::total_cmp);
            println!(
                "round {round}, {callers} callers, {size} an request: {:.0} intents/s ({} requests), a request p50 {:.2} ms p99 {:.2} ms",
                intents as f64 / SECS as f64,
                latencies.len(),
                percentile(&latencies, 50.0),
                percentile(&latencies, 99.0)
            );
        }
    }
}

/// `-- bodies`: what reading an order's request bodies costs, each read as the coordinator
/// reads it and read through its fields alone (as every body was before those with no array
/// were read straight), in ns a body at the median of seven rounds.
fn body_parsing() {
    use intentdesk::coordinator::body::{parse_body_with, parse_fields_with, parse_object};
    use intentdesk::wire::{Authorize, CreateIntent, ReceiptDelivery};
    fn time<T>(body: &[u8], read: impl Fn(&[u8]) -> T) -> f64 {
        let rounds = 200_000;
        let mut medians: Vec<f64> = (0..7)
            .map(|_| {
                let began = Instant::now();
                for _ in 0..rounds {
                    std::hint::black_box(read(std::hint::black_box(body)));
                }
                began.elapsed().as_nanos() as f64 / f64::from(rounds)
            })
            .collect();
        medians.sort_by(f64::total_cmp);
        medians[3]
    }
    fn both<T: serde::de::DeserializeOwned>(name: &str, body: &[u8], free: fn(&str) -> bool) {
        let read = time(body, |b| parse_body_with::<T>(b, free).expect("read"));
        let fields = time(body, |b| {
            parse_fields_with::<T>(parse_object(b).expect("an object"), free).expect("read")
        });
        println!(
            "{name}: {read:.0} ns as read, {fields:.0} ns through its fields ({} bytes)",
            body.len()
        );
    }
    let create = br#"{"tenant":"tenant-7","actor":"load","purpose":"benchmark","operation":"purchase_order.create","tool":"erp","consequence":"write","connector":"erp","deadline_secs":300,"max_attempts":3,"release_id":"bench","locale":"en-US","args":{"title":"intent 12345","priority":"1","ref":"m4x2k9-12345"}}"#;
    both::<CreateIntent>("create", create, |f| f == "args");
    both::<Authorize>(
        "authorize",
        br#"{"authorization_version":"v1","approver":"load"}"#,
        |_| false,
    );
    let webhook = br#"{"event_id":"sbx-3f9a-123","action_key":"ak_01kb0000000000000000000001","resource":"purchase_order","downstream_id":"PO-000123","status":"created","occurred_at_ms":1796688000000}"#;
    both::<ReceiptDelivery>("webhook", webhook, |f| {
        !["event_id", "action_key", "downstream_id", "status"].contains(&f)
    });
}

fn main() {
    if std::env::args().any(|a| a == "bodies") {
        body_parsing();
        return;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let dir = tempfile::tempdir().expect("temp dir");
        let sandbox_listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let sandbox = format!("http://{}", sandbox_listener.local_addr().expect("addr"));
        let state = SandboxState::new("none".parse::<FaultSpec>().expect("spec"), None);
        tokio::spawn(intentdesk::sandbox::run(sandbox_listener, state, std::future::pending()));
        let url = coordinator(&dir.path().join("bench.sqlite"), &sandbox, 1_000).await;
        let http = intentdesk::tls::client(None).expect("a TLS client").pool_max_idle_per_host(256).build().expect("client");

        // `cargo bench --bench coordinator -- list` measures only the list pages;
        // `-- durability` only the cost of syncing every commit.
        let only_list = std::env::args().any(|a| a == "list");
        if std::env::args().any(|a| a == "batch") {
            batch_ingest(&http, &sandbox).await;
            return;
        }
        if std::env::args().any(|a| a == "durability") {
            durability_cost(&http, &sandbox).await;
            return;
        }

        if !only_list {
        // 1. Throughput of whole orders with 64 agents in parallel.
        let orders: u64 = 6_000;
        let (sent, all) = whole_orders(&http, &url, orders).await;
        println!(
            "whole orders: {orders} created, authorized and dispatched in {sent:.2} s; all committed after {all:.2} s \
             => {:.0} orders/s end to end",
            orders as f64 / all
        );

        // 2. Create latency at a steady 500 per second for 10 seconds.
        let latencies = steady_creates(&http, &url, 500, 5_000, "lat").await;
        println!(
            "create latency at 500/s: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms ({} creates)",
            percentile(&latencies, 50.0),
            percentile(&latencies, 99.0),
            latencies[latencies.len() - 1],
            latencies.len()
        );
        }

        // 3. List pages on a million intents.
        let big = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-data/store-1m.sqlite");
        if big.exists() {
            // No reconciler: the data set's open intents are long past their deadlines,
            // and would be expired one by one while the pages are timed.
            let url = coordinator_with(&big, &sandbox, 86_400_000, "power_loss", 0).await;
            let timed = time_gets(&http, &url, "/v1/intents", &list_queries(), 39).await;
            print_figures("list page on 1,000,000 intents", &timed);
        } else {
            println!("list page: skipped, run `cargo bench --bench store` first to generate the data set");
        }
    });
}
