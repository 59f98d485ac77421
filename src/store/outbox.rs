//! The `outbox` table: dispatches written in the same transaction as their attempt, claimed
//! by a dispatcher under a lease, each claim numbered (the fencing token). A row whose lease
//! ran out (its dispatcher died or stalled) is claimed again with `reclaimed = true`, so the
//! new dispatcher reconciles it instead of resending, and the old claimant, holding an older
//! number, can no longer record an outcome. Rows are `pending`, `claimed`, `done`, or
//! `withdrawn` (their intent reached a final state before they were sent).
//!
//! The claim is the one statement a PostgreSQL backend writes as
//! `SELECT … FOR UPDATE SKIP LOCKED`; SQLite has a single writer, so an `UPDATE … RETURNING`
//! over the chosen rows is already exclusive.

use super::sql::{Conn, ConnExt, Dialect, Optional, params};
use serde::Serialize;

use super::apply::{apply_in, facts_of};
use super::attempts::announce as announce_attempt;
use super::events::announce_intent;
use super::intents::load_for_update;
use super::{ApplyContext, Store, StoreError, to_i64, to_u64};
use crate::domain::{
    ActionKey, AttemptId, Event, Hold, IntentId, IntentState, KeyContract, Tenant, may_send,
};
use crate::wire::Intent;

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
    /// The downstream resource the send goes to, as resolved when it was first claimed.
    pub resource: Option<String>,
    /// True when an earlier claim's lease ran out: the command may already have been sent.
    pub reclaimed: bool,
    pub deadline_at_ms: u64,
    /// The fencing token: this claim's number. A claimant whose claim was taken over holds
    /// an older number and can record nothing ([`Store::finish_claim`]).
    pub fence: u32,
    /// When the claim's lease runs out; a send must not begin unless it ends before.
    pub lease_expires_at_ms: u64,
    /// The intent's first send and how long its key is kept, as this claim left them: the
    /// claim is the intent's crossing of the action boundary.
    pub first_dispatch_at_ms: u64,
    pub key_retention_secs: Option<u64>,
}

/// A due send the gate held back, carried out in the claim's transaction.
#[derive(Debug, Clone, PartialEq)]
pub struct HeldSend {
    pub intent_id: IntentId,
    pub why: String,
    /// True when the intent now waits for a lookup or an operator.
    pub indeterminate: bool,
}

/// What one claim round took.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Claim {
    /// Sends to make (or, when reclaimed, to reconcile).
    pub rows: Vec<ClaimedRow>,
    /// Sends the gate held back: withdrawn, or abandoned with the intent moved on.
    pub held: Vec<HeldSend>,
}

/// What a send of one operation crosses under: the connector's key contract and the
/// downstream resource the operation creates, as configured when the send is claimed. Both
/// are stored with the attempt, and the retention with the intent at its first send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendTerms {
    pub key: KeyContract,
    pub resource: String,
}

/// The terms of a send of `operation` by `connector`, or why no send of it can be made (the
/// connector or its resource is not configured).
pub type ContractOf<'a> = &'a dyn Fn(&str, &str) -> Result<SendTerms, String>;

/// Why a due send is not made.
enum Stop {
    /// The configuration cannot send it.
    Unsendable(String),
    Gate(Hold),
}

/// The dispatches waiting to cross the action boundary, and their claims.
pub trait Outbox {
    /// Claim up to `limit` dispatches that are due, or whose lease ran out, for `worker`.
    ///
    /// A due send is first put to the send gate ([`may_send`]) with its intent as it stands
    /// in this transaction: one that may go is claimed and its attempt marked as possibly
    /// sent; one that may not is carried out here (withdrawn, or abandoned with the intent
    /// stopped, expired or left for an operator), so nothing that changed since the send was
    /// planned can let it through. A row whose lease ran out is claimed again as
    /// `reclaimed`, never to be resent.
    fn claim_outbox(
        &mut self,
        worker: &str,
        now_ms: u64,
        lease_ms: u64,
        limit: u32,
        contract_of: ContractOf<'_>,
    ) -> Result<Claim, StoreError>;

    /// Claim, in the write that planned it, the send a dispatch of `intent` planned due now,
    /// exactly as [`Outbox::claim_outbox`] would claim it a moment later: put to the gate
    /// with `intent` (as this transaction left it, and locked by it), then claimed under a
    /// lease or held back. Empty when the intent has no such send pending.
    fn claim_planned(
        &mut self,
        intent: &Intent,
        worker: &str,
        now_ms: u64,
        lease_ms: u64,
        contract_of: ContractOf<'_>,
    ) -> Result<Claim, StoreError>;

