//! The `attempts` table: reported non-mutating attempts (budget enforced, mutating kinds
//! refused), the dispatcher's own dispatch and lookup attempts, and their outcomes.

use super::apply::apply_in;
use super::intents::load_for_update;
use super::sql::{Conn, ConnExt, Optional, Row, params};
use super::{ApplyContext, Locked, Store, StoreError, events, to_i64, to_u64};
use crate::domain::retry::{RetryPolicy, reported_retry_not_before};
use crate::domain::{
    AttemptId, AttemptKind, AttemptOutcome, Event, IntentId, IntentState, Refusal,
};
use crate::wire::{Attempt, AttemptReport, Intent, NewAttempt};

impl From<AttemptReport> for AttemptFinish {
    fn from(r: AttemptReport) -> Self {
        AttemptFinish {
            outcome: Some(r.outcome),
            error_class: r.error_class,
            http_status: r.http_status,
            retry_after_ms: r.retry_after_ms,
            provider_request_id: r.provider_request_id,
            proposal_hash: r.proposal_hash,
            detail: r.detail,
            replayed: None,
            sent: None,
            cost_micros: r.cost_micros,
        }
    }
}

/// How an attempt ended, as the coordinator records it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AttemptFinish {
    pub outcome: Option<AttemptOutcome>,
    pub error_class: Option<String>,
    pub http_status: Option<u16>,
    pub retry_after_ms: Option<u64>,
    pub provider_request_id: Option<String>,
    pub proposal_hash: Option<String>,
    pub replayed: Option<bool>,
    /// True when the request may have reached the downstream.
    pub sent: Option<bool>,
    pub detail: Option<String>,
    /// What the attempt cost, as its reporter says (millionths of its billing currency).
    pub cost_micros: Option<u64>,
}

/// What an agent's finish of its attempt did.
#[derive(Debug, Clone, PartialEq)]
pub enum ReportedFinish {
    /// The attempt now ends as reported.
    Finished(Attempt),
    /// The attempt had already ended with this outcome: a retry of the same finish.
    AlreadyEnded(Attempt),
}

pub(crate) const ATTEMPT_COLUMNS: &str = "a.id, i.id, a.kind, a.provider, a.region, a.model, a.release_id, a.worker, \
     a.provider_request_id, a.hedge_group, a.outcome, a.error_class, a.http_status, a.retry_after_ms, a.proposal_hash, \
     a.presented_key, a.replayed, a.sent, a.late, a.detail, a.started_at_ms, a.ended_at_ms, a.reported_by, \
     a.downstream_resource, a.key_retention_secs, a.cost_micros, a.hedge_lost";

pub(crate) fn attempt_from_row(row: &Row<'_>) -> Result<Attempt, StoreError> {
    let text = |i: usize| row.get::<String>(i);
    Ok(Attempt {
        id: text(0)?.parse()?,
        intent_id: Some(text(1)?.parse()?),
        kind: text(2)?.parse()?,
        provider: row.get(3)?,
        region: row.get(4)?,
        model: row.get(5)?,
        release_id: row.get(6)?,
        worker: row.get(7)?,
        provider_request_id: row.get(8)?,
        hedge_group: row.get(9)?,
        outcome: text(10)?.parse()?,
        error_class: row.get(11)?,
        http_status: row.get(12)?,
        retry_after_ms: row.get(13)?,
        proposal_hash: row.get(14)?,
        presented_key: row.get(15)?,
        replayed: row.get(16)?,
        sent: row.get(17)?,
        late: row.get(18)?,
        detail: row.get(19)?,
        started_at_ms: row.get(20)?,
        ended_at_ms: row.get(21)?,
        reported_by: row.get(22)?,
        downstream_resource: row.get(23)?,
        key_retention_secs: row.get(24)?,
        cost_micros: row.get(25)?,
        hedge_lost: row.get(26)?,
    })
}

