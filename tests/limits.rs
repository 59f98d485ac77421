//! The server's edges, tried as a slow, stuck or greedy client would: headers that never
//! finish, more connections than the cap, more requests in progress than the cap (for all
//! tokens and for one), and a request that is never answered in time. Each limit answers
//! as HTTP says, with `Retry-After`, and gives its place back once the client lets go.
//!
//! A request is held "in progress" the way a slow client holds one: its headers sent, its
//! body never finished.

mod common;

use std::time::{Duration, Instant};

use common::deploy::{Coordinator, Sandbox, Setup, Token, sandbox};
use intentdesk::coordinator::Config;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const ADMIN: &str = "limits-admin";
const AGENT_A: &str = "limits-agent-a";
const AGENT_B: &str = "limits-agent-b";
const VIEWER_A: &str = "limits-viewer-a";
const VIEWER_B: &str = "limits-viewer-b";

/// Guards against a hang; never a stand-in for synchronisation.
const PATIENCE: Duration = Duration::from_secs(10);

fn token(role: &'static str, name: &'static str, secret: &'static str) -> Token {
    Token {
        name,
        secret,
        role,
        tenants: r#"["*"]"#,
        connectors: "",
    }
}

struct Rig {
    dir: tempfile::TempDir,
    _downstream: Sandbox,
    coordinator: Coordinator,
    http: reqwest::Client,
}

async fn rig(limits: &str) -> Rig {
    rig_with(limits, "").await
}

async fn rig_with(limits: &str, top_level: &str) -> Rig {
    let dir = tempfile::tempdir().expect("temp dir");
    let downstream = sandbox("none", None, Some(1)).await;
    let tokens = vec![
        Token::all_tenants("admin", ADMIN),
        token("agent", "agent-a", AGENT_A),
        token("agent", "agent-b", AGENT_B),
        token("viewer", "viewer-a", VIEWER_A),
        token("viewer", "viewer-b", VIEWER_B),
    ];
    let mut setup = Setup::new(dir.path(), &downstream.url, tokens);
    setup.reconcile = false;
    setup.timeout_ms = 100;
    setup.tables = format!("[limits]\n{limits}\n");
    setup.top_level = top_level.to_string();
    let coordinator = Coordinator::start(&setup).await;
    let http = intentdesk::tls::client(None)
        .expect("a TLS client")
        .no_proxy()
        .pool_max_idle_per_host(0)
        .build()
        .expect("client");
    let rig = Rig {
        dir,
        _downstream: downstream,
        coordinator,
        http,
    };
    rig.until_status(ADMIN, 200).await;
    rig
}

impl Rig {
    async fn get(&self, path: &str, token: &str) -> reqwest::Response {
        self.http
            .get(format!("{}{path}", self.coordinator.base))
            .bearer_auth(token)
            .send()
            .await
            .expect("the coordinator answers")
    }

    async fn post(&self, path: &str, token: &str, key: &str, body: &Value) -> reqwest::Response {
        self.http
            .post(format!("{}{path}", self.coordinator.base))
            .bearer_auth(token)
            .header("idempotency-key", key)
            .json(body)
            .send()
            .await
            .expect("the coordinator answers")
    }

