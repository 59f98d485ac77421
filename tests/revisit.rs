//! Gate-revisit signals and what a send crossed under, over real HTTP: a coordinator started
//! twice over the same database (SQLite, then PostgreSQL) records what changed in its
//! connectors' contracts between the starts, and the first sighting of a provider, release
//! or tool, as revisit events in the audit (`GET /v1/revisits`); a dispatched intent's API
//! view carries the downstream resource and key retention stored with its send, and its
//! retry owner.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};

mod common;
use common::backends::Backend;
use common::deploy::{self, Setup, Token};

on_both_backends_tokio! {
    a_shortened_retention_between_starts_is_one_revisit_naming_old_and_new,
    an_unchanged_restart_records_no_revisit,
    a_new_provider_release_and_tool_are_each_a_revisit_once,
    a_first_sighting_is_shown_only_within_its_tenant,
    a_dispatch_keeps_its_resource_and_retention_and_names_its_retry_owner,
    bad_revisit_queries_are_400_naming_the_parameter,
}

/// Guards against a hang; never a stand-in for synchronisation.
const PATIENCE: Duration = Duration::from_secs(20);

const ADMIN: &str = "revisit-admin-secret";
const AGENT: &str = "revisit-agent-secret";
const ACME_VIEWER: &str = "revisit-acme-viewer-secret";

/// A database that outlives the coordinators started over it, and the sandbox they send to.
struct Site {
    backend: Backend,
    dir: tempfile::TempDir,
    sandbox: deploy::Sandbox,
    http: reqwest::Client,
}

struct Running {
    base: String,
    coordinator: deploy::Coordinator,
}

impl Site {
    async fn new(backend: Backend) -> Site {
        let _ = tracing_subscriber::fmt().with_test_writer().try_init();
        Site {
            backend,
            dir: tempfile::tempdir().expect("temporary directory"),
            sandbox: deploy::sandbox("none", None, None).await,
            http: intentdesk::tls::client(None)
                .expect("a TLS client")
                .no_proxy()
                .build()
                .expect("client builds"),
        }
    }

    /// The configuration of every start: the `erp` connector on the sandbox.
    fn setup(&self) -> Setup {
        let tokens = vec![
            Token::all_tenants("admin", ADMIN),
            Token::all_tenants("agent", AGENT),
            Token::acme("viewer", ACME_VIEWER),
        ];
        Setup::on(&self.backend, self.dir.path(), &self.sandbox.url, tokens)
    }

    async fn start(&self, setup: &Setup) -> Running {
        let coordinator = deploy::Coordinator::start(setup).await;
        Running {
            base: coordinator.base.clone(),
            coordinator,
        }
    }

    /// Start with `setup`, read the revisit events as `token`, and stop.
    async fn events_after_start(&self, setup: &Setup) -> Vec<Value> {
        let running = self.start(setup).await;
        let events = self.revisits(&running, ADMIN).await;
        stop(running).await;
        events
    }

