//! The agent's side of the coordinator's ingest API, as a real agent would call it: every
//! request carries the bearer token; a request is repeated only when repeating it is safe.
//!
//! - A connection that could not be opened sent nothing: every call is repeated.
//! - Creating by caller key, authorising, finishing an attempt and dispatching are
//!   idempotent at the coordinator, so they are repeated after a lost answer, a 5xx or a
//!   `409 request_in_progress` too.
//! - Starting an attempt is not: a lost answer may have started one, so it is not repeated
//!   (the agent goes on to its next provider call, a new attempt anyway).
//!
//! Repeats back off (capped exponential, full jitter) and stop after `patience`.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode, Url};
use serde_json::Value;

use super::error::CallError;
use crate::domain::{AttemptId, IntentId, Jitter, SplitMix64};
use crate::wire::{
    Attempt, AttemptReport, BatchCreated, BatchIntent, BatchResult, CreateBatch, CreateIntent,
    Dispatched, Intent, NewAttempt,
};

const FIRST_BACKOFF_MS: u64 = 50;
const MAX_BACKOFF_MS: u64 = 1_000;

/// What creating by caller key did.
#[derive(Debug, Clone, PartialEq)]
pub enum Created {
    New(Intent),
    Replayed(Intent),
    /// The key names an intent with other arguments.
    Mismatch,
}

impl Created {
    pub fn view(&self) -> Option<&Intent> {
        match self {
            Created::New(v) | Created::Replayed(v) => Some(v),
            Created::Mismatch => None,
        }
    }
}

/// An answer, or the coordinator's refusal (`409` with its code, e.g. `budget_spent`).
#[derive(Debug, Clone, PartialEq)]
pub enum Answer<T> {
    Done(T),
    Refused { code: String },
}

/// A client of one coordinator's ingest API.
#[derive(Clone)]
pub struct IngestClient {
    http: reqwest::Client,
    base: Url,
    token: Arc<str>,
    /// The token approvals are sent with: an approver is a principal of its own, never the
    /// agent that created the intent.
    approver_token: Option<Arc<str>>,
    patience: Duration,
    jitter: Arc<Mutex<SplitMix64>>,
}

/// One sent request's answer.
struct Reply {
    status: StatusCode,
    replayed: bool,
    body: Value,
}

impl IngestClient {
    /// `request_timeout` bounds one request; `patience` bounds all repeats of one call.
    pub fn new(
        base: Url,
        token: &str,
        request_timeout: Duration,
        patience: Duration,
        seed: u64,
    ) -> Result<Self, CallError> {
        let http = crate::tls::client(None)
            .map_err(|e| CallError::Invalid(e.to_string()))?
            .timeout(request_timeout)
            .no_proxy()
            .pool_max_idle_per_host(64)
            .build()
            .map_err(|e| CallError::Invalid(format!("cannot build the HTTP client: {e}")))?;
        Ok(IngestClient {
            http,
            base: with_trailing_slash(base),
            token: Arc::from(token),
            approver_token: None,
            patience,
            jitter: Arc::new(Mutex::new(SplitMix64::new(seed ^ 0x5eed_ab1e))),
        })
    }

    /// Send approvals with `token`, an approver's (or a supervisor's or admin's).
    pub fn with_approver(mut self, token: &str) -> Self {
        self.approver_token = Some(Arc::from(token));
        self
    }

    fn url(&self, path: &str) -> Result<Url, CallError> {
        self.base.join(path).map_err(|e| CallError::BadUrl {
            url: format!("{}{path}", self.base),
            detail: e.to_string(),
        })
    }

    fn backoff(&self, repeat: u32) -> Duration {
        let ceiling = FIRST_BACKOFF_MS
            .saturating_mul(1 << repeat.min(10))
            .min(MAX_BACKOFF_MS);
        let unit = self
            .jitter
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .unit();
        Duration::from_millis(((ceiling as f64) * unit) as u64 + 1)
    }

