//! What the dashboard's in-memory metric index (`crate::metrics`) reads from the store: the
//! columns it aggregates, in table order for its first load, and the change feed's marks,
//! so it reloads only the intents changed since. The index itself lives outside the store.

use std::collections::HashSet;

use super::query::{IntentFilter, filter_where};
use super::sql::{ConnExt, Optional, Row, params, params_of};
use super::{Store, StoreError};

/// An intent's columns as the index keeps them.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexIntent {
    pub seq: i64,
    pub created_at_ms: u64,
    pub committed_at_ms: Option<u64>,
    pub attempts: u32,
    pub max_attempts: u32,
    pub tenant: String,
    pub operation: String,
    pub tool: String,
    pub release_id: String,
    pub locale: String,
    pub tier: String,
    pub state: String,
    pub indeterminate_since_ms: Option<u64>,
    pub lookups: u32,
    /// Whether its command was ever handed to the connector.
    pub dispatched: bool,
    /// Whether its automatic lookups' budget is spent.
    pub lookups_exhausted: bool,
}

/// An attempt's columns as the index keeps them.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexAttempt {
    pub intent_seq: i64,
    pub started_at_ms: u64,
    pub ended_at_ms: Option<u64>,
    pub provider: String,
    pub release_id: String,
    pub late: bool,
    pub proposal_hash: Option<String>,
}

/// A transition into or out of `indeterminate`.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexSpan {
    pub intent_seq: i64,
    pub from: Option<String>,
    pub to: String,
    pub at_ms: u64,
}

/// The rows of the intents a stretch of the change feed names, each kind sorted by intent
/// (attempts and transitions then in table order, duplicate effects by downstream id): one
/// statement a kind after the one that lists the intents, however many intents changed.
#[derive(Debug, Default)]
pub struct Changed {
    pub intents: Vec<IndexIntent>,
    pub attempts: Vec<IndexAttempt>,
    pub spans: Vec<IndexSpan>,
    /// Each duplicate effect: the intent and when it was first seen.
    pub duplicates: Vec<(i64, u64)>,
}

impl Changed {
    /// Empty, keeping the room the vectors have: a follower that reads a stretch a second
    /// would otherwise grow new ones each time, on fresh pages the system must clear.
    pub fn clear(&mut self) {
        self.intents.clear();
        self.attempts.clear();
        self.spans.clear();
        self.duplicates.clear();
    }
}

/// A marker of one event: when it was written and for which intent (how a rewritten feed
/// is told from the one read).
pub type EventMark = Option<(i64, Option<String>)>;

/// The reads the metric index is fed by.
pub trait MetricSource {
    /// Run `f` inside one read transaction, so everything it reads is one snapshot.
    fn snapshot(
        &mut self,
        f: &mut dyn FnMut(&mut dyn MetricSource) -> Result<(), StoreError>,
    ) -> Result<(), StoreError>;
    /// The newest event's sequence number (0 for none).
    fn last_event(&mut self) -> Result<i64, StoreError>;
    /// The oldest event's sequence number (0 for none).
    fn first_event(&mut self) -> Result<i64, StoreError>;
    fn event_mark(&mut self, seq: i64) -> Result<EventMark, StoreError>;
    /// The rows the index keeps of every intent named by events in `(after, upto]`.
    fn changed(&mut self, after: i64, upto: i64, into: &mut Changed) -> Result<(), StoreError>;
    /// Every intent, in sequence order.
    fn each_intent(
        &mut self,
        f: &mut dyn FnMut(IndexIntent) -> Result<(), StoreError>,
    ) -> Result<(), StoreError>;
    /// Every attempt, in sequence order.
    fn each_attempt(
        &mut self,
        f: &mut dyn FnMut(IndexAttempt) -> Result<(), StoreError>,
    ) -> Result<(), StoreError>;
    /// Every transition into or out of `indeterminate`, in order.
    fn indeterminate_spans(&mut self) -> Result<Vec<IndexSpan>, StoreError>;
    /// Every duplicate effect: the intent and when it was first seen.
    fn duplicate_effects(&mut self) -> Result<Vec<(i64, u64)>, StoreError>;
    /// The intents a search text or pause filter selects (`None`: the filter has neither,
    /// and the index filters on its own).
    fn selection(&mut self, filter: &IntentFilter) -> Result<Option<HashSet<i64>>, StoreError>;
}

