//! The operator API over real HTTP: each scenario starts a coordinator on 127.0.0.1:0 with a
//! fresh database (SQLite, then PostgreSQL), creates intents through the ingest API as an agent would, and reads or
//! commands them as the console would. Servers stop by themselves through a oneshot.

use std::collections::BTreeSet;
use std::time::Duration;

use intentdesk::clock::{Clock, Entropy, OsEntropy, SystemClock};
use intentdesk::domain::CommandId;
use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use serde_json::{Value, json};

mod common;
use common::backends::Backend;
use common::deploy::{self, Setup, Token};

on_both_backends_tokio! {
    requests_without_a_valid_token_are_401,
    a_viewer_may_read_but_not_pause,
    another_tenants_intent_is_404_and_absent_from_lists_and_metrics,
    filters_and_cursor_paging_walk_every_match_once,
    bad_query_parameters_are_400_naming_the_parameter,
    search_text_is_only_text,
    a_replayed_command_returns_the_first_result_and_is_audited_once,
    the_same_command_id_with_another_body_is_422,
    a_close_without_evidence_is_refused_and_recorded,
    a_close_with_evidence_cancels_the_intent,
    a_tenant_limited_audit_trail_shows_only_commands_inside_its_tenants,
    a_dry_run_returns_the_target_set_and_changes_nothing,
    a_reconcile_answers_with_one_lookup_result_per_target,
    a_malformed_command_names_the_field,
    events_resume_after_the_last_event_id,
    live_events_respect_the_tenant_scope,
    health_metrics_and_the_api_description_answer,
}

/// Guards against a hang; never a stand-in for synchronisation.
const PATIENCE: Duration = Duration::from_secs(10);

const ADMIN: &str = "admin-secret";
const SUPERVISOR: &str = "acme-supervisor-secret";
const ENGINEER: &str = "engineer-secret";
const VIEWER: &str = "viewer-secret";
const AGENT: &str = "agent-secret";

struct Coordinator {
    base: String,
    http: reqwest::Client,
    running: deploy::Coordinator,
    _dir: tempfile::TempDir,
}

struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    body: Value,
}

impl Answer {
    fn error_field(&self, name: &str) -> Option<&str> {
        self.body["error"]["fields"][name].as_str()
    }
}

async fn start(backend: &Backend) -> Coordinator {
    let _ = tracing_subscriber::fmt().with_test_writer().try_init();
    let dir = tempfile::tempdir().expect("temporary directory");
    // No downstream answers here: these tests are about the operator API alone.
    let tokens = vec![
        Token::all_tenants("admin", ADMIN),
        Token::acme("supervisor", SUPERVISOR),
        Token::all_tenants("engineer", ENGINEER),
        Token::all_tenants("viewer", VIEWER),
        Token::all_tenants("agent", AGENT),
    ];
    let mut setup = Setup::on(backend, dir.path(), "http://127.0.0.1:9", tokens);
    setup.supports_lookup = false;
    setup.timeout_ms = 200;
    let running = deploy::Coordinator::start(&setup).await;
    let http = intentdesk::tls::client(None)
        .expect("a TLS client")
        .no_proxy()
        .build()
        .expect("client builds");
    Coordinator {
        base: running.base.clone(),
        http,
        running,
        _dir: dir,
    }
}

impl Coordinator {
    async fn send(&self, request: reqwest::RequestBuilder) -> Answer {
        let response = tokio::time::timeout(PATIENCE, request.send())
            .await
            .expect("the coordinator answers in time")
            .expect("the request reaches the coordinator");
        let status = response.status();
        let headers = response.headers().clone();
        let text = response.text().await.expect("the body arrives");
        let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
        Answer {
            status,
            headers,
            body,
        }
    }

    async fn get(&self, token: &str, path: &str) -> Answer {
        self.send(
            self.http
                .get(format!("{}{path}", self.base))
                .bearer_auth(token),
        )
        .await
    }

    async fn post(&self, token: &str, path: &str, body: &Value) -> Answer {
        self.send(
            self.http
                .post(format!("{}{path}", self.base))
                .bearer_auth(token)
                .json(body),
        )
        .await
    }

