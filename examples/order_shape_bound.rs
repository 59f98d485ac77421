//! A measuring instrument, not a coordinator: the order path's HTTP exchanges with no store
//! and no checks behind them, to find how many whole orders a second the load generator,
//! the sandbox and the machine allow before anything intentdesk stores or decides.
//!
//! It answers the peer harness's `intentdesk-order` shape as the coordinator does:
//! `POST /v1/intents` (201, an intent of the coordinator's size), `.../authorize` (200),
//! `.../dispatch` (202, then one `POST` to the downstream with the action key as its
//! `Idempotency-Key`, its answer read and parsed), the downstream's receipt webhook (200)
//! and `GET /metrics` with the committed count the harness drains on. Every body is parsed
//! as JSON, as the coordinator parses it, and every answer is written by the coordinator's
//! wire types (`intentdesk::wire`) with its allocator, which linking the crate brings;
//! nothing is kept but an id's caller key, in memory.
//! `benches/side_by_side.sh` runs it with `BOUND=1` (docs/throughput-log.md).
//!
//! Run: `cargo run --release --no-default-features --example order_shape_bound -- \
//!   127.0.0.1:7410 http://127.0.0.1:7420`

use std::collections::HashMap;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::serve::ListenerExt;
use intentdesk::domain::{ActionKey, IntentId, IntentState};
use intentdesk::wire::intent::{Dispatched, Intent};

/// An intent as the coordinator answers a create of the peer harness's, field for field;
/// each answer is a copy with its own id, caller key, action key and state, written by the
/// coordinator's own wire type (about 1.2 KB).
const TEMPLATE: &str = r#"{"id":"int_01m981dfxf0z7kk3kbrkznhj40","tenant":"tenant-1","caller_key":"","actor":"load","purpose":"benchmark","operation":"purchase_order.create","tool":"erp","consequence":"write","canonical_args_hash":"3f0558ed110f5c082044b9c7acfb9b058a88162dcd0cae9d481c8c3482a30688","release_id":"bench","locale":"en-US","connector":"erp","action_key":"po:tenant-1:int_01m981dfxf0z7kk3kbrkznhj40","state":"prepared","state_reason":null,"authorization_version":null,"approver":null,"authorized_at_ms":null,"authorization_expires_at_ms":null,"policy_version":null,"created_by":"load","attempts":0,"max_attempts":3,"created_at_ms":1796639997871,"updated_at_ms":1796639997871,"deadline_at_ms":1796640297871,"indeterminate_since_ms":null,"committed_at_ms":null,"first_dispatch_at_ms":null,"key_retention_secs":86400,"receipt_id":null,"downstream_ref":null,"retry_owner":"coordinator","providers":[],"paused":false,"may_have_crossed_boundary":false,"lookups":0,"last_lookup_at_ms":null,"next_lookup_at_ms":null,"lookups_exhausted_at_ms":null,"cancel_requested_at_ms":null,"cancel_requested_by":null,"cancel_reason":null,"workflow_id":null,"parent_intent_id":null,"supersedes":null,"superseded_by":null}"#;

#[derive(Clone)]
struct Bound {
    template: Arc<Intent>,
    next_id: Arc<AtomicU64>,
    committed: Arc<AtomicU64>,
    caller_keys: Arc<Mutex<HashMap<IntentId, String>>>,
    http: reqwest::Client,
    downstream: String,
}

impl Bound {
    /// The intent `id` in `state`, as the coordinator's answer carries it.
    fn intent(&self, id: IntentId, caller_key: String, state: IntentState) -> Intent {
        let mut intent = (*self.template).clone();
        intent.action_key = ActionKey::new(&intent.operation, &intent.tenant, &id);
        intent.id = id;
        intent.caller_key = caller_key;
        intent.state = state;
        intent
    }

    /// The intent named by a path, as the coordinator reads it: none for an id that is not
    /// one (404).
    fn named(&self, raw: &str, state: IntentState) -> Option<Intent> {
        let id = IntentId::from_str(raw).ok()?;
        let keys = self
            .caller_keys
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let caller_key = keys.get(&id).cloned().unwrap_or_default();
        drop(keys);
        Some(self.intent(id, caller_key, state))
    }
}