    /// Give a claim back unsent: the row is due again at once and its attempt is no longer
    /// taken as possibly sent. `Fenced` when the claim was taken over meanwhile.
    fn release_claim(&mut self, outbox_seq: i64, fence: u32, now_ms: u64)
    -> Result<(), StoreError>;

    /// End a claim whose outcome is being recorded, in the same transaction as the record.
    /// `Fenced` when the claim was taken over (its lease ran out and another claimed the
    /// row): the caller's whole record must then be rolled back.
    fn finish_claim(&mut self, outbox_seq: i64, fence: u32, now_ms: u64) -> Result<(), StoreError>;

    /// Withdraw a claimed send that has not left, because cancellation of its intent was
    /// requested after the claim: the row is withdrawn, its attempt abandoned and never
    /// sent, and the cancellation settled as far as that allows (`cancelled` when no other
    /// send may have crossed). True when the intent is left indeterminate, to be looked up.
    /// `Fenced` when the claim was taken over meanwhile.
    fn withdraw_claim(
        &mut self,
        outbox_seq: i64,
        fence: u32,
        now_ms: u64,
    ) -> Result<bool, StoreError>;

    /// Dispatches not yet handled: pending plus claimed.
    fn outbox_depth(&mut self) -> Result<u64, StoreError>;

    /// The earliest time a pending dispatch becomes due, if any.
    fn next_outbox_due_ms(&mut self) -> Result<Option<u64>, StoreError>;
}

