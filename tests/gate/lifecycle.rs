//! The gate's lifecycle questions, over real HTTP with the sandbox: cancellation as an
//! observation (before the action boundary it ends `cancelled` and nothing is sent; after,
//! it is requested and evidence settles it) and linked intents (a workflow of separate
//! actions, a correction that supersedes the order it replaces). Every wait polls for a
//! logical condition with a bounded patience.

use std::time::{Duration, Instant};

use intentdesk::domain::{AttemptId, Event, IntentId, IntentState, KeyContract};
use intentdesk::sandbox::SandboxState;
use intentdesk::store::ops::*;
use intentdesk::store::{ApplyContext, Approval, DispatchPlan, Links, NewIntent, SendTerms, Store};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::common::backends::Backend;
use crate::common::deploy::{self, Token};
use crate::{on_both_backends, on_both_backends_tokio};

on_both_backends_tokio! {
    a_cancel_before_anything_crossed_ends_cancelled_and_sends_nothing,
    a_cancel_after_a_dropped_response_waits_for_the_lookup_and_counts_the_late_result,
    a_cancel_after_a_crossing_that_applied_nothing_ends_cancelled_by_the_lookup,
    an_export_and_its_delivery_are_retried_and_looked_up_apart,
    a_correction_supersedes_the_order_it_replaces,
    bad_cancels_and_links_are_refused_and_store_nothing,
}

const ADMIN: &str = "lifecycle-admin-token";
const AGENT: &str = "lifecycle-agent-token";
const OTHER_AGENT: &str = "lifecycle-other-agent-token";
const ACME_AGENT: &str = "lifecycle-acme-agent-token";
const SUPERVISOR: &str = "lifecycle-supervisor-token";
const VIEWER: &str = "lifecycle-viewer-token";
const TENANT: &str = "pars-trading";
/// Guards against a hang; never a stand-in for synchronisation.
const PATIENCE: Duration = Duration::from_secs(30);
const POLL: Duration = Duration::from_millis(25);

struct Rig {
    base: String,
    sandbox: SandboxState,
    http: reqwest::Client,
    _coordinator: deploy::Coordinator,
    _sandbox: deploy::Sandbox,
    _dir: tempfile::TempDir,
}

fn token(
    name: &'static str,
    secret: &'static str,
    role: &'static str,
    tenants: &'static str,
) -> Token {
    Token {
        name,
        secret,
        role,
        tenants,
        connectors: "",
    }
}

