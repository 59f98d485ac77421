//! How many requests the coordinator works on at once, and for how long: a layer in front of
//! every route. Past `max_concurrent_requests` in progress a request is answered 503, past
//! `max_concurrent_per_token` for its token 429, both with `Retry-After`, before anything is
//! read or stored; a request not answered within `request_timeout_ms` is answered 503 (an
//! event stream is exempt: it is meant to stay open, and has its own places, held for as
//! long as it is open: [`StreamSlots`]). The connection-level limits are in `server`.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::auth::bearer;
use super::config::{Config, token_sha256};
use super::error::ApiError;

/// The path of the event stream, which no request timeout ends.
const EVENTS_PATH: &str = "/v1/events";

/// The permits of the request limits.
pub struct RequestLimits {
    all: Arc<Semaphore>,
    /// One semaphore per configured token, by the token's SHA-256: a token nobody
    /// configured is refused by authentication and takes no entry here.
    per_token: HashMap<String, Arc<Semaphore>>,
    timeout: Duration,
}

impl RequestLimits {
    pub fn new(config: &Config) -> Arc<RequestLimits> {
        let l = &config.limits;
        Arc::new(RequestLimits {
            all: Arc::new(Semaphore::new(l.max_concurrent_requests)),
            per_token: config
                .tokens
                .iter()
                .map(|t| {
                    (
                        t.token_sha256.to_ascii_lowercase(),
                        Arc::new(Semaphore::new(l.max_concurrent_per_token)),
                    )
                })
                .collect(),
            timeout: Duration::from_millis(l.request_timeout_ms),
        })
    }
}

/// The places for open event streams: `max_event_streams` in all, and
/// `max_event_streams_per_token` for each configured token (by name).
pub struct StreamSlots {
    all: Arc<Semaphore>,
    per_token: HashMap<String, Arc<Semaphore>>,
}

/// An open stream's places, given back when it is dropped (the stream ended).
pub struct StreamSlot {
    _all: OwnedSemaphorePermit,
    _mine: Option<OwnedSemaphorePermit>,
}

impl StreamSlots {
    pub fn new(config: &Config) -> Arc<StreamSlots> {
        let l = &config.limits;
        Arc::new(StreamSlots {
            all: Arc::new(Semaphore::new(l.max_event_streams)),
            per_token: config
                .tokens
                .iter()
                .map(|t| {
                    (
                        t.name.clone(),
                        Arc::new(Semaphore::new(l.max_event_streams_per_token)),
                    )
                })
                .collect(),
        })
    }

    /// Places for one more stream of the token named `token`, or the answer that refuses it.
    pub fn take(&self, token: &str) -> Result<StreamSlot, ApiError> {
        let mine = match self.per_token.get(token) {
            Some(slots) => Some(slots.clone().try_acquire_owned().map_err(|_| {
                ApiError::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    "too_many_streams",
                    "this token has as many event streams open as it may; close one first",
                )
                .retry_after(1)
            })?),
            None => None,
        };
        let all = self.all.clone().try_acquire_owned().map_err(|_| {
            ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "overloaded",
                "the coordinator has as many event streams open as it takes; retry shortly",
            )
            .retry_after(1)
        })?;
        Ok(StreamSlot {
            _all: all,
            _mine: mine,
        })
    }
}

/// The layer's function (`axum::middleware::from_fn_with_state`).
pub async fn limit(
    State(limits): State<Arc<RequestLimits>>,
    request: Request,
    next: Next,
) -> Response {
    let Ok(_all) = limits.all.clone().try_acquire_owned() else {
        return ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "overloaded",
            "the coordinator is working on as many requests as it takes; retry shortly",
        )
        .retry_after(1)
        .into_response();
    };
    let mine = bearer(request.headers())
        .map(token_sha256)
        .and_then(|hash| limits.per_token.get(&hash));
    let _mine = match mine.map(|s| s.clone().try_acquire_owned()) {
        Some(Err(_)) => {
            return ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "too_many_requests",
                "this token has as many requests in progress as it may; retry when one is answered",
            )
            .retry_after(1)
            .into_response();
        }
        Some(Ok(permit)) => Some(permit),
        None => None,
    };
    if request.uri().path() == EVENTS_PATH {
        // The permits are given back once the stream has begun: streams are not requests
        // in progress.
        return next.run(request).await;
    }
    match tokio::time::timeout(limits.timeout, next.run(request)).await {
        Ok(response) => response,
        Err(_) => ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "timeout",
            format!(
                "the request was not answered within {} ms; a write may still have been applied, \
                 so retry it with the same Idempotency-Key",
                limits.timeout.as_millis()
            ),
        )
        .retry_after(1)
        .into_response(),
    }
}
