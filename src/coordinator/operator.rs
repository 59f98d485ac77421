//! The operator API the console reads: intent lists, one intent, the action-key ledger,
//! metric summaries and series, active pauses; and (in [`commands`]) the commands and the
//! audit trail.
//!
//! Every read needs `Permission::Read` and is limited to the caller's tenants: the scope is
//! put into every store filter (`IntentFilter::allowed_tenants`), so another tenant's intents
//! are absent from lists and metrics, and asking for one by id answers 404 as if it did not
//! exist. Malformed ids answer 404 too, so probing tells nothing.

pub mod commands;
pub mod params;
pub mod revisits;

use axum::extract::{Path, State};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{Value, json};

use self::params::{FILTER_PARAMS, Params, RawQuery};
use super::AppState;
use super::auth::Principal;
use super::error::ApiError;
use crate::domain::{ActionKey, IntentId, Permission};
use crate::store::ops::*;
use crate::store::{Cursor, MAX_PAGE, SERIES_METRICS, SortKey};
use crate::wire::{IntentDetail, IntentPage, KeyLedger, Summary};

/// Page size when the caller names none.
const DEFAULT_PAGE: u32 = 100;
/// Series defaults: one-minute buckets over the last hour.
const DEFAULT_BUCKET_SECS: u64 = 60;
const DEFAULT_WINDOW_MS: u64 = 3_600_000;
const MAX_BUCKET_SECS: u64 = 86_400;
/// A series may span at most this many buckets.
const MAX_BUCKETS: u64 = 100_000;
/// The dimensions a series may be grouped by.
const GROUP_BY: &[&str] = &[
    "none",
    "tenant",
    "provider",
    "release",
    "tool",
    "operation",
    "locale",
    "tier",
];

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/v1/intents", get(list_intents))
        .route("/v1/intents/{id}", get(intent_detail))
        .route("/v1/action-keys/{key}", get(key_ledger))
        .route("/v1/metrics/summary", get(metrics_summary))
        .route("/v1/metrics/series", get(metrics_series))
        .route("/v1/pauses", get(active_pauses))
        .route("/v1/revisits", get(revisits::revisits))
        .merge(commands::routes())
}

/// The key retention `connector` is configured with now, to hold beside the one an intent's
/// key was sent under.
fn live_retention(config: &crate::coordinator::Config, connector: &str) -> Option<u64> {
    config.connector(connector).map(|c| c.key_retention_secs)
}

/// An id as echoed in a 404: clipped, so a long path is never repeated whole.
pub(crate) fn shown(raw: &str) -> String {
    raw.chars().take(80).collect()
}

async fn list_intents(
    State(state): State<AppState>,
    principal: Principal,
    query: RawQuery,
) -> Result<Json<IntentPage>, ApiError> {
    principal.require(Permission::Read, "read intents")?;
    let mut p = Params::new(
        query,
        &[FILTER_PARAMS, &["sort", "cursor", "limit", "workflow"]],
    )?;
    let mut filter = p.filter(&principal);
    // The intents of one or more workflows, each the caller's own text.
    filter.workflows = p.list("workflow");
    let (sort, ascending) = match p.text("sort") {
        None => (SortKey::Created, false),
        Some(raw) => SortKey::parse(&raw).unwrap_or_else(|| {
            p.fail(
                "sort",
                "expected created, attempts, deadline, updated or indeterminate_since, optionally prefixed by `-` \
                 for descending",
            );
            (SortKey::Created, false)
        }),
    };
    let limit = p.number("limit", 1, MAX_PAGE).unwrap_or(DEFAULT_PAGE);
    let cursor = match p.text("cursor").map(|raw| Cursor::decode(&raw)) {
        None => None,
        Some(Ok(c)) if c.sort == sort && c.ascending == ascending => Some(c),
        Some(Ok(_)) => {
            p.fail(
                "cursor",
                "belongs to another sort order; start again without a cursor",
            );
            None
        }
        Some(Err(e)) => {
            p.fail("cursor", e.to_string());
            None
        }
    };
    p.finish()?;
    let page = state
        .db
        .read(move |s| s.list_intents(&filter, sort, ascending, cursor.as_ref(), limit))
        .await?;
    Ok(Json(page))
}

async fn intent_detail(
    State(state): State<AppState>,
    principal: Principal,
    Path(raw_id): Path<String>,
) -> Result<Json<IntentDetail>, ApiError> {
    principal.require(Permission::Read, "read intents")?;
    let missing = || ApiError::not_found("intent", &shown(&raw_id));
    let id: IntentId = raw_id.parse().map_err(|_| missing())?;
    let tenants = principal.tenants.clone();
    let config = state.config.clone();
    let detail = state
        .db
        .read(move |s| {
            let mut detail = s.intent_detail(&id)?;
            detail.live_key_retention_secs = live_retention(&config, &detail.intent.connector);
            if let Some(list) = &tenants {
                if !list.iter().any(|t| t == detail.intent.tenant.as_str()) {
                    return Ok(None);
                }
                // Commands that covered this intent but also others the caller cannot see
                // (fleet-wide ones) are left out; see `Store::audit_within`.
                detail.commands = s.audit_within(Some(&id), list, 200)?;
            }
            Ok(Some(detail))
        })
        .await
        .map_err(|e| match e {
            crate::store::StoreError::NotFound { .. } => missing(),
            other => other.into(),
        })?;
    detail.map(Json).ok_or_else(missing)
}

