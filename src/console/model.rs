//! What the console reads from the coordinator, as the console understands it. Parsing is
//! lenient where a newer coordinator may say more: an unknown state is kept as text and
//! shown as such, never dropped and never read as failed.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::domain::{ConsequenceTier, IntentState};

/// An intent state as received: known, or a name this console does not know yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StateName {
    Known(IntentState),
    Unknown(String),
}

impl StateName {
    pub fn parse(raw: &str) -> StateName {
        raw.parse()
            .map_or_else(|_| StateName::Unknown(raw.to_string()), StateName::Known)
    }

    pub fn known(&self) -> Option<IntentState> {
        match self {
            StateName::Known(s) => Some(*s),
            StateName::Unknown(_) => None,
        }
    }

    pub fn wire(&self) -> &str {
        match self {
            StateName::Known(s) => s.as_str(),
            StateName::Unknown(raw) => raw,
        }
    }
}

impl<'de> Deserialize<'de> for StateName {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(StateName::parse(&String::deserialize(d)?))
    }
}

impl Serialize for StateName {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.wire())
    }
}

/// One intent as a list row or an envelope. Ids stay strings: the console shows and sends
/// them back, it never builds them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IntentRow {
    pub id: String,
    pub tenant: String,
    #[serde(default)]
    pub caller_key: String,
    #[serde(default)]
    pub actor: String,
    #[serde(default)]
    pub purpose: String,
    pub operation: String,
    #[serde(default)]
    pub tool: String,
    #[serde(default)]
    pub consequence: Option<String>,
    #[serde(default)]
    pub args: Option<Value>,
    #[serde(default)]
    pub canonical_args_hash: String,
    #[serde(default)]
    pub release_id: String,
    #[serde(default)]
    pub locale: String,
    #[serde(default)]
    pub connector: String,
    #[serde(default)]
    pub action_key: String,
    pub state: StateName,
    #[serde(default)]
    pub state_reason: Option<String>,
    #[serde(default)]
    pub authorization_version: Option<String>,
    #[serde(default)]
    pub approver: Option<String>,
    #[serde(default)]
    pub attempts: u32,
    #[serde(default)]
    pub max_attempts: u32,
    pub created_at_ms: u64,
    #[serde(default)]
    pub updated_at_ms: u64,
    #[serde(default)]
    pub deadline_at_ms: u64,
    #[serde(default)]
    pub indeterminate_since_ms: Option<u64>,
    #[serde(default)]
    pub committed_at_ms: Option<u64>,
    #[serde(default)]
    pub first_dispatch_at_ms: Option<u64>,
    #[serde(default)]
    pub key_retention_secs: Option<u64>,
    #[serde(default)]
    pub receipt_id: Option<String>,
    #[serde(default)]
    pub downstream_ref: Option<String>,
    #[serde(default)]
    pub retry_owner: String,
    #[serde(default)]
    pub providers: Vec<String>,
    #[serde(default)]
    pub paused: bool,
}

impl IntentRow {
    pub fn tier(&self) -> Option<ConsequenceTier> {
        self.consequence.as_deref().and_then(|t| t.parse().ok())
    }

    /// Attempts per intent is the amplification of one intent.
    pub fn amplification(&self) -> f64 {
        f64::from(self.attempts)
    }

    /// The first eight characters after the prefix: enough to tell intents apart on screen.
    pub fn short_id(&self) -> &str {
        let end = self.id.len().min(4 + 10);
        &self.id[..end]
    }
}

/// One page of the intents list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IntentPage {
    pub items: Vec<IntentRow>,
    #[serde(default)]
    pub next_cursor: Option<String>,
    #[serde(default)]
    pub total: u64,
    #[serde(default = "yes")]
    pub total_exact: bool,
}

fn yes() -> bool {
    true
}

/// One attempt of an intent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttemptRow {
    pub id: String,
    pub kind: String,
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
    pub outcome: String,
    #[serde(default)]
    pub error_class: Option<String>,
    #[serde(default)]
    pub http_status: Option<u16>,
    #[serde(default)]
    pub retry_after_ms: Option<u64>,
    #[serde(default)]
    pub proposal_hash: Option<String>,
    #[serde(default)]
    pub presented_key: Option<String>,
    #[serde(default)]
    pub replayed: Option<bool>,
    #[serde(default)]
    pub sent: bool,
    #[serde(default)]
    pub late: bool,
    #[serde(default)]
    pub detail: Option<String>,
    pub started_at_ms: u64,
    #[serde(default)]
    pub ended_at_ms: Option<u64>,
}

/// One receipt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReceiptRow {
    pub id: String,
    pub downstream_id: String,
    pub source: String,
    #[serde(default)]
    pub event_id: Option<String>,
    pub authoritative: bool,
    pub received_at_ms: u64,
}

/// One state change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TransitionRow {
    #[serde(default)]
    pub from: Option<String>,
    pub to: String,
    pub event: String,
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub command_id: Option<String>,
    pub at_ms: u64,
}

/// One operator command from the audit trail.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandRow {
    pub command_id: String,
    pub kind: String,
    pub actor: String,
    pub role: String,
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub dry_run: bool,
    pub status: String,
    #[serde(default)]
    pub result: Value,
    #[serde(default)]
    pub body: Value,
    pub created_at_ms: u64,
}

/// One intent with everything attached.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IntentDetail {
    pub intent: IntentRow,
    #[serde(default)]
    pub attempts: Vec<AttemptRow>,
    #[serde(default)]
    pub receipts: Vec<ReceiptRow>,
    #[serde(default)]
    pub transitions: Vec<TransitionRow>,
    #[serde(default)]
    pub commands: Vec<CommandRow>,
    #[serde(default)]
    pub pauses: Vec<Value>,
    #[serde(default)]
    pub key_forget_at_ms: Option<u64>,
    #[serde(default)]
    pub ingest_replays: u32,
    #[serde(default)]
    pub ingest_mismatches: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_state_from_a_newer_coordinator_is_kept_not_dropped() {
        let row: IntentRow = serde_json::from_value(serde_json::json!({
            "id": "int_01", "tenant": "acme", "operation": "x", "state": "quarantined", "created_at_ms": 1
        }))
        .expect("lenient parse");
        assert_eq!(row.state, StateName::Unknown("quarantined".into()));
    }
}
