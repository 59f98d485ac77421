//! Approvals by someone else, under the tenant's policy, and reported retries that wait for
//! their backoff: a real coordinator over HTTP with the sandbox, on both backends.
//!
//! - An agent never approves, and no principal approves an intent it created; the approver
//!   recorded is the token that approved, under the policy version in force, until the
//!   policy's approval time runs out.
//! - A request outside the policy (an amount above its ceiling, a connector it does not
//!   allow, a budget above its cap) is refused with the rule's name, and nothing is stored.
//! - A changed policy version stops the next attempt of an intent approved under the old one
//!   until it is approved again.
//! - An attempt reported before the backoff of the failure before it is answered 429; a
//!   failover to another provider is not held.

use std::time::{Duration, Instant};

use intentdesk::sandbox::SandboxState;
use reqwest::StatusCode;
use serde_json::{Value, json};
use tempfile::TempDir;

use crate::common::backends::Backend;
use crate::common::deploy::{self, Coordinator, Setup, Token};

const ADMIN: &str = "gate-admin-token";
const AGENT: &str = "gate-agent-token";
const APPROVER: &str = "gate-approver-token";
const SUPERVISOR: &str = "gate-supervisor-token";
const ENGINEER: &str = "gate-engineer-token";
const PATIENCE: Duration = Duration::from_secs(30);
const POLL: Duration = Duration::from_millis(25);

/// Acme's policy at `version`: purchase orders up to 5,000 USD through `erp`, a budget of
/// at most 4 attempts, approvals that last ten minutes; everything else within the tier caps.
fn policy(version: &str) -> String {
    format!(
        "[[policies]]\ntenant = \"acme\"\nversion = \"{version}\"\n\
         [policies.operations.\"purchase_order.create\"]\n\
         max_amount = {{ USD = \"5000\" }}\nconnectors = [\"erp\"]\n\
         max_attempts = {{ write = 4 }}\napproval_secs = 600\n\
         [policies.operations.\"*\"]\n"
    )
}

struct Rig {
    http: reqwest::Client,
    setup: Setup,
    coordinator: Option<Coordinator>,
    base: String,
    sandbox: SandboxState,
    _sandbox: deploy::Sandbox,
    _dir: TempDir,
}

impl Rig {
    async fn start(backend: &Backend, faults: &str, policy_version: &str) -> Rig {
        let sandbox = deploy::sandbox(faults, None, Some(17)).await;
        let dir = tempfile::tempdir().expect("temp dir");
        let tokens = vec![
            Token::all_tenants("admin", ADMIN),
            Token::all_tenants("agent", AGENT),
            Token::all_tenants("approver", APPROVER),
            Token::all_tenants("supervisor", SUPERVISOR),
            Token::all_tenants("engineer", ENGINEER),
        ];
        let mut setup = Setup::on(backend, dir.path(), &sandbox.url, tokens);
        setup.tables = policy(policy_version);
        let coordinator = Coordinator::start(&setup).await;
        Rig {
            http: intentdesk::tls::client(None)
                .expect("a TLS client")
                .no_proxy()
                .timeout(PATIENCE)
                .build()
                .expect("client"),
            base: coordinator.base.clone(),
            coordinator: Some(coordinator),
            setup,
            sandbox: sandbox.state.clone(),
            _sandbox: sandbox,
            _dir: dir,
        }
    }

