//! The intent view's state: timeline zoom, selected attempt, command dialogs. (Being built.)

use serde_json::Value;

use crate::console::client::ClientError;

/// What the intent view keeps between frames.
#[derive(Debug, Default)]
pub struct IntentViewState {}

impl IntentViewState {
    /// An answer to a request tagged `intent:<tag>`.
    pub fn on_json(&mut self, _tag: &str, _result: Result<Value, ClientError>) {}

    /// The answer to a command this view sent; true when the open intent should refresh.
    pub fn on_command(&mut self, _body: &Value, result: Result<Value, ClientError>) -> bool {
        result.is_ok()
    }
}