    /// One figure of `/metrics`.
    async fn metric(&self, name: &str) -> u64 {
        let text = self
            .get("/metrics", ADMIN)
            .await
            .text()
            .await
            .expect("text");
        text.lines()
            .find_map(|line| line.strip_prefix(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no {name} in {text}"))
            .parse()
            .expect("a number")
    }

    async fn whoami(&self, token: &str) -> reqwest::Response {
        self.get("/v1/whoami", token).await
    }

    /// `GET /v1/events`, answered; an open stream while the answer is kept.
    async fn stream(&self, token: &str) -> reqwest::Response {
        self.get("/v1/events", token).await
    }

    /// Ask `path` until the answer has `status` (a limit takes hold, or lets go, once the
    /// coordinator has seen what the test's other connections did).
    async fn until(&self, path: &str, token: &str, status: u16) -> reqwest::Response {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let response = self.get(path, token).await;
            if response.status().as_u16() == status {
                return response;
            }
            assert!(
                Instant::now() < deadline,
                "{path} never answered {status}; the last answer was {}",
                response.status()
            );
            tokio::task::yield_now().await;
        }
    }

    async fn until_status(&self, token: &str, status: u16) -> reqwest::Response {
        self.until("/v1/whoami", token, status).await
    }

    /// A create whose body never finishes: a request in progress for as long as the
    /// returned connection is open. It asks for `100 Continue`, which the server sends only
    /// once the handler reads the body, past the limits: when this returns, the request
    /// holds its places. Without that, a probe sent right after could be admitted first and
    /// the held request refused in its stead.
    async fn hold_request(&self, token: &str) -> TcpStream {
        let mut stream = TcpStream::connect(self.coordinator.addr)
            .await
            .expect("connect");
        let head = format!(
            "POST /v1/intents HTTP/1.1\r\nhost: test\r\nauthorization: Bearer {token}\r\n\
             content-type: application/json\r\ncontent-length: 200\r\n\
             expect: 100-continue\r\n\r\n"
        );
        stream.write_all(head.as_bytes()).await.expect("write");
        let interim = tokio::time::timeout(PATIENCE, read_head(&mut stream))
            .await
            .expect("the server answers the request's head");
        assert!(
            interim.starts_with("HTTP/1.1 100"),
            "the held request was not let in: {interim:?}"
        );
        stream.write_all(b"{\"tenant\":").await.expect("write");
        stream
    }
}

/// One response head from `stream`, up to and with its blank line and not a byte more (or
/// what came before the server closed it).
async fn read_head(stream: &mut TcpStream) -> String {
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        match stream.read_u8().await {
            Ok(byte) => head.push(byte),
            // Closed: what came is the answer.
            Err(_) => break,
        }
    }
    String::from_utf8_lossy(&head).into_owned()
}

/// What a limit says: its status, its `Retry-After`, its error code.
async fn refusal(response: reqwest::Response) -> (u16, Option<String>, String) {
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().expect("ASCII").to_string());
    let body: Value = response.json().await.expect("a JSON error");
    let code = body["error"]["code"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    (status, retry_after, code)
}

/// Everything the server writes on `stream` until it closes it.
async fn read_until_closed(stream: &mut TcpStream) -> String {
    let mut out = Vec::new();
    tokio::time::timeout(PATIENCE, stream.read_to_end(&mut out))
        .await
        .expect("the server closes the connection")
        .expect("read");
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headers_that_never_finish_lose_their_connection() {
    let rig = rig("header_read_timeout_ms = 200").await;
    let mut slow = TcpStream::connect(rig.coordinator.addr)
        .await
        .expect("connect");
    slow.write_all(b"GET /v1/whoami HTTP/1.1\r\nhost: test\r\n")
        .await
        .expect("write");
    let answer = read_until_closed(&mut slow).await;
    assert!(
        answer.is_empty() || answer.starts_with("HTTP/1.1 408"),
        "a connection whose headers never finish is closed, at most with a 408: {answer:?}"
    );
    // Everyone else is served as before.
    assert_eq!(rig.whoami(ADMIN).await.status().as_u16(), 200);
}

/// Many slow senders at once, each trickling its headers a byte at a time: every one is
/// closed within the header timeout, and `/healthz` answers all the while.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trickling_senders_are_closed_and_health_answers_throughout() {
    let rig = rig("header_read_timeout_ms = 500").await;
    const SENDERS: usize = 64;
    let mut senders = Vec::new();
    for _ in 0..SENDERS {
        let addr = rig.coordinator.addr;
        senders.push(tokio::spawn(async move {
            let mut stream = TcpStream::connect(addr).await.expect("connect");
            let started = Instant::now();
            let head = b"GET /v1/whoami HTTP/1.1\r\nhost: test\r\nx-slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
            for byte in head.iter().cycle() {
                if stream.write_all(std::slice::from_ref(byte)).await.is_err() {
                    break;
                }
                // A byte every 50 ms: far slower than any client, never silent for long.
                tokio::time::sleep(Duration::from_millis(50)).await;
                assert!(started.elapsed() < PATIENCE, "a trickling sender was never closed");
            }
            started.elapsed()
        }));
    }
    let health = rig
        .http
        .get(format!("{}/healthz", rig.coordinator.base))
        .send()
        .await
        .expect("health answers");
    assert_eq!(health.status().as_u16(), 200);
    for sender in senders {
        let held = sender.await.expect("sender");
        assert!(held < Duration::from_secs(5), "held for {held:?}");
    }
    assert_eq!(rig.whoami(ADMIN).await.status().as_u16(), 200);
}

