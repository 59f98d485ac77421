//! How an intent's lookups are paced, as its row keeps it: how many lookups were made (every
//! one, automatic or an operator's), how many of them were automatic (what the budget
//! counts), when the last was made, when the next automatic one is due, and when the budget
//! ran out. Kept with the intent so a restart neither looks everything up at once nor
//! forgets how far each intent's backoff had come.

use super::sql::{ConnExt, Dialect, Optional, params};
use super::{Store, StoreError, to_i64};
use crate::domain::IntentId;

/// An indeterminate intent due for an automatic lookup, and the connector it would ask.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DueLookup {
    pub intent_id: IntentId,
    pub connector: String,
}

/// An intent's lookup pacing as stored.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LookupPace {
    pub lookups: u32,
    pub automatic: u32,
    pub last_at_ms: Option<u64>,
    pub next_at_ms: Option<u64>,
    pub exhausted_at_ms: Option<u64>,
}

/// The pacing of lookups.
pub trait Lookups {
    /// Indeterminate intents whose next automatic lookup is due at `now_ms` (or was never
    /// planned) and whose budget is not spent, the longest waiting first.
    fn due_lookups(&mut self, now_ms: u64, limit: u32) -> Result<Vec<DueLookup>, StoreError>;

    /// The pacing of one intent.
    fn lookup_pace(&mut self, id: &IntentId) -> Result<LookupPace, StoreError>;

    /// Count a lookup made at `now_ms` (against the budget too when `automatic`), and plan
    /// the next automatic one at `next_at_ms`.
    fn count_lookup(
        &mut self,
        id: &IntentId,
        automatic: bool,
        now_ms: u64,
        next_at_ms: Option<u64>,
    ) -> Result<(), StoreError>;

    /// Plan the next automatic lookup (`None`: promptly, once the intent is indeterminate
    /// again), and mark the budget spent at `exhausted_at_ms` if given; the first such mark
    /// is announced on the change feed.
    fn plan_lookup(
        &mut self,
        id: &IntentId,
        next_at_ms: Option<u64>,
        exhausted_at_ms: Option<u64>,
    ) -> Result<(), StoreError>;
}

/// The indeterminate intents whose next lookup is due by `?1` (never planned: due at once),
/// in the order they came due, at most `?2`: read along `intents_lookups_due` (migration 18),
/// which holds only those whose budget is not spent, in that order, so a pass reads what it
/// takes and no more. SQLite is told to: left to itself it reads every indeterminate intent
/// along the state index and sorts them.
pub(crate) fn due_lookups_sql(dialect: Dialect) -> String {
    format!(
        "SELECT id, connector FROM intents {} WHERE state = 'indeterminate' \
         AND lookups_exhausted_at_ms IS NULL AND coalesce(next_lookup_at_ms, 0) <= ?1 \
         ORDER BY coalesce(next_lookup_at_ms, 0), indeterminate_since_ms LIMIT ?2",
        dialect.index_hint("INDEXED BY intents_lookups_due")
    )
}

impl Lookups for Store {
    fn due_lookups(&mut self, now_ms: u64, limit: u32) -> Result<Vec<DueLookup>, StoreError> {
        let sql = due_lookups_sql(self.conn.dialect());
        let rows: Vec<(String, String)> =
            self.conn.rows(&sql, params![to_i64(now_ms), limit], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })?;
        rows.into_iter()
            .map(|(id, connector)| {
                Ok(DueLookup {
                    intent_id: id.parse()?,
                    connector,
                })
            })
            .collect()
    }

    fn lookup_pace(&mut self, id: &IntentId) -> Result<LookupPace, StoreError> {
        self.conn
            .one(
                "SELECT lookups, automatic_lookups, last_lookup_at_ms, next_lookup_at_ms, \
                 lookups_exhausted_at_ms FROM intents WHERE id = ?1",
                params![id.as_str()],
                |r| {
                    Ok(LookupPace {
                        lookups: r.get(0)?,
                        automatic: r.get(1)?,
                        last_at_ms: r.get(2)?,
                        next_at_ms: r.get(3)?,
                        exhausted_at_ms: r.get(4)?,
                    })
                },
            )
            .optional()?
            .ok_or_else(|| StoreError::NotFound {
                what: "intent",
                id: id.to_string(),
            })
    }

    fn count_lookup(
        &mut self,
        id: &IntentId,
        automatic: bool,
        now_ms: u64,
        next_at_ms: Option<u64>,
    ) -> Result<(), StoreError> {
        self.conn.run_held(
            "UPDATE intents SET lookups = lookups + 1, \
             automatic_lookups = automatic_lookups + ?2, last_lookup_at_ms = ?3, \
             next_lookup_at_ms = ?4 WHERE id = ?1",
            params![
                id.as_str(),
                i64::from(automatic),
                to_i64(now_ms),
                next_at_ms.map(to_i64)
            ],
        )?;
        Ok(())
    }

    fn plan_lookup(
        &mut self,
        id: &IntentId,
        next_at_ms: Option<u64>,
        exhausted_at_ms: Option<u64>,
    ) -> Result<(), StoreError> {
        self.conn.run_held(
            "UPDATE intents SET next_lookup_at_ms = ?2 WHERE id = ?1",
            params![id.as_str(), next_at_ms.map(to_i64)],
        )?;
        let Some(at) = exhausted_at_ms else {
            return Ok(());
        };
        let marked = self.conn.run(
            "UPDATE intents SET lookups_exhausted_at_ms = ?2 \
             WHERE id = ?1 AND lookups_exhausted_at_ms IS NULL",
            params![id.as_str(), to_i64(at)],
        )?;
        // The intent now waits for an operator: said on the change feed, for the console and
        // the metric index, which learn of an intent's changes only there.
        if marked > 0 {
            super::events::announce_intent(self.conn.as_conn(), id, at)?;
        }
        Ok(())
    }
}
