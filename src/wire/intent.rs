//! An intent: the envelope every answer carries, the body that creates one, its
//! authorisation, and the answer to a dispatch.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::domain::{
    ActionKey, ConsequenceTier, IntentId, IntentState, Locale, RetryOwner, Tenant,
};

/// An intent with its envelope. `args` is filled only when one intent is read whole.
///
/// `S` is how its state is read: [`IntentState`] by the coordinator, [`StateName`] by a
/// client that keeps a state it does not know.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Intent<S = IntentState> {
    pub id: IntentId,
    pub tenant: Tenant,
    #[serde(default)]
    pub caller_key: String,
    #[serde(default)]
    pub actor: String,
    #[serde(default)]
    pub purpose: String,
    pub operation: String,
    #[serde(default)]
    pub tool: String,
    pub consequence: ConsequenceTier,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Value>,
    /// The canonical JSON text the hash covers, as the coordinator froze it; filled, like
    /// `args`, only when one intent is read whole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canonical_args: Option<String>,
    #[serde(default)]
    pub canonical_args_hash: String,
    #[serde(default)]
    pub release_id: String,
    #[serde(default = "default_locale")]
    pub locale: Locale,
    #[serde(default)]
    pub connector: String,
    pub action_key: ActionKey,
    pub state: S,
    #[serde(default)]
    pub state_reason: Option<String>,
    #[serde(default)]
    pub authorization_version: Option<String>,
    #[serde(default)]
    pub approver: Option<String>,
    #[serde(default)]
    pub authorized_at_ms: Option<u64>,
    #[serde(default)]
    pub authorization_expires_at_ms: Option<u64>,
    /// The version of the tenant's policy the approval was given under; `None` when the
    /// tenant had no policy then.
    #[serde(default)]
    pub policy_version: Option<String>,
    /// The principal (token name) that created the intent; it may never approve it.
    #[serde(default)]
    pub created_by: Option<String>,
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
    /// The connector's key retention the action key was first sent under (before any send:
    /// the one configured when the intent was created).
    #[serde(default)]
    pub key_retention_secs: Option<u64>,
    #[serde(default)]
    pub receipt_id: Option<String>,
    #[serde(default)]
    pub downstream_ref: Option<String>,
    /// Who retries the intent's work: the coordinator (mutating work, which only its
    /// dispatcher sends) or the agent (the work it reports, within the coordinator's budget).
    #[serde(default = "default_retry_owner")]
    pub retry_owner: RetryOwner,
    #[serde(default)]
    pub providers: Vec<String>,
    #[serde(default)]
    pub paused: bool,
    /// True once a dispatch may have reached the downstream.
    #[serde(default)]
    pub may_have_crossed_boundary: bool,
    /// Lookups of the action key made for this intent, automatic and operators': its
    /// lookup amplification, beside `attempts`.
    #[serde(default)]
    pub lookups: u32,
    #[serde(default)]
    pub last_lookup_at_ms: Option<u64>,
    /// When the next automatic lookup is due (while indeterminate, its budget not spent).
    #[serde(default)]
    pub next_lookup_at_ms: Option<u64>,
    /// When the automatic lookups' budget ran out: from then on the intent waits for an
    /// operator, who may still look it up on demand.
    #[serde(default)]
    pub lookups_exhausted_at_ms: Option<u64>,
    /// When the owner or an operator asked to cancel the intent. Before anything crossed
    /// the action boundary the intent is then `cancelled`; after, it keeps its state until
    /// evidence settles it, and no new attempt is made.
    #[serde(default)]
    pub cancel_requested_at_ms: Option<u64>,
    /// The principal that asked to cancel.
    #[serde(default)]
    pub cancel_requested_by: Option<String>,
    #[serde(default)]
    pub cancel_reason: Option<String>,
    /// The caller's business workflow the intent belongs to (its own text, per tenant).
    #[serde(default)]
    pub workflow_id: Option<String>,
    /// The intent this one was made for.
    #[serde(default)]
    pub parent_intent_id: Option<IntentId>,
    /// The intent this corrected order replaces.
    #[serde(default)]
    pub supersedes: Option<IntentId>,
    /// The corrected order that replaced this intent.
    #[serde(default)]
    pub superseded_by: Option<IntentId>,
}

