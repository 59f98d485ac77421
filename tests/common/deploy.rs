//! Starting the real parts for a test on the current tokio runtime: the sandbox and the
//! coordinator on loopback ports, with a configuration written as an operator writes one.
//! Each part stops when its handle is dropped (or, for the coordinator, when told to).

use std::net::SocketAddr;
use std::path::Path;

use intentdesk::coordinator::{Config, run, token_sha256};
use intentdesk::sandbox::{self, FaultSpec, SandboxOptions, SandboxState, WebhookTarget};
use intentdesk::store::Location;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::backends::Backend;

/// A bearer token the configuration admits.
pub struct Token {
    pub name: &'static str,
    pub secret: &'static str,
    pub role: &'static str,
    /// The tenant scope as TOML: `["*"]` or `["acme"]`.
    pub tenants: &'static str,
    /// For a `connector` token, the connectors it speaks for as TOML (`["erp"]`); empty
    /// for every other role.
    pub connectors: &'static str,
}

impl Token {
    /// A token of `role` for every tenant, named after its role.
    pub fn all_tenants(role: &'static str, secret: &'static str) -> Token {
        Token {
            name: role,
            secret,
            role,
            tenants: r#"["*"]"#,
            connectors: "",
        }
    }

    /// The token the sandbox presents with its receipts: the `erp` connector's, for every
    /// tenant.
    pub fn erp_connector(secret: &'static str) -> Token {
        Token {
            name: "erp-connector",
            secret,
            role: "connector",
            tenants: r#"["*"]"#,
            connectors: r#"["erp"]"#,
        }
    }

    /// A token of `role` for the one tenant `acme`, named after its role.
    pub fn acme(role: &'static str, secret: &'static str) -> Token {
        Token {
            name: role,
            secret,
            role,
            tenants: r#"["acme"]"#,
            connectors: "",
        }
    }
}

/// What a test changes about the coordinator: its tokens, and the `erp` connector on the
/// sandbox (purchase orders, inventory reservations, payments).
pub struct Setup {
    pub listen: String,
    /// A SQLite file in the test's directory unless a test chooses its backend.
    pub database: Location,
    pub tokens: Vec<Token>,
    /// Where the `erp` connector sends its commands.
    pub downstream: String,
    pub timeout_ms: u64,
    pub key_retention_secs: u64,
    pub supports_lookup: bool,
    /// Whether the reconciler looks indeterminate intents up by itself; off, an
    /// indeterminate intent stays so until an operator acts.
    pub reconcile: bool,
    /// How long a dispatcher's claim on an outbox row lasts; the coordinator's default
    /// when `None`.
    pub dispatch_lease_ms: Option<u64>,
    /// How many dispatches may be in flight at once; the coordinator's default when `None`.
    pub dispatch_concurrency: Option<usize>,
    /// More top-level lines (`durability = "power_loss"`).
    pub top_level: String,
    /// More lines of the `erp` connector's table (`overload_means_not_applied = true`).
    pub erp_extra: String,
    /// More tables at the end (other connectors).
    pub tables: String,
}

impl Setup {
    /// Any port, a SQLite database in `dir`, the given tokens and the `erp` connector at
    /// `downstream`, reconciling every 100 ms.
    pub fn new(dir: &Path, downstream: &str, tokens: Vec<Token>) -> Setup {
        Setup::on(&Backend::Sqlite, dir, downstream, tokens)
    }

    /// [`Setup::new`] with the database on `backend`.
    pub fn on(backend: &Backend, dir: &Path, downstream: &str, tokens: Vec<Token>) -> Setup {
        Setup {
            listen: "127.0.0.1:0".into(),
            database: backend.database(dir),
            tokens,
            downstream: downstream.into(),
            timeout_ms: 1000,
            key_retention_secs: 86_400,
            supports_lookup: true,
            reconcile: true,
            dispatch_lease_ms: None,
            dispatch_concurrency: None,
            top_level: String::new(),
            erp_extra: String::new(),
            tables: String::new(),
        }
    }

