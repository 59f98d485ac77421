//! Several coordinators on one PostgreSQL database, over real HTTP with the sandbox
//! downstream: any coordinator answers any request, a command through one applies at all,
//! the change feed reaches every coordinator's event stream and dashboard, and a database
//! that goes away mid-run is reported, never answered as if written. Each test passes after
//! one line when no test server is named (`INTENTDESK_TEST_POSTGRES`).

use std::time::{Duration, Instant};

use intentdesk::clock::{Clock, Entropy, OsEntropy, SystemClock};
use intentdesk::domain::CommandId;
use intentdesk::sandbox::{SandboxState, WebhookTarget};
use intentdesk::store::postgres::schema::WAITING_FOR_A_MIGRATION;
use intentdesk::store::{Durability, Location, StoreError};
use intentdesk::wire::metrics::{ChartMetric, GroupBy};
use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::net::TcpListener;

mod common;
use common::backends::{Backend, fresh_postgres};
use common::deploy::{self, Setup, Token};

const ADMIN: &str = "fleet-admin-token";
const AGENT: &str = "fleet-agent-token";
const ERP: &str = "fleet-erp-connector-token";
/// Guards against a hang; never a stand-in for synchronisation.
const PATIENCE: Duration = Duration::from_secs(30);
const POLL: Duration = Duration::from_millis(25);

/// Two coordinators on one database and a sandbox whose receipts go to the first.
struct Fleet {
    a: String,
    b: String,
    sandbox: SandboxState,
    http: reqwest::Client,
    _coordinators: Vec<deploy::Coordinator>,
    _sandbox: deploy::Sandbox,
    _dir: tempfile::TempDir,
}

async fn fleet(url: String) -> Fleet {
    let _ = tracing_subscriber::fmt().with_test_writer().try_init();
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let a = format!("http://{}", listener.local_addr().expect("addr"));
    let webhook = WebhookTarget {
        url: format!("{a}/v1/receipts/erp").parse().expect("URL"),
        token: Some(ERP.into()),
    };
    let downstream = deploy::sandbox("none", Some(webhook), Some(5)).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let tokens = || {
        vec![
            Token::all_tenants("admin", ADMIN),
            Token::all_tenants("agent", AGENT),
            Token::erp_connector(ERP),
        ]
    };
    let backend = Backend::Postgres(url);
    let first = deploy::Coordinator::serve(
        listener,
        &Setup::on(&backend, dir.path(), &downstream.url, tokens()),
    );
    let second =
        deploy::Coordinator::start(&Setup::on(&backend, dir.path(), &downstream.url, tokens()))
            .await;
    // Both have opened the database (a coordinator connects before it serves).
    let http = intentdesk::tls::client(None)
        .expect("a TLS client")
        .no_proxy()
        .timeout(PATIENCE)
        .build()
        .expect("client");
    for base in [&a, &second.base] {
        let deadline = Instant::now() + PATIENCE;
        while !http
            .get(format!("{base}/healthz"))
            .send()
            .await
            .is_ok_and(|r| r.status().is_success())
        {
            assert!(Instant::now() < deadline, "{base} never became healthy");
            tokio::time::sleep(POLL).await;
        }
    }
    Fleet {
        a,
        b: second.base.clone(),
        sandbox: downstream.state.clone(),
        http,
        _coordinators: vec![first, second],
        _sandbox: downstream,
        _dir: dir,
    }
}

fn order(tenant: &str, amount: &str) -> Value {
    json!({
        "tenant": tenant,
        "actor": "agent:kharid-bot",
        "purpose": "ثبت سفارش خرید تأییدشده",
        "operation": "purchase_order.create",
        "tool": "erp",
        "consequence": "write",
        "args": {"item": "A4 paper", "qty": 1200, "amount": amount},
        "deadline_secs": 60,
        "max_attempts": 4,
        "release_id": "procure-agent@2.4.0",
        "connector": "erp",
    })
}

impl Fleet {
    async fn send(&self, request: reqwest::RequestBuilder) -> (StatusCode, Value, bool) {
        let response = request.send().await.expect("the coordinator answers");
        let status = response.status();
        let replayed = response
            .headers()
            .get("idempotent-replayed")
            .is_some_and(|v| v == "true");
        (
            status,
            response.json().await.unwrap_or(Value::Null),
            replayed,
        )
    }

    async fn create(&self, at: &str, key: &str, body: &Value) -> (StatusCode, Value, bool) {
        self.send(
            self.http
                .post(format!("{at}/v1/intents"))
                .bearer_auth(AGENT)
                .header("Idempotency-Key", key)
                .json(body),
        )
        .await
    }

    async fn post(&self, at: &str, token: &str, path: &str, body: &Value) -> (StatusCode, Value) {
        let (status, body, _) = self
            .send(
                self.http
                    .post(format!("{at}{path}"))
                    .bearer_auth(token)
                    .json(body),
            )
            .await;
        (status, body)
    }

    async fn get(&self, at: &str, path: &str) -> (StatusCode, Value) {
        let (status, body, _) = self
            .send(self.http.get(format!("{at}{path}")).bearer_auth(ADMIN))
            .await;
        (status, body)
    }