    /// Send until an answer that is not worth repeating, or until patience runs out.
    async fn send(
        &self,
        what: &'static str,
        method: Method,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&Value>,
        repeatable: bool,
    ) -> Result<Reply, CallError> {
        let token = self.token.clone();
        self.send_as(&token, what, method, path, headers, body, repeatable)
            .await
    }

    /// [`Self::send`] with `token`.
    #[allow(clippy::too_many_arguments)]
    async fn send_as(
        &self,
        token: &str,
        what: &'static str,
        method: Method,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&Value>,
        repeatable: bool,
    ) -> Result<Reply, CallError> {
        let url = self.url(path)?;
        let started = Instant::now();
        let mut repeat = 0u32;
        loop {
            let mut request = self
                .http
                .request(method.clone(), url.clone())
                .bearer_auth(token);
            for (name, value) in headers {
                request = request.header(*name, *value);
            }
            if let Some(body) = body {
                request = request.json(body);
            }
            let why = match request.send().await {
                Ok(response) => {
                    let status = response.status();
                    let replayed = response
                        .headers()
                        .get("idempotent-replayed")
                        .is_some_and(|v| v == "true");
                    let text = response.text().await.unwrap_or_default();
                    let body: Value = serde_json::from_str(&text).unwrap_or(Value::String(text));
                    let in_progress = status == StatusCode::CONFLICT
                        && error_code(&body) == "request_in_progress";
                    // 429: the token's places are all taken now; nothing was stored.
                    let busy = status == StatusCode::TOO_MANY_REQUESTS;
                    if !(status.is_server_error() || in_progress || busy) || !repeatable {
                        return Ok(Reply {
                            status,
                            replayed,
                            body,
                        });
                    }
                    format!("answered {status}")
                }
                Err(e) if e.is_connect() => "connection refused".to_string(),
                Err(e) if repeatable => format!("request failed: {}", kind(&e)),
                Err(e) => {
                    return Err(CallError::Lost {
                        what,
                        detail: kind(&e).to_string(),
                    });
                }
            };
            if started.elapsed() >= self.patience {
                return Err(CallError::Unavailable {
                    what,
                    peer: "the coordinator",
                    patience_secs: self.patience.as_secs(),
                    detail: why,
                });
            }
            tokio::time::sleep(self.backoff(repeat)).await;
            repeat += 1;
        }
    }

    fn unexpected(what: &'static str, reply: &Reply) -> CallError {
        match reply.status.as_u16() {
            401 | 403 => CallError::Forbidden {
                what,
                status: reply.status.as_u16(),
                hint: "driving a workload needs an `agent` or `admin` token for every tenant it uses",
            },
            status => CallError::Unexpected {
                what,
                status,
                body: CallError::clip(&reply.body.to_string()),
            },
        }
    }

    fn refusal_code(reply: &Reply) -> Option<String> {
        (reply.status == StatusCode::CONFLICT).then(|| match error_code(&reply.body) {
            "" => "conflict".to_string(),
            code => code.to_string(),
        })
    }

    fn view(what: &'static str, reply: &Reply) -> Result<Intent, CallError> {
        let body = reply.body.get("intent").unwrap_or(&reply.body);
        serde_json::from_value(body.clone()).map_err(|e| CallError::Unexpected {
            what,
            status: reply.status.as_u16(),
            body: CallError::clip(&format!("{e}: {}", reply.body)),
        })
    }

    /// `POST /v1/intents` under `caller_key`.
    pub async fn create(
        &self,
        caller_key: &str,
        request: &CreateIntent,
    ) -> Result<Created, CallError> {
        let what = "create intent";
        let body = serde_json::to_value(request).map_err(|e| CallError::Invalid(e.to_string()))?;
        let reply = self
            .send(
                what,
                Method::POST,
                "v1/intents",
                &[("Idempotency-Key", caller_key)],
                Some(&body),
                true,
            )
            .await?;
        match reply.status.as_u16() {
            201 => Ok(Created::New(Self::view(what, &reply)?)),
            200 if reply.replayed => Ok(Created::Replayed(Self::view(what, &reply)?)),
            422 if error_code(&reply.body) == "idempotency_key_mismatch" => Ok(Created::Mismatch),
            _ => Err(Self::unexpected(what, &reply)),
        }
    }

