//! How the HTTP servers (the coordinator's and the sandbox's) stop. What asks them to:
//! Ctrl-C (SIGINT) and, on Unix, SIGTERM — what a service manager, a container runtime or
//! `kill` sends. Both drain the same way: no new connections, in-flight requests finish
//! (for a grace period), the dispatcher and reconciler stop between steps, the store closes.

use std::time::Duration;

use tokio::task::JoinSet;

/// Resolves when the process is asked to stop.
pub async fn stop_requested() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut terminate) => {
                tokio::select! {
                    _ = ctrl_c() => {}
                    _ = terminate.recv() => tracing::info!("SIGTERM received"),
                }
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot wait for SIGTERM; only Ctrl-C stops");
                ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    ctrl_c().await;
}

async fn ctrl_c() {
    if let Err(e) = tokio::signal::ctrl_c().await {
        tracing::error!(error = %e, "cannot wait for Ctrl-C; stopping");
    }
}

/// Wait for every connection task to end, aborting those still open after `grace`.
pub async fn drain(connections: &mut JoinSet<()>, grace: Duration) {
    let drained = tokio::time::timeout(grace, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::warn!(
            open = connections.len(),
            "aborting connections still open after the grace period"
        );
        connections.shutdown().await;
    }
}
