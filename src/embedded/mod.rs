//! The embedded default: a coordinator, a sandbox downstream and a steady workload started
//! in-process on loopback ports, with the database in the user's data directory. The
//! console talks to it over the same HTTP API it would use against a remote coordinator.
//!
//! Two downstreams stand behind it: `erp`, a sandbox that deduplicates keys, can be looked
//! up and calls back with receipts, and `legacy-erp`, one that can do none of that and
//! sometimes loses a response, so some intents stay indeterminate until an operator
//! settles them. [`scene`] sets what the first minute shows.

pub mod scene;

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::clock::{Entropy, os_entropy, system_clock};
use crate::coordinator::config::{ConnectorConfig, Durability, TokenConfig};
use crate::coordinator::{Config, token_sha256};
use crate::domain::Role;
use crate::sandbox::{FaultSpec, SandboxState, WebhookTarget};
use crate::workload::DriverConfig;
use crate::workload::generator::LEGACY_CONNECTOR;

/// The faults the demo downstream runs with: enough lost responses, slow answers and
/// overload that some intents are amplified and some indeterminate at any moment.
pub const DEMO_FAULTS: &str = "drop_after_commit=0.06,delay_ms=2500@0.05,overload=0.12,retry_after_secs=1,refuse=0.02,redeliver=2";

/// The faults of the legacy downstream: it keeps no idempotency keys, its first response (the
/// scene's payment, sent before the workload starts) and one in ten after it are lost after
/// they commit, and one in twenty is slower than the timeout.
pub const LEGACY_FAULTS: &str =
    "drop_first=1,drop_after_commit=0.1,delay_ms=1500@0.05,ignore_keys=true";

/// The share of the workload's mutating work sent to the legacy downstream.
const LEGACY_SHARE: f64 = 0.05;

/// A running embedded default.
pub struct Embedded {
    pub coordinator_url: String,
    pub sandbox_url: String,
    /// An admin token made for this run; it lives only in memory.
    pub token: String,
    pub database: PathBuf,
    stop: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
}

/// The user's data directory for intentdesk.
pub fn default_data_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("XDG_DATA_HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir).join("intentdesk");
    }
    if let Some(home) = std::env::var_os("HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(home).join(".local/share/intentdesk");
    }
    PathBuf::from("intentdesk-data")
}

/// The embedded default's principals, each a fresh token that lives only in memory: the
/// console's admin, the workload's agents, the approver who approves what they create, and
/// the `erp` sandbox's webhooks.
#[derive(Debug, Clone)]
pub struct Tokens {
    pub admin: String,
    pub agent: String,
    pub approver: String,
}

/// A fresh random token: 32 hex characters.
fn fresh_token(entropy: &dyn Entropy) -> String {
    format!("{:032x}", entropy.next_u128())
}

