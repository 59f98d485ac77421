//! The coordinator: the HTTP service that owns intents, attempts, the action boundary, the
//! retry budget, outbox dispatch, reconciliation, operator commands and the audit trail.
//!
//! `run(listener, config, shutdown)` serves until `shutdown` resolves, then stops accepting,
//! lets in-flight requests and writes finish, and returns. `router(state)` builds the API
//! without a socket, for tests.

pub mod auth;
pub mod body;
pub mod charts;
pub mod config;
pub mod connector;
pub mod core;
pub mod create;
pub mod dispatcher;
pub mod error;
pub mod events;
pub mod feed;
pub mod health;
pub mod ingest;
pub mod limits;
pub mod operator;
pub mod ops;
pub mod policies;
pub mod prometheus;
pub mod reconciler;
pub mod revisit;
mod server;
pub mod upgrade;
pub mod whoami;

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::Router;
use axum::extract::DefaultBodyLimit;
use tokio::net::TcpListener;
use tokio::sync::{Notify, watch};

pub use config::{Config, ConfigError, EXAMPLE_CONFIG, token_sha256};

use self::connector::HttpDownstream;
use self::core::call::Downstream;
use crate::clock::{SharedClock, SharedEntropy, os_entropy, system_clock};
use crate::store::Db;

/// Shared state of one coordinator, behind one reference: every request clones it (axum
/// hands each handler and middleware its own), and one count to move is cheaper than one
/// for each of its parts.
#[derive(Clone)]
pub struct AppState(Arc<Parts>);

/// What [`AppState`] shares.
pub struct Parts {
    pub config: Arc<Config>,
    pub db: Db,
    /// Where sends and lookups go.
    pub downstream: Arc<dyn Downstream>,
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
    /// Where the coordinator reads the time.
    pub clock: SharedClock,
    /// Where ids and jitter come from.
    pub entropy: SharedEntropy,
    /// The dashboard's in-memory metric index (`charts`).
    pub metrics: charts::Shared,
    /// False while the index loads at start; requests wait for it before taking a read
    /// connection.
    pub metrics_ready: Arc<watch::Sender<bool>>,
    /// The places for open event streams.
    pub streams: Arc<limits::StreamSlots>,
    /// The background parts' states, for `/healthz`.
    pub health: Arc<health::Liveness>,
    /// The change feed's one follower, shared by every event stream.
    pub feed: Arc<feed::Feed>,
    /// The providers, releases and tools known to be seen (`revisit`).
    pub sighted: Arc<revisit::Sighted>,
    /// Moved on by every write that may request a cancellation, on the writer, before its
    /// statements run: a claim queued after that runs after it and its gate sees the
    /// request; a send claimed before is checked again just before it leaves
    /// (`dispatcher`).
    pub cancels: Arc<AtomicU64>,
    /// The dispatcher's send slots, which a dispatch request also takes for the send it
    /// claims in its own write.
    pub send_slots: Arc<dispatcher::SendSlots>,
}

impl AppState {
    /// State on the system's clock and entropy.
    pub fn new(
        config: Config,
        stopping: watch::Receiver<bool>,
    ) -> Result<AppState, crate::store::StoreError> {
        AppState::with_sources(config, stopping, system_clock(), os_entropy())
    }

    /// State that reads time from `clock` and draws ids from `entropy`.
    pub fn with_sources(
        config: Config,
        stopping: watch::Receiver<bool>,
        clock: SharedClock,
        entropy: SharedEntropy,
    ) -> Result<AppState, crate::store::StoreError> {
        let db = crate::store::open_db(&config.database, config.durability)?;
        db.limit_ingest(config.limits.max_queued_writes);
        let downstream = HttpDownstream::new(config.tls.ca_file.as_deref(), &config.connectors)
            .map_err(|e| {
                crate::store::StoreError::Unavailable(format!("cannot build the HTTP client: {e}"))
            })?;
        Ok(AppState(Arc::new(Parts {
            db,
            downstream: Arc::new(downstream),
            dispatch_wake: Arc::new(Notify::new()),
            reconcile_wake: Arc::new(Notify::new()),
            events_wake: Arc::new(Notify::new()),
            stopping,
            worker: Arc::from(format!(
                "coordinator-{}-{}",
                std::process::id(),
                entropy.next_u128() as u32
            )),
            clock,
            entropy,
            metrics: Arc::new(tokio::sync::Mutex::new(charts::Followed::new(
                crate::metrics::MetricIndex::with_releases(config.releases.clone()),
            ))),
            metrics_ready: Arc::new(watch::Sender::new(true)),
            streams: limits::StreamSlots::new(&config),
            health: Arc::default(),
            feed: Arc::default(),
            sighted: Arc::default(),
            cancels: Arc::default(),
            send_slots: Arc::new(dispatcher::SendSlots::new(config.dispatch_concurrency)),
            config: Arc::new(config),
        })))
    }

    /// The parts, to replace one before the state is first shared (the simulation gives
    /// each coordinator its own downstream and name).
    ///
    /// # Panics
    /// Once the state has been cloned.
    pub fn parts_mut(&mut self) -> &mut Parts {
        Arc::get_mut(&mut self.0)
            .expect("a coordinator's parts are replaced only before it is shared")
    }
}

impl std::ops::Deref for AppState {
    type Target = Parts;

    fn deref(&self) -> &Parts {
        &self.0
    }
}