impl Outbox for Store {
    fn claim_outbox(
        &mut self,
        worker: &str,
        now_ms: u64,
        lease_ms: u64,
        limit: u32,
        contract_of: ContractOf<'_>,
    ) -> Result<Claim, StoreError> {
        let tx = self.conn.savepoint()?;
        let now = to_i64(now_ms);
        let lease_expires_at_ms = now_ms.saturating_add(lease_ms);
        let sql = match tx.dialect() {
            // Each kind of due row is read along the ready index in due order, so a claim
            // reads what it takes, however long the backlog: as one condition with OR, SQLite
            // gathered every due row and sorted them all for each claim of 64.
            Dialect::Sqlite => "SELECT o.seq, o.status = 'claimed', i.id FROM outbox o \
                JOIN intents i ON i.seq = o.intent_seq WHERE o.seq IN ( \
                    SELECT seq FROM (SELECT seq FROM outbox WHERE status = 'pending' \
                        AND available_at_ms <= ?1 ORDER BY available_at_ms LIMIT ?2) \
                    UNION ALL \
                    SELECT seq FROM (SELECT seq FROM outbox WHERE status = 'claimed' \
                        AND claim_expires_at_ms <= ?1 ORDER BY available_at_ms LIMIT ?2)) \
                ORDER BY o.available_at_ms LIMIT ?2"
                .to_string(),
            // Under several coordinators, a row (or its intent) another transaction holds is
            // left for the next claim rather than waited for; a row past the first due ones
            // is still claimed when they are held.
            Dialect::Postgres => format!(
                "SELECT o.seq, o.status = 'claimed', i.id FROM outbox o JOIN intents i ON i.seq = o.intent_seq \
                 WHERE (o.status = 'pending' AND o.available_at_ms <= ?1) \
                    OR (o.status = 'claimed' AND o.claim_expires_at_ms <= ?1) \
                 ORDER BY o.available_at_ms LIMIT ?2{}",
                tx.dialect().for_update_skip_locked("o, i")
            ),
        };
        let due: Vec<(i64, bool, String)> = {
            tx.rows(&sql, params![now, limit], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })?
        };
        let terms = ClaimTerms {
            worker,
            now_ms,
            lease_expires_at_ms,
            contract_of,
        };
        let mut claim = Claim::default();
        for (outbox_seq, reclaimed, intent_id) in due {
            let due = Due {
                outbox_seq,
                intent_id: intent_id.parse()?,
                reclaimed,
                intent: None,
            };
            claim_row(&tx, &mut claim, due, &terms)?;
        }
        tx.commit()?;
        Ok(claim)
    }

    fn claim_planned(
        &mut self,
        intent: &Intent,
        worker: &str,
        now_ms: u64,
        lease_ms: u64,
        contract_of: ContractOf<'_>,
    ) -> Result<Claim, StoreError> {
        let tx = self.conn.savepoint()?;
        let mut claim = Claim::default();
        let planned: Option<i64> = tx
            .one(
                PLANNED_SEND_SQL,
                params![intent.id.as_str(), to_i64(now_ms)],
                |r| r.get(0),
            )
            .optional()?;
        if let Some(outbox_seq) = planned {
            let due = Due {
                outbox_seq,
                intent_id: intent.id.clone(),
                reclaimed: false,
                intent: Some(intent),
            };
            let terms = ClaimTerms {
                worker,
                now_ms,
                lease_expires_at_ms: now_ms.saturating_add(lease_ms),
                contract_of,
            };
            claim_row(&tx, &mut claim, due, &terms)?;
        }
        tx.commit()?;
        Ok(claim)
    }

    fn release_claim(
        &mut self,
        outbox_seq: i64,
        fence: u32,
        now_ms: u64,
    ) -> Result<(), StoreError> {
        let tx = self.conn.savepoint()?;
        let released = tx.run(
            "UPDATE outbox SET status = 'pending', claimed_by = NULL, claim_expires_at_ms = NULL, \
             available_at_ms = ?3 WHERE seq = ?1 AND status = 'claimed' AND claims = ?2",
            params![outbox_seq, fence, to_i64(now_ms)],
        )?;
        if released != 1 {
            return Err(StoreError::Fenced { outbox_seq });
        }
        tx.run_held(
            "UPDATE attempts SET sent = 0 WHERE seq = (SELECT attempt_seq FROM outbox WHERE seq = ?1)",
            params![outbox_seq],
        )?;
        tx.run_held(
            "UPDATE intents SET crossed = CASE WHEN EXISTS (SELECT 1 FROM attempts a WHERE a.intent_seq = intents.seq \
             AND a.kind = 'dispatch' AND a.sent = 1) THEN 1 ELSE 0 END \
             WHERE seq = (SELECT intent_seq FROM outbox WHERE seq = ?1)",
            params![outbox_seq],
        )?;
        tx.commit()?;
        Ok(())
    }

    fn finish_claim(&mut self, outbox_seq: i64, fence: u32, now_ms: u64) -> Result<(), StoreError> {
        lock_intent_of(self.conn.as_conn(), outbox_seq)?;
        let ended = self.conn.run(
            "UPDATE outbox SET status = 'done', done_at_ms = ?3, claim_expires_at_ms = NULL \
             WHERE seq = ?1 AND status = 'claimed' AND claims = ?2",
            params![outbox_seq, fence, to_i64(now_ms)],
        )?;
        if ended == 1 {
            Ok(())
        } else {
            Err(StoreError::Fenced { outbox_seq })
        }
    }

    fn withdraw_claim(
        &mut self,
        outbox_seq: i64,
        fence: u32,
        now_ms: u64,
    ) -> Result<bool, StoreError> {
        let tx = self.conn.savepoint()?;
        lock_intent_of(&tx, outbox_seq)?;
        let found: Option<(String, String)> = tx
            .one(
                "UPDATE outbox SET status = 'withdrawn', done_at_ms = ?3, claim_expires_at_ms = NULL \
                 WHERE seq = ?1 AND status = 'claimed' AND claims = ?2 \
                 RETURNING (SELECT id FROM attempts a WHERE a.seq = outbox.attempt_seq), \
                 (SELECT id FROM intents i WHERE i.seq = outbox.intent_seq)",
                params![outbox_seq, fence, to_i64(now_ms)],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        let Some((attempt, intent_id)) = found else {
            return Err(StoreError::Fenced { outbox_seq });
        };
        let (attempt, intent_id): (AttemptId, IntentId) = (attempt.parse()?, intent_id.parse()?);
        tx.run_held(
            "UPDATE attempts SET outcome = 'abandoned', sent = 0, ended_at_ms = ?2, detail = ?3 WHERE id = ?1",
            params![
                attempt.as_str(),
                to_i64(now_ms),
                "not sent: cancellation was requested before the send left"
            ],
        )?;
        tx.run_held(
            "UPDATE intents SET crossed = CASE WHEN EXISTS (SELECT 1 FROM attempts a WHERE a.intent_seq = intents.seq \
             AND a.kind = 'dispatch' AND a.sent = 1) THEN 1 ELSE 0 END WHERE id = ?1",
            params![intent_id.as_str()],
        )?;
        refund_attempt(&tx, &intent_id)?;
        let (_, intent) = load_for_update(&tx, &intent_id)?;
        announce_attempt(&tx, &intent, &attempt, now_ms)?;
        let ctx = ApplyContext {
            now_ms,
            ..ApplyContext::default()
        };
        let event = Event::Cancel {
            reason: "not sent: cancellation was requested before the send left".to_string(),
        };
        let indeterminate = match apply_in(&tx, &intent_id, &event, &ctx) {
            Ok(applied) => applied.transition.to == IntentState::Indeterminate,
            Err(StoreError::Refused(_)) => {
                announce_intent(&tx, &intent_id, now_ms)?;
                false
            }
            Err(e) => return Err(e),
        };
        tx.commit()?;
        Ok(indeterminate)
    }

    fn outbox_depth(&mut self) -> Result<u64, StoreError> {
        let n: i64 = self.conn.one(
            "SELECT count(*) FROM outbox WHERE status IN ('pending', 'claimed')",
            params![],
            |r| r.get(0),
        )?;
        Ok(to_u64(n))
    }

    fn next_outbox_due_ms(&mut self) -> Result<Option<u64>, StoreError> {
        let at: Option<i64> = self.conn.one(NEXT_DUE_SQL, params![], |r| r.get(0))?;
        Ok(at.map(to_u64))
    }
}

