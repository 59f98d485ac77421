//! The dispatcher's decisions: what a claimed send's answer means ([`interpret`]), what to
//! do about it given the intent as it stands ([`decide`], pure), and carrying that out in
//! the store under the claim's fencing token ([`record`]).
//!
//! It retries only what the decision table allows, with the same key, inside budget and
//! deadline, honouring `Retry-After`; an outcome it cannot prove makes the intent
//! indeterminate; a claim found reclaimed is recorded as possibly sent, never resent.

use super::call::Call;
use crate::clock::Entropy;
use crate::coordinator::config::Config;
use crate::domain::decision::{
    BareOverload, ErrorClass, NextMove, Observation, classify_with, next_move,
};
use crate::domain::retry::{BudgetView, GiveUpReason, RetryPolicy, SplitMix64};
use crate::domain::{
    ActionKey, AttemptId, AttemptOutcome, Event, IntentId, IntentState, ReceiptId, Refusal,
};
use crate::store::ops::*;
use crate::store::{
    ApplyContext, AttemptFinish, Claim, ClaimedRow, DispatchPlan, HELD_BY_ANOTHER, ReceiptSource,
    SendTerms, Store, StoreError,
};
use crate::wire::Intent;

/// The terms of a send of `operation` by `connector` (its key contract and resource), as
/// the claim's gate needs them and the attempt keeps them.
pub fn contract_of(config: &Config, connector: &str, operation: &str) -> Result<SendTerms, String> {
    let c = config
        .connector(connector)
        .ok_or_else(|| format!("connector `{connector}` is not configured"))?;
    let Some(resource) = c.operations.get(operation) else {
        return Err(format!(
            "connector `{connector}` has no resource for `{operation}`"
        ));
    };
    Ok(SendTerms {
        key: c.key_contract(),
        resource: resource.clone(),
    })
}

/// Claim up to `limit` due sends for `worker` at `now`, each put to the send gate with its
/// connector's key contract, under a lease of the configured length.
pub fn claim(
    s: &mut Store,
    config: &Config,
    worker: &str,
    now: u64,
    limit: u32,
) -> Result<Claim, StoreError> {
    let contract = |c: &str, o: &str| contract_of(config, c, o);
    s.claim_outbox(worker, now, config.dispatch_lease_ms, limit, &contract)
}

/// Claim for `worker`, in the write that planned it, the send a dispatch of `intent` (as
/// that write left it) just planned: the same gate and lease as [`claim`], one write and
/// one hand-off fewer before it leaves.
pub fn claim_planned(
    s: &mut Store,
    config: &Config,
    worker: &str,
    now: u64,
    intent: &Intent,
) -> Result<Claim, StoreError> {
    let contract = |c: &str, o: &str| contract_of(config, c, o);
    s.claim_planned(intent, worker, now, config.dispatch_lease_ms, &contract)
}

/// Whether a send of `row` begun at `now` ends inside its lease whatever the downstream
/// does. One that might not is not begun: a claimant that took the row over could act
/// while the request is still on its way.
pub fn may_begin(row: &ClaimedRow, now: u64, timeout_ms: u64) -> bool {
    now.saturating_add(timeout_ms) < row.lease_expires_at_ms
}

/// What a send's answer says, before the intent is looked at.
#[derive(Debug, Clone, PartialEq)]
pub enum SendResult {
    /// The downstream created (or replayed) the record: this is its id. `keyed` when the
    /// answer named the action key as the record's `external_ref`.
    Receipt {
        downstream_id: String,
        keyed: bool,
        finish: AttemptFinish,
    },
    /// The request may have been applied and nothing proves it either way.
    Unknown { finish: AttemptFinish },
    /// A failure the decision table classifies, with the connector's word on bare overload
    /// answers.
    Failed {
        finish: AttemptFinish,
        observation: Observation,
        bare_overload: BareOverload,
    },
}

impl SendResult {
    /// The downstream id, when the answer carried one.
    pub fn downstream_id(&self) -> Option<&str> {
        match self {
            SendResult::Receipt { downstream_id, .. } => Some(downstream_id),
            _ => None,
        }
    }

