//! What the shipped alerting rules read: `/metrics` of a real coordinator, sliced by tenant
//! and provider, with a duplicate effect made by a sandbox that ignores idempotency keys
//! under the provider that made it, the provider label bounded per tenant, and every metric
//! the rules in `deploy/prometheus/intentdesk-rules.yml` name present in the exposition.

mod common;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use common::deploy::{self, Setup, Token};
use intentdesk::metrics::PROVIDERS_PER_TENANT;
use intentdesk::sandbox::WebhookTarget;
use serde_json::{Value, json};
use tokio::net::TcpListener;

const ADMIN: &str = "alerts-admin-token";
const APPROVER: &str = "alerts-approver-token";
const ERP: &str = "alerts-erp-token";
const PATIENCE: Duration = Duration::from_secs(60);
const RULES: &str = include_str!("../deploy/prometheus/intentdesk-rules.yml");

struct Rig {
    base: String,
    sandbox_url: String,
    sandbox: intentdesk::sandbox::SandboxState,
    http: reqwest::Client,
    _coordinator: deploy::Coordinator,
    _sandbox: deploy::Sandbox,
    _dir: tempfile::TempDir,
}

async fn start(faults: &str) -> Rig {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("address"));
    let webhook = WebhookTarget {
        url: format!("{base}/v1/receipts/erp").parse().expect("URL"),
        token: Some(ERP.into()),
    };
    let downstream = deploy::sandbox(faults, Some(webhook), Some(3)).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let tokens = vec![
        Token::all_tenants("admin", ADMIN),
        Token::all_tenants("approver", APPROVER),
        Token::erp_connector(ERP),
    ];
    let setup = Setup::new(dir.path(), &downstream.url, tokens);
    let coordinator = deploy::Coordinator::serve(listener, &setup);
    let http = intentdesk::tls::client(None)
        .expect("a TLS client")
        .no_proxy()
        .timeout(PATIENCE)
        .build()
        .expect("client");
    Rig {
        base,
        sandbox_url: downstream.url.clone(),
        sandbox: downstream.state.clone(),
        http,
        _coordinator: coordinator,
        _sandbox: downstream,
        _dir: dir,
    }
}

impl Rig {
    async fn post(&self, path: &str, key: Option<&str>, body: Value) -> (u16, Value) {
        self.post_as(ADMIN, path, key, body).await
    }

