//! Operational routes: `GET /healthz` (no token; the store, its writer and each background
//! part, 503 when one of them does not serve),
//! `GET /metrics` (Prometheus text, `Permission::Read`, limited to the caller's tenants) and
//! `GET /v1/openapi.json` (the API description, for any valid token).
//!
//! Metric families, all computed from the store at scrape time:
//! - `intentdesk_intents{state}` and `intentdesk_intents_by_tenant{tenant,state}`
//! - `intentdesk_attempt_amplification{quantile}` (a summary: `_sum` attempts, `_count`
//!   intents) with `intentdesk_attempt_amplification_mean` and `_max`
//! - `intentdesk_indeterminate_count`, `intentdesk_indeterminate_oldest_age_seconds` and
//!   their `_by_tenant{tenant}` forms
//! - `intentdesk_duplicate_effects_total`, `intentdesk_late_results_total`,
//!   `intentdesk_goodput_committed_total`
//! - only for unrestricted tokens, as they describe the coordinator every tenant shares:
//!   `intentdesk_dispatcher_queue_depth` (the outbox), `intentdesk_ingest_writes_waiting`,
//!   `intentdesk_ingest_writes_limit` and `intentdesk_ingest_shed_total` (agents' writes
//!   refused with 503 because the write queue was full), `intentdesk_metric_index_bytes`.
//!
//! The per-tenant families use their own names so that summing a family never counts an
//! intent twice.

use std::fmt::Write;

use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};

use super::AppState;
use super::auth::Principal;
use super::error::ApiError;
use crate::domain::{IntentState, Permission};
use crate::store::db::IngestLoad;
use crate::store::operator_queries::TenantCounts;
use crate::store::ops::*;
use crate::store::{IntentFilter, StoreError};
use crate::wire::{Health, HealthPart, HealthStatus, PartStatus, Summary};

/// The OpenAPI 3.1 description of every coordinator route.
pub const OPENAPI_JSON: &str = include_str!("../../docs/openapi.json");

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/metrics", get(prometheus))
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
                let read = tokio::time::timeout(
                    PROBE_WAIT,
                    state.db.read(|s| s.last_event_seq().map(drop)),
                );
                // An empty write ahead of every agent's: it proves the writer takes and
                // commits.
                let write = tokio::time::timeout(PROBE_WAIT, state.db.write(|_| Ok(())));
                let (read, write) = tokio::join!(read, write);
                let (read, write) = (probe(read), probe(write));
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

/// Everything one scrape reports.
struct Scrape {
    summary: Summary,
    tenants: Vec<TenantCounts>,
    /// What only an unrestricted token sees.
    process: Option<Process>,
}

/// The coordinator's own figures, shared by every tenant.
struct Process {
    outbox_depth: u64,
    ingest: IngestLoad,
    index_bytes: usize,
}

async fn prometheus(
    State(state): State<AppState>,
    principal: Principal,
) -> Result<Response, ApiError> {
    principal.require(Permission::Read, "read metrics")?;
    let filter = IntentFilter {
        allowed_tenants: principal.tenants.clone(),
        ..IntentFilter::default()
    };
    let unrestricted = principal.tenants.is_none();
    let now = state.clock.now_ms();
    let ingest = state.db.ingest_load();
    let index = state.metrics.clone();
    let scrape = state
        .db
        .read(move |s| {
            Ok(Scrape {
                summary: s.summary(&filter, now)?,
                tenants: s.tenant_counts(&filter, now)?,
                process: if unrestricted {
                    Some(Process {
                        outbox_depth: s.outbox_depth()?,
                        ingest,
                        index_bytes: super::charts::index_bytes(&index),
                    })
                } else {
                    None
                },
            })
        })
        .await?;
    let mut response = render(&scrape).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    Ok(response)
}

/// A label value with `\`, `"` and line breaks escaped.
fn label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

