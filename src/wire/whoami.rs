//! `GET /v1/whoami`: what the caller's token is and what its role may do.

use serde::{Deserialize, Serialize};

use crate::domain::Role;

/// The caller's token.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Whoami {
    pub name: String,
    pub role: Role,
    /// `None` for every tenant.
    #[serde(default)]
    pub tenants: Option<Vec<String>>,
    /// The connectors a connector token speaks for.
    #[serde(default)]
    pub connectors: Vec<String>,
    #[serde(default)]
    pub may: Permissions,
}

/// What the token's role may do.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Permissions {
    #[serde(default)]
    pub ingest: bool,
    /// Authorise intents other principals created.
    #[serde(default)]
    pub approve: bool,
    #[serde(default)]
    pub receipt: bool,
    #[serde(default)]
    pub read: bool,
    #[serde(default)]
    pub pause_resume: bool,
    #[serde(default)]
    pub reconcile: bool,
    #[serde(default)]
    pub close: bool,
}