    async fn post_as(
        &self,
        token: &str,
        path: &str,
        key: Option<&str>,
        body: Value,
    ) -> (u16, Value) {
        let mut request = self
            .http
            .post(format!("{}{path}", self.base))
            .bearer_auth(token);
        if !body.is_null() {
            request = request.json(&body);
        }
        if let Some(key) = key {
            request = request.header("Idempotency-Key", key);
        }
        let response = request.send().await.expect("answered");
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    async fn get(&self, path: &str) -> reqwest::Response {
        self.http
            .get(format!("{}{path}", self.base))
            .bearer_auth(ADMIN)
            .send()
            .await
            .expect("answered")
    }

    /// An authorized intent of `tenant`: a purchase order when `consequence` is `write`,
    /// a quote comparison otherwise.
    async fn intent(&self, tenant: &str, key: &str, consequence: &str) -> Value {
        let (operation, tool) = if consequence == "write" {
            ("purchase_order.create", "erp.po")
        } else {
            ("quote.compare", "llm.compare")
        };
        let body = json!({
            "tenant": tenant, "actor": "agent", "purpose": "restock", "operation": operation,
            "tool": tool, "consequence": consequence, "args": {"item": "paper", "qty": 10},
            "deadline_secs": 600, "max_attempts": 5, "release_id": "r1", "locale": "en-US",
            "connector": "erp"
        });
        let (status, created) = self.post("/v1/intents", Some(key), body).await;
        assert_eq!(status, 201, "{created}");
        let id = created["id"].as_str().expect("id");
        let auth = json!({"authorization_version": "v1"});
        let (status, _) = self
            .post_as(APPROVER, &format!("/v1/intents/{id}/authorize"), None, auth)
            .await;
        assert_eq!(status, 200);
        created
    }

    async fn attempt(&self, id: &str, provider: &str) {
        let attempt = json!({"kind": "inference", "provider": provider});
        let (status, answer) = self
            .post(&format!("/v1/intents/{id}/attempts"), None, attempt)
            .await;
        assert!((200..300).contains(&status), "{status} {answer}");
    }

    async fn metrics(&self) -> String {
        let response = self.get("/metrics").await;
        assert_eq!(response.status().as_u16(), 200);
        response.text().await.expect("text")
    }

    async fn wait_for(&self, what: &str, done: impl AsyncFn(&Rig) -> bool) {
        let started = Instant::now();
        while !done(self).await {
            assert!(started.elapsed() < PATIENCE, "gave up waiting: {what}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// The value of the sample `series` (name and labels, as exposed).
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

#[tokio::test]
async fn a_duplicate_effect_is_counted_under_its_tenant_and_provider() {
    let rig = start("ignore_keys=true").await;
    let order = rig.intent("acme", "po-1", "write").await;
    let id = order["id"].as_str().expect("id").to_string();
    let action_key = order["action_key"].as_str().expect("key").to_string();
    let (status, _) = rig
        .post(&format!("/v1/intents/{id}/dispatch"), None, Value::Null)
        .await;
    assert_eq!(status, 202);
    rig.wait_for("the order committed", async |rig| {
        let detail: Value = rig
            .get(&format!("/v1/intents/{id}"))
            .await
            .json()
            .await
            .expect("json");
        detail["intent"]["state"] == "committed"
    })
    .await;
    let quote = rig.intent("globex", "q-1", "compute").await;
    rig.attempt(quote["id"].as_str().expect("id"), "openai")
        .await;

    let dup = "intentdesk_duplicate_effects_by_provider_total{tenant=\"acme\",provider=\"erp\"}";
    let before = rig.metrics().await;
    assert_eq!(sample(&before, dup), Some(0.0), "{before}");

    // A client retrying past the coordinator: the sandbox ignores the key and orders again.
    let response = rig
        .http
        .post(format!("{}/purchase-orders", rig.sandbox_url))
        .header("Idempotency-Key", &action_key)
        .json(&json!({"item": "paper", "qty": 10}))
        .send()
        .await
        .expect("the sandbox answers");
    assert_eq!(response.status().as_u16(), 201);
    assert_eq!(
        rig.sandbox
            .effects_for(&action_key.parse().expect("action key")),
        2
    );
    rig.wait_for("the duplicate in /metrics", async |rig| {
        sample(&rig.metrics().await, dup) == Some(1.0)
    })
    .await;
    let text = rig.metrics().await;
    let attempts = |tenant: &str, provider: &str| {
        sample(
            &text,
            &format!(
                "intentdesk_attempts_by_provider_total{{tenant=\"{tenant}\",provider=\"{provider}\"}}"
            ),
        )
    };
    assert_eq!(attempts("acme", "erp"), Some(1.0));
    assert_eq!(attempts("globex", "openai"), Some(1.0));
    assert_eq!(attempts("acme", "openai"), None, "acme never used openai");
    assert_eq!(
        sample(&text, "intentdesk_duplicate_effects_total"),
        Some(1.0)
    );
    assert_eq!(
        sample(
            &text,
            "intentdesk_duplicate_effects_by_provider_total{tenant=\"globex\",provider=\"openai\"}"
        ),
        Some(0.0)
    );
}

#[tokio::test]
async fn a_tenants_providers_past_the_bound_are_other() {
    let rig = start("none").await;
    let wanted = PROVIDERS_PER_TENANT + 3;
    // Five attempts an intent (its budget), each on a new provider.
    let mut id = String::new();
    for made in 0..wanted {
        if made % 5 == 0 {
            let quote = rig.intent("acme", &format!("q-{made}"), "compute").await;
            id = quote["id"].as_str().expect("id").to_string();
        }
        rig.attempt(&id, &format!("provider-{made:02}")).await;
    }
    let text = rig.metrics().await;
    let labels: BTreeSet<String> = text
        .lines()
        .filter_map(|l| l.strip_prefix("intentdesk_attempts_by_provider_total{tenant=\"acme\","))
        .filter_map(|l| l.split('"').nth(1).map(str::to_string))
        .collect();
    assert_eq!(labels.len(), PROVIDERS_PER_TENANT + 1, "{labels:?}");
    assert!(labels.contains("(other)"));
    assert!(labels.contains("provider-00"), "the first keep their names");
    assert!(!labels.contains(&format!("provider-{:02}", wanted - 1)));
    let other = "intentdesk_attempts_by_provider_total{tenant=\"acme\",provider=\"(other)\"}";
    assert_eq!(sample(&text, other), Some(3.0));
}

/// The metric names an expression of the rules file reads.
fn names_in_rules() -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for line in RULES.lines().filter(|l| !l.trim_start().starts_with('#')) {
        let mut rest = line;
        while let Some(at) = rest.find("intentdesk_") {
            let name: String = rest[at..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            rest = &rest[at + name.len()..];
            names.insert(name);
        }
    }
    names
}

#[tokio::test]
async fn every_metric_the_rules_read_is_exposed() {
    let rig = start("none").await;
    let quote = rig.intent("acme", "q-1", "compute").await;
    rig.attempt(quote["id"].as_str().expect("id"), "openai")
        .await;
    let text = rig.metrics().await;
    let names = names_in_rules();
    assert!(names.len() >= 6, "{names:?}");
    for name in names {
        // A summary's quantiles are exposed under its family's name.
        assert!(
            text.contains(&format!("# TYPE {name} ")),
            "the rules read `{name}`, which /metrics does not expose"
        );
    }
}