fn render(scrape: &Scrape) -> String {
    let s = &scrape.summary;
    let mut out = String::new();

    family(&mut out, "intentdesk_intents", "gauge", "Intents by state.");
    for state in IntentState::ALL {
        let n = s.states.get(state.as_str()).copied().unwrap_or(0);
        let _ = writeln!(out, "intentdesk_intents{{state=\"{state}\"}} {n}");
    }
    family(
        &mut out,
        "intentdesk_intents_by_tenant",
        "gauge",
        "Intents by tenant and state.",
    );
    for t in &scrape.tenants {
        for (state, n) in &t.states {
            let _ = writeln!(
                out,
                "intentdesk_intents_by_tenant{{tenant=\"{}\",state=\"{}\"}} {n}",
                label(&t.tenant),
                label(state)
            );
        }
    }

    let a = &s.amplification;
    family(
        &mut out,
        "intentdesk_attempt_amplification",
        "summary",
        "Attempts per intent.",
    );
    for (q, v) in [("0.5", a.p50), ("0.95", a.p95), ("0.99", a.p99)] {
        let _ = writeln!(
            out,
            "intentdesk_attempt_amplification{{quantile=\"{q}\"}} {v}"
        );
    }
    let _ = writeln!(out, "intentdesk_attempt_amplification_sum {}", s.attempts);
    let _ = writeln!(out, "intentdesk_attempt_amplification_count {}", s.intents);
    family(
        &mut out,
        "intentdesk_attempt_amplification_mean",
        "gauge",
        "Attempts divided by intents.",
    );
    let _ = writeln!(out, "intentdesk_attempt_amplification_mean {}", a.mean);
    family(
        &mut out,
        "intentdesk_attempt_amplification_max",
        "gauge",
        "The most attempts any one intent took.",
    );
    let _ = writeln!(out, "intentdesk_attempt_amplification_max {}", a.max);

    family(
        &mut out,
        "intentdesk_indeterminate_count",
        "gauge",
        "Intents whose outcome is not proved either way.",
    );
    let _ = writeln!(
        out,
        "intentdesk_indeterminate_count {}",
        s.indeterminate.count
    );
    family(
        &mut out,
        "intentdesk_indeterminate_oldest_age_seconds",
        "gauge",
        "How long the oldest indeterminate intent has been indeterminate.",
    );
    let _ = writeln!(
        out,
        "intentdesk_indeterminate_oldest_age_seconds {}",
        s.indeterminate.oldest_age_secs
    );
    family(
        &mut out,
        "intentdesk_indeterminate_count_by_tenant",
        "gauge",
        "Indeterminate intents by tenant.",
    );
    for t in &scrape.tenants {
        let _ = writeln!(
            out,
            "intentdesk_indeterminate_count_by_tenant{{tenant=\"{}\"}} {}",
            label(&t.tenant),
            t.indeterminate
        );
    }
    family(
        &mut out,
        "intentdesk_indeterminate_oldest_age_seconds_by_tenant",
        "gauge",
        "Age of the oldest indeterminate intent, by tenant.",
    );
    for t in &scrape.tenants {
        let _ = writeln!(
            out,
            "intentdesk_indeterminate_oldest_age_seconds_by_tenant{{tenant=\"{}\"}} {}",
            label(&t.tenant),
            t.indeterminate_oldest_age_secs
        );
    }

    family(
        &mut out,
        "intentdesk_duplicate_effects_total",
        "counter",
        "Downstream effects beyond an intent's first.",
    );
    let _ = writeln!(
        out,
        "intentdesk_duplicate_effects_total {}",
        s.duplicate_effects
    );
    family(
        &mut out,
        "intentdesk_late_results_total",
        "counter",
        "Attempts that completed after their intent's deadline or cancellation.",
    );
    let _ = writeln!(out, "intentdesk_late_results_total {}", s.late_results);
    family(
        &mut out,
        "intentdesk_goodput_committed_total",
        "counter",
        "Committed intents.",
    );
    let _ = writeln!(out, "intentdesk_goodput_committed_total {}", s.committed);

    if let Some(process) = &scrape.process {
        render_process(&mut out, process);
    }
    out
}

fn render_process(out: &mut String, p: &Process) {
    let figures = [
        (
            "intentdesk_dispatcher_queue_depth",
            "gauge",
            "Dispatches waiting or in flight.",
            p.outbox_depth,
        ),
        (
            "intentdesk_ingest_writes_waiting",
            "gauge",
            "Agents' writes waiting for or in the store.",
            p.ingest.in_flight as u64,
        ),
        (
            "intentdesk_ingest_writes_limit",
            "gauge",
            "Agents' writes allowed to wait at once (limits.max_queued_writes).",
            p.ingest.cap as u64,
        ),
        (
            "intentdesk_ingest_shed_total",
            "counter",
            "Agents' writes refused with 503 because the write queue was full.",
            p.ingest.shed_total,
        ),
        (
            "intentdesk_metric_index_bytes",
            "gauge",
            "Memory the dashboard's metric index holds, roughly.",
            p.index_bytes as u64,
        ),
    ];
    for (name, kind, help, value) in figures {
        family(out, name, kind, help);
        let _ = writeln!(out, "{name} {value}");
    }
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
