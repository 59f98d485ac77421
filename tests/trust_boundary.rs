//! The coordinator's promises against hostile and unlucky callers, each tried for real over
//! HTTP against a coordinator on each backend and the sandbox downstream: receipts only
//! from the connector, attempts owned by who made them, nothing sent after a terminal state
//! or past the key's retention, one crossing per claim however short the lease, keys that
//! never stick, and overload that is not taken as proof. Waits poll for a logical outcome
//! with a bounded patience; none sleeps to synchronise.

use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use tokio::task::JoinSet;

use intentdesk::sandbox::{SandboxState, WebhookTarget};

mod common;
use common::backends::Backend;
use common::deploy::{self, Token};

on_both_backends_tokio! {
    a_forged_receipt_commits_nothing_and_tells_nothing_of_other_tenants,
    an_agent_cannot_change_the_coordinators_attempts_nor_anothers,
    a_cancel_while_a_retry_waits_behind_retry_after_sends_nothing_afterwards,
    replaying_a_key_with_another_operation_tier_connector_or_tenant_is_a_mismatch,
    a_queue_longer_than_the_lease_sends_each_order_once_and_makes_none_indeterminate,
    a_resend_that_would_land_after_the_key_may_be_forgotten_is_not_sent,
    a_resend_held_by_a_pause_goes_after_resume_without_spending_budget,
    a_bare_503_on_a_write_is_looked_up_not_resent,
    a_see_other_after_a_create_is_looked_up_never_rejected,
    an_answer_naming_another_intents_record_commits_nothing,
    a_lookup_naming_another_intents_record_commits_nothing,
    command_ids_are_any_opaque_client_id,
    receipts_and_logs_keep_tokens_out_of_the_logs,
}
on_both_backends_tokio! {
    multi_thread:
    clients_that_hang_up_mid_create_leave_no_key_stuck,
    clients_that_hang_up_mid_dispatch_leave_no_send_unsent,
    concurrent_replays_of_a_finished_key_all_answer_its_first_result,
}

const ADMIN: &str = "trust-admin-token";
const AGENT_ACME: &str = "trust-agent-acme-token";
const AGENT_ACME_2: &str = "trust-agent-acme-2-token";
const AGENT_GLOBEX: &str = "trust-agent-globex-token";
const AGENT_BOTH: &str = "trust-agent-both-token";
const ERP: &str = "trust-erp-connector-token";
const ERP_ACME: &str = "trust-erp-acme-connector-token";
const BANK: &str = "trust-bank-connector-token";
const ENGINEER: &str = "trust-engineer-token";
/// Every secret above, for the log check.
const SECRETS: &[&str] = &[
    ADMIN,
    AGENT_ACME,
    AGENT_ACME_2,
    AGENT_GLOBEX,
    AGENT_BOTH,
    ERP,
    ERP_ACME,
    BANK,
    ENGINEER,
];
/// Guards against a hang; never a stand-in for synchronisation.
const PATIENCE: Duration = Duration::from_secs(30);
const POLL: Duration = Duration::from_millis(25);

