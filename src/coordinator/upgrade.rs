//! Work an upgrade leaves to do while the coordinator serves: the arguments of intents made
//! before they had rows of their own, moved there a batch at a time (`store::ops::Payloads`),
//! so that a file upgraded with many intents searches as fast as a new one.

use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::store::Db;
use crate::store::ops::Payloads;

/// How much one write moves (at most `batch` intents and `bytes` of their arguments' text,
/// and always one), and the pause after it.
#[derive(Debug, Clone, Copy)]
pub struct Pace {
    pub batch: u32,
    pub bytes: u64,
    pub pause: Duration,
}

/// The pace with no agent's write seen in flight lately, and with some.
#[derive(Debug, Clone, Copy)]
pub struct Pacing {
    pub idle: Pace,
    pub busy: Pace,
}

/// Each batch is one write on the store's single writer, which every agent's write waits
/// behind while it runs, and it writes each intent's row and a new row for its arguments to
/// the log. Measured on an upgraded file of a million intents (143 bytes of text an
/// intent): idle, a batch of 200 took about 2 ms and the million moved in 217 s; under 32
/// agents creating, at the busy pace, their creates' p99 was 8.03 ms against 7.97 ms with
/// nothing to move (docs/throughput-log.md). The bytes bound, about nine times the text of
/// such a batch, keeps one of large orders (forty lines are about 15 KB of text) from
/// holding the writer much longer.
pub const PACING: Pacing = Pacing {
    idle: Pace {
        batch: 200,
        bytes: 256 << 10,
        pause: Duration::from_millis(40),
    },
    busy: Pace {
        batch: 25,
        bytes: 32 << 10,
        pause: Duration::from_millis(250),
    },
};

/// How long an agent's write seen in flight keeps the busy pace: agents' writes come and go
/// between group commits, and one look at each batch mostly finds none.
const BUSY_FOR: Duration = Duration::from_secs(5);

/// A failed batch is tried again after this pause, up to [`TRIES`] times in a row (a second
/// coordinator holding the file past the busy timeout); then the rest waits for the next
/// start.
const RETRY_AFTER: Duration = Duration::from_secs(10);
const TRIES: u32 = 5;

/// Move every older intent's arguments into its own row, a batch at a time with a pause
/// between, until none is left or the coordinator stops. Nothing depends on it but how fast
/// a search is.
pub async fn move_older_arguments(db: Db, mut stopping: watch::Receiver<bool>, pacing: Pacing) {
    let began = Instant::now();
    let (mut moved, mut done, mut failed): (u64, bool, u32) = (0, false, 0);
    let mut busy_at: Option<Instant> = None;
    while !*stopping.borrow() {
        if db.ingest_load().in_flight > 0 {
            busy_at = Some(Instant::now());
        }
        let pace = match busy_at {
            Some(at) if at.elapsed() < BUSY_FOR => pacing.busy,
            _ => pacing.idle,
        };
        let pause = match db
            .write(move |s| s.move_older_arguments(pace.batch, pace.bytes))
            .await
        {
            Ok(0) => {
                done = true;
                break;
            }
            Ok(n) => {
                if moved == 0 {
                    tracing::info!(
                        "moving older intents' arguments into rows of their own; searches ask each intent until it is done"
                    );
                }
                moved += u64::from(n);
                failed = 0;
                pace.pause
            }
            Err(e) => {
                failed += 1;
                tracing::warn!(error = %e, moved, failed, "moving older intents' arguments failed");
                if failed == TRIES {
                    tracing::warn!(
                        moved,
                        "moving older intents' arguments stopped; the next start goes on"
                    );
                    break;
                }
                RETRY_AFTER
            }
        };
        tokio::select! {
            _ = tokio::time::sleep(pause) => {}
            // A start that failed after this began drops the sender: that is a stop too.
            stopped = stopping.wait_for(|s| *s) => if stopped.is_err() { break },
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
