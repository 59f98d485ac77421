//! The one error envelope every refusal answers:
//! `{"error": {"code", "message", "fields"}}`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The envelope.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

/// What was refused and why; `fields` names each bad field or parameter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorDetail {
    pub code: String,
    pub message: String,
    #[serde(default)]
    pub fields: BTreeMap<String, String>,
}
