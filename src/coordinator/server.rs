//! The coordinator's accept loop: at most `max_connections` connections (one more is
//! answered 503 with `Retry-After` and closed, before a byte is read), and each request's
//! headers must arrive within `header_read_timeout_ms` of its first byte, so sockets that
//! send a byte a minute hold nothing for long. On shutdown it stops accepting, lets
//! in-flight requests finish (event streams end themselves) and aborts what is left after a
//! grace period. With a TLS acceptor every connection is HTTPS: its handshake must finish
//! within the header timeout too.

use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;

use super::config::Limits;
use crate::wire::{ErrorBody, ErrorDetail};

/// How long shutdown waits for in-flight requests before aborting them.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);
/// Pause after a failed accept (out of file descriptors, say) before trying again.
const ACCEPT_ERROR_PAUSE: Duration = Duration::from_millis(100);
/// Handshakes run at once for connections past the cap that are refused over TLS.
const TLS_REFUSALS: usize = 16;
/// How long a refused connection is given to send its request's head and take its 503.
const REFUSAL_WRITE: Duration = Duration::from_secs(1);

/// Serve `app` on `listener` until `stopping` turns true.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: &Limits,
    tls: Option<TlsAcceptor>,
    mut stopping: watch::Receiver<bool>,
) -> std::io::Result<()> {
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let tls_refusals = Arc::new(Semaphore::new(TLS_REFUSALS));
    let header_timeout = Duration::from_millis(limits.header_read_timeout_ms);
    let mut connections = JoinSet::new();
    let for_connections = stopping.clone();
    loop {
        tokio::select! {
            () = stopped(&mut stopping) => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let _ = stream.set_nodelay(true);
                    let slot = slots.clone().try_acquire_owned().ok();
                    let (app, stop, tls) = (app.clone(), for_connections.clone(), tls.clone());
                    let refusals = tls_refusals.clone();
                    connections.spawn(async move {
                        match (slot, tls) {
                            (Some(slot), None) => {
                                connection(stream, app, header_timeout, stop).await;
                                drop(slot);
                            }
                            (Some(slot), Some(tls)) => {
                                if let Some(stream) = handshake(&tls, stream, header_timeout).await {
                                    connection(stream, app, header_timeout, stop).await;
                                }
                                drop(slot);
                            }
                            (None, None) => refuse(stream).await,
                            // A refused HTTPS client is given its 503 inside TLS, briefly,
                            // while few handshakes for refusals run; past those it is closed
                            // (a handshake costs the server a key operation).
                            (None, Some(tls)) => {
                                let Ok(_turn) = refusals.clone().try_acquire_owned() else {
                                    return;
                                };
                                if let Some(stream) = handshake(&tls, stream, REFUSAL_WRITE).await {
                                    refuse(stream).await;
                                }
                            }
                        }
                    });
                }
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(ACCEPT_ERROR_PAUSE).await;
                }
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    drop(listener);
    crate::serving::drain(&mut connections, SHUTDOWN_GRACE).await;
    Ok(())
}

/// The TLS handshake of one connection, given `within` to finish.
async fn handshake(
    tls: &TlsAcceptor,
    stream: TcpStream,
    within: Duration,
) -> Option<tokio_rustls::server::TlsStream<TcpStream>> {
    match tokio::time::timeout(within, tls.accept(stream)).await {
        Ok(Ok(stream)) => Some(stream),
        Ok(Err(e)) => {
            tracing::debug!(error = %e, "a TLS handshake failed");
            None
        }
        Err(_) => None,
    }
}

async fn connection<S>(
    stream: S,
    app: Router,
    header_timeout: Duration,
    mut stopping: watch::Receiver<bool>,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let mut builder = http1::Builder::new();
    builder.timer(TokioTimer::new());
    builder.header_read_timeout(header_timeout);
    let service = TowerToHyperService::new(app);
    let mut served = pin!(builder.serve_connection(TokioIo::new(stream), service));
    let mut draining = false;
    loop {
        tokio::select! {
            result = served.as_mut() => {
                if let Err(e) = result {
                    tracing::debug!(error = %e, "connection ended with an error");
                }
                return;
            }
            () = stopped(&mut stopping), if !draining => {
                draining = true;
                served.as_mut().graceful_shutdown();
            }
        }
    }
}

/// Resolves once the coordinator is stopping (or its state is gone).
async fn stopped(stopping: &mut watch::Receiver<bool>) {
    let _ = stopping.wait_for(|s| *s).await;
}

/// Answer a connection past the limit with 503 and close it. The refused connection is
/// not counted: an attacker opening many gets each one answered within a second.
async fn refuse<S: AsyncRead + AsyncWrite + Unpin>(mut stream: S) {
    let body = serde_json::to_string(&ErrorBody {
        error: ErrorDetail {
            code: "overloaded".into(),
            message: "the coordinator has as many connections open as it takes; retry shortly"
                .into(),
            fields: Default::default(),
        },
    })
    .unwrap_or_default();
    let response = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    // The request's head is read first (a little of it, briefly): a client answered
    // before it has sent its request takes the answer for a broken connection.
    let _ = tokio::time::timeout(REFUSAL_WRITE, async {
        let mut head = Vec::with_capacity(1024);
        let mut chunk = [0u8; 1024];
        while head.len() < 8192 && !head.windows(4).any(|w| w == b"\r\n\r\n") {
            match stream.read(&mut chunk).await? {
                0 => break,
                n => head.extend_from_slice(&chunk[..n]),
            }
        }
        stream.write_all(response.as_bytes()).await?;
        stream.shutdown().await
    })
    .await;
}