fn default_locale() -> Locale {
    Locale::EnUs
}

fn default_retry_owner() -> RetryOwner {
    RetryOwner::Coordinator
}

impl<S> Intent<S> {
    /// Attempts per intent is the amplification of one intent.
    pub fn amplification(&self) -> f64 {
        f64::from(self.attempts)
    }

    /// The first ten characters after the prefix: enough to tell intents apart on screen.
    pub fn short_id(&self) -> &str {
        let id = self.id.as_str();
        &id[..id.len().min(4 + 10)]
    }
}

/// An intent state as received: known, or a name this client does not know yet.
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

/// The body of `POST /v1/intents` (with the caller's `Idempotency-Key` header). The
/// tenant and the text fields are checked by the coordinator, which names every bad one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateIntent {
    pub tenant: String,
    pub actor: String,
    pub purpose: String,
    pub operation: String,
    pub tool: String,
    pub consequence: ConsequenceTier,
    pub args: Value,
    pub deadline_secs: u64,
    pub max_attempts: u32,
    pub release_id: String,
    /// The interface the order was written in; `en-US` when absent.
    #[serde(default = "default_locale")]
    pub locale: Locale,
    /// `erp` when absent.
    #[serde(default = "default_connector")]
    pub connector: String,
    /// The caller's business workflow this intent belongs to (1–200 characters of its own
    /// choosing, scoped to the tenant).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow_id: Option<String>,
    /// An intent of the same tenant this one was made for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_intent_id: Option<String>,
    /// An intent of the same tenant this corrected order replaces: it must be final, or have
    /// sent nothing (then it is cancelled with this one's creation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supersedes: Option<String>,
}

/// One intent of `POST /v1/intents/batch`: the caller's key for it (what `Idempotency-Key`
/// is to `POST /v1/intents`) and that endpoint's body.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BatchIntent {
    pub idempotency_key: String,
    #[serde(flatten)]
    pub intent: CreateIntent,
}

/// The body of `POST /v1/intents/batch`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CreateBatch {
    pub intents: Vec<BatchIntent>,
}

/// The answer to `POST /v1/intents/batch`: one result for each intent sent, in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BatchCreated {
    pub results: Vec<BatchResult>,
}

/// What became of one intent of a batch: the status `POST /v1/intents` would have answered
/// it with, and its intent (201 created, 200 a replay of its key) or its error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BatchResult {
    /// Its place in the batch, from 0.
    pub index: usize,
    pub status: u16,
    /// The key already named this intent (as `Idempotent-Replayed: true`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub replayed: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intent: Option<Intent>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<super::ErrorDetail>,
}

/// The body of `POST /v1/intents/{id}/cancel`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CancelIntent {
    pub reason: String,
}

fn default_connector() -> String {
    "erp".to_string()
}

/// The body of `POST /v1/intents/{id}/authorize`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Authorize {
    pub authorization_version: String,
    /// Who approves is the calling token's name; when given, this must be that name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approver: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_for_secs: Option<u64>,
    /// The version of the tenant's policy the approver judged the intent by; when given, it
    /// must be the version in force.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_version: Option<String>,
}

/// The answer to `POST /v1/intents/{id}/dispatch` (202): whether this call enqueued the
/// dispatch, and where the intent stands.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dispatched<S = IntentState> {
    pub dispatched: bool,
    pub intent: Intent<S>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_state_from_a_newer_coordinator_is_kept_not_dropped() {
        let row: Intent<StateName> = serde_json::from_value(serde_json::json!({
            "id": "int_01kbx7q3p9d2m8v4r6t0y5zs01", "tenant": "acme", "operation": "x",
            "consequence": "write", "action_key": "po:acme:int_01kbx7q3p9d2m8v4r6t0y5zs01",
            "state": "quarantined", "created_at_ms": 1
        }))
        .expect("lenient parse");
        assert_eq!(row.state, StateName::Unknown("quarantined".into()));
    }
}
