//! The ingest API over real HTTP against a real database (a SQLite file, and PostgreSQL when a test server is named) and a real sandbox: every
//! status code of intent creation, authorisation, dispatch to committed, and the refusal of
//! mutating work reported as an attempt.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};

mod common;
use common::backends::Backend;
use common::deploy::{self, Setup, Token};

on_both_backends_tokio! {
    create_answers_created_then_replayed_then_mismatch,
    bad_input_is_named_field_by_field_and_nothing_is_stored,
    tokens_roles_and_tenants_are_enforced,
    a_dispatched_order_is_committed_once_even_when_the_agent_repeats_dispatch,
    mutating_work_cannot_be_reported_as_an_attempt,
    only_reads_and_compute_are_hedged_and_a_group_runs_three_at_most,
}

const ADMIN: &str = "admin-token";
const AGENT: &str = "agent-token";
const VIEWER: &str = "viewer-token";

struct Running {
    base: String,
    http: reqwest::Client,
    _coordinator: deploy::Coordinator,
    _sandbox: deploy::Sandbox,
    _dir: tempfile::TempDir,
}

async fn start(backend: &Backend) -> Running {
    let sandbox = deploy::sandbox("none", None, None).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let tokens = vec![
        Token::all_tenants("admin", ADMIN),
        Token::acme("agent", AGENT),
        Token::all_tenants("viewer", VIEWER),
    ];
    let setup = Setup::on(backend, dir.path(), &sandbox.url, tokens);
    let coordinator = deploy::Coordinator::start(&setup).await;
    Running {
        base: coordinator.base.clone(),
        http: intentdesk::tls::client(None)
            .expect("a TLS client")
            .build()
            .expect("an HTTP client"),
        _coordinator: coordinator,
        _sandbox: sandbox,
        _dir: dir,
    }
}

fn order(qty: Value) -> Value {
    json!({
        "tenant": "acme", "actor": "agent-7", "purpose": "restock paper", "operation": "purchase_order.create",
        "tool": "erp.po", "consequence": "write", "args": {"item": "paper A4", "qty": qty},
        "deadline_secs": 60, "max_attempts": 3, "release_id": "r1", "locale": "en-US", "connector": "erp"
    })
}

impl Running {
    async fn create(&self, token: &str, key: &str, body: &Value) -> reqwest::Response {
        self.http
            .post(format!("{}/v1/intents", self.base))
            .bearer_auth(token)
            .header("Idempotency-Key", key)
            .json(body)
            .send()
            .await
            .expect("request")
    }

    async fn post(&self, token: &str, path: &str, body: &Value) -> reqwest::Response {
        self.http
            .post(format!("{}{path}", self.base))
            .bearer_auth(token)
            .json(body)
            .send()
            .await
            .expect("request")
    }

    async fn state_of(&self, id: &str) -> String {
        let detail: Value = self
            .http
            .get(format!("{}/v1/intents/{id}", self.base))
            .bearer_auth(ADMIN)
            .send()
            .await
            .expect("request")
            .json()
            .await
            .expect("json");
        detail
            .pointer("/intent/state")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    }
}