    async fn command(&self, token: &str, body: &Value) -> Answer {
        self.post(token, "/v1/commands", body).await
    }

    /// Create an intent as the agent would; returns its envelope.
    async fn intent(&self, tenant: &str, tool: &str, locale: &str, args: Value) -> Value {
        let body = json!({
            "tenant": tenant, "actor": "agent-7", "purpose": "restock office paper",
            "operation": "catalog.search", "tool": tool, "consequence": "read", "args": args,
            "deadline_secs": 3600, "max_attempts": 3, "release_id": "r-2024-11", "locale": locale,
        });
        let key = format!("key-{}", OsEntropy::default().next_u128());
        let request = self
            .http
            .post(format!("{}/v1/intents", self.base))
            .bearer_auth(AGENT)
            .header("Idempotency-Key", key)
            .json(&body);
        let answer = self.send(request).await;
        assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.body);
        answer.body
    }

    async fn stop(self) {
        tokio::time::timeout(PATIENCE, self.running.shut_down())
            .await
            .expect("the coordinator stops in time")
            .expect("the coordinator ends cleanly");
    }
}

fn new_command_id() -> String {
    CommandId::generate(SystemClock.now_ms(), OsEntropy::default().next_u128()).to_string()
}

fn ids(items: &Value) -> Vec<String> {
    items
        .as_array()
        .expect("an array")
        .iter()
        .map(|i| i["id"].as_str().expect("an id").to_string())
        .collect()
}

async fn requests_without_a_valid_token_are_401(backend: Backend) {
    let c = start(&backend).await;
    let answer = c.send(c.http.get(format!("{}/v1/intents", c.base))).await;
    assert_eq!(answer.status, StatusCode::UNAUTHORIZED);
    assert_eq!(answer.body["error"]["code"], "unauthorized");
    assert_eq!(
        c.get("not-a-token", "/v1/metrics/summary").await.status,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        c.send(c.http.get(format!("{}/metrics", c.base)))
            .await
            .status,
        StatusCode::UNAUTHORIZED
    );
    c.stop().await;
}

async fn a_viewer_may_read_but_not_pause(backend: Backend) {
    let c = start(&backend).await;
    assert_eq!(c.get(VIEWER, "/v1/intents").await.status, StatusCode::OK);
    let pause = json!({ "command_id": new_command_id(), "kind": "pause", "target": { "scope": { "tenant": "acme" } },
                        "reason": "incident 42" });
    let answer = c.command(VIEWER, &pause).await;
    assert_eq!(answer.status, StatusCode::FORBIDDEN);
    assert_eq!(answer.body["error"]["code"], "forbidden");
    // A supervisor may reconcile and close, but pausing is an engineer's.
    assert_eq!(
        c.command(SUPERVISOR, &pause).await.status,
        StatusCode::FORBIDDEN
    );
    c.stop().await;
}