    /// Stop the coordinator and start it again over the same database with `version` of
    /// acme's policy.
    async fn restart_with_policy(&mut self, version: &str) {
        if let Some(c) = self.coordinator.take() {
            c.shut_down().await.expect("a clean stop");
        }
        self.setup.tables = policy(version);
        let coordinator = Coordinator::start(&self.setup).await;
        self.base = coordinator.base.clone();
        self.coordinator = Some(coordinator);
    }

    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        token: &str,
        key: Option<&str>,
        body: Option<&Value>,
    ) -> (StatusCode, Value, reqwest::header::HeaderMap) {
        let mut request = self
            .http
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(token);
        if let Some(key) = key {
            request = request.header("Idempotency-Key", key);
        }
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = request.send().await.expect("the coordinator answers");
        let (status, headers) = (response.status(), response.headers().clone());
        (
            status,
            response.json().await.unwrap_or(Value::Null),
            headers,
        )
    }

    async fn create(&self, token: &str, key: &str, body: &Value) -> (StatusCode, Value) {
        let (status, body, _) = self
            .call(
                reqwest::Method::POST,
                "/v1/intents",
                token,
                Some(key),
                Some(body),
            )
            .await;
        (status, body)
    }

    async fn approve(&self, token: &str, id: &str, body: &Value) -> (StatusCode, Value) {
        let path = format!("/v1/intents/{id}/authorize");
        let (status, body, _) = self
            .call(reqwest::Method::POST, &path, token, None, Some(body))
            .await;
        (status, body)
    }

    async fn detail(&self, id: &str) -> Value {
        let path = format!("/v1/intents/{id}");
        let (status, body, _) = self
            .call(reqwest::Method::GET, &path, ADMIN, None, None)
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body
    }

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

    /// How many intents acme has.
    async fn acme_intents(&self) -> usize {
        let (status, body, _) = self
            .call(
                reqwest::Method::GET,
                "/v1/intents?tenant=acme&limit=200",
                ADMIN,
                None,
                None,
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body["items"].as_array().map_or(0, Vec::len)
    }

    fn effects(&self, action_key: &str) -> u64 {
        self.sandbox
            .effects_for(&action_key.parse().expect("action key"))
    }
}

fn order(tenant: &str, amount: &str, connector: &str, max_attempts: u32) -> Value {
    json!({
        "tenant": tenant, "actor": "agent:procure-bot", "purpose": "restock paper",
        "operation": "purchase_order.create", "tool": "erp.po", "consequence": "write",
        "args": {"item": "A4 paper", "qty": 100, "amount": amount, "currency": "USD"},
        "deadline_secs": 600, "max_attempts": max_attempts, "release_id": "r1",
        "locale": "en-US", "connector": connector
    })
}

fn code(body: &Value) -> &str {
    body["error"]["code"].as_str().unwrap_or_default()
}