/// Announce a change of the attempt on the change feed, and read it back as stored.
pub(crate) fn announce(
    tx: &dyn Conn,
    intent: &Intent,
    attempt_id: &AttemptId,
    now_ms: u64,
) -> Result<Attempt, StoreError> {
    let attempt = load_attempt(tx, attempt_id)?;
    announce_as_written(tx, intent, &attempt, now_ms)?;
    Ok(attempt)
}

/// Announce a change of `attempt`, which this transaction wrote as it stands.
fn announce_as_written(
    tx: &dyn Conn,
    intent: &Intent,
    attempt: &Attempt,
    now_ms: u64,
) -> Result<(), StoreError> {
    events::append_ref(
        tx,
        "attempt",
        &intent.tenant,
        &intent.id,
        attempt.id.as_str(),
        now_ms,
    )
}

/// The attempt `id`, if there is one.
pub(crate) fn find_attempt(tx: &dyn Conn, id: &AttemptId) -> Result<Option<Attempt>, StoreError> {
    let sql = format!(
        "SELECT {ATTEMPT_COLUMNS} FROM attempts a JOIN intents i ON i.seq = a.intent_seq WHERE a.id = ?1"
    );
    tx.one(&sql, params![id.as_str()], attempt_from_row)
        .optional()
}

fn load_attempt(tx: &dyn Conn, id: &AttemptId) -> Result<Attempt, StoreError> {
    find_attempt(tx, id)?.ok_or_else(|| StoreError::NotFound {
        what: "attempt",
        id: id.to_string(),
    })
}

/// Attempts: reported ones, the coordinator's own, and how they ended.
pub trait Attempts {
    /// Record a reported non-mutating attempt (`reported_by` the agent's principal) or the
    /// coordinator's own lookup (`None`). Refused for `dispatch` (only the coordinator
    /// crosses the action boundary), when paused for its provider, past the deadline, or
    /// when the budget is spent. Lookups do not count against the budget.
    fn record_attempt(
        &mut self,
        intent_id: &IntentId,
        attempt_id: &AttemptId,
        new: &NewAttempt,
        reported_by: Option<&str>,
        now_ms: u64,
    ) -> Result<Attempt, StoreError>;

    /// Record how an agent says its reported attempt ended. Only the principal that reported
    /// it may (attempts from before reporters were recorded: any agent of the tenant); the
    /// coordinator's dispatches and lookups are its own. An attempt ends once: the same
    /// outcome again answers the attempt as it stands, another outcome is refused.
    fn finish_reported_attempt(
        &mut self,
        intent_id: &IntentId,
        attempt_id: &AttemptId,
        finish: &AttemptFinish,
        principal: &str,
        now_ms: u64,
    ) -> Result<ReportedFinish, StoreError>;

    /// Record how an attempt ended. An attempt that ends after its intent's deadline, or
    /// after the intent reached a final state by other means, is marked late.
    fn finish_attempt(
        &mut self,
        intent_id: &IntentId,
        attempt_id: &AttemptId,
        finish: &AttemptFinish,
        now_ms: u64,
    ) -> Result<Attempt, StoreError>;

    /// [`Attempts::finish_attempt`] of an intent this write locked; `locked` learns whether
    /// anything of it may now have crossed the action boundary.
    fn finish_locked_attempt(
        &mut self,
        locked: &mut Locked,
        attempt_id: &AttemptId,
        finish: &AttemptFinish,
        now_ms: u64,
    ) -> Result<Attempt, StoreError>;

    /// Every attempt of one intent, oldest first.
    fn attempts_of(&mut self, intent_id: &IntentId) -> Result<Vec<Attempt>, StoreError>;

    /// The attempt `winner` became its intent's result: every other attempt of its hedge
    /// group lost, and keeps its cost as a losing hedge's. Answers how many lost.
    fn mark_losing_hedges(
        &mut self,
        intent_id: &IntentId,
        winner: &AttemptId,
        now_ms: u64,
    ) -> Result<u32, StoreError>;