async fn another_tenants_intent_is_404_and_absent_from_lists_and_metrics(backend: Backend) {
    let c = start(&backend).await;
    let mine = c
        .intent("acme", "search", "en-US", json!({ "item": "paper" }))
        .await;
    let theirs = c
        .intent("globex", "search", "en-US", json!({ "item": "toner" }))
        .await;
    let their_id = theirs["id"].as_str().expect("id");

    assert_eq!(
        c.get(SUPERVISOR, &format!("/v1/intents/{their_id}"))
            .await
            .status,
        StatusCode::NOT_FOUND
    );
    let key = theirs["action_key"].as_str().expect("key");
    assert_eq!(
        c.get(SUPERVISOR, &format!("/v1/action-keys/{key}"))
            .await
            .status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        c.get(SUPERVISOR, "/v1/intents/int_not-even-an-id")
            .await
            .status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        c.get(
            SUPERVISOR,
            &format!("/v1/intents/{}", mine["id"].as_str().expect("id"))
        )
        .await
        .status,
        StatusCode::OK
    );

    let list = c.get(SUPERVISOR, "/v1/intents").await;
    assert_eq!(
        ids(&list.body["items"]),
        vec![mine["id"].as_str().expect("id").to_string()]
    );
    let asked = c.get(SUPERVISOR, "/v1/intents?tenant=globex").await;
    assert_eq!(asked.body["total"], 0);
    assert_eq!(
        c.get(SUPERVISOR, "/v1/metrics/summary").await.body["intents"],
        1
    );
    assert_eq!(c.get(ADMIN, "/v1/metrics/summary").await.body["intents"], 2);
    let metrics = c.get(SUPERVISOR, "/metrics").await;
    let text = metrics.body.as_str().expect("Prometheus text");
    assert!(
        text.contains("tenant=\"acme\"") && !text.contains("globex"),
        "{text}"
    );
    // The coordinator's own figures describe what every tenant shares: a token of some
    // tenants sees none of them, the connectors' refused answers among them.
    for shared in [
        "intentdesk_dispatcher_queue_depth",
        "intentdesk_refused_answers_total",
    ] {
        assert!(
            !text.contains(shared),
            "`{shared}` shown to one tenant:\n{text}"
        );
    }

    let close = json!({ "command_id": new_command_id(), "kind": "close", "target": { "intent_id": their_id },
                        "reason": "duplicate", "disposition": "cancelled", "evidence": { "note": "checked" } });
    assert_eq!(
        c.command(SUPERVISOR, &close).await.status,
        StatusCode::NOT_FOUND
    );
    let scoped = json!({ "command_id": new_command_id(), "kind": "reconcile", "target": { "scope": { "tenant": "globex" } } });
    assert_eq!(
        c.command(SUPERVISOR, &scoped).await.status,
        StatusCode::FORBIDDEN
    );
    c.stop().await;
}

async fn filters_and_cursor_paging_walk_every_match_once(backend: Backend) {
    let c = start(&backend).await;
    let mut created = Vec::new();
    for n in 0..5 {
        created.push(
            c.intent("acme", "search", "en-US", json!({ "n": n })).await["id"]
                .as_str()
                .expect("id")
                .to_string(),
        );
    }
    c.intent("globex", "quote", "fa-IR", json!({ "n": 10 }))
        .await;
    c.intent("globex", "quote", "fa-IR", json!({ "n": 11 }))
        .await;

    let mut seen = Vec::new();
    let mut path = "/v1/intents?tool=search&limit=2".to_string();
    loop {
        let page = c.get(VIEWER, &path).await;
        assert_eq!(page.status, StatusCode::OK, "{}", page.body);
        assert_eq!(page.body["total"], 5);
        seen.extend(ids(&page.body["items"]));
        match page.body["next_cursor"].as_str() {
            Some(cursor) => path = format!("/v1/intents?tool=search&limit=2&cursor={cursor}"),
            None => break,
        }
    }
    let newest_first: Vec<String> = created.iter().rev().cloned().collect();
    assert_eq!(
        seen, newest_first,
        "the default order is newest first, each intent once"
    );

    let oldest = c
        .get(VIEWER, "/v1/intents?tenant=acme&sort=created&limit=1")
        .await;
    assert_eq!(ids(&oldest.body["items"]), vec![created[0].clone()]);
    assert_eq!(
        c.get(VIEWER, "/v1/intents?locale=fa-IR").await.body["total"],
        2
    );
    assert_eq!(
        c.get(VIEWER, "/v1/intents?tenant=acme,globex&state=prepared")
            .await
            .body["total"],
        7
    );
    assert_eq!(
        c.get(VIEWER, "/v1/intents?tenant=globex&tool=search")
            .await
            .body["total"],
        0
    );
    c.stop().await;
}

