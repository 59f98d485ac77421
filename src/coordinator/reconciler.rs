//! The reconciler: on an interval (and on demand) it looks indeterminate intents up by
//! action key, moves intents whose deadline passed, and re-plans stalled retries.
//!
//! For an indeterminate intent: found downstream → receipt → `committed`; proved absent and
//! the connector guarantees idempotent creation for the key until after a resend could
//! arrive → resend the same command with the same key; otherwise it stays indeterminate for
//! an operator. Lookups are read-only, so a pause does not stop them.

use std::collections::HashMap;
use std::time::Duration;

use serde::Serialize;

use super::AppState;
use super::connector::{self, Call};
use crate::domain::{
    AttemptId, AttemptKind, AttemptOutcome, Event, IntentId, IntentState, ReceiptId,
};
use crate::store::ops::*;
use crate::store::{ApplyContext, AttemptFinish, DispatchPlan, ReceiptSource, StoreError};
use crate::wire::NewAttempt;

/// The least time between two automatic lookups of one intent.
const LOOKUP_SPACING_MS: u64 = 1_000;

/// What one lookup found and did.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum LookupResult {
    /// Found downstream; the intent is committed with this downstream id.
    Committed { downstream_id: String },
    /// Proved absent; the same command is being sent again with the same key.
    Resent,
    /// Still unproven; why it stays indeterminate.
    StillIndeterminate { why: String },
    /// The intent is not indeterminate; nothing to look up.
    NotIndeterminate { state: IntentState },
}

/// Run until the coordinator stops.
pub async fn run(state: AppState) {
    let interval = Duration::from_millis(state.config.reconcile_interval_ms.max(50));
    let mut last_lookup: HashMap<IntentId, u64> = HashMap::new();
    let mut stopping = state.stopping.clone();
    loop {
        if *stopping.borrow() {
            break;
        }
        if let Err(e) = sweep(&state, &mut last_lookup).await {
            tracing::error!(error = %e, "reconciler sweep failed");
        }
        tokio::select! {
            _ = state.reconcile_wake.notified() => {}
            _ = tokio::time::sleep(interval) => {}
            _ = stopping.changed() => {}
        }
    }
}

async fn sweep(
    state: &AppState,
    last_lookup: &mut HashMap<IntentId, u64>,
) -> Result<(), StoreError> {
    let batch = state.config.reconcile_batch;
    let now = state.clock.now_ms();
    let overdue = state
        .db
        .read(move |s| s.overdue_intents(now, batch))
        .await?;
    for id in overdue {
        let ctx = ApplyContext {
            now_ms: state.clock.now_ms(),
            ..ApplyContext::default()
        };
        match state
            .db
            .write(move |s| s.apply(&id, &Event::DeadlinePassed, &ctx))
            .await
        {
            Ok(_) | Err(StoreError::Refused(_)) => {}
            Err(e) => return Err(e),
        }
    }

    let stalled = state.db.read(move |s| s.stalled_executing(batch)).await?;
    for id in stalled {
        let now = state.clock.now_ms();
        let plan = DispatchPlan {
            attempt_id: AttemptId::generate(now, state.entropy.next_u128()),
            available_at_ms: now,
        };
        let ctx = ApplyContext {
            now_ms: now,
            dispatch: Some(plan),
            ..ApplyContext::default()
        };
        let rid = id.clone();
        match state.db.write(move |s| s.replan_stalled(&rid, &ctx)).await {
            Ok(Some(_)) => state.dispatch_wake.notify_one(),
            Ok(None) => {}
            Err(StoreError::Refused(crate::domain::Refusal::Paused)) => {}
            Err(StoreError::Refused(refusal)) => {
                let ctx = ApplyContext {
                    now_ms: now,
                    ..ApplyContext::default()
                };
                let reason = format!("no retry: {refusal}");
                let _ = state
                    .db
                    .write(move |s| s.apply(&id, &Event::Refused { reason }, &ctx))
                    .await;
            }
            Err(e) => return Err(e),
        }
    }

    let due = state.db.read(move |s| s.indeterminate_batch(batch)).await?;
    let now = state.clock.now_ms();
    last_lookup.retain(|_, at| now.saturating_sub(*at) < 60_000);
    for id in due {
        if last_lookup
            .get(&id)
            .is_some_and(|at| now.saturating_sub(*at) < LOOKUP_SPACING_MS)
        {
            continue;
        }
        last_lookup.insert(id.clone(), now);
        if *state.stopping.borrow() {
            break;
        }
        if let Err(e) = reconcile_intent(state, &id).await {
            tracing::warn!(intent = %id, error = %e, "lookup failed");
        }
    }
    state.events_wake.notify_waiters();
    Ok(())
}

