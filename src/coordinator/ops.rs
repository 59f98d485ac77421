//! Operational routes: `GET /healthz` (no token; the store, its writer and each background
//! part, 503 when one of them does not serve),
//! `GET /metrics` (Prometheus text, `Permission::Read`, limited to the caller's tenants) and
//! `GET /v1/openapi.json` (the API description, for any valid token).
//!
//! The metric families `/metrics` exposes are described in [`super::prometheus`].

use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};

use super::AppState;
use super::auth::Principal;
use super::health::ReadProbe;
use crate::store::StoreError;
use crate::store::ops::*;
use crate::store::sql::{ConnExt, params};
use crate::wire::{Health, HealthPart, HealthStatus, PartStatus};

/// The OpenAPI 3.1 description of every coordinator route.
pub const OPENAPI_JSON: &str = include_str!("../../docs/openapi.json");

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/metrics", get(super::prometheus::scrape))
        .route("/v1/openapi.json", get(openapi))
}

/// How long `/healthz` waits for the store's read and write probes.
const PROBE_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

async fn healthz(State(state): State<AppState>) -> Response {
    let probe =
        |answered: Result<Result<(), StoreError>, tokio::time::error::Elapsed>| match answered {
            Ok(Ok(())) => PartStatus::Running,
            Ok(Err(e)) => {
                tracing::error!(error = %e, "health check: the store does not answer");
                PartStatus::Unreachable
            }
            Err(_) => PartStatus::Stalled,
        };
    let arrived = std::time::Instant::now();
    let (read, write) = {
        // One probe at a time; callers that waited for one finished after they arrived
        // take its answer, which is never older than their request.
        let mut probed = state.health.probed.lock().await;
        match *probed {
            Some((at, read, write)) if at >= arrived => (read, write),
            _ => {
                let read = async {
                    // The last probe's read has not come back: the store is as stalled as it
                    // was, and another read would only wait beside it.
                    let Some(out) = ReadProbe::start(&state.health) else {
                        return PartStatus::Stalled;
                    };
                    probe(
                        tokio::time::timeout(
                            PROBE_WAIT,
                            state.db.read(move |s| {
                                let _out = out;
                                s.last_event_seq().map(drop)
                            }),
                        )
                        .await,
                    )
                };
                // A write of one statement ahead of every agent's: it proves the writer
                // takes, reaches its database and commits (an empty one reaches no
                // PostgreSQL server: its transaction is never sent).
                let write = tokio::time::timeout(
                    PROBE_WAIT,
                    state.db.write(|s| {
                        s.conn()
                            .one("SELECT 1", params![], |r| r.get::<i64>(0))
                            .map(drop)
                    }),
                );
                let (read, write) = tokio::join!(read, write);
                let write = probe(write);
                *probed = Some((std::time::Instant::now(), read, write));
                (read, write)
            }
        }
    };
    let mut parts = state.health.snapshot();
    let part = |status| HealthPart {
        status,
        restarts: 0,
    };
    parts.insert("store".into(), part(read));
    let writer = if state.db.writer_alive() {
        write
    } else {
        PartStatus::Dead
    };
    parts.insert("writer".into(), part(writer));
    let healthy = parts.values().all(|p| !p.status.is_unhealthy());
    let (code, status) = if healthy {
        (StatusCode::OK, HealthStatus::Ok)
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, HealthStatus::Unavailable)
    };
    (code, Json(Health { status, parts })).into_response()
}

async fn openapi(_principal: Principal) -> Response {
    let mut response = OPENAPI_JSON.into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::OPENAPI_JSON;
    use serde_json::Value;

    fn refs<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
        match value {
            Value::Object(map) => {
                if let Some(Value::String(target)) = map.get("$ref") {
                    out.push(target);
                }
                map.values().for_each(|v| refs(v, out));
            }
            Value::Array(items) => items.iter().for_each(|v| refs(v, out)),
            _ => {}
        }
    }

    #[test]
    fn every_reference_of_the_api_description_resolves() {
        let doc: Value = serde_json::from_str(OPENAPI_JSON).expect("JSON");
        let mut found = Vec::new();
        refs(&doc, &mut found);
        assert!(!found.is_empty());
        for target in found {
            let pointer = target.strip_prefix('#').expect("a local reference");
            assert!(doc.pointer(pointer).is_some(), "{target} names nothing");
        }
    }

    /// The limits answer every authenticated route; a client generated from the document
    /// must expect them.
    #[test]
    fn every_operation_describes_the_limits_answers() {
        let doc: Value = serde_json::from_str(OPENAPI_JSON).expect("JSON");
        for (path, operations) in doc["paths"].as_object().expect("paths") {
            if path == "/healthz" {
                continue;
            }
            for (method, operation) in operations.as_object().expect("operations") {
                let Some(responses) = operation.get("responses") else {
                    continue;
                };
                for status in ["429", "503"] {
                    assert!(
                        responses.get(status).is_some(),
                        "{method} {path} does not describe {status}"
                    );
                }
            }
        }
    }
}
