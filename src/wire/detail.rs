//! Reading intents: a page of the list, one intent with everything attached, and the
//! ledger of one action key.

use serde::{Deserialize, Serialize};

use super::attempt::Attempt;
use super::command::CommandRecord;
use super::intent::Intent;
use super::pause::Pause;
use super::receipt::Receipt;
use crate::domain::{ActionKey, IntentState};

/// One page of intents (`GET /v1/intents`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IntentPage<S = IntentState> {
    pub items: Vec<Intent<S>>,
    #[serde(default)]
    pub next_cursor: Option<String>,
    /// Counted up to a cap; `total_exact` says whether the count is exact.
    #[serde(default)]
    pub total: u64,
    #[serde(default = "yes")]
    pub total_exact: bool,
}

fn yes() -> bool {
    true
}

/// A state change of one intent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Transition {
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

/// One intent with everything attached (`GET /v1/intents/{id}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IntentDetail<S = IntentState> {
    pub intent: Intent<S>,
    #[serde(default)]
    pub attempts: Vec<Attempt>,
    #[serde(default)]
    pub receipts: Vec<Receipt>,
    #[serde(default)]
    pub transitions: Vec<Transition>,
    #[serde(default)]
    pub commands: Vec<CommandRecord>,
    #[serde(default)]
    pub pauses: Vec<Pause>,
    /// When the downstream may forget the action key: its first send plus the retention it
    /// was sent under (`intent.key_retention_secs`).
    #[serde(default)]
    pub key_forget_at_ms: Option<u64>,
    /// The key retention the intent's connector is configured with now. When it is shorter
    /// than the one the key was sent under, the coordinator keeps to the shorter.
    #[serde(default)]
    pub live_key_retention_secs: Option<u64>,
    #[serde(default)]
    pub ingest_replays: u32,
    #[serde(default)]
    pub ingest_mismatches: u32,
    /// The intents of the intent's workflow (`intent.workflow_id`), itself included, oldest
    /// first; at most [`MAX_LINKED`].
    #[serde(default = "Vec::new")]
    pub workflow: Vec<LinkedIntent<S>>,
    /// The revision chain the intent is part of (corrections by `supersedes`), oldest first,
    /// itself included; empty when it neither replaced nor was replaced by another.
    #[serde(default = "Vec::new")]
    pub revisions: Vec<LinkedIntent<S>>,
}

/// The most workflow members and revisions one intent's detail lists.
pub const MAX_LINKED: u32 = 50;

/// Another intent as a linked one is listed beside an intent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinkedIntent<S = IntentState> {
    pub id: crate::domain::IntentId,
    pub state: S,
    pub operation: String,
    pub created_at_ms: u64,
    #[serde(default)]
    pub action_key: Option<ActionKey>,
    #[serde(default)]
    pub parent_intent_id: Option<crate::domain::IntentId>,
    #[serde(default)]
    pub supersedes: Option<crate::domain::IntentId>,
    #[serde(default)]
    pub superseded_by: Option<crate::domain::IntentId>,
    #[serde(default)]
    pub cancel_requested_at_ms: Option<u64>,
}

impl LinkedIntent {
    /// How `intent` is listed beside another.
    pub fn of(intent: &Intent) -> LinkedIntent {
        LinkedIntent {
            id: intent.id.clone(),
            state: intent.state,
            operation: intent.operation.clone(),
            created_at_ms: intent.created_at_ms,
            action_key: Some(intent.action_key.clone()),
            parent_intent_id: intent.parent_intent_id.clone(),
            supersedes: intent.supersedes.clone(),
            superseded_by: intent.superseded_by.clone(),
            cancel_requested_at_ms: intent.cancel_requested_at_ms,
        }
    }
}

/// Everything known about one action key (`GET /v1/action-keys/{key}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeyLedger<S = IntentState> {
    pub action_key: ActionKey,
    pub intent: Intent<S>,
    #[serde(default)]
    pub attempts: Vec<Attempt>,
    #[serde(default)]
    pub replays: u32,
    #[serde(default)]
    pub mismatches: u32,
    #[serde(default)]
    pub receipts: Vec<Receipt>,
    /// As [`IntentDetail::key_forget_at_ms`].
    #[serde(default)]
    pub key_forget_at_ms: Option<u64>,
    /// As [`IntentDetail::live_key_retention_secs`].
    #[serde(default)]
    pub live_key_retention_secs: Option<u64>,
}
