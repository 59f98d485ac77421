//! The `events` table: a change feed written in the same transaction as the change it
//! describes, so the live event stream can resume from any sequence number
//! (`Last-Event-ID`) without missing or inventing anything.
//!
//! An event of an intent or an attempt names what changed and is sent with that intent or
//! attempt as it stands when the event is read: a follower always ends with the newest
//! state of everything that changed, and the writer never writes (nor serialises) a copy of
//! an intent at every change, which was most of what each order wrote. A `command` event
//! keeps its record, which never changes. Events written before, with their copy, are sent
//! as written.
//!
//! A follower reads `seq > last seen`, so sequence numbers must become visible in order.
//! SQLite's single writer commits in the order it numbers. On PostgreSQL, transactions
//! (of one coordinator's writers, or of several coordinators) commit in any order: a
//! number taken by a transaction still running would be skipped by a follower that has
//! read a later one. So there a write leaves its event in `events_pending`, and
//! [`sequence_pending`] — run by every reader of the feed before it reads — moves the
//! committed ones into `events` under one advisory lock, one mover at a time: each move's
//! numbers are all above the previous move's, and committed together.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use super::sql::{Conn, ConnExt, Dialect, params};
use serde::Serialize;

use super::{Store, StoreError, to_i64};
use crate::domain::{AttemptId, IntentId, Tenant};

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

/// The newest change-feed event known to be on the disk, where a backend answers commits
/// before other connections could read them unsynced (SQLite's syncer): readers of the feed
/// stop there, so an outside client never resumes from a number a power loss took back.
#[derive(Debug, Clone, Default)]
pub struct DurableFeed(Arc<AtomicI64>);

impl DurableFeed {
    pub fn new(seq: i64) -> DurableFeed {
        DurableFeed(Arc::new(AtomicI64::new(seq)))
    }

    /// The last event a reader may see.
    pub fn upto(&self) -> i64 {
        self.0.load(Ordering::Acquire)
    }

    pub(crate) fn advance(&self, seq: i64) {
        self.0.fetch_max(seq, Ordering::AcqRel);
    }
}

/// Append an event whose payload is `payload`, as it is now.
pub(crate) fn append(
    tx: &dyn Conn,
    kind: &str,
    tenant: Option<&Tenant>,
    intent: Option<&IntentId>,
    payload: &impl serde::Serialize,
    at_ms: u64,
) -> Result<(), StoreError> {
    append_text(
        tx,
        kind,
        tenant,
        intent,
        &serde_json::to_string(payload)?,
        at_ms,
    )
}

/// Append an event that names what changed: the intent (`reference` empty) or one of its
/// attempts (`reference` its id), sent as it stands when read ([`ChangeFeed::events_after`]).
pub(crate) fn append_ref(
    tx: &dyn Conn,
    kind: &str,
    tenant: &Tenant,
    intent: &IntentId,
    reference: &str,
    at_ms: u64,
) -> Result<(), StoreError> {
    append_text(tx, kind, Some(tenant), Some(intent), reference, at_ms)
}

fn append_text(
    tx: &dyn Conn,
    kind: &str,
    tenant: Option<&Tenant>,
    intent: Option<&IntentId>,
    payload: &str,
    at_ms: u64,
) -> Result<(), StoreError> {
    let table = match tx.dialect() {
        Dialect::Sqlite => "events",
        Dialect::Postgres => "events_pending",
    };
    tx.run_held(
        &format!(
            "INSERT INTO {table} (kind, tenant, intent_id, payload, at_ms) VALUES (?1, ?2, ?3, ?4, ?5)"
        ),
        params![
            kind,
            tenant.map(Tenant::as_str),
            intent.map(IntentId::as_str),
            payload,
            to_i64(at_ms)
        ],
    )?;
    Ok(())
}

/// The advisory lock that lets one mover at a time number PostgreSQL's pending events.
const SEQUENCER_LOCK: i64 = 0x696e_7465_6e74_0002;

/// On PostgreSQL, give every committed pending event its number in `events`, in the order
/// the events were written; nothing on SQLite. Must run outside a transaction: the lock is
/// held until this function's own commit.
pub(crate) fn sequence_pending(conn: &dyn Conn) -> Result<(), StoreError> {
    if conn.dialect() != Dialect::Postgres {
        return Ok(());
    }
    // Read committed whatever the connection's default: the move must see what the mover
    // before it committed while this one waited for the lock.
    conn.batch("BEGIN ISOLATION LEVEL READ COMMITTED")?;
    let moved = conn
        .batch(&format!("SELECT pg_advisory_xact_lock({SEQUENCER_LOCK})"))
        .and_then(|()| {
            conn.run(
                "WITH moved AS (DELETE FROM events_pending RETURNING id, kind, tenant, intent_id, payload, at_ms) \
                 INSERT INTO events (kind, tenant, intent_id, payload, at_ms) \
                 SELECT kind, tenant, intent_id, payload, at_ms FROM moved ORDER BY id",
                params![],
            )
        });
    match moved {
        Ok(_) => conn.batch("COMMIT"),
        Err(e) => {
            let _ = conn.batch("ROLLBACK");
            Err(e)
        }
    }
}