const INTENT_SQL: &str = "SELECT i.seq, i.created_at_ms, i.committed_at_ms, i.attempts, i.max_attempts, i.tenant, \
     i.operation, i.tool, i.release_id, i.locale, i.tier, i.state, i.indeterminate_since_ms, i.lookups, \
     i.first_dispatch_at_ms IS NOT NULL, i.lookups_exhausted_at_ms IS NOT NULL FROM intents i";
const ATTEMPT_SQL: &str = "SELECT a.intent_seq, a.started_at_ms, a.ended_at_ms, a.provider, \
     coalesce(a.release_id, i.release_id), a.late, a.proposal_hash FROM attempts a JOIN intents i ON i.seq = a.intent_seq";
/// The intents named by events in `(?1, ?2]`, each once.
const CHANGED_SQL: &str = "SELECT DISTINCT c.seq FROM events e JOIN intents c ON c.id = e.intent_id \
     WHERE e.seq > ?1 AND e.seq <= ?2 ORDER BY c.seq";
/// The transitions into or out of `indeterminate`: the only ones the index keeps.
const SPAN_SQL: &str = "SELECT t.intent_seq, t.from_state, t.to_state, t.at_ms FROM transitions t \
     WHERE (t.to_state = 'indeterminate' OR t.from_state = 'indeterminate')";
const DUPLICATE_SQL: &str = "SELECT r.intent_seq, min(r.received_at_ms) FROM receipts r JOIN intents i ON i.seq = r.intent_seq \
     WHERE r.authoritative = 0 AND r.downstream_id IS DISTINCT FROM i.downstream_ref";

fn intent_of(r: &Row<'_>) -> Result<IndexIntent, StoreError> {
    Ok(IndexIntent {
        seq: r.get(0)?,
        created_at_ms: r.get(1)?,
        committed_at_ms: r.get(2)?,
        attempts: r.get(3)?,
        max_attempts: r.get(4)?,
        tenant: r.get(5)?,
        operation: r.get(6)?,
        tool: r.get(7)?,
        release_id: r.get(8)?,
        locale: r.get(9)?,
        tier: r.get(10)?,
        state: r.get(11)?,
        indeterminate_since_ms: r.get(12)?,
        lookups: r.get(13)?,
        dispatched: r.get(14)?,
        lookups_exhausted: r.get(15)?,
    })
}

fn attempt_of(r: &Row<'_>) -> Result<IndexAttempt, StoreError> {
    Ok(IndexAttempt {
        intent_seq: r.get(0)?,
        started_at_ms: r.get(1)?,
        ended_at_ms: r.get(2)?,
        provider: r.get(3)?,
        release_id: r.get(4)?,
        late: r.get(5)?,
        proposal_hash: r.get(6)?,
    })
}

fn span_of(r: &Row<'_>) -> Result<IndexSpan, StoreError> {
    Ok(IndexSpan {
        intent_seq: r.get(0)?,
        from: r.get(1)?,
        to: r.get(2)?,
        at_ms: r.get(3)?,
    })
}

impl MetricSource for Store {
    fn snapshot(
        &mut self,
        f: &mut dyn FnMut(&mut dyn MetricSource) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        super::events::sequence_pending(self.conn.as_conn())?;
        // A long read: the metric index's catch-up, tens of milliseconds a second under load.
        let bounds = super::ReadBounds::snapshot(self.conn.dialect());
        self.held_read(true, &bounds, |s| f(s))
    }

