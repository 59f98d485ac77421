//! The simulated downstream: the sandbox's records and idempotency map (its ground truth of
//! effects per key), behind the faults a world was dealt. It answers as [`Call`]s, the same
//! data the HTTP connector produces, and keeps the webhooks it owes the coordinator.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Value, json};

use super::dice::Dice;
use crate::clock::{Clock, ManualClock};
use crate::coordinator::config::ConnectorConfig;
use crate::coordinator::core::call::{Call, CallFuture, Downstream, Reply};
use crate::domain::ActionKey;
use crate::domain::decision::Observation;
use crate::sandbox::store::{CreateOutcome, ExternalRef, KeyPolicy, Resource, Store};

/// The faults of one world's downstream: each a probability per request, but for the key
/// policy.
#[derive(Debug, Clone, PartialEq)]
pub struct Faults {
    /// Applied, then the connection drops before the answer.
    pub drop_after_commit: f64,
    /// Applied, and the answer comes after the connector's timeout.
    pub slow_after_commit: f64,
    /// Not applied: 503 with `Retry-After`.
    pub overload: f64,
    /// Not applied: 503 without `Retry-After`.
    pub bare_overload: f64,
    /// Applied, then a bare 503 (a proxy timing out after the write).
    pub bare_503_after_commit: f64,
    /// Applied, then 303 See Other ("created, see there").
    pub see_other_after_commit: f64,
    /// Not applied: 422, the downstream refuses the order.
    pub refuse: f64,
    /// Not applied: the connection could not be opened.
    pub connect_fail: f64,
    /// A lookup answers 500.
    pub lookup_fail: f64,
    /// A created record is announced by webhook.
    pub webhook: f64,
    /// How many times a webhook is delivered, at most.
    pub deliveries: u32,
    /// How long the downstream really keeps a key; `None`: for ever.
    pub retention_ms: Option<u64>,
    /// Every create makes a new record, key or not.
    pub ignore_keys: bool,
    /// What `Retry-After` says, in seconds.
    pub retry_after_secs: u64,
    /// A create's or a lookup's success names a record of the same kind made under another
    /// key (the first such record in key order, as a downstream answering from the wrong row
    /// would), with no key in the answer to tell: what its key really did stays unproven.
    pub wrong_record: f64,
    /// Every success names its record's key as `external_ref`, as the sandbox does (a
    /// wrong record's answer then names the other key).
    pub names_keys: bool,
}

impl Faults {
    /// No fault at all.
    pub fn none() -> Faults {
        Faults {
            drop_after_commit: 0.0,
            slow_after_commit: 0.0,
            overload: 0.0,
            bare_overload: 0.0,
            bare_503_after_commit: 0.0,
            see_other_after_commit: 0.0,
            refuse: 0.0,
            connect_fail: 0.0,
            lookup_fail: 0.0,
            webhook: 0.0,
            deliveries: 1,
            retention_ms: None,
            ignore_keys: false,
            retry_after_secs: 1,
            wrong_record: 0.0,
            names_keys: false,
        }
    }

    /// A world's faults, dealt from `dice`: each fault is on in about half the worlds, at a
    /// rate of up to a third of requests.
    pub fn deal(dice: &mut Dice) -> Faults {
        let rate = |dice: &mut Dice| {
            if dice.chance(0.5) {
                dice.between(1, 33) as f64 / 100.0
            } else {
                0.0
            }
        };
        Faults {
            drop_after_commit: rate(dice),
            slow_after_commit: rate(dice),
            overload: rate(dice),
            bare_overload: rate(dice),
            bare_503_after_commit: rate(dice),
            // Dealt apart (`Setup::deal`), so the worlds of seeds dealt before it stay
            // the same.
            see_other_after_commit: 0.0,
            refuse: rate(dice) / 3.0,
            connect_fail: rate(dice),
            lookup_fail: rate(dice),
            webhook: if dice.chance(0.6) { 0.8 } else { 0.0 },
            deliveries: dice.between(1, 3) as u32,
            retention_ms: None,
            ignore_keys: false,
            retry_after_secs: dice.between(1, 5),
            // Dealt apart (`Setup::deal`), as `see_other_after_commit`.
            wrong_record: 0.0,
            names_keys: false,
        }
    }
}

/// A webhook the downstream owes the coordinator.
#[derive(Debug, Clone, PartialEq)]
pub struct Webhook {
    pub event_id: String,
    pub action_key: String,
    pub downstream_id: String,
    /// Deliveries still to make.
    pub left: u32,
}

