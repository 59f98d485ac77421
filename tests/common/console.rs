//! What the console's integration tests share: a real coordinator and sandbox on loopback
//! with a SQLite file in a temporary folder, driven from the test's thread (the console
//! harness is not async), requests to it as an agent would send them, and the real app in
//! an egui_kittest harness, stepped until a condition holds.

use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;
use intentdesk::console::{ConsoleApp, ConsoleOptions};
use intentdesk::sandbox::{SandboxState, WebhookTarget};
use serde_json::{Value, json};
use tokio::net::TcpListener;

use super::deploy::{self, Setup, Token};

pub const ADMIN: &str = "common-admin-token";
/// A supervisor of every tenant: reads, and may approve, reconcile and close, but not pause.
pub const SUPERVISOR: &str = "common-supervisor-token";
/// The `erp` connector's token, which the sandbox presents with its receipts.
pub const CONNECTOR: &str = "common-connector-token";
/// Guards against a hang; never a stand-in for synchronisation.
pub const PATIENCE: Duration = Duration::from_secs(60);

pub struct Rig {
    pub runtime: tokio::runtime::Runtime,
    pub base: String,
    pub addr: SocketAddr,
    pub sandbox: SandboxState,
    downstream: deploy::Sandbox,
    reconcile: bool,
    dir: tempfile::TempDir,
    coordinator: Option<deploy::Coordinator>,
    /// The `erp` connector's key retention at the next start of the coordinator.
    pub key_retention_secs: u64,
}

/// How the rig's coordinator and sandbox behave.
pub struct RigOptions {
    /// The sandbox's fault specification (`none` for a fault-free downstream).
    pub faults: &'static str,
    /// Whether the reconciler looks indeterminate intents up by itself. Off, an
    /// indeterminate intent stays so until an operator acts.
    pub reconcile: bool,
    /// Writes the database before the coordinator first opens it (a generated data set).
    pub prepare: Option<fn(&Path)>,
    /// Whether the sandbox sends its receipts to the coordinator's webhook, as the `erp`
    /// connector: every effect it makes, even one the coordinator did not ask for, reaches
    /// the coordinator.
    pub webhooks: bool,
}

