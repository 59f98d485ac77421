//! `GET /v1/revisits`: the gate's part of the audit trail, newest first. Events of the
//! coordinator's own configuration (a connector's contract) are everyone's who may read;
//! a first sighting named by an intent or attempt is its tenant's.

use axum::Json;
use axum::extract::State;

use super::params::{Params, RawQuery};
use crate::coordinator::AppState;
use crate::coordinator::auth::Principal;
use crate::coordinator::error::ApiError;
use crate::domain::Permission;
use crate::store::MAX_REVISITS;
use crate::store::ops::*;
use crate::wire::RevisitPage;

/// Events per page when the caller names no `limit`.
const DEFAULT_LIMIT: u32 = 100;

/// `after` (a `seq`: only later events) and `limit` (1–500).
pub async fn revisits(
    State(state): State<AppState>,
    principal: Principal,
    query: RawQuery,
) -> Result<Json<RevisitPage>, ApiError> {
    principal.require(Permission::Read, "read the audit trail")?;
    let mut p = Params::new(query, &[&["after", "limit"]])?;
    let after = p.number("after", 0, i64::MAX as u64).unwrap_or(0);
    let limit = p.number("limit", 1, MAX_REVISITS).unwrap_or(DEFAULT_LIMIT);
    p.finish()?;
    let tenants = principal.tenants.clone();
    let items = state
        .db
        .read(move |s| s.revisits(after, tenants.as_deref(), limit))
        .await?;
    Ok(Json(RevisitPage { items }))
}
