//! Release parity: an operation with a release registry acts only through the releases it
//! lists — at creation, in a reported attempt, in a failover to another release and in a
//! dispatch — and its failover divergence compares eligible releases only. An operation
//! without a registry accepts any release, as before.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use intentdesk::coordinator::Config;

use crate::common::backends::Backend;
use crate::common::deploy::{self, Coordinator, Setup, Token};

const ADMIN: &str = "releases-admin-token";
const AGENT: &str = "releases-agent-token";

/// The registry of `quote.compare` and `purchase_order.create`: two releases each.
const REGISTRY: &str = r#"
[[releases]]
operation = "quote.compare"
release_id = "compare-agent@1.0"
model = "model-a-2026-09"
prompt = "compare-v4"
tool_schema = "quotes-v2"
safety_policy = "spend-guard-v5"
router = "primary-v1"

[[releases]]
operation = "quote.compare"
release_id = "compare-agent@1.1"
model = "model-b-2026-10"
prompt = "compare-v4"
tool_schema = "quotes-v2"
safety_policy = "spend-guard-v5"
router = "backup-v1"

[[releases]]
operation = "purchase_order.create"
release_id = "procure-agent@2.5.0"
model = "model-a-2026-09"
prompt = "procure-v12"
tool_schema = "erp-po-v3"
safety_policy = "spend-guard-v5"
router = "primary-v1"
"#;

struct Rig {
    http: reqwest::Client,
    base: String,
    coordinator: Option<Coordinator>,
    setup: Setup,
    sandbox: deploy::Sandbox,
    _dir: tempfile::TempDir,
}

impl Rig {
    async fn start(backend: &Backend, registry: &str) -> Rig {
        let sandbox = deploy::sandbox("none", None, Some(3)).await;
        let dir = tempfile::tempdir().expect("a temporary directory");
        let mut setup = Setup::on(
            backend,
            dir.path(),
            &sandbox.url,
            vec![
                Token::all_tenants("admin", ADMIN),
                Token::all_tenants("agent", AGENT),
            ],
        );
        setup.tables = registry.to_string();
        let coordinator = Coordinator::start(&setup).await;
        Rig {
            http: intentdesk::tls::client(None)
                .expect("a TLS client")
                .no_proxy()
                .timeout(Duration::from_secs(20))
                .build()
                .expect("a client"),
            base: coordinator.base.clone(),
            coordinator: Some(coordinator),
            setup,
            sandbox,
            _dir: dir,
        }
    }

    /// Stop the coordinator and start it again on the same database with `registry`.
    async fn restart_with(&mut self, registry: &str) {
        if let Some(c) = self.coordinator.take() {
            c.shut_down().await.expect("a clean stop");
        }
        self.setup.tables = registry.to_string();
        let coordinator = Coordinator::start(&self.setup).await;
        self.base = coordinator.base.clone();
        self.coordinator = Some(coordinator);
    }

