//! One simulated world: the real coordinator (its HTTP handlers, its core, its SQLite store
//! in a temporary file) on a manual clock and seeded ids, a simulated downstream, and what
//! the participants know. Each step runs to completion before the next begins, so a world
//! is the same for the same seed; concurrency is the steps' interleaving.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Body;
use std::future::Future;

use axum::http::{Method, Request};
use serde_json::Value;
use tokio::sync::watch;
use tower::Service;

use super::dice::Dice;
use super::downstream::{self, Faults, Shared};
use super::history::History;
use crate::clock::{ManualClock, SeededEntropy, SharedEntropy};
use crate::coordinator::core::dispatch::SendResult;
use crate::coordinator::dispatcher::SendSlots;
use crate::coordinator::{AppState, Config, router, token_sha256};
use crate::domain::{ConsequenceTier, IntentId};
use crate::store::{ClaimedRow, Store};
use crate::wire::ScopeBody;

/// When every world's clock starts: 2026-01-01T00:00:00Z.
pub const EPOCH_MS: u64 = 1_767_225_600_000;

/// The tokens of a world: name, secret, role, tenants, connectors.
pub const TOKENS: &[(&str, &str, &str, &str, &str)] = &[
    ("agent-acme", "sim-agent-acme", "agent", r#"["acme"]"#, ""),
    (
        "agent-globex",
        "sim-agent-globex",
        "agent",
        r#"["globex"]"#,
        "",
    ),
    ("engineer", "sim-engineer", "engineer", r#"["*"]"#, ""),
    ("approver", "sim-approver", "approver", r#"["*"]"#, ""),
    (
        "erp-hook",
        "sim-erp-hook",
        "connector",
        r#"["*"]"#,
        r#"["erp"]"#,
    ),
    (
        "erp-hook-acme",
        "sim-erp-hook-acme",
        "connector",
        r#"["acme"]"#,
        r#"["erp"]"#,
    ),
    (
        "bank-hook",
        "sim-bank-hook",
        "connector",
        r#"["*"]"#,
        r#"["bank"]"#,
    ),
    (
        "viewer-globex",
        "sim-viewer-globex",
        "viewer",
        r#"["globex"]"#,
        "",
    ),
];

/// The secret of the token named `name`.
pub fn secret(name: &str) -> &'static str {
    TOKENS.iter().find(|t| t.0 == name).map_or("", |t| t.1)
}

/// The tenants of the world and the agent token of each.
pub const TENANTS: &[(&str, &str)] = &[("acme", "agent-acme"), ("globex", "agent-globex")];

/// The stream [`Setup::resumes`] is dealt from: the first past those in use under which
/// none of the regression seeds of the time resumes, so each replays the very history that
/// found its bug (two of them would resume under stream 5, and one then no longer found it).
const RESUMES_STREAM: u64 = 131;

/// How a world's coordinator and downstream are set up, dealt from its seed.
#[derive(Debug, Clone, PartialEq)]
pub struct Setup {
    pub faults: Faults,
    /// What the connector declares it keeps keys for.
    pub declared_retention_secs: u64,
    pub supports_lookup: bool,
    /// The connector's owner vouches that a bare overload answer was never applied.
    pub overload_means_not_applied: bool,
    pub timeout_ms: u64,
    pub lease_ms: u64,
    /// A dispatch request claims the send it plans in its own write, as a coordinator does
    /// while a send slot is free; otherwise only the dispatcher's claims send.
    pub claim_in_request: bool,
    /// The engineer resumes pauses as well as applying them. Dealt from a stream of its
    /// own ([`RESUMES_STREAM`]), in half the worlds: the others run as they did when the
    /// engineer's pauses were never remembered, and so never resumed.
    pub resumes: bool,
}

impl Setup {
    pub fn deal(seed: u64) -> Setup {
        let mut dice = Dice::for_step(seed, u64::MAX, 0);
        let mut faults = Faults::deal(&mut dice);
        // Dealt from a stream of its own, in a quarter of the worlds, so most worlds (and
        // the regression seeds among them) are the same as before it was added.
        let mut later = Dice::for_step(seed, u64::MAX, 2);
        if later.chance(0.25) {
            faults.see_other_after_commit = later.between(1, 33) as f64 / 100.0;
        }
        // The same for a downstream that answers from the wrong record, in a fifth of the
        // others: the faults dealt later never stack, so a world dealt one (and the seed
        // that found a bug with it) stays as it was.
        let mut lying = Dice::for_step(seed, u64::MAX, 3);
        if faults.see_other_after_commit == 0.0 && lying.chance(0.2) {
            faults.wrong_record = lying.between(1, 33) as f64 / 100.0;
            // In half of those the answers name their record's key, as the sandbox's do:
            // a wrong record's answer then names another key, and proves nothing for that.
            faults.names_keys = Dice::for_step(seed, u64::MAX, 4).chance(0.5);
        }
        let declared_retention_secs = *dice.pick(&[30, 120, 86_400]).unwrap_or(&86_400);
        // Most downstreams keep keys as long as they say (or longer); some forget early or
        // ignore keys, and then duplicates must be shown, not prevented.
        let honesty = dice.weighted(&[70, 18, 6, 6]);
        faults.retention_ms = match honesty {
            0 => Some(declared_retention_secs * 1000),
            1 => None,
            2 => Some(declared_retention_secs * 1000 / 4),
            _ => Some(declared_retention_secs * 1000),
        };
        faults.ignore_keys = honesty == 3;
        let overload_means_not_applied = dice.chance(0.2);
        let timeout_ms = 1_000;
        Setup {
            faults,
            declared_retention_secs,
            supports_lookup: dice.chance(0.85),
            overload_means_not_applied,
            timeout_ms,
            lease_ms: *dice.pick(&[3_000, 5_000, 20_000]).unwrap_or(&5_000),
            claim_in_request: dice.chance(0.5),
            resumes: Dice::for_step(seed, u64::MAX, RESUMES_STREAM).chance(0.5),
        }
    }

    /// Whether the connector is configured to take bare overload answers as "not applied"
    /// in front of a downstream that applies and then answers so: by its operator's word
    /// the coordinator believes nothing happened, and can neither see nor guard that effect.
    pub fn trusts_a_lying_overload(&self) -> bool {
        self.overload_means_not_applied && self.faults.bare_503_after_commit > 0.0
    }

    /// Whether the downstream keeps every promise its connector's configuration makes.
    pub fn downstream_is_honest(&self) -> bool {
        let f = &self.faults;
        !f.ignore_keys
            && f.retention_ms
                .is_none_or(|r| r >= self.declared_retention_secs * 1000)
            && !self.trusts_a_lying_overload()
    }

    fn config_text(&self, database: &std::path::Path) -> String {
        let mut text = format!(
            "listen = \"127.0.0.1:0\"\ndatabase = '{}'\ndurability = \"process_crash\"\n\
             dispatch_lease_ms = {}\n",
            database.display(),
            self.lease_ms
        );
        for (name, secret, role, tenants, connectors) in TOKENS {
            text.push_str(&format!(
                "[[tokens]]\nname = \"{name}\"\ntoken_sha256 = \"{}\"\nrole = \"{role}\"\ntenants = {tenants}\n",
                token_sha256(secret)
            ));
            if !connectors.is_empty() {
                text.push_str(&format!("connectors = {connectors}\n"));
            }
        }
        for name in ["erp", "bank"] {
            text.push_str(&format!(
                "[[connectors]]\nname = \"{name}\"\nbase_url = \"http://127.0.0.1:9\"\n\
                 supports_idempotency = true\nsupports_lookup = {}\nkey_retention_secs = {}\n\
                 timeout_ms = {}\noverload_means_not_applied = {}\n\
                 operations = {{ \"purchase_order.create\" = \"purchase-orders\", \
                 \"inventory.reserve\" = \"inventory-reservations\", \
                 \"payment.initiate\" = \"payments\" }}\n",
                self.supports_lookup,
                self.declared_retention_secs,
                self.timeout_ms,
                self.overload_means_not_applied
            ));
        }
        text
    }
}

/// An order an agent placed, as the agent knows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Order {
    pub tenant: &'static str,
    pub agent: &'static str,
    pub caller_key: String,
    /// The amount, as the canonical number.
    pub amount: u64,
    pub operation: &'static str,
    pub consequence: ConsequenceTier,
    /// The intent, once the agent heard an answer naming it.
    pub id: Option<IntentId>,
    pub action_key: Option<String>,
    /// How far the agent took it: 0 created, 1 authorised, 2 dispatch asked for.
    pub stage: u8,
}

impl Order {
    /// The order's arguments, its amount in Persian digits or in ASCII: one canonical form
    /// either way.
    pub fn args(&self, persian: bool) -> Value {
        let amount = if persian {
            Value::String(crate::i18n::digits::to_persian_digits(
                &self.amount.to_string(),
            ))
        } else {
            Value::from(self.amount)
        };
        serde_json::json!({"item": "A4 paper", "qty": 12, "amount": amount})
    }
}

/// A send whose answer has not been recorded yet.
#[derive(Debug, Clone)]
pub struct InTransit {
    pub row: ClaimedRow,
    pub result: SendResult,
    /// Whether the answer, once recorded, tells the coordinator for certain what the send
    /// did.
    pub definitive: bool,
    /// The coordinator process that sent it.
    pub incarnation: u32,
}

/// A violated invariant.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Violation {
    pub name: &'static str,
    pub step: u64,
    pub detail: String,
}