    /// `POST /v1/intents/batch`: up to 100 intents in one request, each under its own key;
    /// one result for each, in the order sent. Repeated like [`Self::create`] when the answer
    /// is lost or the coordinator cannot take it now: each key answers a repeat with what an
    /// earlier try created.
    pub async fn create_batch(
        &self,
        intents: Vec<BatchIntent>,
    ) -> Result<Vec<BatchResult>, CallError> {
        let what = "create intents in a batch";
        let body = serde_json::to_value(CreateBatch { intents })
            .map_err(|e| CallError::Invalid(e.to_string()))?;
        let reply = self
            .send(
                what,
                Method::POST,
                "v1/intents/batch",
                &[],
                Some(&body),
                true,
            )
            .await?;
        if reply.status != StatusCode::OK {
            return Err(Self::unexpected(what, &reply));
        }
        let answer: BatchCreated =
            serde_json::from_value(reply.body.clone()).map_err(|e| CallError::Unexpected {
                what,
                status: reply.status.as_u16(),
                body: CallError::clip(&format!("{e}: {}", reply.body)),
            })?;
        Ok(answer.results)
    }

    /// What one intent of a batch was answered, as [`Self::create`] reads its own answer:
    /// created, replayed, or a key that names another order; any other status is an error.
    pub fn batch_created(result: &BatchResult) -> Result<Created, CallError> {
        let what = "create an intent of a batch";
        let code = result.error.as_ref().map_or("", |e| e.code.as_str());
        match (result.status, &result.intent) {
            (201, Some(intent)) => Ok(Created::New(intent.clone())),
            (200, Some(intent)) if result.replayed => Ok(Created::Replayed(intent.clone())),
            (422, _) if code == "idempotency_key_mismatch" => Ok(Created::Mismatch),
            (status, _) => Err(CallError::Unexpected {
                what,
                status,
                body: CallError::clip(
                    &serde_json::to_string(result).unwrap_or_else(|e| e.to_string()),
                ),
            }),
        }
    }

    /// `POST /v1/intents/{id}/authorize` with the approver's token ([`Self::with_approver`];
    /// the client's own token without one), which names who approved; refused when the
    /// intent already moved on.
    pub async fn authorize(
        &self,
        id: &IntentId,
        valid_for_secs: Option<u64>,
    ) -> Result<Answer<Intent>, CallError> {
        let what = "authorize intent";
        let mut body = serde_json::json!({"authorization_version": "procurement-policy-v7"});
        if let Some(secs) = valid_for_secs {
            body["valid_for_secs"] = secs.into();
        }
        let path = format!("v1/intents/{id}/authorize");
        let token = self.approver_token.as_ref().unwrap_or(&self.token).clone();
        let reply = self
            .send_as(&token, what, Method::POST, &path, &[], Some(&body), true)
            .await?;
        match reply.status.as_u16() {
            200 => Ok(Answer::Done(Self::view(what, &reply)?)),
            409 => Ok(Answer::Refused {
                code: Self::refusal_code(&reply).unwrap_or_default(),
            }),
            _ => Err(Self::unexpected(what, &reply)),
        }
    }

