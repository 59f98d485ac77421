//! What the console's integration tests share: a real coordinator and sandbox on loopback
//! with a SQLite file in a temporary folder, requests to it as an agent would send them,
//! and the real app in an egui_kittest harness, stepped until a condition holds.
#![allow(dead_code)] // each test file uses part of it

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use egui_kittest::Harness;
use intentdesk::console::{ConsoleApp, ConsoleOptions};
use intentdesk::coordinator::{Config, run, token_sha256};
use intentdesk::sandbox::{FaultSpec, SandboxState};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

pub const ADMIN: &str = "common-admin-token";
/// A supervisor of every tenant: reads, and may reconcile and close, but not pause.
pub const SUPERVISOR: &str = "common-supervisor-token";
/// Guards against a hang; never a stand-in for synchronisation.
pub const PATIENCE: Duration = Duration::from_secs(40);

pub struct Rig {
    pub runtime: tokio::runtime::Runtime,
    pub base: String,
    pub addr: SocketAddr,
    pub sandbox: SandboxState,
    sandbox_addr: SocketAddr,
    reconcile: bool,
    dir: tempfile::TempDir,
    stop: Option<oneshot::Sender<()>>,
    _stop_sandbox: oneshot::Sender<()>,
}

/// How the rig's coordinator and sandbox behave.
pub struct RigOptions {
    /// The sandbox's fault specification (`none` for a fault-free downstream).
    pub faults: &'static str,
    /// Whether the reconciler looks indeterminate intents up by itself. Off, an
    /// indeterminate intent stays so until an operator acts.
    pub reconcile: bool,
}

impl Default for RigOptions {
    fn default() -> Self {
        RigOptions {
            faults: "none",
            reconcile: true,
        }
    }
}

impl Rig {
    /// A coordinator with an admin and a supervisor token and the `erp` connector on a
    /// fault-free sandbox, reconciling by itself.
    pub fn start() -> Rig {
        Rig::start_with(RigOptions::default())
    }

    pub fn start_with(options: RigOptions) -> Rig {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let dir = tempfile::tempdir().expect("temp dir");
        let sandbox = SandboxState::new(options.faults.parse::<FaultSpec>().expect("spec"), None);
        let (sandbox_addr, stop_sandbox) = serve(&runtime, |listener, stopped| {
            tokio::spawn(intentdesk::sandbox::run(listener, sandbox.clone(), async {
                let _ = stopped.await;
            }));
        });
        let mut rig = Rig {
            runtime,
            base: String::new(),
            addr: sandbox_addr,
            sandbox,
            sandbox_addr,
            reconcile: options.reconcile,
            dir,
            stop: None,
            _stop_sandbox: stop_sandbox,
        };
        rig.start_coordinator("127.0.0.1:0");
        rig
    }

    /// Start the coordinator on `at` (`127.0.0.1:0` for any port) over the rig's database.
    pub fn start_coordinator(&mut self, at: &str) {
        let config = Config::parse(
            &config_text(&self.dir, self.sandbox_addr, self.reconcile),
            "test",
        )
        .expect("config");
        let at: SocketAddr = at.parse().expect("address");
        let (addr, stop) = serve_at(&self.runtime, at, |listener, stopped| {
            tokio::spawn(run(listener, config, async {
                let _ = stopped.await;
            }));
        });
        self.addr = addr;
        self.base = format!("http://{addr}");
        self.stop = Some(stop);
    }

    /// Stop the coordinator and wait until its port no longer answers.
    pub fn stop_coordinator(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let started = Instant::now();
        while std::net::TcpStream::connect(self.addr).is_ok() {
            assert!(started.elapsed() < PATIENCE, "the coordinator did not stop");
            std::thread::yield_now();
        }
    }

    /// `POST` `body` to `path` as the admin, with an `Idempotency-Key` if given: the status,
    /// the `Idempotent-Replayed` header and the answer.
    pub fn post(&self, path: &str, key: Option<&str>, body: &Value) -> (u16, bool, Value) {
        self.runtime.block_on(async {
            let mut request = reqwest::Client::new()
                .post(format!("{}{path}", self.base))
                .bearer_auth(ADMIN);
            if !body.is_null() {
                request = request.json(body);
            }
            if let Some(key) = key {
                request = request.header("Idempotency-Key", key);
            }
            let response = request.send().await.expect("request");
            let status = response.status().as_u16();
            let replayed = response.headers().get("idempotent-replayed").is_some();
            (
                status,
                replayed,
                response.json().await.unwrap_or(Value::Null),
            )
        })
    }

    /// Create a purchase order under caller key `key` and authorize it.
    pub fn order(&self, tenant: &str, locale: &str, key: &str, args: Value) -> (u16, bool, Value) {
        let body = json!({
            "tenant": tenant, "actor": "agent", "purpose": "restock", "operation": "purchase_order.create",
            "tool": "erp.po", "consequence": "write", "args": args,
            "deadline_secs": 600, "max_attempts": 3, "release_id": "r1", "locale": locale, "connector": "erp"
        });
        let (status, replayed, created) = self.post("/v1/intents", Some(key), &body);
        if status == 201 {
            let id = created["id"].as_str().expect("id");
            let auth = json!({"authorization_version": "v1", "approver": "ann"});
            let (status, _, _) = self.post(&format!("/v1/intents/{id}/authorize"), None, &auth);
            assert_eq!(status, 200, "authorize {id}");
        }
        (status, replayed, created)
    }