impl AppState {
    /// What a write that may request a cancellation calls first, inside its job (see
    /// [`AppState::cancels`]).
    pub fn cancel_notice(&self) -> impl Fn() + Send + 'static {
        let cancels = self.cancels.clone();
        move || {
            cancels.fetch_add(1, Ordering::AcqRel);
        }
    }
}

/// The whole API.
pub fn router(state: AppState) -> Router {
    let limit = state.config.max_body_bytes;
    Router::new()
        .merge(create::routes())
        .merge(ingest::routes())
        .merge(operator::routes())
        .merge(charts::routes())
        .merge(events::routes())
        .merge(ops::routes())
        .merge(whoami::routes())
        .layer(DefaultBodyLimit::max(limit))
        .layer(axum::middleware::from_fn_with_state(
            limits::RequestLimits::new(&state.config),
            limits::limit,
        ))
        .with_state(state)
}

/// Serve the coordinator on `listener` until `shutdown` resolves; the dispatcher and the
/// reconciler run beside the API and stop with it.
pub async fn run(
    listener: TcpListener,
    config: Config,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    run_with(listener, config, system_clock(), os_entropy(), shutdown).await
}

/// [`run`] on the given clock and entropy.
pub async fn run_with(
    listener: TcpListener,
    config: Config,
    clock: SharedClock,
    entropy: SharedEntropy,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let (stop_tx, stop_rx) = watch::channel(false);
    // A certificate that cannot be used stops the start, before anything else runs.
    let tls = match (&config.tls.cert_file, &config.tls.key_file) {
        (Some(cert), Some(key)) => Some(crate::tls::acceptor(cert, key)?),
        _ => None,
    };
    let state = AppState::with_sources(config, stop_rx, clock, entropy)?;
    // What changed since the last start is in the audit before the first request is served.
    revisit::at_start(&state).await?;
    policies::at_start(&state).await?;
    // Each runs supervised: restarted when it panics, reported by `/healthz`.
    let dispatcher = spawn_part(&state, "dispatcher", dispatcher::run);
    let reconciler = spawn_part(&state, "reconciler", reconciler::run);
    charts::warm_up(&state);
    let follower = spawn_part(&state, charts::FOLLOWER_PART, charts::follow);
    let scheme = if tls.is_some() { "https" } else { "http" };
    tracing::info!(addr = %listener.local_addr()?, scheme, "coordinator listening");
    let app = router(state.clone());
    let (limits, stopping) = (state.config.limits.clone(), state.stopping.clone());
    let operators = match &state.config.operator_listen {
        // A router of its own: its request places are not the main port's.
        Some(addr) => {
            let app = router(state.clone());
            Some(operator_port(addr, app, &limits, tls.clone(), &stopping).await?)
        }
        None => None,
    };
    // Started once nothing of the start can fail, so that it never outlives a start that did.
    let upgrade = tokio::spawn(upgrade::move_older_arguments(
        state.db.clone(),
        state.stopping.clone(),
        upgrade::PACING,
    ));
    let serve =
        tokio::spawn(async move { server::serve(listener, app, &limits, tls, stopping).await });
    shutdown.await;
    tracing::info!("coordinator stopping");
    let _ = stop_tx.send(true);
    state.dispatch_wake.notify_waiters();
    state.reconcile_wake.notify_waiters();
    state.events_wake.notify_waiters();
    serve.await??;
    if let Some(operators) = operators {
        tokio::task::spawn_blocking(move || operators.join())
            .await?
            .map_err(|_| anyhow::anyhow!("the operators' port panicked"))??;
    }
    dispatcher.await?;
    reconciler.await?;
    follower.await?;
    if let Err(e) = upgrade.await {
        // Nothing depends on it but how fast a search is; the next start goes on.
        tracing::error!(error = %e, "moving older intents' arguments ended abnormally");
    }
    Ok(())
}

/// Run a background part supervised under `name`: a fresh run of `part` on the state,
/// restarted when it panics, its status in `/healthz`.
fn spawn_part<Fut>(
    state: &AppState,
    name: &'static str,
    part: impl Fn(AppState) -> Fut + Send + 'static,
) -> tokio::task::JoinHandle<()>
where
    Fut: Future<Output = ()> + Send + 'static,
{
    let (s, health, stopping) = (state.clone(), state.health.clone(), state.stopping.clone());
    tokio::spawn(health::supervised(health, name, stopping, move || {
        part(s.clone())
    }))
}

/// Serve `app` on `addr` too, from a thread with a runtime of its own: however many agents'
/// requests the main port's runtime has queued, and however many of its request places they
/// hold, a request here waits only for its own.
async fn operator_port(
    addr: &str,
    app: Router,
    limits: &config::Limits,
    tls: Option<tokio_rustls::TlsAcceptor>,
    stopping: &watch::Receiver<bool>,
) -> anyhow::Result<std::thread::JoinHandle<std::io::Result<()>>> {
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on operator_listen {addr}: {e}"))?;
    tracing::info!(addr = %listener.local_addr()?, "operators' port listening");
    let listener = listener.into_std()?;
    let (limits, stopping) = (limits.clone(), stopping.clone());
    let thread = std::thread::Builder::new()
        .name("operators-port".into())
        .spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            runtime.block_on(async move {
                let listener = TcpListener::from_std(listener)?;
                server::serve(listener, app, &limits, tls, stopping).await
            })
        })?;
    Ok(thread)
}
