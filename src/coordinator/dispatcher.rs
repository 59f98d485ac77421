//! The dispatcher's shell: claims outbox rows, sends the frozen command with the action key
//! over HTTP, and hands the answer to the core (`super::core::dispatch`), which decides the
//! next move from the domain's decision table and records it under the claim's fencing
//! token. A row claimed by a dispatcher that died is never resent: its outcome is
//! reconciled by lookup.
//!
//! A dispatch request claims the send it plans in its own write when a send slot is free
//! (one write and one hand-off fewer per order; the same gate and lease), and the loop here
//! claims the rest: retries, rows due later, rows whose lease ran out. Either claims only
//! as many rows as there are free send slots, so a claim never waits out its lease in a
//! queue; the claim's transaction puts each send to the send gate
//! (`crate::domain::send`); a cancellation requested after the claim is looked for again
//! right before the send (in the store only when one may have been requested since: on
//! SQLite this process makes them all, and counts them); and a send begins only if it can
//! end inside its lease.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tracing::Instrument;

use super::AppState;
use super::core::dispatch::{self, Follow, SendResult};
use crate::store::ops::*;
use crate::store::{Claim, ClaimedRow, HeldSend, Location, StoreError};

/// Rows claimed per round trip to the store, at most.
const CLAIM_BATCH: u32 = 64;
/// The longest the dispatcher sleeps without looking at the outbox.
const IDLE_POLL: Duration = Duration::from_millis(500);

/// The dispatcher's send slots, `dispatch_concurrency` of them. A send holds one from its
/// claim to its record, whether the dispatcher's loop claimed it or the dispatch request
/// that planned it ([`SendSlots::take_for_planned`]), so a claimed row never waits for a
/// slot.
pub struct SendSlots {
    slots: Arc<Semaphore>,
    permits: usize,
    /// True while the dispatcher runs: only then may a request claim what it planned.
    running: AtomicBool,
    /// Where the sends that requests claim go instead of a task of their own, when a caller
    /// sends them itself (the simulation, which owns every send's timing).
    handed: Option<Mutex<Vec<ClaimedRow>>>,
}

impl SendSlots {
    pub fn new(permits: usize) -> SendSlots {
        SendSlots {
            slots: Arc::new(Semaphore::new(permits)),
            permits,
            running: AtomicBool::new(false),
            handed: None,
        }
    }

    /// Slots open without a dispatcher, whose requests' claimed sends are only handed over
    /// ([`SendSlots::take_handed`]): for a caller that makes every send itself.
    pub fn handing_over(permits: usize) -> SendSlots {
        SendSlots {
            running: AtomicBool::new(true),
            handed: Some(Mutex::default()),
            ..SendSlots::new(permits)
        }
    }

    /// The sends requests claimed since the last call, in the hand-over mode.
    pub fn take_handed(&self) -> Vec<ClaimedRow> {
        self.handed.as_ref().map_or_else(Vec::new, |handed| {
            std::mem::take(&mut *handed.lock().unwrap_or_else(PoisonError::into_inner))
        })
    }

    /// A free slot for the send a dispatch request is about to plan, if the dispatcher runs
    /// and one is free; otherwise the dispatcher claims it in its next round.
    pub fn take_for_planned(&self) -> Option<OwnedSemaphorePermit> {
        if !self.running.load(Ordering::Acquire) {
            return None;
        }
        self.slots.clone().try_acquire_owned().ok()
    }
}