impl Embedded {
    /// Start everything; `workload` runs the steady agents too.
    pub async fn start(data_dir: &Path, workload: bool) -> anyhow::Result<Embedded> {
        std::fs::create_dir_all(data_dir)
            .with_context(|| format!("cannot create {}", data_dir.display()))?;
        let database = data_dir.join("intentdesk.sqlite");
        let (clock, entropy) = (system_clock(), os_entropy());
        let token = fresh_token(&*entropy);
        let tokens = Tokens {
            admin: token.clone(),
            agent: fresh_token(&*entropy),
            approver: fresh_token(&*entropy),
        };
        let (stop, stopped) = watch::channel(false);
        let until_stopped = |mut rx: watch::Receiver<bool>| async move {
            let _ = rx.wait_for(|s| *s).await;
        };

        let coordinator_listener = TcpListener::bind("127.0.0.1:0").await?;
        let coordinator_url = format!("http://{}", coordinator_listener.local_addr()?);
        let mut tasks = Vec::new();
        let sandbox = |faults: &str, webhook: Option<WebhookTarget>| {
            let state = SandboxState::with_options(
                faults.parse::<FaultSpec>()?,
                webhook,
                crate::sandbox::SandboxOptions {
                    clock: clock.clone(),
                    ..crate::sandbox::SandboxOptions::default()
                },
            );
            anyhow::Ok(state)
        };
        // The `erp` sandbox speaks for its connector with a token of its own, which may
        // deliver receipts and nothing else. The legacy one never calls back.
        let connector_token = fresh_token(&*entropy);
        let webhook = WebhookTarget {
            url: format!("{coordinator_url}/v1/receipts/erp").parse()?,
            token: Some(connector_token.clone()),
        };
        let erp = sandbox(DEMO_FAULTS, Some(webhook))?;
        let legacy = sandbox(LEGACY_FAULTS, None)?;
        let mut urls = Vec::new();
        for (name, state) in [("erp", erp), (LEGACY_CONNECTOR, legacy)] {
            let listener = TcpListener::bind("127.0.0.1:0").await?;
            urls.push(format!("http://{}", listener.local_addr()?));
            let rx = stopped.clone();
            tasks.push(tokio::spawn(async move {
                if let Err(e) = crate::sandbox::run(listener, state, until_stopped(rx)).await {
                    tracing::error!(error = %e, sandbox = name, "an embedded sandbox stopped");
                }
            }));
        }
        let (sandbox_url, legacy_url) = (urls[0].clone(), urls[1].clone());

        let config = Config {
            listen: coordinator_url.clone(),
            operator_listen: None,
            database: database.clone().into(),
            durability: Durability::PowerLoss,
            tokens: vec![
                principal("embedded-admin", &tokens.admin, Role::Admin),
                principal("embedded-agents", &tokens.agent, Role::Agent),
                principal("embedded-approver", &tokens.approver, Role::Approver),
                TokenConfig {
                    connectors: vec!["erp".into()],
                    ..principal("embedded-erp-webhooks", &connector_token, Role::Connector)
                },
            ],
            connectors: vec![
                ConnectorConfig {
                    supports_idempotency: true,
                    supports_lookup: true,
                    ..demo_connector("erp", &sandbox_url)
                },
                // A system of record that keeps no keys and cannot be asked what it did: a
                // lost response can only be settled by an operator.
                ConnectorConfig {
                    supports_idempotency: false,
                    supports_lookup: false,
                    ..demo_connector(LEGACY_CONNECTOR, &legacy_url)
                },
            ],
            reconcile_interval_ms: 2_000,
            reconcile_batch: 200,
            dispatch_lease_ms: 30_000,
            dispatch_concurrency: 64,
            max_body_bytes: 262_144,
            limits: Default::default(),
            tls: Default::default(),
            policies: Vec::new(),
            tenant_policies: Default::default(),
            lookups: Default::default(),
            releases: Default::default(),
        };
        let rx = stopped.clone();
        let coordinator_clock = clock.clone();
        tasks.push(tokio::spawn(async move {
            if let Err(e) = crate::coordinator::run_with(
                coordinator_listener,
                config,
                coordinator_clock,
                entropy,
                until_stopped(rx),
            )
            .await
            {
                tracing::error!(error = %e, "the embedded coordinator stopped");
            }
        }));

        if workload {
            let mut driver = DriverConfig::steady(
                coordinator_url.parse()?,
                tokens.agent.clone(),
                clock.now_ms(),
                clock.clone(),
            );
            driver.approver_token = Some(tokens.approver.clone());
            driver.mix.legacy = LEGACY_SHARE;
            let (url, tokens) = (coordinator_url.clone(), tokens.clone());
            let rx = stopped.clone();
            tasks.push(tokio::spawn(async move {
                // The scene first, so its payment is the legacy downstream's first creation
                // (whose response is certain to be lost); then the steady agents.
                let stage = scene::stage(&url, &tokens, Duration::from_secs(30));
                tokio::select! {
                    staged = stage => {
                        if let Err(e) = staged {
                            tracing::warn!(error = %e, "the demo's opening scene was not set");
                        }
                    }
                    () = until_stopped(rx.clone()) => return,
                }
                if let Err(e) = crate::workload::drive(&driver, until_stopped(rx)).await {
                    tracing::error!(error = %e, "the embedded workload stopped");
                }
            }));
        }
        Ok(Embedded {
            coordinator_url,
            sandbox_url,
            token,
            database,
            stop,
            tasks,
        })
    }

    /// Stop everything and wait (bounded) for it to finish.
    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        for task in self.tasks {
            let _ = tokio::time::timeout(Duration::from_secs(5), task).await;
        }
    }
}

/// A token of the embedded default, for every tenant.
fn principal(name: &str, token: &str, role: Role) -> TokenConfig {
    TokenConfig {
        name: name.into(),
        token_sha256: token_sha256(token),
        role,
        tenants: vec!["*".into()],
        connectors: Vec::new(),
        may_approve_own: false,
    }
}

/// A connector of the demo over the sandbox at `base_url`, with the three operations the
/// sandbox knows.
fn demo_connector(name: &str, base_url: &str) -> ConnectorConfig {
    ConnectorConfig {
        name: name.into(),
        base_url: base_url.into(),
        supports_idempotency: true,
        key_retention_secs: 600,
        supports_lookup: true,
        timeout_ms: 1_000,
        overload_means_not_applied: false,
        idle_connection_ms: crate::coordinator::config::default_idle_connection_ms(),
        operations: [
            ("purchase_order.create", "purchase-orders"),
            ("inventory.reserve", "inventory-reservations"),
            ("payment.initiate", "payments"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect(),
    }
}