    async fn call(
        &self,
        method: Method,
        path: &str,
        token: &str,
        key: Option<&str>,
        body: Option<&Value>,
    ) -> (StatusCode, Value) {
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
        let status = response.status();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    async fn create(&self, key: &str, body: &Value) -> (StatusCode, Value) {
        self.call(Method::POST, "/v1/intents", AGENT, Some(key), Some(body))
            .await
    }

    async fn created(&self, key: &str, body: &Value) -> String {
        let (status, created) = self.create(key, body).await;
        assert_eq!(status, StatusCode::CREATED, "{created}");
        created["id"].as_str().expect("an id").to_string()
    }

    /// Create and have an admin authorise: the intent's id.
    async fn authorized(&self, key: &str, body: &Value) -> String {
        let id = self.created(key, body).await;
        self.authorize(&id).await;
        id
    }

    async fn authorize(&self, id: &str) {
        let (status, body) = self
            .call(
                Method::POST,
                &format!("/v1/intents/{id}/authorize"),
                ADMIN,
                None,
                Some(&json!({"authorization_version": "policy-v7"})),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }

    async fn report(&self, id: &str, attempt: &Value) -> (StatusCode, Value) {
        let path = format!("/v1/intents/{id}/attempts");
        self.call(Method::POST, &path, AGENT, None, Some(attempt))
            .await
    }

    async fn failed(&self, id: &str, attempt: &Value) {
        let attempt_id = attempt["id"].as_str().expect("an attempt id");
        let path = format!("/v1/intents/{id}/attempts/{attempt_id}");
        let (status, body) = self
            .call(
                Method::PATCH,
                &path,
                AGENT,
                None,
                Some(&json!({"outcome": "failed", "error_class": "transient_compute"})),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }

    async fn detail(&self, id: &str) -> Value {
        let (status, body) = self
            .call(Method::GET, &format!("/v1/intents/{id}"), ADMIN, None, None)
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body
    }

    async fn get(&self, path: &str) -> Value {
        let (status, body) = self.call(Method::GET, path, ADMIN, None, None).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body
    }
}

fn comparison(release: &str) -> Value {
    json!({
        "tenant": "acme", "actor": "agent:kharid-bot", "purpose": "compare quotes",
        "operation": "quote.compare", "tool": "llm", "consequence": "compute",
        "args": {"quotes": ["a", "b"]}, "deadline_secs": 120, "max_attempts": 4,
        "release_id": release,
    })
}

fn order(release: &str) -> Value {
    json!({
        "tenant": "acme", "actor": "agent:kharid-bot", "purpose": "restock paper",
        "operation": "purchase_order.create", "tool": "erp", "consequence": "write",
        "args": {"item": "A4 paper", "qty": 1200, "amount": "90"},
        "deadline_secs": 120, "max_attempts": 4, "release_id": release,
        "locale": "en-US", "connector": "erp",
    })
}

fn attempt(provider: &str, release: Option<&str>, proposal: &str) -> Value {
    let mut body = json!({"kind": "inference", "provider": provider, "proposal_hash": proposal});
    if let Some(release) = release {
        body["release_id"] = json!(release);
    }
    body
}

/// The refusal names the release and the operation, in its message and under `release_id`.
fn assert_ineligible(status: StatusCode, body: &Value, release: &str, operation: &str) {
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["error"]["code"], "release_not_eligible", "{body}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(&format!("`{release}`")), "{body}");
    assert!(message.contains(&format!("`{operation}`")), "{body}");
    assert!(body["error"]["fields"]["release_id"].is_string(), "{body}");
}

crate::on_both_backends_tokio! {
    a_failover_to_an_ineligible_release_is_refused_and_one_to_an_eligible_release_is_taken,
    an_unlisted_release_creates_nothing_and_an_operation_without_a_registry_takes_any,
    a_dispatch_under_a_release_the_registry_no_longer_lists_sends_nothing,
    failover_divergence_compares_eligible_releases_only,
}

async fn a_failover_to_an_ineligible_release_is_refused_and_one_to_an_eligible_release_is_taken(
    backend: Backend,
) {
    let rig = Rig::start(&backend, REGISTRY).await;
    let id = rig
        .authorized("compare-1", &comparison("compare-agent@1.0"))
        .await;
    let (status, first) = rig.report(&id, &attempt("model-a", None, "h1")).await;
    assert_eq!(status, StatusCode::CREATED, "{first}");
    assert_eq!(first["release_id"], "compare-agent@1.0");
    rig.failed(&id, &first).await;

    // The failover to a release the registry does not list: refused, nothing recorded.
    let (status, refused) = rig
        .report(&id, &attempt("model-c", Some("compare-agent@9.9"), "h2"))
        .await;
    assert_ineligible(status, &refused, "compare-agent@9.9", "quote.compare");
    let detail = rig.detail(&id).await;
    assert_eq!(detail["intent"]["attempts"], 1, "{detail}");
    assert_eq!(detail["attempts"].as_array().map(Vec::len), Some(1));

    // The failover to an eligible release is taken.
    let (status, taken) = rig
        .report(&id, &attempt("model-b", Some("compare-agent@1.1"), "h2"))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{taken}");
    assert_eq!(taken["release_id"], "compare-agent@1.1");
    let detail = rig.detail(&id).await;
    assert_eq!(detail["intent"]["attempts"], 2, "{detail}");
}

async fn an_unlisted_release_creates_nothing_and_an_operation_without_a_registry_takes_any(
    backend: Backend,
) {
    let rig = Rig::start(&backend, REGISTRY).await;
    let (status, refused) = rig
        .create("unlisted-1", &comparison("compare-agent@0.1"))
        .await;
    assert_ineligible(status, &refused, "compare-agent@0.1", "quote.compare");
    // Nothing was stored under the key: the same key with an eligible release creates.
    let (status, created) = rig
        .create("unlisted-1", &comparison("compare-agent@1.1"))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let list = rig.get("/v1/intents?tenant=acme").await;
    assert_eq!(list["items"].as_array().map(Vec::len), Some(1), "{list}");

    // `report.summarize` has no registry: any release acts for it.
    let mut free = comparison("whatever@7");
    free["operation"] = json!("report.summarize");
    let id = rig.authorized("free-1", &free).await;
    let (status, body) = rig
        .report(&id, &attempt("model-z", Some("other@1"), "h"))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
}

async fn a_dispatch_under_a_release_the_registry_no_longer_lists_sends_nothing(backend: Backend) {
    let mut rig = Rig::start(&backend, "").await;
    let id = rig
        .authorized("order-1", &order("procure-agent@2.4.0"))
        .await;

    // The registry arrives with a restart, and lists only 2.5.0 for orders.
    rig.restart_with(REGISTRY).await;
    let path = format!("/v1/intents/{id}/dispatch");
    let (status, refused) = rig.call(Method::POST, &path, AGENT, None, None).await;
    assert_ineligible(
        status,
        &refused,
        "procure-agent@2.4.0",
        "purchase_order.create",
    );
    let detail = rig.detail(&id).await;
    assert_eq!(detail["intent"]["state"], "authorized", "{detail}");
    assert_eq!(detail["attempts"].as_array().map(Vec::len), Some(0));
    assert_eq!(rig.sandbox.state.effects_summary().effects, 0);

    // An order under the eligible release is dispatched as before.
    let id = rig
        .authorized("order-2", &order("procure-agent@2.5.0"))
        .await;
    let path = format!("/v1/intents/{id}/dispatch");
    let (status, body) = rig.call(Method::POST, &path, AGENT, None, None).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
}

async fn failover_divergence_compares_eligible_releases_only(backend: Backend) {
    // Recorded before the registry: one intent failed over to a release the registry will
    // not list, with another proposal; one failed over between two listed releases, with
    // the same proposal.
    let mut rig = Rig::start(&backend, "").await;
    let unlisted = rig
        .authorized("div-1", &comparison("compare-agent@1.0"))
        .await;
    let (_, a) = rig.report(&unlisted, &attempt("model-a", None, "h1")).await;
    rig.failed(&unlisted, &a).await;
    let (status, b) = rig
        .report(
            &unlisted,
            &attempt("model-x", Some("compare-agent@0.9"), "h2"),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{b}");
    let listed = rig
        .authorized("div-2", &comparison("compare-agent@1.0"))
        .await;
    let (_, a) = rig.report(&listed, &attempt("model-a", None, "h1")).await;
    rig.failed(&listed, &a).await;
    let (status, b) = rig
        .report(
            &listed,
            &attempt("model-b", Some("compare-agent@1.1"), "h1"),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{b}");

    let filter = "tenant=acme&operation=quote.compare";
    let summary = rig.get(&format!("/v1/metrics/summary?{filter}")).await;
    assert_eq!(
        summary["failover_divergence"], 0.5,
        "every release: {summary}"
    );

    // With the registry, the unlisted release's proposal is not compared: that intent has
    // one eligible proposal, and the other's two agree.
    rig.restart_with(REGISTRY).await;
    let summary = rig.get(&format!("/v1/metrics/summary?{filter}")).await;
    assert_eq!(
        summary["failover_divergence"], 0.0,
        "eligible only: {summary}"
    );
    let overview = rig.get(&format!("/v1/metrics/overview?{filter}")).await;
    assert_eq!(
        overview["failover_divergence"], 0.0,
        "eligible only: {overview}"
    );
}

/// A registry that cannot be used stops the start, naming what is wrong.
#[test]
fn a_malformed_release_registry_is_refused_at_load() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let head = "listen = \"127.0.0.1:0\"\ndatabase = \"d.sqlite\"\n";
    let release = |extra: &str| {
        format!(
            "[[releases]]\noperation = \"quote.compare\"\nrelease_id = \"a@1\"\nmodel = \"m\"\n\
             prompt = \"p\"\ntool_schema = \"t\"\nsafety_policy = \"s\"\n{extra}"
        )
    };
    for (name, text, said) in [
        (
            "missing",
            format!("{head}{}", release("")),
            "missing field `router`",
        ),
        (
            "unknown",
            format!("{head}{}", release("router = \"r\"\nmodle = \"x\"\n")),
            "modle",
        ),
        (
            "twice",
            format!(
                "{head}{}{}",
                release("router = \"r\"\n"),
                release("router = \"r\"\n")
            ),
            "listed twice",
        ),
        (
            "blank",
            format!("{head}{}", release("router = \"\"\n")),
            "router must be non-empty",
        ),
    ] {
        let path = dir.path().join(format!("{name}.toml"));
        std::fs::write(&path, text).expect("write the configuration");
        let err = Config::load(&path).expect_err(name);
        assert!(err.to_string().contains(said), "{name}: {err}");
    }
    let path = dir.path().join("good.toml");
    std::fs::write(&path, format!("{head}{}", release("router = \"r\"\n"))).expect("write");
    let config = Config::load(&path).expect("a good registry");
    assert!(config.releases.governs("quote.compare"));
}

/// A picture of an attempt that failed over to another release: its release beside the
/// intent's, and the change flagged, in both locales.
#[cfg(feature = "console")]
mod pictures {
    use egui_kittest::Harness;
    use egui_kittest::kittest::Queryable;
    use intentdesk::console::model::AttemptRow;
    use intentdesk::console::views::envelope::{attempt_fields_ui, release_changed};
    use intentdesk::domain::Locale;
    use intentdesk::i18n::Localizer;
    use serde_json::json;

    const T0: u64 = 1_796_031_355_000;

    fn failover() -> AttemptRow {
        serde_json::from_value(json!({
            "id": "att_01kbx7q3p9d2m8v4r6t0y5zsf2", "kind": "inference", "provider": "model-b",
            "region": "eu-west", "model": "model-b-2026-10", "release_id": "compare-agent@1.1",
            "outcome": "succeeded", "proposal_hash": "9f2c1a", "started_at_ms": T0 + 2_000,
            "ended_at_ms": T0 + 3_100
        }))
        .expect("an attempt")
    }

    fn picture(name: &str, locale: Locale, flag: &str) {
        let attempt = failover();
        assert!(release_changed(&attempt, "compare-agent@1.0"));
        assert!(!release_changed(&attempt, "compare-agent@1.1"));
        let i18n = Localizer::new(locale);
        intentdesk::console::views::charts::time_axis::show_times_in_utc(true);
        let mut harness = Harness::builder()
            .with_size(egui::vec2(720.0, 720.0))
            .with_context_setup(intentdesk::console::text::install_fonts)
            .build_ui(move |ui| attempt_fields_ui(ui, &i18n, &attempt, "compare-agent@1.0"));
        harness.run_steps(3);
        assert!(
            harness.query_by_label_contains(flag).is_some(),
            "flagged: {flag}"
        );
        harness.snapshot(name);
    }

    #[test]
    fn an_attempt_under_another_release_is_flagged() {
        picture("gate_release_change_en", Locale::EnUs, "a failover to it");
    }

    #[test]
    fn an_attempt_under_another_release_is_flagged_in_persian() {
        picture("gate_release_change_fa", Locale::FaIr, "جابه‌جایی");
    }
}