/// A connection that never sends a byte, or sends nothing more after an answer, holds a
/// place among `max_connections`: it is closed too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_lose_their_place() {
    let rig = rig("header_read_timeout_ms = 200").await;
    let mut silent = TcpStream::connect(rig.coordinator.addr)
        .await
        .expect("connect");
    assert_eq!(read_until_closed(&mut silent).await, "");

    let mut kept_alive = TcpStream::connect(rig.coordinator.addr)
        .await
        .expect("connect");
    kept_alive
        .write_all(
            format!(
                "GET /v1/whoami HTTP/1.1\r\nhost: test\r\nauthorization: Bearer {ADMIN}\r\n\r\n"
            )
            .as_bytes(),
        )
        .await
        .expect("write");
    let answer = read_until_closed(&mut kept_alive).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_past_the_cap_is_answered_503_with_retry_after() {
    let rig = rig("max_connections = 2").await;
    // Connections answered and kept alive hold their places; the connection the rig asked
    // with a moment ago may still hold one until the server sees it closed, so the refusal
    // comes at the second or the third.
    let whoami =
        format!("GET /v1/whoami HTTP/1.1\r\nhost: test\r\nauthorization: Bearer {ADMIN}\r\n\r\n");
    let mut kept = Vec::new();
    let refused = loop {
        let mut connection = TcpStream::connect(rig.coordinator.addr)
            .await
            .expect("connect");
        connection
            .write_all(whoami.as_bytes())
            .await
            .expect("write");
        let answer = read_until_closed_or_answered(&mut connection).await;
        if answer.starts_with("HTTP/1.1 200") {
            kept.push(connection);
            assert!(kept.len() <= 2, "a third connection was served");
            continue;
        }
        break answer;
    };
    assert!(refused.starts_with("HTTP/1.1 503"), "{refused:?}");
    assert!(refused.contains("retry-after: 1"), "{refused:?}");
    assert!(refused.contains("\"overloaded\""), "{refused:?}");
    drop(kept);
    rig.until_status(ADMIN, 200).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_past_a_tokens_cap_get_429_and_past_the_global_cap_503() {
    let rig = rig("max_concurrent_requests = 2\nmax_concurrent_per_token = 1").await;
    let held_a = rig.hold_request(AGENT_A).await;
    let (status, retry_after, code) = refusal(rig.until_status(AGENT_A, 429).await).await;
    assert_eq!((status, code.as_str()), (429, "too_many_requests"));
    assert_eq!(retry_after.as_deref(), Some("1"));
    // The refusal comes no sooner than the pause it asks for: a caller that does not wait
    // is slowed to one refusal per connection per pause.
    let asked = Instant::now();
    assert_eq!(rig.whoami(AGENT_A).await.status().as_u16(), 429);
    assert!(asked.elapsed() >= intentdesk::coordinator::limits::OVER_CAP_PAUSE);
    // Another token still has its own place, and the server one more.
    assert_eq!(rig.whoami(AGENT_B).await.status().as_u16(), 200);

    let held_b = rig.hold_request(AGENT_B).await;
    let (status, retry_after, code) = refusal(rig.until_status(ADMIN, 503).await).await;
    assert_eq!((status, code.as_str()), (503, "overloaded"));
    assert_eq!(retry_after.as_deref(), Some("1"));

    // Letting go gives the places back.
    drop((held_a, held_b));
    rig.until_status(ADMIN, 200).await;
    rig.until_status(AGENT_A, 200).await;
    // The held creates never finished their bodies: nothing was stored.
    let list: Value = rig
        .get("/v1/intents", ADMIN)
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(list["items"].as_array().map(Vec::len), Some(0), "{list}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_not_answered_in_time_gets_503_with_retry_after() {
    let rig = rig("request_timeout_ms = 300").await;
    // Not `hold_request`: the timeout runs from the limit layer on, and could answer
    // before the `100 Continue` that one waits for.
    let mut held = TcpStream::connect(rig.coordinator.addr)
        .await
        .expect("connect");
    held.write_all(
        format!(
            "POST /v1/intents HTTP/1.1\r\nhost: test\r\nauthorization: Bearer {AGENT_A}\r\n\
             content-type: application/json\r\ncontent-length: 200\r\n\r\n{{\"tenant\":"
        )
        .as_bytes(),
    )
    .await
    .expect("write");
    let answer = read_until_closed_or_answered(&mut held).await;
    assert!(
        answer.starts_with("HTTP/1.1 503"),
        "a request not answered in time is answered 503: {answer:?}"
    );
    assert!(
        answer.to_ascii_lowercase().contains("retry-after: 1"),
        "{answer:?}"
    );
    assert!(answer.contains("\"timeout\""), "{answer:?}");
}

/// The server's first answer on `stream` (the whole of it that arrives before it pauses).
async fn read_until_closed_or_answered(stream: &mut TcpStream) -> String {
    let mut buf = vec![0u8; 4096];
    let n = tokio::time::timeout(PATIENCE, stream.read(&mut buf))
        .await
        .expect("the server answers")
        .expect("read");
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn event_streams_past_a_tokens_cap_get_429_and_past_the_global_cap_503() {
    let rig = rig("max_event_streams = 2\nmax_event_streams_per_token = 1").await;
    let first = rig.stream(VIEWER_A).await;
    assert_eq!(first.status().as_u16(), 200);
    let (status, retry_after, code) = refusal(rig.stream(VIEWER_A).await).await;
    assert_eq!((status, code.as_str()), (429, "too_many_streams"));
    assert_eq!(retry_after.as_deref(), Some("1"));
    let second = rig.stream(VIEWER_B).await;
    assert_eq!(second.status().as_u16(), 200);
    let (status, retry_after, code) = refusal(rig.stream(ADMIN).await).await;
    assert_eq!((status, code.as_str()), (503, "overloaded"));
    assert_eq!(retry_after.as_deref(), Some("1"));
    // A stream that ends gives its places back.
    drop(first);
    let again = rig.until("/v1/events", ADMIN, 200).await;
    assert_eq!(again.status().as_u16(), 200);
    drop(second);
    rig.until("/v1/events", VIEWER_A, 200).await;
}

fn order(item: &str) -> Value {
    serde_json::json!({
        "tenant": "acme", "actor": "agent", "purpose": "restock",
        "operation": "purchase_order.create", "tool": "erp.po", "consequence": "write",
        "args": {"item": item, "qty": 5}, "deadline_secs": 600, "max_attempts": 3,
        "release_id": "r1", "locale": "en-US", "connector": "erp"
    })
}

/// The store held by something slower than the coordinator (here another connection holding
/// the database's write lock, as a stalled disk would): agents' writes past
/// `max_queued_writes` are refused at once with 503 and nothing of them is stored, reads go
/// on, and an operator's command waits ahead of the queued ingest instead of being refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_write_queue_sheds_ingest_at_once_and_stores_nothing() {
    let rig = rig("max_queued_writes = 2").await;
    let lock = rig.hold_store();

    let queued: Vec<_> = ["first", "second"]
        .into_iter()
        .map(|key| spawn_create(&rig, key))
        .collect();
    // Both wait for the writer once the coordinator counts them.
    rig.until_waiting(2, "the two creates").await;

    let shed = rig
        .post("/v1/intents", AGENT_A, "third", &order("third"))
        .await;
    let (status, retry_after, code) = refusal(shed).await;
    assert_eq!((status, code.as_str()), (503, "overloaded"));
    assert_eq!(retry_after.as_deref(), Some("1"));
    assert_eq!(rig.metric("intentdesk_ingest_shed_total").await, 1);
    // Reads do not wait for the writer.
    assert_eq!(rig.get("/v1/intents", ADMIN).await.status().as_u16(), 200);
    // An operator's command is queued, not shed.
    let pause = serde_json::json!({"command_id": "cmd_01kb0000000000000000000001",
        "kind": "pause", "target": {"scope": {"tenant": "acme"}}, "reason": "disk stall"});
    let command = {
        let (http, base) = (rig.http.clone(), rig.coordinator.base.clone());
        tokio::spawn(async move {
            http.post(format!("{base}/v1/commands"))
                .bearer_auth(ADMIN)
                .json(&pause)
                .send()
                .await
                .expect("answered")
                .status()
                .as_u16()
        })
    };

    lock.execute_batch("ROLLBACK").expect("let the writer go");
    for create in queued {
        assert_eq!(create.await.expect("task"), 201);
    }
    assert_eq!(command.await.expect("task"), 201);
    assert_eq!(rig.metric("intentdesk_ingest_writes_waiting").await, 0);
    // Nothing of the shed create was stored: the same key now creates its intent anew.
    let again = rig
        .post("/v1/intents", AGENT_A, "third", &order("third"))
        .await;
    assert_eq!(again.status().as_u16(), 201, "the shed create left a trace");
    let list: Value = rig
        .get("/v1/intents", ADMIN)
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(list["items"].as_array().map(Vec::len), Some(3), "{list}");
}

/// A batch of `keys`, each an `order` under its own key.
fn batch(keys: &[&str]) -> Value {
    let intents: Vec<Value> = keys
        .iter()
        .map(|key| {
            let mut item = order(key);
            item["idempotency_key"] = Value::from(*key);
            item
        })
        .collect();
    serde_json::json!({ "intents": intents })
}

/// Create `order(key)` under `key` as agent A in a task of its own: its status, once answered.
fn spawn_create(rig: &Rig, key: &'static str) -> tokio::task::JoinHandle<u16> {
    let (http, base) = (rig.http.clone(), rig.coordinator.base.clone());
    tokio::spawn(async move {
        http.post(format!("{base}/v1/intents"))
            .bearer_auth(AGENT_A)
            .header("idempotency-key", key)
            .json(&order(key))
            .send()
            .await
            .expect("answered")
            .status()
            .as_u16()
    })
}

/// Post `body` as a batch in a task of its own: the statuses of its results, once answered.
fn spawn_batch(rig: &Rig, token: &'static str, body: Value) -> tokio::task::JoinHandle<Vec<u64>> {
    let (http, base) = (rig.http.clone(), rig.coordinator.base.clone());
    tokio::spawn(async move {
        let answer: Value = http
            .post(format!("{base}/v1/intents/batch"))
            .bearer_auth(token)
            .json(&body)
            .send()
            .await
            .expect("answered")
            .json()
            .await
            .expect("json");
        answer["results"]
            .as_array()
            .map(|r| r.iter().filter_map(|x| x["status"].as_u64()).collect())
            .unwrap_or_default()
    })
}

impl Rig {
    async fn post_batch(&self, token: &str, body: &Value) -> reqwest::Response {
        self.http
            .post(format!("{}/v1/intents/batch", self.coordinator.base))
            .bearer_auth(token)
            .json(body)
            .send()
            .await
            .expect("answered")
    }

    /// Another connection holding the database's write lock, as a stalled disk would hold
    /// the writer, until it rolls back.
    fn hold_store(&self) -> rusqlite::Connection {
        let lock =
            rusqlite::Connection::open(self.dir.path().join("coordinator.sqlite")).expect("open");
        lock.execute_batch("BEGIN IMMEDIATE")
            .expect("take the write lock");
        lock
    }

    async fn until_waiting(&self, writes: u64, what: &str) {
        let deadline = Instant::now() + PATIENCE;
        while self.metric("intentdesk_ingest_writes_waiting").await < writes {
            assert!(Instant::now() < deadline, "{what} never queued");
            tokio::task::yield_now().await;
        }
    }
}

/// A batch holds a place in the write queue for each intent it carries, and is admitted
/// only when all of them are free: with `max_queued_writes = 3` and a batch of two waiting
/// behind a held store, another batch of two is shed at once and stores nothing, while a
/// single create still fits; the batch is then written whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_holds_a_place_in_the_write_queue_for_each_of_its_intents() {
    let rig = rig("max_queued_writes = 3").await;
    let lock = rig.hold_store();
    let waiting = spawn_batch(&rig, AGENT_A, batch(&["b-1", "b-2"]));
    rig.until_waiting(2, "the batch").await;

    let another = rig.post_batch(AGENT_A, &batch(&["c-1", "c-2"])).await;
    let (status, _, code) = refusal(another).await;
    assert_eq!((status, code.as_str()), (503, "overloaded"));
    assert_eq!(rig.metric("intentdesk_ingest_shed_total").await, 2);
    let single = spawn_create(&rig, "one");
    rig.until_waiting(3, "the single create").await;
    let full = rig.post("/v1/intents", AGENT_A, "two", &order("two")).await;
    let (status, _, code) = refusal(full).await;
    assert_eq!((status, code.as_str()), (503, "overloaded"));

    lock.execute_batch("ROLLBACK").expect("let the writer go");
    assert_eq!(waiting.await.expect("task"), [201, 201]);
    assert_eq!(single.await.expect("task"), 201);
    assert_eq!(rig.metric("intentdesk_ingest_writes_waiting").await, 0);
    for key in ["c-1", "c-2", "two"] {
        let again = rig.post("/v1/intents", AGENT_A, key, &order(key)).await;
        assert_eq!(
            again.status().as_u16(),
            201,
            "the shed create of {key} left a trace"
        );
    }
}

/// A batch holds one of its token's places for each of its intents, so one token's batches
/// take no more of the coordinator than as many single requests could: with
/// `max_concurrent_per_token = 4`, a batch of five is refused as too large for the token, and
/// while a batch of three is in progress another batch of two from the same token is 429;
/// another token's batch goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_holds_a_place_of_its_token_for_each_of_its_intents() {
    let rig = rig("max_concurrent_per_token = 4").await;
    let too_large = rig
        .post_batch(AGENT_A, &batch(&["x-1", "x-2", "x-3", "x-4", "x-5"]))
        .await;
    assert_eq!(too_large.status().as_u16(), 400);
    let error: Value = too_large.json().await.expect("json");
    assert!(error["error"]["fields"]["intents"].is_string(), "{error}");

    let lock = rig.hold_store();
    let first = spawn_batch(&rig, AGENT_A, batch(&["a-1", "a-2", "a-3"]));
    rig.until_waiting(3, "the first batch").await;
    let over = rig.post_batch(AGENT_A, &batch(&["a-4", "a-5"])).await;
    let (status, retry_after, code) = refusal(over).await;
    assert_eq!((status, code.as_str()), (429, "too_many_requests"));
    assert_eq!(retry_after.as_deref(), Some("1"));
    let other = spawn_batch(&rig, AGENT_B, batch(&["b-1", "b-2"]));
    rig.until_waiting(5, "the other token's batch").await;

    lock.execute_batch("ROLLBACK").expect("let the writer go");
    assert_eq!(first.await.expect("task"), [201, 201, 201]);
    assert_eq!(other.await.expect("task"), [201, 201]);
    let again = spawn_batch(&rig, AGENT_A, batch(&["a-4", "a-5"]));
    assert_eq!(
        again.await.expect("task"),
        [201, 201],
        "the refused batch left a trace"
    );
}

