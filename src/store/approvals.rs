//! Approvals a changed policy lapses: when the coordinator starts, every open intent
//! approved under another version of its tenant's policy than the one in force (or under
//! a policy its tenant no longer has) stops beginning new attempts until it is approved
//! again. Its approval expires now, its state stays, and the audit says why.

use std::collections::BTreeMap;

use super::sql::{ConnExt, params};
use super::{Store, StoreError, events, to_i64};
use crate::domain::IntentId;

/// The event name of a lapse in the transitions.
pub const APPROVAL_LAPSED: &str = "approval_lapsed";

/// Lapsing the approvals a policy change made stale.
pub trait Approvals {
    /// Lapse, at `now_ms`, the approval of every open intent whose policy version is not
    /// its tenant's in `current` (tenant → version; a tenant not named has no policy).
    /// Answers each lapsed intent with the reason it was given.
    fn lapse_stale_approvals(
        &mut self,
        current: &BTreeMap<String, String>,
        now_ms: u64,
    ) -> Result<Vec<(IntentId, String)>, StoreError>;
}

impl Approvals for Store {
    fn lapse_stale_approvals(
        &mut self,
        current: &BTreeMap<String, String>,
        now_ms: u64,
    ) -> Result<Vec<(IntentId, String)>, StoreError> {
        let tx = self.conn.savepoint()?;
        let now = to_i64(now_ms);
        let approved: Vec<(i64, String, String, String, Option<String>)> = tx.rows(
            "SELECT seq, id, state, tenant, policy_version FROM intents \
             WHERE state IN ('authorized', 'executing', 'indeterminate') AND approver IS NOT NULL \
             AND (authorization_expires_at_ms IS NULL OR authorization_expires_at_ms > ?1)",
            params![now],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
        )?;
        let mut lapsed = Vec::new();
        for (seq, id, state, tenant, given_under) in approved {
            let in_force = current.get(&tenant);
            if in_force == given_under.as_ref() {
                continue;
            }
            let under = given_under.map_or("no policy".to_string(), |v| format!("version {v}"));
            let now_in_force = in_force.map_or("has no policy".to_string(), |v| {
                format!("is at version {v}")
            });
            let reason = format!(
                "approval lapsed: the policy of tenant {tenant} {now_in_force}; it was approved under {under}, so new attempts wait for a fresh approval"
            );
            tx.run_held(
                "UPDATE intents SET authorization_expires_at_ms = ?2, state_reason = ?3, updated_at_ms = ?2 \
                 WHERE seq = ?1",
                params![seq, now, reason],
            )?;
            tx.run_held(
                "INSERT INTO transitions (intent_seq, from_state, to_state, event, reason, command_seq, at_ms) \
                 VALUES (?1, ?2, ?2, ?3, ?4, NULL, ?5)",
                params![seq, state, APPROVAL_LAPSED, reason, now],
            )?;
            let id: IntentId = id.parse()?;
            events::announce_intent(&tx, &id, now_ms)?;
            lapsed.push((id, reason));
        }
        tx.commit()?;
        Ok(lapsed)
    }
}
