//! The sandbox's HTTP server: the router and an accept loop that owns each TCP
//! connection, so faults can act on the connection itself.
//!
//! `refuse` closes a connection right after accepting it, before reading a byte.
//! `drop_after_commit` fires the connection's [`ConnectionKill`], which a handler finds
//! in its request extensions; the connection task then drops the connection without
//! writing the response. On shutdown the loop stops accepting, asks every connection
//! to finish its in-flight request and close, and aborts what is left after a grace
//! period.

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use axum::routing::get;
use axum::{Extension, Router};
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, watch};
use tokio::task::JoinSet;
use tower::Layer;

use super::handlers;
use super::state::SandboxState;

/// How long shutdown waits for in-flight requests before aborting them.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(3);
/// Pause after a failed accept (e.g. out of file descriptors) before trying again.
const ACCEPT_ERROR_PAUSE: Duration = Duration::from_millis(100);

/// Lets a handler drop the TCP connection its request came on, without a response.
#[derive(Clone, Default)]
pub(crate) struct ConnectionKill(Arc<Notify>);

impl ConnectionKill {
    pub(crate) fn fire(&self) {
        // `notify_one` keeps a permit, so firing before the connection task waits is
        // not lost.
        self.0.notify_one();
    }

    async fn fired(&self) {
        self.0.notified().await;
    }
}

/// Every sandbox endpoint over `state`. Without [`run`]'s connection handle,
/// `drop_after_commit` cannot drop anything and the handler answers normally.
pub fn router(state: SandboxState) -> Router {
    Router::new()
        .route("/healthz", get(handlers::health))
        .route("/_sandbox/effects", get(handlers::effects))
        .route(
            "/_sandbox/faults",
            get(handlers::get_faults).post(handlers::set_faults),
        )
        .route("/{resource}", get(handlers::lookup).post(handlers::create))
        .fallback(handlers::no_route)
        .method_not_allowed_fallback(handlers::wrong_method)
        .with_state(state)
}

/// Serves the sandbox on `listener` until `shutdown` completes, then stops accepting,
/// lets in-flight requests finish for a short grace period, and returns.
pub async fn run(
    listener: TcpListener,
    state: SandboxState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let app = router(state.clone());
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut connections = JoinSet::new();
    let mut shutdown = pin!(shutdown);
    if let Ok(addr) = listener.local_addr() {
        tracing::info!(%addr, faults = %state.faults(), seed = state.seed(), "sandbox listening");
    }

    loop {
        tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    if state.roll(state.faults().refuse) {
                        tracing::debug!(%peer, "refusing connection");
                        drop(stream);
                        continue;
                    }
                    connections.spawn(serve_connection(stream, app.clone(), stop_rx.clone()));
                }
                Err(err) => {
                    tracing::warn!(error = %err, "accept failed");
                    tokio::time::sleep(ACCEPT_ERROR_PAUSE).await;
                }
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }

    drop(listener);
    // Receivers see the change, or the closed channel; either means "finish up".
    let _ = stop_tx.send(true);
    crate::serving::drain(&mut connections, SHUTDOWN_GRACE).await;
    tracing::info!("sandbox stopped");
    Ok(())
}

async fn serve_connection(stream: TcpStream, app: Router, mut stop: watch::Receiver<bool>) {
    let kill = ConnectionKill::default();
    let service = TowerToHyperService::new(Extension(kill.clone()).layer(app));
    let mut builder = http1::Builder::new();
    builder.timer(TokioTimer::new());
    let mut connection = pin!(builder.serve_connection(TokioIo::new(stream), service));
    let mut stopping = false;
    loop {
        tokio::select! {
            result = connection.as_mut() => {
                if let Err(err) = result {
                    tracing::debug!(error = %err, "connection ended with an error");
                }
                return;
            }
            () = kill.fired() => {
                // Dropping the connection closes the socket; no response is written.
                return;
            }
            _ = stop.changed(), if !stopping => {
                stopping = true;
                connection.as_mut().graceful_shutdown();
            }
        }
    }
}