async fn bad_query_parameters_are_400_naming_the_parameter(backend: Backend) {
    let c = start(&backend).await;
    let cases = [
        ("/v1/intents?state=failed", "state"),
        ("/v1/intents?locale=de-DE", "locale"),
        ("/v1/intents?tier=huge", "tier"),
        ("/v1/intents?limit=0", "limit"),
        ("/v1/intents?limit=many", "limit"),
        ("/v1/intents?since=yesterday", "since"),
        ("/v1/intents?min_attempts=-1", "min_attempts"),
        ("/v1/intents?paused=maybe", "paused"),
        ("/v1/intents?sort=size", "sort"),
        ("/v1/intents?cursor=v1.garbage", "cursor"),
        ("/v1/intents?colour=red", "colour"),
        ("/v1/metrics/summary?tenant=Not_A_Tenant", "tenant"),
        ("/v1/metrics/series?metric=happiness", "metric"),
        (
            "/v1/metrics/series?metric=attempts&group_by=colour",
            "group_by",
        ),
        (
            "/v1/metrics/series?metric=attempts&bucket_secs=0",
            "bucket_secs",
        ),
        ("/v1/commands?limit=9999", "limit"),
        ("/v1/events?after=soon", "after"),
    ];
    for (path, field) in cases {
        let answer = c.get(VIEWER, path).await;
        assert_eq!(
            answer.status,
            StatusCode::BAD_REQUEST,
            "{path}: {}",
            answer.body
        );
        assert!(
            answer.error_field(field).is_some(),
            "{path} should name `{field}`: {}",
            answer.body
        );
    }
    let request = c
        .http
        .get(format!("{}/v1/events", c.base))
        .bearer_auth(VIEWER)
        .header("Last-Event-ID", "soon");
    let answer = c.send(request).await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
    assert!(
        answer.error_field("Last-Event-ID").is_some(),
        "{}",
        answer.body
    );
    let metric = c.get(VIEWER, "/v1/metrics/series?metric=happiness").await;
    assert!(
        metric
            .error_field("metric")
            .is_some_and(|m| m.contains("amplification")),
        "{}",
        metric.body
    );
    c.stop().await;
}

async fn search_text_is_only_text(backend: Backend) {
    let c = start(&backend).await;
    let intent = c
        .intent("acme", "search", "fa-IR", json!({ "po_number": "۴۲۱۷" }))
        .await;
    let injection = "/v1/intents?q=%27%3B%20DROP%20TABLE%20intents%3B%20--";
    let answer = c.get(VIEWER, injection).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    assert_eq!(answer.body["total"], 0);
    // Digits match in either script, and the table is still there.
    let found = c.get(VIEWER, "/v1/intents?q=4217").await;
    assert_eq!(
        ids(&found.body["items"]),
        vec![intent["id"].as_str().expect("id").to_string()]
    );
    // An amount written with Persian digits and separators is found as the number it is.
    let payment = c
        .intent("acme", "pay", "fa-IR", json!({ "amount": "۳۵٬۵۰۰٬۰۰۰" }))
        .await;
    // The intent read whole carries the canonical text its hash covers.
    let id = payment["id"].as_str().expect("id");
    let whole = c.get(VIEWER, &format!("/v1/intents/{id}")).await;
    assert_eq!(
        whole.body["intent"]["canonical_args"], r#"{"amount":35500000}"#,
        "{}",
        whole.body
    );
    // And as the console shows it, grouped, in either script.
    for q in [
        "35500000",
        "35,500,000",
        "%DB%B3%DB%B5%D9%AC%DB%B5%DB%B0%DB%B0%D9%AC%DB%B0%DB%B0%DB%B0",
    ] {
        let found = c.get(VIEWER, &format!("/v1/intents?q={q}")).await;
        assert_eq!(
            ids(&found.body["items"]),
            vec![payment["id"].as_str().expect("id").to_string()],
            "searching {q}"
        );
    }
    c.stop().await;
}

async fn a_replayed_command_returns_the_first_result_and_is_audited_once(backend: Backend) {
    let c = start(&backend).await;
    c.intent("acme", "search", "en-US", json!({})).await;
    let id = new_command_id();
    let pause = json!({ "command_id": id, "kind": "pause", "target": { "scope": { "tenant": "acme" } },
                        "reason": "supplier outage" });
    let first = c.command(ENGINEER, &pause).await;
    assert_eq!(first.status, StatusCode::CREATED, "{}", first.body);
    assert_eq!(first.body["status"], "applied");
    let again = c.command(ENGINEER, &pause).await;
    assert_eq!(again.status, StatusCode::OK);
    assert_eq!(
        again
            .headers
            .get("idempotent-replayed")
            .and_then(|v| v.to_str().ok()),
        Some("true")
    );
    assert_eq!(again.body, first.body);

    let audit = c.get(VIEWER, "/v1/commands").await;
    let entries = audit.body["items"].as_array().expect("items");
    assert_eq!(
        entries
            .iter()
            .filter(|e| e["command_id"] == id.as_str())
            .count(),
        1
    );
    assert_eq!(
        c.get(VIEWER, "/v1/pauses").await.body["items"]
            .as_array()
            .map(Vec::len),
        Some(1)
    );
    assert_eq!(
        c.get(VIEWER, "/v1/intents?paused=true").await.body["total"],
        1
    );

    let resume = json!({ "command_id": new_command_id(), "kind": "resume", "target": { "scope": { "tenant": "acme" } } });
    assert_eq!(
        c.command(ENGINEER, &resume).await.status,
        StatusCode::CREATED
    );
    assert_eq!(
        c.get(VIEWER, "/v1/pauses").await.body["items"]
            .as_array()
            .map(Vec::len),
        Some(0)
    );
    c.stop().await;
}

