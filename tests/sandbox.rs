//! The sandbox over real HTTP: each scenario starts a sandbox on 127.0.0.1:0, drives it
//! with reqwest and stops it.

use std::time::{Duration, Instant};

use intentdesk::sandbox::{
    self, FaultSpec, ManualClock, SandboxOptions, SandboxState, WebhookTarget,
};
use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

/// Guards against a hang; never a stand-in for synchronisation.
const PATIENCE: Duration = Duration::from_secs(10);

struct Sandbox {
    base: String,
    state: SandboxState,
    http: reqwest::Client,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<std::io::Result<()>>,
}

async fn start(spec: &str) -> Sandbox {
    start_with(spec, Setup::default()).await
}

/// What a scenario may change about a sandbox besides its faults.
#[derive(Default)]
struct Setup {
    webhook: Option<WebhookTarget>,
    clock: Option<ManualClock>,
    seed: Option<u64>,
}

async fn start_with(spec: &str, setup: Setup) -> Sandbox {
    let faults: FaultSpec = spec.parse().expect("test spec parses");
    let mut options = SandboxOptions {
        seed: Some(setup.seed.unwrap_or(7)),
        ..SandboxOptions::default()
    };
    if let Some(clock) = setup.clock {
        options.clock = std::sync::Arc::new(clock);
    }
    let state = SandboxState::with_options(faults, setup.webhook, options);
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind port 0");
    let addr = listener.local_addr().expect("local addr");
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let shutdown = async {
        // A dropped sender stops the server too.
        let _ = stop_rx.await;
    };
    let task = tokio::spawn(sandbox::run(listener, state.clone(), shutdown));
    let http = intentdesk::tls::client(None)
        .expect("a TLS client")
        .no_proxy()
        .timeout(PATIENCE)
        .build()
        .expect("client builds");
    Sandbox {
        base: format!("http://{addr}"),
        state,
        http,
        stop: Some(stop_tx),
        task,
    }
}

impl Sandbox {
    /// The `n`th id with `prefix` this instance hands out, e.g. `po-<tag>-1`.
    fn id(&self, prefix: &str, n: u64) -> String {
        format!("{prefix}-{}-{n}", self.state.instance())
    }

    fn url(&self, path: &str, name: &str, value: &str) -> reqwest::Url {
        reqwest::Url::parse_with_params(&format!("{}{path}", self.base), [(name, value)])
            .expect("test URL is valid")
    }

    async fn post(
        &self,
        resource: &str,
        key: Option<&str>,
        body: &str,
    ) -> reqwest::Result<reqwest::Response> {
        let mut request = self
            .http
            .post(format!("{}/{resource}", self.base))
            .header("content-type", "application/json")
            .body(body.to_owned());
        if let Some(key) = key {
            request = request.header("Idempotency-Key", key);
        }
        request.send().await
    }

    async fn lookup(&self, resource: &str, key: &str) -> reqwest::Response {
        self.http
            .get(self.url(&format!("/{resource}"), "external_ref", key))
            .send()
            .await
            .expect("lookup answered")
    }

    async fn effects(&self, key: &str) -> u64 {
        let body: Value = self
            .http
            .get(self.url("/_sandbox/effects", "action_key", key))
            .send()
            .await
            .expect("effects answered")
            .json()
            .await
            .expect("effects are JSON");
        assert_eq!(body["action_key"], key);
        body["effects"].as_u64().expect("effects is a number")
    }

    async fn totals(&self) -> Value {
        self.http
            .get(format!("{}/_sandbox/effects", self.base))
            .send()
            .await
            .expect("totals answered")
            .json()
            .await
            .expect("totals are JSON")
    }

    async fn set_faults(&self, spec: &str) -> reqwest::Response {
        self.http
            .post(format!("{}/_sandbox/faults", self.base))
            .body(spec.to_owned())
            .send()
            .await
            .expect("faults endpoint answered")
    }

    async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let result = tokio::time::timeout(PATIENCE, &mut self.task)
            .await
            .expect("server stops by itself")
            .expect("server task did not panic");
        result.expect("server ended cleanly");
    }
}

