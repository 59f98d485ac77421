//! The `outbox` table: dispatches written in the same transaction as their attempt, claimed
//! by a dispatcher under a lease. A row whose lease ran out (its dispatcher died) is claimed
//! again with `reclaimed = true`, so the new dispatcher reconciles it instead of resending.
//!
//! The claim is the one statement a PostgreSQL backend writes as
//! `SELECT … FOR UPDATE SKIP LOCKED`; SQLite has a single writer, so an `UPDATE … RETURNING`
//! over the chosen rows is already exclusive.

use rusqlite::params;
use serde::Serialize;

use super::{Cached, Store, StoreError, to_i64, to_u64};
use crate::domain::{ActionKey, AttemptId, IntentId, Tenant};

/// A claimed dispatch.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClaimedRow {
    pub outbox_seq: i64,
    pub intent_id: IntentId,
    pub tenant: Tenant,
    pub attempt_id: AttemptId,
    pub action_key: ActionKey,
    pub connector: String,
    pub operation: String,
    pub payload_json: String,
    /// True when an earlier claim's lease ran out: the command may already have been sent.
    pub reclaimed: bool,
    pub deadline_at_ms: u64,
}

/// One outbox row, for inspection.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OutboxRow {
    pub outbox_seq: i64,
    pub status: String,
    pub claims: u32,
}

impl Store {
    /// Claim up to `limit` dispatches that are due, or whose lease ran out, for `worker`,
    /// marking their attempts as possibly sent.
    pub fn claim_outbox(
        &mut self,
        worker: &str,
        now_ms: u64,
        lease_ms: u64,
        limit: u32,
    ) -> Result<Vec<ClaimedRow>, StoreError> {
        let tx = self.conn.savepoint()?;
        let now = to_i64(now_ms);
        let claimed: Vec<(i64, i64, i64, u32)> = {
            let mut stmt = tx.prepare_cached(
                "UPDATE outbox SET status = 'claimed', claimed_by = ?1, claim_expires_at_ms = ?2, claims = claims + 1 \
                 WHERE seq IN (SELECT seq FROM outbox WHERE (status = 'pending' AND available_at_ms <= ?3) \
                    OR (status = 'claimed' AND claim_expires_at_ms <= ?3) ORDER BY available_at_ms LIMIT ?4) \
                 RETURNING seq, intent_seq, attempt_seq, claims",
            )?;
            let rows = stmt.query_map(
                params![worker, to_i64(now_ms + lease_ms), now, limit],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )?;
            rows.collect::<Result<_, _>>()?
        };
        let mut out = Vec::with_capacity(claimed.len());
        for (outbox_seq, intent_seq, attempt_seq, claims) in claimed {
            tx.run("UPDATE attempts SET sent = 1 WHERE seq = ?1", [attempt_seq])?;
            tx.run(
                "UPDATE intents SET crossed = 1, first_dispatch_at_ms = coalesce(first_dispatch_at_ms, ?2) WHERE seq = ?1",
                params![intent_seq, now],
            )?;
            let row = tx.one(
                "SELECT i.id, i.tenant, a.id, o.action_key, o.connector, o.operation, o.payload_json, i.deadline_at_ms \
                 FROM outbox o JOIN intents i ON i.seq = o.intent_seq JOIN attempts a ON a.seq = o.attempt_seq \
                 WHERE o.seq = ?1",
                [outbox_seq],
                |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, String>(2)?,
                        r.get::<_, String>(3)?,
                        r.get::<_, String>(4)?,
                        r.get::<_, String>(5)?,
                        r.get::<_, String>(6)?,
                        r.get::<_, i64>(7)?,
                    ))
                },
            )?;
            out.push(ClaimedRow {
                outbox_seq,
                intent_id: row.0.parse()?,
                tenant: row.1.parse()?,
                attempt_id: row.2.parse()?,
                action_key: row.3.parse()?,
                connector: row.4,
                operation: row.5,
                payload_json: row.6,
                reclaimed: claims > 1,
                deadline_at_ms: to_u64(row.7),
            });
        }
        tx.commit()?;
        Ok(out)
    }

    /// Mark a claimed dispatch as handled (whatever its outcome; a retry is a new row).
    pub fn complete_outbox(&mut self, outbox_seq: i64, now_ms: u64) -> Result<(), StoreError> {
        self.conn.run(
            "UPDATE outbox SET status = 'done', done_at_ms = ?2, claim_expires_at_ms = NULL WHERE seq = ?1",
            params![outbox_seq, to_i64(now_ms)],
        )?;
        Ok(())
    }

    /// Dispatches not yet handled: pending plus claimed.
    pub fn outbox_depth(&mut self) -> Result<u64, StoreError> {
        let n: i64 = self.conn.one(
            "SELECT count(*) FROM outbox WHERE status IN ('pending', 'claimed')",
            [],
            |r| r.get(0),
        )?;
        Ok(to_u64(n))
    }

    /// The earliest time a pending dispatch becomes due, if any.
    pub fn next_outbox_due_ms(&mut self) -> Result<Option<u64>, StoreError> {
        let at: Option<i64> = self.conn.one(
            "SELECT min(CASE status WHEN 'pending' THEN available_at_ms ELSE claim_expires_at_ms END) \
             FROM outbox WHERE status IN ('pending', 'claimed')",
            [],
            |r| r.get(0),
        )?;
        Ok(at.map(to_u64))
    }

    /// An outbox row, for tests and inspection.
    pub fn outbox_row(&mut self, outbox_seq: i64) -> Result<OutboxRow, StoreError> {
        Ok(self.conn.one(
            "SELECT seq, status, claims FROM outbox WHERE seq = ?1",
            [outbox_seq],
            |r| {
                Ok(OutboxRow {
                    outbox_seq: r.get(0)?,
                    status: r.get(1)?,
                    claims: r.get(2)?,
                })
            },
        )?)
    }
}