    /// An authorized intent of `tenant`: dispatched to `erp` (a purchase order), or, with
    /// a `provider`, a quote comparison that reported one inference attempt there.
    pub fn intent(&self, tenant: &str, key: &str, provider: Option<&str>) -> Value {
        let (consequence, operation) = match provider {
            Some(_) => ("compute", "quote.compare"),
            None => ("write", "purchase_order.create"),
        };
        let body = json!({
            "tenant": tenant, "actor": "agent", "purpose": "restock", "operation": operation,
            "tool": "erp.po", "consequence": consequence, "args": {"item": "paper", "qty": 10},
            "deadline_secs": 600, "max_attempts": 3, "release_id": "r1", "locale": "en-US", "connector": "erp"
        });
        let (status, _, created) = self.post("/v1/intents", Some(key), &body);
        assert_eq!(status, 201, "create {key}: {created}");
        let id = created["id"].as_str().expect("id");
        let auth = json!({"authorization_version": "v1", "approver": "ann"});
        let (status, _, _) = self.post(&format!("/v1/intents/{id}/authorize"), None, &auth);
        assert_eq!(status, 200, "authorize {id}");
        let (status, _, answer) = match provider {
            Some(p) => self.post(
                &format!("/v1/intents/{id}/attempts"),
                None,
                &json!({"kind": "inference", "provider": p}),
            ),
            None => self.post(&format!("/v1/intents/{id}/dispatch"), None, &Value::Null),
        };
        assert!((200..300).contains(&status), "{id}: {status} {answer}");
        created
    }

    /// `GET` `path` as the admin: the answer.
    pub fn get(&self, path: &str) -> Value {
        self.runtime.block_on(async {
            reqwest::Client::new()
                .get(format!("{}{path}", self.base))
                .bearer_auth(ADMIN)
                .send()
                .await
                .expect("get")
                .json()
                .await
                .expect("json")
        })
    }

    /// A dispatched order whose response the sandbox dropped after committing it (with
    /// `drop_after_commit=1` and the reconciler off): its id and action key.
    pub fn indeterminate_order(&self, key: &str) -> (String, String) {
        let created = self.intent("acme", key, None);
        let id = created["id"].as_str().expect("id").to_string();
        let started = Instant::now();
        while self.get(&format!("/v1/intents/{id}"))["intent"]["state"] != "indeterminate" {
            assert!(
                started.elapsed() < PATIENCE,
                "the order never became indeterminate"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let action_key = created["action_key"].as_str().expect("key").to_string();
        (id, action_key)
    }

    /// How many effects the sandbox applied under `action_key`.
    pub fn effects(&self, action_key: &str) -> u64 {
        self.sandbox
            .effects_for(&action_key.parse().expect("action key"))
    }

    /// The real app on this coordinator as the admin, in a window of `size`.
    pub fn harness(&self, size: egui::Vec2) -> Harness<'static, ConsoleApp> {
        self.harness_as(ADMIN, None, size)
    }

    /// The real app with `token`, opening `open` at start, in a window of `size`.
    pub fn harness_as(
        &self,
        token: &str,
        open: Option<String>,
        size: egui::Vec2,
    ) -> Harness<'static, ConsoleApp> {
        let options = ConsoleOptions {
            label: "test".into(),
            coordinator_url: self.base.clone(),
            token: token.into(),
            offline: false,
            open,
            cache_path: None,
            fixed_now_ms: None,
            utc: true,
        };
        let handle = self.runtime.handle().clone();
        let mut harness = Harness::builder()
            .with_size(size)
            .build_eframe(move |cc| ConsoleApp::new(&cc.egui_ctx, None, options, &handle));
        harness.run_steps(2);
        harness
    }
}

fn serve(
    runtime: &tokio::runtime::Runtime,
    start: impl FnOnce(TcpListener, oneshot::Receiver<()>),
) -> (SocketAddr, oneshot::Sender<()>) {
    serve_at(runtime, "127.0.0.1:0".parse().expect("address"), start)
}

fn serve_at(
    runtime: &tokio::runtime::Runtime,
    at: SocketAddr,
    start: impl FnOnce(TcpListener, oneshot::Receiver<()>),
) -> (SocketAddr, oneshot::Sender<()>) {
    runtime.block_on(async {
        let listener = TcpListener::bind(at).await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (stop, stopped) = oneshot::channel::<()>();
        start(listener, stopped);
        (addr, stop)
    })
}

fn config_text(dir: &tempfile::TempDir, sandbox: SocketAddr, reconcile: bool) -> String {
    let reconciler = if reconcile {
        "reconcile_interval_ms = 100"
    } else {
        "reconcile_interval_ms = 86400000\nreconcile_batch = 0"
    };
    format!(
        r#"
listen = "127.0.0.1:0"
database = "{db}"
{reconciler}
[[tokens]]
name = "ops-admin"
token_sha256 = "{admin}"
role = "admin"
tenants = ["*"]
[[tokens]]
name = "sam"
token_sha256 = "{supervisor}"
role = "supervisor"
tenants = ["*"]
[[connectors]]
name = "erp"
base_url = "http://{sandbox}"
key_retention_secs = 3600
timeout_ms = 1000
operations = {{ "purchase_order.create" = "purchase-orders" }}
"#,
        db = dir.path().join("c.sqlite").display(),
        admin = token_sha256(ADMIN),
        supervisor = token_sha256(SUPERVISOR),
    )
}

/// Step the app until `done` holds, or fail after [`PATIENCE`].
pub fn until(
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