/// One world.
pub struct World {
    pub seed: u64,
    pub setup: Setup,
    pub rt: tokio::runtime::Runtime,
    pub dir: tempfile::TempDir,
    pub config: Config,
    pub clock: ManualClock,
    pub entropy: SharedEntropy,
    pub downstream: Shared,
    pub state: AppState,
    router: Router,
    _stop: watch::Sender<bool>,
    /// A read connection of the invariants' own.
    pub reader: Store,
    pub incarnation: u32,
    pub orders: Vec<Order>,
    /// Intents whose creation was answered to an agent: each must survive every crash.
    pub answered: BTreeSet<String>,
    pub in_transit: Vec<InTransit>,
    /// Pauses applied, as the engineer knows them: the command id and its scope.
    pub pauses: Vec<(String, ScopeBody)>,
    /// Receipts the coordinator acknowledged: intent id and downstream id.
    pub evidence: Vec<(String, String)>,
    pub history: History,
    pub violations: Vec<Violation>,
    /// How far the invariants have read.
    pub checked: super::invariants::Checked,
    pub step: u64,
    pub commands: u64,
}

impl World {
    /// A fresh world for `seed`.
    pub fn new(seed: u64) -> anyhow::Result<World> {
        let setup = Setup::deal(seed);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let dir = tempfile::tempdir()?;
        let database = dir.path().join("world.sqlite");
        let config = Config::parse(&setup.config_text(&database), "the simulated world")?;
        let clock = ManualClock::new(EPOCH_MS);
        let entropy: SharedEntropy = Arc::new(SeededEntropy::new(seed));
        let downstream = Shared {
            world: Arc::new(Mutex::new(downstream::World::new(setup.faults.clone()))),
            clock: clock.clone(),
        };
        let (state, router, stop) = start(&rt, &setup, &config, &clock, &entropy, &downstream, 0)?;
        let reader = Store::open(&database)?;
        Ok(World {
            seed,
            setup,
            rt,
            dir,
            config,
            clock,
            entropy,
            downstream,
            state,
            router,
            _stop: stop,
            reader,
            incarnation: 0,
            orders: Vec::new(),
            answered: BTreeSet::new(),
            in_transit: Vec::new(),
            pauses: Vec::new(),
            evidence: Vec::new(),
            history: History::default(),
            violations: Vec::new(),
            checked: Default::default(),
            step: 0,
            commands: 0,
        })
    }