    /// Create at `create_at`, authorise and dispatch at `dispatch_at`: the intent.
    async fn order(&self, create_at: &str, dispatch_at: &str, key: &str, body: &Value) -> Value {
        let (status, created, _) = self.create(create_at, key, body).await;
        assert_eq!(status, StatusCode::CREATED, "{created}");
        let id = created["id"].as_str().expect("an id");
        let approval = json!({"authorization_version": "policy-v7"});
        let path = format!("/v1/intents/{id}/authorize");
        let (status, body) = self.post(dispatch_at, ADMIN, &path, &approval).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let path = format!("/v1/intents/{id}/dispatch");
        let (status, body) = self.post(dispatch_at, AGENT, &path, &json!({})).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{body}");
        created
    }

    /// Poll the intent through `at` until `done` holds; its detail then.
    async fn wait_for(
        &self,
        at: &str,
        id: &str,
        what: &str,
        done: impl Fn(&Value) -> bool,
    ) -> Value {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let (_, detail) = self.get(at, &format!("/v1/intents/{id}")).await;
            if done(&detail) {
                return detail;
            }
            assert!(
                Instant::now() < deadline,
                "waited too long for {what}: {detail:#}"
            );
            tokio::time::sleep(POLL).await;
        }
    }

    /// Poll `/healthz` at `at` until its metric follower shows `status`.
    async fn wait_for_follower(&self, at: &str, status: &str, patience: Duration) {
        let deadline = Instant::now() + patience;
        loop {
            let (_, health) = self.get(at, "/healthz").await;
            if health["parts"]["metric_follower"]["status"] == status {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the follower never showed {status}: {health}"
            );
            tokio::time::sleep(POLL).await;
        }
    }

    async fn wait_for_state(&self, at: &str, id: &str, state: &str) -> Value {
        self.wait_for(at, id, state, |d| d["intent"]["state"] == state)
            .await
    }

    async fn command(&self, at: &str, body: Value) {
        let (status, answer) = self.post(at, ADMIN, "/v1/commands", &body).await;
        assert_eq!(status, StatusCode::CREATED, "{answer}");
    }
}

fn command_id() -> String {
    CommandId::generate(SystemClock.now_ms(), OsEntropy::default().next_u128()).to_string()
}

