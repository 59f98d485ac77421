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
    batches_naming_the_same_keys_in_opposite_orders_both_answer,
    corrections_crossing_in_two_batches_both_answer,
    of_two_corrections_of_one_intent_in_a_batch_the_first_key_wins,
    a_batch_the_store_fails_midway_stores_nothing_of_it,
    another_tenants_intent_named_as_superseded_is_refused_without_touching_it,
}

const ADMIN: &str = "admin-token";
const AGENT: &str = "agent-token";
const VIEWER: &str = "viewer-token";

struct Running {
    base: String,
    http: reqwest::Client,
    _coordinator: deploy::Coordinator,
    _sandbox: deploy::Sandbox,
    dir: tempfile::TempDir,
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
        dir,
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

/// Bad luck, not malice: two agents send batches that share their keys, in opposite orders,
/// at the same moment (a retried batch beside one rebuilt from the same requisition). Each
/// key names one intent; both batches answer every intent, one creating it and the other
/// replaying it; neither is refused as unavailable. On PostgreSQL, where the two are written
/// side by side, each would wait for a key the other had written and not yet committed.
async fn batches_naming_the_same_keys_in_opposite_orders_both_answer(backend: Backend) {
    let c = start(&backend).await;
    const KEYS: usize = 40;
    for round in 0..8 {
        let forward: Vec<Value> = (0..KEYS)
            .map(|n| item(&format!("shared-{round}-{n}"), json!(n)))
            .collect();
        let backward: Vec<Value> = forward.iter().rev().cloned().collect();
        let (forward, backward) = (
            json!({ "intents": forward }),
            json!({ "intents": backward }),
        );
        let (one, two) = tokio::join!(
            c.post(AGENT, "/v1/intents/batch", &forward),
            c.post(AGENT, "/v1/intents/batch", &backward),
        );
        let mut by_key: std::collections::BTreeMap<String, Vec<(u64, String)>> = Default::default();
        for response in [one, two] {
            assert_eq!(response.status(), StatusCode::OK, "round {round}");
            let answer: Value = response.json().await.expect("json");
            for result in answer["results"].as_array().expect("results") {
                let intent = &result["intent"];
                let key = intent["caller_key"]
                    .as_str()
                    .expect("an intent")
                    .to_string();
                let id = intent["id"].as_str().expect("an id").to_string();
                by_key
                    .entry(key)
                    .or_default()
                    .push((result["status"].as_u64().expect("a status"), id));
            }
        }
        assert_eq!(by_key.len(), KEYS, "round {round}");
        for (key, answers) in by_key {
            let mut statuses: Vec<u64> = answers.iter().map(|(s, _)| *s).collect();
            statuses.sort_unstable();
            assert_eq!(statuses, [200, 201], "{key}: created once, replayed once");
            assert_eq!(answers[0].1, answers[1].1, "{key} names one intent");
        }
    }
    assert_eq!(c.get("/v1/intents?limit=1").await["total"], json!(8 * KEYS));
}

/// Bad luck again: two batches of corrections by one agent, each replacing the same intents
/// in opposite orders, at the same moment (a correction job run twice, once from each end of
/// its list). Each intent is replaced once: one correction of it is created and the other
/// refused as already superseded; neither batch is refused as unavailable. On PostgreSQL
/// each batch would lock the intents it replaces one by one, and wait for one the other had
/// locked.
async fn corrections_crossing_in_two_batches_both_answer(backend: Backend) {
    let c = start(&backend).await;
    const TARGETS: usize = 30;
    for round in 0..6 {
        let originals = json!({"intents": (0..TARGETS)
            .map(|n| item(&format!("orig-{round}-{n}"), json!(n)))
            .collect::<Vec<_>>()});
        let created: Value = c
            .post(AGENT, "/v1/intents/batch", &originals)
            .await
            .json()
            .await
            .expect("json");
        let targets: Vec<String> = created["results"]
            .as_array()
            .expect("results")
            .iter()
            .map(|r| r["intent"]["id"].as_str().expect("an id").to_string())
            .collect();
        let corrections = |side: &str| -> Vec<Value> {
            targets
                .iter()
                .enumerate()
                .map(|(n, target)| {
                    let mut fix = item(&format!("fix-{side}-{round}-{n}"), json!(n + 100));
                    fix["supersedes"] = json!(target);
                    fix
                })
                .collect()
        };
        let forward = json!({ "intents": corrections("a") });
        let backward: Vec<Value> = corrections("b").into_iter().rev().collect();
        let backward = json!({ "intents": backward });
        let (one, two) = tokio::join!(
            c.post(AGENT, "/v1/intents/batch", &forward),
            c.post(AGENT, "/v1/intents/batch", &backward),
        );
        let mut by_target: std::collections::BTreeMap<String, Vec<(u64, Value)>> =
            Default::default();
        for (response, side) in [(one, "forward"), (two, "backward")] {
            assert_eq!(response.status(), StatusCode::OK, "round {round}, {side}");
            let answer: Value = response.json().await.expect("json");
            let sent = if side == "forward" {
                &forward
            } else {
                &backward
            };
            let results = answer["results"].as_array().expect("results");
            for (result, fix) in results
                .iter()
                .zip(sent["intents"].as_array().expect("sent"))
            {
                let target = fix["supersedes"].as_str().expect("a target").to_string();
                let status = result["status"].as_u64().expect("a status");
                by_target
                    .entry(target)
                    .or_default()
                    .push((status, result.clone()));
            }
        }
        assert_eq!(by_target.len(), TARGETS, "round {round}");
        for (target, answers) in by_target {
            let mut statuses: Vec<u64> = answers.iter().map(|(s, _)| *s).collect();
            statuses.sort_unstable();
            assert_eq!(
                statuses,
                [201, 409],
                "{target}: replaced once, refused once"
            );
            let (made, refused) = if answers[0].0 == 201 {
                (&answers[0].1, &answers[1].1)
            } else {
                (&answers[1].1, &answers[0].1)
            };
            assert_eq!(refused["error"]["code"], "already_superseded", "{target}");
            let replaced = c.get(&format!("/v1/intents/{target}")).await;
            assert_eq!(
                replaced["intent"]["superseded_by"], made["intent"]["id"],
                "{target} names the correction that was created"
            );
        }
    }
}

/// A batch's intents are written in the order of their keys, not as sent: of two
/// corrections of one intent in one batch, the one whose key comes first replaces it, and the
/// other is refused as already superseded by it, wherever each stands in the batch.
async fn of_two_corrections_of_one_intent_in_a_batch_the_first_key_wins(backend: Backend) {
    let c = start(&backend).await;
    let original: Value = c
        .create(AGENT, "orig", &order(json!(1)))
        .await
        .json()
        .await
        .expect("json");
    let id = original["id"].as_str().expect("an id");
    let mut later = item("fix-z", json!(2));
    later["supersedes"] = json!(id);
    let mut first = item("fix-a", json!(3));
    first["supersedes"] = json!(id);
    let answer: Value = c
        .post(
            AGENT,
            "/v1/intents/batch",
            &json!({"intents": [later, first]}),
        )
        .await
        .json()
        .await
        .expect("json");
    let results = answer["results"].as_array().expect("results");
    assert_eq!(results[1]["status"], 201, "{answer}");
    assert_eq!(results[0]["status"], 409, "{answer}");
    assert_eq!(
        results[0]["error"]["code"], "already_superseded",
        "{answer}"
    );
    assert_eq!(
        c.get(&format!("/v1/intents/{id}")).await["intent"]["superseded_by"],
        results[1]["intent"]["id"]
    );
}

/// The store failing on one intent of a batch after it wrote those before it (a trigger the
/// test adds refuses that one intent's row): the batch fails whole, 500, and nothing of it
/// is stored, not even the intents before the refused one, whose keys stay free. Sent again
/// once the store takes it, the same batch creates every intent anew.
async fn a_batch_the_store_fails_midway_stores_nothing_of_it(backend: Backend) {
    use common::backends::with_store;
    let c = start(&backend).await;
    let location = backend.database(c.dir.path());
    let (refuse, allow) = match backend {
        Backend::Sqlite => (
            "CREATE TRIGGER refuse_one BEFORE INSERT ON intents WHEN NEW.caller_key = 'mid-3' \
             BEGIN SELECT RAISE(ABORT, 'refused by the test'); END",
            "DROP TRIGGER refuse_one",
        ),
        Backend::Postgres(_) => (
            "CREATE FUNCTION refuse_one() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN \
             IF NEW.caller_key = 'mid-3' THEN RAISE EXCEPTION 'refused by the test'; END IF; \
             RETURN NEW; END $$; \
             CREATE TRIGGER refuse_one BEFORE INSERT ON intents \
             FOR EACH ROW EXECUTE FUNCTION refuse_one()",
            "DROP TRIGGER refuse_one ON intents; DROP FUNCTION refuse_one()",
        ),
    };
    with_store(&location, |s| s.conn().batch(refuse)).expect("the trigger is made");
    let batch = json!({"intents": (0..6)
        .map(|n| item(&format!("mid-{n}"), json!(n)))
        .collect::<Vec<_>>()});
    let failed = c.post(AGENT, "/v1/intents/batch", &batch).await;
    assert_eq!(failed.status(), StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(
        c.get("/v1/intents?limit=1").await["total"],
        json!(0),
        "nothing of the batch is stored"
    );

    with_store(&location, |s| s.conn().batch(allow)).expect("the trigger is dropped");
    let answer: Value = c
        .post(AGENT, "/v1/intents/batch", &batch)
        .await
        .json()
        .await
        .expect("json");
    let statuses: Vec<u64> = answer["results"]
        .as_array()
        .expect("results")
        .iter()
        .filter_map(|r| r["status"].as_u64())
        .collect();
    assert_eq!(statuses, [201; 6], "every key was still free: {answer}");
    assert_eq!(c.get("/v1/intents?limit=1").await["total"], json!(6));
}

/// Another tenant: an agent that names an intent of a tenant it does not serve as the one its
/// order replaces is answered 404 naming `supersedes`, as if that intent did not exist, and
/// so is its dispatch of that intent, without taking or waiting for that intent's lock. On PostgreSQL another session holds
/// the intent's row meanwhile, as a write of its own tenant would: a create that locked the
/// row before looking at its tenant would wait for it, and give up unavailable.
async fn another_tenants_intent_named_as_superseded_is_refused_without_touching_it(
    backend: Backend,
) {
    let c = start(&backend).await;
    let mut theirs = order(json!(3));
    theirs["tenant"] = json!("globex");
    let theirs: Value = c
        .create(ADMIN, "globex-1", &theirs)
        .await
        .json()
        .await
        .expect("json");
    let id = theirs["id"].as_str().expect("an id").to_string();
    let holder = match &backend {
        Backend::Postgres(url) => Some(common::backends::hold_row(url.clone(), id.clone()).await),
        // SQLite's one writer holds no row locks to wait for: the refusal alone is asked.
        Backend::Sqlite => None,
    };
    let mut replacing = order(json!(4));
    replacing["supersedes"] = json!(id);
    let response = c.create(AGENT, "acme-replaces", &replacing).await;
    let status = response.status();
    let answer: Value = response.json().await.expect("json");
    // The same for a dispatch of that intent by the agent of another tenant.
    let dispatched = c
        .post(AGENT, &format!("/v1/intents/{id}/dispatch"), &json!({}))
        .await
        .status();
    // And for a batch of corrections, which holds the intents it corrects before anything
    // else: only its own tenant's.
    let batch: Vec<Value> = ["acme-batch-1", "acme-batch-2"]
        .iter()
        .map(|key| {
            let mut fix = item(key, json!(5));
            fix["supersedes"] = json!(id);
            fix
        })
        .collect();
    let batched = c
        .post(AGENT, "/v1/intents/batch", &json!({ "intents": batch }))
        .await;
    let batched = (
        batched.status(),
        batched.json::<Value>().await.expect("json"),
    );
    if let Some((release, thread)) = holder {
        release.send(()).expect("the holder waits");
        thread.join().expect("the holder ends");
    }
    assert_eq!(dispatched, StatusCode::NOT_FOUND);
    assert_eq!(batched.0, StatusCode::OK, "{}", batched.1);
    let statuses: Vec<&Value> = batched.1["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|r| &r["status"])
        .collect();
    assert_eq!(statuses, [404, 404], "{}", batched.1);
    assert_eq!(status, StatusCode::NOT_FOUND, "{answer}");
    assert!(
        answer["error"]["fields"]["supersedes"].is_string(),
        "{answer}"
    );
    assert_eq!(
        c.state_of(&id).await,
        "prepared",
        "their intent is as it was"
    );
}