    /// The downstream id of an answer that named no key: the one receipt that another
    /// intent's receipt can prove to be someone else's record.
    pub fn unkeyed_receipt(&self) -> Option<&str> {
        match self {
            SendResult::Receipt {
                downstream_id,
                keyed: false,
                ..
            } => Some(downstream_id),
            _ => None,
        }
    }

    /// This result once its record is found to be another intent's receipt already (the
    /// store's `Receipts::held_by_another`): the send was answered, and what it made is
    /// unproven. Nothing of the record is kept.
    pub fn held_by_another(self) -> SendResult {
        match self {
            SendResult::Receipt { finish, .. } => SendResult::Unknown {
                finish: AttemptFinish {
                    outcome: Some(AttemptOutcome::Lost),
                    sent: Some(true),
                    error_class: Some(ErrorClass::Indeterminate.as_str().to_string()),
                    detail: Some(HELD_BY_ANOTHER.to_string()),
                    provider_request_id: None,
                    ..finish
                },
            },
            other => other,
        }
    }
}

/// What a claim that was taken over means: the earlier claimant may have sent it.
pub fn reclaimed() -> SendResult {
    SendResult::Unknown {
        finish: AttemptFinish {
            outcome: Some(AttemptOutcome::Lost),
            sent: Some(true),
            error_class: Some(ErrorClass::Indeterminate.as_str().to_string()),
            detail: Some("the dispatcher stopped before recording the outcome".to_string()),
            ..AttemptFinish::default()
        },
    }
}

/// Read the result of a create call made under `key`.
pub fn interpret(call: &Call, key: &ActionKey, bare_overload: BareOverload) -> SendResult {
    match call {
        Call::Replied(reply) if reply.is_success() => {
            let unproven = |detail: String| SendResult::Unknown {
                finish: AttemptFinish {
                    outcome: Some(AttemptOutcome::Lost),
                    http_status: Some(reply.status),
                    sent: Some(true),
                    error_class: Some(ErrorClass::Indeterminate.as_str().to_string()),
                    detail: Some(detail),
                    ..AttemptFinish::default()
                },
            };
            match (reply.names_other_key(key), reply.downstream_id()) {
                (true, _) => {
                    unproven("a success answer about another action key's record".to_string())
                }
                (false, Some(downstream_id)) => SendResult::Receipt {
                    keyed: reply.names_key(key),
                    finish: AttemptFinish {
                        outcome: Some(AttemptOutcome::Succeeded),
                        http_status: Some(reply.status),
                        replayed: Some(reply.replayed()),
                        sent: Some(true),
                        provider_request_id: Some(downstream_id.clone()),
                        ..AttemptFinish::default()
                    },
                    downstream_id,
                },
                (false, None) => unproven("a success answer without a downstream id".to_string()),
            }
        }
        Call::Replied(reply) => SendResult::Failed {
            finish: AttemptFinish {
                http_status: Some(reply.status),
                retry_after_ms: reply.retry_after_ms,
                detail: reply.error_message(),
                ..AttemptFinish::default()
            },
            observation: reply.observation(),
            bare_overload,
        },
        Call::Failed {
            observation,
            detail,
        } => SendResult::Failed {
            finish: AttemptFinish {
                detail: Some(detail.clone()),
                ..AttemptFinish::default()
            },
            observation: *observation,
            bare_overload,
        },
    }
}

/// What the store is to do after a send.
#[derive(Debug, Clone, PartialEq)]
pub struct SendEffects {
    /// How the attempt ended.
    pub finish: AttemptFinish,
    /// The receipt the answer proved.
    pub receipt: Option<ReceiptSource>,
    /// The event for the intent, and the retry it plans.
    pub event: Option<(Event, Option<DispatchPlan>)>,
}

