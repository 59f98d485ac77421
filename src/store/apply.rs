//! Applying one domain event to a stored intent, in one transaction: load the facts, ask the
//! pure state machine, then persist the new state, the transition, the effects that live in
//! the store (dispatch attempt + outbox row, receipt) and the change event together.

use super::attempts::announce as announce_attempt;
use super::intents::{load_for_update, load_for_update_of};
use super::sql::{Conn, ConnExt, ToValue, Value, params};
use super::{Store, StoreError, events, to_i64};
use crate::domain::{
    AttemptId, Effect, Event, IntentFacts, IntentId, IntentState, ReceiptId, Transition, state,
};
use crate::wire::Intent;

/// Details the effects of an event need.
#[derive(Debug, Clone, Default)]
pub struct ApplyContext {
    pub now_ms: u64,
    /// The operator command behind this event, for the audit trail.
    pub command_seq: Option<i64>,
    /// Needed when the event may enqueue a dispatch.
    pub dispatch: Option<DispatchPlan>,
    /// Needed when the event records a receipt.
    pub receipt: Option<ReceiptSource>,
    /// Needed for `Authorized`.
    pub authorization: Option<Approval>,
    /// For `Cancel` asked by a principal (the owner or an operator): who asked. An internal
    /// cancel (a withdrawn retry of an intent whose cancellation is requested) has none.
    pub cancel_by: Option<String>,
}

/// An approval as `Authorized` records it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Approval {
    /// The approval's own version (the caller's reference to what was approved).
    pub version: String,
    /// The principal that approved.
    pub approver: String,
    /// When it lapses, if it does before the deadline.
    pub expires_at_ms: Option<u64>,
    /// The tenant's policy version it was given under.
    pub policy_version: Option<String>,
}

impl Approval {
    /// An approval with no expiry and no policy, for tests and benchmarks.
    pub fn by(approver: &str, version: &str) -> Self {
        Approval {
            version: version.to_string(),
            approver: approver.to_string(),
            ..Approval::default()
        }
    }
}

/// A dispatch to enqueue.
#[derive(Debug, Clone, PartialEq)]
pub struct DispatchPlan {
    pub attempt_id: AttemptId,
    /// When the dispatcher may send it (later than now for a planned retry).
    pub available_at_ms: u64,
}

/// Where a receipt came from.
#[derive(Debug, Clone, PartialEq)]
pub struct ReceiptSource {
    pub receipt_id: ReceiptId,
    pub downstream_id: String,
    /// `dispatch`, `lookup`, `webhook` or `operator`.
    pub source: &'static str,
    pub event_id: Option<String>,
}

/// The result of an applied event.
#[derive(Debug, Clone)]
pub struct Applied {
    pub transition: Transition,
    pub intent: Intent,
    pub attempt_id: Option<AttemptId>,
}

/// An intent as read by a write that decides from it, locked against other writers until
/// the write ends ([`Transitions::lock_intent`]). Only the store makes one, so an event
/// applied to it ([`Transitions::apply_locked`]) always meets the intent as it stands in the
/// same transaction.
#[derive(Debug, Clone)]
pub struct Locked {
    seq: i64,
    pub intent: Intent,
}

/// Moving an intent by a domain event, with the effects that live in the store.
pub trait Transitions {
    /// Apply `event` to the intent `id`. A refusal by the state machine changes nothing.
    fn apply(
        &mut self,
        id: &IntentId,
        event: &Event,
        ctx: &ApplyContext,
    ) -> Result<Applied, StoreError>;

    /// Read the intent `id` (without its arguments) for a write that decides from it: it
    /// stays locked until the write ends.
    fn lock_intent(&mut self, id: &IntentId) -> Result<Locked, StoreError>;

    /// [`Transitions::lock_intent`] for a caller that may see only `tenants` (every one when
    /// `None`): another tenant's intent is `NotFound` alike with none, and is neither
    /// locked nor waited for ([`load_for_update_of`]).
    fn lock_visible_intent(
        &mut self,
        id: &IntentId,
        tenants: Option<&[String]>,
    ) -> Result<Locked, StoreError>;

