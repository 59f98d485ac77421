//! `GET /v1/events`: the store's change feed as server-sent events. Each event is
//! `id: <seq>`, `event: intent|attempt|command`, `data: <json payload>`.
//!
//! Resuming: the stream starts after the `Last-Event-ID` header (or `?after=<seq>`); without
//! either it starts from now. Every stream of a coordinator is fed by one follower of the
//! store (`super::feed`); a stream catches up from its resume point by itself first. It
//! sends a keep-alive comment when idle, and ends when the coordinator stops so a graceful
//! shutdown is not held up by open streams.
//!
//! The feed keeps `limits.events_kept_hours` and `limits.events_kept_max`. A resume point
//! the feed no longer holds (older than its oldest event, or newer than its newest: another
//! database) cannot be served without a gap, so the stream says so first: an event
//! `reset` whose data is `{"code": "events_pruned" | "unknown_event_id", "oldest": <seq>,
//! "resume_from": <seq>}` and whose id is where the stream goes on from. A client drops what
//! it holds and reads everything again; the console does.
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
use tokio::sync::{broadcast, mpsc};
use tokio::time::Instant;

use super::AppState;
use super::auth::Principal;
use super::error::ApiError;
use super::feed::BATCH;
use super::operator::params::{Params, RawQuery};
use crate::domain::Permission;
use crate::store::StoredEvent;
use crate::store::ops::*;

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
    // Taken before catching up, so nothing committed meanwhile is missed.
    let mut batches = state.feed.subscribe(&state);
    // The opening comment tells the client the stream is established from `after` on.
    if tx
        .send(Bytes::from_static(b"retry: 2000\n: connected\n\n"))
        .await
        .is_err()
    {
        return;
    }
    let stream = Stream {
        state: &state,
        tenants: &tenants,
        tx: &tx,
    };
    if stream.catch_up(&mut after).await.is_err() {
        return;
    }
    let mut last_sent = Instant::now();
    loop {
        tokio::select! {
            received = batches.recv() => match received {
                Ok(batch) => {
                    // The shared follower may have started past this stream's position, or a
                    // batch between was missed: read what lies between from the store first.
                    if batch.first().is_some_and(|e| e.seq > after + 1)
                        && stream.catch_up(&mut after).await.is_err()
                    {
                        return;
                    }
                    let seen = after;
                    for event in batch.iter().filter(|e| e.seq > seen) {
                        after = event.seq;
                        if visible(&tenants, event) {
                            if tx.send(frame(event)).await.is_err() {
                                return;
                            }
                            last_sent = Instant::now();
                        }
                    }
                }
                // Behind the shared follower: read the store from here.
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    if stream.catch_up(&mut after).await.is_err() {
                        return;
                    }
                }
                Err(broadcast::error::RecvError::Closed) => return,
            },
            _ = tokio::time::sleep_until(last_sent + KEEP_ALIVE) => {
                if tx.send(Bytes::from_static(b": keep-alive\n\n")).await.is_err() {
                    return;
                }
                last_sent = Instant::now();
            }
            changed = stopping.changed() => if changed.is_err() || *stopping.borrow() { return },
            _ = tx.closed() => return,
        }
    }
}

/// What one stream reads and sends by itself.
struct Stream<'a> {
    state: &'a AppState,
    tenants: &'a Option<Vec<String>>,
    tx: &'a mpsc::Sender<Bytes>,
}

impl Stream<'_> {
    /// Whether the feed still holds everything after `after`; if not, the `reset` frame to
    /// send and where to go on from. `Err` when the store cannot answer (the stream ends,
    /// and the client resumes later).
    async fn resume_point(&self, after: i64) -> Result<Option<(Bytes, i64)>, ()> {
        let bounds = self
            .state
            .db
            .read(|s| Ok((s.oldest_event_seq()?, s.last_event_seq()?)))
            .await;
        let (oldest, newest) = match bounds {
            Ok(bounds) => bounds,
            Err(e) => {
                tracing::error!(error = %e, "the event stream cannot read the store");
                return Err(());
            }
        };
        let code = match oldest {
            Some(oldest) if after + 1 < oldest => "events_pruned",
            _ if after > newest => "unknown_event_id",
            _ => return Ok(None),
        };
        let data = serde_json::json!({
            "code": code,
            "oldest": oldest.unwrap_or(0),
            "resume_from": newest,
        });
        let reset = Bytes::from(format!("id: {newest}\nevent: reset\ndata: {data}\n\n"));
        Ok(Some((reset, newest)))
    }

    /// Send every visible event after `after` the store holds now, moving `after` on; if
    /// the feed no longer holds what follows `after`, send the `reset` frame first and go
    /// on from the newest event.
    async fn catch_up(&self, after: &mut i64) -> Result<(), ()> {
        if let Some((reset, from)) = self.resume_point(*after).await? {
            if self.tx.send(reset).await.is_err() {
                return Err(());
            }
            *after = from;
        }
        loop {
            let from = *after;
            let batch = match self
                .state
                .db
                .read(move |s| s.events_after(from, BATCH))
                .await
            {
                Ok(batch) => batch,
                Err(e) => {
                    tracing::error!(error = %e, "the event stream cannot read the store");
                    return Err(());
                }
            };
            let full = batch.len() == BATCH as usize;
            for event in &batch {
                *after = event.seq;
                if visible(self.tenants, event) && self.tx.send(frame(event)).await.is_err() {
                    return Err(());
                }
            }
            if !full {
                return Ok(());
            }
        }
    }
}