async fn key_ledger(
    State(state): State<AppState>,
    principal: Principal,
    Path(raw_key): Path<String>,
) -> Result<Json<KeyLedger>, ApiError> {
    principal.require(Permission::Read, "read action keys")?;
    let missing = || ApiError::not_found("action key", &shown(&raw_key));
    let key: ActionKey = raw_key.parse().map_err(|_| missing())?;
    if !principal.sees(key.tenant().as_str()) {
        return Err(missing());
    }
    let ledger = state
        .db
        .read(move |s| s.key_ledger(&key))
        .await
        .map_err(|e| match e {
            crate::store::StoreError::NotFound { .. } => missing(),
            other => other.into(),
        })?;
    // The key names its tenant, but the stored intent is the authority.
    if !principal.sees(ledger.intent.tenant.as_str()) {
        return Err(missing());
    }
    let mut ledger = ledger;
    ledger.live_key_retention_secs = live_retention(&state.config, &ledger.intent.connector);
    Ok(Json(ledger))
}

async fn metrics_summary(
    State(state): State<AppState>,
    principal: Principal,
    query: RawQuery,
) -> Result<Json<Summary>, ApiError> {
    principal.require(Permission::Read, "read metrics")?;
    let mut p = Params::new(query, &[FILTER_PARAMS])?;
    let filter = p.filter(&principal);
    p.finish()?;
    let now = state.clock.now_ms();
    let releases = state.config.releases.clone();
    let summary = state
        .db
        .read(move |s| s.summary_with(&filter, now, &releases))
        .await?;
    Ok(Json(summary))
}

async fn metrics_series(
    State(state): State<AppState>,
    principal: Principal,
    query: RawQuery,
) -> Result<Json<Value>, ApiError> {
    principal.require(Permission::Read, "read metrics")?;
    let mut p = Params::new(
        query,
        &[
            FILTER_PARAMS,
            &["metric", "bucket_secs", "group_by", "from", "to"],
        ],
    )?;
    let filter = p.filter(&principal);
    let metric = match p.text("metric") {
        Some(m) if SERIES_METRICS.contains(&m.as_str()) => Some(m),
        Some(_) => {
            p.fail(
                "metric",
                format!(
                    "unknown metric; expected one of: {}",
                    SERIES_METRICS.join(", ")
                ),
            );
            None
        }
        None => {
            p.fail(
                "metric",
                format!("required; one of: {}", SERIES_METRICS.join(", ")),
            );
            None
        }
    };
    let group_by = p.text("group_by").unwrap_or_else(|| "none".to_string());
    if !GROUP_BY.contains(&group_by.as_str()) {
        p.fail(
            "group_by",
            format!(
                "unknown dimension; expected one of: {}",
                GROUP_BY.join(", ")
            ),
        );
    }
    let bucket_secs = p
        .number("bucket_secs", 1, MAX_BUCKET_SECS)
        .unwrap_or(DEFAULT_BUCKET_SECS);
    let now = state.clock.now_ms();
    let to_ms = p.number("to", 0, u64::MAX).unwrap_or(now);
    let from_ms = p
        .number("from", 0, u64::MAX)
        .unwrap_or(to_ms.saturating_sub(DEFAULT_WINDOW_MS));
    if from_ms >= to_ms {
        p.fail("from", "must be before `to`");
    } else if (to_ms - from_ms) / (bucket_secs * 1000) > MAX_BUCKETS {
        p.fail(
            "bucket_secs",
            format!("the window would have more than {MAX_BUCKETS} buckets; use larger buckets"),
        );
    }
    p.finish()?;
    let metric = metric.unwrap_or_default();
    let (m, g) = (metric.clone(), group_by.clone());
    let points = state
        .db
        .read(move |s| s.series(&m, bucket_secs * 1000, &g, &filter, from_ms, to_ms))
        .await?;
    Ok(Json(json!({
        "metric": metric,
        "bucket_secs": bucket_secs,
        "group_by": group_by,
        "from_ms": from_ms,
        "to_ms": to_ms,
        "points": points,
    })))
}

async fn active_pauses(
    State(state): State<AppState>,
    principal: Principal,
    query: RawQuery,
) -> Result<Json<Value>, ApiError> {
    principal.require(Permission::Read, "read pauses")?;
    Params::new(query, &[])?.finish()?;
    let tenants = principal.tenants.clone();
    let pauses = state
        .db
        .read(move |s| s.active_pauses(tenants.as_deref()))
        .await?;
    Ok(Json(json!({ "items": pauses })))
}