    /// The configuration file's text.
    pub fn toml(&self) -> String {
        let mut text = format!(
            "listen = \"{}\"\ndatabase = '{}'\n",
            self.listen,
            match &self.database {
                Location::Sqlite(path) => path.display().to_string(),
                Location::Postgres(url) => url.clone(),
            }
        );
        if self.reconcile {
            text.push_str("reconcile_interval_ms = 100\n");
        } else {
            text.push_str("reconcile_interval_ms = 86400000\nreconcile_batch = 0\n");
        }
        if let Some(lease) = self.dispatch_lease_ms {
            text.push_str(&format!("dispatch_lease_ms = {lease}\n"));
        }
        if let Some(n) = self.dispatch_concurrency {
            text.push_str(&format!("dispatch_concurrency = {n}\n"));
        }
        text.push_str(&self.top_level);
        for t in &self.tokens {
            text.push_str(&format!(
                "[[tokens]]\nname = \"{}\"\ntoken_sha256 = \"{}\"\nrole = \"{}\"\ntenants = {}\n",
                t.name,
                token_sha256(t.secret),
                t.role,
                t.tenants
            ));
            if !t.connectors.is_empty() {
                text.push_str(&format!("connectors = {}\n", t.connectors));
            }
        }
        text.push_str(&format!(
            "[[connectors]]\nname = \"erp\"\nbase_url = \"{}\"\nsupports_idempotency = true\n\
             supports_lookup = {}\nkey_retention_secs = {}\ntimeout_ms = {}\n\
             operations = {{ \"purchase_order.create\" = \"purchase-orders\", \
             \"inventory.reserve\" = \"inventory-reservations\", \
             \"payment.initiate\" = \"payments\" }}\n",
            self.downstream, self.supports_lookup, self.key_retention_secs, self.timeout_ms
        ));
        text.push_str(&self.erp_extra);
        text.push_str(&self.tables);
        text
    }
}

/// The sandbox downstream on a loopback port.
pub struct Sandbox {
    pub state: SandboxState,
    pub addr: SocketAddr,
    pub url: String,
    _stop: oneshot::Sender<()>,
}

/// A sandbox with `faults`, sending receipts to `webhook` if given, its random choices
/// seeded with `seed`.
pub async fn sandbox(faults: &str, webhook: Option<WebhookTarget>, seed: Option<u64>) -> Sandbox {
    let faults: FaultSpec = faults.parse().expect("the test's faults parse");
    let options = SandboxOptions {
        seed,
        ..SandboxOptions::default()
    };
    let state = SandboxState::with_options(faults, webhook, options);
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind the sandbox");
    let addr = listener.local_addr().expect("the sandbox's address");
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(sandbox::run(listener, state.clone(), async {
        let _ = stopped.await;
    }));
    Sandbox {
        state,
        addr,
        url: format!("http://{addr}"),
        _stop: stop,
    }
}

/// The coordinator serving on a listener of the test's.
pub struct Coordinator {
    pub addr: SocketAddr,
    pub base: String,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<anyhow::Result<()>>>,
}

impl Coordinator {
    /// Bind `setup.listen` and serve there.
    pub async fn start(setup: &Setup) -> Coordinator {
        let listener = TcpListener::bind(setup.listen.as_str())
            .await
            .expect("bind the coordinator");
        Coordinator::serve(listener, setup)
    }

    /// Serve on `listener` (bound earlier when its address had to be known first, for a
    /// sandbox's webhook).
    pub fn serve(listener: TcpListener, setup: &Setup) -> Coordinator {
        let config = Config::parse(&setup.toml(), "test").expect("the test configuration");
        let addr = listener.local_addr().expect("the coordinator's address");
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(run(listener, config, async {
            let _ = stopped.await;
        }));
        Coordinator {
            addr,
            base: format!("http://{addr}"),
            stop: Some(stop),
            task: Some(task),
        }
    }

    /// Ask for a graceful shutdown and wait for it: what it returned.
    pub async fn shut_down(mut self) -> anyhow::Result<()> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match self.task.take() {
            Some(task) => task.await.expect("the coordinator's task"),
            None => Ok(()),
        }
    }
}