    /// [`Transitions::apply`] to an intent this write locked, without reading it again.
    fn apply_locked(
        &mut self,
        locked: &Locked,
        event: &Event,
        ctx: &ApplyContext,
    ) -> Result<Applied, StoreError>;

    /// Whether the locked intent was ever dispatched (a dispatch attempt exists).
    fn was_dispatched(&mut self, locked: &Locked) -> Result<bool, StoreError>;
}

impl Locked {
    /// The intent's row.
    pub(crate) fn seq(&self) -> i64 {
        self.seq
    }
}

impl Transitions for Store {
    fn apply(
        &mut self,
        id: &IntentId,
        event: &Event,
        ctx: &ApplyContext,
    ) -> Result<Applied, StoreError> {
        let tx = self.conn.savepoint()?;
        let applied = apply_in(&tx, id, event, ctx)?;
        tx.commit()?;
        Ok(applied)
    }

    fn lock_intent(&mut self, id: &IntentId) -> Result<Locked, StoreError> {
        let (seq, intent) = load_for_update(self.conn.as_conn(), id)?;
        Ok(Locked { seq, intent })
    }

    fn lock_visible_intent(
        &mut self,
        id: &IntentId,
        tenants: Option<&[String]>,
    ) -> Result<Locked, StoreError> {
        let (seq, intent) = load_for_update_of(self.conn.as_conn(), id, tenants)?;
        Ok(Locked { seq, intent })
    }

    fn apply_locked(
        &mut self,
        locked: &Locked,
        event: &Event,
        ctx: &ApplyContext,
    ) -> Result<Applied, StoreError> {
        let tx = self.conn.savepoint()?;
        let applied = apply_loaded(&tx, locked.seq, &locked.intent, event, ctx)?;
        tx.commit()?;
        Ok(applied)
    }

    fn was_dispatched(&mut self, locked: &Locked) -> Result<bool, StoreError> {
        self.conn.one(
            "SELECT EXISTS (SELECT 1 FROM attempts WHERE intent_seq = ?1 AND kind = 'dispatch')",
            params![locked.seq],
            |r| r.get(0),
        )
    }
}

/// The facts the state machine needs, read from a stored intent; `dispatch_in_flight` from
/// its outbox.
pub(crate) fn facts_of(intent: &Intent, now_ms: u64, dispatch_in_flight: bool) -> IntentFacts {
    IntentFacts {
        state: intent.state,
        paused: intent.paused,
        attempts_used: intent.attempts,
        max_attempts: intent.max_attempts,
        deadline_at_ms: intent.deadline_at_ms,
        now_ms,
        may_have_crossed_boundary: intent.may_have_crossed_boundary,
        authorization_valid: intent
            .authorization_expires_at_ms
            .is_none_or(|at| now_ms < at),
        dispatch_in_flight,
        cancel_requested: intent.cancel_requested_at_ms.is_some(),
    }
}

/// Whether a dispatcher holds a claimed send of the intent `seq`.
pub(crate) fn dispatch_in_flight(tx: &dyn Conn, seq: i64) -> Result<bool, StoreError> {
    tx.one(
        "SELECT EXISTS (SELECT 1 FROM outbox WHERE status = 'claimed' AND intent_seq = ?1)",
        params![seq],
        |r| r.get(0),
    )
}

/// [`dispatch_in_flight`] of the intent `id`.
pub(crate) fn dispatch_in_flight_of(tx: &dyn Conn, id: &IntentId) -> Result<bool, StoreError> {
    tx.one(
        "SELECT EXISTS (SELECT 1 FROM outbox o JOIN intents i ON i.seq = o.intent_seq \
         WHERE o.status = 'claimed' AND i.id = ?1)",
        params![id.as_str()],
        |r| r.get(0),
    )
}

pub(crate) fn apply_in(
    tx: &dyn Conn,
    id: &IntentId,
    event: &Event,
    ctx: &ApplyContext,
) -> Result<Applied, StoreError> {
    let (seq, intent) = load_for_update(tx, id)?;
    apply_loaded(tx, seq, &intent, event, ctx)
}

