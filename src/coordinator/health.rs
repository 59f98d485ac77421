//! What `/healthz` reports: whether the store answers and its writer takes writes, and the
//! state of each background part (dispatcher, reconciler, metric index loader).
//!
//! The dispatcher and the reconciler run [`supervised`]: a panic is logged, counted and the
//! part restarted after a short pause that grows with each restart; a part that ends while
//! the coordinator is not stopping (aborted, or returned) is dead, and `/healthz` answers
//! 503 until the coordinator is restarted.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::watch;

use crate::wire::{HealthPart, PartStatus};

/// The first pause before a restart; it doubles with each restart, up to [`MAX_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(100);
const MAX_PAUSE: Duration = Duration::from_secs(5);

/// The background parts' states, by name, and the last probe of the store.
#[derive(Default)]
pub struct Liveness {
    parts: Mutex<BTreeMap<&'static str, HealthPart>>,
    /// When the store's last probe finished and what it found (read, write): `/healthz`
    /// needs no token, so one probe is in flight at a time and those who waited for it share
    /// its answer; a flood of them never becomes a flood of writes.
    pub probed: tokio::sync::Mutex<Option<(std::time::Instant, PartStatus, PartStatus)>>,
    /// The store's read probe has not come back: a probe waits for it (on a database lock,
    /// say) beyond the check's own wait, and a new one on every check would take the store's
    /// readers one by one from the requests.
    read_probe_out: std::sync::atomic::AtomicBool,
}

/// The store's read probe, out until it is dropped: when its read ran, or was dropped
/// without running.
pub struct ReadProbe(std::sync::Arc<Liveness>);

impl ReadProbe {
    /// `None` while the last probe is still out.
    pub fn start(liveness: &std::sync::Arc<Liveness>) -> Option<ReadProbe> {
        use std::sync::atomic::Ordering;
        (!liveness.read_probe_out.swap(true, Ordering::AcqRel)).then(|| ReadProbe(liveness.clone()))
    }
}

impl Drop for ReadProbe {
    fn drop(&mut self) {
        self.0
            .read_probe_out
            .store(false, std::sync::atomic::Ordering::Release);
    }
}

impl Liveness {
    fn parts(&self) -> MutexGuard<'_, BTreeMap<&'static str, HealthPart>> {
        // A part's state is one value written whole: a panic elsewhere cannot leave it half
        // changed.
        self.parts.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Set `name`'s status, keeping its restart count.
    pub fn set(&self, name: &'static str, status: PartStatus) {
        self.parts()
            .entry(name)
            .or_insert_with(|| HealthPart {
                status,
                restarts: 0,
            })
            .status = status;
    }

    fn restarted(&self, name: &'static str) -> u32 {
        let mut parts = self.parts();
        let part = parts.entry(name).or_insert_with(|| HealthPart {
            status: PartStatus::Restarting,
            restarts: 0,
        });
        part.status = PartStatus::Restarting;
        part.restarts += 1;
        part.restarts
    }

    /// Every part's state.
    pub fn snapshot(&self) -> BTreeMap<String, HealthPart> {
        self.parts()
            .iter()
            .map(|(name, part)| (name.to_string(), *part))
            .collect()
    }
}

/// Run `part` until `stopping`, restarting it when it panics; `part` makes a fresh run each
/// time it is called. Returns once the part ended for good.
pub async fn supervised<F, Fut>(
    health: std::sync::Arc<Liveness>,
    name: &'static str,
    stopping: watch::Receiver<bool>,
    part: F,
) where
    F: Fn() -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    loop {
        health.set(name, PartStatus::Running);
        let ended = tokio::spawn(part()).await;
        if *stopping.borrow() {
            health.set(name, PartStatus::Stopped);
            return;
        }
        match ended {
            Err(e) if e.is_panic() => {
                let restarts = health.restarted(name);
                let message = crate::store::panic_message(&*e.into_panic());
                tracing::error!(part = name, restarts, panic = %message, "a background part panicked; restarting it");
                let pause = FIRST_PAUSE
                    .saturating_mul(1 << restarts.min(6))
                    .min(MAX_PAUSE);
                let mut stopping = stopping.clone();
                tokio::select! {
                    _ = tokio::time::sleep(pause) => {}
                    _ = stopping.wait_for(|s| *s) => {}
                }
            }
            _ => {
                tracing::error!(
                    part = name,
                    "a background part ended while the coordinator runs"
                );
                health.set(name, PartStatus::Dead);
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[tokio::test]
    async fn a_part_that_panics_is_restarted_and_counted_and_one_that_ends_is_dead() {
        let health = Arc::new(Liveness::default());
        let (_stop, stopping) = watch::channel(false);
        let runs = Arc::new(AtomicU32::new(0));
        let counted = runs.clone();
        supervised(health.clone(), "dispatcher", stopping, move || {
            let run = counted.fetch_add(1, Ordering::SeqCst);
            async move {
                if run < 2 {
                    panic!("run {run} fails");
                }
            }
        })
        .await;
        assert_eq!(runs.load(Ordering::SeqCst), 3);
        let part = health.snapshot()["dispatcher"];
        assert_eq!(part.restarts, 2);
        assert_eq!(part.status, PartStatus::Dead);
    }

    #[tokio::test]
    async fn a_part_that_ends_because_the_coordinator_stops_is_stopped() {
        let health = Arc::new(Liveness::default());
        let (stop, stopping) = watch::channel(false);
        supervised(health.clone(), "reconciler", stopping, move || {
            let _ = stop.send(true);
            async {}
        })
        .await;
        assert_eq!(health.snapshot()["reconciler"].status, PartStatus::Stopped);
    }

    /// `/healthz` over the whole router: healthy while every part runs, 503 naming the part
    /// once one is dead.
    #[tokio::test]
    async fn healthz_answers_503_once_a_part_is_dead() {
        use tower::Service;
        let dir = tempfile::tempdir().expect("dir");
        let text = format!(
            "listen = \"127.0.0.1:0\"\ndatabase = '{}'\n",
            dir.path().join("h.sqlite").display()
        );
        let config = crate::coordinator::Config::parse(&text, "test").expect("config");
        let (_stop, stopping) = watch::channel(false);
        let state = crate::coordinator::AppState::new(config, stopping.clone()).expect("state");
        state.health.set("dispatcher", PartStatus::Running);
        let ask = |state: &crate::coordinator::AppState| {
            let mut router = crate::coordinator::router(state.clone());
            async move {
                let request = axum::http::Request::get("/healthz")
                    .body(axum::body::Body::empty())
                    .expect("request");
                let Ok(response) = router.call(request).await;
                let status = response.status().as_u16();
                let body = axum::body::to_bytes(response.into_body(), 1 << 16)
                    .await
                    .expect("body");
                let health: crate::wire::Health = serde_json::from_slice(&body).expect("JSON");
                (status, health)
            }
        };
        let (status, health) = ask(&state).await;
        assert_eq!(status, 200, "{health:?}");
        assert_eq!(health.parts["store"].status, PartStatus::Running);
        assert_eq!(health.parts["writer"].status, PartStatus::Running);

        // A part that ends while the coordinator runs.
        supervised(state.health.clone(), "dispatcher", stopping, || async {}).await;
        let (status, health) = ask(&state).await;
        assert_eq!(status, 503);
        assert_eq!(health.status, crate::wire::HealthStatus::Unavailable);
        assert_eq!(health.parts["dispatcher"].status, PartStatus::Dead);
    }
}
