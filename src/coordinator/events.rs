//! `GET /v1/events`: the store's change feed as server-sent events. Each event is
//! `id: <seq>`, `event: intent|attempt|command`, `data: <json payload>`.
//!
//! Resuming: the stream starts after the `Last-Event-ID` header (or `?after=<seq>`); without
//! either it starts from now. It wakes on `AppState::events_wake`, polls every second in
//! case a wake was missed, sends a keep-alive comment when idle, and ends when the
//! coordinator stops so a graceful shutdown is not held up by open streams.
//!
//! Tenant scope: an event is sent only when the caller may see its tenant; `command` events
//! carry no tenant and are sent only to unrestricted tokens. The ids of skipped events are
//! not sent, so a limited client resumes from its last visible event and loses nothing.
//!
//! The body is written directly as `text/event-stream` frames over a channel: the crate has
//! no stream-combinator dependency, and the framing is four lines.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use hyper::body::Frame;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::AppState;
use super::auth::Principal;
use super::error::ApiError;
use super::operator::params::{Params, RawQuery};
use crate::domain::Permission;
use crate::store::StoredEvent;
use crate::store::ops::*;

/// Events read from the store per pass.
const BATCH: u32 = 500;
/// The fallback poll, in case a wake was missed.
const POLL: Duration = Duration::from_secs(1);
/// An idle stream sends a comment this often, so proxies and clients see it is alive.
const KEEP_ALIVE: Duration = Duration::from_secs(15);
/// Frames buffered towards a slow client before the producer waits.
const BUFFER: usize = 64;

pub fn routes() -> Router<AppState> {
    Router::new().route("/v1/events", get(stream_events))
}

async fn stream_events(
    State(state): State<AppState>,
    principal: Principal,
    headers: HeaderMap,
    query: RawQuery,
) -> Result<Response, ApiError> {
    principal.require(Permission::Read, "read events")?;
    let slot = state.streams.take(&principal.name)?;
    let mut p = Params::new(query, &[&["after"]])?;
    let after = p.number::<i64>("after", 0, i64::MAX);
    p.finish()?;
    let resume = match headers
        .get("last-event-id")
        .map(|v| v.to_str().map(str::trim))
    {
        None | Some(Ok("")) => None,
        Some(Ok(raw)) => Some(raw.parse::<i64>().ok().filter(|n| *n >= 0).ok_or_else(|| {
            ApiError::fields(BTreeMap::from([(
                "Last-Event-ID".to_string(),
                "must be the id of an event this stream sent".to_string(),
            )]))
        })?),
        Some(Err(_)) => {
            return Err(ApiError::fields(BTreeMap::from([(
                "Last-Event-ID".to_string(),
                "must be visible ASCII".to_string(),
            )])));
        }
    };
    let start = match resume.or(after) {
        Some(seq) => seq,
        None => state.db.read(|s| s.last_event_seq()).await?,
    };
    let (tx, rx) = mpsc::channel(BUFFER);
    tokio::spawn(async move {
        pump(state, principal.tenants, start, tx).await;
        // The stream's places are given back when it ends (the client left, or the
        // coordinator stops).
        drop(slot);
    });
    let mut response = Body::new(SseBody { rx }).into_response();
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    Ok(response)
}

/// The response body: whatever the producer sends, until it hangs up.
struct SseBody {
    rx: mpsc::Receiver<Bytes>,
}

impl hyper::body::Body for SseBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.get_mut()
            .rx
            .poll_recv(cx)
            .map(|chunk| chunk.map(|bytes| Ok(Frame::data(bytes))))
    }
}

fn visible(tenants: &Option<Vec<String>>, event: &StoredEvent) -> bool {
    match (tenants, &event.tenant) {
        (None, _) => true,
        (Some(list), Some(tenant)) => list.contains(tenant),
        (Some(_), None) => false,
    }
}

/// One event as an SSE frame. The payload is compact JSON, so it is one `data:` line.
fn frame(event: &StoredEvent) -> Bytes {
    let kind: String = event
        .kind
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    Bytes::from(format!(
        "id: {}\nevent: {kind}\ndata: {}\n\n",
        event.seq, event.payload
    ))
}

/// Feed `tx` with the events after `after` until the client leaves or the coordinator stops.
async fn pump(
    state: AppState,
    tenants: Option<Vec<String>>,
    mut after: i64,
    tx: mpsc::Sender<Bytes>,
) {
    let mut stopping = state.stopping.clone();
    // The opening comment tells the client the stream is established from `after` on.
    if tx
        .send(Bytes::from_static(b"retry: 2000\n: connected\n\n"))
        .await
        .is_err()
    {
        return;
    }
    let mut last_sent = Instant::now();
    loop {
        if *stopping.borrow() {
            return;
        }
        // Registered before reading, so a write between the read and the wait still wakes us.
        let woken = state.events_wake.notified();
        tokio::pin!(woken);
        woken.as_mut().enable();

        let batch = match state.db.read(move |s| s.events_after(after, BATCH)).await {
            Ok(batch) => batch,
            Err(e) => {
                tracing::error!(error = %e, "the event stream cannot read the store");
                return;
            }
        };
        let full = batch.len() == BATCH as usize;
        for event in batch {
            after = event.seq;
            if visible(&tenants, &event) {
                if tx.send(frame(&event)).await.is_err() {
                    return;
                }
                last_sent = Instant::now();
            }
        }
        if full {
            continue;
        }
        tokio::select! {
            _ = &mut woken => {}
            _ = tokio::time::sleep(POLL) => {}
            changed = stopping.changed() => if changed.is_err() { return },
            _ = tx.closed() => return,
        }
        if last_sent.elapsed() >= KEEP_ALIVE {
            if tx
                .send(Bytes::from_static(b": keep-alive\n\n"))
                .await
                .is_err()
            {
                return;
            }
            last_sent = Instant::now();
        }
    }
}