/// [`apply_in`] to the intent `seq` as this transaction already read it, locked.
pub(crate) fn apply_loaded(
    tx: &dyn Conn,
    seq: i64,
    intent: &Intent,
    event: &Event,
    ctx: &ApplyContext,
) -> Result<Applied, StoreError> {
    let id = &intent.id;
    // Only a cancellation or a close asks whether a send is on its way; other events skip
    // the read.
    let cancels = matches!(event, Event::Cancel { .. } | Event::OperatorClose { .. });
    let in_flight = cancels && dispatch_in_flight(tx, seq)?;
    let facts = facts_of(intent, ctx.now_ms, in_flight);
    let transition = state::apply(&facts, event)?;
    let now = to_i64(ctx.now_ms);
    let mut attempt_id = None;

    let reason = match event {
        Event::Refused { reason } | Event::Cancel { reason } => Some(reason.clone()),
        Event::OperatorClose { evidence, .. } => {
            evidence.note.clone().or_else(|| evidence.reference.clone())
        }
        _ => None,
    };

    // A cancellation that only records the request leaves the state, and why it is so, alone.
    let state_reason = if transition.from == transition.to {
        None
    } else {
        reason.clone()
    };
    // The intent as this write leaves it: each statement below changes its copy the same
    // way, so the answer and the change feed need no second read of the row.
    let mut after = intent.clone();
    after.state = transition.to;
    after.updated_at_ms = ctx.now_ms;
    if state_reason.is_some() {
        after.state_reason.clone_from(&state_reason);
    }
    after.indeterminate_since_ms = (transition.to == IntentState::Indeterminate)
        .then(|| after.indeterminate_since_ms.unwrap_or(ctx.now_ms));

    // What the event's effects change of the row joins the state's own change in one
    // `UPDATE`: each statement rewrites the whole row, and an index moves only when a
    // column it holds is set, so a column is set only when it may change.
    let mut update = RowUpdate::new(seq, transition.to.as_str(), now, state_reason.as_deref());
    let reason_now = "coalesce(?4, state_reason)";
    let authorization = match (event, &ctx.authorization) {
        (Event::Authorized, Some(a)) => Some(a),
        _ => None,
    };
    match authorization {
        // An approval clears the reason that waited for it.
        Some(_) => {
            let awaiting = update.bind(super::outbox::AWAITING_APPROVAL);
            update.set(format!(
                "state_reason = CASE WHEN {reason_now} = {awaiting} OR {reason_now} LIKE 'approval lapsed:%' \
                 THEN NULL ELSE {reason_now} END"
            ));
        }
        None => update.set(format!("state_reason = {reason_now}")),
    }
    if transition.to == IntentState::Indeterminate || intent.indeterminate_since_ms.is_some() {
        update.set(
            "indeterminate_since_ms = CASE WHEN ?2 = 'indeterminate' \
             THEN coalesce(indeterminate_since_ms, ?3) ELSE NULL END"
                .to_string(),
        );
    }
    if let Some(a) = authorization {
        let version = update.bind(a.version.as_str());
        let approver = update.bind(a.approver.as_str());
        let expires = update.bind(a.expires_at_ms.map(to_i64));
        let policy = update.bind(a.policy_version.clone());
        update.set(format!(
            "authorization_version = {version}, approver = {approver}, authorized_at_ms = ?3, \
             authorization_expires_at_ms = {expires}, policy_version = {policy}"
        ));
        after.authorization_version = Some(a.version.clone());
        after.approver = Some(a.approver.clone());
        after.authorized_at_ms = Some(ctx.now_ms);
        after.authorization_expires_at_ms = a.expires_at_ms;
        after.policy_version.clone_from(&a.policy_version);
        if after.state_reason.as_deref().is_some_and(|r| {
            r == super::outbox::AWAITING_APPROVAL || r.starts_with("approval lapsed:")
        }) {
            after.state_reason = None;
        }
    }
    let mut dispatch = None;
    let mut receipt = None;
    for effect in &transition.effects {
        match effect {
            Effect::EnqueueDispatch => {
                let plan = ctx.dispatch.as_ref().ok_or_else(|| {
                    StoreError::Conflict("a dispatch needs an attempt id".to_string())
                })?;
                update.set("attempts = attempts + 1".to_string());
                dispatch = Some(plan);
                attempt_id = Some(plan.attempt_id.clone());
                after.attempts += 1;
                if !after.providers.contains(&intent.connector) {
                    after.providers.push(intent.connector.clone());
                    after.providers.sort();
                }
            }
            Effect::RecordReceipt { receipt_ref } => {
                let source = ctx.receipt.clone().unwrap_or_else(|| ReceiptSource {
                    receipt_id: ReceiptId::generate(
                        ctx.now_ms,
                        u128::from(ctx.now_ms) ^ seq as u128,
                    ),
                    downstream_id: receipt_ref.clone(),
                    source: "operator",
                    event_id: None,
                });
                let id = update.bind(source.receipt_id.to_string());
                let downstream = update.bind(source.downstream_id.clone());
                update.set(format!(
                    "receipt_id = {id}, downstream_ref = {downstream}, committed_at_ms = ?3"
                ));
                after.receipt_id = Some(source.receipt_id.to_string());
                after.downstream_ref = Some(source.downstream_id.clone());
                after.committed_at_ms = Some(ctx.now_ms);
                receipt = Some(source);
            }
            Effect::ScheduleLookup | Effect::SurfaceReason { .. } => {}
        }
    }
    update.run(tx)?;
    if let (Event::Cancel { reason }, Some(by)) = (event, &ctx.cancel_by) {
        // The first request stands: who asked and why.
        tx.run_held(
            "UPDATE intents SET cancel_requested_at_ms = coalesce(cancel_requested_at_ms, ?2), \
             cancel_requested_by = coalesce(cancel_requested_by, ?3), \
             cancel_reason = coalesce(cancel_reason, ?4) WHERE seq = ?1",
            params![seq, now, by, reason],
        )?;
        after.cancel_requested_at_ms = after.cancel_requested_at_ms.or(Some(ctx.now_ms));
        after.cancel_requested_by = after.cancel_requested_by.or_else(|| Some(by.clone()));
        after.cancel_reason = after.cancel_reason.or_else(|| Some(reason.clone()));
    }
    if let Some(plan) = dispatch {
        enqueue_dispatch(tx, seq, intent, plan, now)?;
    }
    if let Some(source) = &receipt {
        super::receipts::insert(tx, seq, intent, source, true, ctx.now_ms)?;
    }

    if transition.to.is_terminal() {
        let why = format!(
            "not sent: withdrawn when the intent became {}",
            transition.to
        );
        let refunded = withdraw_pending(tx, seq, intent, &why, ctx.now_ms)?;
        after.attempts = after.attempts.saturating_sub(refunded);
    } else if matches!(event, Event::Cancel { .. }) {
        // Cancellation is requested: a planned send is not made.
        let why = "not sent: withdrawn when cancellation was requested";
        let refunded = withdraw_pending(tx, seq, intent, why, ctx.now_ms)?;
        after.attempts = after.attempts.saturating_sub(refunded);
    }

    tx.run_held(
        "INSERT INTO transitions (intent_seq, from_state, to_state, event, reason, command_seq, at_ms) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![seq, transition.from.as_str(), transition.to.as_str(), event.name(), reason, ctx.command_seq, now],
    )?;
    events::append_ref(tx, "intent", &intent.tenant, id, "", ctx.now_ms)?;
    // Every test runs this check: a statement above that changes the row without changing
    // the copy the same way fails it.
    #[cfg(debug_assertions)]
    {
        let (_, stored) = super::intents::load(tx, id)?;
        debug_assert_eq!(after, stored, "the intent as applied differs from its row");
    }
    Ok(Applied {
        transition,
        intent: after,
        attempt_id,
    })
}