impl Default for RigOptions {
    fn default() -> Self {
        RigOptions {
            faults: "none",
            reconcile: true,
            prepare: None,
            webhooks: false,
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
        if let Some(prepare) = options.prepare {
            let database = Setup::new(dir.path(), "", Vec::new()).database;
            prepare(database.path().expect("the console's rig runs on SQLite"));
        }
        // With webhooks the coordinator's address comes first: the sandbox sends there.
        let listener = options.webhooks.then(|| {
            runtime
                .block_on(TcpListener::bind("127.0.0.1:0"))
                .expect("bind the coordinator")
        });
        let webhook = listener.as_ref().map(|l| WebhookTarget {
            url: format!(
                "http://{}/v1/receipts/erp",
                l.local_addr().expect("address")
            )
            .parse()
            .expect("webhook URL"),
            token: Some(CONNECTOR.into()),
        });
        let downstream = runtime.block_on(deploy::sandbox(options.faults, webhook, None));
        let mut rig = Rig {
            runtime,
            base: String::new(),
            addr: downstream.addr,
            sandbox: downstream.state.clone(),
            downstream,
            reconcile: options.reconcile,
            dir,
            coordinator: None,
            key_retention_secs: 86_400,
        };
        match listener {
            Some(listener) => {
                let setup = rig.setup("");
                let coordinator = rig
                    .runtime
                    .block_on(async { deploy::Coordinator::serve(listener, &setup) });
                rig.serving(coordinator);
            }
            None => rig.start_coordinator("127.0.0.1:0"),
        }
        rig
    }

    /// The sandbox's base URL.
    pub fn sandbox_url(&self) -> &str {
        &self.downstream.url
    }

    fn setup(&self, at: &str) -> Setup {
        let tokens = vec![
            Token::all_tenants("admin", ADMIN),
            Token::all_tenants("supervisor", SUPERVISOR),
            Token::erp_connector(CONNECTOR),
        ];
        let mut setup = Setup::new(self.dir.path(), &self.downstream.url, tokens);
        if !at.is_empty() {
            setup.listen = at.into();
        }
        setup.reconcile = self.reconcile;
        setup.key_retention_secs = self.key_retention_secs;
        setup
    }

    fn serving(&mut self, coordinator: deploy::Coordinator) {
        self.addr = coordinator.addr;
        self.base = coordinator.base.clone();
        self.coordinator = Some(coordinator);
    }

    /// Start the coordinator on `at` (`127.0.0.1:0` for any port) over the rig's database,
    /// with an admin and a supervisor token.
    pub fn start_coordinator(&mut self, at: &str) {
        let setup = self.setup(at);
        let coordinator = self.runtime.block_on(deploy::Coordinator::start(&setup));
        self.serving(coordinator);
    }

    /// Stop the coordinator and wait until it has shut down.
    pub fn stop_coordinator(&mut self) {
        if let Some(coordinator) = self.coordinator.take() {
            self.runtime
                .block_on(async { tokio::time::timeout(PATIENCE, coordinator.shut_down()).await })
                .expect("the coordinator stops in time")
                .expect("the coordinator ends cleanly");
        }
    }

    /// `POST` `body` to `path` as the admin, with an `Idempotency-Key` if given: the status,
    /// the `Idempotent-Replayed` header and the answer.
    pub fn post(&self, path: &str, key: Option<&str>, body: &Value) -> (u16, bool, Value) {
        self.post_as(ADMIN, path, key, body)
    }

    /// [`Rig::post`] with `token`.
    pub fn post_as(
        &self,
        token: &str,
        path: &str,
        key: Option<&str>,
        body: &Value,
    ) -> (u16, bool, Value) {
        self.runtime.block_on(async {
            let mut request = intentdesk::tls::client(None)
                .expect("a TLS client")
                .build()
                .expect("an HTTP client")
                .post(format!("{}{path}", self.base))
                .bearer_auth(token);
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
            let auth = json!({"authorization_version": "v1"});
            let (status, _, _) = self.post_as(
                SUPERVISOR,
                &format!("/v1/intents/{id}/authorize"),
                None,
                &auth,
            );
            assert_eq!(status, 200, "authorize {id}");
        }
        (status, replayed, created)
    }

    /// An authorized intent of `tenant`: with no `providers`, a purchase order dispatched
    /// to `erp`; with some, a quote comparison that reported one inference attempt on each,
    /// in order.
    pub fn intent(&self, tenant: &str, key: &str, providers: &[&str]) -> Value {
        let (consequence, operation, tool) = if providers.is_empty() {
            ("write", "purchase_order.create", "erp.po")
        } else {
            ("compute", "quote.compare", "llm.compare")
        };
        let body = json!({
            "tenant": tenant, "actor": "agent", "purpose": "restock", "operation": operation,
            "tool": tool, "consequence": consequence, "args": {"item": "paper", "qty": 10},
            "deadline_secs": 600, "max_attempts": 5, "release_id": "r1", "locale": "en-US", "connector": "erp"
        });
        let (status, _, created) = self.post("/v1/intents", Some(key), &body);
        assert_eq!(status, 201, "create {key}: {created}");
        let id = created["id"].as_str().expect("id");
        let auth = json!({"authorization_version": "v1"});
        let (status, _, _) = self.post_as(
            SUPERVISOR,
            &format!("/v1/intents/{id}/authorize"),
            None,
            &auth,
        );
        assert_eq!(status, 200, "authorize {id}");
        let mut answers = Vec::new();
        if providers.is_empty() {
            answers.push(self.post(&format!("/v1/intents/{id}/dispatch"), None, &Value::Null));
        }
        for p in providers {
            let attempt = json!({"kind": "inference", "provider": p});
            answers.push(self.post(&format!("/v1/intents/{id}/attempts"), None, &attempt));
        }
        for (status, _, answer) in answers {
            assert!((200..300).contains(&status), "{id}: {status} {answer}");
        }
        created
    }

    /// `GET` `path` as the admin: the answer.
    pub fn get(&self, path: &str) -> Value {
        self.get_query(path, &[])
    }

    /// `GET` `path` with `query` as the admin: the answer.
    pub fn get_query(&self, path: &str, query: &[(&str, &str)]) -> Value {
        self.runtime.block_on(async {
            intentdesk::tls::client(None)
                .expect("a TLS client")
                .build()
                .expect("an HTTP client")
                .get(format!("{}{path}", self.base))
                .bearer_auth(ADMIN)
                .query(query)
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
        let created = self.intent("acme", key, &[]);
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
        self.build_harness(token, open, None, size)
    }

    /// The real app as the admin with its clock fixed at `now_ms` (pictures).
    pub fn harness_at(&self, now_ms: u64, size: egui::Vec2) -> Harness<'static, ConsoleApp> {
        self.build_harness(ADMIN, None, Some(now_ms), size)
    }

    fn build_harness(
        &self,
        token: &str,
        open: Option<String>,
        fixed_now_ms: Option<u64>,
        size: egui::Vec2,
    ) -> Harness<'static, ConsoleApp> {
        let options = ConsoleOptions {
            label: "test".into(),
            coordinator_url: self.base.clone(),
            token: token.into(),
            offline: false,
            open,
            cache_path: None,
            fixed_now_ms,
            utc: true,
            ca_file: None,
        };
        let handle = self.runtime.handle().clone();
        let mut harness = Harness::builder()
            .with_size(size)
            .build_eframe(move |cc| ConsoleApp::new(&cc.egui_ctx, None, options, &handle));
        harness.run_steps(2);
        harness
    }
}

/// Click at the widget labelled `label` once it stands still: a pointer click is sent at
/// where the last frame drew it, so one sent while the layout still moves (a row that
/// arrives with the live stream, a status that changes width) lands beside it, as a
/// person's would. For what only a pointer opens (a table row, whose label is not what
/// takes the click). Fails after [`PATIENCE`] if it never shows or never stops moving.
pub fn click_when_still(harness: &mut Harness<'static, ConsoleApp>, label: &str) {
    wait_until_still(harness, label, |h| {
        h.query_by_label(label).map(|n| n.rect())
    });
    harness.get_by_label(label).click();
}

/// Open the intent `id` from its row in the table, as a person does: a click on its id.
/// A pointer click still goes astray when the layout moves in the very frame it lands in
/// (a notice or a refreshed row arriving from the worker between two frames), and a person
/// whose click did nothing clicks again: so does this, until the console has the intent
/// open. A row that never opens it fails after [`PATIENCE`].
pub fn open_row(harness: &mut Harness<'static, ConsoleApp>, id: &str) {
    let opened = |app: &ConsoleApp| app.open.as_ref().is_some_and(|o| o.id == id);
    let started = Instant::now();
    while !opened(harness.state()) {
        if started.elapsed() > PATIENCE {
            panic!(
                "the row of {id} never opened it; {}",
                shown(harness.state())
            );
        }
        click_when_still(harness, &id[..14]);
        // The click is taken in the next frame and the command in the one after it.
        for _ in 0..5 {
            harness.step();
            if opened(harness.state()) {
                break;
            }
        }
    }
}

/// Click the widget of `role` labelled `label` (a button, a check box) as assistive
/// technology does: by its id, not at a point, once it stands still. A pointer click
/// lands beside a widget that moved after the last frame (a detail refreshed above a
/// button, a menu in its first, measuring frame), and CI runs lost such clicks; waiting
/// for it to stand still keeps its id the one the next frame gives it. Fails after
/// [`PATIENCE`] if it never shows or never stops moving.
pub fn click_role_when_still(
    harness: &mut Harness<'static, ConsoleApp>,
    role: egui::accesskit::Role,
    label: &str,
) {
    wait_until_still(harness, label, |h| {
        h.query_by_role_and_label(role, label).map(|n| n.rect())
    });
    harness.get_by_role_and_label(role, label).click_accesskit();
}

/// Step the app until `rect` finds the widget at the same place in two frames running.
fn wait_until_still(
    harness: &mut Harness<'static, ConsoleApp>,
    label: &str,
    rect: impl Fn(&Harness<'static, ConsoleApp>) -> Option<egui::Rect>,
) {
    let started = Instant::now();
    let mut last = rect(harness);
    loop {
        harness.step();
        let now = rect(harness);
        if now.is_some() && now == last {
            return;
        }
        if started.elapsed() > PATIENCE {
            panic!("{label} never stood still; {}", shown(harness.state()));
        }
        last = now;
    }
}

/// Step the app until `done` holds, or fail after [`PATIENCE`] saying what the app shows.
pub fn until(
    harness: &mut Harness<'static, ConsoleApp>,
    what: &str,
    done: impl Fn(&ConsoleApp) -> bool,
) {
    let started = Instant::now();
    while !done(harness.state()) {
        if started.elapsed() > PATIENCE {
            panic!("gave up waiting: {what}; {}", shown(harness.state()));
        }
        harness.step();
        std::thread::sleep(Duration::from_millis(5));
    }
    harness.run_steps(2);
}

/// What the app shows, for a failed wait.
fn shown(app: &ConsoleApp) -> String {
    let d = &app.dashboard;
    format!(
        "tab {:?}, filters {:?}; table error {:?}, rows {}; open {:?}, dialog {:?}, last command {:?}; \
         dashboard error {:?}, charts {}",
        app.state.tab,
        app.state.filters,
        app.table.error,
        app.table.rows.len(),
        app.open.as_ref().map(|o| (
            &o.id,
            &o.error,
            o.detail.as_ref().map(|d| d.intent.state.wire().to_string())
        )),
        app.intent_view.dialog.as_ref().map(|d| &d.sent),
        app.intent_view.last,
        d.error,
        d.charts.len(),
    )
}
