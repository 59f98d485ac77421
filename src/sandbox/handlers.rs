//! The sandbox's HTTP handlers: parse the request into typed values, ask the state,
//! map the outcome to a status code. Resource requests go through the overload and
//! delay faults first; the `/_sandbox` endpoints and `/healthz` never do.

use std::time::Duration;

use axum::Extension;
use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::error::ApiError;
use super::faults::{FaultSpec, FaultSpecError};
use super::server::ConnectionKill;
use super::state::SandboxState;
use super::store::{CreateOutcome, DownstreamId, ExternalRef, Record, Resource, StoreError};

const IDEMPOTENCY_KEY: &str = "idempotency-key";
const IDEMPOTENT_REPLAYED: &str = "idempotent-replayed";

/// The answer to a POST that created or replayed a record.
#[derive(Debug, Serialize)]
struct CreateReply<'a> {
    id: &'a DownstreamId,
    resource: Resource,
    external_ref: Option<&'a ExternalRef>,
    created_at_ms: u64,
    replayed: bool,
}

impl<'a> CreateReply<'a> {
    fn of(record: &'a Record, replayed: bool) -> Self {
        Self {
            id: &record.id,
            resource: record.resource,
            external_ref: record.external_ref.as_ref(),
            created_at_ms: record.created_at_ms,
            replayed,
        }
    }
}

fn resource(segment: &str) -> Result<Resource, ApiError> {
    segment.parse().map_err(|_| {
        ApiError::not_found(
            "unknown_resource",
            format!(
                "no resource `{segment}`; expected purchase-orders, inventory-reservations or payments"
            ),
        )
    })
}

/// Overload and delay, decided once when the request arrives: `Err` for an overload
/// answer, otherwise how long to hold the request before processing it.
fn resource_faults(state: &SandboxState, faults: &FaultSpec) -> Result<Option<Duration>, ApiError> {
    if state.roll(faults.overload) {
        return Err(ApiError::overloaded(faults.retry_after_secs));
    }
    Ok(faults
        .delay
        .filter(|delay| state.roll(delay.probability))
        .map(|delay| Duration::from_millis(delay.ms)))
}

async fn hold(delay: Option<Duration>) {
    if let Some(delay) = delay {
        tracing::debug!(delay_ms = delay.as_millis() as u64, "holding request");
        tokio::time::sleep(delay).await;
    }
}

fn idempotency_key(headers: &HeaderMap) -> Result<Option<ExternalRef>, ApiError> {
    let Some(raw) = headers.get(IDEMPOTENCY_KEY) else {
        return Ok(None);
    };
    raw.to_str()
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .map(Some)
        .ok_or_else(|| {
            ApiError::bad_request(
                "bad_idempotency_key",
                format!(
                    "Idempotency-Key must be 1 to {} visible ASCII characters",
                    ExternalRef::MAX_LEN
                ),
            )
        })
}

fn json_object(body: Result<Bytes, BytesRejection>) -> Result<Map<String, Value>, ApiError> {
    let bytes = body.map_err(|e| ApiError::bad_request("bad_body", e.body_text()))?;
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(ApiError::bad_request(
            "bad_json",
            "the body must be a JSON object",
        )),
        Err(err) => Err(ApiError::bad_request(
            "bad_json",
            format!("the body is not valid JSON: {err}"),
        )),
    }
}

/// `POST /{resource}`.
pub(crate) async fn create(
    State(state): State<SandboxState>,
    Path(segment): Path<String>,
    connection: Option<Extension<ConnectionKill>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let resource = resource(&segment)?;
    let faults = state.faults();
    let delay = resource_faults(&state, &faults)?;
    if state.roll(faults.overload_writes) {
        return Err(ApiError::overloaded(faults.retry_after_secs));
    }

    let key = idempotency_key(&headers)?;
    if key.is_none() && !faults.ignore_keys {
        return Err(ApiError::bad_request(
            "missing_idempotency_key",
            "an Idempotency-Key header is required",
        ));
    }
    let body = json_object(body)?;

    // The creation runs on its own task, like work a real downstream has accepted: a caller
    // that stops waiting (its timeout passed, the connection closed) does not stop it, so a
    // delayed request still takes effect, late.
    let worker = state.clone();
    let processing = tokio::spawn(async move {
        hold(delay).await;
        worker.create(resource, key, body)
    });
    let outcome = processing.await.map_err(|err| {
        tracing::error!(error = %err, "a creation task failed");
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "the creation did not finish",
        )
    })?;
    let (status, record, replayed) = match outcome {
        CreateOutcome::Created(record) => (StatusCode::CREATED, record, false),
        CreateOutcome::Replayed(record) => (StatusCode::OK, record, true),
        CreateOutcome::Mismatch(record) => {
            return Err(ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "idempotency_key_mismatch",
                format!(
                    "this Idempotency-Key already created {} with a different body",
                    record.id
                ),
            ));
        }
    };

    if state.roll(faults.bare_503_after_commit) {
        tracing::info!(id = %record.id, "answering 503 without Retry-After after commit");
        return Err(ApiError::bare_unavailable());
    }
    if !replayed && state.roll(faults.wrong_record) {
        let shown = state
            .first_record(resource)
            .unwrap_or_else(|| record.clone());
        tracing::info!(id = %record.id, shown = %shown.id, "answering with another record");
        let reply = CreateReply {
            external_ref: None,
            ..CreateReply::of(&shown, false)
        };
        return Ok((status, Json(reply)).into_response());
    }
    if state.roll(faults.redirect_after_commit) {
        tracing::info!(id = %record.id, "answering 303 See Other after commit");
        return Ok(see_other(&segment, &record));
    }
    let drop_first = !replayed && state.take_first_drop(faults.drop_first);
    if drop_first || state.roll(faults.drop_after_commit) {
        match connection {
            Some(Extension(kill)) => {
                tracing::info!(id = %record.id, "dropping the connection after commit");
                kill.fire();
                // The connection task drops this request with its connection.
                std::future::pending::<()>().await;
            }
            None => tracing::warn!("drop_after_commit without a connection handle; answering"),
        }
    }

    let mut response = (status, Json(CreateReply::of(&record, replayed))).into_response();
    if replayed {
        response
            .headers_mut()
            .insert(IDEMPOTENT_REPLAYED, HeaderValue::from_static("true"));
    }
    Ok(response)
}