/// Announce a change of the intent on the change feed, and read it back as stored.
pub(crate) fn announce_intent(
    tx: &dyn Conn,
    id: &IntentId,
    at_ms: u64,
) -> Result<crate::wire::Intent, StoreError> {
    let (_, intent) = super::intents::load(tx, id)?;
    append_ref(tx, "intent", &intent.tenant, id, "", at_ms)?;
    Ok(intent)
}

/// The payload an event is sent with: the record it kept (a command, or an event written
/// with its copy), or the intent or attempt it names as it stands now (`null` if there is
/// none). `seen` holds what this read already looked up.
fn payload_of(
    conn: &dyn Conn,
    kind: &str,
    intent: Option<&str>,
    stored: String,
    seen: &mut HashMap<String, serde_json::Value>,
) -> Result<serde_json::Value, StoreError> {
    if stored.starts_with('{') {
        return Ok(serde_json::from_str(&stored)?);
    }
    let key = match kind {
        "attempt" => stored,
        _ => intent.unwrap_or_default().to_string(),
    };
    if let Some(value) = seen.get(&key) {
        return Ok(value.clone());
    }
    let value = match kind {
        "attempt" => match key.parse::<AttemptId>() {
            Ok(id) => super::attempts::find_attempt(conn, &id)?
                .map(serde_json::to_value)
                .transpose()?,
            Err(_) => None,
        },
        _ => match key.parse::<IntentId>() {
            Ok(id) => match super::intents::load(conn, &id) {
                Ok((_, intent)) => Some(serde_json::to_value(intent)?),
                Err(StoreError::NotFound { .. }) => None,
                Err(e) => return Err(e),
            },
            Err(_) => None,
        },
    }
    .unwrap_or(serde_json::Value::Null);
    seen.insert(key, value.clone());
    Ok(value)
}

/// The change feed, written in the same transaction as every change it describes.
pub trait ChangeFeed {
    /// Events after `after_seq`, oldest first, at most `limit`.
    fn events_after(&mut self, after_seq: i64, limit: u32) -> Result<Vec<StoredEvent>, StoreError>;

    /// The newest event's sequence number (0 when there is none).
    fn last_event_seq(&mut self) -> Result<i64, StoreError>;

    /// The oldest event still kept (`None` when there is none).
    fn oldest_event_seq(&mut self) -> Result<Option<i64>, StoreError>;

    /// Drop the oldest events that are older than `before_ms` or beyond the newest `keep`,
    /// at most `batch` of them; the newest event is always kept, so numbering goes on from
    /// it. Returns how many were dropped. Reads at most `batch` rows, however long the feed.
    fn prune_events(&mut self, before_ms: u64, keep: u64, batch: u32) -> Result<usize, StoreError>;
}

impl ChangeFeed for Store {
    fn events_after(&mut self, after_seq: i64, limit: u32) -> Result<Vec<StoredEvent>, StoreError> {
        sequence_pending(self.conn.as_conn())?;
        // One read transaction: every payload is of the same moment.
        let tx = self.conn.savepoint()?;
        let upto = self.feed_upto();
        let mut rows: Vec<(StoredEvent, String)> = tx.rows(
            "SELECT seq, kind, tenant, intent_id, payload, at_ms FROM events WHERE seq > ?1 AND seq <= ?3 \
             ORDER BY seq LIMIT ?2",
            params![after_seq, limit, upto],
            |r| {
                Ok((
                    StoredEvent {
                        seq: r.get(0)?,
                        kind: r.get(1)?,
                        tenant: r.get(2)?,
                        intent_id: r.get(3)?,
                        payload: serde_json::Value::Null,
                        at_ms: r.get(5)?,
                    },
                    r.get(4)?,
                ))
            },
        )?;
        // An event sent with its intent as it stands now must not show a change that is not
        // on the disk yet: a power loss would take that change back, and no later event
        // would correct what the client was shown. Such events wait for the next sync.
        if upto < i64::MAX {
            let unsynced: std::collections::HashSet<String> = tx
                .rows(
                    "SELECT DISTINCT intent_id FROM events WHERE seq > ?1 AND intent_id IS NOT NULL",
                    params![upto],
                    |r| r.get(0),
                )?
                .into_iter()
                .collect();
            if !unsynced.is_empty()
                && let Some(first) = rows.iter().position(|(event, stored)| {
                    !stored.starts_with('{')
                        && event
                            .intent_id
                            .as_ref()
                            .is_some_and(|id| unsynced.contains(id))
                })
            {
                rows.truncate(first);
            }
        }
        let mut seen = HashMap::new();
        let mut events = Vec::with_capacity(rows.len());
        for (mut event, stored) in rows {
            event.payload = payload_of(
                &tx,
                &event.kind,
                event.intent_id.as_deref(),
                stored,
                &mut seen,
            )?;
            events.push(event);
        }
        tx.commit()?;
        Ok(events)
    }

