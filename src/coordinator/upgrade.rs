//! Work an upgrade leaves to do while the coordinator serves: the arguments of intents made
//! before they had rows of their own, moved there a batch at a time (`store::ops::Payloads`),
//! so that a file upgraded with many intents searches as fast as a new one.

use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::store::Db;
use crate::store::ops::Payloads;

/// How many intents one write moves, and the pause after it.
#[derive(Debug, Clone, Copy)]
pub struct Pace {
    pub batch: u32,
    pub pause: Duration,
}

/// The pace with no agent's write in flight, and with some.
#[derive(Debug, Clone, Copy)]
pub struct Pacing {
    pub idle: Pace,
    pub busy: Pace,
}

/// Each batch is one write on the store's single writer, which every agent's write waits
/// behind while it runs, and it writes each intent's row and a new row for its arguments to
/// the log. Measured on an upgraded file of a million intents: idle, a batch of 200 took
/// about 2 ms and the million moved in 214 s; at that pace under 32 agents creating, their
/// creates' p99 was 22.4 ms against 7.3 ms once it was done. With agents' writes in flight
/// it moves a hundred a second, which they do not feel (docs/throughput-log.md).
pub const PACING: Pacing = Pacing {
    idle: Pace {
        batch: 200,
        pause: Duration::from_millis(40),
    },
    busy: Pace {
        batch: 25,
        pause: Duration::from_millis(250),
    },
};

/// How long an agent's write seen in flight keeps the busy pace.
const BUSY_FOR: Duration = Duration::from_secs(5);

/// Move every older intent's arguments into its own row, a batch at a time with a pause
/// between, until none is left or the coordinator stops. A failed batch is logged and the
/// rest is left for the next start: nothing depends on it but how fast a search is.
pub async fn move_older_arguments(db: Db, mut stopping: watch::Receiver<bool>, pacing: Pacing) {
    let began = Instant::now();
    let (mut moved, mut done): (u64, bool) = (0, false);
    let mut busy_at: Option<Instant> = None;
    while !*stopping.borrow() {
        // Agents' writes come and go between group commits: one seen in flight keeps the
        // busy pace for a while.
        if db.ingest_load().in_flight > 0 {
            busy_at = Some(Instant::now());
        }
        let pace = match busy_at {
            Some(at) if at.elapsed() < BUSY_FOR => pacing.busy,
            _ => pacing.idle,
        };
        match db.write(move |s| s.move_older_arguments(pace.batch)).await {
            Ok(0) => {
                done = true;
                break;
            }
            Ok(n) => moved += u64::from(n),
            Err(e) => {
                tracing::warn!(error = %e, moved, "moving older intents' arguments failed; the next start goes on");
                return;
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(pace.pause) => {}
            _ = stopping.wait_for(|s| *s) => {}
        }
    }
    if moved > 0 {
        tracing::info!(
            moved,
            secs = began.elapsed().as_secs(),
            done,
            "older intents' arguments moved into rows of their own"
        );
    }
}