async fn the_same_command_id_with_another_body_is_422(backend: Backend) {
    let c = start(&backend).await;
    let id = new_command_id();
    let body = |reason: &str| json!({ "command_id": id, "kind": "pause", "target": { "scope": { "tenant": "acme" } }, "reason": reason });
    assert_eq!(
        c.command(ENGINEER, &body("first")).await.status,
        StatusCode::CREATED
    );
    let answer = c.command(ENGINEER, &body("second")).await;
    assert_eq!(answer.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(answer.body["error"]["code"], "command_id_mismatch");
    c.stop().await;
}

async fn a_close_without_evidence_is_refused_and_recorded(backend: Backend) {
    let c = start(&backend).await;
    let intent = c.intent("acme", "search", "en-US", json!({})).await;
    let intent_id = intent["id"].as_str().expect("id");
    let close = json!({ "command_id": new_command_id(), "kind": "close", "target": { "intent_id": intent_id },
                        "reason": "the order was never needed", "disposition": "cancelled" });
    let answer = c.command(SUPERVISOR, &close).await;
    assert_eq!(
        answer.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        answer.body
    );
    assert_eq!(answer.body["error"]["code"], "command_refused");
    assert!(
        answer.body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("evidence")),
        "{}",
        answer.body
    );

    let audit = c
        .get(SUPERVISOR, &format!("/v1/commands?intent_id={intent_id}"))
        .await;
    assert_eq!(audit.status, StatusCode::OK, "{}", audit.body);
    assert_eq!(audit.body["items"][0]["status"], "refused");
    let replay = c.command(SUPERVISOR, &close).await;
    assert_eq!(replay.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        replay
            .headers
            .get("idempotent-replayed")
            .and_then(|v| v.to_str().ok()),
        Some("true")
    );
    let detail = c.get(SUPERVISOR, &format!("/v1/intents/{intent_id}")).await;
    assert_eq!(detail.body["intent"]["state"], "prepared");
    c.stop().await;
}

async fn a_close_with_evidence_cancels_the_intent(backend: Backend) {
    let c = start(&backend).await;
    let intent = c.intent("acme", "search", "en-US", json!({})).await;
    let intent_id = intent["id"].as_str().expect("id");
    let close = json!({ "command_id": new_command_id(), "kind": "close", "target": { "intent_id": intent_id },
                        "reason": "the order was never needed", "disposition": "cancelled",
                        "evidence": { "note": "the supplier portal shows no order" } });
    let answer = c.command(SUPERVISOR, &close).await;
    assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.body);
    let detail = c.get(SUPERVISOR, &format!("/v1/intents/{intent_id}")).await;
    assert_eq!(detail.body["intent"]["state"], "cancelled");
    assert_eq!(
        detail.body["commands"][0]["command_id"],
        close["command_id"]
    );
    c.stop().await;
}

