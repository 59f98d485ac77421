//! The shared state of one sandbox: faults in force, records, the fault dice, the clock
//! and the webhook queue.
//!
//! Cloning is cheap (one `Arc`). Every lock is held for a single short operation and
//! never across an await.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde_json::{Map, Value};

use super::clock::{Clock, SystemClock};
use super::faults::{FaultSpec, Probability};
use super::rng::SplitMix64;
use super::store::{
    CreateOutcome, EffectsSummary, ExternalRef, KeyPolicy, Record, Resource, Store,
};
use super::webhooks::{EventId, WebhookEvent, WebhookQueue, WebhookTarget};

/// Knobs a test or a reproducible run sets; [`Default`] is the system clock and a seed
/// taken from it.
#[derive(Clone)]
pub struct SandboxOptions {
    /// Seed for fault decisions; `None` seeds from the clock.
    pub seed: Option<u64>,
    pub clock: Arc<dyn Clock>,
}

impl Default for SandboxOptions {
    fn default() -> Self {
        Self {
            seed: None,
            clock: Arc::new(SystemClock),
        }
    }
}

/// The state behind one sandbox server.
#[derive(Clone)]
pub struct SandboxState {
    inner: Arc<Inner>,
}

struct Inner {
    faults: Mutex<FaultSpec>,
    dice: Mutex<SplitMix64>,
    store: Mutex<Store>,
    clock: Arc<dyn Clock>,
    seed: u64,
    instance: String,
    next_event: AtomicU64,
    /// Creations whose response was lost by `drop_first`.
    dropped_first: AtomicU64,
    /// Lookup requests received, answered or not.
    lookups: AtomicU64,
    webhooks: Option<WebhookQueue>,
}

/// Six hex digits that tell this instance from earlier ones: the seed mixed with the wall
/// clock's nanoseconds and the process id, so a restart with the same `--seed` (same fault
/// decisions) still hands out new ids. Not derived from the injectable clock on purpose: a
/// manual clock repeats, a restart does not.
fn instance_tag(seed: u64) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let mut mix = SplitMix64::new(seed ^ nanos.rotate_left(17) ^ u64::from(std::process::id()));
    format!("{:06x}", mix.next_u64() & 0xFF_FFFF)
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every critical section leaves the data consistent, so a panic elsewhere does not
    // make it unusable.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl SandboxState {
    pub fn new(faults: FaultSpec, webhook: Option<WebhookTarget>) -> Self {
        Self::with_options(faults, webhook, SandboxOptions::default())
    }

    pub fn with_options(
        faults: FaultSpec,
        webhook: Option<WebhookTarget>,
        options: SandboxOptions,
    ) -> Self {
        let seed = options.seed.unwrap_or_else(|| options.clock.now_ms());
        let instance = instance_tag(seed);
        Self {
            inner: Arc::new(Inner {
                faults: Mutex::new(faults),
                dice: Mutex::new(SplitMix64::new(seed)),
                store: Mutex::new(Store::with_instance(&instance)),
                clock: options.clock,
                seed,
                instance,
                next_event: AtomicU64::new(1),
                dropped_first: AtomicU64::new(0),
                lookups: AtomicU64::new(0),
                webhooks: webhook.map(WebhookQueue::new),
            }),
        }
    }

    /// The faults in force now.
    pub fn faults(&self) -> FaultSpec {
        lock(&self.inner.faults).clone()
    }

    /// Replaces every fault setting at once; requests already past a decision keep it.
    /// `drop_first` counts again from the next creation.
    pub fn set_faults(&self, faults: FaultSpec) {
        tracing::info!(faults = %faults, "sandbox faults replaced");
        *lock(&self.inner.faults) = faults;
        self.inner.dropped_first.store(0, Ordering::SeqCst);
    }

    /// The seed of the fault decisions, for reproducing a run.
    pub fn seed(&self) -> u64 {
        self.inner.seed
    }

    /// This instance's tag, part of every downstream id and webhook event id it hands out
    /// (`po-<tag>-1`, `evt-<tag>-1`).
    pub fn instance(&self) -> &str {
        &self.inner.instance
    }

    pub fn now_ms(&self) -> u64 {
        self.inner.clock.now_ms()
    }

    /// Whether this creation's response is one of the first `n` to be lost; counts it if so.
    pub(crate) fn take_first_drop(&self, n: u64) -> bool {
        n > 0
            && self
                .inner
                .dropped_first
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |d| {
                    (d < n).then_some(d + 1)
                })
                .is_ok()
    }

    /// Draws one fault decision.
    pub(crate) fn roll(&self, p: Probability) -> bool {
        !p.is_never() && lock(&self.inner.dice).chance(p.get())
    }

    /// Creates, replays or refuses as the key and the current faults decide; every true
    /// creation queues a webhook.
    pub fn create(
        &self,
        resource: Resource,
        key: Option<ExternalRef>,
        body: Map<String, Value>,
    ) -> CreateOutcome {
        let faults = self.faults();
        let policy = KeyPolicy {
            retention_ms: faults.retention_ms(),
            ignore_keys: faults.ignore_keys,
        };
        let now_ms = self.now_ms();
        let outcome = lock(&self.inner.store).create(resource, key, body, now_ms, policy);
        if let CreateOutcome::Created(record) = &outcome {
            tracing::debug!(
                resource = %resource,
                id = %record.id,
                external_ref = record.external_ref.as_ref().map(ExternalRef::as_str),
                "record created"
            );
            if let Some(queue) = &self.inner.webhooks {
                let seq = self.inner.next_event.fetch_add(1, Ordering::Relaxed);
                let event = WebhookEvent {
                    event_id: EventId::new(&self.inner.instance, seq),
                    action_key: record.external_ref.clone(),
                    resource,
                    downstream_id: record.id.clone(),
                    status: "created".to_owned(),
                    occurred_at_ms: record.created_at_ms,
                };
                queue.enqueue(event, faults.redeliver.max(1));
            }
        }
        outcome
    }

    /// The first record ever made of `resource`.
    pub fn first_record(&self, resource: Resource) -> Option<Record> {
        lock(&self.inner.store).first_record(resource)
    }

    /// The record a key refers to, unless the current retention forgot it.
    pub fn lookup(&self, resource: Resource, key: &ExternalRef) -> Option<Record> {
        let retention_ms = self.faults().retention_ms();
        let now_ms = self.now_ms();
        lock(&self.inner.store).lookup(resource, key, now_ms, retention_ms)
    }

    /// True creations made under one key.
    /// Count one lookup request received.
    pub(crate) fn count_lookup(&self) {
        self.inner.lookups.fetch_add(1, Ordering::Relaxed);
    }

    /// Lookup requests received so far, whatever they were answered: the load lookups put
    /// on this downstream.
    pub fn lookups_received(&self) -> u64 {
        self.inner.lookups.load(Ordering::Relaxed)
    }

    pub fn effects_for(&self, key: &ExternalRef) -> u64 {
        lock(&self.inner.store).effects_for(key)
    }

    /// Creates under one key answered with the first result instead of a new effect.
    pub fn replays_for(&self, key: &ExternalRef) -> u64 {
        lock(&self.inner.store).replays_for(key)
    }

    pub fn effects_summary(&self) -> EffectsSummary {
        lock(&self.inner.store).summary()
    }
}
