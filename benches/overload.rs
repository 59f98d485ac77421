//! The coordinator under more ingest than it can commit, and HTTPS beside HTTP.
//!
//! Run: `taskset -c 1 cargo bench --bench overload` (release profile). The coordinator runs
//! as its own process (the `intentdesk` binary, SQLite, `power_loss`), pinned to CPU 0 when
//! `taskset` is there; the sandbox and the load run in this one, on CPU 1 when started as
//! above, so the load has a core of its own and the coordinator's memory is its own. Prints:
//! 1. the unloaded create capacity: 32 callers in a closed loop for 10 s;
//! 2. creates offered open loop at ten times that for 30 s (or as many as the load's core
//!    can send, said as such): creates accepted per second against the capacity, every
//!    other answer by status and whether it carried `Retry-After`, an operator's list page
//!    p95 meanwhile (on the operators' port, `operator_listen`, with a token of its own), the coordinator's resident memory before, at its peak and after;
//! 3. whole orders (create, authorize, dispatch, until committed) over HTTP and over HTTPS,
//!    one after the other in the same run.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use intentdesk::coordinator::token_sha256;
use intentdesk::sandbox::{FaultSpec, SandboxState};
use tokio::net::TcpListener;
use tokio::sync::{Mutex, Semaphore};

#[path = "support/orders.rs"]
mod orders;
use orders::{TOKEN, committed, order, percentile, whole_order};

/// The operator's own token: the agents' flood counts against theirs, not this one.
const OPERATOR: &str = "bench-operator-token";

/// Requests the load keeps outstanding at most (`INTENTDESK_OVERLOAD_OUTSTANDING`, default
/// 2,000: under the coordinator's 2,048 connections, so every request gets an HTTP answer);
/// more offered at once are counted as not sent (the load's own limit, not the answer).
fn max_outstanding() -> usize {
    std::env::var("INTENTDESK_OVERLOAD_OUTSTANDING")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2_000)
}

/// Whether to pin the coordinator to CPU 0 and the load to the rest
/// (`INTENTDESK_OVERLOAD_PIN=0` to share both cores).
fn pin() -> bool {
    std::env::var("INTENTDESK_OVERLOAD_PIN").map_or(true, |v| v != "0")
}

struct Child {
    process: std::process::Child,
    url: String,
    /// Its operators' port (`operator_listen`).
    operator_url: String,
}

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// The coordinator binary on its own port; `tls` is `(cert, key)` for HTTPS.
fn start_coordinator(dir: &Path, sandbox: &str, tls: Option<(&Path, &Path)>) -> Child {
    let (port, operator_port) = (free_port(), free_port());
    let mut config = format!(
        "listen = \"127.0.0.1:{port}\"\noperator_listen = \"127.0.0.1:{operator_port}\"\ndatabase = \"{}\"\ndurability = \"power_loss\"\n\
         reconcile_interval_ms = 2000\n\
         [[tokens]]\nname = \"bench\"\ntoken_sha256 = \"{}\"\nrole = \"admin\"\ntenants = [\"*\"]\nmay_approve_own = true\n\
         [[tokens]]\nname = \"operator\"\ntoken_sha256 = \"{}\"\nrole = \"viewer\"\ntenants = [\"*\"]\n\
         [[connectors]]\nname = \"erp\"\nbase_url = \"{sandbox}\"\nkey_retention_secs = 3600\ntimeout_ms = 2000\n\
         operations = {{ \"purchase_order.create\" = \"purchase-orders\" }}\n",
        dir.join(format!("overload-{port}.sqlite")).display(),
        token_sha256(TOKEN),
        token_sha256(OPERATOR)
    );
    if let Some((cert, key)) = tls {
        config.push_str(&format!(
            "[tls]\ncert_file = '{}'\nkey_file = '{}'\n",
            cert.display(),
            key.display()
        ));
    }
    let path = dir.join(format!("coordinator-{port}.toml"));
    std::fs::write(&path, config).expect("config");
    let binary = env!("CARGO_BIN_EXE_intentdesk");
    let pinned = pin()
        && std::process::Command::new("taskset")
            .arg("-V")
            .output()
            .is_ok();
    let mut command = if pinned {
        let mut c = std::process::Command::new("taskset");
        c.args(["-c", "0", binary]);
        c
    } else {
        std::process::Command::new(binary)
    };
    let process = command
        .args(["coordinator", "--config"])
        .arg(&path)
        .env("RUST_LOG", "warn")
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("start the coordinator");
    let scheme = if tls.is_some() { "https" } else { "http" };
    Child {
        process,
        url: format!("{scheme}://localhost:{port}"),
        operator_url: format!("{scheme}://localhost:{operator_port}"),
    }
}