async fn json_of(response: reqwest::Response) -> Value {
    response.json().await.expect("body is JSON")
}

const PO: &str = "purchase-orders";
const ORDER: &str = r#"{"supplier": "acme", "amount": "120.00"}"#;

#[tokio::test]
async fn create_then_replay_then_mismatch_counts_one_effect() {
    let sandbox = start("none").await;
    let key = "po:acme:int_1";

    let first = sandbox.post(PO, Some(key), ORDER).await.expect("answered");
    assert_eq!(first.status(), StatusCode::CREATED);
    let created = json_of(first).await;
    assert_eq!(created["id"], sandbox.id("po", 1));
    assert_eq!(created["resource"], PO);
    assert_eq!(created["external_ref"], key);
    assert_eq!(created["replayed"], false);

    // Same body with other key order and spacing: still the same body.
    let again = sandbox
        .post(PO, Some(key), r#"{"amount":"120.00","supplier":"acme"}"#)
        .await
        .expect("answered");
    assert_eq!(again.status(), StatusCode::OK);
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    let replayed = json_of(again).await;
    assert_eq!(replayed["id"], sandbox.id("po", 1));
    assert_eq!(replayed["created_at_ms"], created["created_at_ms"]);
    assert_eq!(replayed["replayed"], true);

    let changed = sandbox
        .post(PO, Some(key), r#"{"supplier": "acme", "amount": "999.00"}"#)
        .await
        .expect("answered");
    assert_eq!(changed.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        json_of(changed).await["error"]["code"],
        "idempotency_key_mismatch"
    );

    assert_eq!(sandbox.effects(key).await, 1);
    sandbox.stop().await;
}

#[tokio::test]
async fn lookup_by_external_ref_finds_the_record_or_404s() {
    let sandbox = start("none").await;
    let key = "pay:acme:int_2";
    sandbox
        .post("payments", Some(key), r#"{"amount": 5}"#)
        .await
        .expect("answered");

    let found = sandbox.lookup("payments", key).await;
    assert_eq!(found.status(), StatusCode::OK);
    let record = json_of(found).await;
    assert_eq!(record["id"], sandbox.id("pay", 1));
    assert_eq!(record["external_ref"], key);
    assert_eq!(record["body"], json!({"amount": 5}));

    let missing = sandbox.lookup("payments", "pay:acme:never").await;
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
    assert_eq!(json_of(missing).await["error"]["code"], "not_found");
    sandbox.stop().await;
}

#[tokio::test]
async fn malformed_requests_get_json_errors() {
    let sandbox = start("none").await;
    let cases = [
        (
            "invoices",
            Some("k1"),
            ORDER,
            StatusCode::NOT_FOUND,
            "unknown_resource",
        ),
        (
            PO,
            None,
            ORDER,
            StatusCode::BAD_REQUEST,
            "missing_idempotency_key",
        ),
        (
            PO,
            Some("k2"),
            "{not json",
            StatusCode::BAD_REQUEST,
            "bad_json",
        ),
        (
            PO,
            Some("k3"),
            "[1, 2]",
            StatusCode::BAD_REQUEST,
            "bad_json",
        ),
    ];
    for (resource, key, body, status, code) in cases {
        let response = sandbox.post(resource, key, body).await.expect("answered");
        assert_eq!(response.status(), status, "{resource} {key:?} {body}");
        assert_eq!(json_of(response).await["error"]["code"], code);
    }
    assert_eq!(sandbox.totals().await["effects"], 0);
    sandbox.stop().await;
}

#[tokio::test]
async fn ignored_keys_make_a_duplicate_effect() {
    let sandbox = start("ignore_keys=true").await;
    let key = "inv:acme:int_3";
    for _ in 0..2 {
        let response = sandbox
            .post("inventory-reservations", Some(key), r#"{"sku": "A-1"}"#)
            .await
            .expect("answered");
        assert_eq!(response.status(), StatusCode::CREATED);
    }
    assert_eq!(sandbox.effects(key).await, 2);
    assert_eq!(
        sandbox.totals().await,
        json!({"effects": 2, "keys": 1, "duplicate_effects": 1})
    );
    sandbox.stop().await;
}

#[tokio::test]
async fn overload_answers_503_with_retry_after_and_processes_nothing() {
    let sandbox = start("overload=1,retry_after_secs=2").await;
    let response = sandbox
        .post(PO, Some("po:acme:int_4"), ORDER)
        .await
        .expect("answered");
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(response.headers()["retry-after"], "2");
    assert_eq!(json_of(response).await["error"]["code"], "overloaded");
    assert_eq!(sandbox.effects("po:acme:int_4").await, 0);
    sandbox.stop().await;
}

#[tokio::test]
async fn refused_connections_fail_at_transport_level_with_no_effect() {
    let sandbox = start("refuse=1").await;
    let err = sandbox
        .post(PO, Some("po:acme:int_5"), ORDER)
        .await
        .expect_err("the connection is refused");
    assert!(err.status().is_none() && !err.is_timeout(), "{err}");

    // Control requests are refused too, so clear the fault in-process.
    sandbox.state.set_faults(FaultSpec::none());
    assert_eq!(sandbox.effects("po:acme:int_5").await, 0);
    sandbox.stop().await;
}

#[tokio::test]
async fn a_dropped_response_still_commits_the_effect() {
    let sandbox = start("drop_after_commit=1").await;
    let key = "po:acme:int_6";
    let err = sandbox
        .post(PO, Some(key), ORDER)
        .await
        .expect_err("the response is dropped");
    assert!(err.status().is_none() && !err.is_timeout(), "{err}");

    assert_eq!(sandbox.effects(key).await, 1);
    let found = sandbox.lookup(PO, key).await;
    assert_eq!(found.status(), StatusCode::OK);
    assert_eq!(json_of(found).await["id"], sandbox.id("po", 1));
    sandbox.stop().await;
}

#[tokio::test]
async fn only_the_first_creations_lose_their_response_with_drop_first() {
    let sandbox = start("drop_first=2").await;
    for key in ["po:acme:int_f1", "po:acme:int_f2"] {
        let err = sandbox
            .post(PO, Some(key), ORDER)
            .await
            .expect_err("the response is dropped");
        assert!(err.status().is_none() && !err.is_timeout(), "{err}");
        assert_eq!(sandbox.effects(key).await, 1, "{key} committed");
    }
    // A replay of a dropped creation is answered: only creations count.
    let replay = sandbox
        .post(PO, Some("po:acme:int_f1"), ORDER)
        .await
        .expect("a replay is answered");
    assert_eq!(replay.status(), StatusCode::OK);
    let third = sandbox
        .post(PO, Some("po:acme:int_f3"), ORDER)
        .await
        .expect("the third creation is answered");
    assert_eq!(third.status(), StatusCode::CREATED);
    sandbox.stop().await;
}

#[tokio::test]
async fn a_forgotten_key_creates_a_second_effect_and_lookup_misses() {
    let clock = ManualClock::new(1_700_000_000_000);
    let sandbox = start_with(
        "retention_secs=1",
        Setup {
            clock: Some(clock.clone()),
            ..Setup::default()
        },
    )
    .await;
    let key = "po:acme:int_7";
    let first = sandbox.post(PO, Some(key), ORDER).await.expect("answered");
    assert_eq!(first.status(), StatusCode::CREATED);

    clock.advance_ms(999);
    let replay = sandbox.post(PO, Some(key), ORDER).await.expect("answered");
    assert_eq!(replay.status(), StatusCode::OK);

    clock.advance_ms(1);
    assert_eq!(
        sandbox.lookup(PO, key).await.status(),
        StatusCode::NOT_FOUND
    );
    let second = sandbox.post(PO, Some(key), ORDER).await.expect("answered");
    assert_eq!(second.status(), StatusCode::CREATED);
    assert_eq!(json_of(second).await["id"], sandbox.id("po", 2));
    assert_eq!(sandbox.effects(key).await, 2);
    sandbox.stop().await;
}

#[tokio::test]
async fn faults_switch_at_run_time() {
    let sandbox = start("none").await;
    let set = sandbox.set_faults(" overload = 1 ").await;
    assert_eq!(set.status(), StatusCode::OK);
    assert_eq!(json_of(set).await, json!({"faults": "overload=1"}));
    let shown: Value = json_of(
        sandbox
            .http
            .get(format!("{}/_sandbox/faults", sandbox.base))
            .send()
            .await
            .expect("answered"),
    )
    .await;
    assert_eq!(shown, json!({"faults": "overload=1"}));
    let refused = sandbox
        .post(PO, Some("po:acme:int_8"), ORDER)
        .await
        .expect("answered");
    assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);

    assert_eq!(sandbox.set_faults("none").await.status(), StatusCode::OK);
    let created = sandbox
        .post(PO, Some("po:acme:int_8"), ORDER)
        .await
        .expect("answered");
    assert_eq!(created.status(), StatusCode::CREATED);
    sandbox.stop().await;
}

#[tokio::test]
async fn a_bad_fault_spec_is_refused_naming_the_item() {
    let sandbox = start("overload=0.5").await;
    let response = sandbox.set_faults("redeliver=2,overload=2").await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let error = json_of(response).await;
    assert_eq!(error["error"]["code"], "bad_fault_spec");
    let message = error["error"]["message"].as_str().expect("message is text");
    assert!(message.contains("`overload=2`"), "{message}");
    assert_eq!(sandbox.state.faults().to_string(), "overload=0.5");
    sandbox.stop().await;
}

#[tokio::test]
async fn a_delay_holds_the_request_before_it_is_processed() {
    let sandbox = start("delay_ms=150").await;
    let started = Instant::now();
    let response = sandbox
        .post(PO, Some("po:acme:int_9"), ORDER)
        .await
        .expect("answered");
    assert_eq!(response.status(), StatusCode::CREATED);
    assert!(started.elapsed() >= Duration::from_millis(150));
    sandbox.stop().await;
}

#[tokio::test]
async fn a_retry_overtakes_a_held_request_and_the_held_one_replays() {
    // With seed 0 exactly one of the first two draws at 0.5 holds its request, so one
    // of two concurrent posts is held and the other goes straight through.
    let sandbox = start_with(
        "delay_ms=2000@0.5",
        Setup {
            seed: Some(0),
            ..Setup::default()
        },
    )
    .await;
    let key = "po:acme:int_11";
    let timed = || async {
        let response = sandbox.post(PO, Some(key), ORDER).await.expect("answered");
        let status = response.status();
        let body = json_of(response).await;
        (Instant::now(), status, body)
    };
    let (a, b) = tokio::join!(timed(), timed());
    let (first, last) = if a.0 <= b.0 { (a, b) } else { (b, a) };
    assert_eq!(first.1, StatusCode::CREATED, "the request not held creates");
    assert_eq!(last.1, StatusCode::OK, "the held request replays");
    assert_eq!(last.2["replayed"], true);
    assert_eq!(first.2["id"], last.2["id"]);
    assert_eq!(sandbox.effects(key).await, 1);
    sandbox.stop().await;
}

#[tokio::test]
async fn a_held_creation_takes_effect_after_its_caller_gave_up() {
    // The caller gives up a second in, time enough for its request to reach the sandbox
    // on a loaded machine; the creation is held three.
    let sandbox = start("delay_ms=3000").await;
    let key = "po:acme:int_12";
    let impatient = intentdesk::tls::client(None)
        .expect("a TLS client")
        .no_proxy()
        .timeout(Duration::from_secs(1))
        .build()
        .expect("client builds");
    let err = impatient
        .post(format!("{}/{PO}", sandbox.base))
        .header("Idempotency-Key", key)
        .header("content-type", "application/json")
        .body(ORDER)
        .send()
        .await
        .expect_err("the caller times out first");
    assert!(err.is_timeout(), "{err}");

    let deadline = Instant::now() + PATIENCE;
    while sandbox.state.effects_for(&key.parse().expect("key")) == 0 {
        assert!(
            Instant::now() < deadline,
            "the held creation never took effect"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(sandbox.effects(key).await, 1);
    sandbox.stop().await;
}

#[tokio::test]
async fn a_restarted_sandbox_hands_out_new_ids() {
    let first = start("none").await;
    let second = start("none").await;
    assert_ne!(first.state.instance(), second.state.instance());
    let a = json_of(
        first
            .post(PO, Some("po:acme:int_13"), ORDER)
            .await
            .expect("answered"),
    )
    .await;
    let b = json_of(
        second
            .post(PO, Some("po:acme:int_13"), ORDER)
            .await
            .expect("answered"),
    )
    .await;
    assert_ne!(
        a["id"], b["id"],
        "both are the first record of their instance"
    );
    first.stop().await;
    second.stop().await;
}

#[tokio::test]
async fn effects_of_a_key_count_replays_apart() {
    let sandbox = start("none").await;
    let key = "po:acme:int_14";
    for _ in 0..3 {
        sandbox.post(PO, Some(key), ORDER).await.expect("answered");
    }
    let body = json_of(
        sandbox
            .http
            .get(sandbox.url("/_sandbox/effects", "action_key", key))
            .send()
            .await
            .expect("answered"),
    )
    .await;
    assert_eq!(body, json!({"action_key": key, "effects": 1, "replays": 2}));
    sandbox.stop().await;
}

#[tokio::test]
async fn health_answers_ok() {
    let sandbox = start("refuse=0").await;
    let response = sandbox
        .http
        .get(format!("{}/healthz", sandbox.base))
        .send()
        .await
        .expect("answered");
    assert_eq!(response.status(), StatusCode::OK);
    sandbox.stop().await;
}

/// What the test receiver saw: the Authorization header and the JSON body.
type Seen = (Option<String>, Value);

async fn receiver() -> (String, mpsc::UnboundedReceiver<Seen>, oneshot::Sender<()>) {
    use axum::extract::State;
    use axum::http::HeaderMap;
    use axum::routing::post;

    async fn receive(
        State(seen): State<mpsc::UnboundedSender<Seen>>,
        headers: HeaderMap,
        axum::Json(body): axum::Json<Value>,
    ) -> StatusCode {
        let auth = headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let _ = seen.send((auth, body));
        StatusCode::ACCEPTED
    }

    let (seen_tx, seen_rx) = mpsc::unbounded_channel();
    let app = axum::Router::new()
        .route("/v1/receipts/erp", post(receive))
        .with_state(seen_tx);
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind port 0");
    let addr = listener.local_addr().expect("local addr");
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = stop_rx.await;
            })
            .await;
    });
    (format!("http://{addr}/v1/receipts/erp"), seen_rx, stop_tx)
}

#[tokio::test]
async fn each_creation_is_delivered_redeliver_times_with_one_event_id() {
    let (url, mut seen, stop_receiver) = receiver().await;
    let target = WebhookTarget {
        url: url.parse().expect("receiver URL"),
        token: Some("hook-secret".to_owned()),
    };
    let sandbox = start_with(
        "redeliver=3",
        Setup {
            webhook: Some(target),
            ..Setup::default()
        },
    )
    .await;
    let key = "po:acme:int_10";
    let response = sandbox.post(PO, Some(key), ORDER).await.expect("answered");
    assert_eq!(response.status(), StatusCode::CREATED);

    let mut deliveries = Vec::new();
    for _ in 0..3 {
        let delivery = tokio::time::timeout(PATIENCE, seen.recv())
            .await
            .expect("webhook arrives")
            .expect("receiver still open");
        deliveries.push(delivery);
    }
    for (auth, event) in &deliveries {
        assert_eq!(auth.as_deref(), Some("Bearer hook-secret"));
        assert_eq!(event, &deliveries[0].1);
    }
    let event = &deliveries[0].1;
    assert_eq!(event["event_id"], sandbox.id("evt", 1));
    assert_eq!(event["action_key"], key);
    assert_eq!(event["resource"], PO);
    assert_eq!(event["downstream_id"], sandbox.id("po", 1));
    assert_eq!(event["status"], "created");
    assert!(event["occurred_at_ms"].as_u64().is_some());

    sandbox.stop().await;
    let _ = stop_receiver.send(());
}
