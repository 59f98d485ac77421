//! The reconciler's sweeps as store steps: an intent whose deadline passed is moved on, and
//! an executing intent with nothing planned has its next send planned again.

use super::dispatch::Follow;
use crate::clock::Entropy;
use crate::domain::{AttemptId, Event, IntentId, Refusal};
use crate::store::ops::*;
use crate::store::{ApplyContext, DispatchPlan, Store, StoreError};

/// Move `id` on because its deadline passed; an intent that moved on meanwhile is left.
pub fn pass_deadline(s: &mut Store, id: &IntentId, now: u64) -> Result<(), StoreError> {
    let ctx = ApplyContext {
        now_ms: now,
        ..ApplyContext::default()
    };
    match s.apply(id, &Event::DeadlinePassed, &ctx) {
        Ok(_) | Err(StoreError::Refused(_)) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Plan the next send of the stalled intent `id`; when no send may be planned (out of
/// budget, past its deadline), the intent is stopped with the reason.
pub fn replan(
    s: &mut Store,
    id: &IntentId,
    now: u64,
    ids: &dyn Entropy,
) -> Result<Follow, StoreError> {
    let ctx = ApplyContext {
        now_ms: now,
        dispatch: Some(DispatchPlan {
            attempt_id: AttemptId::generate(now, ids.next_u128()),
            available_at_ms: now,
        }),
        ..ApplyContext::default()
    };
    match s.replan_stalled(id, &ctx) {
        Ok(Some(_)) => Ok(Follow::Dispatch),
        // A paused intent waits for its resume, one whose approval lapsed for a fresh one.
        Ok(None) | Err(StoreError::Refused(Refusal::Paused | Refusal::AuthorizationInvalid)) => {
            Ok(Follow::Nothing)
        }
        Err(StoreError::Refused(Refusal::CancellationRequested)) => {
            super::dispatch::settle_cancel(s, id, now)
        }
        Err(StoreError::Refused(refusal)) => {
            let ctx = ApplyContext {
                now_ms: now,
                ..ApplyContext::default()
            };
            let reason = format!("no retry: {refusal}");
            match s.apply(id, &Event::Refused { reason }, &ctx) {
                Ok(applied)
                    if applied.transition.to == crate::domain::IntentState::Indeterminate =>
                {
                    Ok(Follow::Reconcile)
                }
                Ok(_) | Err(StoreError::Refused(_)) => Ok(Follow::Nothing),
                Err(e) => Err(e),
            }
        }
        Err(e) => Err(e),
    }
}
