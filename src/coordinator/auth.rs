//! Bearer-token authentication and tenant scope. Tokens are compared by their SHA-256, so
//! the configuration never holds a usable secret. No token: 401; a role that may not: 403;
//! another tenant's intent: 404, so existence is not leaked.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;

use super::AppState;
use super::config::token_sha256;
use super::error::ApiError;
use crate::domain::{Permission, Role, Tenant};

/// Who is calling.
#[derive(Debug, Clone)]
pub struct Principal {
    pub name: String,
    pub role: Role,
    /// `None` for every tenant (`"*"`).
    pub tenants: Option<Vec<String>>,
    /// The connectors a `connector` token speaks for; empty for every other role.
    pub connectors: Vec<String>,
    /// The token may approve intents it created (`may_approve_own`, admins only).
    pub may_approve_own: bool,
}

impl Principal {
    pub fn require(&self, permission: Permission, what: &str) -> Result<(), ApiError> {
        if self.role.may(permission) {
            Ok(())
        } else {
            Err(ApiError::forbidden(what))
        }
    }

    pub fn sees(&self, tenant: &str) -> bool {
        self.tenants
            .as_ref()
            .is_none_or(|list| list.iter().any(|t| t == tenant))
    }

    /// Whether the caller may deliver receipts of `connector`.
    pub fn speaks_for(&self, connector: &str) -> bool {
        self.role.may(Permission::Receipt) && self.connectors.iter().any(|c| c == connector)
    }

    /// 404 unless the caller may see `tenant`.
    pub fn check_tenant(&self, tenant: &Tenant, what: &str, id: &str) -> Result<(), ApiError> {
        if self.sees(tenant.as_str()) {
            Ok(())
        } else {
            Err(ApiError::not_found(what, id))
        }
    }
}

impl FromRequestParts<AppState> for Principal {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let token = bearer(&parts.headers).ok_or_else(ApiError::unauthorized)?;
        let hash = token_sha256(token);
        let found = state
            .config
            .tokens
            .iter()
            .find(|t| t.token_sha256.eq_ignore_ascii_case(&hash));
        let token = found.ok_or_else(|| {
            ApiError::new(
                axum::http::StatusCode::UNAUTHORIZED,
                "unauthorized",
                "unknown token",
            )
        })?;
        let tenants = if token.tenants.iter().any(|t| t == "*") {
            None
        } else {
            Some(token.tenants.clone())
        };
        Ok(Principal {
            name: token.name.clone(),
            role: token.role,
            tenants,
            connectors: token.connectors.clone(),
            may_approve_own: token.may_approve_own,
        })
    }
}

/// The bearer token of a request, if it carries one.
pub fn bearer(headers: &axum::http::HeaderMap) -> Option<&str> {
    headers
        .get(axum::http::header::AUTHORIZATION)?
        .to_str()
        .ok()?
        .strip_prefix("Bearer ")
        .map(str::trim)
        .filter(|t| !t.is_empty())
}
