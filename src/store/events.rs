//! The `events` table: a change feed written in the same transaction as the change it
//! describes, so the live event stream can resume from any sequence number
//! (`Last-Event-ID`) without missing or inventing anything.

use super::sql::{Conn, ConnExt, params};
use serde::Serialize;

use super::{Store, StoreError, to_i64};
use crate::domain::{IntentId, Tenant};

/// One change, as the event stream sends it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StoredEvent {
    pub seq: i64,
    /// `intent`, `attempt` or `command`.
    pub kind: String,
    pub tenant: Option<String>,
    pub intent_id: Option<String>,
    pub payload: serde_json::Value,
    pub at_ms: u64,
}

pub(crate) fn append(
    tx: &dyn Conn,
    kind: &str,
    tenant: Option<&Tenant>,
    intent: Option<&IntentId>,
    payload: &impl serde::Serialize,
    at_ms: u64,
) -> Result<i64, StoreError> {
    let payload = serde_json::to_string(payload)?;
    tx.one(
        "INSERT INTO events (kind, tenant, intent_id, payload, at_ms) VALUES (?1, ?2, ?3, ?4, ?5) \
         RETURNING seq",
        params![
            kind,
            tenant.map(Tenant::as_str),
            intent.map(IntentId::as_str),
            payload,
            to_i64(at_ms)
        ],
        |r| r.get(0),
    )
}

/// Read an intent back as stored and announce it on the change feed.
pub(crate) fn announce_intent(
    tx: &dyn Conn,
    id: &IntentId,
    at_ms: u64,
) -> Result<crate::wire::Intent, StoreError> {
    let (_, intent) = super::intents::load(tx, id)?;
    append(tx, "intent", Some(&intent.tenant), Some(id), &intent, at_ms)?;
    Ok(intent)
}

/// The change feed, written in the same transaction as every change it describes.
pub trait ChangeFeed {
    /// Events after `after_seq`, oldest first, at most `limit`.
    fn events_after(&mut self, after_seq: i64, limit: u32) -> Result<Vec<StoredEvent>, StoreError>;

    /// The newest event's sequence number (0 when there is none).
    fn last_event_seq(&mut self) -> Result<i64, StoreError>;

    /// Drop events older than `before_ms`, keeping the feed bounded.
    fn prune_events(&mut self, before_ms: u64) -> Result<usize, StoreError>;
}

impl ChangeFeed for Store {
    fn events_after(&mut self, after_seq: i64, limit: u32) -> Result<Vec<StoredEvent>, StoreError> {
        self.conn.rows(
            "SELECT seq, kind, tenant, intent_id, payload, at_ms FROM events WHERE seq > ?1 ORDER BY seq LIMIT ?2",
            params![after_seq, limit],
            |r| {
                Ok(StoredEvent {
                    seq: r.get(0)?,
                    kind: r.get(1)?,
                    tenant: r.get(2)?,
                    intent_id: r.get(3)?,
                    payload: serde_json::from_str(&r.get::<String>(4)?)?,
                    at_ms: r.get(5)?,
                })
            },
        )
    }

    fn last_event_seq(&mut self) -> Result<i64, StoreError> {
        self.conn
            .one("SELECT coalesce(max(seq), 0) FROM events", params![], |r| {
                r.get(0)
            })
    }

    fn prune_events(&mut self, before_ms: u64) -> Result<usize, StoreError> {
        self.conn.run(
            "DELETE FROM events WHERE at_ms < ?1",
            params![to_i64(before_ms)],
        )
    }
}