/// Run until the coordinator stops; in-flight dispatches finish first.
pub async fn run(state: AppState) {
    let slots = state.send_slots.clone();
    let semaphore = slots.slots.clone();
    slots.running.store(true, Ordering::Release);
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
        let (worker, config, clock) = (
            state.worker.clone(),
            state.config.clone(),
            state.clock.clone(),
        );
        // Cancellations requested before the claim is queued are the claim's gate's to see.
        let cancels = state.cancels.load(Ordering::Acquire);
        // The claim's time is read when the writer runs it, not when it was queued.
        let claimed = state
            .db
            .write(move |s| dispatch::claim(s, &config, &worker, clock.now_ms(), free))
            .await;
        match claimed {
            Ok(claim) if !claim.rows.is_empty() || !claim.held.is_empty() => {
                report_held(&state, &claim.held);
                for row in claim.rows {
                    let Ok(permit) = semaphore.clone().acquire_owned().await else {
                        break;
                    };
                    spawn_send(&state, row, cancels, permit);
                }
                continue;
            }
            Ok(_) => {}
            Err(e) => tracing::error!(error = %e, "claiming dispatches failed"),
        }
        // Without it the dispatcher still looks again within its idle poll; the failure is
        // told, not swallowed, as it means sends go up to that late.
        let next_due = match state.db.read(|s| s.next_outbox_due_ms()).await {
            Ok(due) => due,
            Err(e) => {
                tracing::warn!(error = %e, "reading when the next send comes due failed");
                None
            }
        };
        let wait = next_due.map_or(IDLE_POLL, |due| {
            Duration::from_millis(due.saturating_sub(state.clock.now_ms())).min(IDLE_POLL)
        });
        tokio::select! {
            _ = state.dispatch_wake.notified() => {}
            _ = tokio::time::sleep(wait) => {}
            _ = stopping.changed() => {}
        }
    }
    // No request claims what it plans from here on; the sends claimed so far finish.
    slots.running.store(false, Ordering::Release);
    let _ = semaphore.acquire_many(slots.permits as u32).await;
}

/// Take what a claim made in a dispatch request's own write: send its row in the slot the
/// request took, or report why the gate held it back. `cancels` is [`AppState::cancels`]
/// as read before the write was queued.
pub fn take_planned(state: &AppState, claim: Claim, cancels: u64, slot: OwnedSemaphorePermit) {
    report_held(state, &claim.held);
    let Some(row) = claim.rows.into_iter().next() else {
        return;
    };
    match &state.send_slots.handed {
        Some(handed) => handed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(row),
        None => spawn_send(state, row, cancels, slot),
    }
}

/// Log the sends a claim's gate held back, and wake whoever acts on them.
fn report_held(state: &AppState, held: &[HeldSend]) {
    for held in held {
        tracing::info!(intent = %held.intent_id, why = %held.why, "dispatch not sent");
    }
    if held.iter().any(|h| h.indeterminate) {
        state.reconcile_wake.notify_one();
    }
    if !held.is_empty() {
        state.events_wake.notify_waiters();
    }
}

/// Send `row` and record its outcome in a task of its own, holding `slot` until then.
fn spawn_send(state: &AppState, row: ClaimedRow, cancels: u64, slot: OwnedSemaphorePermit) {
    let state = state.clone();
    tokio::spawn(async move {
        handle(&state, row, cancels).await;
        drop(slot);
    });
}

/// Send one claimed dispatch and record what followed, inside a span naming it. The span
/// is attached to the future rather than entered: an entered span held across an await
/// would stay current on the worker thread while other tasks ran there, and their log
/// lines would nest under it.
async fn handle(state: &AppState, row: ClaimedRow, cancels: u64) {
    let span = tracing::info_span!("dispatch", intent = %row.intent_id, attempt = %row.attempt_id, action_key = %row.action_key);
    send_and_record(state, row, cancels).instrument(span).await
}

/// Whether a cancellation may have been requested since the claim whose [`AppState::cancels`]
/// was `cancels`. Another coordinator's requests move no counter here: on a shared database
/// the store is asked every time.
fn cancel_maybe_since(state: &AppState, cancels: u64) -> bool {
    matches!(state.config.database, Location::Postgres(_))
        || state.cancels.load(Ordering::Acquire) != cancels
}