/// Give back the unit of budget a planned send took, when it was never made.
pub(crate) fn refund_attempt(tx: &dyn Conn, id: &IntentId) -> Result<(), StoreError> {
    tx.run_held(
        "UPDATE intents SET attempts = attempts - 1 WHERE id = ?1 AND attempts > 0",
        params![id.as_str()],
    )?;
    Ok(())
}

/// Who claims, when, and under what lease and contracts.
#[derive(Clone, Copy)]
struct ClaimTerms<'a> {
    worker: &'a str,
    now_ms: u64,
    lease_expires_at_ms: u64,
    contract_of: ContractOf<'a>,
}

/// A due row, as a claim found it.
struct Due<'a> {
    outbox_seq: i64,
    intent_id: IntentId,
    /// Claimed before, and its lease ran out.
    reclaimed: bool,
    /// Its intent as this transaction left it and locked it, when the caller has it.
    intent: Option<&'a Intent>,
}

/// When the next send comes due: the earliest pending one, read from the end of the ready
/// index, or the earliest lease to run out, among the claimed sends (those in flight) along
/// it. As one condition over both statuses, an analysed store read every send ever made.
/// (PostgreSQL before 16 wants the subquery named.)
pub(crate) const NEXT_DUE_SQL: &str = "SELECT min(at) FROM ( \
     SELECT min(available_at_ms) AS at FROM outbox WHERE status = 'pending' \
     UNION ALL SELECT min(claim_expires_at_ms) FROM outbox WHERE status = 'claimed') AS due";

/// The newest pending send of intent `?1` due by `?2`: found by the intent's own rows
/// (`outbox_intent`), newest first. The unary plus keeps SQLite from choosing the ready
/// index instead, which it did: read over every pending send due by now, of every intent,
/// and sorted, at each dispatch.
pub(crate) const PLANNED_SEND_SQL: &str = "SELECT o.seq FROM outbox o JOIN intents i ON i.seq = o.intent_seq \
     WHERE i.id = ?1 AND o.status = 'pending' AND +o.available_at_ms <= ?2 \
     ORDER BY o.seq DESC LIMIT 1";

