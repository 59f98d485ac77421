//! The dispatcher: claims outbox rows, sends the frozen command with the action key, and
//! decides the next move from the domain's decision table. It retries only what the table
//! allows, with the same key, inside budget and deadline, honouring `Retry-After`; an
//! outcome it cannot prove makes the intent indeterminate. A row claimed by a dispatcher
//! that died is never resent: its outcome is reconciled by lookup.
//!
//! It claims only as many rows as it has free send slots, so a claim never waits out its
//! lease in a queue; the claim's transaction puts each send to the send gate
//! (`crate::domain::send`); a send begins only if it can end inside its lease; and its
//! outcome is recorded only under the claim's fencing token, so a claimant whose claim was
//! taken over records nothing.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;

use super::AppState;
use super::config::Config;
use super::connector::{self, Call};
use crate::clock::Entropy;
use crate::domain::decision::{
    BareOverload, ErrorClass, NextMove, Observation, classify_with, next_move,
};
use crate::domain::retry::{BudgetView, GiveUpReason, RetryPolicy, SplitMix64};
use crate::domain::{
    AttemptId, AttemptOutcome, Event, IntentState, KeyContract, ReceiptId, Refusal,
};
use crate::store::ops::*;
use crate::store::{
    ApplyContext, AttemptFinish, ClaimedRow, DispatchPlan, ReceiptSource, Store, StoreError,
};

/// Rows claimed per round trip to the store, at most.
const CLAIM_BATCH: u32 = 64;
/// The longest the dispatcher sleeps without looking at the outbox.
const IDLE_POLL: Duration = Duration::from_millis(500);

/// The key contract of `connector` for a send of `operation`, as the claim's gate needs it.
fn contract_of(config: &Config, connector: &str, operation: &str) -> Result<KeyContract, String> {
    let c = config
        .connector(connector)
        .ok_or_else(|| format!("connector `{connector}` is not configured"))?;
    if !c.operations.contains_key(operation) {
        return Err(format!(
            "connector `{connector}` has no resource for `{operation}`"
        ));
    }
    Ok(c.key_contract())
}

/// Run until the coordinator stops; in-flight dispatches finish first.
pub async fn run(state: AppState) {
    let permits = state.config.dispatch_concurrency;
    let semaphore = Arc::new(Semaphore::new(permits));
    let mut stopping = state.stopping.clone();
    loop {
        if *stopping.borrow() {
            break;
        }
        // Claim only what can be sent at once: a claimed row never waits for a slot.
        let free = semaphore.available_permits().min(CLAIM_BATCH as usize) as u32;
        if free == 0 {
            tokio::select! {
                permit = semaphore.clone().acquire_owned() => drop(permit),
                _ = stopping.changed() => {}
            }
            continue;
        }
        let worker = state.worker.clone();
        let lease = state.config.dispatch_lease_ms;
        let config = state.config.clone();
        // The claim's time is read when the writer runs it, not when it was queued.
        let clock = state.clock.clone();
        let claimed = state
            .db
            .write(move |s| {
                let contract = |c: &str, o: &str| contract_of(&config, c, o);
                s.claim_outbox(&worker, clock.now_ms(), lease, free, &contract)
            })
            .await;
        match claimed {
            Ok(claim) if !claim.rows.is_empty() || !claim.held.is_empty() => {
                for held in &claim.held {
                    tracing::info!(intent = %held.intent_id, why = %held.why, "dispatch not sent");
                }
                if claim.held.iter().any(|h| h.indeterminate) {
                    state.reconcile_wake.notify_one();
                }
                if !claim.held.is_empty() {
                    state.events_wake.notify_waiters();
                }
                for row in claim.rows {
                    let Ok(permit) = semaphore.clone().acquire_owned().await else {
                        break;
                    };
                    let state = state.clone();
                    tokio::spawn(async move {
                        handle(&state, row).await;
                        drop(permit);
                    });
                }
                continue;
            }
            Ok(_) => {}
            Err(e) => tracing::error!(error = %e, "claiming dispatches failed"),
        }
        let next_due = state
            .db
            .read(|s| s.next_outbox_due_ms())
            .await
            .ok()
            .flatten();
        let wait = next_due.map_or(IDLE_POLL, |due| {
            Duration::from_millis(due.saturating_sub(state.clock.now_ms())).min(IDLE_POLL)
        });
        tokio::select! {
            _ = state.dispatch_wake.notified() => {}
            _ = tokio::time::sleep(wait) => {}
            _ = stopping.changed() => {}
        }
    }
    let _ = semaphore.acquire_many(permits as u32).await;
}