async fn create_answers_created_then_replayed_then_mismatch(backend: Backend) {
    let c = start(&backend).await;
    let first = c.create(AGENT, "order-1", &order(json!(1200))).await;
    assert_eq!(first.status(), StatusCode::CREATED);
    let first: Value = first.json().await.expect("json");

    let replay = c.create(AGENT, "order-1", &order(json!("۱۲۰۰"))).await;
    assert_eq!(replay.status(), StatusCode::OK);
    assert_eq!(
        replay
            .headers()
            .get("Idempotent-Replayed")
            .map(|v| v.as_bytes()),
        Some(&b"true"[..])
    );
    let replay: Value = replay.json().await.expect("json");
    assert_eq!(
        replay["id"], first["id"],
        "the Persian-digit replay is the same intent"
    );

    let changed = c.create(AGENT, "order-1", &order(json!(1300))).await;
    assert_eq!(changed.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let error: Value = changed.json().await.expect("json");
    assert_eq!(error["error"]["code"], "idempotency_key_mismatch");
}

async fn bad_input_is_named_field_by_field_and_nothing_is_stored(backend: Backend) {
    let c = start(&backend).await;
    let mut body = order(json!("twelve"));
    body["tenant"] = json!("Acme Corp");
    body["max_attempts"] = json!(0);
    let response = c.create(ADMIN, "bad-1", &body).await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let error: Value = response.json().await.expect("json");
    for field in ["tenant", "max_attempts", "args"] {
        assert!(
            error["error"]["fields"].get(field).is_some(),
            "{field} is named: {error}"
        );
    }

    let mut unknown = order(json!(1));
    unknown["colour"] = json!("red");
    let response = c.create(ADMIN, "bad-2", &unknown).await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let text = response.text().await.expect("text");
    assert!(text.contains("colour"), "{text}");

    let no_key = c
        .http
        .post(format!("{}/v1/intents", c.base))
        .bearer_auth(ADMIN)
        .json(&order(json!(1)))
        .send()
        .await
        .expect("request");
    assert_eq!(no_key.status(), StatusCode::BAD_REQUEST);

    let huge = json!({"blob": "x".repeat(400_000)});
    let response = c.create(ADMIN, "big", &order(huge)).await;
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);

    let list: Value = c
        .http
        .get(format!("{}/v1/intents", c.base))
        .bearer_auth(ADMIN)
        .send()
        .await
        .expect("request")
        .json()
        .await
        .expect("json");
    assert_eq!(
        list["items"].as_array().map(Vec::len),
        Some(0),
        "nothing was stored: {list}"
    );
}

async fn tokens_roles_and_tenants_are_enforced(backend: Backend) {
    let c = start(&backend).await;
    let none = c
        .http
        .post(format!("{}/v1/intents", c.base))
        .json(&order(json!(1)))
        .send()
        .await
        .expect("request");
    assert_eq!(none.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(
        c.create("wrong", "k", &order(json!(1))).await.status(),
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        c.create(VIEWER, "k", &order(json!(1))).await.status(),
        StatusCode::FORBIDDEN
    );
    let mut other = order(json!(1));
    other["tenant"] = json!("globex");
    assert_eq!(
        c.create(AGENT, "k", &other).await.status(),
        StatusCode::FORBIDDEN
    );

    let created: Value = c
        .create(ADMIN, "k2", &other)
        .await
        .json()
        .await
        .expect("json");
    let id = created["id"].as_str().expect("id");
    let hidden = c
        .post(AGENT, &format!("/v1/intents/{id}/dispatch"), &json!({}))
        .await;
    assert_eq!(
        hidden.status(),
        StatusCode::NOT_FOUND,
        "another tenant's intent does not exist for this token"
    );
}

async fn a_dispatched_order_is_committed_once_even_when_the_agent_repeats_dispatch(
    backend: Backend,
) {
    let c = start(&backend).await;
    let created: Value = c
        .create(AGENT, "order-9", &order(json!(5)))
        .await
        .json()
        .await
        .expect("json");
    let id = created["id"].as_str().expect("id").to_string();
    let early = c
        .post(AGENT, &format!("/v1/intents/{id}/dispatch"), &json!({}))
        .await;
    assert_eq!(
        early.status(),
        StatusCode::CONFLICT,
        "dispatch before authorisation is refused"
    );

    let auth = c
        .post(
            ADMIN,
            &format!("/v1/intents/{id}/authorize"),
            &json!({"authorization_version": "v3"}),
        )
        .await;
    assert_eq!(auth.status(), StatusCode::OK);
    let first = c
        .post(AGENT, &format!("/v1/intents/{id}/dispatch"), &json!({}))
        .await;
    assert_eq!(first.status(), StatusCode::ACCEPTED);
    let again: Value = c
        .post(AGENT, &format!("/v1/intents/{id}/dispatch"), &json!({}))
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(
        again["dispatched"],
        json!(false),
        "a repeated dispatch call sends nothing"
    );

    let started = Instant::now();
    while c.state_of(&id).await != "committed" {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the intent never committed"
        );
        tokio::task::yield_now().await;
    }
    let detail: Value = c
        .http
        .get(format!("{}/v1/intents/{id}", c.base))
        .bearer_auth(ADMIN)
        .send()
        .await
        .expect("get")
        .json()
        .await
        .expect("json");
    let dispatches = detail["attempts"]
        .as_array()
        .map(|a| a.iter().filter(|x| x["kind"] == "dispatch").count());
    assert_eq!(dispatches, Some(1));
    assert_eq!(detail["receipts"].as_array().map(Vec::len), Some(1));
}