/// Read server-sent events from `response` until one of kind `intent` says `id` is in
/// `state`.
async fn wait_for_event(mut response: reqwest::Response, id: &str, state: &str) {
    let mut text = String::new();
    let deadline = Instant::now() + PATIENCE;
    loop {
        let chunk = tokio::time::timeout_at(deadline.into(), response.chunk())
            .await
            .unwrap_or_else(|_| panic!("no event for {id} becoming {state}; read: {text}"))
            .expect("the stream reads")
            .expect("the stream stays open");
        text.push_str(&String::from_utf8_lossy(&chunk));
        let seen = text.split("\n\n").any(|frame| {
            frame.contains("event: intent")
                && frame
                    .lines()
                    .find_map(|l| l.strip_prefix("data: "))
                    .and_then(|data| serde_json::from_str::<Value>(data).ok())
                    .is_some_and(|v| v["id"] == id && v["state"] == state)
        });
        if seen {
            return;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn any_coordinator_answers_and_every_one_follows_the_change_feed() {
    let Some(url) = fresh_postgres() else { return };
    let fleet = fleet(url).await;
    // B's event stream is open before anything happens.
    let stream = fleet
        .http
        .get(format!("{}/v1/events", fleet.b))
        .bearer_auth(ADMIN)
        .send()
        .await
        .expect("B streams events");
    assert_eq!(stream.status(), StatusCode::OK);

    // Created through A, replayed through B: one intent.
    let body = order("acme", "4100");
    let created = fleet.order(&fleet.a, &fleet.b, "fleet-1", &body).await;
    let id = created["id"].as_str().expect("id");
    let (status, replay, replayed) = fleet.create(&fleet.b, "fleet-1", &body).await;
    assert_eq!(status, StatusCode::OK, "{replay}");
    assert!(replayed);
    assert_eq!(replay["id"], id);

    // Dispatched through B, its receipt taken by A: one effect, the same answer from both.
    let detail = fleet.wait_for_state(&fleet.a, id, "committed").await;
    let key = detail["intent"]["action_key"].as_str().expect("key");
    assert_eq!(fleet.sandbox.effects_for(&key.parse().expect("key")), 1);
    let (_, from_b) = fleet.get(&fleet.b, &format!("/v1/intents/{id}")).await;
    assert_eq!(from_b["intent"], detail["intent"]);

    // B's subscribers saw it committed, and B's dashboard counts it.
    wait_for_event(stream, id, "committed").await;
    for at in [&fleet.a, &fleet.b] {
        let (status, overview) = fleet.get(at, "/v1/metrics/overview?tenant=acme").await;
        assert_eq!(status, StatusCode::OK, "{overview}");
        assert_eq!(overview["intents"], 1, "{at}: {overview}");
        assert_eq!(overview["committed"], 1, "{at}: {overview}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pause_through_one_coordinator_holds_dispatch_at_every_coordinator() {
    let Some(url) = fresh_postgres() else { return };
    let fleet = fleet(url).await;
    // Dispatched through B; the first send is refused and proved absent, the resend is
    // refused for load behind Retry-After.
    fleet.sandbox.set_faults("refuse=1".parse().expect("spec"));
    let mut body = order("acme", "5200");
    body["max_attempts"] = json!(3);
    let held = fleet.order(&fleet.b, &fleet.b, "held-1", &body).await;
    let id = held["id"].as_str().expect("id");
    let key = held["action_key"].as_str().expect("key").to_string();
    fleet.wait_for_state(&fleet.a, id, "indeterminate").await;
    fleet.sandbox.set_faults(
        "overload_writes=1,retry_after_secs=5"
            .parse()
            .expect("spec"),
    );
    // Five seconds behind Retry-After: time for the pause to land first on a loaded machine.
    fleet
        .wait_for(&fleet.a, id, "a retry planned behind Retry-After", |d| {
            dispatches(d).len() == 3
        })
        .await;

    // Paused through A: whichever dispatcher comes to the planned retry holds it.
    fleet
        .command(
            &fleet.a,
            json!({ "command_id": command_id(), "kind": "pause",
                    "target": { "scope": { "tenant": "acme" } }, "reason": "supplier outage" }),
        )
        .await;
    let detail = fleet
        .wait_for(&fleet.b, id, "the planned retry held by the pause", |d| {
            dispatches(d)
                .last()
                .is_some_and(|a| a["outcome"] == "abandoned")
        })
        .await;
    assert_eq!(detail["intent"]["paused"], true, "{detail:#}");
    fleet
        .sandbox
        .set_faults(intentdesk::sandbox::FaultSpec::none());
    // Orders of another tenant still go, through each coordinator.
    for (n, at) in [&fleet.a, &fleet.b].into_iter().enumerate() {
        let other = fleet
            .order(at, at, &format!("free-{n}"), &order("globex", "700"))
            .await;
        let other_id = other["id"].as_str().expect("id");
        fleet.wait_for_state(at, other_id, "committed").await;
    }
    assert_eq!(
        fleet.sandbox.effects_for(&key.parse().expect("key")),
        0,
        "nothing applied while paused, though the downstream takes orders again"
    );

    // Resumed through B, the held order goes, once.
    fleet
        .command(
            &fleet.b,
            json!({ "command_id": command_id(), "kind": "resume",
                    "target": { "scope": { "tenant": "acme" } } }),
        )
        .await;
    fleet.wait_for_state(&fleet.a, id, "committed").await;
    assert_eq!(fleet.sandbox.effects_for(&key.parse().expect("key")), 1);
    let (_, pauses) = fleet.get(&fleet.a, "/v1/pauses").await;
    assert_eq!(
        pauses["items"].as_array().map(Vec::len),
        Some(0),
        "{pauses}"
    );
}

fn dispatches(detail: &Value) -> Vec<&Value> {
    detail["attempts"]
        .as_array()
        .map(|all| all.iter().filter(|a| a["kind"] == "dispatch").collect())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_read_the_console_makes_answers_on_postgres() {
    let Some(url) = fresh_postgres() else { return };
    let fleet = fleet(url).await;
    let created = fleet
        .order(&fleet.a, &fleet.a, "read-1", &order("acme", "300"))
        .await;
    let id = created["id"].as_str().expect("id");
    let key = created["action_key"].as_str().expect("key");
    fleet.wait_for_state(&fleet.a, id, "committed").await;
    fleet
        .command(
            &fleet.a,
            json!({ "command_id": command_id(), "kind": "pause",
                    "target": { "scope": { "tenant": "globex" } }, "reason": "drill" }),
        )
        .await;

    let filters = "tenant=acme&provider=erp&state=committed,indeterminate&operation=purchase_order.create\
                   &tool=erp&release=procure-agent@2.4.0&locale=en-US&tier=write&paused=false\
                   &since=0&until=99999999999999&min_attempts=1&q=paper";
    let mut paths = vec![
        format!("/v1/intents/{id}"),
        format!("/v1/action-keys/{key}"),
        format!("/v1/commands?intent_id={id}"),
        "/v1/commands".to_string(),
        "/v1/pauses".to_string(),
        "/v1/whoami".to_string(),
        "/metrics".to_string(),
        format!("/v1/intents?{filters}"),
        format!("/v1/metrics/summary?{filters}"),
        format!("/v1/metrics/overview?{filters}"),
    ];
    for sort in [
        "created",
        "attempts",
        "deadline",
        "updated",
        "indeterminate_since",
    ] {
        for direction in ["", "-"] {
            paths.push(format!("/v1/intents?sort={direction}{sort}&limit=5"));
        }
    }
    // Every dimension and metric the API names, as the console offers them.
    let groups = GroupBy::ALL.iter().map(|g| g.as_str());
    let series = intentdesk::store::SERIES_METRICS;
    let charts: Vec<&str> = ChartMetric::ALL.iter().map(|m| m.as_str()).collect();
    for group in groups {
        paths.push(format!("/v1/metrics/histogram?group_by={group}&{filters}"));
        for metric in series {
            paths.push(format!(
                "/v1/metrics/series?metric={metric}&group_by={group}&bucket_secs=60"
            ));
        }
        for metric in &charts {
            paths.push(format!(
                "/v1/metrics/chart?metric={metric}&group_by={group}&buckets=30"
            ));
        }
    }
    for at in [&fleet.a, &fleet.b] {
        for path in &paths {
            let (status, body) = fleet.get(at, path).await;
            assert_eq!(status, StatusCode::OK, "{at}{path}: {body}");
        }
    }
}

/// Run `sql` on the test server's maintenance database.
fn admin_sql(sql: &str) {
    admin(|client| client.batch_execute(sql).expect("the statement runs"));
}

/// Run `f` with a client of the test server's maintenance database, on a thread of its own
/// (the synchronous client must not run on the test's runtime).
fn admin<T: Send>(f: impl FnOnce(&mut postgres::Client) -> T + Send) -> T {
    let admin = std::env::var(common::backends::POSTGRES_ENV).expect("the test server");
    admin_on(&admin, f)
}

/// Drop every session on database `name` and wait until the server has none left:
/// `pg_terminate_backend` only signals a session, which ends a moment later.
fn drop_sessions(name: &str) {
    admin(|client| {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let left: i64 = client
                .query_one(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
                     WHERE datname = $1 AND pid <> pg_backend_pid()",
                    &[&name],
                )
                .expect("the sessions are listed")
                .get(0);
            if left == 0 {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{left} sessions on {name} outlived their termination"
            );
            std::thread::sleep(POLL);
        }
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_that_goes_away_is_reported_and_nothing_is_answered_as_stored() {
    let Some(url) = fresh_postgres() else { return };
    let name = url.rsplit('/').next().expect("a database name").to_string();
    let fleet = fleet(url).await;
    let (status, _) = fleet.get(&fleet.a, "/healthz").await;
    assert_eq!(status, StatusCode::OK);

    // The database refuses new connections and drops the ones it has.
    admin_sql(&format!("ALTER DATABASE {name} ALLOW_CONNECTIONS false"));
    drop_sessions(&name);
    let (status, health) = fleet.get(&fleet.a, "/healthz").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{health}");
    // Both probes reach the server: the reads' and the writer's.
    for part in ["store", "writer"] {
        assert_eq!(health["parts"][part]["status"], "unreachable", "{health}");
    }
    let body = order("acme", "9100");
    let (status, answer, _) = fleet.create(&fleet.b, "gone-1", &body).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{answer}");
    assert_eq!(answer["error"]["code"], "unavailable", "{answer}");

    // Back again: healthy, and the refused create was never stored. A connection cut
    // while idle is found out by the request that next uses it, which is answered 503 as
    // well: a caller retries as told, as an agent does.
    admin_sql(&format!("ALTER DATABASE {name} ALLOW_CONNECTIONS true"));
    let deadline = Instant::now() + PATIENCE;
    while fleet.get(&fleet.a, "/healthz").await.0 != StatusCode::OK {
        assert!(Instant::now() < deadline, "the coordinator never recovered");
        tokio::time::sleep(POLL).await;
    }
    let (status, created, replayed) = loop {
        let answer = fleet.create(&fleet.b, "gone-1", &body).await;
        if answer.0 != StatusCode::SERVICE_UNAVAILABLE {
            break answer;
        }
        assert!(Instant::now() < deadline, "creates never recovered");
    };
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert!(!replayed, "the create refused during the outage was stored");
    let list = loop {
        let (status, list) = fleet.get(&fleet.a, "/v1/intents?tenant=acme").await;
        if status != StatusCode::SERVICE_UNAVAILABLE {
            break list;
        }
        assert!(Instant::now() < deadline, "reads never recovered");
    };
    assert_eq!(list["total"], 1, "{list}");
}

/// A fleet on database `url` with one order committed, created under `key`; and the
/// database's name.
async fn fleet_with_an_order(url: &str, key: &str) -> (Fleet, String) {
    let name = url.rsplit('/').next().expect("a database name").to_string();
    let fleet = fleet(url.to_string()).await;
    let created = fleet
        .order(&fleet.a, &fleet.a, key, &order("acme", "4100"))
        .await;
    let id = created["id"].as_str().expect("an id").to_string();
    fleet.wait_for_state(&fleet.a, &id, "committed").await;
    (fleet, name)
}

/// How many sessions on database `name` named `application` wait on a lock.
fn waiting_on_a_lock(name: &str, application: &str) -> i64 {
    admin(|client| {
        client
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = $1 \
                 AND wait_event_type = 'Lock' AND application_name = $2",
                &[&name, &application],
            )
            .expect("the sessions are listed")
            .get(0)
    })
}

/// Another session on `url`: it runs `first` (if any) for the session, then holds `lock`
/// in a transaction; once the lock is held this returns. The first message on the sender
/// (or its drop) commits the transaction; the next (or the drop) ends the session, and
/// with it what `first` took.
async fn hold(
    url: String,
    first: String,
    lock: &'static str,
) -> (std::sync::mpsc::Sender<()>, std::thread::JoinHandle<()>) {
    let (release, released) = std::sync::mpsc::channel::<()>();
    let (held, holding) = tokio::sync::oneshot::channel::<()>();
    let holder = std::thread::spawn(move || {
        let mut client = postgres::Client::connect(&url, postgres::NoTls).expect("a session");
        if !first.is_empty() {
            client
                .batch_execute(&first)
                .expect("the session's lock is held");
        }
        let mut tx = client.transaction().expect("a transaction");
        tx.batch_execute(lock).expect("the table is locked");
        held.send(()).expect("the test waits");
        let _ = released.recv();
        tx.commit().expect("the table is let go");
        let _ = released.recv();
    });
    holding.await.expect("the lock is held");
    (release, holder)
}

/// The advisory lock the coordinators' migrations take (`store::postgres::schema`).
const MIGRATION_LOCK: i64 = 0x1D_E5C0;

/// Wait until a session on database `name` goes by `application`.
async fn wait_for_a_session(name: &str, application: &str, patience: Duration) {
    let deadline = Instant::now() + patience;
    while admin(|client| {
        client
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = $1 \
                 AND application_name = $2",
                &[&name, &application],
            )
            .expect("the sessions are listed")
            .get::<_, i64>(0)
    }) == 0
    {
        assert!(
            Instant::now() < deadline,
            "no session went by {application}"
        );
        tokio::time::sleep(POLL).await;
    }
}

/// Wait until a session on database `name` named `application` waits on a lock.
async fn wait_until_waiting(name: &str, application: &str) {
    let deadline = Instant::now() + PATIENCE;
    while waiting_on_a_lock(name, application) == 0 {
        assert!(
            Instant::now() < deadline,
            "no session {application} came to wait on a lock"
        );
        tokio::time::sleep(POLL).await;
    }
}

/// Another session holds the change feed's table (an operator's `VACUUM FULL`, a migration
/// of a newer coordinator): every read of it waits. The metric follower's read gives up
/// after the readers' lock timeout and says so in `/healthz`; dashboard reads queued behind
/// it wait without holding a store reader, so lists go on answering; nothing waits for ever.
/// The follower connects again while the migration still holds its lock, without holding
/// the index meanwhile, and follows once it is connected.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_held_on_the_change_feed_holds_up_no_list_and_nothing_for_ever() {
    let Some(url) = fresh_postgres() else { return };
    let (fleet, name) = fleet_with_an_order(&url, "locked-1").await;

    // As a newer coordinator's migration would: the migrations' lock for the session, and
    // the feed for a transaction. Each is let go when the test says (or ends).
    let (release, holder) = hold(
        url,
        format!("SELECT pg_advisory_lock({MIGRATION_LOCK})"),
        "LOCK TABLE events IN ACCESS EXCLUSIVE MODE",
    )
    .await;

    // More dashboard reads than the store has readers, each waiting on the feed.
    let patient = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(300))
        .build()
        .expect("client");
    let overviews: Vec<_> = (0..2 * intentdesk::store::postgres::READERS)
        .map(|_| {
            let request = patient
                .get(format!("{}/v1/metrics/overview?tenant=acme", fleet.a))
                .bearer_auth(ADMIN);
            tokio::spawn(async move {
                let response = request.send().await.expect("the overview is answered");
                let status = response.status();
                (
                    status,
                    response.json::<Value>().await.unwrap_or(Value::Null),
                )
            })
        })
        .collect();

    // A list reads no feed: it answers while the lock is held.
    let (status, list) = fleet.get(&fleet.a, "/v1/intents?tenant=acme").await;
    assert_eq!(status, StatusCode::OK, "{list}");
    assert_eq!(list["total"], 1, "{list}");
    fleet.wait_for_follower(&fleet.a, "failed", PATIENCE).await;
    // However often `/healthz` was asked meanwhile, and however many dashboard reads
    // queued, few reads wait on the lock: the first coordinator's index refresh and its one
    // health probe, and the second coordinator's follower (a writer pruning the feed may
    // wait too; it is not a read).
    let waiting = waiting_on_a_lock(&name, "intentdesk reader");
    assert!(waiting <= 3, "{waiting} reads wait on the lock");
    let (status, list) = fleet.get(&fleet.a, "/v1/intents?tenant=acme").await;
    assert_eq!(status, StatusCode::OK, "{list}");

    release.send(()).expect("the holder waits");
    for overview in overviews {
        let (status, body) = overview.await.expect("the request ran");
        match status {
            StatusCode::OK => assert_eq!(body["intents"], 1, "{body}"),
            StatusCode::SERVICE_UNAVAILABLE => {
                assert_eq!(body["error"]["code"], "unavailable", "{body}");
            }
            other => panic!("an overview answered {other}: {body}"),
        }
    }

    // After its back-off the follower connects again, and waits for the migration: without
    // the index, so the dashboard answers meanwhile.
    wait_for_a_session(&name, WAITING_FOR_A_MIGRATION, Duration::from_secs(120)).await;
    let (status, overview) = fleet
        .get(&fleet.a, "/v1/metrics/overview?tenant=acme")
        .await;
    assert_eq!(status, StatusCode::OK, "{overview}");
    assert_eq!(overview["intents"], 1, "{overview}");
    release.send(()).expect("the holder waits");
    holder.join().expect("the holder let go");

    // The follower reads again once connected.
    fleet
        .wait_for_follower(&fleet.a, "running", Duration::from_secs(120))
        .await;
}

/// Another session holds the intents against writes (a `LOCK TABLE`, a `VACUUM FULL`, a
/// newer coordinator's migration). An agent's create waits for it only as long as the
/// writers' lock timeout, and is then answered 503 (retry shortly), with nothing stored:
/// the same key creates the intent once the lock is let go. Without the timeout the create
/// waits as long as the lock is held, and the test's own patience ends first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_waiting_on_a_lock_gives_up_and_stores_nothing() {
    let Some(url) = fresh_postgres() else { return };
    let name = url.rsplit('/').next().expect("a database name").to_string();
    let fleet = fleet(url.clone()).await;
    assert!(
        intentdesk::store::postgres::LOCK_TIMEOUT < PATIENCE,
        "the test waits longer than the lock timeout"
    );

    // Reads go on (a list, a detail); inserts and updates of intents wait.
    let (release, holder) = hold(
        url.clone(),
        String::new(),
        "LOCK TABLE intents IN EXCLUSIVE MODE",
    )
    .await;

    let body = order("acme", "5200");
    let started = Instant::now();
    let create = {
        let request = fleet
            .http
            .post(format!("{}/v1/intents", fleet.b))
            .bearer_auth(AGENT)
            .header("Idempotency-Key", "locked-write-1")
            .json(&body);
        tokio::spawn(async move {
            let response = request.send().await.expect("the create is answered");
            let status = response.status();
            (
                status,
                response.json::<Value>().await.unwrap_or(Value::Null),
            )
        })
    };
    // The create's write waits on the lock, under the writers' own name.
    let deadline = Instant::now() + PATIENCE;
    while waiting_on_a_lock(&name, "intentdesk writer") == 0 {
        assert!(Instant::now() < deadline, "no writer waited on the lock");
        tokio::time::sleep(POLL).await;
    }
    let (status, answer) = create.await.expect("the request ran");
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{answer}");
    assert_eq!(answer["error"]["code"], "unavailable", "{answer}");
    let waited = started.elapsed();
    let timeout = intentdesk::store::postgres::LOCK_TIMEOUT;
    assert!(
        waited >= timeout,
        "answered before the lock timeout: {answer}"
    );
    assert!(
        waited < 2 * timeout,
        "waited {waited:?}: the write waited on the lock more than once"
    );
    // Reads were never held up.
    let (status, list) = fleet.get(&fleet.a, "/v1/intents?tenant=acme").await;
    assert_eq!(status, StatusCode::OK, "{list}");
    assert_eq!(list["total"], 0, "{list}");

    drop(release);
    holder.join().expect("the holder let go");
    let (status, created, replayed) = fleet.create(&fleet.b, "locked-write-1", &body).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert!(!replayed, "the create refused while locked was stored");
    let (status, list) = fleet.get(&fleet.a, "/v1/intents?tenant=acme").await;
    assert_eq!(status, StatusCode::OK, "{list}");
    assert_eq!(list["total"], 1, "{list}");
}

/// A newer coordinator adds indexes while the fleet runs, on a database with intents: the
/// migration's build waits for another session's open transaction on the intents (a long
/// write, a `LOCK TABLE`), as every index build must. Meanwhile the running coordinators
/// create, dispatch and commit orders: a plain build would hold every write to the table
/// until it ends (503 after the writers' lock timeout). A build cut short before (left
/// behind invalid) is built again, and a third coordinator starting meanwhile waits for the
/// migration, named so in `pg_stat_activity`, and starts once it is done.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_migration_that_adds_indexes_holds_no_write_of_the_running_coordinators() {
    let Some(url) = fresh_postgres() else { return };
    let (fleet, name) = fleet_with_an_order(&url, "before-1").await;

    let (release, holder) = back_to_schema_19_the_intents_held(&url).await;
    // A build of migration 20's second index, cut short while it waits: left invalid.
    let leftover = {
        let url = url.clone();
        std::thread::spawn(move || {
            let mut client = postgres::Client::connect(&url, postgres::NoTls).expect("a session");
            client
                .batch_execute("SET application_name = 'leftover build'")
                .expect("named");
            client
                .batch_execute("CREATE INDEX CONCURRENTLY intents_locale ON intents (locale)")
                .expect_err("the build is cut short")
                .as_db_error()
                .map(|e| e.message().to_string())
                .unwrap_or_default()
        })
    };
    wait_until_waiting(&name, "leftover build").await;
    admin(|client| {
        client
            .execute(
                "SELECT pg_cancel_backend(pid) FROM pg_stat_activity \
                 WHERE datname = $1 AND application_name = 'leftover build'",
                &[&name],
            )
            .expect("the build is cancelled");
    });
    let cut = leftover.join().expect("the build ended");
    assert!(cut.contains("cancel"), "{cut}");
    assert_eq!(index_valid(&url, "intents_locale"), Some(false));

    // The newer coordinator migrates: its first build waits for the open transaction.
    let migrating = open_in_the_background(&url);
    wait_for_a_build(&name).await;
    let starting = open_in_the_background(&url);
    wait_for_a_session(&name, WAITING_FOR_A_MIGRATION, PATIENCE).await;

    // The running coordinators create, dispatch and commit meanwhile.
    let created = fleet
        .order(&fleet.a, &fleet.b, "during-1", &order("acme", "4200"))
        .await;
    let during = created["id"].as_str().expect("an id").to_string();
    fleet.wait_for_state(&fleet.b, &during, "committed").await;
    assert_eq!(
        index_valid(&url, "intents_tier"),
        Some(false),
        "the build still waits"
    );

    release.send(()).expect("the holder waits");
    finished(migrating).await.expect("the migration ran");
    finished(starting)
        .await
        .expect("the coordinator that waited started");
    release.send(()).expect("the holder waits");
    holder.join().expect("the holder let go");
    assert_schema_20(&url);
    let effects = fleet.sandbox.effects_summary();
    assert_eq!((effects.effects, effects.duplicate_effects), (2, 0));
}

/// A coordinator of an earlier build, which waits for the migrations' lock inside a
/// statement, connects while a newer one builds an index concurrently. The build waits for
/// that statement's snapshot and the statement for the build's lock, and the server ends
/// one of them. When it ends the build, the migration lets its lock go, the older
/// coordinator goes through, and the build runs again: the newer coordinator starts, its
/// indexes valid.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_older_coordinator_waiting_for_the_migrations_lock_does_not_end_a_build() {
    let Some(url) = fresh_postgres() else { return };
    let name = url.rsplit('/').next().expect("a database name").to_string();
    finished(open_in_the_background(&url))
        .await
        .expect("the schema is made");
    let (release, holder) = back_to_schema_19_the_intents_held(&url).await;
    let migrating = open_in_the_background(&url);
    wait_for_a_build(&name).await;
    // As a coordinator of an earlier build connects: the lock waited for in a transaction.
    let older = {
        let url = url.clone();
        std::thread::spawn(move || {
            let mut client = postgres::Client::connect(&url, postgres::NoTls).expect("a session");
            // Its one look for a deadlock (a second into its wait, by default) long past
            // when the build comes to wait for it, as when the build scans a big table:
            // the server then ends the build.
            client
                .batch_execute(
                    "SET application_name = 'older build'; SET deadlock_timeout = '10min'",
                )
                .expect("named");
            let mut tx = client.transaction().expect("a transaction");
            let waited =
                tx.batch_execute(&format!("SELECT pg_advisory_xact_lock({MIGRATION_LOCK})"));
            match waited {
                Ok(()) => tx.commit().map_err(|e| format!("{e:?}")),
                Err(e) => Err(format!("{e:?}")),
            }
        })
    };
    wait_until_waiting(&name, "older build").await;
    release.send(()).expect("the holder waits");
    finished(migrating)
        .await
        .expect("the migration ran, the build again after the deadlock");
    older
        .join()
        .expect("the older coordinator's wait ended")
        .expect("the older coordinator went through");
    release.send(()).expect("the holder waits");
    holder.join().expect("the holder let go");
    assert_schema_20(&url);
}

/// A migration whose second index cannot be built (its name taken by a table of someone
/// else's) fails the start, and leaves nothing of itself: the first index, built, is
/// dropped again, and the version stays. A coordinator of an earlier build that knows the
/// migration builds its indexes in a transaction, and would otherwise meet the first by
/// name. Once the name is free, the next start builds both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_migration_that_fails_part_way_leaves_nothing_of_itself() {
    let Some(url) = fresh_postgres() else { return };
    finished(open_in_the_background(&url))
        .await
        .expect("the schema is made");
    back_to_schema_19(&url);
    admin_on(&url, |client| {
        client
            .batch_execute("CREATE TABLE intents_locale (x INTEGER)")
            .expect("the name is taken");
    });
    let refused = finished(open_in_the_background(&url))
        .await
        .expect_err("the migration fails");
    assert!(refused.contains("intents_locale"), "{refused}");
    assert_eq!(
        index_valid(&url, "intents_tier"),
        None,
        "the first index is dropped"
    );
    let version = admin_on(&url, |client| {
        client
            .query_one("SELECT max(version) FROM intentdesk_schema", &[])
            .expect("the version")
            .get::<_, i64>(0)
    });
    assert_eq!(version, 19);
    admin_on(&url, |client| {
        client
            .batch_execute("DROP TABLE intents_locale")
            .expect("the name is free");
    });
    finished(open_in_the_background(&url))
        .await
        .expect("the migration runs");
    assert_schema_20(&url);
}