/// The downstream's state.
#[derive(Debug)]
pub struct World {
    pub faults: Faults,
    store: Store,
    /// Every record created under each key, in order.
    records: HashMap<String, Vec<String>>,
    pub webhooks: Vec<Webhook>,
    events: u64,
    /// Choices of the current step (set by the world before each step).
    pub dice: Dice,
    /// Creates received, per key: the time each landed.
    pub landings: HashMap<String, Vec<u64>>,
    /// Keys whose last create landed and whose outcome the coordinator has not learnt for
    /// certain since: no answer recorded, an answer that proves nothing, or no lookup yet.
    pub unproven: HashSet<String>,
    /// Keys some answer about named another key's record without naming any key
    /// (`Faults::wrong_record` where the downstream does not name keys).
    pub lied_about: HashSet<String>,
}

impl World {
    pub fn new(faults: Faults) -> World {
        World {
            faults,
            store: Store::new(),
            records: HashMap::new(),
            webhooks: Vec::new(),
            events: 0,
            dice: Dice::new(0),
            landings: HashMap::new(),
            unproven: HashSet::new(),
            lied_about: HashSet::new(),
        }
    }

    fn policy(&self) -> KeyPolicy {
        KeyPolicy {
            retention_ms: self.faults.retention_ms,
            ignore_keys: self.faults.ignore_keys,
        }
    }

    /// True creations under `key`.
    pub fn effects_for(&self, key: &str) -> u64 {
        self.records.get(key).map_or(0, |r| r.len() as u64)
    }

    /// The records created under `key`, oldest first.
    pub fn records_for(&self, key: &str) -> &[String] {
        self.records.get(key).map_or(&[], Vec::as_slice)
    }

    /// Every key with an effect.
    pub fn keys_with_effects(&self) -> impl Iterator<Item = (&String, &Vec<String>)> {
        self.records.iter()
    }

    /// A create at `now`: what the caller hears.
    pub fn create(&mut self, resource: &str, key: &str, payload_json: &str, now: u64) -> Call {
        let f = self.faults.clone();
        if self.dice.chance(f.connect_fail) {
            return Call::Failed {
                observation: Observation::ConnectFailed,
                detail: "connection could not be opened".into(),
            };
        }
        if self.dice.chance(f.overload) {
            return reply(503, Some(f.retry_after_secs * 1000), json!({}));
        }
        if self.dice.chance(f.bare_overload) {
            return reply(503, None, Value::Null);
        }
        if self.dice.chance(f.refuse) {
            return reply(
                422,
                None,
                json!({"error": {"message": "the order was refused"}}),
            );
        }
        // As the sandbox answers: a body that is not a JSON object is refused before
        // anything is made.
        let Ok(Value::Object(body)) = serde_json::from_str::<Value>(payload_json) else {
            return reply(
                400,
                None,
                json!({"error": {"message": "the body must be a JSON object"}}),
            );
        };
        self.landings.entry(key.to_string()).or_default().push(now);
        self.unproven.insert(key.to_string());
        let (Ok(resource), Ok(external)) =
            (resource.parse::<Resource>(), key.parse::<ExternalRef>())
        else {
            return reply(404, None, json!({"error": {"message": "no such resource"}}));
        };
        let policy = self.policy();
        let answer = match self
            .store
            .create(resource, Some(external), body, now, policy)
        {
            CreateOutcome::Created(record) => {
                let id = record.id.as_str().to_string();
                self.records
                    .entry(key.to_string())
                    .or_default()
                    .push(id.clone());
                if self.dice.chance(f.webhook) {
                    self.events += 1;
                    self.webhooks.push(Webhook {
                        event_id: format!("evt-{}", self.events),
                        action_key: key.to_string(),
                        downstream_id: id.clone(),
                        left: self.dice.between(1, f.deliveries.max(1) as u64) as u32,
                    });
                }
                reply(201, None, self.record_body(&id, key, Some(false)))
            }
            CreateOutcome::Replayed(record) => reply(
                200,
                None,
                self.record_body(record.id.as_str(), key, Some(true)),
            ),
            CreateOutcome::Mismatch(_) => reply(
                409,
                None,
                json!({"error": {"message": "the key was used for another body"}}),
            ),
        };
        let answer = match answer {
            Call::Replied(r) if r.status < 300 => match self.wrong_record(key) {
                Some((owner, other)) => reply(
                    r.status,
                    None,
                    self.record_body(&other, &owner, Some(false)),
                ),
                None => Call::Replied(r),
            },
            other => other,
        };
        if self.dice.chance(f.drop_after_commit) {
            return Call::Failed {
                observation: Observation::ConnectionLostAfterSend,
                detail: "connection lost before a complete answer".into(),
            };
        }
        if self.dice.chance(f.slow_after_commit) {
            return Call::Failed {
                observation: Observation::TimeoutAfterSend,
                detail: "no answer before the connector timeout".into(),
            };
        }
        if self.dice.chance(f.bare_503_after_commit) {
            return reply(503, None, Value::Null);
        }
        // Drawn only where the fault is dealt: a world without it rolls as it always did.
        if f.see_other_after_commit > 0.0 && self.dice.chance(f.see_other_after_commit) {
            return reply(303, None, Value::Null);
        }
        answer
    }

