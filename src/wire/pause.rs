//! Pauses: what one covers, and a pause as the coordinator lists it.

use serde::{Deserialize, Serialize};

/// What a pause covers. Empty fields match everything; an intent id narrows to one intent.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PauseScope {
    #[serde(default)]
    pub tenant: Option<String>,
    #[serde(default)]
    pub provider: Option<String>,
    #[serde(default)]
    pub tool: Option<String>,
    #[serde(default)]
    pub operation: Option<String>,
    #[serde(default)]
    pub intent_id: Option<String>,
}

impl PauseScope {
    pub fn is_empty(&self) -> bool {
        self.tenant.is_none()
            && self.provider.is_none()
            && self.tool.is_none()
            && self.operation.is_none()
            && self.intent_id.is_none()
    }
}

/// An active or ended pause.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pause {
    pub seq: i64,
    pub command_id: String,
    pub scope: PauseScope,
    pub reason: String,
    pub created_by: String,
    pub created_at_ms: u64,
    #[serde(default)]
    pub resumed_at_ms: Option<u64>,
}
