//! The real console app against a real coordinator and sandbox on loopback: filtering by
//! tenant and provider changes the table, searching an action key opens its intent,
//! clicking a row opens it, and a lost coordinator shows the stale banner until it is back.
#![cfg(feature = "console")]

use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use egui::accesskit::Role;
use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;
use intentdesk::console::{ConsoleApp, ConsoleOptions};
use intentdesk::coordinator::{Config, run, token_sha256};
use intentdesk::sandbox::{FaultSpec, SandboxState};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

const ADMIN: &str = "console-admin-token";
/// Guards against a hang; never a stand-in for synchronisation.
const PATIENCE: Duration = Duration::from_secs(30);

struct Rig {
    runtime: tokio::runtime::Runtime,
    base: String,
    addr: SocketAddr,
    dir: tempfile::TempDir,
    sandbox_addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    _stop_sandbox: oneshot::Sender<()>,
}

fn config_text(db: &Path, sandbox: SocketAddr) -> String {
    format!(
        r#"
listen = "127.0.0.1:0"
database = "{db}"
reconcile_interval_ms = 100
[[tokens]]
name = "admin"
token_sha256 = "{admin}"
role = "admin"
tenants = ["*"]
[[connectors]]
name = "erp"
base_url = "http://{sandbox}"
key_retention_secs = 3600
timeout_ms = 1000
operations = {{ "purchase_order.create" = "purchase-orders" }}
"#,
        db = db.display(),
        admin = token_sha256(ADMIN),
    )
}

impl Rig {
    fn start() -> Rig {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let dir = tempfile::tempdir().expect("temp dir");
        let (sandbox_addr, stop_sandbox) = runtime.block_on(async {
            let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
            let addr = listener.local_addr().expect("addr");
            let (stop, stopped) = oneshot::channel::<()>();
            let state = SandboxState::new("none".parse::<FaultSpec>().expect("spec"), None);
            tokio::spawn(intentdesk::sandbox::run(listener, state, async {
                let _ = stopped.await;
            }));
            (addr, stop)
        });
        let mut rig = Rig {
            runtime,
            base: String::new(),
            addr: "127.0.0.1:0".parse().expect("addr"),
            dir,
            sandbox_addr,
            stop: None,
            _stop_sandbox: stop_sandbox,
        };
        rig.start_coordinator("127.0.0.1:0");
        rig
    }

    fn start_coordinator(&mut self, at: &str) {
        let config = Config::parse(
            &config_text(&self.dir.path().join("c.sqlite"), self.sandbox_addr),
            "test",
        )
        .expect("config");
        let (addr, stop) = self.runtime.block_on(async {
            let listener = TcpListener::bind(at).await.expect("bind");
            let addr = listener.local_addr().expect("addr");
            let (stop, stopped) = oneshot::channel::<()>();
            tokio::spawn(run(listener, config, async {
                let _ = stopped.await;
            }));
            (addr, stop)
        });
        self.addr = addr;
        self.base = format!("http://{addr}");
        self.stop = Some(stop);
    }

    fn stop_coordinator(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        // Wait until the port no longer answers.
        let started = Instant::now();
        while std::net::TcpStream::connect(self.addr).is_ok() {
            assert!(started.elapsed() < PATIENCE, "the coordinator did not stop");
            std::thread::yield_now();
        }
    }

    /// Create an intent; dispatch it (provider `erp`) or report an inference attempt with
    /// `provider`.
    fn intent(&self, tenant: &str, key: &str, provider: Option<&str>) -> Value {
        self.runtime.block_on(async {
            let http = reqwest::Client::new();
            let (consequence, operation) = if provider.is_some() {
                ("compute", "quote.compare")
            } else {
                ("write", "purchase_order.create")
            };
            let body = json!({
                "tenant": tenant, "actor": "agent", "purpose": "restock", "operation": operation,
                "tool": "erp.po", "consequence": consequence, "args": {"item": "paper", "qty": 10},
                "deadline_secs": 600, "max_attempts": 3, "release_id": "r1", "locale": "en-US", "connector": "erp"
            });
            let created: Value = http
                .post(format!("{}/v1/intents", self.base))
                .bearer_auth(ADMIN)
                .header("Idempotency-Key", key)
                .json(&body)
                .send()
                .await
                .expect("create")
                .json()
                .await
                .expect("json");
            let id = created["id"].as_str().expect("id").to_string();
            let auth = json!({"authorization_version": "v1", "approver": "ann"});
            http.post(format!("{}/v1/intents/{id}/authorize", self.base))
                .bearer_auth(ADMIN)
                .json(&auth)
                .send()
                .await
                .expect("authorize");
            match provider {
                Some(p) => {
                    http.post(format!("{}/v1/intents/{id}/attempts", self.base))
                        .bearer_auth(ADMIN)
                        .json(&json!({"kind": "inference", "provider": p}))
                        .send()
                        .await
                        .expect("attempt");
                }
                None => {
                    http.post(format!("{}/v1/intents/{id}/dispatch", self.base))
                        .bearer_auth(ADMIN)
                        .send()
                        .await
                        .expect("dispatch");
                }
            }
            created
        })
    }

