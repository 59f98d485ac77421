//! The coordinator's background sweeps: which intents passed their deadline, which
//! indeterminate intents are due for a lookup, and which executing intents stalled with
//! nothing in flight (a planned retry refused by a pause, or a crash between steps).

use super::apply::apply_in;
use super::sql::{ConnExt, Dialect, params};
use super::{Applied, ApplyContext, Store, StoreError, to_i64};
use crate::domain::{Event, IntentId};

fn ids(rows: Vec<String>) -> Result<Vec<IntentId>, StoreError> {
    rows.into_iter()
        .map(|id| id.parse().map_err(StoreError::from))
        .collect()
}

/// The open states, written as the partial index `intents_open_deadline` is (migration 13):
/// a query uses that index only when its condition is the index's own.
const OPEN: &str =
    "(state = 'new' OR state = 'prepared' OR state = 'authorized' OR state = 'executing')";

/// Open intents past their deadline, earliest first, through the partial index
/// `intents_open_deadline`, so the sweep reads open intents only. SQLite is told to: left to
/// itself it walks the whole deadline index.
fn overdue_sql(dialect: Dialect) -> String {
    format!(
        "SELECT id FROM intents {} WHERE deadline_at_ms <= ?1 AND {OPEN} \
         ORDER BY deadline_at_ms LIMIT ?2",
        dialect.index_hint("INDEXED BY intents_open_deadline")
    )
}

/// The reconciler's sweeps.
pub trait Sweeps {
    /// Open intents whose deadline has passed and that a deadline can still move (never
    /// indeterminate ones: a deadline does not relabel them). Executing non-mutating work
    /// is among them: nothing of it crossed the action boundary, so it expires.
    fn overdue_intents(&mut self, now_ms: u64, limit: u32) -> Result<Vec<IntentId>, StoreError>;

    /// Indeterminate intents, the longest unresolved first.
    fn indeterminate_batch(&mut self, limit: u32) -> Result<Vec<IntentId>, StoreError>;

    /// Executing mutating intents that were dispatched before and have nothing planned or on
    /// its way: no send pending or claimed and no dispatch attempt still open. Such an intent
    /// was held (a pause held its planned send, or a crash fell between two steps) and its
    /// next send is planned again; the send gate judges it when it comes due. One whose
    /// approval has lapsed by `now_ms` is not stalled: it waits for a fresh approval.
    fn stalled_executing(&mut self, limit: u32, now_ms: u64) -> Result<Vec<IntentId>, StoreError>;

    /// Plan the next send of a stalled intent, deciding "stalled" again in this transaction,
    /// so two planners never plan two sends. `None` when it is no longer stalled.
    fn replan_stalled(
        &mut self,
        id: &IntentId,
        ctx: &ApplyContext,
    ) -> Result<Option<Applied>, StoreError>;
}

impl Sweeps for Store {
    fn overdue_intents(&mut self, now_ms: u64, limit: u32) -> Result<Vec<IntentId>, StoreError> {
        let rows = self.conn.rows(
            &overdue_sql(self.conn.dialect()),
            params![to_i64(now_ms), limit],
            |r| r.get(0),
        )?;
        ids(rows)
    }

    fn indeterminate_batch(&mut self, limit: u32) -> Result<Vec<IntentId>, StoreError> {
        let rows = self.conn.rows(
            "SELECT id FROM intents WHERE state = 'indeterminate' ORDER BY indeterminate_since_ms LIMIT ?1",
            params![limit],
            |r| r.get(0),
        )?;
        ids(rows)
    }

    fn stalled_executing(&mut self, limit: u32, now_ms: u64) -> Result<Vec<IntentId>, StoreError> {
        let sql =
            format!("SELECT i.id FROM intents i WHERE {STALLED} ORDER BY i.updated_at_ms LIMIT ?1");
        let rows = self
            .conn
            .rows(&sql, params![limit, to_i64(now_ms)], |r| r.get(0))?;
        ids(rows)
    }

    fn replan_stalled(
        &mut self,
        id: &IntentId,
        ctx: &ApplyContext,
    ) -> Result<Option<Applied>, StoreError> {
        let tx = self.conn.savepoint()?;
        // Decided under the intent's lock: two coordinators' sweeps never both plan a send.
        super::intents::load_for_update(&tx, id)?;
        let sql = format!("SELECT EXISTS (SELECT 1 FROM intents i WHERE i.id = ?1 AND {STALLED})");
        let stalled: bool = tx.one(&sql, params![id.as_str(), to_i64(ctx.now_ms)], |r| r.get(0))?;
        let applied = if stalled {
            Some(apply_in(&tx, id, &Event::Dispatch, ctx)?)
        } else {
            None
        };
        tx.commit()?;
        Ok(applied)
    }
}

/// The condition on `intents i` that makes an executing intent stalled, at the time `?2`.
/// One whose approval lapsed waits for a fresh one instead.
const STALLED: &str = "i.state = 'executing' AND i.tier IN ('write', 'financial') \
     AND (i.authorization_expires_at_ms IS NULL OR i.authorization_expires_at_ms > ?2) \
     AND EXISTS (SELECT 1 FROM attempts d WHERE d.intent_seq = i.seq AND d.kind = 'dispatch') \
     AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.intent_seq = i.seq AND o.status IN ('pending', 'claimed')) \
     AND NOT EXISTS (SELECT 1 FROM attempts a WHERE a.intent_seq = i.seq AND a.kind = 'dispatch' \
         AND a.outcome = 'pending')";

#[cfg(test)]
mod tests {
    use super::*;

    /// Along the whole deadline index the sweep read every finished intent whose deadline
    /// had passed: seconds at a million intents.
    #[test]
    fn the_deadline_sweep_reads_only_open_intents() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let store = Store::open(&dir.path().join("db.sqlite")).expect("store opens");
        let plan: Vec<String> = store
            .conn
            .rows(
                &format!("EXPLAIN QUERY PLAN {}", overdue_sql(Dialect::Sqlite)),
                params![0, 1],
                |r| r.get(3),
            )
            .expect("plan");
        assert!(
            plan.iter()
                .any(|step| step.contains("intents_open_deadline")),
            "{plan:?}"
        );
    }
}
