//! A call to a downstream, as data: the [`Downstream`] interface the shells call (over HTTP in
//! `super::super::connector`, or a simulated world), and the [`Call`] it gave, which the core
//! reads.

use std::future::Future;
use std::pin::Pin;

use serde_json::Value;

use crate::coordinator::config::ConnectorConfig;
use crate::domain::ActionKey;
use crate::domain::decision::Observation;

/// A call on its way.
pub type CallFuture<'a> = Pin<Box<dyn Future<Output = Call> + Send + 'a>>;

/// What the coordinator asks of a downstream. Every failure comes back as a [`Call`] whose
/// observation says whether the request may have been sent.
pub trait Downstream: Send + Sync {
    /// Create under `key` at `resource`, with the frozen command as the body.
    fn create<'a>(
        &'a self,
        connector: &'a ConnectorConfig,
        resource: &'a str,
        key: &'a ActionKey,
        payload_json: &'a str,
    ) -> CallFuture<'a>;

    /// Look up what was created under `key` at `resource`.
    fn lookup<'a>(
        &'a self,
        connector: &'a ConnectorConfig,
        resource: &'a str,
        key: &'a ActionKey,
    ) -> CallFuture<'a>;
}

/// A downstream answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub status: u16,
    pub retry_after_ms: Option<u64>,
    pub body: Value,
}

impl Reply {
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// Whether a body names another action key than `key` as its record's `external_ref`:
    /// an answer about another key's record proves nothing about this one. A body that names
    /// none (or `null`) is taken as about the key it was asked for. Which key it named is not
    /// kept: it may be another tenant's.
    pub fn names_other_key(&self, key: &ActionKey) -> bool {
        self.body
            .get("external_ref")
            .filter(|named| !named.is_null())
            .is_some_and(|named| named.as_str() != Some(key.as_str()))
    }

    /// Whether a body names `key` itself as its record's `external_ref`: the downstream says
    /// which order the record is, and no other intent's receipt can make it another's.
    pub fn names_key(&self, key: &ActionKey) -> bool {
        self.body.get("external_ref").and_then(Value::as_str) == Some(key.as_str())
    }

    /// The downstream id in a success body.
    pub fn downstream_id(&self) -> Option<String> {
        self.body
            .get("id")
            .and_then(Value::as_str)
            .map(str::to_string)
    }

    pub fn replayed(&self) -> bool {
        self.body
            .get("replayed")
            .and_then(Value::as_bool)
            .unwrap_or(self.status == 200)
    }

    /// The message of an error body, if the downstream gave one.
    pub fn error_message(&self) -> Option<String> {
        self.body
            .get("error")
            .and_then(|e| e.get("message"))
            .and_then(Value::as_str)
            .map(str::to_string)
    }

    pub fn observation(&self) -> Observation {
        Observation::HttpStatus {
            status: self.status,
            retry_after_ms: self.retry_after_ms,
        }
    }
}

/// The result of one call.
#[derive(Debug, Clone, PartialEq)]
pub enum Call {
    Replied(Reply),
    /// No answer; the observation says whether the request may have been sent.
    Failed {
        observation: Observation,
        detail: String,
    },
}