/// Take the database at `url` back to before migration 20, and open a long transaction on
/// its intents (a long write, a `LOCK TABLE`), which [`hold`]'s sender lets go.
async fn back_to_schema_19_the_intents_held(
    url: &str,
) -> (std::sync::mpsc::Sender<()>, std::thread::JoinHandle<()>) {
    back_to_schema_19(url);
    hold(
        url.to_string(),
        String::new(),
        "LOCK TABLE intents IN ROW EXCLUSIVE MODE",
    )
    .await
}

/// Take the database at `url` back to before migration 20 (and the later ones, which
/// PostgreSQL keeps empty: the arguments' table of migration 21).
fn back_to_schema_19(url: &str) {
    admin_on(url, |client| {
        client
            .batch_execute(
                "DROP TABLE intent_payloads; DROP INDEX intents_tier; DROP INDEX intents_locale; \
                 UPDATE intentdesk_schema SET version = 19",
            )
            .expect("back to schema 19");
    });
}

/// Migration 20 is done: both its indexes valid and as it writes them, and every migration
/// after it recorded.
fn assert_schema_20(url: &str) {
    assert_eq!(index_valid(url, "intents_tier"), Some(true));
    assert_eq!(index_valid(url, "intents_locale"), Some(true));
    let (tier, locale, version) = admin_on(url, |client| {
        let row = client
            .query_one(
                "SELECT pg_get_indexdef('intents_tier'::regclass), \
                 pg_get_indexdef('intents_locale'::regclass), \
                 (SELECT max(version) FROM intentdesk_schema)",
                &[],
            )
            .expect("the indexes are there");
        (
            row.get::<_, String>(0),
            row.get::<_, String>(1),
            row.get::<_, i64>(2),
        )
    });
    assert!(tier.contains("(tier, seq)"), "{tier}");
    assert!(locale.contains("(locale, seq)"), "{locale}");
    assert_eq!(
        version,
        intentdesk::store::migrations::MIGRATIONS.len() as i64
    );
}