async fn send_and_record(state: &AppState, row: ClaimedRow, cancels: u64) {
    let connector = state.config.connector(&row.connector).cloned();
    // The resource the claim resolved and stored with the attempt.
    let resource = row.resource.clone().or_else(|| {
        connector
            .as_ref()
            .and_then(|c| c.operations.get(&row.operation).cloned())
    });
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
        record(state, row, dispatch::reclaimed()).await;
        return;
    }

    // A cancellation requested since the claim stops the send here; one requested after
    // this read finds the send on its way and waits for its outcome. A read that fails sends
    // nothing either.
    let id = row.intent_id.clone();
    let cancelled = if cancel_maybe_since(state, cancels) {
        state.db.read(move |s| s.cancel_requested(&id)).await
    } else {
        Ok(false)
    };
    if let Ok(true) = cancelled {
        let (check, now) = (row.clone(), state.clock.now_ms());
        match state
            .db
            .write(move |s| dispatch::withdraw_if_cancelled(s, &check, now))
            .await
        {
            Ok(None) => {}
            Ok(Some(follow)) => {
                tracing::info!("cancellation was requested after the claim; the send is withdrawn");
                if follow == Follow::Reconcile {
                    state.reconcile_wake.notify_one();
                }
                state.events_wake.notify_waiters();
                return;
            }
            Err(e) => {
                // Taken over, or the store failed: nothing is sent on this claim, whose
                // lease runs out and is reconciled.
                tracing::warn!(error = %e, "the cancelled send could not be withdrawn; not sent");
                return;
            }
        }
    }
    if let Err(e) = &cancelled {
        tracing::warn!(error = %e, "whether the intent was cancelled could not be read; not sent");
        give_back_unsent(state, &row).await;
        return;
    }

    // Judged last, right before the send: every await above spends the lease.
    if !dispatch::may_begin(&row, state.clock.now_ms(), connector.timeout_ms) {
        // The lease runs out and the row is reconciled, as after a crash.
        tracing::warn!("the claim's lease would run out during the send; giving it back unsent");
        give_back_unsent(state, &row).await;
        return;
    }

    let call = state
        .downstream
        .create(&connector, &resource, &row.action_key, &row.payload_json)
        .await;
    let result = dispatch::interpret(&call, &row.action_key, connector.bare_overload());
    record(state, row, result).await;
}

async fn record(state: &AppState, row: ClaimedRow, result: SendResult) {
    let now = state.clock.now_ms();
    let entropy = state.entropy.clone();
    // Kept for a fenced claimant only when the answer carried a record to observe.
    let fenced = result.downstream_id().is_some().then(|| result.clone());
    let fenced_row = row.clone();
    let outcome = state
        .db
        .write(move |s| dispatch::record(s, &row, result.clone(), now, &*entropy))
        .await;
    match outcome {
        Ok(Follow::Reconcile) => state.reconcile_wake.notify_one(),
        Ok(Follow::Dispatch) => state.dispatch_wake.notify_one(),
        Ok(Follow::Nothing) => {}
        Err(StoreError::Fenced { .. }) => {
            tracing::warn!(
                outbox = fenced_row.outbox_seq,
                "the claim was taken over while the send was on its way; its outcome is left to the reconciler"
            );
            if let Some(fenced) = fenced {
                let entropy = state.entropy.clone();
                if let Err(e) = state
                    .db
                    .write(move |s| {
                        dispatch::observe_fenced_receipt(s, &fenced_row, &fenced, now, &*entropy)
                    })
                    .await
                {
                    tracing::error!(error = %e, "observing a fenced claimant's receipt failed");
                }
            }
        }
        Err(e) => {
            tracing::error!(error = %e, outbox = fenced_row.outbox_seq, "recording a dispatch outcome failed")
        }
    }
    state.events_wake.notify_waiters();
}

/// Give a claim back unsent, so the row is due again at once.
async fn give_back_unsent(state: &AppState, row: &ClaimedRow) {
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
}