/// Claim one due row into `claim`: put a fresh send to the gate with its intent as it stands
/// in this transaction, then claim it or carry out the gate's stop; a reclaimed row is
/// claimed as it is, to be reconciled.
fn claim_row(
    tx: &dyn Conn,
    claim: &mut Claim,
    due: Due<'_>,
    terms: &ClaimTerms<'_>,
) -> Result<(), StoreError> {
    let ClaimTerms {
        worker,
        now_ms,
        lease_expires_at_ms,
        contract_of,
    } = *terms;
    let Due {
        outbox_seq,
        intent_id,
        reclaimed,
        intent: known,
    } = due;
    let now = to_i64(now_ms);
    let mut terms_sent: Option<SendTerms> = None;
    // The first send of an intent the dispatcher claims on its own changes the intent (it
    // is dispatched from now on), so the change feed must name it; a send claimed in the
    // write that planned it is named by that write's dispatch already.
    let mut first_send_unannounced: Option<Tenant> = None;
    if !reclaimed {
        let loaded;
        let intent = match known {
            Some(intent) => intent,
            None => {
                loaded = load_for_update(tx, &intent_id)?.1;
                if loaded.first_dispatch_at_ms.is_none() {
                    first_send_unannounced = Some(loaded.tenant.clone());
                }
                &loaded
            }
        };
        let facts = facts_of(intent, now_ms, false);
        let stop = match contract_of(&intent.connector, &intent.operation) {
            Err(why) => Err(Stop::Unsendable(why)),
            Ok(terms) => may_send(
                &facts,
                intent.first_dispatch_at_ms,
                &terms.key.retention_at_most(intent.key_retention_secs),
            )
            .map(|()| terms)
            .map_err(Stop::Gate),
        };
        match stop {
            Err(stop) => {
                claim
                    .held
                    .push(hold_back(tx, outbox_seq, intent, &stop, now_ms)?);
                return Ok(());
            }
            Ok(terms) => terms_sent = Some(terms),
        }
    }
    // The row is this transaction's (the single writer's, locked by the select that
    // found it, or planned in this transaction), so the count read back is the one this
    // claim made. Not `RETURNING`:
    // SQLite builds a temporary b-tree for it at every run.
    tx.run_held(
        "UPDATE outbox SET status = 'claimed', claimed_by = ?2, claim_expires_at_ms = ?3, \
             claims = claims + 1 WHERE seq = ?1",
        params![outbox_seq, worker, to_i64(lease_expires_at_ms)],
    )?;
    let fence: u32 = tx.one(
        "SELECT claims FROM outbox WHERE seq = ?1",
        params![outbox_seq],
        |r| r.get(0),
    )?;
    // What the send crosses under is kept with it: the resource and retention with
    // the attempt, the retention with the intent when its key is first sent.
    let resource = terms_sent.as_ref().map(|t| t.resource.as_str());
    let retention_secs = terms_sent
        .as_ref()
        .map(|t| to_i64(t.key.retention_ms / 1000));
    tx.run_held(
        "UPDATE attempts SET sent = 1, downstream_resource = coalesce(?2, downstream_resource), \
             key_retention_secs = coalesce(?3, key_retention_secs) \
             WHERE seq = (SELECT attempt_seq FROM outbox WHERE seq = ?1)",
        params![outbox_seq, resource, retention_secs],
    )?;
    tx.run_held(
            "UPDATE intents SET crossed = 1, first_dispatch_at_ms = coalesce(first_dispatch_at_ms, ?2), \
             key_retention_secs = CASE WHEN first_dispatch_at_ms IS NULL \
                 THEN coalesce(?3, key_retention_secs) ELSE key_retention_secs END \
             WHERE id = ?1",
            params![intent_id.as_str(), now, retention_secs],
        )?;
    if let Some(tenant) = &first_send_unannounced {
        super::events::append_ref(tx, "intent", tenant, &intent_id, "", now_ms)?;
    }
    // A send planned where the arguments are kept apart left its payload to them.
    let payload = format!(
        "CASE WHEN o.payload_json = '' THEN {} ELSE o.payload_json END",
        tx.dialect().payload_column("canonical_json")
    );
    let row = tx.one(
            &format!(
                "SELECT i.tenant, a.id, o.action_key, o.connector, o.operation, {payload}, i.deadline_at_ms, \
                 a.downstream_resource, i.first_dispatch_at_ms, i.key_retention_secs \
                 FROM outbox o JOIN intents i ON i.seq = o.intent_seq JOIN attempts a ON a.seq = o.attempt_seq \
                 WHERE o.seq = ?1"
            ),
            params![outbox_seq],
            |r| {
                Ok((
                    r.get::<String>(0)?,
                    r.get::<String>(1)?,
                    r.get::<String>(2)?,
                    r.get::<String>(3)?,
                    r.get::<String>(4)?,
                    r.get::<String>(5)?,
                    r.get::<i64>(6)?,
                    r.get::<Option<String>>(7)?,
                    r.get::<i64>(8)?,
                    r.get::<Option<i64>>(9)?,
                ))
            },
        )?;
    claim.rows.push(ClaimedRow {
        outbox_seq,
        intent_id,
        tenant: row.0.parse()?,
        attempt_id: row.1.parse()?,
        action_key: row.2.parse()?,
        connector: row.3,
        operation: row.4,
        payload_json: row.5,
        resource: row.7,
        reclaimed,
        deadline_at_ms: to_u64(row.6),
        fence,
        lease_expires_at_ms,
        first_dispatch_at_ms: to_u64(row.8),
        key_retention_secs: row.9.map(to_u64),
    });
    Ok(())
}

