//! `GET /v1/whoami`: what the caller's token is — its name, role, tenant scope and what the
//! role may do — so a client can disable what the role forbids and say why before asking.
//! Any valid token may ask; the answer describes only the caller.

use axum::routing::get;
use axum::{Json, Router};

use super::AppState;
use super::auth::Principal;
use crate::domain::Permission;
use crate::wire::{Permissions, Whoami};

pub fn routes() -> Router<AppState> {
    Router::new().route("/v1/whoami", get(whoami))
}

async fn whoami(principal: Principal) -> Json<Whoami> {
    let may = |p: Permission| principal.role.may(p);
    Json(Whoami {
        name: principal.name.clone(),
        role: principal.role,
        tenants: principal.tenants.clone(),
        connectors: principal.connectors.clone(),
        may: Permissions {
            ingest: may(Permission::Ingest),
            approve: may(Permission::Approve),
            receipt: may(Permission::Receipt),
            read: may(Permission::Read),
            pause_resume: may(Permission::PauseResume),
            reconcile: may(Permission::Reconcile),
            close: may(Permission::Close),
        },
    })
}