fn json(status: StatusCode, body: &impl serde::Serialize) -> Response {
    match serde_json::to_vec(body) {
        Ok(bytes) => (status, [(header::CONTENT_TYPE, "application/json")], bytes).into_response(),
        Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}

/// The answer to a body that is not JSON; `None` when it is.
fn refused(body: &[u8]) -> Option<Response> {
    let parsed = serde_json::from_slice::<serde_json::Value>(body);
    parsed.err().map(|e| {
        let error = serde_json::json!({ "error": e.to_string() });
        json(StatusCode::BAD_REQUEST, &error)
    })
}

async fn create(State(bound): State<Bound>, headers: HeaderMap, body: Bytes) -> Response {
    if let Some(refused) = refused(&body) {
        return refused;
    }
    let caller_key = headers
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let seq = bound.next_id.fetch_add(1, Ordering::Relaxed);
    let id = IntentId::generate(1_796_639_997_871, u128::from(seq));
    let mut keys = bound
        .caller_keys
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    keys.insert(id.clone(), caller_key.clone());
    drop(keys);
    let intent = bound.intent(id, caller_key, IntentState::Prepared);
    json(StatusCode::CREATED, &intent)
}

async fn authorize(State(bound): State<Bound>, Path(raw): Path<String>, body: Bytes) -> Response {
    if let Some(refused) = refused(&body) {
        return refused;
    }
    match bound.named(&raw, IntentState::Authorized) {
        Some(intent) => json(StatusCode::OK, &intent),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

async fn dispatch(State(bound): State<Bound>, Path(raw): Path<String>, body: Bytes) -> Response {
    if let Some(refused) = refused(&body) {
        return refused;
    }
    let Some(intent) = bound.named(&raw, IntentState::Executing) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let send = bound.clone();
    let (id, key) = (intent.id.clone(), intent.action_key.clone());
    tokio::spawn(async move {
        let sent = send
            .http
            .post(format!("{}/purchase-orders", send.downstream))
            .header("Idempotency-Key", key.as_str())
            .header(header::CONTENT_TYPE, "application/json")
            .body(r#"{"title":"intent","priority":"1","ref":"bound"}"#)
            .send()
            .await;
        let reply = match sent {
            Ok(reply) => reply.bytes().await,
            Err(e) => Err(e),
        };
        match reply.map(|b| serde_json::from_slice::<serde_json::Value>(&b)) {
            Ok(Ok(_)) => {
                send.committed.fetch_add(1, Ordering::Relaxed);
            }
            Ok(Err(e)) => eprintln!("the downstream's answer for {id} is not JSON: {e}"),
            Err(e) => eprintln!("the send of {id} failed: {e}"),
        }
    });
    let answer = Dispatched {
        dispatched: true,
        intent,
    };
    json(StatusCode::ACCEPTED, &answer)
}

async fn receipt(body: Bytes) -> Response {
    if let Some(refused) = refused(&body) {
        return refused;
    }
    json(StatusCode::OK, &serde_json::json!({ "accepted": true }))
}

async fn metrics(State(bound): State<Bound>) -> String {
    format!(
        "intentdesk_intents{{state=\"committed\"}} {}\n",
        bound.committed.load(Ordering::Relaxed)
    )
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(listen), Some(downstream)) = (args.next(), args.next()) else {
        return Err("usage: order_shape_bound LISTEN_ADDRESS DOWNSTREAM_BASE_URL".into());
    };
    // Loopback only, as every load this project runs: where it listens and where it sends.
    let listen: std::net::SocketAddr = listen
        .parse()
        .map_err(|e| format!("the listen address {listen} is not an address and port: {e}"))?;
    if !listen.ip().is_loopback() {
        return Err(format!("{listen} is not a loopback address").into());
    }
    let downstream_url = reqwest::Url::parse(&downstream)
        .map_err(|e| format!("the downstream URL {downstream} is not a URL: {e}"))?;
    let host = downstream_url.host_str().unwrap_or_default();
    let loopback = host == "localhost"
        || host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    if !loopback {
        return Err(
            format!("the downstream {downstream} is not on this machine's loopback").into(),
        );
    }
    // reqwest is built without a TLS provider of its own; the coordinator installs this one.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let template: Intent = serde_json::from_str(TEMPLATE)?;
    let bound = Bound {
        template: Arc::new(template),
        next_id: Arc::new(AtomicU64::new(0)),
        committed: Arc::new(AtomicU64::new(0)),
        caller_keys: Arc::new(Mutex::new(HashMap::new())),
        http: reqwest::Client::builder().tcp_nodelay(true).build()?,
        downstream: downstream.trim_end_matches('/').to_string(),
    };
    let app = Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/metrics", get(metrics))
        .route("/v1/intents", post(create))
        .route("/v1/intents/{id}/authorize", post(authorize))
        .route("/v1/intents/{id}/dispatch", post(dispatch))
        .route("/v1/receipts/{connector}", post(receipt))
        .with_state(bound);
    let listener = tokio::net::TcpListener::bind(listen).await?;
    // As the coordinator's accepted connections: answers leave without waiting to gather.
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, app).await?;
    Ok(())
}