/// 303 See Other after a creation: "created, see there", the record's lookup as the
/// `Location` (the collection itself for a record without a key), its reply as the body.
fn see_other(segment: &str, record: &Record) -> Response {
    let location = match &record.external_ref {
        Some(key) => format!("/{segment}?external_ref={}", query_value(key.as_str())),
        None => format!("/{segment}"),
    };
    let mut response =
        (StatusCode::SEE_OTHER, Json(CreateReply::of(record, false))).into_response();
    if let Ok(location) = HeaderValue::from_str(&location) {
        response
            .headers_mut()
            .insert(axum::http::header::LOCATION, location);
    }
    response
}

/// `value` percent-encoded for a query string: a key may hold `&`, `#` or `%`.
fn query_value(value: &str) -> String {
    value
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b':' => {
                char::from(b).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[derive(Debug, Deserialize)]
pub(crate) struct LookupQuery {
    external_ref: Option<String>,
}

/// `GET /{resource}?external_ref=K`.
pub(crate) async fn lookup(
    State(state): State<SandboxState>,
    Path(segment): Path<String>,
    query: Result<Query<LookupQuery>, QueryRejection>,
) -> Result<Json<Record>, ApiError> {
    state.count_lookup();
    let resource = resource(&segment)?;
    let Query(query) = query.map_err(|e| ApiError::bad_request("bad_query", e.body_text()))?;
    let faults = state.faults();
    hold(resource_faults(&state, &faults)?).await;
    if state.roll(faults.fail_lookups) {
        return Err(ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "lookup_failed",
            "the lookup failed",
        ));
    }
    let raw = query.external_ref.ok_or_else(|| {
        ApiError::bad_request(
            "missing_external_ref",
            "give ?external_ref=<idempotency key>",
        )
    })?;
    let key: ExternalRef = raw
        .parse()
        .map_err(|e: StoreError| ApiError::bad_request("bad_external_ref", e.to_string()))?;
    let found = state.lookup(resource, &key).ok_or_else(|| {
        ApiError::not_found(
            "not_found",
            format!("no {resource} with external_ref `{key}`"),
        )
    })?;
    if state.roll(faults.wrong_lookup) {
        let shown = state
            .first_record(resource)
            .unwrap_or_else(|| found.clone());
        tracing::info!(id = %found.id, shown = %shown.id, "answering a lookup with another record");
        return Ok(Json(Record {
            external_ref: None,
            ..shown
        }));
    }
    Ok(Json(found))
}

#[derive(Debug, Deserialize)]
pub(crate) struct EffectsQuery {
    action_key: Option<String>,
}

/// `GET /_sandbox/effects[?action_key=K]`: totals, or one key's true effects and the
/// creates under it that replayed the first result.
pub(crate) async fn effects(
    State(state): State<SandboxState>,
    query: Result<Query<EffectsQuery>, QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    let Query(query) = query.map_err(|e| ApiError::bad_request("bad_query", e.body_text()))?;
    let Some(raw) = query.action_key else {
        return Ok(Json(json!(state.effects_summary())));
    };
    let key: ExternalRef = raw
        .parse()
        .map_err(|e: StoreError| ApiError::bad_request("bad_action_key", e.to_string()))?;
    Ok(Json(json!({
        "action_key": key,
        "effects": state.effects_for(&key),
        "replays": state.replays_for(&key),
    })))
}

/// `GET /_sandbox/faults`.
pub(crate) async fn get_faults(State(state): State<SandboxState>) -> Json<Value> {
    Json(json!({"faults": state.faults().to_string()}))
}

/// `POST /_sandbox/faults` with a SPEC as the body.
pub(crate) async fn set_faults(
    State(state): State<SandboxState>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Value>, ApiError> {
    let bytes = body.map_err(|e| ApiError::bad_request("bad_body", e.body_text()))?;
    let spec = std::str::from_utf8(&bytes)
        .map_err(|_| ApiError::bad_request("bad_fault_spec", "the SPEC must be UTF-8 text"))?;
    let faults: FaultSpec = spec
        .parse()
        .map_err(|e: FaultSpecError| ApiError::bad_request("bad_fault_spec", e.to_string()))?;
    state.set_faults(faults.clone());
    Ok(Json(json!({"faults": faults.to_string()})))
}

/// `GET /healthz`.
pub(crate) async fn health() -> Json<Value> {
    Json(json!({"status": "ok"}))
}

pub(crate) async fn no_route() -> ApiError {
    ApiError::not_found("not_found", "no such endpoint")
}

pub(crate) async fn wrong_method() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        "this endpoint does not take that method",
    )
}