fn rss_mb(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

async fn until_up(http: &reqwest::Client, url: &str) {
    let started = Instant::now();
    while http
        .get(format!("{url}/healthz"))
        .send()
        .await
        .map(|r| !r.status().is_success())
        .unwrap_or(true)
    {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{url} never came up"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn create_status(http: &reqwest::Client, url: &str, key: String, n: u64) -> (u16, bool) {
    match http
        .post(format!("{url}/v1/intents"))
        .bearer_auth(TOKEN)
        .header("Idempotency-Key", key)
        .json(&order(n))
        .send()
        .await
    {
        Ok(response) => (
            response.status().as_u16(),
            response.headers().contains_key("retry-after"),
        ),
        Err(_) => (0, false),
    }
}

/// Creates per second with `callers` in a closed loop for `span`.
async fn capacity(http: &reqwest::Client, url: &str, callers: u64, span: Duration) -> f64 {
    let done = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..callers {
        let (http, url, done) = (http.clone(), url.to_string(), done.clone());
        tasks.push(tokio::spawn(async move {
            let mut n = 0;
            while started.elapsed() < span {
                let (status, _) = create_status(&http, &url, format!("cap-{c}-{n}"), n).await;
                if status == 201 {
                    done.fetch_add(1, Ordering::Relaxed);
                }
                n += 1;
            }
        }));
    }
    for t in tasks {
        t.await.expect("caller");
    }
    done.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64()
}

#[derive(Default)]
struct Answers {
    by_status: BTreeMap<(u16, bool), u64>,
    not_sent: u64,
}

/// Offer `rate` creates per second for `span`, open loop, while an operator reads a list
/// page every 100 ms; the answers, the list latencies and the peak memory of `pid`.
async fn overload(
    http: &reqwest::Client,
    url: &str,
    operator_url: &str,
    rate: f64,
    span: Duration,
    pid: u32,
) -> (Answers, Vec<f64>, f64, f64) {
    let answers = Arc::new(Mutex::new(Answers::default()));
    let outstanding = Arc::new(Semaphore::new(max_outstanding()));
    let started = Instant::now();
    let reader = {
        let (http, url) = (http.clone(), operator_url.to_string());
        tokio::spawn(async move {
            let mut times = Vec::new();
            let mut peak: f64 = 0.0;
            while started.elapsed() < span {
                let t = Instant::now();
                let r = http
                    .get(format!("{url}/v1/intents?limit=100"))
                    .bearer_auth(OPERATOR)
                    .send()
                    .await;
                if let Ok(r) = r
                    && r.status().is_success()
                {
                    let _ = r.bytes().await;
                    times.push(t.elapsed().as_secs_f64() * 1000.0);
                }
                peak = peak.max(rss_mb(pid));
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            (times, peak)
        })
    };
    let mut sent = 0u64;
    let mut tick = tokio::time::interval(Duration::from_millis(1));
    let mut tasks = tokio::task::JoinSet::new();
    while started.elapsed() < span {
        tick.tick().await;
        let due = (started.elapsed().as_secs_f64() * rate) as u64;
        while sent < due {
            sent += 1;
            let Ok(permit) = outstanding.clone().try_acquire_owned() else {
                answers.lock().await.not_sent += 1;
                continue;
            };
            let (http, url, answers) = (http.clone(), url.to_string(), answers.clone());
            let n = sent;
            tasks.spawn(async move {
                let answer = create_status(&http, &url, format!("over-{n}"), n).await;
                *answers.lock().await.by_status.entry(answer).or_default() += 1;
                drop(permit);
            });
        }
        while tasks.try_join_next().is_some() {}
    }
    let offered_for = started.elapsed().as_secs_f64();
    while tasks.join_next().await.is_some() {}
    let (mut times, peak) = reader.await.expect("reader");
    times.sort_by(f64::total_cmp);
    let answers = Arc::try_unwrap(answers).ok().expect("answers").into_inner();
    (answers, times, peak, offered_for)
}

async fn whole_orders_per_sec(http: &reqwest::Client, url: &str, orders: u64) -> f64 {
    let before = committed(http, url).await;
    let permits = Arc::new(Semaphore::new(32));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for n in 0..orders {
        let permit = permits.clone().acquire_owned().await.expect("permit");
        let (http, url) = (http.clone(), url.to_string());
        tasks.push(tokio::spawn(async move {
            whole_order(&http, std::slice::from_ref(&url), 1_000_000 + n).await;
            drop(permit);
        }));
    }
    for t in tasks {
        t.await.expect("order");
    }
    while committed(http, url).await < before + orders {
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "orders never committed"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    orders as f64 / started.elapsed().as_secs_f64()
}

/// A CA and a certificate for localhost, written to `dir`: (ca, cert, key).
fn pki(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf, std::path::PathBuf) {
    let ca_key = rcgen::KeyPair::generate().expect("key");
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca_pem = ca.self_signed(&ca_key).expect("CA").pem();
    let issuer = rcgen::Issuer::new(ca, ca_key);
    let key = rcgen::KeyPair::generate().expect("key");
    let params = rcgen::CertificateParams::new(vec!["localhost".to_string()]).expect("params");
    let cert = params.signed_by(&key, &issuer).expect("cert");
    let write = |name: &str, text: String| {
        let p = dir.join(name);
        std::fs::write(&p, text).expect("write");
        p
    };
    (
        write("ca.pem", ca_pem),
        write("server.crt", cert.pem()),
        write("server.key", key.serialize_pem()),
    )
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let dir = tempfile::tempdir().expect("dir");
        let (ca, cert, key) = pki(dir.path());
        let sandbox = SandboxState::new("none".parse::<FaultSpec>().expect("spec"), None);
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let sandbox_url = format!("http://{}", listener.local_addr().expect("addr"));
        tokio::spawn(intentdesk::sandbox::run(listener, sandbox, std::future::pending()));
        let http = intentdesk::tls::client(Some(&ca))
            .expect("client")
            .no_proxy()
            .pool_max_idle_per_host(max_outstanding())
            .timeout(Duration::from_secs(60))
            .build()
            .expect("client");

        let plain = start_coordinator(dir.path(), &sandbox_url, None);
        until_up(&http, &plain.url).await;
        let pid = plain.process.id();
        let capacity = capacity(&http, &plain.url, 32, Duration::from_secs(10)).await;
        println!("unloaded create capacity: {capacity:.0}/s (32 callers, closed loop, 10 s)");
        let rss_before = rss_mb(pid);
        let rate = capacity * 10.0;
        let span = Duration::from_secs(30);
        let (answers, list, peak, offered_for) = overload(&http, &plain.url, &plain.operator_url, rate, span, pid).await;
        let accepted = answers.by_status.get(&(201, false)).copied().unwrap_or(0)
            + answers.by_status.get(&(201, true)).copied().unwrap_or(0);
        let answered: u64 = answers.by_status.values().sum();
        println!(
            "overload: offered {rate:.0}/s for {offered_for:.1} s; answered {answered}, \
             not sent by the load (over {} outstanding) {}",
            max_outstanding(),
            answers.not_sent
        );
        let accepted_rate = accepted as f64 / offered_for;
        println!(
            "  accepted {accepted} ({accepted_rate:.0}/s, {:.0} % of capacity)",
            100.0 * accepted_rate / capacity
        );
        for ((status, retry_after), n) in &answers.by_status {
            println!("  status {status}, Retry-After {retry_after}: {n}");
        }
        if !list.is_empty() {
            println!(
                "  operator list page meanwhile: p50 {:.1} ms, p95 {:.1} ms, max {:.1} ms ({} reads)",
                percentile(&list, 50.0),
                percentile(&list, 95.0),
                list.last().copied().unwrap_or(0.0),
                list.len()
            );
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
        println!(
            "  coordinator memory: {rss_before:.0} MB before, {peak:.0} MB at its peak, {:.0} MB after",
            rss_mb(pid)
        );
        drop(plain);

        let http_run = start_coordinator(dir.path(), &sandbox_url, None);
        until_up(&http, &http_run.url).await;
        let over_http = whole_orders_per_sec(&http, &http_run.url, 5_000).await;
        drop(http_run);
        let https_run = start_coordinator(dir.path(), &sandbox_url, Some((&cert, &key)));
        until_up(&http, &https_run.url).await;
        let over_https = whole_orders_per_sec(&http, &https_run.url, 5_000).await;
        drop(https_run);
        println!(
            "whole orders, 32 agents, 5,000 each: HTTP {over_http:.0}/s, HTTPS {over_https:.0}/s \
             ({:.2}x)",
            over_https / over_http
        );
    });
}