    /// The downstream resource the intent's latest send went to, as its claim resolved it;
    /// `None` when no send recorded one.
    fn sent_resource(&mut self, intent_id: &IntentId) -> Result<Option<String>, StoreError>;
}

/// The latest counted attempt of an intent at one provider as pacing reads it: its outcome,
/// when it ended, the `Retry-After` it carried, and whether any attempt is still running.
type LatestAttempt = (String, Option<i64>, Option<i64>, bool);

/// Refuse a reported attempt begun too soon after the failure before it: with no attempt
/// still running, the latest one at the same `provider` failed, and its backoff or
/// `Retry-After` has not passed. A hedge beside a running attempt is not a retry, and a
/// failover to another provider does not wait for the one that failed: neither is paced;
/// going back to a provider that failed waits for it, whatever was tried in between.
fn pace_reported_retry(
    tx: &dyn Conn,
    seq: i64,
    provider: &str,
    attempts_used: u32,
    now_ms: u64,
) -> Result<(), StoreError> {
    let latest: Option<LatestAttempt> = tx
        .one(
            "SELECT outcome, ended_at_ms, retry_after_ms, \
             EXISTS (SELECT 1 FROM attempts p WHERE p.intent_seq = ?1 AND p.outcome = 'pending' \
                 AND p.kind <> 'lookup') \
             FROM attempts WHERE intent_seq = ?1 AND kind <> 'lookup' AND provider = ?2 \
             ORDER BY seq DESC LIMIT 1",
            params![seq, provider],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .optional()?;
    let Some((outcome, Some(ended_at_ms), retry_after_ms, false)) = latest else {
        return Ok(());
    };
    let outcome: AttemptOutcome = outcome.parse()?;
    if matches!(
        outcome,
        AttemptOutcome::Succeeded | AttemptOutcome::Abandoned | AttemptOutcome::Pending
    ) {
        return Ok(());
    }
    let not_before = reported_retry_not_before(
        &RetryPolicy::default(),
        attempts_used.saturating_sub(1),
        to_u64(ended_at_ms),
        retry_after_ms.map(to_u64),
    );
    if now_ms < not_before {
        return Err(Refusal::TooEarly {
            wait_ms: not_before - now_ms,
        }
        .into());
    }
    Ok(())
}

/// Attempts of one hedge group that may run at once: the first and two hedges.
pub const MAX_HEDGES: u32 = 3;

impl Attempts for Store {
    fn record_attempt(
        &mut self,
        intent_id: &IntentId,
        attempt_id: &AttemptId,
        new: &NewAttempt,
        reported_by: Option<&str>,
        now_ms: u64,
    ) -> Result<Attempt, StoreError> {
        let kind = new.kind.unwrap_or(AttemptKind::Inference);
        if kind.is_mutating() {
            return Err(StoreError::Conflict(
                "mutating work is never reported: use POST /v1/intents/{id}/dispatch".to_string(),
            ));
        }
        let tx = self.conn.savepoint()?;
        let (seq, intent) = load_for_update(&tx, intent_id)?;
        if let Some(group) = &new.hedge_group {
            // Hedge reads, never business side effects: a losing hedge of a proposal or a
            // write would be a second one.
            if !intent.consequence.may_hedge() {
                return Err(Refusal::HedgeNotAllowed {
                    tier: intent.consequence,
                }
                .into());
            }
            let running: i64 = tx.one(
                "SELECT count(*) FROM attempts WHERE intent_seq = ?1 AND hedge_group = ?2 \
                 AND outcome = 'pending'",
                params![seq, group],
                |r| r.get(0),
            )?;
            if running >= i64::from(MAX_HEDGES) {
                return Err(Refusal::HedgesAtCap {
                    group: group.clone(),
                    limit: MAX_HEDGES,
                }
                .into());
            }
        }
        let counts = kind != AttemptKind::Lookup;
        if counts {
            let provider_paused: bool = tx.one(
                "SELECT EXISTS (SELECT 1 FROM pauses WHERE resumed_at_ms IS NULL AND provider = ?1 \
                 AND (tenant IS NULL OR tenant = ?2))",
                params![new.provider, intent.tenant.as_str()],
                |r| r.get(0),
            )?;
            if provider_paused {
                return Err(Refusal::Paused.into());
            }
            if matches!(intent.state, IntentState::Prepared) {
                return Err(Refusal::NotAllowed {
                    state: intent.state,
                    event: "attempt_started",
                }
                .into());
            }
            let ctx = ApplyContext {
                now_ms,
                ..ApplyContext::default()
            };
            apply_in(&tx, intent_id, &Event::AttemptStarted, &ctx)?;
            // After the state machine, so a lapsed approval or a spent budget is the answer
            // rather than the wait; a refusal here rolls the transition back with the rest.
            pace_reported_retry(&tx, seq, &new.provider, intent.attempts, now_ms)?;
            tx.run_held(
                "UPDATE intents SET attempts = attempts + 1 WHERE seq = ?1",
                params![seq],
            )?;
        }
        tx.run_held(
            "INSERT INTO attempts (id, intent_seq, tenant, kind, provider, region, model, release_id, worker, \
             provider_request_id, hedge_group, proposal_hash, outcome, started_at_ms, reported_by) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, 'pending', ?13, ?14)",
            params![
                attempt_id.as_str(),
                seq,
                intent.tenant.as_str(),
                kind.as_str(),
                new.provider,
                new.region,
                new.model,
                new.release_id.as_deref().unwrap_or(&intent.release_id),
                new.worker,
                new.provider_request_id,
                new.hedge_group,
                new.proposal_hash,
                to_i64(now_ms),
                reported_by
            ],
        )?;
        tx.run_held(
            "INSERT INTO intent_providers (provider, intent_seq) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
            params![new.provider, seq],
        )?;
        let attempt = announce(&tx, &intent, attempt_id, now_ms)?;
        tx.commit()?;
        Ok(attempt)
    }

    fn finish_reported_attempt(
        &mut self,
        intent_id: &IntentId,
        attempt_id: &AttemptId,
        finish: &AttemptFinish,
        principal: &str,
        now_ms: u64,
    ) -> Result<ReportedFinish, StoreError> {
        let before = load_attempt(&self.conn, attempt_id)?;
        if before.intent_id.as_ref() != Some(intent_id) {
            return Err(StoreError::NotFound {
                what: "attempt",
                id: attempt_id.to_string(),
            });
        }
        if matches!(before.kind, AttemptKind::Dispatch | AttemptKind::Lookup) {
            return Err(StoreError::Forbidden(format!(
                "{} attempts are the coordinator's own record and cannot be changed",
                before.kind
            )));
        }
        if before
            .reported_by
            .as_deref()
            .is_some_and(|by| by != principal)
        {
            return Err(StoreError::Forbidden(
                "this attempt was reported by another principal; only its reporter finishes it"
                    .to_string(),
            ));
        }
        if before.ended_at_ms.is_some() {
            return if finish.outcome.is_none_or(|o| o == before.outcome) {
                Ok(ReportedFinish::AlreadyEnded(before))
            } else {
                Err(StoreError::AlreadyEnded {
                    id: attempt_id.to_string(),
                    outcome: before.outcome,
                })
            };
        }
        self.finish_attempt(intent_id, attempt_id, finish, now_ms)
            .map(ReportedFinish::Finished)
    }

    fn finish_attempt(
        &mut self,
        intent_id: &IntentId,
        attempt_id: &AttemptId,
        finish: &AttemptFinish,
        now_ms: u64,
    ) -> Result<Attempt, StoreError> {
        let tx = self.conn.savepoint()?;
        let (seq, intent) = load_for_update(&tx, intent_id)?;
        let (attempt, _) = finish_in(&tx, seq, &intent, attempt_id, finish, now_ms)?;
        tx.commit()?;
        Ok(attempt)
    }

    fn finish_locked_attempt(
        &mut self,
        locked: &mut Locked,
        attempt_id: &AttemptId,
        finish: &AttemptFinish,
        now_ms: u64,
    ) -> Result<Attempt, StoreError> {
        let tx = self.conn.savepoint()?;
        let (seq, intent) = (locked.seq(), &locked.intent);
        let (attempt, crossed) = finish_in(&tx, seq, intent, attempt_id, finish, now_ms)?;
        tx.commit()?;
        if let Some(crossed) = crossed {
            locked.intent.may_have_crossed_boundary = crossed;
        }
        Ok(attempt)
    }

    fn mark_losing_hedges(
        &mut self,
        intent_id: &IntentId,
        winner: &AttemptId,
        now_ms: u64,
    ) -> Result<u32, StoreError> {
        let tx = self.conn.savepoint()?;
        let (_, intent) = load_for_update(&tx, intent_id)?;
        let losers: Vec<String> = tx.rows(
            "SELECT l.id FROM attempts w JOIN attempts l ON l.intent_seq = w.intent_seq \
             AND l.hedge_group = w.hedge_group AND l.id <> w.id \
             WHERE w.id = ?1 AND l.hedge_lost = 0",
            params![winner.as_str()],
            |r| r.get(0),
        )?;
        for loser in &losers {
            tx.run_held(
                "UPDATE attempts SET hedge_lost = 1 WHERE id = ?1",
                params![loser.as_str()],
            )?;
            announce(&tx, &intent, &loser.parse()?, now_ms)?;
        }
        tx.commit()?;
        Ok(losers.len() as u32)
    }

    fn attempts_of(&mut self, intent_id: &IntentId) -> Result<Vec<Attempt>, StoreError> {
        let sql = format!(
            "SELECT {ATTEMPT_COLUMNS} FROM attempts a JOIN intents i ON i.seq = a.intent_seq \
             WHERE i.id = ?1 ORDER BY a.seq"
        );
        self.conn
            .rows(&sql, params![intent_id.as_str()], attempt_from_row)
    }

    fn sent_resource(&mut self, intent_id: &IntentId) -> Result<Option<String>, StoreError> {
        let found: Option<Option<String>> = self
            .conn
            .one(
                "SELECT a.downstream_resource FROM attempts a JOIN intents i ON i.seq = a.intent_seq \
                 WHERE i.id = ?1 AND a.kind = 'dispatch' AND a.downstream_resource IS NOT NULL \
                 ORDER BY a.seq DESC LIMIT 1",
                params![intent_id.as_str()],
                |r| r.get(0),
            )
            .optional()?;
        Ok(found.flatten())
    }
}

/// End the attempt `attempt_id` of the intent `seq`, as this transaction read it, locked:
/// the attempt as it now stands, and whether anything of the intent may have crossed the
/// action boundary, when the finish says whether this attempt was sent.
fn finish_in(
    tx: &dyn Conn,
    seq: i64,
    intent: &Intent,
    attempt_id: &AttemptId,
    finish: &AttemptFinish,
    now_ms: u64,
) -> Result<(Attempt, Option<bool>), StoreError> {
    let before = load_attempt(tx, attempt_id)?;
    if before.intent_id.as_ref() != Some(&intent.id) {
        return Err(StoreError::NotFound {
            what: "attempt",
            id: attempt_id.to_string(),
        });
    }
    // Work under the intent's own action key (a dispatch, a lookup) answering after the
    // receipt arrived by another way (the webhook for the same record), and an attempt
    // whose result is the receipt, are the intent's result, not late ones: only competing
    // work (a losing hedge) finishing after the intent was final, or any work finishing
    // after the deadline, is late.
    let result_ref = finish
        .provider_request_id
        .as_deref()
        .or(before.provider_request_id.as_deref());
    let same_key = matches!(before.kind, AttemptKind::Dispatch | AttemptKind::Lookup);
    let own_result = intent.state == IntentState::Committed
        && (same_key || (result_ref.is_some() && result_ref == intent.downstream_ref.as_deref()));
    // A result arriving after the intent's cancellation was asked for is late too: work
    // that succeeded, except a lookup that found nothing.
    let succeeded = finish.outcome.unwrap_or(before.outcome) == AttemptOutcome::Succeeded;
    let after_cancel = intent.cancel_requested_at_ms.is_some_and(|at| now_ms >= at)
        && succeeded
        && (before.kind != AttemptKind::Lookup || result_ref.is_some());
    let late = now_ms > intent.deadline_at_ms
        || (intent.state.is_terminal() && !own_result)
        || after_cancel;
    // The attempt as this finish leaves it: what the finish says, and what it leaves out
    // as it was. Written whole, and answered as written, so it is not read back.
    let stored = |v: Option<u64>| v.map(|v| to_u64(to_i64(v)));
    let after = Attempt {
        outcome: finish.outcome.unwrap_or(before.outcome),
        error_class: finish.error_class.clone().or(before.error_class.clone()),
        http_status: finish.http_status.or(before.http_status),
        retry_after_ms: stored(finish.retry_after_ms).or(before.retry_after_ms),
        provider_request_id: finish
            .provider_request_id
            .clone()
            .or(before.provider_request_id.clone()),
        proposal_hash: finish
            .proposal_hash
            .clone()
            .or(before.proposal_hash.clone()),
        replayed: finish.replayed.or(before.replayed),
        sent: finish.sent.unwrap_or(before.sent),
        detail: finish.detail.clone().or(before.detail.clone()),
        late,
        ended_at_ms: stored(Some(now_ms)),
        cost_micros: stored(finish.cost_micros).or(before.cost_micros),
        ..before
    };
    tx.run_held(
        "UPDATE attempts SET outcome = ?2, error_class = ?3, http_status = ?4, retry_after_ms = ?5, \
         provider_request_id = ?6, proposal_hash = ?7, replayed = ?8, sent = ?9, detail = ?10, \
         late = ?11, ended_at_ms = ?12, cost_micros = ?13 WHERE id = ?1",
        params![
            attempt_id.as_str(),
            after.outcome.as_str(),
            after.error_class,
            after.http_status,
            after.retry_after_ms.map(to_i64),
            after.provider_request_id,
            after.proposal_hash,
            after.replayed,
            after.sent,
            after.detail,
            after.late,
            after.ended_at_ms.map(to_i64),
            after.cost_micros.map(to_i64)
        ],
    )?;
    let crossed = match finish.sent {
        // A dispatch that was sent crossed, whatever the others did: no need to look at
        // them, and the claim that sent it has usually marked the intent already (then
        // nothing is written).
        Some(true) if before.kind == AttemptKind::Dispatch => {
            tx.run_held(
                "UPDATE intents SET crossed = 1 WHERE seq = ?1 AND crossed = 0",
                params![seq],
            )?;
            Some(true)
        }
        // Whether anything may have crossed the action boundary is recomputed from every
        // dispatch attempt, so a proved non-send clears only its own attempt.
        Some(_) => Some(tx.one(
            "UPDATE intents SET crossed = CASE WHEN EXISTS (SELECT 1 FROM attempts a WHERE a.intent_seq = intents.seq \
             AND a.kind = 'dispatch' AND a.sent = 1) THEN 1 ELSE 0 END WHERE seq = ?1 RETURNING crossed",
            params![seq],
            |r| r.get::<bool>(0),
        )?),
        None => None,
    };
    announce_as_written(tx, intent, &after, now_ms)?;
    Ok((after, crossed))
}
