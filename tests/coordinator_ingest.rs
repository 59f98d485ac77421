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
    a_batch_answers_each_intent_as_its_own_create_would,
    a_body_that_is_not_a_batch_is_refused_whole_and_nothing_is_stored,
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

    /// `path` read as the admin.
    async fn get(&self, path: &str) -> Value {
        self.http
            .get(format!("{}{path}", self.base))
            .bearer_auth(ADMIN)
            .send()
            .await
            .expect("request")
            .json()
            .await
            .expect("json")
    }

    async fn listed(&self) -> Vec<Value> {
        self.get("/v1/intents").await["items"]
            .as_array()
            .cloned()
            .expect("a page of intents")
    }

    async fn authorize(&self, id: &str) -> reqwest::Response {
        self.post(
            ADMIN,
            &format!("/v1/intents/{id}/authorize"),
            &json!({"authorization_version": "v1"}),
        )
        .await
    }

    async fn until_committed(&self, id: &str) {
        let started = Instant::now();
        while self.state_of(id).await != "committed" {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "the intent {id} never committed"
            );
            tokio::task::yield_now().await;
        }
    }

    async fn state_of(&self, id: &str) -> String {
        self.get(&format!("/v1/intents/{id}"))
            .await
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

    assert_eq!(c.listed().await.len(), 0, "nothing was stored");
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

    assert_eq!(c.authorize(&id).await.status(), StatusCode::OK);
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

    c.until_committed(&id).await;
    let detail = c.get(&format!("/v1/intents/{id}")).await;
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

/// One intent of a batch: `order(qty)` under `key`.
fn item(key: &str, qty: Value) -> Value {
    let mut item = order(qty);
    item["idempotency_key"] = json!(key);
    item
}

async fn a_batch_answers_each_intent_as_its_own_create_would(backend: Backend) {
    let c = start(&backend).await;
    let earlier: Value = c
        .create(AGENT, "single-1", &order(json!(7)))
        .await
        .json()
        .await
        .expect("json");
    let mut other_tenant = item("b-5", json!(1));
    other_tenant["tenant"] = json!("globex");
    let batch = json!({"intents": [
        item("b-1", json!(1)),
        item("b-1", json!("۱")),
        item("b-1", json!(2)),
        item("single-1", json!(7)),
        item("b-2", json!(2)),
        other_tenant,
    ]});
    let response = c.post(AGENT, "/v1/intents/batch", &batch).await;
    assert_eq!(response.status(), StatusCode::OK);
    let answer: Value = response.json().await.expect("json");
    let results = answer["results"].as_array().expect("results");
    let statuses: Vec<u64> = results
        .iter()
        .filter_map(|r| r["status"].as_u64())
        .collect();
    assert_eq!(statuses, [201, 200, 422, 200, 201, 403]);
    for (at, result) in results.iter().enumerate() {
        assert_eq!(result["index"], json!(at), "{result}");
    }
    let id = |at: usize| {
        results[at]["intent"]["id"]
            .as_str()
            .expect("an intent")
            .to_string()
    };
    assert_eq!(id(1), id(0), "the key named twice answers its first intent");
    assert_eq!(results[1]["replayed"], json!(true));
    assert_eq!(results[0].get("replayed"), None);
    assert_eq!(results[2]["error"]["code"], "idempotency_key_mismatch");
    assert_eq!(
        id(3),
        earlier["id"].as_str().expect("id"),
        "a key created alone replays in a batch"
    );
    assert_ne!(id(4), id(0));
    assert_eq!(results[4]["intent"]["caller_key"], "b-2");
    assert_eq!(results[4]["intent"]["state"], "prepared");
    assert_eq!(results[5]["error"]["code"], "forbidden");
    // Only the two new intents were stored, beside the one created alone; each is an intent
    // like any other, and its key replays alone as it would have in the batch.
    let mut stored: Vec<String> = c
        .listed()
        .await
        .iter()
        .filter_map(|i| i["caller_key"].as_str().map(str::to_string))
        .collect();
    stored.sort();
    assert_eq!(stored, ["b-1", "b-2", "single-1"]);
    let replay = c.create(AGENT, "b-2", &order(json!(2))).await;
    assert_eq!(replay.status(), StatusCode::OK);
    let replay: Value = replay.json().await.expect("json");
    assert_eq!(replay["id"].as_str(), Some(id(4).as_str()));

    let b1 = id(0);
    assert_eq!(c.authorize(&b1).await.status(), StatusCode::OK);
    let sent = c
        .post(AGENT, &format!("/v1/intents/{b1}/dispatch"), &json!({}))
        .await;
    assert_eq!(sent.status(), StatusCode::ACCEPTED);
    c.until_committed(&b1).await;

    // The crate's client sends the same batch and reads the same answer.
    let client = intentdesk::client::ingest::IngestClient::new(
        c.base.parse().expect("a URL"),
        AGENT,
        Duration::from_secs(10),
        Duration::from_secs(10),
        1,
    )
    .expect("a client");
    let intent = |key: &str, qty| intentdesk::wire::BatchIntent {
        idempotency_key: key.to_string(),
        intent: serde_json::from_value(order(json!(qty))).expect("an intent"),
    };
    let results = client
        .create_batch(vec![intent("b-2", 2), intent("b-3", 3)])
        .await
        .expect("answered");
    let seen: Vec<(u16, bool)> = results.iter().map(|r| (r.status, r.replayed)).collect();
    assert_eq!(seen, [(200, true), (201, false)]);
    assert_eq!(
        results[0].intent.as_ref().map(|i| i.id.to_string()),
        Some(id(4))
    );

    // A token that may not create may not create in a batch either.
    let viewer = c
        .post(
            VIEWER,
            "/v1/intents/batch",
            &json!({"intents": [item("v-1", json!(1))]}),
        )
        .await;
    assert_eq!(viewer.status(), StatusCode::FORBIDDEN);
    assert_eq!(c.listed().await.len(), 4);
}

async fn a_body_that_is_not_a_batch_is_refused_whole_and_nothing_is_stored(backend: Backend) {
    let c = start(&backend).await;
    let many: Vec<Value> = (0..101)
        .map(|n| item(&format!("m-{n}"), json!(n)))
        .collect();
    let cases = [
        (json!({"intents": []}), "intents"),
        (json!({"intents": many}), "intents"),
        (json!({"intents": {"idempotency_key": "k"}}), "intents"),
        (json!({}), "intents"),
        (
            json!({"intents": [item("k-1", json!(1))], "also": 1}),
            "also",
        ),
    ];
    for (body, field) in cases {
        let response = c.post(AGENT, "/v1/intents/batch", &body).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST);
        let error: Value = response.json().await.expect("json");
        assert!(
            error["error"]["fields"].get(field).is_some(),
            "{field} is named: {error}"
        );
    }
    for raw in ["[]", "not json", "7"] {
        let response = c
            .http
            .post(format!("{}/v1/intents/batch", c.base))
            .bearer_auth(AGENT)
            .header("content-type", "application/json")
            .body(raw)
            .send()
            .await
            .expect("request");
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{raw}");
    }
    // One malformed intent refuses the whole batch, every bad field named at its place.
    let mut bad_fields = item("bad-1", json!(1));
    bad_fields["deadline_secs"] = json!(0);
    bad_fields["max_attempts"] = json!(0);
    let mut no_key = order(json!(1));
    no_key["purpose"] = json!("no key");
    let body = json!({"intents": [
        item("good-1", json!(1)),
        bad_fields,
        no_key,
        "not an intent",
        item("  ", json!(1)),
    ]});
    let response = c.post(AGENT, "/v1/intents/batch", &body).await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let error: Value = response.json().await.expect("json");
    let named: Vec<&str> = error["error"]["fields"]
        .as_object()
        .map(|f| f.keys().map(String::as_str).collect())
        .unwrap_or_default();
    assert_eq!(
        named,
        [
            "intents[1].deadline_secs",
            "intents[1].max_attempts",
            "intents[2].idempotency_key",
            "intents[3]",
            "intents[4].idempotency_key",
        ],
        "{error}"
    );
    let huge: Vec<Value> = (0..100)
        .map(|n| item(&format!("h-{n}"), json!({"blob": "x".repeat(4_000)})))
        .collect();
    let response = c
        .post(AGENT, "/v1/intents/batch", &json!({ "intents": huge }))
        .await;
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(c.listed().await.len(), 0, "nothing was stored");
    let alone = c.create(AGENT, "good-1", &order(json!(1))).await;
    assert_eq!(
        alone.status(),
        StatusCode::CREATED,
        "the refused batch left a trace"
    );

    let full: Vec<Value> = (0..100)
        .map(|n| item(&format!("f-{n}"), json!(n)))
        .collect();
    let response = c
        .post(AGENT, "/v1/intents/batch", &json!({ "intents": full }))
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    let answer: Value = response.json().await.expect("json");
    let created = answer["results"]
        .as_array()
        .map(|r| r.iter().filter(|x| x["status"] == 201).count());
    assert_eq!(
        created,
        Some(100),
        "a batch of the most it may hold is created whole"
    );
}