    fn harness(&self) -> Harness<'static, ConsoleApp> {
        let options = ConsoleOptions {
            label: "test".into(),
            coordinator_url: self.base.clone(),
            token: ADMIN.into(),
            offline: false,
            open: None,
            cache_path: None,
            fixed_now_ms: None,
        };
        let handle = self.runtime.handle().clone();
        let mut harness = Harness::builder()
            .with_size(egui::vec2(1400.0, 800.0))
            .build_eframe(move |cc| ConsoleApp::new(&cc.egui_ctx, None, options, &handle));
        harness.run_steps(2);
        harness
    }
}

/// Step the app until `done` holds, or fail after [`PATIENCE`].
fn until(
    harness: &mut Harness<'static, ConsoleApp>,
    what: &str,
    done: impl Fn(&ConsoleApp) -> bool,
) {
    let started = Instant::now();
    while !done(harness.state()) {
        if started.elapsed() > PATIENCE {
            let app = harness.state();
            panic!(
                "gave up waiting: {what}; table error {:?}, rows {}, open {:?}",
                app.table.error,
                app.table.rows.len(),
                app.open
                    .as_ref()
                    .map(|o| (&o.id, &o.error, o.detail.is_some()))
            );
        }
        harness.step();
        std::thread::sleep(Duration::from_millis(5));
    }
    harness.run_steps(2);
}

#[test]
fn filtering_by_tenant_and_provider_changes_the_table() {
    let rig = Rig::start();
    rig.intent("acme", "a1", Some("openai"));
    rig.intent("acme", "a2", Some("anthropic"));
    rig.intent("globex", "g1", Some("openai"));
    rig.intent("globex", "g2", None);
    let mut harness = rig.harness();
    until(&mut harness, "all four rows", |app| {
        app.table.rows.len() == 4
    });

    harness
        .get_by_role_and_label(Role::Button, "Tenant")
        .click();
    harness.run_steps(2);
    harness
        .get_by_role_and_label(Role::CheckBox, "acme")
        .click();
    harness.run_steps(2);
    until(&mut harness, "only acme", |app| {
        !app.table.loading
            && app.table.rows.len() == 2
            && app.table.rows.iter().all(|r| r.tenant == "acme")
    });

    harness.key_press(egui::Key::Escape);
    harness.run_steps(2);
    harness
        .get_by_role_and_label(Role::Button, "Provider")
        .click();
    harness.run_steps(2);
    harness
        .get_by_role_and_label(Role::CheckBox, "openai")
        .click();
    harness.run_steps(2);
    until(&mut harness, "acme on openai", |app| {
        !app.table.loading
            && app.table.rows.len() == 1
            && app.table.rows[0].providers.contains(&"openai".to_string())
    });
}

#[test]
fn searching_an_action_key_opens_its_intent() {
    let rig = Rig::start();
    let wanted = rig.intent("acme", "k1", None);
    rig.intent("acme", "k2", None);
    let mut harness = rig.harness();
    until(&mut harness, "rows", |app| app.table.rows.len() == 2);
    let key = wanted["action_key"].as_str().expect("key");
    let input = harness.get_by_role(Role::TextInput);
    input.focus();
    input.type_text(key);
    harness.run_steps(2);
    harness.key_press(egui::Key::Enter);
    harness.run_steps(2);
    let id = wanted["id"].as_str().expect("id").to_string();
    until(&mut harness, "the intent opens with its detail", |app| {
        app.open
            .as_ref()
            .is_some_and(|o| o.id == id && o.detail.is_some())
    });
    until(&mut harness, "the search narrows the table", |app| {
        app.table.rows.len() == 1
    });
}

#[test]
fn clicking_a_row_opens_the_intent() {
    let rig = Rig::start();
    let wanted = rig.intent("acme", "r1", None);
    let mut harness = rig.harness();
    until(&mut harness, "a row", |app| app.table.rows.len() == 1);
    let id = wanted["id"].as_str().expect("id");
    harness.get_by_label(&id[..14]).click();
    until(&mut harness, "the panel shows the action key", |app| {
        app.open
            .as_ref()
            .and_then(|o| o.detail.as_ref())
            .is_some_and(|d| d.intent.id == id)
    });
    assert!(
        harness
            .query_by_label(wanted["action_key"].as_str().expect("key"))
            .is_some()
    );
}

#[test]
fn a_lost_coordinator_shows_the_stale_banner_and_recovers() {
    let mut rig = Rig::start();
    rig.intent("acme", "s1", None);
    let mut harness = rig.harness();
    until(&mut harness, "live", |app| {
        app.live.connected && app.table.rows.len() == 1
    });
    assert!(harness.query_by_label_contains("Stale").is_none());

    let addr = rig.addr.to_string();
    rig.stop_coordinator();
    until(&mut harness, "stale", |app| !app.live.connected);
    assert!(
        harness.query_by_label_contains("Stale").is_some(),
        "the banner says the data is stale"
    );

    rig.start_coordinator(&addr);
    rig.intent("acme", "s2", None);
    until(&mut harness, "live again with the new intent", |app| {
        app.live.connected && app.table.rows.len() == 2
    });
    assert!(harness.query_by_label_contains("Stale").is_none());
}