async fn an_intent_is_approved_only_by_another_principal_under_the_policy(backend: Backend) {
    let rig = Rig::start(&backend, "none", "v1").await;
    let (status, created) = rig
        .create(AGENT, "po-1", &order("acme", "4500", "erp", 3))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert_eq!(created["created_by"], "agent");
    let id = created["id"].as_str().expect("id");
    let v = json!({"authorization_version": "approval-77"});

    // Neither the agent that created it, nor a role that may not approve.
    for (token, expected) in [(AGENT, "forbidden"), (ENGINEER, "forbidden")] {
        let (status, body) = rig.approve(token, id, &v).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{token}: {body}");
        assert_eq!(code(&body), expected);
    }
    // A name that is not the caller's, a policy version not in force: refused, nothing kept.
    let (status, body) = rig
        .approve(
            APPROVER,
            id,
            &json!({"authorization_version": "a", "approver": "s.karimi"}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body["error"]["fields"]["approver"].is_string(), "{body}");
    let (status, body) = rig
        .approve(
            APPROVER,
            id,
            &json!({"authorization_version": "a", "policy_version": "v0"}),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(code(&body), "policy_version_mismatch");
    let untouched = rig.detail(id).await;
    assert_eq!(untouched["intent"]["state"], "prepared");
    assert!(untouched["intent"]["approver"].is_null(), "{untouched:#}");

    // The approver: recorded as itself, under v1, for the policy's ten minutes at most.
    let (status, approved) = rig
        .approve(
            APPROVER,
            id,
            &json!({"authorization_version": "approval-77", "policy_version": "v1", "valid_for_secs": 86400}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{approved}");
    assert_eq!(approved["state"], "authorized");
    assert_eq!(approved["approver"], "approver");
    assert_eq!(approved["policy_version"], "v1");
    let at = approved["authorized_at_ms"].as_u64().expect("approved at");
    let until = approved["authorization_expires_at_ms"]
        .as_u64()
        .expect("an expiry");
    assert_eq!(
        until - at,
        600_000,
        "the policy's approval_secs bounds the asked day"
    );

    // An admin may create, but not approve what it created; a supervisor may.
    let (status, own) = rig
        .create(ADMIN, "po-2", &order("acme", "100", "erp", 2))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{own}");
    let own_id = own["id"].as_str().expect("id");
    let (status, body) = rig.approve(ADMIN, own_id, &v).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(code(&body), "self_approval");
    let (status, body) = rig.approve(SUPERVISOR, own_id, &v).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["approver"], "supervisor");

    // A tenant without a policy has no version to name.
    let (status, other) = rig
        .create(AGENT, "po-3", &order("globex", "9999", "erp", 3))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{other}");
    let (status, body) = rig
        .approve(
            APPROVER,
            other["id"].as_str().expect("id"),
            &json!({"authorization_version": "a", "policy_version": "v1"}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(code(&body), "unknown_policy");
}

async fn a_request_outside_the_policy_is_refused_with_its_rule_and_nothing_stored(
    backend: Backend,
) {
    let rig = Rig::start(&backend, "none", "v1").await;
    let before = rig.acme_intents().await;
    for (key, body, rule) in [
        (
            "over-ceiling",
            order("acme", "5000.01", "erp", 3),
            "policy acme v1: purchase_order.create max_amount[USD]",
        ),
        (
            "over-budget",
            order("acme", "10", "erp", 5),
            "policy acme v1: purchase_order.create max_attempts[write]",
        ),
    ] {
        for _ in 0..2 {
            // The same key again: the same refusal, and still nothing stored.
            let (status, refused) = rig.create(AGENT, key, &body).await;
            assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{key}: {refused}");
            assert_eq!(code(&refused), "policy_refused");
            let message = refused["error"]["message"].as_str().unwrap_or_default();
            assert!(message.contains(rule), "{key}: {message}");
        }
    }
    // The tier's own cap holds with or without a policy.
    let (status, refused) = rig
        .create(AGENT, "too-many", &order("globex", "1", "erp", 11))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{refused}");
    let why = refused["error"]["fields"]["max_attempts"]
        .as_str()
        .unwrap_or_default();
    assert!(why.contains("10 for write work"), "{why}");
    assert_eq!(rig.acme_intents().await, before, "nothing stored");

    // Within it, the same order goes.
    let (status, created) = rig
        .create(AGENT, "at-ceiling", &order("acme", "5,000", "erp", 4))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert_eq!(rig.acme_intents().await, before + 1);
}

async fn a_policy_change_stops_the_next_attempt_until_approved_again(backend: Backend) {
    // The first send is refused with a Retry-After, so the retry is planned a few seconds on.
    let mut rig = Rig::start(&backend, "overload=1,retry_after_secs=3", "v1").await;
    let (status, created) = rig
        .create(AGENT, "po-9", &order("acme", "4500", "erp", 4))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let id = created["id"].as_str().expect("id").to_string();
    let key = created["action_key"].as_str().expect("key").to_string();
    let (status, body) = rig
        .approve(APPROVER, &id, &json!({"authorization_version": "a-1"}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let path = format!("/v1/intents/{id}/dispatch");
    let (status, body, _) = rig
        .call(reqwest::Method::POST, &path, AGENT, None, Some(&json!({})))
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    rig.wait_for(&id, "the first send refused", |d| {
        d["attempts"]
            .as_array()
            .is_some_and(|a| a.iter().any(|a| a["http_status"] == 503))
    })
    .await;

    // The policy changes while the retry waits; the downstream recovers.
    rig.restart_with_policy("v2").await;
    rig.sandbox.set_faults("none".parse().expect("faults"));
    let held = rig
        .wait_for(&id, "the retry held", |d| {
            d["attempts"]
                .as_array()
                .is_some_and(|a| a.iter().any(|a| a["outcome"] == "abandoned"))
        })
        .await;
    assert_eq!(held["intent"]["state"], "executing", "it waits: {held:#}");
    let reason = held["intent"]["state_reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("policy of tenant acme is at version v2"),
        "{reason}"
    );
    assert!(
        held["transitions"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t["event"] == "approval_lapsed")),
        "the audit says why: {held:#}"
    );
    assert_eq!(rig.effects(&key), 0, "nothing sent under the old policy");

    // Approved again under v2: the retry goes, once.
    let (status, body) = rig
        .approve(
            APPROVER,
            &id,
            &json!({"authorization_version": "a-2", "policy_version": "v2"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body["state"], "executing",
        "a fresh approval keeps the state"
    );
    let done = rig
        .wait_for(&id, "committed", |d| d["intent"]["state"] == "committed")
        .await;
    assert_eq!(done["intent"]["policy_version"], "v2");
    assert_eq!(rig.effects(&key), 1);
    if let Some(c) = rig.coordinator.take() {
        c.shut_down().await.expect("a clean stop");
    }
}

async fn an_attempt_reported_before_its_backoff_is_answered_429(backend: Backend) {
    let rig = Rig::start(&backend, "none", "v1").await;
    let compare = json!({
        "tenant": "globex", "actor": "agent:quote-bot", "purpose": "compare quotes",
        "operation": "quote.compare", "tool": "llm.compare", "consequence": "compute",
        "args": {"quotes": ["a", "b"]}, "deadline_secs": 600, "max_attempts": 5,
        "release_id": "r1", "locale": "en-US"
    });
    let (status, created) = rig.create(AGENT, "cmp-1", &compare).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let id = created["id"].as_str().expect("id");
    let (status, _) = rig
        .approve(APPROVER, id, &json!({"authorization_version": "a"}))
        .await;
    assert_eq!(status, StatusCode::OK);
    let attempts = format!("/v1/intents/{id}/attempts");
    let start = json!({"kind": "inference", "provider": "openai"});
    let (status, first, _) = rig
        .call(reqwest::Method::POST, &attempts, AGENT, None, Some(&start))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{first}");
    let finish = format!("{attempts}/{}", first["id"].as_str().expect("id"));
    let failed = json!({"outcome": "failed", "error_class": "overloaded", "http_status": 429, "retry_after_ms": 1500});
    let (status, body, _) = rig
        .call(reqwest::Method::PATCH, &finish, AGENT, None, Some(&failed))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");

    // At once: too early, with how long to wait; nothing stored.
    let (status, early, headers) = rig
        .call(reqwest::Method::POST, &attempts, AGENT, None, Some(&start))
        .await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{early}");
    assert_eq!(code(&early), "too_early");
    let wait_ms: u64 = early["error"]["fields"]["wait_ms"]
        .as_str()
        .and_then(|w| w.parse().ok())
        .expect("wait_ms");
    assert!((1..=1500).contains(&wait_ms), "{wait_ms}");
    let retry_after: u64 = headers["retry-after"]
        .to_str()
        .ok()
        .and_then(|s| s.parse().ok())
        .expect("Retry-After");
    assert_eq!(retry_after, wait_ms.div_ceil(1000));
    let detail = rig.detail(id).await;
    assert_eq!(detail["attempts"].as_array().map(Vec::len), Some(1));
    assert_eq!(detail["intent"]["attempts"], 1, "no budget spent");

    // Once the wait the coordinator named has passed, the retry is taken.
    tokio::time::sleep(Duration::from_millis(wait_ms)).await;
    let (status, second, _) = rig
        .call(reqwest::Method::POST, &attempts, AGENT, None, Some(&start))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{second}");

    // A failover to another provider does not wait for the one that failed.
    let finish = format!("{attempts}/{}", second["id"].as_str().expect("id"));
    let (status, body, _) = rig
        .call(reqwest::Method::PATCH, &finish, AGENT, None, Some(&failed))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let failover = json!({"kind": "inference", "provider": "anthropic"});
    let (status, third, _) = rig
        .call(
            reqwest::Method::POST,
            &attempts,
            AGENT,
            None,
            Some(&failover),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{third}");

    // Back to the provider that failed, once the other failed too: it still waits for it.
    let finish = format!("{attempts}/{}", third["id"].as_str().expect("id"));
    let (status, body, _) = rig
        .call(reqwest::Method::PATCH, &finish, AGENT, None, Some(&failed))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, back, _) = rig
        .call(reqwest::Method::POST, &attempts, AGENT, None, Some(&start))
        .await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{back}");
}

crate::on_both_backends_tokio! {
    an_intent_is_approved_only_by_another_principal_under_the_policy,
    a_request_outside_the_policy_is_refused_with_its_rule_and_nothing_stored,
    a_policy_change_stops_the_next_attempt_until_approved_again,
    an_attempt_reported_before_its_backoff_is_answered_429,
}