/// Send one claimed dispatch and record what followed.
async fn handle(state: &AppState, row: ClaimedRow) {
    let span = tracing::info_span!("dispatch", intent = %row.intent_id, attempt = %row.attempt_id, action_key = %row.action_key);
    let _enter = span.enter();
    let connector = state.config.connector(&row.connector).cloned();
    let resource = connector
        .as_ref()
        .and_then(|c| c.operations.get(&row.operation).cloned());
    let (Some(connector), Some(resource)) = (connector, resource) else {
        // The claim's gate checked the configuration, which does not change while running.
        tracing::error!("a claimed dispatch has no connector resource");
        return;
    };

    if row.reclaimed {
        // An earlier dispatcher claimed this row and never recorded its outcome: the command
        // may have left. Never resend blind; the reconciler looks the key up.
        tracing::warn!(
            "reclaimed a dispatch whose outcome was never recorded; reconciling instead of resending"
        );
        let finish = AttemptFinish {
            outcome: Some(AttemptOutcome::Lost),
            sent: Some(true),
            error_class: Some(ErrorClass::Indeterminate.as_str().to_string()),
            detail: Some("the dispatcher stopped before recording the outcome".to_string()),
            ..AttemptFinish::default()
        };
        record(state, row, finish, Decision::Unknown).await;
        return;
    }

    // A send must end inside its lease, or a claimant that took the row over could act while
    // this request is still on its way. One that cannot is not begun: the lease runs out and
    // the row is reconciled, as after a crash.
    if state.clock.now_ms().saturating_add(connector.timeout_ms) >= row.lease_expires_at_ms {
        tracing::warn!("the claim's lease would run out during the send; giving it back unsent");
        let (seq, fence, now) = (row.outbox_seq, row.fence, state.clock.now_ms());
        if let Err(e) = state
            .db
            .write(move |s| s.release_claim(seq, fence, now))
            .await
        {
            // Taken over meanwhile: the new claimant reconciles it as possibly sent.
            tracing::warn!(error = %e, "the unsent claim could not be given back");
        }
        state.dispatch_wake.notify_one();
        return;
    }

    let call = connector::create(
        &state.http,
        &connector,
        &resource,
        &row.action_key,
        &row.payload_json,
    )
    .await;
    let (finish, decision) = match call {
        Call::Replied(reply) if reply.is_success() => match reply.downstream_id() {
            Some(downstream_id) => (
                AttemptFinish {
                    outcome: Some(AttemptOutcome::Succeeded),
                    http_status: Some(reply.status),
                    replayed: Some(reply.replayed()),
                    sent: Some(true),
                    provider_request_id: Some(downstream_id.clone()),
                    ..AttemptFinish::default()
                },
                Decision::Receipt(downstream_id),
            ),
            None => (
                AttemptFinish {
                    outcome: Some(AttemptOutcome::Lost),
                    http_status: Some(reply.status),
                    sent: Some(true),
                    error_class: Some(ErrorClass::Indeterminate.as_str().to_string()),
                    detail: Some("a success answer without a downstream id".to_string()),
                    ..AttemptFinish::default()
                },
                Decision::Unknown,
            ),
        },
        Call::Replied(reply) => {
            let observation = reply.observation();
            let finish = AttemptFinish {
                http_status: Some(reply.status),
                retry_after_ms: reply.retry_after_ms,
                detail: reply
                    .body
                    .pointer("/error/message")
                    .and_then(|m| m.as_str())
                    .map(str::to_string),
                ..AttemptFinish::default()
            };
            (
                finish,
                Decision::Classify(observation, connector.bare_overload()),
            )
        }
        Call::Failed {
            observation,
            detail,
        } => (
            AttemptFinish {
                detail: Some(detail),
                ..AttemptFinish::default()
            },
            Decision::Classify(observation, connector.bare_overload()),
        ),
    };
    record(state, row, finish, decision).await;
}

/// What to do with the intent after an attempt.
enum Decision {
    Receipt(String),
    Unknown,
    /// Classify what was observed, with the connector's word on bare overload answers.
    Classify(Observation, BareOverload),
}

async fn record(state: &AppState, row: ClaimedRow, finish: AttemptFinish, decision: Decision) {
    let now = state.clock.now_ms();
    let outbox_seq = row.outbox_seq;
    let intent_id = row.intent_id.clone();
    let entropy = state.entropy.clone();
    let receipt = match &decision {
        Decision::Receipt(downstream_id) => Some(downstream_id.clone()),
        _ => None,
    };
    let result = state
        .db
        .write(move |s| decide_and_record(s, &row, finish, decision, now, &*entropy))
        .await;
    match result {
        Ok(Follow::Reconcile) => state.reconcile_wake.notify_one(),
        Ok(Follow::Dispatch) => state.dispatch_wake.notify_one(),
        Ok(Follow::Nothing) => {}
        Err(StoreError::Fenced { .. }) => {
            tracing::warn!(
                outbox = outbox_seq,
                "the claim was taken over while the send was on its way; its outcome is left to the reconciler"
            );
            // The downstream's answer is evidence whoever holds the claim: the receipt is
            // observed all the same, only the attempt's record is the new claimant's.
            if let Some(downstream_id) = receipt {
                let source = ReceiptSource {
                    receipt_id: ReceiptId::generate(now, state.entropy.next_u128()),
                    downstream_id,
                    source: "dispatch",
                    event_id: None,
                };
                if let Err(e) = state
                    .db
                    .write(move |s| s.observe_receipt(&intent_id, &source, now))
                    .await
                {
                    tracing::error!(error = %e, "observing a fenced claimant's receipt failed");
                }
            }
        }
        Err(e) => {
            tracing::error!(error = %e, outbox = outbox_seq, "recording a dispatch outcome failed")
        }
    }
    state.events_wake.notify_waiters();
}

