//! Receipts: a downstream's delivery of one, what the coordinator did with it, and a
//! receipt as stored.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::domain::IntentId;

/// One stored receipt of an intent. The authoritative one is the intent's result; others
/// are kept as evidence (of a duplicate effect, or contradicting a close).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Receipt {
    pub id: String,
    /// Always sent; the intent it belongs to.
    #[serde(default)]
    pub intent_id: Option<IntentId>,
    #[serde(default)]
    pub action_key: String,
    pub downstream_id: String,
    /// `dispatch`, `lookup`, `webhook`, `attempt` or `operator`.
    pub source: String,
    #[serde(default)]
    pub event_id: Option<String>,
    pub authoritative: bool,
    pub received_at_ms: u64,
}

/// The body of `POST /v1/receipts/{connector}`: a downstream's webhook. Fields a sender adds
/// besides these are kept out of the way, not refused (downstreams add their own).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReceiptDelivery {
    pub event_id: String,
    pub action_key: String,
    pub downstream_id: String,
    /// Only `created` is understood.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(flatten)]
    pub other: BTreeMap<String, Value>,
}

/// What a webhook delivery did.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum WebhookOutcome {
    /// The event id was seen before for this key; nothing changed.
    Duplicate { deliveries: u32 },
    /// First delivery; the receipt was observed.
    Recorded { committed: bool },
}
