//! Operator commands: the body of `POST /v1/commands` and a command as the audit trail
//! records it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::domain::{CommandId, CommandKind, Disposition, Role};

/// The body of `POST /v1/commands`. `command_id` is the client's, made once when the
/// operator confirms and sent again on every retry of the same command.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandBody {
    pub command_id: CommandId,
    pub kind: CommandKind,
    pub target: TargetBody,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disposition: Option<Disposition>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<EvidenceBody>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dry_run: bool,
}

/// What a command is aimed at: exactly one of an intent or a scope.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetBody {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intent_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<ScopeBody>,
}

/// A scope of intents: every field that is given must match.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScopeBody {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation: Option<String>,
}

/// What an operator offers when closing: a receipt or downstream reference, or a note of
/// what was checked.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvidenceBody {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// A page of a scope command's frozen targets (`GET /v1/commands/{id}/targets`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandTargets {
    pub items: Vec<CommandTarget>,
    /// Pass as `cursor` for the next page; absent on the last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// One intent a command covered when it was recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandTarget {
    pub intent_id: String,
    pub tenant: String,
}

/// One command as the audit trail shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandRecord {
    pub command_id: String,
    pub kind: CommandKind,
    pub actor: String,
    pub role: Role,
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub dry_run: bool,
    /// `applied`, `refused`, `dry_run` or `accepted` (reconcile, before its lookups ran).
    pub status: String,
    #[serde(default)]
    pub result: Value,
    /// The body as it was sent.
    #[serde(default)]
    pub body: Value,
    pub created_at_ms: u64,
}