    pub fn now(&self) -> u64 {
        use crate::clock::Clock;
        self.clock.now_ms()
    }

    /// The coordinator process dies: everything not committed is gone, and a new process
    /// starts on the same database. Sends in transit are lost, unless `frozen`: then their
    /// process was only stopped and records them later under its old claims.
    pub fn crash(&mut self, frozen: bool) -> anyhow::Result<()> {
        if !frozen {
            self.in_transit.clear();
        }
        self.incarnation += 1;
        let (state, router, stop) = start(
            &self.rt,
            &self.setup,
            &self.config,
            &self.clock,
            &self.entropy,
            &self.downstream,
            self.incarnation,
        )?;
        // The old process's handles go with it.
        self.state = state;
        self.router = router;
        self._stop = stop;
        Ok(())
    }

    /// Call the API as `token` and read the answer: status, JSON body, and whether the
    /// answer was a replay.
    pub fn call(
        &mut self,
        method: Method,
        path: &str,
        token: &str,
        headers: &[(&str, &str)],
        body: Option<&Value>,
    ) -> (u16, Value, bool) {
        let Some(request) = request(method, path, token, headers, body) else {
            return (0, Value::Null, false);
        };
        let mut service = self.router.clone();
        self.rt.block_on(async move {
            let Ok(response) = service.call(request).await;
            let status = response.status().as_u16();
            let replayed = response
                .headers()
                .get("idempotent-replayed")
                .is_some_and(|v| v == "true");
            let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
                .await
                .unwrap_or_default();
            let value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            (status, value, replayed)
        })
    }