async fn a_tenant_limited_audit_trail_shows_only_commands_inside_its_tenants(backend: Backend) {
    let c = start(&backend).await;
    let mine = c.intent("acme", "search", "en-US", json!({})).await;
    c.intent("globex", "search", "en-US", json!({})).await;
    let globex = json!({ "command_id": new_command_id(), "kind": "pause", "target": { "scope": { "tenant": "globex" } },
                         "reason": "globex incident" });
    let fleet =
        json!({ "command_id": new_command_id(), "kind": "reconcile", "target": { "scope": {} } });
    let own = json!({ "command_id": new_command_id(), "kind": "reconcile", "target": { "intent_id": mine["id"] } });
    for (token, body) in [(ADMIN, &globex), (ADMIN, &fleet), (SUPERVISOR, &own)] {
        let answer = c.command(token, body).await;
        assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.body);
    }

    let everything = c.get(ADMIN, "/v1/commands").await;
    assert_eq!(everything.body["items"].as_array().map(Vec::len), Some(3));
    let limited = c.get(SUPERVISOR, "/v1/commands").await;
    let shown: Vec<&Value> = limited.body["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|e| &e["command_id"])
        .collect();
    assert_eq!(shown, vec![&own["command_id"]]);
    // The fleet-wide reconcile covered this intent too, but lists other tenants' intents.
    let detail = c
        .get(
            SUPERVISOR,
            &format!("/v1/intents/{}", mine["id"].as_str().expect("id")),
        )
        .await;
    let touched: Vec<&Value> = detail.body["commands"]
        .as_array()
        .expect("commands")
        .iter()
        .map(|e| &e["command_id"])
        .collect();
    assert_eq!(touched, vec![&own["command_id"]]);
    assert_eq!(
        c.get(SUPERVISOR, "/v1/pauses").await.body["items"]
            .as_array()
            .map(Vec::len),
        Some(0)
    );
    c.stop().await;
}

async fn a_dry_run_returns_the_target_set_and_changes_nothing(backend: Backend) {
    let c = start(&backend).await;
    let mut acme = BTreeSet::new();
    for n in 0..3 {
        acme.insert(
            c.intent("acme", "search", "en-US", json!({ "n": n })).await["id"]
                .as_str()
                .expect("id")
                .to_string(),
        );
    }
    c.intent("globex", "search", "en-US", json!({})).await;
    let dry = json!({ "command_id": new_command_id(), "kind": "pause", "target": { "scope": { "tenant": "acme" } },
                      "reason": "what would this touch?", "dry_run": true });
    let answer = c.command(ENGINEER, &dry).await;
    assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.body);
    assert_eq!(answer.body["status"], "dry_run");
    // The record carries the count; the set itself is paged.
    assert_eq!(answer.body["result"]["target_count"], 3, "{}", answer.body);
    assert!(answer.body["result"].get("targets").is_none());
    let command_id = answer.body["command_id"].as_str().expect("id").to_string();
    let rig = &c;
    let page = |query: String| {
        let path = format!("/v1/commands/{command_id}/targets{query}");
        async move { rig.get(VIEWER, &path).await }
    };
    let first = page("?limit=2".into()).await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.body);
    assert_eq!(first.body["items"].as_array().map(Vec::len), Some(2));
    let cursor = first.body["next_cursor"].as_str().expect("more follow");
    let second = page(format!("?limit=2&cursor={cursor}")).await;
    assert_eq!(second.body["items"].as_array().map(Vec::len), Some(1));
    assert!(second.body.get("next_cursor").is_none(), "{}", second.body);
    let targets: BTreeSet<String> = [&first.body, &second.body]
        .iter()
        .flat_map(|b| b["items"].as_array().expect("items").iter())
        .map(|t| {
            assert_eq!(t["tenant"], "acme");
            t["intent_id"].as_str().expect("an id").to_string()
        })
        .collect();
    assert_eq!(targets, acme);
    for (query, named) in [
        ("?cursor=abc", "cursor"),
        ("?limit=0", "limit"),
        ("?after=1", "after"),
    ] {
        let refused = page(query.into()).await;
        assert_eq!(
            refused.status,
            StatusCode::BAD_REQUEST,
            "{query}: {}",
            refused.body
        );
        assert!(
            refused.body["error"]["fields"].get(named).is_some(),
            "{query}: {}",
            refused.body
        );
    }
    let missing = c
        .get(
            VIEWER,
            "/v1/commands/cmd_01kb0000000000000000000009/targets",
        )
        .await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    assert_eq!(
        c.get(VIEWER, "/v1/pauses").await.body["items"]
            .as_array()
            .map(Vec::len),
        Some(0)
    );
    assert_eq!(
        c.get(VIEWER, "/v1/intents?paused=true").await.body["total"],
        0
    );
    // With no pause in force every intent is one no pause holds.
    assert_eq!(
        c.get(VIEWER, "/v1/intents?paused=false").await.body["total"],
        c.get(VIEWER, "/v1/intents").await.body["total"]
    );
    c.stop().await;
}

