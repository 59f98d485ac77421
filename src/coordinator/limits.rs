//! How many requests the coordinator works on at once, and for how long: a layer in front of
//! every route. Past `max_concurrent_requests` in progress a request is answered 503, past
//! `max_concurrent_per_token` for its token 429, both with `Retry-After`, before anything is
//! read or stored; a request not answered within `request_timeout_ms` is answered 503 (an
//! event stream is exempt: it is meant to stay open, and has its own places, held for as
//! long as it is open: [`StreamSlots`]). The connection-level limits are in `server`.
//!
//! A token past its own cap is answered only after [`OVER_CAP_PAUSE`] (its `Retry-After`):
//! a caller that honours `Retry-After` loses nothing, and one that does not can make the
//! coordinator refuse at most one request per connection per pause, so a flood from one
//! token spends little of the coordinator's time on its refusals.

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

/// How long a request past its token's cap waits for its 429 (the `Retry-After` it carries).
pub const OVER_CAP_PAUSE: Duration = Duration::from_secs(1);

/// The path of the event stream, which no request timeout ends.
const EVENTS_PATH: &str = "/v1/events";

/// Places shared by every caller and places of each configured token: a caller takes one
/// of its token's and one of all, and gives both back by dropping [`Taken`].
struct Places {
    all: Arc<Semaphore>,
    /// By a key of the token's (a token nobody configured is refused by authentication and
    /// has no entry: it takes a place of all only).
    per_token: HashMap<String, Arc<Semaphore>>,
    /// How many places each token has.
    per_token_cap: usize,
}

/// The places of a request's token, in the request's extensions, for a handler whose one
/// request stands for many (a batch holds a place for each of its intents, so one token's
/// batches take no more of the coordinator than as many single requests could).
#[derive(Clone)]
pub struct TokenPlaces {
    places: Arc<Semaphore>,
    cap: usize,
}

impl TokenPlaces {
    /// How many places the token has in all (`limits.max_concurrent_per_token`).
    pub fn cap(&self) -> usize {
        self.cap
    }

    /// `more` places beside the request's own, held until the permit is dropped; `None` when
    /// they are not free now.
    pub fn take_more(&self, more: usize) -> Option<OwnedSemaphorePermit> {
        let more = u32::try_from(more).ok()?;
        self.places.clone().try_acquire_many_owned(more).ok()
    }
}

/// Which places were full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Full {
    Token,
    All,
}

/// Places taken, given back when dropped.
pub struct Taken {
    _all: OwnedSemaphorePermit,
    _mine: Option<OwnedSemaphorePermit>,
}

impl Places {
    fn new(all: usize, per_token: usize, tokens: impl Iterator<Item = String>) -> Places {
        Places {
            all: Arc::new(Semaphore::new(all)),
            per_token: tokens
                .map(|key| (key, Arc::new(Semaphore::new(per_token))))
                .collect(),
            per_token_cap: per_token,
        }
    }

    fn take(&self, token: Option<&str>) -> Result<Taken, Full> {
        let mine = match token.and_then(|key| self.per_token.get(key)) {
            Some(places) => Some(
                places
                    .clone()
                    .try_acquire_owned()
                    .map_err(|_| Full::Token)?,
            ),
            None => None,
        };
        let all = self
            .all
            .clone()
            .try_acquire_owned()
            .map_err(|_| Full::All)?;
        Ok(Taken {
            _all: all,
            _mine: mine,
        })
    }
}

/// The request limits: places for requests in progress, by the token's SHA-256 (the
/// layer runs before authentication), and the timeout.
pub struct RequestLimits {
    places: Places,
    timeout: Duration,
}

impl RequestLimits {
    pub fn new(config: &Config) -> Arc<RequestLimits> {
        let l = &config.limits;
        Arc::new(RequestLimits {
            places: Places::new(
                l.max_concurrent_requests,
                l.max_concurrent_per_token,
                config
                    .tokens
                    .iter()
                    .map(|t| t.token_sha256.to_ascii_lowercase()),
            ),
            timeout: Duration::from_millis(l.request_timeout_ms),
        })
    }
}

/// The places for open event streams: `max_event_streams` in all, and
/// `max_event_streams_per_token` for each configured token (by name).
pub struct StreamSlots(Places);

impl StreamSlots {
    pub fn new(config: &Config) -> Arc<StreamSlots> {
        let l = &config.limits;
        Arc::new(StreamSlots(Places::new(
            l.max_event_streams,
            l.max_event_streams_per_token,
            config.tokens.iter().map(|t| t.name.clone()),
        )))
    }

    /// Places for one more stream of the token named `token`, or the answer that refuses it.
    pub fn take(&self, token: &str) -> Result<Taken, ApiError> {
        self.0.take(Some(token)).map_err(|full| {
            match full {
                Full::Token => ApiError::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    "too_many_streams",
                    "this token has as many event streams open as it may; close one first",
                ),
                Full::All => ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "overloaded",
                    "the coordinator has as many event streams open as it takes; retry shortly",
                ),
            }
            .retry_after(1)
        })
    }
}

/// The layer's function (`axum::middleware::from_fn_with_state`).
pub async fn limit(
    State(limits): State<Arc<RequestLimits>>,
    mut request: Request,
    next: Next,
) -> Response {
    let hash = bearer(request.headers()).map(token_sha256);
    if let Some(places) = hash.as_deref().and_then(|h| limits.places.per_token.get(h)) {
        request.extensions_mut().insert(TokenPlaces {
            places: places.clone(),
            cap: limits.places.per_token_cap,
        });
    }
    let _taken = match limits.places.take(hash.as_deref()) {
        Ok(taken) => taken,
        Err(full) => {
            if full == Full::Token {
                tokio::time::sleep(OVER_CAP_PAUSE).await;
            }
            return match full {
                Full::Token => ApiError::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    "too_many_requests",
                    "this token has as many requests in progress as it may; retry when one is answered",
                ),
                Full::All => ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "overloaded",
                    "the coordinator is working on as many requests as it takes; retry shortly",
                ),
            }
            .retry_after(1)
            .into_response();
        }
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