    async fn get(&self, running: &Running, token: &str, path: &str) -> (StatusCode, Value) {
        let response = tokio::time::timeout(
            PATIENCE,
            self.http
                .get(format!("{}{path}", running.base))
                .bearer_auth(token)
                .send(),
        )
        .await
        .expect("the coordinator answers in time")
        .expect("the request reaches the coordinator");
        let status = response.status();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    async fn post(
        &self,
        running: &Running,
        path: &str,
        key: Option<&str>,
        body: &Value,
    ) -> (StatusCode, Value) {
        self.post_as(running, AGENT, path, key, body).await
    }

    async fn post_as(
        &self,
        running: &Running,
        token: &str,
        path: &str,
        key: Option<&str>,
        body: &Value,
    ) -> (StatusCode, Value) {
        let mut request = self
            .http
            .post(format!("{}{path}", running.base))
            .bearer_auth(token)
            .json(body);
        if let Some(key) = key {
            request = request.header("Idempotency-Key", key);
        }
        let response = tokio::time::timeout(PATIENCE, request.send())
            .await
            .expect("the coordinator answers in time")
            .expect("the request reaches the coordinator");
        let status = response.status();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    async fn revisits(&self, running: &Running, token: &str) -> Vec<Value> {
        let (status, body) = self.get(running, token, "/v1/revisits").await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body["items"].as_array().cloned().expect("a list of events")
    }

    /// Create an intent as an agent; its envelope.
    async fn create(&self, running: &Running, key: &str, body: &Value) -> Value {
        let (status, created) = self.post(running, "/v1/intents", Some(key), body).await;
        assert_eq!(status, StatusCode::CREATED, "{created}");
        created
    }
}

async fn stop(running: Running) {
    tokio::time::timeout(PATIENCE, running.coordinator.shut_down())
        .await
        .expect("the coordinator stops in time")
        .expect("the coordinator ends cleanly");
}

fn order(tenant: &str, tool: &str, release: &str) -> Value {
    json!({
        "tenant": tenant, "actor": "agent-7", "purpose": "restock paper",
        "operation": "purchase_order.create", "tool": tool, "consequence": "write",
        "args": {"item": "paper A4", "qty": 5}, "deadline_secs": 60, "max_attempts": 3,
        "release_id": release, "locale": "en-US", "connector": "erp"
    })
}

fn lookup(tenant: &str, tool: &str, release: &str) -> Value {
    json!({
        "tenant": tenant, "actor": "agent-7", "purpose": "find a supplier",
        "operation": "catalog.search", "tool": tool, "consequence": "read",
        "args": {"q": "paper"}, "deadline_secs": 60, "max_attempts": 3,
        "release_id": release, "locale": "en-US", "connector": "search"
    })
}

/// The events as (kind, subject, field, old, new), oldest first.
fn said(events: &[Value]) -> Vec<(String, String, String, Option<String>, String)> {
    let text = |v: &Value| v.as_str().map(str::to_string);
    let mut out: Vec<_> = events
        .iter()
        .map(|e| {
            (
                text(&e["kind"]).expect("kind"),
                text(&e["subject"]).expect("subject"),
                text(&e["field"]).expect("field"),
                text(&e["old"]),
                text(&e["new"]).expect("new"),
            )
        })
        .collect();
    out.reverse();
    out
}

async fn a_shortened_retention_between_starts_is_one_revisit_naming_old_and_new(backend: Backend) {
    let site = Site::new(backend).await;
    let mut setup = site.setup();
    assert!(
        site.events_after_start(&setup).await.is_empty(),
        "the first start records its baseline without events"
    );

    setup.key_retention_secs = 3_600;
    let events = site.events_after_start(&setup).await;
    assert_eq!(
        said(&events),
        vec![(
            "retention_shortened".into(),
            "erp".into(),
            "key_retention_secs".into(),
            Some("86400".into()),
            "3600".into()
        )]
    );
    assert_eq!(events[0]["tenant"], Value::Null, "the configuration's own");
}

async fn an_unchanged_restart_records_no_revisit(backend: Backend) {
    let site = Site::new(backend).await;
    let mut setup = site.setup();
    site.events_after_start(&setup).await;
    setup.timeout_ms = 1_500;
    assert_eq!(site.events_after_start(&setup).await.len(), 1);
    let again = site.events_after_start(&setup).await;
    assert_eq!(
        said(&again),
        vec![(
            "contract_changed".into(),
            "erp".into(),
            "timeout_ms".into(),
            Some("1000".into()),
            "1500".into()
        )],
        "the same configuration again adds nothing"
    );
}

async fn a_new_provider_release_and_tool_are_each_a_revisit_once(backend: Backend) {
    let site = Site::new(backend).await;
    let mut setup = site.setup();
    site.events_after_start(&setup).await;

    setup.tables = "[[connectors]]\nname = \"pay\"\nbase_url = \"http://127.0.0.1:9\"\n\
                    key_retention_secs = 600\noperations = { \"payment.initiate\" = \"payments\" }\n"
        .into();
    let running = site.start(&setup).await;
    let events = site.revisits(&running, ADMIN).await;
    assert_eq!(said(&events).len(), 1);
    assert_eq!(events[0]["kind"], "provider_first_seen");
    assert_eq!(events[0]["subject"], "pay");
    let contract = events[0]["new"].as_str().expect("the contract in words");
    assert!(
        contract.contains("key_retention_secs=600") && contract.contains("payment.initiate"),
        "{contract}"
    );

    // A read-only tool, then the same tool used for a write: it gained a side effect.
    let read = site
        .create(&running, "k-1", &lookup("acme", "erp.po", "r-7"))
        .await;
    site.create(&running, "k-2", &order("acme", "erp.po", "r-7"))
        .await;
    site.create(&running, "k-3", &order("acme", "erp.po", "r-7"))
        .await;
    let id = read["id"].as_str().expect("id");
    let (status, _) = site
        .post_as(
            &running,
            ADMIN,
            &format!("/v1/intents/{id}/authorize"),
            None,
            &json!({"authorization_version": "v1"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = site
        .post(
            &running,
            &format!("/v1/intents/{id}/attempts"),
            None,
            &json!({"provider": "llm-east", "release_id": "r-7"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
    let events = site.revisits(&running, ADMIN).await;
    assert_eq!(
        said(&events)[1..],
        [
            (
                "release_first_seen".into(),
                "r-7".into(),
                "release".into(),
                None,
                "r-7".into()
            ),
            (
                "tool_first_seen".into(),
                "erp.po".into(),
                "consequence".into(),
                None,
                "read".into()
            ),
            (
                "tool_first_seen".into(),
                "erp.po".into(),
                "consequence".into(),
                Some("read".into()),
                "write".into()
            ),
            (
                "provider_first_seen".into(),
                "llm-east".into(),
                "provider".into(),
                None,
                "llm-east".into()
            ),
        ],
        "each first sighting once; the repeated order and release add nothing"
    );
    assert_eq!(events[0]["tenant"], "acme");
    stop(running).await;

    // Names seen before are known after a restart, too.
    let running = site.start(&setup).await;
    site.create(&running, "k-4", &order("acme", "erp.po", "r-7"))
        .await;
    assert_eq!(site.revisits(&running, ADMIN).await.len(), 5);
    stop(running).await;
}

async fn a_first_sighting_is_shown_only_within_its_tenant(backend: Backend) {
    let site = Site::new(backend).await;
    let mut setup = site.setup();
    site.events_after_start(&setup).await;
    setup.key_retention_secs = 600;
    let running = site.start(&setup).await;
    site.create(&running, "g-1", &lookup("globex", "globex.search", "g-1"))
        .await;
    let all = site.revisits(&running, ADMIN).await;
    assert_eq!(all.len(), 3, "{all:?}");
    let acme = site.revisits(&running, ACME_VIEWER).await;
    assert_eq!(
        said(&acme),
        vec![(
            "retention_shortened".into(),
            "erp".into(),
            "key_retention_secs".into(),
            Some("86400".into()),
            "600".into()
        )],
        "another tenant's names are not shown; the configuration's are"
    );
    let (_, later) = site
        .get(
            &running,
            ADMIN,
            &format!("/v1/revisits?after={}", all[1]["seq"]),
        )
        .await;
    assert_eq!(later["items"].as_array().map(Vec::len), Some(1));
    assert_eq!(later["items"][0]["seq"], all[0]["seq"]);
    stop(running).await;
}

async fn a_dispatch_keeps_its_resource_and_retention_and_names_its_retry_owner(backend: Backend) {
    let site = Site::new(backend).await;
    let mut setup = site.setup();
    setup.key_retention_secs = 7_200;
    let running = site.start(&setup).await;
    let created = site
        .create(&running, "po-1", &order("acme", "erp.po", "r1"))
        .await;
    assert_eq!(created["retry_owner"], "coordinator");
    let id = created["id"].as_str().expect("id").to_string();
    let (status, _) = site
        .post_as(
            &running,
            ADMIN,
            &format!("/v1/intents/{id}/authorize"),
            None,
            &json!({"authorization_version": "v3", "valid_for_secs": 600}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = site
        .post(
            &running,
            &format!("/v1/intents/{id}/dispatch"),
            None,
            &json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let started = Instant::now();
    let detail = loop {
        let (_, detail) = site
            .get(&running, ADMIN, &format!("/v1/intents/{id}"))
            .await;
        if detail["intent"]["state"] == "committed" {
            break detail;
        }
        assert!(started.elapsed() < PATIENCE, "the order never committed");
        tokio::task::yield_now().await;
    };
    let dispatch = detail["attempts"]
        .as_array()
        .and_then(|a| a.iter().find(|x| x["kind"] == "dispatch"))
        .expect("a dispatch attempt");
    assert_eq!(dispatch["downstream_resource"], "purchase-orders");
    assert_eq!(dispatch["key_retention_secs"], 7_200);
    assert_eq!(detail["intent"]["key_retention_secs"], 7_200);
    assert_eq!(detail["live_key_retention_secs"], 7_200);
    assert_eq!(detail["intent"]["retry_owner"], "coordinator");
    let first = detail["intent"]["first_dispatch_at_ms"]
        .as_u64()
        .expect("sent");
    assert_eq!(detail["key_forget_at_ms"].as_u64(), Some(first + 7_200_000));
    assert!(detail["intent"]["authorized_at_ms"].as_u64().is_some());
    assert!(
        detail["intent"]["authorization_expires_at_ms"]
            .as_u64()
            .is_some()
    );
    let read = site
        .create(&running, "q-1", &lookup("acme", "catalog", "r1"))
        .await;
    assert_eq!(read["retry_owner"], "agent");
    stop(running).await;

    // Started again with a shorter retention: the intent keeps the one it was sent under,
    // and its view says what the connector promises now.
    setup.key_retention_secs = 60;
    let running = site.start(&setup).await;
    let (_, detail) = site
        .get(&running, ADMIN, &format!("/v1/intents/{id}"))
        .await;
    assert_eq!(detail["intent"]["key_retention_secs"], 7_200);
    assert_eq!(detail["live_key_retention_secs"], 60);
    let key = detail["intent"]["action_key"].as_str().expect("key");
    let (_, ledger) = site
        .get(&running, ADMIN, &format!("/v1/action-keys/{key}"))
        .await;
    assert_eq!(ledger["live_key_retention_secs"], 60);
    assert_eq!(
        ledger["attempts"][0]["downstream_resource"],
        "purchase-orders"
    );
    stop(running).await;
}

async fn bad_revisit_queries_are_400_naming_the_parameter(backend: Backend) {
    let site = Site::new(backend).await;
    let running = site.start(&site.setup()).await;
    for (query, field) in [
        ("limit=0", "limit"),
        ("limit=501", "limit"),
        ("limit=ten", "limit"),
        ("after=-1", "after"),
        ("after=first", "after"),
        ("since=5", "since"),
    ] {
        let (status, body) = site
            .get(&running, ADMIN, &format!("/v1/revisits?{query}"))
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{query}: {body}");
        assert!(
            body["error"]["fields"][field].is_string(),
            "{query} names `{field}`: {body}"
        );
    }
    let (status, _) = site.get(&running, "not-a-token", "/v1/revisits").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(site.revisits(&running, ADMIN).await.is_empty());
    stop(running).await;
}