enum Follow {
    Nothing,
    Reconcile,
    Dispatch,
}

fn decide_and_record(
    s: &mut Store,
    row: &ClaimedRow,
    mut finish: AttemptFinish,
    decision: Decision,
    now: u64,
    entropy: &dyn Entropy,
) -> Result<Follow, StoreError> {
    // Under the claim's fencing token first: a claimant whose claim was taken over writes
    // nothing at all (the whole record is rolled back).
    s.finish_claim(row.outbox_seq, row.fence, now)?;
    let intent = s.intent(&row.intent_id)?;
    let mut follow = Follow::Nothing;
    let (event, plan) = match decision {
        Decision::Receipt(downstream_id) => {
            s.finish_attempt(&row.intent_id, &row.attempt_id, &finish, now)?;
            let source = ReceiptSource {
                receipt_id: ReceiptId::generate(now, entropy.next_u128()),
                downstream_id,
                source: "dispatch",
                event_id: None,
            };
            s.observe_receipt(&row.intent_id, &source, now)?;
            return Ok(Follow::Nothing);
        }
        Decision::Unknown => (Some(Event::OutcomeUnknown), None),
        Decision::Classify(observation, bare_overload) => {
            let class = classify_with(&observation, intent.consequence, bare_overload)
                .unwrap_or(ErrorClass::Indeterminate);
            let not_sent = matches!(
                class,
                ErrorClass::PreDispatch | ErrorClass::Overloaded { .. }
            ) || (matches!(class, ErrorClass::Permanent | ErrorClass::PolicyStop));
            finish.sent = Some(!not_sent);
            finish.error_class = Some(class.as_str().to_string());
            finish.outcome = Some(match (class, observation) {
                (ErrorClass::Indeterminate, Observation::TimeoutAfterSend) => {
                    AttemptOutcome::TimedOut
                }
                (ErrorClass::Indeterminate, Observation::ConnectionLostAfterSend) => {
                    AttemptOutcome::Lost
                }
                _ => AttemptOutcome::Failed,
            });
            let budget = BudgetView {
                attempts_used: intent.attempts,
                max_attempts: intent.max_attempts,
                now_ms: now,
                deadline_at_ms: intent.deadline_at_ms,
                paused: intent.paused,
            };
            let mut jitter = SplitMix64::new(entropy.next_u128() as u64);
            match next_move(
                class,
                intent.consequence,
                &budget,
                &RetryPolicy::default(),
                &mut jitter,
            ) {
                NextMove::Stop { reason } => (
                    Some(Event::Refused {
                        reason: reason.to_string(),
                    }),
                    None,
                ),
                NextMove::RouteToReview => (
                    Some(Event::Refused {
                        reason: format!("stopped for review: the downstream answered {class}"),
                    }),
                    None,
                ),
                NextMove::Reconcile => (Some(Event::OutcomeUnknown), None),
                NextMove::Retry { delay_ms } | NextMove::Failover { delay_ms } => {
                    let plan = DispatchPlan {
                        attempt_id: AttemptId::generate(now, entropy.next_u128()),
                        available_at_ms: now + delay_ms,
                    };
                    (Some(Event::Dispatch), Some(plan))
                }
                // A pause holds the retry: the intent stays executing and the sweep
                // re-plans it after resume.
                NextMove::GiveUp {
                    why: GiveUpReason::Paused,
                } => (None, None),
                NextMove::GiveUp { why } => (
                    Some(Event::Refused {
                        reason: why.to_string(),
                    }),
                    None,
                ),
            }
        }
    };
    s.finish_attempt(&row.intent_id, &row.attempt_id, &finish, now)?;
    if let Some(event) = event {
        let ctx = ApplyContext {
            now_ms: now,
            dispatch: plan,
            ..ApplyContext::default()
        };
        match s.apply(&row.intent_id, &event, &ctx) {
            Ok(applied) => {
                follow = match applied.transition.to {
                    IntentState::Indeterminate => Follow::Reconcile,
                    IntentState::Executing if applied.attempt_id.is_some() => Follow::Dispatch,
                    _ => Follow::Nothing,
                };
            }
            // Paused, or the intent moved on meanwhile (a webhook committed it): nothing to do.
            Err(StoreError::Refused(Refusal::Paused | Refusal::Terminal { .. })) => {}
            Err(StoreError::Refused(refusal)) if matches!(event, Event::Dispatch) => {
                let reason = format!("no retry: {refusal}");
                let ctx = ApplyContext {
                    now_ms: now,
                    ..ApplyContext::default()
                };
                if let Err(e) = s.apply(&row.intent_id, &Event::Refused { reason }, &ctx) {
                    tracing::warn!(error = %e, "could not stop the intent after a refused retry");
                }
            }
            Err(StoreError::Refused(refusal)) => tracing::info!(%refusal, "event not applied"),
            Err(e) => return Err(e),
        }
    }
    Ok(follow)
}