/// Open a store on `url` (and with it, migrate) on a thread of its own.
fn open_in_the_background(url: &str) -> std::thread::JoinHandle<Result<(), String>> {
    let location = Location::Postgres(url.to_string());
    std::thread::spawn(move || {
        intentdesk::store::open_db(&location, Durability::PowerLoss)
            .map(drop)
            .map_err(|e| e.to_string())
    })
}

/// What a thread gave, once it ended (within the test's patience).
async fn finished<T>(thread: std::thread::JoinHandle<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !thread.is_finished() {
        assert!(Instant::now() < deadline, "the thread never ended");
        tokio::time::sleep(POLL).await;
    }
    thread.join().expect("the thread ran")
}

/// Wait until a session on database `name` builds an index concurrently and waits on a
/// lock meanwhile.
async fn wait_for_a_build(name: &str) {
    let deadline = Instant::now() + PATIENCE;
    while admin(|client| {
        client
            .query_one(
                "SELECT count(*) FROM pg_stat_progress_create_index p \
                 JOIN pg_stat_activity a ON a.pid = p.pid WHERE a.datname = $1 \
                 AND p.command = 'CREATE INDEX CONCURRENTLY' AND a.wait_event_type = 'Lock'",
                &[&name],
            )
            .expect("the builds are listed")
            .get::<_, i64>(0)
    }) == 0
    {
        assert!(Instant::now() < deadline, "no build came to wait");
        tokio::time::sleep(POLL).await;
    }
}