    /// A lookup at `now`.
    pub fn lookup(&mut self, resource: &str, key: &str, now: u64) -> Call {
        if self.dice.chance(self.faults.lookup_fail) {
            return reply(500, None, Value::Null);
        }
        let (Ok(resource), Ok(external)) =
            (resource.parse::<Resource>(), key.parse::<ExternalRef>())
        else {
            return reply(404, None, Value::Null);
        };
        if let Some((owner, other)) = self.wrong_record(key) {
            return reply(200, None, self.record_body(&other, &owner, None));
        }
        // Either answer is proof of what the key holds now.
        self.unproven.remove(key);
        match self
            .store
            .lookup(resource, &external, now, self.faults.retention_ms)
        {
            Some(record) => reply(200, None, self.record_body(record.id.as_str(), key, None)),
            None => reply(404, None, json!({"error": {"message": "not found"}})),
        }
    }

    /// When the `wrong_record` fault strikes this answer about `key`: the record a
    /// downstream answering from the wrong row names instead, the first made under another
    /// key of the same kind (its action key's first part: `po`, `inv`, …). Drawn only where
    /// the fault is dealt, so a world without it rolls as it always did.
    fn wrong_record(&mut self, key: &str) -> Option<(String, String)> {
        let rate = self.faults.wrong_record;
        if rate <= 0.0 || !self.dice.chance(rate) {
            return None;
        }
        fn kind(key: &str) -> &str {
            key.split(':').next().unwrap_or_default()
        }
        let wanted = kind(key);
        let other = self
            .records
            .iter()
            .filter(|(k, ids)| k.as_str() != key && kind(k) == wanted && !ids.is_empty())
            .min_by(|a, b| a.0.cmp(b.0))
            .map(|(owner, ids)| (owner.clone(), ids[0].clone()))?;
        // Named with its own key, the wrong record is no receipt for this one, and the
        // coordinator can tell: only a lie that names no key is one it may believe.
        if !self.faults.names_keys {
            self.lied_about.insert(key.to_string());
        }
        Some(other)
    }

    /// The body of an answer naming record `id`, made under `key`: its `external_ref` too
    /// where the downstream names keys, and whether it was replayed (creates only).
    fn record_body(&self, id: &str, key: &str, replayed: Option<bool>) -> Value {
        let mut body = json!({"id": id});
        if let Some(replayed) = replayed {
            body["replayed"] = json!(replayed);
        }
        if self.faults.names_keys {
            body["external_ref"] = json!(key);
        }
        body
    }

    /// Whether `id` is a record the downstream made, under any key.
    pub fn holds_record(&self, id: &str) -> bool {
        self.records.values().any(|ids| ids.iter().any(|r| r == id))
    }
}

fn reply(status: u16, retry_after_ms: Option<u64>, body: Value) -> Call {
    Call::Replied(Reply {
        status,
        retry_after_ms,
        body,
    })
}

/// The simulated downstream as the coordinator's shells call it (an operator's reconcile
/// command looks keys up through it).
#[derive(Clone)]
pub struct Shared {
    pub world: Arc<Mutex<World>>,
    pub clock: ManualClock,
}

impl Shared {
    pub fn lock(&self) -> std::sync::MutexGuard<'_, World> {
        self.world.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Downstream for Shared {
    fn create<'a>(
        &'a self,
        _connector: &'a ConnectorConfig,
        resource: &'a str,
        key: &'a ActionKey,
        payload_json: &'a str,
    ) -> CallFuture<'a> {
        let call = self
            .lock()
            .create(resource, key.as_str(), payload_json, self.clock.now_ms());
        Box::pin(std::future::ready(call))
    }

    fn lookup<'a>(
        &'a self,
        _connector: &'a ConnectorConfig,
        resource: &'a str,
        key: &'a ActionKey,
    ) -> CallFuture<'a> {
        let call = self
            .lock()
            .lookup(resource, key.as_str(), self.clock.now_ms());
        Box::pin(std::future::ready(call))
    }
}