async fn mutating_work_cannot_be_reported_as_an_attempt(backend: Backend) {
    let c = start(&backend).await;
    let created: Value = c
        .create(AGENT, "order-3", &order(json!(5)))
        .await
        .json()
        .await
        .expect("json");
    let id = created["id"].as_str().expect("id");
    let response = c
        .post(
            AGENT,
            &format!("/v1/intents/{id}/attempts"),
            &json!({"kind": "dispatch", "provider": "erp"}),
        )
        .await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let unknown = c
        .post(
            AGENT,
            &format!("/v1/intents/{id}/attempts"),
            &json!({"kind": "teleport", "provider": "x"}),
        )
        .await;
    assert_eq!(unknown.status(), StatusCode::BAD_REQUEST);
}

/// Hedge reads, never business side effects: a hedge of a proposal is refused and changes
/// nothing; a read's hedge group runs three attempts at once at most.
async fn only_reads_and_compute_are_hedged_and_a_group_runs_three_at_most(backend: Backend) {
    let c = start(&backend).await;
    let intent = |tier: &str, key: &str| {
        let body = json!({
            "tenant": "acme", "actor": "agent-7", "purpose": "find a supplier",
            "operation": "catalog.search", "tool": "web.search", "consequence": tier,
            "args": {"q": key}, "deadline_secs": 600, "max_attempts": 10, "release_id": "r1",
            "locale": "en-US"
        });
        let key = key.to_string();
        let c = &c;
        async move {
            let created = c.create(AGENT, &key, &body).await;
            assert_eq!(created.status(), StatusCode::CREATED);
            let id = created.json::<Value>().await.expect("json")["id"]
                .as_str()
                .expect("id")
                .to_string();
            let authorized = c
                .post(
                    ADMIN,
                    &format!("/v1/intents/{id}/authorize"),
                    &json!({"authorization_version": "v1"}),
                )
                .await;
            assert_eq!(authorized.status(), StatusCode::OK);
            id
        }
    };
    let hedge = |id: String, provider: &'static str| {
        let c = &c;
        async move {
            c.post(
                AGENT,
                &format!("/v1/intents/{id}/attempts"),
                &json!({"kind": "inference", "provider": provider, "hedge_group": "h1"}),
            )
            .await
        }
    };

    let proposal = intent("proposal", "hedge-proposal").await;
    let refused = hedge(proposal.clone(), "openai").await;
    assert_eq!(refused.status(), StatusCode::CONFLICT);
    let body: Value = refused.json().await.expect("json");
    assert_eq!(body["error"]["code"], "hedge_not_allowed", "{body}");
    let detail: Value = c
        .http
        .get(format!("{}/v1/intents/{proposal}", c.base))
        .bearer_auth(ADMIN)
        .send()
        .await
        .expect("detail")
        .json()
        .await
        .expect("json");
    assert_eq!(
        detail["attempts"].as_array().map(Vec::len),
        Some(0),
        "{detail}"
    );
    assert_eq!(detail["intent"]["state"], "authorized");

    let read = intent("read", "hedge-read").await;
    for provider in ["openai", "anthropic", "mistral"] {
        assert_eq!(
            hedge(read.clone(), provider).await.status(),
            StatusCode::CREATED
        );
    }
    let fourth = hedge(read.clone(), "cohere").await;
    assert_eq!(fourth.status(), StatusCode::CONFLICT);
    let body: Value = fourth.json().await.expect("json");
    assert_eq!(body["error"]["code"], "hedges_at_cap", "{body}");
    // An attempt outside the group is not a hedge.
    let plain = c
        .post(
            AGENT,
            &format!("/v1/intents/{read}/attempts"),
            &json!({"kind": "inference", "provider": "cohere"}),
        )
        .await;
    assert_eq!(plain.status(), StatusCode::CREATED);
}