/// A coordinator and a sandbox with `faults`; `reconcile` off leaves an indeterminate intent
/// for an operator's lookup.
async fn start(backend: &Backend, faults: &str, reconcile: bool) -> Rig {
    let downstream = deploy::sandbox(faults, None, Some(17)).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let tokens = vec![
        Token::all_tenants("admin", ADMIN),
        token("agent", AGENT, "agent", r#"["*"]"#),
        token("other-agent", OTHER_AGENT, "agent", r#"["pars-trading"]"#),
        token("acme-agent", ACME_AGENT, "agent", r#"["acme"]"#),
        Token::all_tenants("supervisor", SUPERVISOR),
        Token::all_tenants("viewer", VIEWER),
    ];
    let mut config = deploy::Setup::on(backend, dir.path(), &downstream.url, tokens);
    config.timeout_ms = 500;
    config.reconcile = reconcile;
    let coordinator = deploy::Coordinator::start(&config).await;
    let http = intentdesk::tls::client(None)
        .expect("a TLS client")
        .no_proxy()
        .timeout(PATIENCE)
        .build()
        .expect("client");
    Rig {
        base: coordinator.base.clone(),
        sandbox: downstream.state.clone(),
        http,
        _coordinator: coordinator,
        _sandbox: downstream,
        _dir: dir,
    }
}

/// An order of `operation` in `tenant` with `args` and whatever `extra` fields it names.
fn order(tenant: &str, operation: &str, args: Value, extra: Value) -> Value {
    let mut body = json!({
        "tenant": tenant,
        "actor": "agent:kharid-bot",
        "purpose": "approved purchase",
        "operation": operation,
        "tool": "erp",
        "consequence": "write",
        "args": args,
        "deadline_secs": 120,
        "max_attempts": 10,
        "release_id": "procure-agent@2.4.0",
        "connector": "erp",
    });
    if let (Some(body), Some(extra)) = (body.as_object_mut(), extra.as_object()) {
        body.extend(extra.clone());
    }
    body
}

fn po(amount: u64) -> Value {
    order(
        TENANT,
        "purchase_order.create",
        json!({"item": "A4 paper", "qty": 1200, "amount": amount}),
        json!({}),
    )
}

impl Rig {
    async fn call(
        &self,
        method: Method,
        path: &str,
        token: &str,
        body: Option<&Value>,
    ) -> (StatusCode, Value, bool) {
        let mut request = self
            .http
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(token);
        if let Some(body) = body {
            request = request.json(body);
        }
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

    async fn create_as(&self, token: &str, key: &str, body: &Value) -> (StatusCode, Value) {
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
        (status, response.json().await.unwrap_or(Value::Null))
    }

    async fn create(&self, key: &str, body: &Value) -> (StatusCode, Value) {
        self.create_as(AGENT, key, body).await
    }

    /// Create and have an admin approve (never the agent itself): the id and action key.
    async fn authorized(&self, key: &str, body: &Value) -> (String, String) {
        let (status, created) = self.create(key, body).await;
        assert_eq!(status, StatusCode::CREATED, "{created}");
        let id = created["id"].as_str().expect("an id").to_string();
        let approval = json!({"authorization_version": "policy-v7"});
        let (status, body, _) = self
            .call(
                Method::POST,
                &format!("/v1/intents/{id}/authorize"),
                ADMIN,
                Some(&approval),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        (
            id,
            created["action_key"].as_str().expect("a key").to_string(),
        )
    }

    async fn dispatch(&self, id: &str) {
        let (status, body, _) = self
            .call(
                Method::POST,
                &format!("/v1/intents/{id}/dispatch"),
                AGENT,
                None,
            )
            .await;
        assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    }

    async fn cancel_as(&self, token: &str, id: &str, reason: &str) -> (StatusCode, Value, bool) {
        self.call(
            Method::POST,
            &format!("/v1/intents/{id}/cancel"),
            token,
            Some(&json!({ "reason": reason })),
        )
        .await
    }

    async fn command(&self, token: &str, body: Value) -> (StatusCode, Value) {
        let (status, body, _) = self
            .call(Method::POST, "/v1/commands", token, Some(&body))
            .await;
        (status, body)
    }

    async fn detail(&self, id: &str) -> Value {
        let (status, body, _) = self
            .call(Method::GET, &format!("/v1/intents/{id}"), ADMIN, None)
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body
    }

    async fn audit(&self, id: &str) -> Vec<Value> {
        let (status, body, _) = self
            .call(
                Method::GET,
                &format!("/v1/commands?intent_id={id}"),
                ADMIN,
                None,
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body["items"].as_array().expect("items").clone()
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

    async fn wait_for_state(&self, id: &str, state: &str) -> Value {
        self.wait_for(id, state, |d| d["intent"]["state"] == state)
            .await
    }

    fn effects(&self, action_key: &str) -> u64 {
        self.sandbox
            .effects_for(&action_key.parse().expect("action key"))
    }

    async fn total_intents(&self) -> u64 {
        let (status, body, _) = self
            .call(Method::GET, "/v1/intents?limit=1", ADMIN, None)
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body["total"].as_u64().expect("a total")
    }
}

fn dispatches(detail: &Value) -> Vec<&Value> {
    detail["attempts"]
        .as_array()
        .expect("attempts")
        .iter()
        .filter(|a| a["kind"] == "dispatch")
        .collect()
}

async fn a_cancel_before_anything_crossed_ends_cancelled_and_sends_nothing(backend: Backend) {
    // Every send is refused as overloaded with a long Retry-After: nothing crosses, and the
    // retry waits in the outbox.
    let rig = start(&backend, "overload=1,retry_after_secs=30", true).await;
    let (held, held_key) = rig.authorized("cancel-held", &po(100)).await;
    rig.dispatch(&held).await;
    let detail = rig
        .wait_for(&held, "the first send refused and a retry planned", |d| {
            let sent = dispatches(d);
            sent.len() == 2 && sent[0]["outcome"] == "failed" && sent[1]["outcome"] == "pending"
        })
        .await;
    assert_eq!(detail["intent"]["state"], "executing");
    assert_eq!(
        detail["intent"]["may_have_crossed_boundary"], false,
        "{detail:#}"
    );

    let (status, intent, _) = rig
        .cancel_as(AGENT, &held, "the order was placed by phone")
        .await;
    assert_eq!(status, StatusCode::OK, "{intent}");
    assert_eq!(intent["state"], "cancelled");
    assert_eq!(intent["cancel_requested_by"], "agent");
    let detail = rig.detail(&held).await;
    let sent = dispatches(&detail);
    assert_eq!(
        sent[1]["outcome"], "abandoned",
        "the planned retry is withdrawn: {detail:#}"
    );
    // An intent cancelled before it was ever dispatched is not dispatched afterwards.
    let (never, never_key) = rig.authorized("cancel-never", &po(200)).await;
    let (status, intent, _) = rig.cancel_as(AGENT, &never, "not needed").await;
    assert_eq!(status, StatusCode::OK, "{intent}");
    assert_eq!(intent["state"], "cancelled");
    let (status, body, _) = rig
        .call(
            Method::POST,
            &format!("/v1/intents/{never}/dispatch"),
            AGENT,
            None,
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");

    // The downstream recovers. The control order goes through; the cancelled ones never do.
    rig.sandbox
        .set_faults(intentdesk::sandbox::FaultSpec::none());
    let (control, control_key) = rig.authorized("cancel-control", &po(300)).await;
    rig.dispatch(&control).await;
    rig.wait_for_state(&control, "committed").await;
    assert_eq!(
        rig.effects(&control_key),
        1,
        "the control order has its effect"
    );
    assert_eq!(
        rig.effects(&held_key),
        0,
        "the cancelled order was never applied"
    );
    assert_eq!(rig.effects(&never_key), 0);
    let detail = rig.detail(&held).await;
    assert_eq!(detail["intent"]["state"], "cancelled");
    assert_eq!(
        dispatches(&detail).len(),
        2,
        "nothing sent after the cancel: {detail:#}"
    );
    // The audit trail shows the owner's cancel.
    let audit = rig.audit(&held).await;
    assert!(
        audit.iter().any(|c| c["kind"] == "cancel"
            && c["actor"] == "agent"
            && c["result"]["cancellation"] == "cancelled"),
        "{audit:#?}"
    );
}

async fn a_cancel_after_a_dropped_response_waits_for_the_lookup_and_counts_the_late_result(
    backend: Backend,
) {
    // The record is created and the answer lost; nothing looks it up until an operator asks.
    let rig = start(&backend, "drop_after_commit=1", false).await;
    let (id, key) = rig.authorized("cancel-dropped", &po(4500)).await;
    rig.dispatch(&id).await;
    rig.wait_for_state(&id, "indeterminate").await;
    assert_eq!(rig.effects(&key), 1, "the downstream applied it");

    let (status, intent, _) = rig
        .cancel_as(AGENT, &id, "the buyer changed their mind")
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{intent}");
    assert_eq!(
        intent["state"], "indeterminate",
        "the state waits for evidence"
    );
    assert!(intent["cancel_requested_at_ms"].is_u64(), "{intent}");
    assert_eq!(intent["cancel_reason"], "the buyer changed their mind");
    // Asking again changes nothing.
    let audit_before = rig.audit(&id).await.len();
    let (status, again, replayed) = rig.cancel_as(AGENT, &id, "asking again").await;
    assert_eq!(status, StatusCode::OK, "{again}");
    assert!(replayed);
    assert_eq!(again["cancel_reason"], "the buyer changed their mind");
    assert_eq!(
        rig.audit(&id).await.len(),
        audit_before,
        "a repeat stores nothing"
    );
    // An operator's cancel of it now is refused as already requested, in the audit trail.
    let (status, body) = rig
        .command(
            SUPERVISOR,
            json!({"command_id": "cancel-dropped-op", "kind": "cancel", "target": {"intent_id": id}, "reason": "me too"}),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");

    let detail = rig.detail(&id).await;
    let requested = detail["transitions"]
        .as_array()
        .expect("transitions")
        .iter()
        .find(|t| t["event"] == "cancel")
        .cloned()
        .expect("the cancellation request is in the timeline");
    assert_eq!(requested["from"], "indeterminate");
    assert_eq!(requested["to"], "indeterminate");

    // The lookup finds the record: committed, and its result arrived after the cancellation.
    let (status, body) = rig
        .command(
            ADMIN,
            json!({"command_id": "cancel-dropped-lookup", "kind": "reconcile", "target": {"intent_id": id}}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let detail = rig.wait_for_state(&id, "committed").await;
    assert_eq!(rig.effects(&key), 1, "never resent");
    let lookup = detail["attempts"]
        .as_array()
        .expect("attempts")
        .iter()
        .find(|a| a["kind"] == "lookup")
        .cloned()
        .expect("a lookup");
    assert_eq!(lookup["late"], true, "{lookup:#}");
    let (status, summary, _) = rig
        .call(Method::GET, "/v1/metrics/summary", ADMIN, None)
        .await;
    assert_eq!(status, StatusCode::OK, "{summary}");
    assert_eq!(summary["late_results"], 1, "{summary:#}");
    let audit = rig.audit(&id).await;
    assert!(
        audit
            .iter()
            .any(|c| c["kind"] == "cancel" && c["result"]["cancellation"] == "requested"),
        "{audit:#?}"
    );
    // A committed intent cannot be cancelled any more.
    let (status, body, _) = rig.cancel_as(AGENT, &id, "too late").await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], "intent_final");
}

async fn a_cancel_after_a_crossing_that_applied_nothing_ends_cancelled_by_the_lookup(
    backend: Backend,
) {
    // The downstream takes the connection and drops it unread: the send may have crossed,
    // and nothing was applied.
    let rig = start(&backend, "refuse=1", false).await;
    let (id, key) = rig.authorized("cancel-absent", &po(900)).await;
    rig.dispatch(&id).await;
    let detail = rig.wait_for_state(&id, "indeterminate").await;
    assert_eq!(
        detail["intent"]["may_have_crossed_boundary"], true,
        "{detail:#}"
    );
    let (status, intent, _) = rig.cancel_as(AGENT, &id, "ordered elsewhere").await;
    assert_eq!(status, StatusCode::ACCEPTED, "{intent}");
    assert_eq!(intent["state"], "indeterminate");

    rig.sandbox
        .set_faults(intentdesk::sandbox::FaultSpec::none());
    let (status, body) = rig
        .command(
            ADMIN,
            json!({"command_id": "cancel-absent-lookup", "kind": "reconcile", "target": {"intent_id": id}}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(
        body["result"]["lookups"][0]["result"], "cancelled",
        "{body:#}"
    );
    let detail = rig.wait_for_state(&id, "cancelled").await;
    assert_eq!(
        dispatches(&detail).len(),
        1,
        "proved absent, and not sent again: {detail:#}"
    );
    assert_eq!(rig.effects(&key), 0);
    let last = detail["transitions"]
        .as_array()
        .and_then(|t| t.last())
        .cloned();
    assert_eq!(
        last.map(|t| t["event"].clone()),
        Some(json!("proved_absent_cancel"))
    );
}

async fn an_export_and_its_delivery_are_retried_and_looked_up_apart(backend: Backend) {
    // The export's first send meets an overloaded downstream and is retried.
    let rig = start(&backend, "overload=1,retry_after_secs=1", true).await;
    let export_body = order(
        TENANT,
        "inventory.reserve",
        json!({"sku": "A4-500", "qty": 1200, "export": "warehouse-7"}),
        json!({"workflow_id": "wf-order-1405"}),
    );
    let (export, export_key) = rig.authorized("wf-export", &export_body).await;
    rig.dispatch(&export).await;
    rig.wait_for(&export, "the export's first send refused", |d| {
        dispatches(d)
            .first()
            .is_some_and(|a| a["outcome"] == "failed")
    })
    .await;
    rig.sandbox
        .set_faults(intentdesk::sandbox::FaultSpec::none());
    let delivery_body = order(
        TENANT,
        "purchase_order.create",
        json!({"item": "A4 paper", "qty": 1200, "deliver_to": "warehouse-7"}),
        json!({"workflow_id": "wf-order-1405", "parent_intent_id": export}),
    );
    let (delivery, delivery_key) = rig.authorized("wf-delivery", &delivery_body).await;
    assert_ne!(export_key, delivery_key, "separate actions, separate keys");
    rig.dispatch(&delivery).await;
    let export_detail = rig.wait_for_state(&export, "committed").await;
    let delivery_detail = rig.wait_for_state(&delivery, "committed").await;
    assert_eq!(
        dispatches(&export_detail).len(),
        2,
        "the export was retried: {export_detail:#}"
    );
    assert_eq!(dispatches(&delivery_detail).len(), 1, "{delivery_detail:#}");
    for a in dispatches(&export_detail) {
        assert_eq!(a["presented_key"], export_key.as_str());
    }
    // An operator's lookup of the export resends nothing of the delivery.
    let (status, body) = rig
        .command(ADMIN, json!({"command_id": "wf-reconcile", "kind": "reconcile", "target": {"intent_id": export}}))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(rig.effects(&export_key), 1);
    assert_eq!(
        rig.effects(&delivery_key),
        1,
        "the delivery is applied once"
    );
    let delivery_detail = rig.detail(&delivery).await;
    assert_eq!(dispatches(&delivery_detail).len(), 1);
    // Both are listed together, with their states, from either one.
    let listed: Vec<&str> = delivery_detail["workflow"]
        .as_array()
        .expect("workflow")
        .iter()
        .map(|w| w["id"].as_str().expect("id"))
        .collect();
    assert_eq!(listed, vec![export.as_str(), delivery.as_str()]);
    assert_eq!(
        delivery_detail["intent"]["parent_intent_id"],
        export.as_str()
    );
    assert_eq!(delivery_detail["intent"]["workflow_id"], "wf-order-1405");
    assert_eq!(
        rig.detail(&export).await["workflow"]
            .as_array()
            .map(Vec::len),
        Some(2)
    );
}

async fn a_correction_supersedes_the_order_it_replaces(backend: Backend) {
    let rig = start(&backend, "drop_after_commit=1", false).await;
    // Nothing of the first order crossed: the correction cancels it in the same step.
    let (first, first_key) = rig.authorized("po-v1", &po(4500)).await;
    let corrected = order(
        TENANT,
        "purchase_order.create",
        json!({"item": "A4 paper", "qty": 1500, "amount": 5600}),
        json!({"supersedes": first}),
    );
    let (status, second) = rig.create("po-v2", &corrected).await;
    assert_eq!(status, StatusCode::CREATED, "{second}");
    let second_id = second["id"].as_str().expect("id").to_string();
    assert_eq!(second["supersedes"], first.as_str());
    let old = rig.detail(&first).await;
    assert_eq!(old["intent"]["state"], "cancelled", "{old:#}");
    assert_eq!(old["intent"]["superseded_by"], second_id.as_str());
    assert!(
        old["intent"]["state_reason"]
            .as_str()
            .is_some_and(|r| r.contains(&second_id)),
        "{old:#}"
    );
    let chain: Vec<&str> = rig.detail(&second_id).await["revisions"]
        .as_array()
        .expect("revisions")
        .iter()
        .map(|r| r["id"].as_str().expect("id"))
        .collect::<Vec<_>>()
        .into_iter()
        .map(|s| {
            if s == first {
                "first"
            } else if s == second_id {
                "second"
            } else {
                "other"
            }
        })
        .collect();
    assert_eq!(chain, vec!["first", "second"]);
    // Superseding the first again (a fork, or a cycle back to it) is refused; nothing stored.
    let before = rig.total_intents().await;
    let again = order(
        TENANT,
        "purchase_order.create",
        json!({"qty": 1, "amount": 1}),
        json!({"supersedes": first}),
    );
    let (status, body) = rig.create("po-v2-fork", &again).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], "already_superseded");
    assert!(body["error"]["fields"]["supersedes"].is_string(), "{body}");
    assert_eq!(rig.total_intents().await, before);

    // An order whose send may have crossed and is still open cannot be superseded.
    let (open, _) = rig.authorized("po-open", &po(7000)).await;
    rig.dispatch(&open).await;
    rig.wait_for_state(&open, "indeterminate").await;
    let fix = order(
        TENANT,
        "purchase_order.create",
        json!({"qty": 2, "amount": 7100}),
        json!({"supersedes": open}),
    );
    let (status, body) = rig.create("po-open-v2", &fix).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], "supersedes_open");
    assert_eq!(rig.total_intents().await, before + 1);
    assert_eq!(
        rig.detail(&open).await["intent"]["superseded_by"],
        Value::Null
    );
    assert_eq!(rig.effects(&first_key), 0);
}

async fn bad_cancels_and_links_are_refused_and_store_nothing(backend: Backend) {
    let rig = start(&backend, "none", true).await;
    let (id, _) = rig.authorized("bad-1", &po(10)).await;

    // The body: a reason, and nothing else.
    let (status, body, _) = rig
        .call(
            Method::POST,
            &format!("/v1/intents/{id}/cancel"),
            AGENT,
            Some(&json!({})),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let (status, body, _) = rig.cancel_as(AGENT, &id, "  ").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body["error"]["fields"]["reason"].is_string(), "{body}");
    let (status, body, _) = rig
        .call(
            Method::POST,
            &format!("/v1/intents/{id}/cancel"),
            AGENT,
            Some(&json!({"reason": "x", "force": true})),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    // Another agent of the tenant is not the owner; one of another tenant does not see it.
    let (status, body, _) = rig.cancel_as(OTHER_AGENT, &id, "not mine").await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body["error"]["code"], "not_owner");
    let (status, body, _) = rig.cancel_as(ACME_AGENT, &id, "not mine").await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    // Nor does it cancel the intent by superseding it with an order of its own.
    let hijack = order(
        TENANT,
        "purchase_order.create",
        json!({"qty": 1, "amount": 1}),
        json!({"supersedes": id}),
    );
    let before = rig.total_intents().await;
    let (status, body) = rig.create_as(OTHER_AGENT, "not-mine-v2", &hijack).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body["error"]["code"], "not_owner");
    assert_eq!(rig.total_intents().await, before, "nothing stored");
    let untouched = rig.detail(&id).await;
    assert!(
        untouched["intent"]["superseded_by"].is_null()
            && untouched["intent"]["cancel_requested_at_ms"].is_null(),
        "{untouched:#}"
    );
    // A viewer runs no cancel; an operator's cancel needs a reason and one intent.
    let (status, body) = rig
        .command(VIEWER, json!({"command_id": "bad-c1", "kind": "cancel", "target": {"intent_id": id}, "reason": "x"}))
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let (status, body) = rig
        .command(
            SUPERVISOR,
            json!({"command_id": "bad-c2", "kind": "cancel", "target": {"intent_id": id}}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body["error"]["fields"]["reason"].is_string(), "{body}");
    let (status, body) = rig
        .command(
            SUPERVISOR,
            json!({"command_id": "bad-c3", "kind": "cancel", "target": {"scope": {"tenant": TENANT}}, "reason": "x"}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let detail = rig.detail(&id).await;
    assert_eq!(detail["intent"]["state"], "authorized");
    assert_eq!(detail["intent"]["cancel_requested_at_ms"], Value::Null);
    assert!(rig.audit(&id).await.is_empty(), "nothing recorded");

    // The supervisor cancels it; a cancel of a final intent is refused and recorded nowhere.
    let (status, body) = rig
        .command(SUPERVISOR, json!({"command_id": "ok-c", "kind": "cancel", "target": {"intent_id": id}, "reason": "duplicate order"}))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["result"]["to"], "cancelled");
    let (other, _) = rig.authorized("bad-2", &po(20)).await;
    rig.dispatch(&other).await;
    rig.wait_for_state(&other, "committed").await;
    let transitions = rig.detail(&other).await["transitions"]
        .as_array()
        .map(Vec::len);
    let (status, body) = rig
        .command(SUPERVISOR, json!({"command_id": "bad-c4", "kind": "cancel", "target": {"intent_id": other}, "reason": "x"}))
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], "intent_final");
    let (status, body, _) = rig.cancel_as(AGENT, &other, "x").await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert!(
        rig.audit(&other).await.is_empty(),
        "{:#?}",
        rig.audit(&other).await
    );
    assert_eq!(
        rig.detail(&other).await["transitions"]
            .as_array()
            .map(Vec::len),
        transitions
    );

    // Links: ids of another tenant are as unknown as ids never issued; bad text is named.
    let before = rig.total_intents().await;
    let (status, acme) = rig
        .create_as(
            ACME_AGENT,
            "acme-1",
            &order(
                "acme",
                "purchase_order.create",
                json!({"qty": 1}),
                json!({}),
            ),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{acme}");
    let acme_id = acme["id"].as_str().expect("id").to_string();
    let unknown = IntentId::generate(1, 1).to_string();
    for (field, value) in [
        ("parent_intent_id", acme_id.as_str()),
        ("supersedes", acme_id.as_str()),
        ("parent_intent_id", unknown.as_str()),
    ] {
        let body = order(
            TENANT,
            "purchase_order.create",
            json!({"qty": 3}),
            json!({ field: value }),
        );
        let (status, answer) = rig.create("link-bad", &body).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{field}: {answer}");
        assert!(answer["error"]["fields"][field].is_string(), "{answer}");
        assert!(!answer.to_string().contains("acme"), "no leak: {answer}");
    }
    for (field, value) in [
        ("parent_intent_id", json!("not-an-id")),
        ("supersedes", json!(7)),
        ("workflow_id", json!("")),
        ("workflow_id", json!("x".repeat(201))),
    ] {
        let body = order(
            TENANT,
            "purchase_order.create",
            json!({"qty": 3}),
            json!({ field: value }),
        );
        let (status, answer) = rig.create("link-bad", &body).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{field}: {answer}");
        let named =
            answer["error"]["fields"][field].is_string() || answer.to_string().contains(field);
        assert!(named, "{field}: {answer}");
    }
    assert_eq!(
        rig.total_intents().await,
        before + 1,
        "only the acme order was stored"
    );
    // The key was never taken: the same key with good links creates.
    let body = order(
        TENANT,
        "purchase_order.create",
        json!({"qty": 3}),
        json!({"parent_intent_id": id}),
    );
    let (status, answer) = rig.create("link-bad", &body).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
}

// ---------------------------------------------------------------------------------------
// The claim race, on the store itself: a send claimed before the cancel is not made.
// ---------------------------------------------------------------------------------------

fn terms(_: &str, _: &str) -> Result<SendTerms, String> {
    Ok(SendTerms {
        key: KeyContract {
            supports_idempotency: true,
            retention_ms: 86_400_000,
            timeout_ms: 500,
        },
        resource: "purchase-orders".into(),
    })
}

const NOW: u64 = 1_800_000_000_000;

fn claimed_intent(store: &mut Store, lease_ms: u64) -> (IntentId, intentdesk::store::ClaimedRow) {
    let id = IntentId::generate(NOW, 5);
    let new = NewIntent {
        id: id.clone(),
        tenant: TENANT.parse().expect("tenant"),
        caller_key: "race-1".into(),
        principal: "agent".into(),
        actor: "agent:kharid-bot".into(),
        purpose: "race".into(),
        operation: "purchase_order.create".into(),
        tool: "erp".into(),
        tier: intentdesk::domain::ConsequenceTier::Write,
        args_json: "{}".into(),
        canonical_json: "{}".into(),
        args_hash: "h".into(),
        search_text: String::new(),
        release_id: "r".into(),
        locale: intentdesk::domain::Locale::EnUs,
        connector: "erp".into(),
        max_attempts: 3,
        created_at_ms: NOW,
        deadline_at_ms: NOW + 600_000,
        key_retention_secs: Some(86_400),
        links: Links::default(),
        refused: None,
    };
    store.create_or_replay(&new).expect("created");
    let ctx = ApplyContext {
        now_ms: NOW,
        authorization: Some(Approval::by("approver", "v1")),
        ..ApplyContext::default()
    };
    store
        .apply(&id, &Event::Authorized, &ctx)
        .expect("authorized");
    let ctx = ApplyContext {
        now_ms: NOW,
        dispatch: Some(DispatchPlan {
            attempt_id: AttemptId::generate(NOW, 6),
            available_at_ms: NOW,
        }),
        ..ApplyContext::default()
    };
    store
        .apply(&id, &Event::Dispatch, &ctx)
        .expect("dispatched");
    let mut claim = store
        .claim_outbox("dispatcher-1", NOW, lease_ms, 1, &terms)
        .expect("claimed");
    (id, claim.rows.pop().expect("one row"))
}

fn cancel(store: &mut Store, id: &IntentId, at: u64) -> IntentState {
    let ctx = ApplyContext {
        now_ms: at,
        cancel_by: Some("agent".into()),
        ..ApplyContext::default()
    };
    let reason = "owner".to_string();
    store
        .apply(id, &Event::Cancel { reason }, &ctx)
        .expect("the cancel is taken")
        .transition
        .to
}

on_both_backends! {
    fn a_send_claimed_before_the_cancel_is_withdrawn_before_it_leaves(store) {
        let (id, row) = claimed_intent(&mut store, 30_000);
        // The claim may have crossed: the cancel is only requested.
        assert_eq!(cancel(&mut store, &id, NOW + 1), IntentState::Executing);
        assert!(store.cancel_requested(&id).expect("read"));
        // The dispatcher checks before it sends, and withdraws the send instead.
        let follow = intentdesk::coordinator::core::dispatch::withdraw_if_cancelled(&mut store, &row, NOW + 2)
            .expect("withdrawn");
        assert!(follow.is_some(), "the send is not made");
        let intent = store.intent(&id).expect("intent");
        assert_eq!(intent.state, IntentState::Cancelled, "nothing crossed after all");
        assert!(!intent.may_have_crossed_boundary);
        let attempts = store.attempts_of(&id).expect("attempts");
        assert_eq!(attempts[0].outcome, intentdesk::domain::AttemptOutcome::Abandoned);
        assert!(!attempts[0].sent);
        assert_eq!(intent.attempts, 0, "the unsent try is given back");
        // Nothing is left to claim, even once the lease would have run out.
        let later = store
            .claim_outbox("dispatcher-2", NOW + 60_000, 30_000, 8, &terms)
            .expect("claim");
        assert!(later.rows.is_empty() && later.held.is_empty(), "{later:?}");
    }

    fn a_claim_taken_over_is_not_withdrawn_by_its_old_holder(store) {
        let (id, row) = claimed_intent(&mut store, 100);
        assert_eq!(cancel(&mut store, &id, NOW + 1), IntentState::Executing);
        // The lease ran out and another dispatcher took the row over, to reconcile it.
        let taken = store
            .claim_outbox("dispatcher-2", NOW + 1_000, 30_000, 8, &terms)
            .expect("claim");
        assert!(taken.rows.first().is_some_and(|r| r.reclaimed));
        let old = intentdesk::coordinator::core::dispatch::withdraw_if_cancelled(&mut store, &row, NOW + 1_001);
        assert!(matches!(old, Err(intentdesk::store::StoreError::Fenced { .. })), "{old:?}");
        // It may have been sent: the cancel stays a request, never a cancelled state.
        assert_eq!(store.intent(&id).expect("intent").state, IntentState::Executing);
    }
}

// ---------------------------------------------------------------------------------------
// The console: the workflow and revision links, and the cancellation request, from fixed
// data on the console's local cache and a fixed clock, in both locales.
// ---------------------------------------------------------------------------------------

#[cfg(feature = "console")]
mod console {
    use std::time::{Duration, Instant};

    use egui::accesskit::Role;
    use egui_kittest::Harness;
    use egui_kittest::kittest::Queryable;
    use intentdesk::console::cache::Cache;
    use intentdesk::console::commands::ConsoleCommand;
    use intentdesk::console::model::{IntentDetail, IntentPage};
    use intentdesk::console::views::intent_view::IntentTab;
    use intentdesk::console::worker::cache_key;
    use intentdesk::console::{ConsoleApp, ConsoleOptions};
    use serde_json::{Value, json};

    const NOW_MS: u64 = 1_764_489_600_000;
    const URL: &str = "http://coordinator.example:7410";
    const EXPORT: &str = "int_01kb10p7q3x9d2m8v4r6t0y5zs";
    const OLD: &str = "int_01kb11p7q3x9d2m8v4r6t0y5zs";
    const DELIVERY: &str = "int_01kb12p7q3x9d2m8v4r6t0y5zs";

    fn intent(id: &str, operation: &str, state: &str, age_secs: u64, extra: Value) -> Value {
        let created = NOW_MS - age_secs * 1000;
        let mut v = json!({
            "id": id, "tenant": "pars-trading", "actor": "agent:kharid-bot", "purpose": "سفارش کاغذ A4",
            "operation": operation, "tool": "erp", "consequence": "write", "state": state, "attempts": 1,
            "max_attempts": 3, "created_at_ms": created, "updated_at_ms": created + 500,
            "deadline_at_ms": created + 600_000, "locale": "fa-IR", "providers": ["erp"], "connector": "erp",
            "action_key": format!("po:pars-trading:{id}"), "workflow_id": "wf-order-1405",
        });
        if let (Some(v), Some(extra)) = (v.as_object_mut(), extra.as_object()) {
            v.extend(extra.clone());
        }
        v
    }

    fn linked(id: &str, operation: &str, state: &str, age_secs: u64, extra: Value) -> Value {
        let mut v = json!({"id": id, "state": state, "operation": operation, "created_at_ms": NOW_MS - age_secs * 1000});
        if let (Some(v), Some(extra)) = (v.as_object_mut(), extra.as_object()) {
            v.extend(extra.clone());
        }
        v
    }

    fn page() -> IntentPage {
        serde_json::from_value(json!({
            "items": [
                intent(DELIVERY, "purchase_order.create", "indeterminate", 120, json!({"supersedes": OLD})),
                intent(OLD, "purchase_order.create", "cancelled", 600, json!({"superseded_by": DELIVERY})),
                intent(EXPORT, "inventory.reserve", "committed", 900, json!({})),
            ],
            "next_cursor": null, "total": 3, "total_exact": true,
        }))
        .expect("page")
    }

    /// A delivery of a workflow whose export is committed, correcting an earlier order, and
    /// whose send was lost: its cancellation is requested and waits for evidence.
    fn detail() -> IntentDetail {
        let created = NOW_MS - 120_000;
        serde_json::from_value(json!({
            "intent": intent(DELIVERY, "purchase_order.create", "indeterminate", 120, json!({
                "supersedes": OLD, "parent_intent_id": EXPORT, "may_have_crossed_boundary": true,
                "cancel_requested_at_ms": created + 30_000, "cancel_requested_by": "agent",
                "cancel_reason": "the buyer changed the order", "indeterminate_since_ms": created + 9_000,
            })),
            "attempts": [
                {"id": "att_01kb12p7q3x9d2m8v4r6t0y5a1", "kind": "dispatch", "provider": "erp", "outcome": "lost",
                 "sent": true, "started_at_ms": created + 200, "ended_at_ms": created + 9_000},
            ],
            "transitions": [
                {"from": null, "to": "prepared", "event": "validated", "at_ms": created},
                {"from": "prepared", "to": "authorized", "event": "authorized", "at_ms": created + 100},
                {"from": "authorized", "to": "executing", "event": "dispatch", "at_ms": created + 200},
                {"from": "executing", "to": "indeterminate", "event": "outcome_unknown", "at_ms": created + 9_000},
                {"from": "indeterminate", "to": "indeterminate", "event": "cancel",
                 "reason": "the buyer changed the order", "command_id": "cmd_01kb12p7q3x9d2m8v4r6t0y5c1", "at_ms": created + 30_000},
            ],
            "commands": [
                {"command_id": "cmd_01kb12p7q3x9d2m8v4r6t0y5c1", "kind": "cancel", "actor": "agent", "role": "agent",
                 "reason": "the buyer changed the order", "dry_run": false, "status": "applied",
                 "result": {"from": "indeterminate", "to": "indeterminate", "cancellation": "requested", "target_count": 1},
                 "body": {"target": {"intent_id": DELIVERY}}, "created_at_ms": created + 30_000},
            ],
            "workflow": [
                linked(EXPORT, "inventory.reserve", "committed", 900, json!({})),
                linked(OLD, "purchase_order.create", "cancelled", 600, json!({"superseded_by": DELIVERY})),
                linked(DELIVERY, "purchase_order.create", "indeterminate", 120,
                       json!({"supersedes": OLD, "cancel_requested_at_ms": created + 30_000})),
            ],
            "revisions": [
                linked(OLD, "purchase_order.create", "cancelled", 600, json!({"superseded_by": DELIVERY})),
                linked(DELIVERY, "purchase_order.create", "indeterminate", 120,
                       json!({"supersedes": OLD, "cancel_requested_at_ms": created + 30_000})),
            ],
        }))
        .expect("detail")
    }

    fn harness(dir: &std::path::Path) -> (tokio::runtime::Runtime, Harness<'static, ConsoleApp>) {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        let cache_path = dir.join("cache.sqlite");
        let cache = Cache::open(&cache_path, URL).expect("cache");
        let query = vec![
            ("sort".to_string(), "-created".to_string()),
            ("limit".to_string(), "200".to_string()),
        ];
        runtime.block_on(cache.put_page(&cache_key(&query, None), &page()));
        runtime.block_on(cache.put_detail(DELIVERY, &detail()));
        let options = ConsoleOptions {
            label: URL.into(),
            coordinator_url: URL.into(),
            token: String::new(),
            offline: true,
            open: Some(DELIVERY.to_string()),
            cache_path: Some(cache_path),
            fixed_now_ms: Some(NOW_MS),
            utc: true,
            ca_file: None,
        };
        let handle = runtime.handle().clone();
        let mut harness = Harness::builder()
            .with_size(egui::vec2(1280.0, 720.0))
            .build_eframe(move |cc| ConsoleApp::new(&cc.egui_ctx, None, options, &handle));
        let started = Instant::now();
        let shown = |app: &ConsoleApp| {
            app.table.rows.len() == 3 && app.open.as_ref().is_some_and(|o| o.detail.is_some())
        };
        while !shown(harness.state()) {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "the cached intent never showed"
            );
            harness.step();
            std::thread::sleep(Duration::from_millis(2));
        }
        harness.run_steps(3);
        (runtime, harness)
    }

    fn open_id(harness: &Harness<'static, ConsoleApp>) -> Option<String> {
        harness.state().open.as_ref().map(|o| o.id.clone())
    }

    #[test]
    fn the_intent_view_lists_its_workflow_and_revisions_and_opens_them() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (_runtime, mut harness) = harness(dir.path());
        harness.snapshot("lifecycle_links_en");
        // The owner's cancellation request in the audit trail.
        harness.state_mut().intent_view.tab = IntentTab::Audit;
        harness.run_steps(4);
        harness.snapshot("lifecycle_audit_en");
        // The export's short id is a button that opens it.
        let short: String = EXPORT.chars().take(14).collect();
        harness.get_by_role_and_label(Role::Button, &short).click();
        harness.run_steps(3);
        assert_eq!(open_id(&harness).as_deref(), Some(EXPORT));
    }

    #[test]
    fn the_intent_view_lists_its_workflow_and_revisions_in_persian() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (_runtime, mut harness) = harness(dir.path());
        harness.state_mut().queue(ConsoleCommand::SwitchLocale);
        harness.run_steps(4);
        harness.snapshot("lifecycle_links_fa");
        harness.state_mut().intent_view.tab = IntentTab::Audit;
        harness.run_steps(4);
        harness.snapshot("lifecycle_audit_fa");
        // The earlier order is listed twice: in the workflow and in the revision chain.
        let short: String = OLD.chars().take(14).collect();
        harness
            .get_all_by_role_and_label(Role::Button, &short)
            .next()
            .expect("the earlier order's button")
            .click();
        harness.run_steps(3);
        assert_eq!(open_id(&harness).as_deref(), Some(OLD));
    }
}