async fn a_reconcile_answers_with_one_lookup_result_per_target(backend: Backend) {
    let c = start(&backend).await;
    let intent = c.intent("acme", "search", "en-US", json!({})).await;
    let reconcile = json!({ "command_id": new_command_id(), "kind": "reconcile",
                            "target": { "intent_id": intent["id"] } });
    let answer = c.command(SUPERVISOR, &reconcile).await;
    assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.body);
    assert_eq!(answer.body["status"], "applied");
    let lookup = &answer.body["result"]["lookups"][0];
    assert_eq!(lookup["intent_id"], intent["id"]);
    assert_eq!(lookup["result"], "not_indeterminate");
    c.stop().await;
}

async fn a_malformed_command_names_the_field(backend: Backend) {
    let c = start(&backend).await;
    let cases = [
        (
            json!({ "command_id": "cmd nope", "kind": "pause", "target": { "scope": {} }, "reason": "r" }),
            "command_id",
        ),
        (
            json!({ "command_id": new_command_id(), "kind": "explode", "target": { "scope": {} } }),
            "kind",
        ),
        (
            json!({ "command_id": new_command_id(), "kind": "pause", "target": { "scope": {} } }),
            "reason",
        ),
        (
            json!({ "command_id": new_command_id(), "kind": "close", "target": { "scope": {} }, "reason": "r",
                 "disposition": "cancelled" }),
            "target",
        ),
        (
            json!({ "command_id": new_command_id(), "kind": "reconcile", "target": {}, "colour": "red" }),
            "colour",
        ),
    ];
    for (body, field) in cases {
        let answer = c.command(ADMIN, &body).await;
        assert_eq!(
            answer.status,
            StatusCode::BAD_REQUEST,
            "{body}: {}",
            answer.body
        );
        let fields = &answer.body["error"]["fields"];
        let named = fields
            .as_object()
            .is_some_and(|f| f.keys().any(|k| k.contains(field)))
            || answer.body["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains(field));
        assert!(named, "{body} should name `{field}`: {}", answer.body);
    }
    c.stop().await;
}

/// One server-sent event.
#[derive(Debug, PartialEq)]
struct SseEvent {
    id: i64,
    kind: String,
    data: Value,
}

/// Reads a `text/event-stream` response block by block.
struct EventReader {
    response: reqwest::Response,
    buffer: String,
}

impl EventReader {
    async fn open(c: &Coordinator, token: &str, last_event_id: Option<i64>) -> EventReader {
        let mut request = c
            .http
            .get(format!("{}/v1/events", c.base))
            .bearer_auth(token);
        if let Some(id) = last_event_id {
            request = request.header("Last-Event-ID", id.to_string());
        }
        let response = tokio::time::timeout(PATIENCE, request.send())
            .await
            .expect("the stream opens in time")
            .expect("the stream opens");
        assert_eq!(response.status(), StatusCode::OK);
        let content_type = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        assert!(
            content_type.starts_with("text/event-stream"),
            "{content_type}"
        );
        EventReader {
            response,
            buffer: String::new(),
        }
    }

    /// The next blank-line-terminated block.
    async fn block(&mut self) -> String {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block = self.buffer[..end].to_string();
                self.buffer.drain(..end + 2);
                return block;
            }
            let chunk = tokio::time::timeout(PATIENCE, self.response.chunk())
                .await
                .expect("the stream sends in time")
                .expect("the stream stays open")
                .expect("the stream does not end");
            self.buffer
                .push_str(std::str::from_utf8(&chunk).expect("UTF-8"));
        }
    }

    /// The next event, skipping comments and the reconnection hint.
    async fn event(&mut self) -> SseEvent {
        loop {
            let block = self.block().await;
            let (mut id, mut kind, mut data) = (None, None, None);
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("id: ") {
                    id = v.parse().ok();
                } else if let Some(v) = line.strip_prefix("event: ") {
                    kind = Some(v.to_string());
                } else if let Some(v) = line.strip_prefix("data: ") {
                    data = serde_json::from_str(v).ok();
                }
            }
            if let (Some(id), Some(kind), Some(data)) = (id, kind, data) {
                return SseEvent { id, kind, data };
            }
        }
    }
}