/// An intent that reached a final state sends nothing more: its planned sends are withdrawn
/// in the same transaction, their attempts ended as abandoned and never sent. Returns how
/// many attempts were given back to the intent's budget.
pub(crate) fn withdraw_pending(
    tx: &dyn Conn,
    seq: i64,
    intent: &Intent,
    why: &str,
    now_ms: u64,
) -> Result<u32, StoreError> {
    // Read first, then withdraw each send that is still planned: most intents reach a final
    // state with nothing planned, and an `UPDATE … RETURNING` would build a temporary b-tree
    // for them all the same. The update's own condition decides a race with a claim.
    let planned: Vec<(i64, String)> = tx.rows(
        "SELECT o.seq, a.id FROM outbox o JOIN attempts a ON a.seq = o.attempt_seq \
         WHERE o.intent_seq = ?1 AND o.status = 'pending'",
        params![seq],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    let mut count = 0u32;
    for (outbox_seq, attempt) in planned {
        let withdrawn = tx.run(
            "UPDATE outbox SET status = 'withdrawn', done_at_ms = ?2 WHERE seq = ?1 AND status = 'pending'",
            params![outbox_seq, to_i64(now_ms)],
        )?;
        if withdrawn == 0 {
            continue;
        }
        count = count.saturating_add(1);
        let attempt: AttemptId = attempt.parse()?;
        tx.run_held(
            "UPDATE attempts SET outcome = 'abandoned', sent = 0, ended_at_ms = ?2, detail = ?3 \
             WHERE id = ?1",
            params![attempt.as_str(), to_i64(now_ms), why],
        )?;
        announce_attempt(tx, intent, &attempt, now_ms)?;
        super::outbox::refund_attempt(tx, &intent.id)?;
    }
    Ok(count)
}

/// One `UPDATE` of an intent's row, built from the parts an event changes: `?1` is the row,
/// `?2` the new state, `?3` the time, `?4` the reason given (or none); a part's other values
/// are bound after them, numbered in order.
struct RowUpdate {
    sets: Vec<String>,
    values: Vec<Value>,
}

impl RowUpdate {
    fn new(seq: i64, state: &str, now: i64, reason: Option<&str>) -> Self {
        RowUpdate {
            sets: vec!["state = ?2".to_string(), "updated_at_ms = ?3".to_string()],
            values: vec![seq.into(), state.into(), now.into(), reason.into()],
        }
    }

    /// Bind a value; its placeholder.
    fn bind(&mut self, value: impl Into<Value>) -> String {
        self.values.push(value.into());
        format!("?{}", self.values.len())
    }

    fn set(&mut self, assignment: String) {
        self.sets.push(assignment);
    }

    fn run(&self, tx: &dyn Conn) -> Result<(), StoreError> {
        let sql = format!("UPDATE intents SET {} WHERE seq = ?1", self.sets.join(", "));
        let values: Vec<&dyn ToValue> = self.values.iter().map(|v| v as &dyn ToValue).collect();
        tx.run_held(&sql, &values)?;
        Ok(())
    }
}

fn enqueue_dispatch(
    tx: &dyn Conn,
    seq: i64,
    intent: &Intent,
    plan: &DispatchPlan,
    now: i64,
) -> Result<(), StoreError> {
    let attempt_seq: i64 = tx.insert_seq(
        "INSERT INTO attempts (id, intent_seq, tenant, kind, provider, release_id, outcome, presented_key, started_at_ms) \
         VALUES (?1, ?2, ?3, 'dispatch', ?4, ?5, 'pending', ?6, ?7)",
        params![
            plan.attempt_id.as_str(),
            seq,
            intent.tenant.as_str(),
            intent.connector,
            intent.release_id,
            intent.action_key.as_str(),
            now
        ],
    )?;
    tx.run_held(
        "INSERT INTO intent_providers (provider, intent_seq) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
        params![intent.connector, seq],
    )?;
    // The send's payload is the canonical arguments. Where those are kept apart (and an
    // outbox row is written again at its claim and at its end), the row leaves it empty and
    // its claim reads them (`outbox::claim_row`).
    let payload = if tx.dialect().payload_apart() {
        "''"
    } else {
        "i.canonical_json"
    };
    tx.run_held(
        &format!(
            "INSERT INTO outbox (intent_seq, attempt_seq, action_key, connector, operation, payload_json, status, \
             available_at_ms, created_at_ms) \
             SELECT ?1, ?2, i.action_key, i.connector, i.operation, {payload}, 'pending', ?3, ?4 FROM intents i WHERE i.seq = ?1"
        ),
        params![seq, attempt_seq, to_i64(plan.available_at_ms), now],
    )?;
    Ok(())
}