    /// Call the API and hang up as soon as the request is on its way: the handler runs
    /// until it first waits (for the store, typically) and is dropped there. Whatever it
    /// handed the store's writer is then let finish, so the next step sees the same store
    /// whatever the threads did.
    pub fn call_and_hang_up(
        &mut self,
        method: Method,
        path: &str,
        token: &str,
        headers: &[(&str, &str)],
        body: Option<&Value>,
    ) {
        let Some(request) = request(method, path, token, headers, body) else {
            return;
        };
        let mut service = self.router.clone();
        {
            let _inside = self.rt.enter();
            let mut call = std::pin::pin!(service.call(request));
            let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
            let _ = call.as_mut().poll(&mut cx);
        }
        let _ = self.write(|_| Ok(()));
    }

    /// Run a store step of the coordinator's, as its writer runs it.
    pub fn write<T: Send + 'static>(
        &self,
        f: impl Fn(&mut Store) -> Result<T, crate::store::StoreError> + Send + 'static,
    ) -> Result<T, crate::store::StoreError> {
        self.rt.block_on(self.state.db.write(f))
    }

    /// Record a violation found at this step.
    pub fn violate(&mut self, name: &'static str, detail: String) {
        // A broken promise stays broken: checked after every step, it is reported once.
        if self
            .violations
            .iter()
            .any(|v| v.name == name && v.detail == detail)
        {
            return;
        }
        self.history.note(format!("VIOLATION {name}: {detail}"));
        self.violations.push(Violation {
            name,
            step: self.step,
            detail,
        });
    }

    /// The dice of this step for `stream`.
    pub fn dice(&self, stream: u64) -> Dice {
        Dice::for_step(self.seed, self.step, stream)
    }
}

/// A request as a client sends it.
fn request(
    method: Method,
    path: &str,
    token: &str,
    headers: &[(&str, &str)],
    body: Option<&Value>,
) -> Option<Request<Body>> {
    let mut request = Request::builder()
        .method(method)
        .uri(path)
        .header("authorization", format!("Bearer {}", secret(token)));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let body = match body {
        Some(b) => {
            request = request.header("content-type", "application/json");
            Body::from(b.to_string())
        }
        None => Body::empty(),
    };
    request.body(body).ok()
}

/// Start one coordinator process of the world.
fn start(
    rt: &tokio::runtime::Runtime,
    setup: &Setup,
    config: &Config,
    clock: &ManualClock,
    entropy: &SharedEntropy,
    downstream: &Shared,
    incarnation: u32,
) -> anyhow::Result<(AppState, Router, watch::Sender<bool>)> {
    let (stop, stopping) = watch::channel(false);
    let _guard = rt.enter();
    let mut state = AppState::with_sources(
        config.clone(),
        stopping,
        Arc::new(clock.clone()),
        entropy.clone(),
    )?;
    let parts = state.parts_mut();
    parts.downstream = Arc::new(downstream.clone());
    parts.worker = Arc::from(format!("sim-coordinator-{incarnation}"));
    if setup.claim_in_request {
        parts.send_slots = Arc::new(SendSlots::handing_over(config.dispatch_concurrency));
    }
    let router = router(state.clone());
    Ok((state, router, stop))
}