/// Decide what a send's result means for `intent` at `now`; ids and jitter come from `ids`.
pub fn decide(
    intent: &Intent,
    result: SendResult,
    now: u64,
    ids: &dyn Entropy,
    policy: &RetryPolicy,
) -> SendEffects {
    let (mut finish, observation, bare_overload) = match result {
        SendResult::Receipt {
            downstream_id,
            finish,
            ..
        } => {
            return SendEffects {
                finish,
                receipt: Some(ReceiptSource {
                    receipt_id: ReceiptId::generate(now, ids.next_u128()),
                    downstream_id,
                    source: "dispatch",
                    event_id: None,
                }),
                event: None,
            };
        }
        SendResult::Unknown { finish } => {
            return SendEffects {
                finish,
                receipt: None,
                event: Some((Event::OutcomeUnknown, None)),
            };
        }
        SendResult::Failed {
            finish,
            observation,
            bare_overload,
        } => (finish, observation, bare_overload),
    };
    let class = classify_with(&observation, intent.consequence, bare_overload)
        .unwrap_or(ErrorClass::Indeterminate);
    let not_sent = matches!(
        class,
        ErrorClass::PreDispatch
            | ErrorClass::Overloaded { .. }
            | ErrorClass::Permanent
            | ErrorClass::PolicyStop
    );
    finish.sent = Some(!not_sent);
    finish.error_class = Some(class.as_str().to_string());
    finish.outcome = Some(match (class, observation) {
        (ErrorClass::Indeterminate, Observation::TimeoutAfterSend) => AttemptOutcome::TimedOut,
        (ErrorClass::Indeterminate, Observation::ConnectionLostAfterSend) => AttemptOutcome::Lost,
        _ => AttemptOutcome::Failed,
    });
    let budget = BudgetView {
        attempts_used: intent.attempts,
        max_attempts: intent.max_attempts,
        now_ms: now,
        deadline_at_ms: intent.deadline_at_ms,
        paused: intent.paused,
    };
    let mut jitter = SplitMix64::new(ids.next_u64());
    let event = match next_move(class, intent.consequence, &budget, policy, &mut jitter) {
        NextMove::Stop { reason } => Some((
            Event::Refused {
                reason: reason.to_string(),
            },
            None,
        )),
        NextMove::RouteToReview => Some((
            Event::Refused {
                reason: format!("stopped for review: the downstream answered {class}"),
            },
            None,
        )),
        NextMove::Reconcile => Some((Event::OutcomeUnknown, None)),
        NextMove::Retry { delay_ms } | NextMove::Failover { delay_ms } => Some((
            Event::Dispatch,
            Some(DispatchPlan {
                attempt_id: AttemptId::generate(now, ids.next_u128()),
                available_at_ms: now + delay_ms,
            }),
        )),
        // A pause holds the retry: the intent stays executing and the sweep re-plans it
        // after resume.
        NextMove::GiveUp {
            why: GiveUpReason::Paused,
        } => None,
        NextMove::GiveUp { why } => Some((
            Event::Refused {
                reason: why.to_string(),
            },
            None,
        )),
    };
    SendEffects {
        finish,
        receipt: None,
        event,
    }
}

/// What the dispatcher is to do next after recording a send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Follow {
    Nothing,
    /// The intent became indeterminate: wake the reconciler.
    Reconcile,
    /// A retry was planned: wake the dispatcher.
    Dispatch,
}