async fn events_resume_after_the_last_event_id(backend: Backend) {
    let c = start(&backend).await;
    let mut created = Vec::new();
    for n in 0..3 {
        created.push(c.intent("acme", "search", "en-US", json!({ "n": n })).await);
    }
    let mut from_start = EventReader::open(&c, ADMIN, Some(0)).await;
    let mut all = Vec::new();
    for _ in 0..3 {
        all.push(from_start.event().await);
    }
    assert!(all.iter().all(|e| e.kind == "intent"), "{all:?}");
    let sent: Vec<&Value> = all.iter().map(|e| &e.data["id"]).collect();
    let expected: Vec<&Value> = created.iter().map(|i| &i["id"]).collect();
    assert_eq!(sent, expected);

    let mut resumed = EventReader::open(&c, ADMIN, Some(all[0].id)).await;
    assert_eq!(resumed.event().await, all[1]);
    assert_eq!(resumed.event().await, all[2]);
    c.stop().await;
}

async fn live_events_respect_the_tenant_scope(backend: Backend) {
    let c = start(&backend).await;
    let mut stream = EventReader::open(&c, SUPERVISOR, None).await;
    // The opening comment: the stream now starts after everything written so far.
    assert!(stream.block().await.contains(": connected"));
    let theirs = c.intent("globex", "search", "en-US", json!({})).await;
    let mine = c.intent("acme", "search", "en-US", json!({})).await;
    let first = stream.event().await;
    assert_eq!(
        first.data["id"], mine["id"],
        "globex's earlier event {} is not sent",
        theirs["id"]
    );
    c.stop().await;
}

async fn health_metrics_and_the_api_description_answer(backend: Backend) {
    let c = start(&backend).await;
    c.intent("acme", "search", "en-US", json!({})).await;
    let health = c.send(c.http.get(format!("{}/healthz", c.base))).await;
    assert_eq!(health.status, StatusCode::OK);
    assert_eq!(health.body["status"], "ok", "{}", health.body);
    for part in [
        "store",
        "writer",
        "dispatcher",
        "reconciler",
        "metric_follower",
    ] {
        assert_eq!(
            health.body["parts"][part]["status"], "running",
            "{}",
            health.body
        );
    }

    let metrics = c.get(VIEWER, "/metrics").await;
    assert_eq!(metrics.status, StatusCode::OK);
    let text = metrics.body.as_str().expect("Prometheus text");
    for name in [
        "intentdesk_intents{state=\"prepared\"} 1",
        "intentdesk_intents_by_tenant{tenant=\"acme\",state=\"prepared\"} 1",
        "intentdesk_attempt_amplification{quantile=\"0.99\"}",
        "intentdesk_attempt_amplification_mean",
        "intentdesk_attempt_amplification_max",
        "intentdesk_indeterminate_count",
        "intentdesk_indeterminate_oldest_age_seconds",
        "intentdesk_duplicate_effects_total",
        "intentdesk_late_results_total",
        "intentdesk_goodput_committed_total",
        "intentdesk_dispatcher_queue_depth",
        "# TYPE intentdesk_intents gauge",
    ] {
        assert!(text.contains(name), "missing `{name}` in:\n{text}");
    }

    let openapi = c.get(AGENT, "/v1/openapi.json").await;
    assert_eq!(openapi.status, StatusCode::OK);
    assert_eq!(openapi.body["openapi"], "3.1.0");
    for path in [
        "/v1/intents",
        "/v1/intents/{id}",
        "/v1/commands",
        "/v1/events",
        "/metrics",
        "/healthz",
    ] {
        assert!(
            openapi.body["paths"][path].is_object(),
            "{path} is described"
        );
    }
    c.stop().await;
}
