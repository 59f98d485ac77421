//! The reconciler's shell: on an interval (and on demand) it moves intents whose deadline
//! passed, re-plans stalled retries and looks indeterminate intents up by action key over
//! HTTP; what each finding means is decided in the core (`super::core::reconcile`,
//! `super::core::sweep`).

use std::time::Duration;

use super::AppState;
use super::core::reconcile::{self, Begin, ConnectorRate};
use super::core::{Follow, sweep};
use crate::domain::IntentId;
use crate::store::StoreError;
use crate::store::ops::*;

pub use super::core::reconcile::{LookupResult, Trigger};

/// How often the change feed is cut back to `limits.events_kept_*`.
const PRUNE_EVERY_MS: u64 = 30_000;
/// Events dropped per write, and writes per pruning pass at most: a pass never holds the
/// writer long, and a feed far past its bounds is cut back over a few passes.
const PRUNE_BATCH: u32 = 5_000;
const PRUNE_WRITES: usize = 20;

/// Drop the change feed's events past what `limits` keeps.
async fn prune_events(state: &AppState) -> Result<(), StoreError> {
    let limits = &state.config.limits;
    let before_ms = state
        .clock
        .now_ms()
        .saturating_sub(limits.events_kept_hours.saturating_mul(3_600_000));
    let keep = limits.events_kept_max;
    for _ in 0..PRUNE_WRITES {
        let dropped = state
            .db
            .write(move |s| s.prune_events(before_ms, keep, PRUNE_BATCH))
            .await?;
        if dropped < PRUNE_BATCH as usize {
            break;
        }
    }
    Ok(())
}

/// Run until the coordinator stops.
pub async fn run(state: AppState) {
    let interval = Duration::from_millis(state.config.reconcile_interval_ms.max(50));
    let mut rate = ConnectorRate::default();
    let mut stopping = state.stopping.clone();
    let mut next_prune_ms = 0;
    loop {
        if *stopping.borrow() {
            break;
        }
        if let Err(e) = sweep(&state, &mut rate).await {
            tracing::error!(error = %e, "reconciler sweep failed");
        }
        if state.clock.now_ms() >= next_prune_ms {
            next_prune_ms = state.clock.now_ms() + PRUNE_EVERY_MS;
            if let Err(e) = prune_events(&state).await {
                tracing::warn!(error = %e, "pruning the change feed failed");
            }
        }
        tokio::select! {
            _ = state.reconcile_wake.notified() => {}
            _ = tokio::time::sleep(interval) => {}
            _ = stopping.changed() => {}
        }
    }
}

async fn sweep(state: &AppState, rate: &mut ConnectorRate) -> Result<(), StoreError> {
    let batch = state.config.reconcile_batch;
    let now = state.clock.now_ms();
    let overdue = state
        .db
        .read(move |s| s.overdue_intents(now, batch))
        .await?;
    for id in overdue {
        let clock = state.clock.clone();
        state
            .db
            .write(move |s| sweep::pass_deadline(s, &id, clock.now_ms()))
            .await?;
    }

    let now = state.clock.now_ms();
    let stalled = state
        .db
        .read(move |s| s.stalled_executing(batch, now))
        .await?;
    for id in stalled {
        let (clock, entropy) = (state.clock.clone(), state.entropy.clone());
        let follow = state
            .db
            .write(move |s| sweep::replan(s, &id, clock.now_ms(), &*entropy))
            .await?;
        wake(state, follow);
    }

    // Only the intents whose backoff ended, each connector at most its rate a second.
    let now = state.clock.now_ms();
    let due = state.db.read(move |s| s.due_lookups(now, batch)).await?;
    let per_sec = state.config.lookups.per_connector_per_sec;
    for due in due {
        if *state.stopping.borrow() {
            break;
        }
        if !rate.take(&due.connector, per_sec, state.clock.now_ms()) {
            continue;
        }
        let id = due.intent_id;
        if let Err(e) = reconcile_intent(state, &id, Trigger::Automatic).await {
            tracing::warn!(intent = %id, error = %e, "lookup failed");
        }
    }
    state.events_wake.notify_waiters();
    Ok(())
}

fn wake(state: &AppState, follow: Follow) {
    match follow {
        Follow::Dispatch => state.dispatch_wake.notify_one(),
        Follow::Reconcile => state.reconcile_wake.notify_one(),
        Follow::Nothing => {}
    }
}

/// Look one intent's action key up and act on what is found: an operator's lookup at once,
/// an automatic one when its pacing allows.
pub async fn reconcile_intent(
    state: &AppState,
    id: &IntentId,
    trigger: Trigger,
) -> Result<LookupResult, StoreError> {
    let (config, clock, entropy, rid) = (
        state.config.clone(),
        state.clock.clone(),
        state.entropy.clone(),
        id.clone(),
    );
    let begun = state
        .db
        .write(move |s| reconcile::begin(s, &config, &rid, clock.now_ms(), &*entropy, trigger))
        .await?;
    let ask = match begun {
        Begin::Done(result) => return Ok(result),
        Begin::Ask(ask) => ask,
    };
    let Some(connector) = state.config.connector(&ask.connector).cloned() else {
        // `begin` found it configured, and the configuration does not change while running.
        return Err(StoreError::Unavailable(format!(
            "connector `{}` vanished",
            ask.connector
        )));
    };
    let call = state
        .downstream
        .lookup(&connector, &ask.resource, &ask.action_key)
        .await;
    let (config, clock, entropy) = (
        state.config.clone(),
        state.clock.clone(),
        state.entropy.clone(),
    );
    let (result, follow) = state
        .db
        .write(move |s| reconcile::finish(s, &config, &ask, &call, clock.now_ms(), &*entropy))
        .await?;
    wake(state, follow);
    state.events_wake.notify_waiters();
    Ok(result)
}