    fn last_event(&mut self) -> Result<i64, StoreError> {
        self.conn
            .one("SELECT coalesce(max(seq), 0) FROM events", params![], |r| {
                r.get(0)
            })
    }

    fn first_event(&mut self) -> Result<i64, StoreError> {
        self.conn
            .one("SELECT coalesce(min(seq), 0) FROM events", params![], |r| {
                r.get(0)
            })
    }

    fn event_mark(&mut self, seq: i64) -> Result<EventMark, StoreError> {
        self.conn
            .one(
                "SELECT at_ms, intent_id FROM events WHERE seq = ?1",
                params![seq],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
    }

    fn changed(&mut self, after: i64, upto: i64, into: &mut Changed) -> Result<(), StoreError> {
        into.clear();
        // The stretch's intents are found once (each event's intent looked up by its id)
        // and their list asked of by the four reads below: asked as a subquery, each read
        // made every lookup again (SQLite took 21-26 ms for a second of orders' stretch that
        // way, 13-14 ms this way: docs/throughput-log.md).
        let seqs = self
            .conn
            .rows(CHANGED_SQL, params![after, upto], |r| r.get::<i64>(0))?;
        if seqs.is_empty() {
            return Ok(());
        }
        let list = serde_json::to_string(&seqs)?;
        let changed = self.conn.dialect().integers_of("?1");
        let listed = params![list];
        self.conn.rows_into(
            &format!("{INTENT_SQL} WHERE i.seq IN ({changed}) ORDER BY i.seq"),
            listed,
            &mut into.intents,
            intent_of,
        )?;
        self.conn.rows_into(
            &format!(
                "{ATTEMPT_SQL} WHERE a.intent_seq IN ({changed}) ORDER BY a.intent_seq, a.seq"
            ),
            listed,
            &mut into.attempts,
            attempt_of,
        )?;
        self.conn.rows_into(
            &format!("{SPAN_SQL} AND t.intent_seq IN ({changed}) ORDER BY t.intent_seq, t.seq"),
            listed,
            &mut into.spans,
            span_of,
        )?;
        self.conn.rows_into(
            &format!(
                "{DUPLICATE_SQL} AND r.intent_seq IN ({changed}) \
                 GROUP BY r.intent_seq, r.downstream_id ORDER BY r.intent_seq, r.downstream_id"
            ),
            listed,
            &mut into.duplicates,
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
    }

    fn each_intent(
        &mut self,
        f: &mut dyn FnMut(IndexIntent) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        self.conn.each(
            &format!("{INTENT_SQL} ORDER BY i.seq"),
            params![],
            &mut |r| f(intent_of(r)?),
        )
    }

    fn each_attempt(
        &mut self,
        f: &mut dyn FnMut(IndexAttempt) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        self.conn.each(
            &format!("{ATTEMPT_SQL} ORDER BY a.seq"),
            params![],
            &mut |r| f(attempt_of(r)?),
        )
    }

    fn indeterminate_spans(&mut self) -> Result<Vec<IndexSpan>, StoreError> {
        self.conn
            .rows(&format!("{SPAN_SQL} ORDER BY t.seq"), params![], span_of)
    }

    fn duplicate_effects(&mut self) -> Result<Vec<(i64, u64)>, StoreError> {
        self.conn.rows(
            &format!("{DUPLICATE_SQL} GROUP BY r.intent_seq, r.downstream_id"),
            params![],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
    }

    fn selection(&mut self, filter: &IntentFilter) -> Result<Option<HashSet<i64>>, StoreError> {
        if filter.q.as_deref().is_none_or(|q| q.trim().is_empty()) && filter.paused.is_none() {
            return Ok(None);
        }
        let w = filter_where(filter, self.conn.dialect());
        let sql = format!("SELECT i.seq FROM intents i{} WHERE {}", w.joins(), w.sql());
        let seqs = self
            .conn
            .rows(&sql, &params_of(&w.values), |r| r.get::<i64>(0))?;
        Ok(Some(seqs.into_iter().collect()))
    }
}