    /// `POST /v1/intents/{id}/attempts`: the new attempt's id, or the coordinator's refusal.
    pub async fn start_attempt(
        &self,
        id: &IntentId,
        start: &NewAttempt,
    ) -> Result<Answer<AttemptId>, CallError> {
        let what = "report attempt";
        let body = serde_json::to_value(start).map_err(|e| CallError::Invalid(e.to_string()))?;
        let path = format!("v1/intents/{id}/attempts");
        let started = Instant::now();
        let reply = loop {
            let reply = self
                .send(what, Method::POST, &path, &[], Some(&body), false)
                .await?;
            // Too soon after the failure before it: wait as long as the coordinator says.
            let wait_ms = (reply.status == StatusCode::TOO_MANY_REQUESTS)
                .then(|| {
                    reply.body["error"]["fields"]["wait_ms"]
                        .as_str()?
                        .parse::<u64>()
                        .ok()
                })
                .flatten();
            match wait_ms {
                Some(ms) if started.elapsed() < self.patience => {
                    tokio::time::sleep(Duration::from_millis(ms.max(1))).await;
                }
                _ => break reply,
            }
        };
        match reply.status.as_u16() {
            201 => {
                let started: Attempt = serde_json::from_value(reply.body.clone()).map_err(|e| {
                    CallError::Unexpected {
                        what,
                        status: 201,
                        body: e.to_string(),
                    }
                })?;
                Ok(Answer::Done(started.id))
            }
            409 => Ok(Answer::Refused {
                code: Self::refusal_code(&reply).unwrap_or_default(),
            }),
            _ => Err(Self::unexpected(what, &reply)),
        }
    }

    /// `PATCH /v1/intents/{id}/attempts/{attempt}`: whether the coordinator marked it late.
    pub async fn finish_attempt(
        &self,
        id: &IntentId,
        attempt: &AttemptId,
        end: &AttemptReport,
    ) -> Result<bool, CallError> {
        let what = "finish attempt";
        let body = serde_json::to_value(end).map_err(|e| CallError::Invalid(e.to_string()))?;
        let path = format!("v1/intents/{id}/attempts/{attempt}");
        let reply = self
            .send(what, Method::PATCH, &path, &[], Some(&body), true)
            .await?;
        match reply.status.as_u16() {
            200 => {
                let finished: Attempt =
                    serde_json::from_value(reply.body.clone()).map_err(|e| {
                        CallError::Unexpected {
                            what,
                            status: 200,
                            body: e.to_string(),
                        }
                    })?;
                Ok(finished.late)
            }
            _ => Err(Self::unexpected(what, &reply)),
        }
    }

    /// `POST /v1/intents/{id}/dispatch`: whether this call enqueued the dispatch.
    pub async fn dispatch(&self, id: &IntentId) -> Result<Answer<bool>, CallError> {
        let what = "dispatch intent";
        let path = format!("v1/intents/{id}/dispatch");
        let reply = self
            .send(what, Method::POST, &path, &[], None, true)
            .await?;
        match reply.status.as_u16() {
            202 => {
                let d: Dispatched = serde_json::from_value(reply.body.clone()).map_err(|e| {
                    CallError::Unexpected {
                        what,
                        status: 202,
                        body: e.to_string(),
                    }
                })?;
                Ok(Answer::Done(d.dispatched))
            }
            409 => Ok(Answer::Refused {
                code: Self::refusal_code(&reply).unwrap_or_default(),
            }),
            _ => Err(Self::unexpected(what, &reply)),
        }
    }
}

/// `base` with a path ending in `/`, so relative paths join beneath it.
pub fn with_trailing_slash(mut base: Url) -> Url {
    if !base.path().ends_with('/') {
        let path = format!("{}/", base.path());
        base.set_path(&path);
    }
    base
}

/// The code of an error envelope (`crate::wire::ErrorBody`), or "" for another body.
fn error_code(body: &Value) -> &str {
    body.get("error")
        .and_then(|e| e.get("code"))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// The kind of a transport failure, never its URL.
pub fn kind(e: &reqwest::Error) -> &'static str {
    if e.is_connect() {
        "connection could not be opened"
    } else if e.is_timeout() {
        "timed out"
    } else {
        "connection lost"
    }
}
