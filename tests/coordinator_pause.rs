//! A pause stops new attempts and automatic retries in its scope, and never stops the
//! read-only lookups that resolve an indeterminate intent. Real coordinator, real sandbox,
//! real database on each backend, over loopback.

use std::time::{Duration, Instant};

use intentdesk::sandbox::SandboxState;
use serde_json::{Value, json};

mod common;
use common::backends::Backend;
use common::deploy::{self, Setup, Token};

on_both_backends_tokio! {
    a_pause_holds_automatic_retries_until_resume,
    a_pause_does_not_stop_the_lookup_that_resolves_an_indeterminate_intent,
}

const ADMIN: &str = "pause-admin-token";
const APPROVER: &str = "pause-approver-token";
/// Guards against a hang; never a stand-in for synchronisation.
const PATIENCE: Duration = Duration::from_secs(30);

struct Rig {
    base: String,
    sandbox: SandboxState,
    http: reqwest::Client,
    _coordinator: deploy::Coordinator,
    _sandbox: deploy::Sandbox,
    _dir: tempfile::TempDir,
}

async fn start(backend: &Backend, faults: &str) -> Rig {
    let downstream = deploy::sandbox(faults, None, None).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let mut setup = Setup::on(
        backend,
        dir.path(),
        &downstream.url,
        vec![
            Token::all_tenants("admin", ADMIN),
            Token::all_tenants("approver", APPROVER),
        ],
    );
    setup.timeout_ms = 300;
    let coordinator = deploy::Coordinator::start(&setup).await;
    Rig {
        base: coordinator.base.clone(),
        sandbox: downstream.state.clone(),
        http: intentdesk::tls::client(None)
            .expect("a TLS client")
            .build()
            .expect("an HTTP client"),
        _coordinator: coordinator,
        _sandbox: downstream,
        _dir: dir,
    }
}

impl Rig {
    async fn post(&self, path: &str, body: &Value) -> (u16, Value) {
        self.post_as(ADMIN, path, body).await
    }

    async fn post_as(&self, token: &str, path: &str, body: &Value) -> (u16, Value) {
        let r = self
            .http
            .post(format!("{}{path}", self.base))
            .bearer_auth(token)
            .json(body)
            .send()
            .await
            .expect("post");
        let status = r.status().as_u16();
        (status, r.json().await.unwrap_or(Value::Null))
    }

    async fn detail(&self, id: &str) -> Value {
        let r = self
            .http
            .get(format!("{}/v1/intents/{id}", self.base))
            .bearer_auth(ADMIN)
            .send()
            .await
            .expect("get");
        r.json().await.expect("json")
    }

    /// Create, authorize and dispatch one purchase order; returns its id.
    async fn dispatched(&self, key: &str) -> String {
        let body = json!({
            "tenant": "acme", "actor": "agent", "purpose": "restock", "operation": "purchase_order.create",
            "tool": "erp.po", "consequence": "write", "args": {"item": "paper", "qty": 5},
            "deadline_secs": 600, "max_attempts": 10, "release_id": "r1", "locale": "en-US", "connector": "erp"
        });
        let r = self
            .http
            .post(format!("{}/v1/intents", self.base))
            .bearer_auth(ADMIN)
            .header("Idempotency-Key", key)
            .json(&body)
            .send()
            .await
            .expect("create");
        let created: Value = r.json().await.expect("json");
        let id = created["id"].as_str().expect("id").to_string();
        let (status, _) = self
            .post_as(
                APPROVER,
                &format!("/v1/intents/{id}/authorize"),
                &json!({"authorization_version": "v1"}),
            )
            .await;
        assert_eq!(status, 200);
        let (status, _) = self
            .post(&format!("/v1/intents/{id}/dispatch"), &json!({}))
            .await;
        assert_eq!(status, 202);
        id
    }

    async fn until(&self, id: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
        let started = Instant::now();
        loop {
            let detail = self.detail(id).await;
            if done(&detail) {
                return detail;
            }
            assert!(
                started.elapsed() < PATIENCE,
                "gave up waiting: {what}; last: {detail}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

fn dispatch_attempts(detail: &Value) -> Vec<&Value> {
    detail["attempts"]
        .as_array()
        .map(|a| a.iter().filter(|x| x["kind"] == "dispatch").collect())
        .unwrap_or_default()
}

async fn a_pause_holds_automatic_retries_until_resume(backend: Backend) {
    let rig = start(&backend, "overload=1,retry_after_secs=1").await;
    let id = rig.dispatched("held").await;
    // The first attempt is refused as overloaded; a retry is planned after Retry-After.
    rig.until(&id, "a refused first attempt", |d| {
        dispatch_attempts(d)
            .iter()
            .any(|a| a["error_class"].as_str() == Some("overloaded"))
    })
    .await;
    let pause = json!({"command_id": "cmd_01kb0000000000000000000001", "kind": "pause",
        "target": {"scope": {"tenant": "acme"}}, "reason": "supplier incident"});
    let (status, _) = rig.post("/v1/commands", &pause).await;
    assert_eq!(status, 201);
    rig.sandbox.set_faults("none".parse().expect("spec"));

    // The planned retry comes due under the pause: it is not sent.
    let held = rig
        .until(&id, "the planned retry held by the pause", |d| {
            dispatch_attempts(d)
                .iter()
                .any(|a| a["outcome"] == "abandoned")
        })
        .await;
    assert_eq!(held["intent"]["state"], "executing");
    assert_eq!(
        rig.sandbox.effects_summary().effects,
        0,
        "nothing reached the downstream while paused"
    );

    let resume = json!({"command_id": "cmd_01kb0000000000000000000002", "kind": "resume",
        "target": {"scope": {"tenant": "acme"}}, "reason": "supplier back"});
    let (status, _) = rig.post("/v1/commands", &resume).await;
    assert_eq!(status, 201);
    let done = rig
        .until(&id, "committed after resume", |d| {
            d["intent"]["state"] == "committed"
        })
        .await;
    assert_eq!(rig.sandbox.effects_summary().effects, 1);
    assert!(done["intent"]["attempts"].as_u64().unwrap_or(0) <= 10);
}

async fn a_pause_does_not_stop_the_lookup_that_resolves_an_indeterminate_intent(backend: Backend) {
    // Requests are held past the coordinator's 300 ms timeout, lookups included, so the
    // intent becomes indeterminate and stays so until the downstream answers again.
    let rig = start(&backend, "delay_ms=1500").await;
    let id = rig.dispatched("lost").await;
    rig.until(&id, "indeterminate", |d| {
        d["intent"]["state"] == "indeterminate"
    })
    .await;
    let pause = json!({"command_id": "cmd_01kb0000000000000000000003", "kind": "pause",
        "target": {"intent_id": id}, "reason": "under investigation"});
    let (status, _) = rig.post("/v1/commands", &pause).await;
    assert_eq!(status, 201);
    rig.sandbox.set_faults("none".parse().expect("spec"));
    // The held create lands downstream; the reconciler's lookup finds it despite the pause.
    let done = rig
        .until(&id, "committed by lookup while paused", |d| {
            d["intent"]["state"] == "committed"
        })
        .await;
    assert_eq!(
        done["intent"]["paused"], true,
        "the pause is still in force"
    );
    let lookups = done["attempts"]
        .as_array()
        .map(|a| a.iter().filter(|x| x["kind"] == "lookup").count())
        .unwrap_or(0);
    assert!(lookups >= 1);
    assert_eq!(
        rig.sandbox.effects_summary().effects,
        1,
        "one effect: found, never resent"
    );
}