/// The first event frame of a stream opened with `Last-Event-ID: last` (the opening
/// comment skipped).
async fn first_event(rig: &Rig, last: &str) -> String {
    let mut response = rig
        .http
        .get(format!("{}/v1/events", rig.coordinator.base))
        .bearer_auth(ADMIN)
        .header("last-event-id", last)
        .send()
        .await
        .expect("a stream");
    assert_eq!(response.status().as_u16(), 200);
    let mut text = String::new();
    loop {
        let chunk = tokio::time::timeout(PATIENCE, response.chunk())
            .await
            .expect("an event in time")
            .expect("read")
            .expect("the stream stays open");
        text.push_str(&String::from_utf8_lossy(&chunk));
        if let Some(frame) = text
            .split("\n\n")
            .find(|f| f.lines().any(|l| l.starts_with("event: ")))
        {
            return frame.to_string();
        }
    }
}

/// A stream resumed from an event the feed no longer holds is told to read everything
/// again, and goes on from the newest event; one resumed inside the feed is not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_older_than_the_kept_events_gets_the_reset_signal() {
    let rig = rig("").await;
    for n in 0..4 {
        let key = format!("feed-{n}");
        let created = rig.post("/v1/intents", AGENT_A, &key, &order(&key)).await;
        assert_eq!(created.status().as_u16(), 201);
    }
    // Cut the feed back as the coordinator's own pruning does, to its newest event.
    let mut store = intentdesk::store::sqlite::open(
        &rig.dir.path().join("coordinator.sqlite"),
        Default::default(),
    )
    .expect("open");
    use intentdesk::store::ops::*;
    let newest = store.last_event_seq().expect("newest");
    assert!(newest >= 4, "{newest}");
    while store.prune_events(u64::MAX, 1, 100).expect("prune") > 0 {}
    assert_eq!(store.oldest_event_seq().expect("oldest"), Some(newest));

    let reset = first_event(&rig, "1").await;
    assert!(reset.contains("event: reset"), "{reset}");
    assert!(reset.contains(&format!("id: {newest}")), "{reset}");
    let data: Value = serde_json::from_str(
        reset
            .lines()
            .find_map(|l| l.strip_prefix("data: "))
            .expect("data"),
    )
    .expect("JSON");
    assert_eq!(data["code"], "events_pruned");
    assert_eq!(data["resume_from"], newest);

    let unknown = first_event(&rig, &(newest + 1000).to_string()).await;
    assert!(unknown.contains("\"unknown_event_id\""), "{unknown}");

    // From the newest kept event on, the stream simply goes on: the next event is news.
    let later = spawn_create(&rig, "feed-late");
    let next = first_event(&rig, &newest.to_string()).await;
    assert!(next.contains("event: intent"), "{next}");
    assert_eq!(later.await.expect("task"), 201);
}

