//! Webhook delivery: one event per true creation, posted to the configured receiver.
//!
//! Creations enqueue events on a bounded channel without waiting; one delivery task
//! drains it and posts each event `redeliver` times (the value in force when the record
//! was created), with the same event id every time. Each post is retried on network
//! errors, 429 and 5xx with capped exponential backoff; other answers end it. A full
//! queue drops the event with a warning: the receiver can still reconcile by lookup.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use reqwest::{StatusCode, Url};
use serde::{Deserialize, Serialize};
use tokio::sync::{Semaphore, mpsc};

use super::store::{DownstreamId, ExternalRef, Resource};

const QUEUE_CAPACITY: usize = 4096;
/// Deliveries in flight at once. A receiver answers a webhook after its durable write, so a
/// few at a time fell behind creations at a few hundred a second and the queue overflowed.
const CONCURRENT_DELIVERIES: usize = 64;
const POSTS_PER_COPY: u32 = 5;
const FIRST_BACKOFF_MS: u64 = 100;
const MAX_BACKOFF_MS: u64 = 2_000;
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// Where webhooks go and the bearer token presented there.
#[derive(Clone)]
pub struct WebhookTarget {
    pub url: Url,
    pub token: Option<String>,
}

impl fmt::Debug for WebhookTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WebhookTarget")
            .field("url", &self.url.as_str())
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

/// The id of one webhook event, `evt-<instance>-<n>`; the same on every redelivery. The
/// sandbox instance's tag keeps event ids unique across restarts, so a receiver that
/// deduplicates by event id never mistakes a new event for an old one.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct EventId(String);

impl EventId {
    pub(crate) fn new(instance: &str, seq: u64) -> Self {
        if instance.is_empty() {
            Self(format!("evt-{seq}"))
        } else {
            Self(format!("evt-{instance}-{seq}"))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for EventId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The JSON body of a webhook post.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebhookEvent {
    pub event_id: EventId,
    /// The `Idempotency-Key` of the creating request; `null` only when keys were ignored
    /// and none was sent.
    pub action_key: Option<ExternalRef>,
    pub resource: Resource,
    pub downstream_id: DownstreamId,
    /// Always `created`.
    pub status: String,
    pub occurred_at_ms: u64,
}

struct Delivery {
    event: WebhookEvent,
    copies: u32,
}

/// The sending side of the queue. The delivery task starts on the first event, inside
/// whatever Tokio runtime is current then, and ends when the queue is dropped.
pub(crate) struct WebhookQueue {
    tx: mpsc::Sender<Delivery>,
    idle: Mutex<Option<(mpsc::Receiver<Delivery>, WebhookTarget)>>,
}

impl WebhookQueue {
    pub(crate) fn new(target: WebhookTarget) -> Self {
        let (tx, rx) = mpsc::channel(QUEUE_CAPACITY);
        Self {
            tx,
            idle: Mutex::new(Some((rx, target))),
        }
    }

    /// Queues an event for `copies` deliveries without waiting.
    pub(crate) fn enqueue(&self, event: WebhookEvent, copies: u32) {
        if !self.start_worker() {
            tracing::warn!(event_id = %event.event_id, "no async runtime; webhook not sent");
            return;
        }
        let event_id = event.event_id.clone();
        match self.tx.try_send(Delivery { event, copies }) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(_)) => {
                tracing::warn!(%event_id, "webhook queue full; event dropped");
            }
            Err(mpsc::error::TrySendError::Closed(_)) => {
                tracing::warn!(%event_id, "webhook delivery stopped; event dropped");
            }
        }
    }

    /// Starts the delivery task if it is not running; false when there is no runtime.
    fn start_worker(&self) -> bool {
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        if idle.is_none() {
            return true;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return false;
        };
        if let Some((rx, target)) = idle.take() {
            runtime.spawn(deliver_all(rx, target));
        }
        true
    }
}

async fn deliver_all(mut rx: mpsc::Receiver<Delivery>, target: WebhookTarget) {
    let built = crate::tls::client(None)
        .map_err(|e| e.to_string())
        .and_then(|b| {
            b.timeout(REQUEST_TIMEOUT)
                .no_proxy()
                .build()
                .map_err(|e| e.to_string())
        });
    let client = match built {
        Ok(client) => client,
        Err(err) => {
            tracing::error!(error = %err, "cannot build the webhook client; webhooks disabled");
            return;
        }
    };
    let target = Arc::new(target);
    let slots = Arc::new(Semaphore::new(CONCURRENT_DELIVERIES));
    while let Some(delivery) = rx.recv().await {
        let Ok(slot) = slots.clone().acquire_owned().await else {
            return;
        };
        let (client, target) = (client.clone(), target.clone());
        tokio::spawn(async move {
            for copy in 1..=delivery.copies {
                post_with_retries(&client, &target, &delivery.event, copy).await;
            }
            drop(slot);
        });
    }
}

async fn post_with_retries(
    client: &reqwest::Client,
    target: &WebhookTarget,
    event: &WebhookEvent,
    copy: u32,
) {
    for attempt in 1..=POSTS_PER_COPY {
        let mut request = client.post(target.url.clone()).json(event);
        if let Some(token) = &target.token {
            request = request.bearer_auth(token);
        }
        let retryable = match request.send().await {
            Ok(response) if response.status().is_success() => {
                tracing::debug!(event_id = %event.event_id, copy, "webhook delivered");
                return;
            }
            Ok(response) => {
                let status = response.status();
                tracing::warn!(event_id = %event.event_id, copy, %status, "webhook refused");
                status.is_server_error() || status == StatusCode::TOO_MANY_REQUESTS
            }
            Err(err) => {
                tracing::warn!(event_id = %event.event_id, copy, error = %err, "webhook post failed");
                true
            }
        };
        if !retryable || attempt == POSTS_PER_COPY {
            break;
        }
        tokio::time::sleep(backoff(attempt)).await;
    }
    tracing::warn!(event_id = %event.event_id, copy, "webhook given up");
}

/// Wait before post `attempt + 1`: 100 ms doubling per attempt, at most 2 s.
fn backoff(attempt: u32) -> Duration {
    let factor = 1u64 << attempt.saturating_sub(1).min(16);
    Duration::from_millis(FIRST_BACKOFF_MS.saturating_mul(factor).min(MAX_BACKOFF_MS))
}

#[cfg(test)]
mod tests {
    use super::backoff;
    use std::time::Duration;

    #[test]
    fn backoff_doubles_and_is_capped() {
        let waits: Vec<Duration> = (1..=7).map(backoff).collect();
        let ms: Vec<u128> = waits.iter().map(Duration::as_millis).collect();
        assert_eq!(ms, [100, 200, 400, 800, 1600, 2000, 2000]);
    }
}
