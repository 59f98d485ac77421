//! The gate's revisit signals (`GET /v1/revisits`): what changed in a connector's contract,
//! and what was seen for the first time, as the audit records them.

use serde::{Deserialize, Serialize};

use crate::domain::RevisitKind;

/// One revisit event: the gate should be looked at again because `subject` changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Revisit {
    /// Its place in the audit: later events have larger numbers.
    pub seq: u64,
    pub kind: RevisitKind,
    /// The connector, provider, release or tool concerned.
    pub subject: String,
    /// What of it changed: a contract field (`key_retention_secs`, …), an operation's name,
    /// `contract` for a new provider, `release`, or a tool's consequence tier.
    pub field: String,
    /// The value before; absent for a first sighting.
    #[serde(default)]
    pub old: Option<String>,
    pub new: String,
    /// The tenant whose intent or attempt named it; absent for the coordinator's own
    /// configuration.
    #[serde(default)]
    pub tenant: Option<String>,
    pub at_ms: u64,
}

/// A page of revisit events, newest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RevisitPage {
    pub items: Vec<Revisit>,
}
