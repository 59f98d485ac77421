//! Attempts: the body an agent reports one with, the body it finishes one with, and an
//! attempt as the coordinator answers it.

use serde::{Deserialize, Serialize};

use crate::domain::{AttemptId, AttemptKind, AttemptOutcome, IntentId};

/// A non-mutating attempt an agent reports (the body of `POST /v1/intents/{id}/attempts`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewAttempt {
    /// `retrieval`, `inference` (when absent) or `proposal`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<AttemptKind>,
    pub provider: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_request_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hedge_group: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proposal_hash: Option<String>,
}

/// How a reported attempt ended, as its agent says (the body of
/// `PATCH /v1/intents/{id}/attempts/{attempt_id}`). Whether anything crossed the action
/// boundary is never the agent's to say: reported work crosses nothing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AttemptReport {
    pub outcome: AttemptOutcome,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_class: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_status: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_request_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proposal_hash: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// What the call cost, in millionths of the billing currency the agent reports in
    /// (USD 0.0042 is 4200); a losing hedge keeps it as the hedge's cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_micros: Option<u64>,
}

impl AttemptReport {
    /// A report of `outcome` and nothing else.
    pub fn new(outcome: AttemptOutcome) -> Self {
        AttemptReport {
            outcome,
            error_class: None,
            http_status: None,
            retry_after_ms: None,
            provider_request_id: None,
            proposal_hash: None,
            detail: None,
            cost_micros: None,
        }
    }
}

/// One attempt of an intent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Attempt {
    pub id: AttemptId,
    /// Always sent; the intent it belongs to.
    #[serde(default)]
    pub intent_id: Option<IntentId>,
    pub kind: AttemptKind,
    pub provider: String,
    #[serde(default)]
    pub region: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub release_id: Option<String>,
    #[serde(default)]
    pub worker: Option<String>,
    #[serde(default)]
    pub provider_request_id: Option<String>,
    #[serde(default)]
    pub hedge_group: Option<String>,
    pub outcome: AttemptOutcome,
    #[serde(default)]
    pub error_class: Option<String>,
    #[serde(default)]
    pub http_status: Option<u16>,
    #[serde(default)]
    pub retry_after_ms: Option<u64>,
    #[serde(default)]
    pub proposal_hash: Option<String>,
    /// The action key this attempt presented downstream.
    #[serde(default)]
    pub presented_key: Option<String>,
    #[serde(default)]
    pub replayed: Option<bool>,
    #[serde(default)]
    pub sent: bool,
    /// Completed after the intent's deadline or final state.
    #[serde(default)]
    pub late: bool,
    #[serde(default)]
    pub detail: Option<String>,
    pub started_at_ms: u64,
    #[serde(default)]
    pub ended_at_ms: Option<u64>,
    /// The principal that reported it; `None` for the coordinator's own dispatches and
    /// lookups.
    #[serde(default)]
    pub reported_by: Option<String>,
    /// For a dispatch, the downstream resource it was sent to, resolved and stored when it
    /// was claimed.
    #[serde(default)]
    pub downstream_resource: Option<String>,
    /// For a dispatch, the connector's key retention it was sent under.
    #[serde(default)]
    pub key_retention_secs: Option<u64>,
    /// What the attempt cost, as its reporter said.
    #[serde(default)]
    pub cost_micros: Option<u64>,
    /// A hedge another attempt of its group beat: its cost is the hedge's price.
    #[serde(default)]
    pub hedge_lost: bool,
}