/// Look one intent's action key up now and act on what is found.
pub async fn reconcile_intent(state: &AppState, id: &IntentId) -> Result<LookupResult, StoreError> {
    let lookup_id = id.clone();
    let intent = state.db.read(move |s| s.intent(&lookup_id)).await?;
    if intent.state != IntentState::Indeterminate {
        return Ok(LookupResult::NotIndeterminate {
            state: intent.state,
        });
    }
    let still = |why: &str| {
        Ok(LookupResult::StillIndeterminate {
            why: why.to_string(),
        })
    };
    let Some(connector) = state.config.connector(&intent.connector).cloned() else {
        return still("its connector is no longer configured");
    };
    let Some(resource) = connector.operations.get(&intent.operation).cloned() else {
        return still("its connector has no resource for the operation");
    };
    if !connector.supports_lookup {
        return still("the connector cannot look keys up; an operator must close it with evidence");
    }

    let now = state.clock.now_ms();
    let attempt_id = AttemptId::generate(now, state.entropy.next_u128());
    let new = NewAttempt {
        kind: Some(AttemptKind::Lookup),
        provider: connector.name.clone(),
        ..NewAttempt::default()
    };
    let (rid, raid) = (id.clone(), attempt_id.clone());
    state
        .db
        .write(move |s| s.record_attempt(&rid, &raid, &new, None, now))
        .await?;

    let call = connector::lookup(&state.http, &connector, &resource, &intent.action_key).await;
    let now = state.clock.now_ms();
    let (finish, result) = match call {
        Call::Replied(reply) if reply.is_success() => match reply.downstream_id() {
            Some(downstream_id) => (
                AttemptFinish {
                    outcome: Some(AttemptOutcome::Succeeded),
                    http_status: Some(reply.status),
                    provider_request_id: Some(downstream_id.clone()),
                    detail: Some("found by action key".to_string()),
                    ..AttemptFinish::default()
                },
                Found::Yes(downstream_id),
            ),
            None => (
                AttemptFinish {
                    outcome: Some(AttemptOutcome::Failed),
                    http_status: Some(reply.status),
                    detail: Some("a lookup answer without a downstream id".to_string()),
                    ..AttemptFinish::default()
                },
                Found::Unknown,
            ),
        },
        Call::Replied(reply) if reply.status == 404 => (
            AttemptFinish {
                outcome: Some(AttemptOutcome::Succeeded),
                http_status: Some(404),
                detail: Some("not found by action key".to_string()),
                ..AttemptFinish::default()
            },
            Found::No,
        ),
        Call::Replied(reply) => (
            AttemptFinish {
                outcome: Some(AttemptOutcome::Failed),
                http_status: Some(reply.status),
                retry_after_ms: reply.retry_after_ms,
                ..AttemptFinish::default()
            },
            Found::Unknown,
        ),
        Call::Failed { detail, .. } => (
            AttemptFinish {
                outcome: Some(AttemptOutcome::Failed),
                detail: Some(detail),
                ..AttemptFinish::default()
            },
            Found::Unknown,
        ),
    };
    let (rid, raid) = (id.clone(), attempt_id.clone());
    state
        .db
        .write(move |s| s.finish_attempt(&rid, &raid, &finish, now))
        .await?;

    let outcome = match result {
        Found::Yes(downstream_id) => {
            let source = ReceiptSource {
                receipt_id: ReceiptId::generate(now, state.entropy.next_u128()),
                downstream_id: downstream_id.clone(),
                source: "lookup",
                event_id: None,
            };
            let rid = id.clone();
            state
                .db
                .write(move |s| s.observe_receipt(&rid, &source, now))
                .await?;
            LookupResult::Committed { downstream_id }
        }
        Found::Unknown => LookupResult::StillIndeterminate {
            why: "the lookup did not answer".to_string(),
        },
        Found::No => {
            // A resend is safe only while the downstream still deduplicates the key: the
            // resend must arrive (within one timeout) before the key may be forgotten. The
            // dispatcher asks the same again when the resend is due.
            let safe = intent.first_dispatch_at_ms.is_some_and(|first| {
                connector
                    .key_contract()
                    .retention_at_most(intent.key_retention_secs)
                    .holds_key_on_landing(first, now)
            });
            if !safe {
                LookupResult::StillIndeterminate {
                    why: "not found, but the downstream may have forgotten the key: a resend would not be \
                          deduplicated"
                        .to_string(),
                }
            } else {
                let plan = DispatchPlan {
                    attempt_id: AttemptId::generate(now, state.entropy.next_u128()),
                    available_at_ms: now,
                };
                let ctx = ApplyContext {
                    now_ms: now,
                    dispatch: Some(plan),
                    ..ApplyContext::default()
                };
                let rid = id.clone();
                match state
                    .db
                    .write(move |s| s.apply(&rid, &Event::ProvedAbsentRetry, &ctx))
                    .await
                {
                    Ok(_) => {
                        state.dispatch_wake.notify_one();
                        LookupResult::Resent
                    }
                    Err(StoreError::Refused(refusal)) => LookupResult::StillIndeterminate {
                        why: format!("not found, but no resend: {refusal}"),
                    },
                    Err(e) => return Err(e),
                }
            }
        }
    };
    state.events_wake.notify_waiters();
    Ok(outcome)
}

enum Found {
    Yes(String),
    No,
    Unknown,
}