/// The operators' port has places of its own: with every request place of the main port
/// held by agents, an operator there is still answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operators_port_answers_while_agents_hold_the_main_one() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let rig = rig_with(
        "max_concurrent_requests = 1",
        &format!("operator_listen = \"127.0.0.1:{port}\"\n"),
    )
    .await;
    let held = rig.hold_request(AGENT_A).await;
    let (status, _, code) = refusal(rig.until_status(ADMIN, 503).await).await;
    assert_eq!((status, code.as_str()), (503, "overloaded"));
    let operators = format!("http://127.0.0.1:{port}");
    let deadline = Instant::now() + PATIENCE;
    let answer = loop {
        match rig
            .http
            .get(format!("{operators}/v1/whoami"))
            .bearer_auth(ADMIN)
            .send()
            .await
        {
            Ok(answer) => break answer,
            Err(e) => assert!(
                Instant::now() < deadline,
                "the operators' port never answered: {e}"
            ),
        }
        tokio::task::yield_now().await;
    };
    assert_eq!(answer.status().as_u16(), 200);
    drop(held);
    rig.until_status(ADMIN, 200).await;
}

#[test]
fn limits_that_cannot_work_are_refused_at_start() {
    let base = "listen = \"127.0.0.1:0\"\ndatabase = \"x.sqlite\"\n\
                [[connectors]]\nname = \"erp\"\nbase_url = \"http://127.0.0.1:1\"\ntimeout_ms = 2000\n";
    let zero = Config::parse(&format!("{base}[limits]\nmax_connections = 0\n"), "t")
        .expect_err("no connections at all");
    assert!(
        zero.to_string().contains("limits.max_connections"),
        "{zero}"
    );
    let short = Config::parse(&format!("{base}[limits]\nrequest_timeout_ms = 1000\n"), "t")
        .expect_err("shorter than a connector's timeout");
    assert!(
        short.to_string().contains("request_timeout_ms") && short.to_string().contains("erp"),
        "{short}"
    );
    let unknown = Config::parse(&format!("{base}[limits]\nmax_conections = 5\n"), "t")
        .expect_err("a misspelt key");
    assert!(unknown.to_string().contains("max_conections"), "{unknown}");
}