    fn last_event_seq(&mut self) -> Result<i64, StoreError> {
        sequence_pending(self.conn.as_conn())?;
        let newest: i64 =
            self.conn
                .one("SELECT coalesce(max(seq), 0) FROM events", params![], |r| {
                    r.get(0)
                })?;
        Ok(newest.min(self.feed_upto()))
    }

    fn oldest_event_seq(&mut self) -> Result<Option<i64>, StoreError> {
        sequence_pending(self.conn.as_conn())?;
        self.conn
            .one("SELECT min(seq) FROM events", params![], |r| r.get(0))
    }

    fn prune_events(&mut self, before_ms: u64, keep: u64, batch: u32) -> Result<usize, StoreError> {
        // A write, inside the writer's transaction: PostgreSQL's pending events are left for
        // the next reader to number (they are newer than anything dropped here).
        let newest: i64 =
            self.conn
                .one("SELECT coalesce(max(seq), 0) FROM events", params![], |r| {
                    r.get(0)
                })?;
        let beyond_kept = newest.saturating_sub(to_i64(keep));
        let oldest: Vec<(i64, i64)> = self.conn.rows(
            "SELECT seq, at_ms FROM events ORDER BY seq LIMIT ?1",
            params![batch],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        // Up to the first event that is both young enough and among the newest `keep`.
        let cutoff = oldest
            .iter()
            .take_while(|(seq, at)| {
                *seq < newest && (*at < to_i64(before_ms) || *seq <= beyond_kept)
            })
            .last()
            .map(|(seq, _)| *seq);
        match cutoff {
            None => Ok(0),
            Some(cutoff) => self
                .conn
                .run("DELETE FROM events WHERE seq <= ?1", params![cutoff]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::IntentId;

    /// A store whose feed is bound at `upto`, with events naming `intents` in order (`None`
    /// for a command event, which keeps its record).
    fn feed_with(intents: &[Option<&IntentId>], upto: i64) -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().expect("temporary directory");
        let mut store = Store::open(&dir.path().join("db.sqlite")).expect("store opens");
        let tenant: Tenant = "acme".parse().expect("a tenant");
        for (at, intent) in intents.iter().enumerate() {
            let at = u64::try_from(at).expect("small");
            match intent {
                Some(id) => append_ref(store.conn.as_conn(), "intent", &tenant, id, "", at),
                None => append(
                    store.conn.as_conn(),
                    "command",
                    None,
                    None,
                    &serde_json::json!({"id": at}),
                    at,
                ),
            }
            .expect("event appended");
        }
        store.bound_feed(DurableFeed::new(upto));
        (dir, store)
    }

    fn seqs(store: &mut Store) -> Vec<i64> {
        store
            .events_after(0, 100)
            .expect("feed read")
            .iter()
            .map(|e| e.seq)
            .collect()
    }

    /// An event is sent with its intent as it stands when read: while a later change of that
    /// intent is not yet synced, the event waits, or a power loss would take back what a
    /// client was shown.
    #[test]
    fn an_event_waits_while_its_intent_has_an_unsynced_change() {
        let x = IntentId::generate(1, 1);
        let y = IntentId::generate(2, 2);
        let (_dir, mut store) = feed_with(&[Some(&y), Some(&x), None, Some(&x)], 3);
        assert_eq!(
            seqs(&mut store),
            vec![1],
            "stops before the first event of x"
        );

        store.bound_feed(DurableFeed::new(4));
        assert_eq!(seqs(&mut store), vec![1, 2, 3, 4], "all synced: all sent");
    }

    #[test]
    fn records_and_other_intents_are_not_held_back() {
        let x = IntentId::generate(1, 1);
        let y = IntentId::generate(2, 2);
        let (_dir, mut store) = feed_with(&[None, Some(&y), None, Some(&x)], 3);
        assert_eq!(seqs(&mut store), vec![1, 2, 3]);
    }
}
