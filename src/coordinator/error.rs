//! The API's one error type. Every error answers `{"error": {"code", "message", "fields"}}`
//! with its status; internal details are logged, never sent.

use std::collections::BTreeMap;

use crate::wire::{ErrorBody, ErrorDetail};
use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use crate::domain::{IneligibleRelease, Refusal};
use crate::store::StoreError;

/// An error as the client sees it.
#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    pub fields: BTreeMap<String, String>,
    /// Seconds for the `Retry-After` header of a 429 or 503.
    pub retry_after: Option<u64>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            fields: BTreeMap::new(),
            retry_after: None,
        }
    }

    /// The same error, telling the caller when to try again.
    pub fn retry_after(mut self, secs: u64) -> Self {
        self.retry_after = Some(secs);
        self
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "bad_request", message)
    }

    /// 400 with one message per field, named by its JSON path or parameter.
    pub fn fields(fields: BTreeMap<String, String>) -> Self {
        let names: Vec<&str> = fields.keys().map(String::as_str).collect();
        let message = format!("invalid fields: {}", names.join(", "));
        Self {
            status: StatusCode::BAD_REQUEST,
            code: "invalid_fields",
            message,
            fields,
            retry_after: None,
        }
    }

    pub fn unauthorized() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "a bearer token is required (Authorization: Bearer <token>)",
        )
    }

    pub fn forbidden(what: &str) -> Self {
        Self::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            format!("this token's role may not {what}"),
        )
    }

    pub fn not_found(what: &str, id: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("{what} `{id}` not found"),
        )
    }

    pub fn conflict(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, code, message)
    }

    pub fn internal() -> Self {
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "internal error; the coordinator's log has details",
        )
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            error: ErrorDetail {
                code: self.code.to_string(),
                message: self.message,
                fields: self.fields,
            },
        };
        let mut response = (self.status, Json(body)).into_response();
        if let Some(secs) = self.retry_after {
            response
                .headers_mut()
                .insert(axum::http::header::RETRY_AFTER, secs.into());
        }
        response
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound { what, id } => ApiError::not_found(what, &id),
            StoreError::Refused(refusal) => refusal.into(),
            StoreError::BadCursor(message) => {
                ApiError::new(StatusCode::BAD_REQUEST, "bad_cursor", message)
            }
            StoreError::Conflict(message) => {
                ApiError::new(StatusCode::BAD_REQUEST, "bad_request", message)
            }
            StoreError::NotDispatchable(message) => {
                ApiError::new(StatusCode::CONFLICT, "not_dispatchable", message)
            }
            StoreError::Forbidden(message) => {
                ApiError::new(StatusCode::FORBIDDEN, "forbidden", message)
            }
            e @ StoreError::AlreadyEnded { .. } => {
                ApiError::new(StatusCode::CONFLICT, "attempt_ended", e.to_string())
            }
            StoreError::Unavailable(message) => {
                tracing::error!(%message, "store unavailable");
                ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "unavailable",
                    "the store is unavailable; retry shortly",
                )
                .retry_after(1)
            }
            StoreError::Overloaded { waiting } => ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "overloaded",
                format!(
                    "the coordinator is overloaded: {waiting} writes are waiting for the store \
                     (limits.max_queued_writes); nothing was stored, retry after 1 s"
                ),
            )
            .retry_after(1),
            other => {
                tracing::error!(error = %other, "store error");
                ApiError::internal()
            }
        }
    }
}

impl From<IneligibleRelease> for ApiError {
    /// 422 naming the release and the operation, with the releases that are eligible.
    fn from(r: IneligibleRelease) -> Self {
        let message = r.to_string();
        ApiError {
            fields: BTreeMap::from([("release_id".to_string(), message.clone())]),
            ..ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "release_not_eligible",
                message,
            )
        }
    }
}

impl From<Refusal> for ApiError {
    fn from(r: Refusal) -> Self {
        let code = match r {
            Refusal::Terminal { .. } | Refusal::NotAllowed { .. } => "invalid_state",
            Refusal::BudgetSpent { .. } => "budget_spent",
            Refusal::DeadlinePassed => "deadline_passed",
            Refusal::Paused => "paused",
            Refusal::AuthorizationInvalid => "authorization_invalid",
            Refusal::MissingEvidence(_) => "missing_evidence",
            Refusal::DispatchInFlight => "dispatch_in_flight",
            Refusal::HedgeNotAllowed { .. } => "hedge_not_allowed",
            Refusal::HedgesAtCap { .. } => "hedges_at_cap",
            Refusal::TooEarly { .. } => "too_early",
            Refusal::CancellationRequested => "cancellation_requested",
        };
        let status = match r {
            Refusal::MissingEvidence(_) => StatusCode::UNPROCESSABLE_ENTITY,
            Refusal::TooEarly { .. } => StatusCode::TOO_MANY_REQUESTS,
            _ => StatusCode::CONFLICT,
        };
        let mut error = ApiError::new(status, code, r.to_string());
        if let Refusal::TooEarly { wait_ms } = r {
            error.fields.insert("wait_ms".into(), wait_ms.to_string());
            error = error.retry_after(wait_ms.div_ceil(1000).max(1));
        }
        error
    }
}