fn tokens() -> Vec<Token> {
    let agent = |name, secret, tenants| Token {
        name,
        secret,
        role: "agent",
        tenants,
        connectors: "",
    };
    vec![
        Token::all_tenants("admin", ADMIN),
        Token::all_tenants("engineer", ENGINEER),
        agent("agent-acme", AGENT_ACME, r#"["acme"]"#),
        agent("agent-acme-2", AGENT_ACME_2, r#"["acme"]"#),
        agent("agent-globex", AGENT_GLOBEX, r#"["globex"]"#),
        agent("agent-both", AGENT_BOTH, r#"["acme", "globex"]"#),
        Token::erp_connector(ERP),
        Token {
            name: "erp-acme-connector",
            secret: ERP_ACME,
            role: "connector",
            tenants: r#"["acme"]"#,
            connectors: r#"["erp"]"#,
        },
        Token {
            name: "bank-connector",
            secret: BANK,
            role: "connector",
            tenants: r#"["*"]"#,
            connectors: r#"["bank"]"#,
        },
    ]
}

/// Everything the coordinator and the sandbox log in this test binary, to check that no
/// token is ever printed.
fn captured_logs() -> &'static Arc<Mutex<Vec<u8>>> {
    static LOGS: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    LOGS.get_or_init(|| {
        let logs = Arc::new(Mutex::new(Vec::new()));
        let sink = logs.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new("debug,intentdesk=trace"))
            .with_ansi(false)
            .with_writer(move || LogSink(sink.clone()))
            .finish();
        let _ = tracing::subscriber::set_global_default(subscriber);
        logs
    })
}

struct LogSink(Arc<Mutex<Vec<u8>>>);

impl Write for LogSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if let Ok(mut logs) = self.0.lock() {
            logs.extend_from_slice(buf);
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A coordinator and a sandbox, stopped when dropped.
struct Rig {
    base: String,
    sandbox: SandboxState,
    http: reqwest::Client,
    db: intentdesk::store::Location,
    _coordinator: deploy::Coordinator,
    _sandbox: deploy::Sandbox,
    _dir: tempfile::TempDir,
}

/// The `bank` connector's table: a second connector on the same sandbox.
fn bank_connector(url: &str) -> String {
    format!(
        "[[connectors]]\nname = \"bank\"\nbase_url = \"{url}\"\nkey_retention_secs = 86400\n\
         timeout_ms = 300\noperations = {{ \"purchase_order.create\" = \"purchase-orders\", \
         \"payment.initiate\" = \"payments\" }}\n"
    )
}

impl Rig {
    /// A sandbox with `faults` (sending receipts with the `erp` connector's token when
    /// `webhooks`) and a coordinator whose setup `adjust` changes.
    async fn start(
        backend: &Backend,
        faults: &str,
        webhooks: bool,
        adjust: impl FnOnce(&mut deploy::Setup),
    ) -> Rig {
        captured_logs();
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind coordinator");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        let webhook = webhooks.then(|| WebhookTarget {
            url: format!("{base}/v1/receipts/erp").parse().expect("URL"),
            token: Some(ERP.to_string()),
        });
        let downstream = deploy::sandbox(faults, webhook, Some(7)).await;
        let dir = tempfile::tempdir().expect("temp dir");
        let mut setup = deploy::Setup::on(backend, dir.path(), &downstream.url, tokens());
        setup.timeout_ms = 300;
        setup.tables = bank_connector(&downstream.url);
        adjust(&mut setup);
        let coordinator = deploy::Coordinator::serve(listener, &setup);
        Rig {
            base,
            sandbox: downstream.state.clone(),
            http: intentdesk::tls::client(None)
                .expect("a TLS client")
                .no_proxy()
                .timeout(PATIENCE)
                .build()
                .expect("client"),
            db: setup.database,
            _coordinator: coordinator,
            _sandbox: downstream,
            _dir: dir,
        }
    }

    async fn call(
        &self,
        method: Method,
        path: &str,
        token: &str,
        body: Option<&Value>,
    ) -> (StatusCode, Value) {
        let mut request = self
            .http
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(token);
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = request.send().await.expect("the coordinator answers");
        let status = response.status();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    async fn post(&self, token: &str, path: &str, body: &Value) -> (StatusCode, Value) {
        self.call(Method::POST, path, token, Some(body)).await
    }

    /// Create under `key`: the status, the body, and whether it was a replay.
    async fn create(&self, token: &str, key: &str, body: &Value) -> (StatusCode, Value, bool) {
        let response = self
            .http
            .post(format!("{}/v1/intents", self.base))
            .bearer_auth(token)
            .header("Idempotency-Key", key)
            .json(body)
            .send()
            .await
            .expect("the coordinator answers");
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

    /// Create as `token` and have the admin approve: the intent's id and action key.
    async fn authorized(&self, token: &str, key: &str, body: &Value) -> (String, String) {
        let (status, created, _) = self.create(token, key, body).await;
        assert_eq!(status, StatusCode::CREATED, "{created}");
        let id = created["id"].as_str().expect("an id").to_string();
        let approval = json!({"authorization_version": "policy-v7"});
        let (status, body) = self
            .post(ADMIN, &format!("/v1/intents/{id}/authorize"), &approval)
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let key = created["action_key"].as_str().expect("a key").to_string();
        (id, key)
    }

    /// Create, authorise and dispatch as `token`: the intent's id and action key.
    async fn dispatched(&self, token: &str, key: &str, body: &Value) -> (String, String) {
        let (id, action_key) = self.authorized(token, key, body).await;
        let (status, body) = self
            .call(
                Method::POST,
                &format!("/v1/intents/{id}/dispatch"),
                token,
                None,
            )
            .await;
        assert_eq!(status, StatusCode::ACCEPTED, "{body}");
        (id, action_key)
    }

    async fn detail(&self, id: &str) -> Value {
        let (status, body) = self
            .call(Method::GET, &format!("/v1/intents/{id}"), ADMIN, None)
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body
    }

    /// Poll the intent until `done` holds; its detail then.
    async fn wait_for(&self, id: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let detail = self.detail(id).await;
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

    /// `intentdesk_refused_answers_total` by connector, as the admin reads `/metrics`.
    async fn refused_answers(&self) -> Vec<(String, u64)> {
        let response = self
            .http
            .get(format!("{}/metrics", self.base))
            .bearer_auth(ADMIN)
            .send()
            .await
            .expect("the coordinator answers");
        assert_eq!(response.status(), StatusCode::OK);
        let text = response.text().await.expect("a body");
        text.lines()
            .filter_map(|l| l.strip_prefix("intentdesk_refused_answers_total{connector=\""))
            .map(|rest| {
                let (connector, n) = rest.split_once("\"} ").expect("a sample");
                (connector.to_string(), n.parse().expect("a count"))
            })
            .collect()
    }

    async fn wait_for_state(&self, id: &str, state: &str) -> Value {
        self.wait_for(id, state, |d| d["intent"]["state"] == state)
            .await
    }

    fn effects(&self, action_key: &str) -> u64 {
        self.sandbox
            .effects_for(&action_key.parse().expect("action key"))
    }

    /// Every request that reached the downstream's create endpoint under `action_key`:
    /// effects plus replays of them.
    fn crossings(&self, action_key: &str) -> u64 {
        let key = action_key.parse().expect("action key");
        self.sandbox.effects_for(&key) + self.sandbox.replays_for(&key)
    }

    /// A count from the coordinator's database, for what the API does not show.
    fn count(&self, sql: &str) -> i64 {
        use intentdesk::store::sql::{ConnExt, params};
        common::backends::with_store(&self.db, |store| {
            store
                .conn()
                .one(sql, params![], |r| r.get::<i64>(0))
                .expect("query answers")
        })
    }

    async fn command(&self, body: &Value) -> (StatusCode, Value) {
        self.post(ADMIN, "/v1/commands", body).await
    }
}

fn order(tenant: &str, amount: &str) -> Value {
    json!({
        "tenant": tenant,
        "actor": "agent:kharid-bot",
        "purpose": "restock paper",
        "operation": "purchase_order.create",
        "tool": "erp",
        "consequence": "write",
        "args": {"item": "A4 paper", "qty": 1200, "amount": amount},
        "deadline_secs": 120,
        "max_attempts": 4,
        "release_id": "procure-agent@2.4.0",
        "locale": "en-US",
        "connector": "erp",
    })
}

fn comparison(tenant: &str) -> Value {
    json!({
        "tenant": tenant,
        "actor": "agent:kharid-bot",
        "purpose": "compare quotes",
        "operation": "quote.compare",
        "tool": "llm",
        "consequence": "compute",
        "args": {"quotes": ["a", "b"]},
        "deadline_secs": 120,
        "max_attempts": 4,
        "release_id": "procure-agent@2.4.0",
    })
}

fn attempts_of<'a>(detail: &'a Value, kind: &str) -> Vec<&'a Value> {
    detail["attempts"]
        .as_array()
        .expect("attempts")
        .iter()
        .filter(|a| a["kind"] == kind)
        .collect()
}

fn receipt(event_id: &str, action_key: &str, downstream_id: &str) -> Value {
    json!({"event_id": event_id, "action_key": action_key, "downstream_id": downstream_id,
           "status": "created"})
}

async fn a_forged_receipt_commits_nothing_and_tells_nothing_of_other_tenants(backend: Backend) {
    // Responses are dropped after commit and nothing looks them up: both orders stay
    // indeterminate until a receipt settles them.
    let rig = Rig::start(&backend, "drop_after_commit=1", false, |s| {
        s.reconcile = false
    })
    .await;
    let (globex, globex_key) = rig
        .dispatched(AGENT_GLOBEX, "g-1", &order("globex", "4500"))
        .await;
    let (acme, acme_key) = rig
        .dispatched(AGENT_ACME, "a-1", &order("acme", "90"))
        .await;
    rig.wait_for_state(&globex, "indeterminate").await;
    rig.wait_for_state(&acme, "indeterminate").await;

    // An agent speaks for no downstream.
    let forged_key = format!("po:acme:{globex}");
    let (status, body) = rig
        .post(
            AGENT_ACME,
            "/v1/receipts/erp",
            &receipt("x", &forged_key, "po-FORGED"),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");

    // A connector token for acme cannot reach globex's intent, however the key is spelt,
    // and the answer is the same as for an intent that does not exist.
    let (status, forged) = rig
        .post(
            ERP_ACME,
            "/v1/receipts/erp",
            &receipt("x", &forged_key, "po-FORGED"),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{forged}");
    // On PostgreSQL globex's own write may hold its intent's row at that moment: acme's
    // connector neither waits for it (a 503 after the lock timeout would show that the key
    // exists) nor locks it, and is answered the same at once.
    if let Backend::Postgres(url) = &backend {
        let (release, holder) = common::backends::hold_row(url.clone(), globex.clone()).await;
        let held = rig
            .post(
                ERP_ACME,
                "/v1/receipts/erp",
                &receipt("x", &globex_key, "po-FORGED"),
            )
            .await;
        release.send(()).expect("the holder waits");
        holder.join().expect("the holder ends");
        assert_eq!(held, (StatusCode::NOT_FOUND, forged.clone()));
    }
    let nobody = format!("po:acme:{}", intentdesk::domain::IntentId::generate(1, 1));
    let mut answers = Vec::new();
    for (token, connector, key) in [
        (ERP_ACME, "erp", globex_key.as_str()),
        (ERP_ACME, "erp", nobody.as_str()),
        // The right tenant, but the key is not the one stored.
        (ERP, "erp", &format!("pay:globex:{globex}")),
        // The stored key, but the intent is not the bank's.
        (BANK, "bank", globex_key.as_str()),
    ] {
        let (status, body) = rig
            .post(
                token,
                &format!("/v1/receipts/{connector}"),
                &receipt("x", key, "po-FORGED"),
            )
            .await;
        answers.push((status, body));
    }
    for (status, body) in &answers {
        assert_eq!(
            (*status, body),
            (StatusCode::NOT_FOUND, &forged),
            "one answer for every key that is not the connector's"
        );
    }
    // An intent whose command never went to the connector has nothing to receipt there:
    // work that changes nothing downstream, or an order not dispatched yet.
    let compare = rig
        .authorized(AGENT_ACME, "a-2", &comparison("acme"))
        .await
        .1;
    let (pending, pending_key) = rig.authorized(AGENT_ACME, "a-3", &order("acme", "7")).await;
    for key in [&compare, &pending_key] {
        let (status, body) = rig
            .post(ERP, "/v1/receipts/erp", &receipt("y", key, "po-FORGED"))
            .await;
        assert_eq!((status, &body), (StatusCode::NOT_FOUND, &forged), "{key}");
    }
    assert_eq!(rig.detail(&pending).await["intent"]["state"], "authorized");
    // A connector token speaks only for the connectors it names.
    let (status, body) = rig
        .post(
            ERP,
            "/v1/receipts/bank",
            &receipt("x", &globex_key, "po-FORGED"),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");

    let detail = rig.detail(&globex).await;
    assert_eq!(detail["intent"]["state"], "indeterminate", "{detail:#}");
    assert_eq!(detail["receipts"], json!([]), "no receipt stored");
    assert_eq!(
        rig.count("SELECT count(*) FROM webhook_arrivals"),
        0,
        "refused deliveries store nothing"
    );

    // A delivery stored under an event id for acme's intent cannot make the real receipt
    // for globex that happens to carry the same event id look like a duplicate.
    let (status, body) = rig
        .post(
            ERP_ACME,
            "/v1/receipts/erp",
            &receipt("evt-shared", &acme_key, "po-acme-1"),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = rig
        .post(
            ERP,
            "/v1/receipts/erp",
            &receipt("evt-shared", &globex_key, "po-globex-1"),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["committed"], true, "{body}");
    let detail = rig.wait_for_state(&globex, "committed").await;
    assert_eq!(detail["intent"]["downstream_ref"], "po-globex-1");
    rig.wait_for_state(&acme, "committed").await;
}

async fn an_agent_cannot_change_the_coordinators_attempts_nor_anothers(backend: Backend) {
    let rig = Rig::start(&backend, "drop_after_commit=1", false, |s| {
        s.reconcile = false
    })
    .await;
    let (id, _) = rig
        .dispatched(AGENT_ACME, "patch-1", &order("acme", "4500"))
        .await;
    let detail = rig.wait_for_state(&id, "indeterminate").await;
    let dispatch = attempts_of(&detail, "dispatch")[0].clone();
    let dispatch_id = dispatch["id"].as_str().expect("an id");

    // The dispatch attempt is the coordinator's own record of a crossing.
    let path = format!("/v1/intents/{id}/attempts/{dispatch_id}");
    let (status, body) = rig
        .call(
            Method::PATCH,
            &path,
            AGENT_ACME,
            Some(&json!({"outcome": "failed"})),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    // Whether a request reached the downstream is never the agent's to say.
    let (status, body) = rig
        .call(
            Method::PATCH,
            &path,
            AGENT_ACME,
            Some(&json!({"sent": false, "outcome": "failed"})),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body["error"]["fields"]["sent"].is_string(), "{body}");
    let after = rig.detail(&id).await;
    assert_eq!(after["intent"]["may_have_crossed_boundary"], true);
    assert_eq!(attempts_of(&after, "dispatch")[0], &dispatch, "unchanged");

    // Agents report lookups no more than dispatches.
    let compare = rig
        .authorized(AGENT_ACME, "patch-2", &comparison("acme"))
        .await
        .0;
    let attempts = format!("/v1/intents/{compare}/attempts");
    let (status, body) = rig
        .post(
            AGENT_ACME,
            &attempts,
            &json!({"kind": "lookup", "provider": "erp"}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body["error"]["fields"]["kind"].is_string(), "{body}");
    // Unknown fields, long and control-character text are named.
    for (bad, field) in [
        (
            json!({"kind": "retrieval", "provider": "openai", "colour": "red"}),
            "colour",
        ),
        (
            json!({"kind": "retrieval", "provider": "open\u{202e}ia"}),
            "provider",
        ),
        (
            json!({"kind": "retrieval", "provider": "x".repeat(101)}),
            "provider",
        ),
        (
            json!({"kind": "retrieval", "provider": "openai", "model": "gpt\u{7}"}),
            "model",
        ),
    ] {
        let (status, body) = rig.post(AGENT_ACME, &attempts, &bad).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {body}");
        assert!(body["error"]["fields"][field].is_string(), "{body}");
    }
    assert_eq!(
        rig.detail(&compare).await["attempts"],
        json!([]),
        "nothing stored"
    );

    // An attempt is finished by the agent that reported it, once.
    let (status, started) = rig
        .post(
            AGENT_ACME,
            &attempts,
            &json!({"kind": "inference", "provider": "openai"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{started}");
    let path = format!(
        "/v1/intents/{compare}/attempts/{}",
        started["id"].as_str().expect("id")
    );
    // A finish says how the attempt ended.
    let (status, body) = rig
        .call(
            Method::PATCH,
            &path,
            AGENT_ACME,
            Some(&json!({"detail": "still thinking"})),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body["error"]["fields"]["outcome"].is_string(), "{body}");
    let failed = json!({"outcome": "failed", "error_class": "transient_compute"});
    let (status, body) = rig
        .call(Method::PATCH, &path, AGENT_ACME_2, Some(&failed))
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let (status, body) = rig
        .call(Method::PATCH, &path, AGENT_ACME, Some(&failed))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, again) = rig
        .call(Method::PATCH, &path, AGENT_ACME, Some(&failed))
        .await;
    assert_eq!(
        (status, &again),
        (StatusCode::OK, &body),
        "a retry of the finish"
    );
    let (status, body) = rig
        .call(
            Method::PATCH,
            &path,
            AGENT_ACME,
            Some(&json!({"outcome": "succeeded"})),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
}

async fn a_cancel_while_a_retry_waits_behind_retry_after_sends_nothing_afterwards(
    backend: Backend,
) {
    // Five seconds behind Retry-After: time for the close to land first on a loaded machine.
    let rig = Rig::start(&backend, "overload=1,retry_after_secs=5", false, |_| {}).await;
    let (id, key) = rig
        .dispatched(AGENT_ACME, "cancel-1", &order("acme", "4500"))
        .await;
    // The first send is refused for load; the retry waits for the downstream's word.
    rig.wait_for(&id, "a retry planned behind Retry-After", |d| {
        let dispatches = attempts_of(d, "dispatch");
        dispatches.len() == 2 && dispatches[0]["http_status"] == 503
    })
    .await;
    let (status, body) = rig
        .command(&json!({
            "command_id": "cmd_01kbx0000000000000000000c1",
            "kind": "close",
            "target": {"intent_id": id},
            "reason": "supplier withdrew the quote",
            "disposition": "cancelled",
            "evidence": {"note": "503 every time, nothing applied"},
        }))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    rig.sandbox
        .set_faults(intentdesk::sandbox::FaultSpec::none());

    // The withdrawn retry would have been due by now; an order dispatched after that time
    // is sent and committed, so the dispatcher has been past the cancelled one.
    let due: i64 = rig.count(&format!(
        "SELECT max(o.available_at_ms) FROM outbox o JOIN intents i ON i.seq = o.intent_seq \
         WHERE i.id = '{id}'"
    ));
    let patience = Instant::now() + PATIENCE;
    while (intentdesk::clock::Clock::now_ms(&intentdesk::clock::SystemClock) as i64) <= due {
        assert!(Instant::now() < patience, "the planned time never came");
        tokio::time::sleep(POLL).await;
    }
    let (later, _) = rig
        .dispatched(AGENT_ACME, "cancel-2", &order("acme", "12"))
        .await;
    rig.wait_for_state(&later, "committed").await;

    assert_eq!(rig.crossings(&key), 0, "nothing reached the downstream");
    let detail = rig.detail(&id).await;
    assert_eq!(detail["intent"]["state"], "cancelled");
    let planned = attempts_of(&detail, "dispatch")[1];
    assert_eq!(planned["outcome"], "abandoned", "{detail:#}");
    assert_eq!(planned["sent"], false, "{detail:#}");
}

/// Send a whole create request on a raw socket and close it without reading the answer.
async fn create_and_hang_up(addr: std::net::SocketAddr, key: String, body: String) {
    let Ok(mut socket) = tokio::net::TcpStream::connect(addr).await else {
        return;
    };
    let request = format!(
        "POST /v1/intents HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {AGENT_ACME}\r\n\
         Idempotency-Key: {key}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let _ = socket.write_all(request.as_bytes()).await;
    let _ = socket.shutdown().await;
}

async fn clients_that_hang_up_mid_create_leave_no_key_stuck(backend: Backend) {
    let rig = Rig::start(&backend, "none", false, |_| {}).await;
    let addr: std::net::SocketAddr = rig
        .base
        .trim_start_matches("http://")
        .parse()
        .expect("addr");
    let keys: Vec<String> = (0..120).map(|i| format!("hang-up-{i}")).collect();
    let body = order("acme", "4500").to_string();
    let mut clients = JoinSet::new();
    for key in &keys {
        clients.spawn(create_and_hang_up(addr, key.clone(), body.clone()));
    }
    while clients.join_next().await.is_some() {}

    // Asked again, every key answers: created if the first request never got through,
    // its first result if it did; never "still in progress" for good.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut stuck: Vec<&String> = keys.iter().collect();
    while !stuck.is_empty() {
        let mut still = Vec::new();
        for key in stuck {
            let (status, body, _) = rig.create(AGENT_ACME, key, &order("acme", "4500")).await;
            match status {
                StatusCode::CONFLICT => still.push(key),
                StatusCode::OK | StatusCode::CREATED => {}
                other => panic!("{key}: {other} {body}"),
            }
        }
        assert!(
            still.is_empty() || Instant::now() < deadline,
            "{} keys still answer 409 after every client hung up: {still:?}",
            still.len()
        );
        stuck = still;
        if !stuck.is_empty() {
            tokio::time::sleep(POLL).await;
        }
    }
}

async fn dispatch_and_hang_up(addr: std::net::SocketAddr, id: String) {
    let Ok(mut socket) = tokio::net::TcpStream::connect(addr).await else {
        return;
    };
    let request = format!(
        "POST /v1/intents/{id}/dispatch HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {AGENT_ACME}\r\n\
         Content-Length: 0\r\n\r\n"
    );
    let _ = socket.write_all(request.as_bytes()).await;
    let _ = socket.shutdown().await;
}

async fn clients_that_hang_up_mid_dispatch_leave_no_send_unsent(backend: Backend) {
    // A lease far longer than the test and no reconciler: a send claimed by a request whose
    // client hung up, and then never handed on, would wait here for good.
    let rig = Rig::start(&backend, "none", false, |s| {
        s.reconcile = false;
        s.dispatch_lease_ms = Some(600_000);
    })
    .await;
    let addr: std::net::SocketAddr = rig
        .base
        .trim_start_matches("http://")
        .parse()
        .expect("addr");
    let mut orders = Vec::new();
    for i in 0..40 {
        orders.push(
            rig.authorized(
                AGENT_ACME,
                &format!("hang-up-dispatch-{i}"),
                &order("acme", &i.to_string()),
            )
            .await,
        );
    }
    let mut clients = JoinSet::new();
    for (id, _) in &orders {
        clients.spawn(dispatch_and_hang_up(addr, id.clone()));
    }
    while clients.join_next().await.is_some() {}
    // Asked again: a dispatch that got through answers where it stands and sends nothing
    // more; one that never did is made now.
    for (id, _) in &orders {
        let (status, body) = rig
            .post(
                AGENT_ACME,
                &format!("/v1/intents/{id}/dispatch"),
                &json!({}),
            )
            .await;
        assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    }
    for (id, key) in &orders {
        let detail = rig.wait_for_state(id, "committed").await;
        assert_eq!(rig.crossings(key), 1, "sent once: {detail:#}");
        assert!(
            attempts_of(&detail, "lookup").is_empty(),
            "sent, not left to a lookup: {detail:#}"
        );
    }
}

async fn concurrent_replays_of_a_finished_key_all_answer_its_first_result(backend: Backend) {
    let rig = Arc::new(Rig::start(&backend, "none", false, |_| {}).await);
    let mut first = Vec::new();
    for i in 0..10 {
        let key = format!("replay-{i}");
        let (status, body, _) = rig.create(AGENT_ACME, &key, &order("acme", "4500")).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        first.push((key, body["id"].as_str().expect("id").to_string()));
    }
    let mut replays = JoinSet::new();
    for (key, id) in &first {
        for _ in 0..16 {
            let (rig, key, id) = (rig.clone(), key.clone(), id.clone());
            replays.spawn(async move {
                let (status, body, replayed) =
                    rig.create(AGENT_ACME, &key, &order("acme", "4500")).await;
                (status, replayed, body["id"] == id.as_str(), body)
            });
        }
    }
    while let Some(answer) = replays.join_next().await {
        let (status, replayed, same, body) = answer.expect("a replay task");
        assert_eq!(
            (status, replayed, same),
            (StatusCode::OK, true, true),
            "{body}"
        );
    }
}

async fn replaying_a_key_with_another_operation_tier_connector_or_tenant_is_a_mismatch(
    backend: Backend,
) {
    let rig = Rig::start(&backend, "none", false, |_| {}).await;
    let first = order("acme", "4500");
    let (status, created, _) = rig.create(AGENT_BOTH, "same-key", &first).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let mut changes = Vec::new();
    for (field, value) in [
        ("operation", json!("payment.initiate")),
        ("consequence", json!("financial")),
        ("connector", json!("bank")),
        ("tenant", json!("globex")),
    ] {
        let mut changed = first.clone();
        changed[field] = value;
        changes.push((field, changed));
    }
    for (field, changed) in changes {
        let (status, body, _) = rig.create(AGENT_BOTH, "same-key", &changed).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{field}: {body}");
        assert_eq!(body["error"]["code"], "idempotency_key_mismatch", "{body}");
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .contains(field),
            "the answer names what changed: {body}"
        );
    }
    let (status, list) = rig.call(Method::GET, "/v1/intents", ADMIN, None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        list["items"].as_array().map(Vec::len),
        Some(1),
        "nothing stored"
    );
    // What is only presentation replays the first intent.
    let mut persian = first.clone();
    persian["locale"] = json!("fa-IR");
    persian["purpose"] = json!("خرید کاغذ");
    let (status, body, replayed) = rig.create(AGENT_BOTH, "same-key", &persian).await;
    assert_eq!((status, replayed), (StatusCode::OK, true), "{body}");
    assert_eq!(body["id"], created["id"]);
}

async fn a_queue_longer_than_the_lease_sends_each_order_once_and_makes_none_indeterminate(
    backend: Backend,
) {
    // One dispatch at a time to a slow downstream, and a lease shorter than the queue's wait
    // (14 sends of 400 ms against 4 s): a claim must never wait out its lease before it is
    // sent. The timeout stays well above the delay, so a stalled machine is not a lost send.
    let rig = Rig::start(&backend, "delay_ms=400", false, |s| {
        s.timeout_ms = 1_500;
        s.dispatch_lease_ms = Some(4_000);
        s.dispatch_concurrency = Some(1);
    })
    .await;
    let mut orders = Vec::new();
    for i in 0..14 {
        orders.push(
            rig.dispatched(
                AGENT_ACME,
                &format!("queue-{i}"),
                &order("acme", &i.to_string()),
            )
            .await,
        );
    }
    for (id, key) in &orders {
        let detail = rig.wait_for_state(id, "committed").await;
        assert_eq!(rig.crossings(key), 1, "sent once: {detail:#}");
        let dispatches = attempts_of(&detail, "dispatch");
        assert_eq!(dispatches.len(), 1, "{detail:#}");
        assert_eq!(
            dispatches[0]["outcome"], "succeeded",
            "no second claimant marked it lost: {detail:#}"
        );
        assert!(
            attempts_of(&detail, "lookup").is_empty(),
            "never uncertain, so never looked up: {detail:#}"
        );
        let states: Vec<&Value> = detail["transitions"]
            .as_array()
            .expect("transitions")
            .iter()
            .map(|t| &t["to"])
            .collect();
        assert!(!states.contains(&&json!("indeterminate")), "{detail:#}");
    }
}

async fn a_resend_that_would_land_after_the_key_may_be_forgotten_is_not_sent(backend: Backend) {
    // The downstream keeps keys for six seconds and says so in the connector's config: time
    // for the reconcile below to come while the key is held, on a loaded machine too.
    let rig = Rig::start(&backend, "refuse=1", false, |s| {
        s.reconcile = false;
        s.key_retention_secs = 6;
    })
    .await;
    // The first send is cut off after it may have been written: indeterminate.
    let (id, key) = rig
        .dispatched(AGENT_ACME, "retention-1", &order("acme", "4500"))
        .await;
    rig.wait_for_state(&id, "indeterminate").await;
    // A lookup proves it absent while the key is still held, so the same command goes again,
    // and the downstream's write path asks it to wait longer than the key is held.
    rig.sandbox.set_faults(
        "overload_writes=1,retry_after_secs=8"
            .parse()
            .expect("spec"),
    );
    let (status, body) = rig
        .command(&json!({
            "command_id": "cmd_01kbx0000000000000000000c2",
            "kind": "reconcile",
            "target": {"intent_id": id},
        }))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["result"]["lookups"][0]["result"], "resent", "{body}");
    rig.wait_for(&id, "the resend refused for load", |d| {
        attempts_of(d, "dispatch")
            .iter()
            .any(|a| a["http_status"] == 503)
    })
    .await;
    rig.sandbox
        .set_faults(intentdesk::sandbox::FaultSpec::none());

    // When the retry comes due it would land after the downstream may have forgotten the
    // key: it is not sent, and the intent waits for an operator.
    let detail = rig
        .wait_for(&id, "the intent to settle", |d| {
            d["intent"]["state"] != "executing"
        })
        .await;
    assert_eq!(detail["intent"]["state"], "indeterminate", "{detail:#}");
    assert_eq!(rig.crossings(&key), 0, "nothing was applied downstream");
    let last = *attempts_of(&detail, "dispatch").last().expect("a dispatch");
    assert_eq!(
        (&last["outcome"], &last["sent"]),
        (&json!("abandoned"), &json!(false)),
        "{detail:#}"
    );
    let reason = detail["intent"]["state_reason"]
        .as_str()
        .unwrap_or_default();
    assert!(
        reason.contains("retention"),
        "the reason says why: {reason}"
    );
}

async fn a_resend_held_by_a_pause_goes_after_resume_without_spending_budget(backend: Backend) {
    // The first send is cut off after it may have been written, a lookup proves it absent,
    // and the resend is refused for load; a pause then holds the retry.
    let rig = Rig::start(&backend, "refuse=1", false, |_| {}).await;
    let mut body = order("acme", "4500");
    body["max_attempts"] = json!(3);
    let (id, key) = rig.dispatched(AGENT_ACME, "held-1", &body).await;
    rig.wait_for_state(&id, "indeterminate").await;
    rig.sandbox.set_faults(
        "overload_writes=1,retry_after_secs=5"
            .parse()
            .expect("spec"),
    );
    // Five seconds behind Retry-After: time for the pause to land first.
    rig.wait_for(&id, "a retry planned behind Retry-After", |d| {
        attempts_of(d, "dispatch").len() == 3
    })
    .await;
    let (status, body) = rig
        .command(
            &json!({"command_id": "cmd_01kbx0000000000000000000d2", "kind": "pause",
                         "reason": "downstream incident", "target": {"intent_id": id}}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let held = rig
        .wait_for(&id, "the planned retry held by the pause", |d| {
            attempts_of(d, "dispatch")
                .last()
                .is_some_and(|a| a["outcome"] == "abandoned")
        })
        .await;
    assert_eq!(
        held["intent"]["attempts"], 2,
        "the held retry gave its unit back"
    );
    rig.sandbox
        .set_faults(intentdesk::sandbox::FaultSpec::none());
    let (status, body) = rig
        .command(
            &json!({"command_id": "cmd_01kbx0000000000000000000d3", "kind": "resume",
                         "target": {"intent_id": id}}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");

    // After the resume the resend is planned again, within the budget, and lands once.
    let detail = rig.wait_for_state(&id, "committed").await;
    assert_eq!(rig.effects(&key), 1);
    assert_eq!(rig.crossings(&key), 1, "{detail:#}");
    assert!(
        detail["intent"]["attempts"].as_u64() <= Some(3),
        "{detail:#}"
    );
}

/// One order through a downstream whose `faults` make the order and then answer something
/// that proves nothing: the order is committed by a lookup, sent once, made once. Its detail.
async fn made_then_answered_unproven(backend: &Backend, faults: &str, key: &str) -> Value {
    let rig = Rig::start(backend, faults, false, |_| {}).await;
    let (id, action_key) = rig
        .dispatched(AGENT_ACME, key, &order("acme", "4500"))
        .await;
    let detail = rig.wait_for_state(&id, "committed").await;
    assert_eq!(rig.effects(&action_key), 1);
    assert_eq!(rig.crossings(&action_key), 1, "not resent: {detail:#}");
    assert_eq!(attempts_of(&detail, "dispatch").len(), 1, "{detail:#}");
    assert_eq!(detail["receipts"][0]["source"], "lookup", "{detail:#}");
    detail
}

async fn a_bare_503_on_a_write_is_looked_up_not_resent(backend: Backend) {
    // A proxy in front of the downstream answers 503 without Retry-After after the order
    // went through.
    made_then_answered_unproven(&backend, "bare_503_after_commit=1", "bare-503").await;
}

async fn a_see_other_after_a_create_is_looked_up_never_rejected(backend: Backend) {
    // The downstream creates the order, then answers 303 See Other towards its lookup
    // ("created, see there"). The redirect is not followed, and the answer is no proof that
    // nothing was applied: the intent is looked up and committed to the one record, never
    // rejected while the order exists.
    let detail =
        made_then_answered_unproven(&backend, "redirect_after_commit=1", "see-other").await;
    let dispatches = attempts_of(&detail, "dispatch");
    assert_eq!(dispatches[0]["error_class"], "indeterminate", "{detail:#}");
    assert_eq!(dispatches[0]["http_status"], 303, "{detail:#}");
}

/// The first order through a downstream that answers with the first record it made: its
/// own, so it commits. Its detail, action key and record.
async fn first_order_committed(rig: &Rig) -> (Value, String, Value) {
    let (first, first_key) = rig
        .dispatched(AGENT_ACME, "mixed-1", &order("acme", "4700"))
        .await;
    let first = rig.wait_for_state(&first, "committed").await;
    let first_record = first["receipts"][0]["downstream_id"].clone();
    assert!(first_record.is_string(), "{first:#}");
    (first, first_key, first_record)
}

async fn an_answer_naming_another_intents_record_commits_nothing(backend: Backend) {
    // The downstream makes every order, but answers each with the first record it ever
    // made, naming no key: a downstream that mixed its answers up. The first order's answer
    // is its own record. The second's names a record that already commits the first (it
    // could be another tenant's): it proves nothing, so the second order is looked up by
    // its own key and committed to its own record.
    let rig = Rig::start(&backend, "wrong_record=1", false, |_| {}).await;
    let (first, first_key, first_record) = first_order_committed(&rig).await;

    let (second, second_key) = rig
        .dispatched(AGENT_ACME, "mixed-2", &order("acme", "4800"))
        .await;
    let second = rig.wait_for_state(&second, "committed").await;
    let receipts = second["receipts"].as_array().expect("receipts");
    assert_eq!(receipts.len(), 1, "{second:#}");
    assert_ne!(receipts[0]["downstream_id"], first_record, "{second:#}");
    assert_eq!(receipts[0]["source"], "lookup", "{second:#}");
    let dispatches = attempts_of(&second, "dispatch");
    assert_eq!(dispatches.len(), 1, "not resent: {second:#}");
    assert_eq!(
        dispatches[0]["detail"], "a success answer naming a record another intent holds",
        "{second:#}"
    );
    assert!(dispatches[0]["provider_request_id"].is_null(), "{second:#}");
    assert_eq!(rig.effects(&first_key), 1);
    assert_eq!(rig.effects(&second_key), 1);
    // The first order is as it was.
    let first_after = rig
        .detail(first["intent"]["id"].as_str().expect("an id"))
        .await;
    assert_eq!(first_after["receipts"].as_array().map(Vec::len), Some(1));
    assert_eq!(first_after["intent"]["state"], "committed");
}

async fn a_lookup_naming_another_intents_record_commits_nothing(backend: Backend) {
    // Creates and lookups alike are answered with the first record the downstream made,
    // naming no key. The second order's create answer and then its lookups name the first
    // order's record: none of them commits it, and it stays indeterminate with its lookups
    // saying why. Once lookups answer from the right record, it is committed to its own.
    let rig = Rig::start(&backend, "wrong_record=1,wrong_lookup=1", false, |_| {}).await;
    let (_, _, first_record) = first_order_committed(&rig).await;
    let none = vec![("bank".to_string(), 0), ("erp".to_string(), 0)];
    assert_eq!(rig.refused_answers().await, none);

    let (second, second_key) = rig
        .dispatched(AGENT_ACME, "mixed-2", &order("acme", "4800"))
        .await;
    let held = rig
        .wait_for(&second, "a lookup answered with the first record", |d| {
            attempts_of(d, "lookup")
                .iter()
                .any(|a| a["detail"] == "a lookup answer naming a record another intent holds")
        })
        .await;
    assert_eq!(held["intent"]["state"], "indeterminate", "{held:#}");
    assert_eq!(
        held["receipts"].as_array().map(Vec::len),
        Some(0),
        "{held:#}"
    );
    // Its create's answer and a lookup at least, each counted under the connector that
    // gave it, for the alert that says why the intent waits.
    let refused = rig.refused_answers().await;
    assert_eq!(refused[0], ("bank".to_string(), 0), "{refused:?}");
    assert_eq!(refused[1].0, "erp", "{refused:?}");
    assert!(refused[1].1 >= 2, "{refused:?}");

    rig.sandbox
        .set_faults(intentdesk::sandbox::FaultSpec::none());
    let second = rig.wait_for_state(&second, "committed").await;
    let receipts = second["receipts"].as_array().expect("receipts");
    assert_eq!(receipts.len(), 1, "{second:#}");
    assert_ne!(receipts[0]["downstream_id"], first_record, "{second:#}");
    assert_eq!(receipts[0]["source"], "lookup", "{second:#}");
    assert_eq!(
        attempts_of(&second, "dispatch").len(),
        1,
        "not resent: {second:#}"
    );
    assert_eq!(rig.effects(&second_key), 1);
}

async fn command_ids_are_any_opaque_client_id(backend: Backend) {
    let rig = Rig::start(&backend, "none", false, |_| {}).await;
    for id in [
        "5f0c8a4e-3b1d-4c2e-9a7f-0d6b1e2c3a4b",
        "01JD3QH6V7W8X9Y0Z1A2B3C4D5",
        "cmd_0000000000000000000000000a",
        "ops.2026-12-01:pause-1",
    ] {
        let (status, body) = rig
            .command(
                &json!({"command_id": id, "kind": "pause", "reason": "drill",
                             "target": {"scope": {"tenant": "acme"}}, "dry_run": true}),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{id}: {body}");
        assert_eq!(body["command_id"], id);
    }
    // Another principal's id names nothing of theirs.
    let (status, body) = rig
        .post(
            ENGINEER,
            "/v1/commands",
            &json!({"command_id": "ops.2026-12-01:pause-1", "kind": "pause", "reason": "drill",
                    "target": {"scope": {"tenant": "acme"}}, "dry_run": true}),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], "command_id_in_use");
    assert!(
        body.get("actor").is_none() && body.get("result").is_none(),
        "{body}"
    );
    for id in ["has space", "", &"x".repeat(129), "semi;colon", "ایران"] {
        let (status, body) = rig
            .command(
                &json!({"command_id": id, "kind": "pause", "reason": "drill",
                             "target": {"scope": {"tenant": "acme"}}, "dry_run": true}),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{id:?}: {body}");
        let said = body["error"]["fields"]["command_id"]
            .as_str()
            .unwrap_or_default();
        assert!(
            said.contains("A-Za-z0-9"),
            "says what an id may contain: {body}"
        );
    }
    assert_eq!(
        rig.count("SELECT count(*) FROM commands"),
        4,
        "refused commands store nothing"
    );
}

async fn receipts_and_logs_keep_tokens_out_of_the_logs(backend: Backend) {
    let rig = Rig::start(&backend, "redeliver=2", true, |_| {}).await;
    let (id, _) = rig
        .dispatched(AGENT_ACME, "logs-1", &order("acme", "4500"))
        .await;
    rig.wait_for_state(&id, "committed").await;
    let (status, _) = rig
        .post(BANK, "/v1/receipts/erp", &receipt("e", "po:acme:x", "d"))
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let logs = String::from_utf8_lossy(&captured_logs().lock().expect("logs")).to_string();
    assert!(logs.contains("intent created"), "the logs were captured");
    for secret in SECRETS {
        assert!(!logs.contains(secret), "a token was logged");
    }
}
