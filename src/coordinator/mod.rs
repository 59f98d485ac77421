//! The coordinator: the HTTP service that owns intents, attempts, the action boundary, the
//! retry budget, outbox dispatch, reconciliation, operator commands and the audit trail.
//!
//! `run(listener, config, shutdown)` serves until `shutdown` resolves, then stops accepting,
//! lets in-flight requests and writes finish, and returns. `router(state)` builds the API
//! without a socket, for tests.

pub mod auth;
pub mod charts;
pub mod config;
pub mod connector;
pub mod db;
pub mod dispatcher;
pub mod error;
pub mod events;
pub mod ingest;
pub mod operator;
pub mod ops;
pub mod reconciler;
pub mod whoami;

use std::future::Future;
use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::extract::DefaultBodyLimit;
use tokio::net::TcpListener;
use tokio::sync::{Notify, watch};

pub use config::{Config, ConfigError, EXAMPLE_CONFIG, token_sha256};
use db::Db;

/// Shared state of one coordinator.
#[derive(Clone)]
pub struct AppState {
    pub config: Arc<Config>,
    pub db: Db,
    pub http: reqwest::Client,
    /// Woken when a dispatch is enqueued.
    pub dispatch_wake: Arc<Notify>,
    /// Woken when an intent may need a lookup.
    pub reconcile_wake: Arc<Notify>,
    /// Woken after every write that appends events.
    pub events_wake: Arc<Notify>,
    /// Becomes true when the coordinator is shutting down.
    pub stopping: watch::Receiver<bool>,
    /// A name for this process, for outbox claims.
    pub worker: Arc<str>,
    /// The dashboard's in-memory metric index (`charts`).
    pub metrics: charts::Shared,
    /// False while the index loads at start; requests wait for it before taking a read
    /// connection.
    pub metrics_ready: Arc<watch::Sender<bool>>,
}

impl AppState {
    pub fn new(
        config: Config,
        stopping: watch::Receiver<bool>,
    ) -> Result<AppState, crate::store::StoreError> {
        let db = Db::open(&config.database, config.durability)?;
        let http = reqwest::Client::builder()
            .pool_max_idle_per_host(64)
            .build()
            .map_err(|e| {
                crate::store::StoreError::Unavailable(format!("cannot build the HTTP client: {e}"))
            })?;
        Ok(AppState {
            config: Arc::new(config),
            db,
            http,
            dispatch_wake: Arc::new(Notify::new()),
            reconcile_wake: Arc::new(Notify::new()),
            events_wake: Arc::new(Notify::new()),
            stopping,
            worker: Arc::from(format!(
                "coordinator-{}-{}",
                std::process::id(),
                entropy() as u32
            )),
            metrics: charts::Shared::default(),
            metrics_ready: Arc::new(watch::Sender::new(true)),
        })
    }
}

/// The whole API.
pub fn router(state: AppState) -> Router {
    let limit = state.config.max_body_bytes;
    Router::new()
        .merge(ingest::routes())
        .merge(operator::routes())
        .merge(charts::routes())
        .merge(events::routes())
        .merge(ops::routes())
        .merge(whoami::routes())
        .layer(DefaultBodyLimit::max(limit))
        .with_state(state)
}

/// Serve the coordinator on `listener` until `shutdown` resolves; the dispatcher and the
/// reconciler run beside the API and stop with it.
pub async fn run(
    listener: TcpListener,
    config: Config,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let (stop_tx, stop_rx) = watch::channel(false);
    let state = AppState::new(config, stop_rx)?;
    let dispatcher = tokio::spawn(dispatcher::run(state.clone()));
    let reconciler = tokio::spawn(reconciler::run(state.clone()));
    charts::warm_up(&state);
    tracing::info!(addr = %listener.local_addr()?, "coordinator listening");
    let app = router(state.clone());
    let mut stopping = state.stopping.clone();
    let serve = axum::serve(listener, app).with_graceful_shutdown(async move {
        let _ = stopping.wait_for(|s| *s).await;
    });
    let serve = tokio::spawn(async move { serve.await });
    shutdown.await;
    tracing::info!("coordinator stopping");
    let _ = stop_tx.send(true);
    state.dispatch_wake.notify_waiters();
    state.reconcile_wake.notify_waiters();
    state.events_wake.notify_waiters();
    serve.await??;
    dispatcher.await?;
    reconciler.await?;
    Ok(())
}

/// Unix time now, in milliseconds.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// 128 bits of entropy for ids: the standard library's randomly keyed hasher over a counter.
/// Ids need uniqueness, not secrecy.
pub fn entropy() -> u128 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let state = std::collections::hash_map::RandomState::new();
    let mut a = state.build_hasher();
    a.write_u64(n);
    let mut b = state.build_hasher();
    b.write_u64(n ^ 0x9E37_79B9_7F4A_7C15);
    (u128::from(a.finish()) << 64) | u128::from(b.finish())
}