/// Record a send's result for the claim `row`, in one transaction: first under the claim's
/// fencing token (a claimant whose claim was taken over writes nothing at all: `Fenced`),
/// then the decision for the intent as it stands in this transaction.
pub fn record(
    s: &mut Store,
    row: &ClaimedRow,
    result: SendResult,
    now: u64,
    ids: &dyn Entropy,
) -> Result<Follow, StoreError> {
    s.finish_claim(row.outbox_seq, row.fence, now)?;
    // The intent is read once: each step below keeps what it changes of it.
    let mut locked = s.lock_intent(&row.intent_id)?;
    let result = match result.unkeyed_receipt() {
        Some(downstream_id) if s.held_by_another_than(&locked, downstream_id, now)? => {
            result.held_by_another()
        }
        _ => result,
    };
    let effects = decide(&locked.intent, result, now, ids, &RetryPolicy::default());
    s.finish_locked_attempt(&mut locked, &row.attempt_id, &effects.finish, now)?;
    if let Some(receipt) = &effects.receipt {
        // A receipt is the whole outcome: `decide` plans no event beside it.
        s.observe_locked_receipt(&locked, receipt, now)?;
        return Ok(Follow::Nothing);
    }
    let Some((event, plan)) = effects.event else {
        return Ok(Follow::Nothing);
    };
    let ctx = ApplyContext {
        now_ms: now,
        dispatch: plan,
        ..ApplyContext::default()
    };
    match s.apply_locked(&locked, &event, &ctx) {
        Ok(applied) => Ok(match applied.transition.to {
            IntentState::Indeterminate => Follow::Reconcile,
            IntentState::Executing if applied.attempt_id.is_some() => Follow::Dispatch,
            _ => Follow::Nothing,
        }),
        // Paused, or the intent moved on meanwhile (a webhook committed it): nothing to do.
        Err(StoreError::Refused(Refusal::Paused | Refusal::Terminal { .. })) => Ok(Follow::Nothing),
        // Its cancellation is requested: the retry is not sent, and the cancel settles as
        // far as what crossed allows.
        Err(StoreError::Refused(Refusal::CancellationRequested)) => {
            settle_cancel(s, &row.intent_id, now)
        }
        Err(StoreError::Refused(refusal)) if matches!(event, Event::Dispatch) => {
            let reason = format!("no retry: {refusal}");
            let ctx = ApplyContext {
                now_ms: now,
                ..ApplyContext::default()
            };
            match s.apply(&row.intent_id, &Event::Refused { reason }, &ctx) {
                Ok(applied) if applied.transition.to == IntentState::Indeterminate => {
                    Ok(Follow::Reconcile)
                }
                Ok(_) | Err(StoreError::Refused(_)) => Ok(Follow::Nothing),
                Err(e) => Err(e),
            }
        }
        Err(StoreError::Refused(_)) => Ok(Follow::Nothing),
        Err(e) => Err(e),
    }
}

/// Settle a requested cancellation once no retry is to be sent: `cancelled` when nothing may
/// have crossed, otherwise indeterminate until a lookup says what happened.
pub fn settle_cancel(s: &mut Store, id: &IntentId, now: u64) -> Result<Follow, StoreError> {
    let ctx = ApplyContext {
        now_ms: now,
        ..ApplyContext::default()
    };
    let event = Event::Cancel {
        reason: "cancellation requested: no retry is sent".to_string(),
    };
    match s.apply(id, &event, &ctx) {
        Ok(applied) if applied.transition.to == IntentState::Indeterminate => Ok(Follow::Reconcile),
        Ok(_) | Err(StoreError::Refused(_)) => Ok(Follow::Nothing),
        Err(e) => Err(e),
    }
}

/// Before a claimed send leaves: when its intent's cancellation was requested after the
/// claim, withdraw it instead (see [`crate::store::ops::Outbox::withdraw_claim`]). `None`
/// when the send may go.
pub fn withdraw_if_cancelled(
    s: &mut Store,
    row: &ClaimedRow,
    now: u64,
) -> Result<Option<Follow>, StoreError> {
    if !s.cancel_requested(&row.intent_id)? {
        return Ok(None);
    }
    let indeterminate = s.withdraw_claim(row.outbox_seq, row.fence, now)?;
    Ok(Some(if indeterminate {
        Follow::Reconcile
    } else {
        Follow::Nothing
    }))
}

