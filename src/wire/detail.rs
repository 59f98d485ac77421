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
