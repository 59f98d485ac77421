//! What asks a server to stop: Ctrl-C (SIGINT) and, on Unix, SIGTERM — what a service
//! manager, a container runtime or `kill` sends. Both drain the same way: in-flight requests
//! finish, the dispatcher and reconciler stop between steps, the store closes.

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