/// What an intent whose retry waits for a fresh approval says of itself.
pub const AWAITING_APPROVAL: &str =
    "waiting for a fresh approval: the approval lapsed before the next attempt";

/// Carry out a send the gate stopped: the row is withdrawn or done, its attempt abandoned
/// and never sent, and the intent told what that means for it.
fn hold_back(
    tx: &dyn Conn,
    outbox_seq: i64,
    intent: &Intent,
    stop: &Stop,
    now_ms: u64,
) -> Result<HeldSend, StoreError> {
    let why = match stop {
        Stop::Unsendable(why) => why.clone(),
        Stop::Gate(hold) => hold.to_string(),
    };
    let withdrawn = matches!(
        stop,
        Stop::Gate(Hold::NotExecuting { .. } | Hold::CancellationRequested)
    );
    let attempt: String = tx.one(
        "UPDATE outbox SET status = ?2, done_at_ms = ?3 WHERE seq = ?1 \
         RETURNING (SELECT id FROM attempts a WHERE a.seq = outbox.attempt_seq)",
        params![
            outbox_seq,
            if withdrawn { "withdrawn" } else { "done" },
            to_i64(now_ms)
        ],
        |r| r.get(0),
    )?;
    let attempt: AttemptId = attempt.parse()?;
    tx.run_held(
        "UPDATE attempts SET outcome = 'abandoned', sent = 0, ended_at_ms = ?2, detail = ?3 WHERE id = ?1",
        params![attempt.as_str(), to_i64(now_ms), format!("not sent: {why}")],
    )?;
    announce_attempt(tx, intent, &attempt, now_ms)?;
    // A send never made is no try: its unit of budget is given back.
    refund_attempt(tx, &intent.id)?;
    let event = match stop {
        Stop::Unsendable(why) => Some(Event::Refused {
            reason: why.clone(),
        }),
        // Nothing to tell a final intent; a paused one keeps executing and its retry is
        // planned again after resume; one whose approval lapsed (it expired, or the policy
        // it was given under changed) waits for a fresh approval, then likewise.
        Stop::Gate(Hold::NotExecuting { .. } | Hold::Paused | Hold::AuthorizationLapsed) => None,
        Stop::Gate(Hold::DeadlinePassed) => Some(Event::DeadlinePassed),
        // Cancelled when nothing crossed; otherwise what an earlier send did is looked up.
        Stop::Gate(Hold::CancellationRequested) => Some(Event::Cancel {
            reason: format!("not sent: {why}"),
        }),
        Stop::Gate(Hold::NoIdempotency | Hold::KeyMayBeForgotten { .. }) => Some(Event::Refused {
            reason: format!("not resent: {why}"),
        }),
    };
    let mut indeterminate = false;
    let mut announced = false;
    if let Some(event) = event {
        let ctx = ApplyContext {
            now_ms,
            ..ApplyContext::default()
        };
        match apply_in(tx, &intent.id, &event, &ctx) {
            Ok(applied) => {
                indeterminate = applied.transition.to == IntentState::Indeterminate;
                announced = true;
            }
            Err(StoreError::Refused(_)) => {}
            Err(e) => return Err(e),
        }
    }
    if matches!(stop, Stop::Gate(Hold::AuthorizationLapsed)) {
        tx.run_held(
            // A lapse that names its policy change says more; it stays.
            "UPDATE intents SET state_reason = CASE WHEN state_reason LIKE 'approval lapsed:%' \
             THEN state_reason ELSE ?2 END WHERE id = ?1",
            params![intent.id.as_str(), AWAITING_APPROVAL],
        )?;
    }
    if !announced {
        announce_intent(tx, &intent.id, now_ms)?;
    }
    Ok(HeldSend {
        intent_id: intent.id.clone(),
        why,
        indeterminate,
    })
}

/// Lock the intent of outbox row `outbox_seq` (a no-op on SQLite), so a write that goes on
/// to its outbox row takes the locks in the order every write does: the intent first.
fn lock_intent_of(conn: &dyn Conn, outbox_seq: i64) -> Result<(), StoreError> {
    if conn.dialect() == crate::store::sql::Dialect::Sqlite {
        return Ok(());
    }
    let sql = format!(
        "SELECT i.seq FROM intents i WHERE i.seq = (SELECT intent_seq FROM outbox WHERE seq = ?1){}",
        conn.dialect().for_update("i")
    );
    conn.rows(&sql, params![outbox_seq], |r| r.get::<i64>(0))
        .map(|_| ())
}