/// A fenced claimant's receipt, observed all the same: the downstream's answer is evidence
/// whoever holds the claim; only the attempt's record is the new claimant's. An answer that
/// named no key and whose record another intent holds proves nothing, and is left.
pub fn observe_fenced_receipt(
    s: &mut Store,
    row: &ClaimedRow,
    result: &SendResult,
    now: u64,
    ids: &dyn Entropy,
) -> Result<(), StoreError> {
    let Some(downstream_id) = result.downstream_id() else {
        return Ok(());
    };
    if let Some(unkeyed) = result.unkeyed_receipt()
        && s.held_by_another(&row.intent_id, unkeyed, now)?
    {
        return Ok(());
    }
    let source = ReceiptSource {
        receipt_id: ReceiptId::generate(now, ids.next_u128()),
        downstream_id: downstream_id.to_string(),
        source: "dispatch",
        event_id: None,
    };
    s.observe_receipt(&row.intent_id, &source, now).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::SeededEntropy;
    use crate::coordinator::core::call::Reply;
    use crate::domain::Tenant;

    const NOW: u64 = 1_800_000_000_000;

    fn intent(attempts: u32, max_attempts: u32) -> Intent {
        let id = IntentId::generate(NOW - 1_000, 7);
        let tenant: Tenant = "acme".parse().expect("a valid tenant");
        let key = crate::domain::ActionKey::new("create_purchase_order", &tenant, &id);
        serde_json::from_value(serde_json::json!({
            "id": id, "tenant": tenant, "operation": "create_purchase_order",
            "consequence": "write", "action_key": key, "state": "executing",
            "attempts": attempts, "max_attempts": max_attempts,
            "created_at_ms": NOW - 1_000, "deadline_at_ms": NOW + 600_000,
        }))
        .expect("a valid intent")
    }

    fn reply(status: u16, retry_after_ms: Option<u64>, body: serde_json::Value) -> Call {
        Call::Replied(Reply {
            status,
            retry_after_ms,
            body,
        })
    }

    fn decide_call(intent: &Intent, call: &Call) -> SendEffects {
        let result = interpret(call, &intent.action_key, BareOverload::Unproven);
        decide(
            intent,
            result,
            NOW,
            &SeededEntropy::new(1),
            &RetryPolicy::default(),
        )
    }

    #[test]
    fn a_created_record_is_a_receipt_and_no_event() {
        let effects = decide_call(
            &intent(1, 4),
            &reply(201, None, serde_json::json!({"id": "po-1"})),
        );
        assert_eq!(
            effects.receipt.map(|r| r.downstream_id),
            Some("po-1".into())
        );
        assert_eq!(effects.event, None);
        assert_eq!(effects.finish.outcome, Some(AttemptOutcome::Succeeded));
        assert_eq!(effects.finish.replayed, Some(false));
    }

    /// A create answered 303 (or any status that is no answer) reached the downstream, which
    /// may have created the record before it answered "see there": the attempt was sent, and
    /// the intent is unproven and looked up, never rejected as if nothing had been applied.
    #[test]
    fn a_create_answered_see_other_is_sent_and_unproven() {
        for status in [302, 303, 307, 101, 700] {
            let effects = decide_call(
                &intent(1, 4),
                &reply(status, None, serde_json::json!({"id": "po-1"})),
            );
            assert!(effects.receipt.is_none(), "{status}");
            assert_eq!(
                effects.event,
                Some((Event::OutcomeUnknown, None)),
                "{status}"
            );
            assert_eq!(effects.finish.sent, Some(true), "{status}");
            assert_eq!(
                effects.finish.error_class.as_deref(),
                Some("indeterminate"),
                "{status}"
            );
        }
    }

    /// A success naming another action key as its record's `external_ref` (a downstream
    /// that answered from the wrong record, or lied) is no receipt for this intent; one
    /// naming this intent's key, or none, is.
    #[test]
    fn a_success_about_another_keys_record_proves_nothing() {
        let mine = intent(1, 4);
        let globex: Tenant = "globex".parse().expect("a valid tenant");
        let other = ActionKey::new(
            "create_purchase_order",
            &globex,
            &IntentId::generate(NOW, 8),
        );
        assert_ne!(mine.action_key, other);
        let about = |key: &str| serde_json::json!({"id": "po-1", "external_ref": key});
        let effects = decide_call(&mine, &reply(201, None, about(other.as_str())));
        assert!(effects.receipt.is_none());
        assert_eq!(effects.event, Some((Event::OutcomeUnknown, None)));
        let detail = effects.finish.detail.expect("a detail");
        assert!(detail.contains("another action key"), "{detail}");
        assert!(!detail.contains(other.as_str()), "{detail}");
        let effects = decide_call(
            &mine,
            &reply(
                201,
                None,
                serde_json::json!({"id": "po-1", "external_ref": 7}),
            ),
        );
        assert!(
            effects.receipt.is_none(),
            "a key that is not text is not this one"
        );
        let effects = decide_call(&mine, &reply(201, None, about(mine.action_key.as_str())));
        assert_eq!(
            effects.receipt.map(|r| r.downstream_id),
            Some("po-1".into())
        );
    }

    #[test]
    fn a_success_without_an_id_proves_nothing() {
        let effects = decide_call(&intent(1, 4), &reply(200, None, serde_json::json!({})));
        assert!(effects.receipt.is_none());
        assert_eq!(effects.event, Some((Event::OutcomeUnknown, None)));
        assert_eq!(effects.finish.sent, Some(true));
    }

    #[test]
    fn an_explicit_refusal_is_retried_no_sooner_than_it_asked() {
        let effects = decide_call(
            &intent(1, 4),
            &reply(503, Some(2_000), serde_json::json!({})),
        );
        let Some((Event::Dispatch, Some(plan))) = effects.event else {
            panic!("expected a planned retry, got {:?}", effects.event);
        };
        assert!(plan.available_at_ms >= NOW + 2_000, "{plan:?}");
        assert_eq!(effects.finish.sent, Some(false));
    }

    #[test]
    fn an_explicit_refusal_with_no_budget_left_stops_the_intent() {
        let effects = decide_call(
            &intent(4, 4),
            &reply(503, Some(2_000), serde_json::json!({})),
        );
        assert!(
            matches!(effects.event, Some((Event::Refused { .. }, None))),
            "{:?}",
            effects.event
        );
    }

    #[test]
    fn a_bare_overload_answer_to_a_write_is_indeterminate_unless_the_connector_vouches() {
        let call = reply(503, None, serde_json::Value::Null);
        let effects = decide_call(&intent(1, 4), &call);
        assert_eq!(effects.event, Some((Event::OutcomeUnknown, None)));
        let vouched = decide(
            &intent(1, 4),
            interpret(&call, &intent(1, 4).action_key, BareOverload::NotApplied),
            NOW,
            &SeededEntropy::new(1),
            &RetryPolicy::default(),
        );
        assert!(matches!(vouched.event, Some((Event::Dispatch, Some(_)))));
    }

    #[test]
    fn a_timeout_after_send_is_indeterminate_never_failed() {
        let call = Call::Failed {
            observation: Observation::TimeoutAfterSend,
            detail: "no answer".into(),
        };
        let effects = decide_call(&intent(1, 4), &call);
        assert_eq!(effects.event, Some((Event::OutcomeUnknown, None)));
        assert_eq!(effects.finish.outcome, Some(AttemptOutcome::TimedOut));
        assert_eq!(effects.finish.sent, Some(true));
    }

    #[test]
    fn a_failed_connect_is_retried_as_never_sent() {
        let call = Call::Failed {
            observation: Observation::ConnectFailed,
            detail: "refused".into(),
        };
        let effects = decide_call(&intent(1, 4), &call);
        assert!(matches!(effects.event, Some((Event::Dispatch, Some(_)))));
        assert_eq!(effects.finish.sent, Some(false));
    }

    #[test]
    fn a_taken_over_claim_is_recorded_as_possibly_sent() {
        let effects = decide(
            &intent(1, 4),
            reclaimed(),
            NOW,
            &SeededEntropy::new(1),
            &RetryPolicy::default(),
        );
        assert_eq!(effects.event, Some((Event::OutcomeUnknown, None)));
        assert_eq!(effects.finish.sent, Some(true));
    }

    #[test]
    fn a_send_that_could_outlive_its_lease_is_not_begun() {
        let row = ClaimedRow {
            lease_expires_at_ms: NOW + 10_000,
            ..claimed_row()
        };
        assert!(may_begin(&row, NOW, 9_999));
        assert!(!may_begin(&row, NOW, 10_000));
    }

    fn claimed_row() -> ClaimedRow {
        let i = intent(1, 4);
        ClaimedRow {
            outbox_seq: 1,
            intent_id: i.id.clone(),
            tenant: i.tenant.clone(),
            attempt_id: AttemptId::generate(NOW, 3),
            action_key: i.action_key.clone(),
            operation: i.operation.clone(),
            connector: "erp".into(),
            payload_json: "{}".into(),
            resource: Some("purchase-orders".into()),
            reclaimed: false,
            deadline_at_ms: i.deadline_at_ms,
            fence: 1,
            lease_expires_at_ms: NOW,
            first_dispatch_at_ms: NOW,
            key_retention_secs: Some(86_400),
        }
    }
}
