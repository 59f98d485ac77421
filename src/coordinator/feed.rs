//! One follower of the store's change feed per coordinator, shared by every open event
//! stream: it reads each batch of new events once and hands it to all streams, so a
//! hundred subscribers cost one store read per batch, not a hundred.
//!
//! A stream catches up from its own resume point by reading the store, then takes the
//! shared batches, skipping what it already sent; a batch that starts past the stream's
//! position (the follower began later, or a batch was missed) makes it read the store for
//! what lies between first. A stream that falls behind by more than
//! [`KEPT_BATCHES`] batches reads the store again from where it is; it never misses an
//! event, and never holds the others back.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::broadcast;

use super::AppState;
use crate::store::StoredEvent;
use crate::store::ops::*;

/// Events read from the store per pass.
pub const BATCH: u32 = 500;
/// Batches kept for streams that are a little behind.
const KEPT_BATCHES: usize = 64;
/// The fallback poll: another coordinator's writes do not wake this one.
const POLL: Duration = Duration::from_secs(1);

/// A batch of events in sequence order.
pub type Batch = Arc<Vec<StoredEvent>>;

/// The shared follower of one coordinator.
pub struct Feed {
    batches: broadcast::Sender<Batch>,
    started: AtomicBool,
}

impl Default for Feed {
    fn default() -> Self {
        Feed {
            batches: broadcast::channel(KEPT_BATCHES).0,
            started: AtomicBool::new(false),
        }
    }
}

impl Feed {
    /// The batches read from now on; the follower starts with the first subscriber and runs
    /// until the coordinator stops.
    pub fn subscribe(&self, state: &AppState) -> broadcast::Receiver<Batch> {
        let batches = self.batches.subscribe();
        if !self.started.swap(true, Ordering::AcqRel) {
            tokio::spawn(follow(state.clone()));
        }
        batches
    }
}

async fn follow(state: AppState) {
    let mut stopping = state.stopping.clone();
    let mut after = match state.db.read(|s| s.last_event_seq()).await {
        Ok(seq) => seq,
        Err(e) => {
            tracing::error!(error = %e, "the change feed cannot be followed");
            // The next subscriber tries again.
            state.feed.started.store(false, Ordering::Release);
            return;
        }
    };
    loop {
        if *stopping.borrow() {
            return;
        }
        // Registered before reading, so a write between the read and the wait still wakes us.
        let woken = state.events_wake.notified();
        tokio::pin!(woken);
        woken.as_mut().enable();
        let read = state.db.read(move |s| s.events_after(after, BATCH)).await;
        let full = match read {
            Ok(batch) => {
                let full = batch.len() == BATCH as usize;
                if let Some(last) = batch.last() {
                    after = last.seq;
                    // No stream open: nobody to tell.
                    let _ = state.feed.batches.send(Arc::new(batch));
                }
                full
            }
            Err(e) => {
                tracing::warn!(error = %e, "the change feed could not be read; trying again");
                false
            }
        };
        if full {
            continue;
        }
        tokio::select! {
            _ = &mut woken => {}
            _ = tokio::time::sleep(POLL) => {}
            changed = stopping.changed() => if changed.is_err() { return },
        }
    }
}