/// Run `f` with a client of the database at `url`, on a thread of its own (the synchronous
/// client must not run on the test's runtime).
fn admin_on<T: Send>(url: &str, f: impl FnOnce(&mut postgres::Client) -> T + Send) -> T {
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut client =
                postgres::Client::connect(url, postgres::NoTls).expect("the server answers");
            f(&mut client)
        })
        .join()
        .expect("the statement ran")
    })
}

/// Whether the index `name` of the database at `url` is valid; `None` when there is none.
fn index_valid(url: &str, name: &str) -> Option<bool> {
    admin_on(url, |client| {
        client
            .query_opt(
                "SELECT x.indisvalid FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid \
                 WHERE c.relname = $1",
                &[&name],
            )
            .expect("the indexes are listed")
            .map(|row| row.get(0))
    })
}

#[test]
fn a_wrong_url_credentials_or_a_newer_schema_refuse_to_start_with_a_clear_message() {
    let Some(url) = fresh_postgres() else { return };
    let open = |location: &str| {
        intentdesk::store::open_db(&Location::from(location.to_string()), Durability::PowerLoss)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    };
    let mut parsed = reqwest::Url::parse(&url).expect("URL");

    // Nothing listening there.
    let closed = {
        let socket = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        socket.local_addr().expect("addr").port()
    };
    parsed.set_port(Some(closed)).expect("port");
    let message = open(parsed.as_str());
    assert!(
        message.contains("cannot connect to PostgreSQL at"),
        "{message}"
    );

    // A role that does not exist, with a password that must not be shown.
    let mut parsed = reqwest::Url::parse(&url).expect("URL");
    parsed.set_username("nobody").expect("user");
    parsed.set_password(Some("s3cret-word")).expect("password");
    let message = open(parsed.as_str());
    assert!(message.contains("nobody"), "{message}");
    assert!(!message.contains("s3cret-word"), "{message}");

    // Not a URL PostgreSQL reads.
    let message = open("postgres://127.0.0.1:notaport/x");
    assert!(message.contains("is not valid"), "{message}");

    // A schema newer than this build knows: refused, and left as it was.
    assert!(
        intentdesk::store::open_db(&Location::Postgres(url.clone()), Durability::PowerLoss).is_ok()
    );
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut client =
                postgres::Client::connect(&url, postgres::NoTls).expect("the server answers");
            client
                .batch_execute("UPDATE intentdesk_schema SET version = version + 1")
                .expect("bump the version");
        })
        .join()
        .expect("bumped")
    });
    match intentdesk::store::open_db(&Location::Postgres(url), Durability::PowerLoss) {
        Err(e @ StoreError::NewerSchema { .. }) => {
            assert!(e.to_string().contains("newer"), "{e}");
        }
        Err(other) => panic!("another refusal: {other}"),
        Ok(_) => panic!("a newer schema was opened"),
    }
}
