//! The sandbox's in-memory records and its ground truth for duplicate effects.
//!
//! Each resource keeps its records in creation order and an idempotency map from
//! external reference (the `Idempotency-Key` the caller presented) to the record it
//! created and when. Every true creation is counted per external reference, whether it
//! came from a first use of a key, a key forgotten after retention or a key ignored on
//! purpose: those counts are the ground truth for duplicate effects.
//!
//! The store is plain data with no locking and no clock: callers pass the time and the
//! key policy in, and hold whatever lock they use only for one call.

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// What a downstream POST creates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Resource {
    PurchaseOrders,
    InventoryReservations,
    Payments,
}

impl Resource {
    pub const ALL: [Resource; 3] = [
        Resource::PurchaseOrders,
        Resource::InventoryReservations,
        Resource::Payments,
    ];

    /// The path segment, e.g. `purchase-orders`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::PurchaseOrders => "purchase-orders",
            Self::InventoryReservations => "inventory-reservations",
            Self::Payments => "payments",
        }
    }

    /// The prefix of the downstream ids this resource hands out.
    pub fn id_prefix(self) -> &'static str {
        match self {
            Self::PurchaseOrders => "po-",
            Self::InventoryReservations => "inv-",
            Self::Payments => "pay-",
        }
    }

    fn index(self) -> usize {
        match self {
            Self::PurchaseOrders => 0,
            Self::InventoryReservations => 1,
            Self::Payments => 2,
        }
    }
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a value is not a resource or an external reference.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    #[error("unknown resource; expected purchase-orders, inventory-reservations or payments")]
    UnknownResource,
    #[error(
        "an idempotency key must be 1 to {max} visible ASCII characters",
        max = ExternalRef::MAX_LEN
    )]
    BadExternalRef,
}

impl FromStr for Resource {
    type Err = StoreError;
    fn from_str(s: &str) -> Result<Self, StoreError> {
        Self::ALL
            .into_iter()
            .find(|r| r.as_str() == s)
            .ok_or(StoreError::UnknownResource)
    }
}

/// The caller's reference for a record: the `Idempotency-Key` it presented (for the
/// coordinator, its action key).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ExternalRef(String);

impl ExternalRef {
    pub const MAX_LEN: usize = 255;

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromStr for ExternalRef {
    type Err = StoreError;
    fn from_str(s: &str) -> Result<Self, StoreError> {
        let valid =
            !s.is_empty() && s.len() <= Self::MAX_LEN && s.bytes().all(|b| b.is_ascii_graphic());
        valid
            .then(|| Self(s.to_owned()))
            .ok_or(StoreError::BadExternalRef)
    }
}

impl TryFrom<String> for ExternalRef {
    type Error = StoreError;
    fn try_from(s: String) -> Result<Self, StoreError> {
        s.parse()
    }
}

impl From<ExternalRef> for String {
    fn from(r: ExternalRef) -> String {
        r.0
    }
}

impl fmt::Display for ExternalRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The id the sandbox gives a record: the resource prefix, the sandbox instance's tag and a
/// sequence number, e.g. `po-7f3a9c-12` (`po-12` for a store without a tag). The tag keeps
/// ids unique across sandbox restarts, whose counters start again at 1 while a
/// coordinator's database remembers every id it was given.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct DownstreamId(String);

impl DownstreamId {
    fn new(resource: Resource, instance: &str, seq: u64) -> Self {
        if instance.is_empty() {
            Self(format!("{}{seq}", resource.id_prefix()))
        } else {
            Self(format!("{}{instance}-{seq}", resource.id_prefix()))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for DownstreamId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One created record, as a lookup returns it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub id: DownstreamId,
    pub resource: Resource,
    /// Absent only when keys were ignored and the caller sent none.
    pub external_ref: Option<ExternalRef>,
    /// The JSON body as received.
    pub body: Map<String, Value>,
    /// Hex SHA-256 of the body's canonical form (see [`body_hash`]).
    pub body_hash: String,
    pub created_at_ms: u64,
}

/// How the current faults treat idempotency keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct KeyPolicy {
    /// Keys are forgotten this long after their record was created.
    pub retention_ms: Option<u64>,
    /// Every POST creates a new record.
    pub ignore_keys: bool,
}

/// What a POST did.
#[derive(Debug, Clone, PartialEq)]
pub enum CreateOutcome {
    /// A true effect: a new record.
    Created(Record),
    /// The key was known with the same body: the first result, nothing new.
    Replayed(Record),
    /// The key was known with a different body: refused, nothing new.
    Mismatch(Record),
}

/// Totals over every action key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct EffectsSummary {
    /// True creations, including those without a key.
    pub effects: u64,
    /// Distinct keys with at least one effect.
    pub keys: u64,
    /// Effects beyond the first per key.
    pub duplicate_effects: u64,
}

#[derive(Debug, Clone, Copy)]
struct KeyEntry {
    record: usize,
    created_at_ms: u64,
}

impl KeyEntry {
    fn live(self, now_ms: u64, retention_ms: Option<u64>) -> bool {
        retention_ms.is_none_or(|r| now_ms.saturating_sub(self.created_at_ms) < r)
    }
}

#[derive(Debug, Default)]
struct Table {
    records: Vec<Record>,
    by_ref: HashMap<ExternalRef, KeyEntry>,
}

/// All records and effect counts.
#[derive(Debug, Default)]
pub struct Store {
    /// The instance tag in every downstream id; empty for none.
    instance: String,
    tables: [Table; 3],
    effects: HashMap<ExternalRef, u64>,
    replays: HashMap<ExternalRef, u64>,
    unkeyed_effects: u64,
}

impl Store {
    /// A store whose ids carry no instance tag (`po-1`).
    pub fn new() -> Self {
        Self::default()
    }

    /// A store whose ids carry `instance` (`po-<instance>-1`).
    pub fn with_instance(instance: &str) -> Self {
        Self {
            instance: instance.to_owned(),
            ..Self::default()
        }
    }

    /// Creates a record, or replays or refuses one, as the key and the policy decide.
    pub fn create(
        &mut self,
        resource: Resource,
        key: Option<ExternalRef>,
        body: Map<String, Value>,
        now_ms: u64,
        policy: KeyPolicy,
    ) -> CreateOutcome {
        let hash = body_hash(&body);
        let table = &mut self.tables[resource.index()];
        let known = key
            .as_ref()
            .filter(|_| !policy.ignore_keys)
            .and_then(|k| table.by_ref.get(k))
            .filter(|e| e.live(now_ms, policy.retention_ms))
            .map(|e| &table.records[e.record]);
        if let Some(existing) = known {
            return if existing.body_hash == hash {
                let replayed = existing.clone();
                if let Some(key) = key {
                    *self.replays.entry(key).or_default() += 1;
                }
                CreateOutcome::Replayed(replayed)
            } else {
                CreateOutcome::Mismatch(existing.clone())
            };
        }

        let index = table.records.len();
        let record = Record {
            id: DownstreamId::new(resource, &self.instance, index as u64 + 1),
            resource,
            external_ref: key.clone(),
            body,
            body_hash: hash,
            created_at_ms: now_ms,
        };
        table.records.push(record.clone());
        match key {
            Some(key) => {
                let entry = KeyEntry {
                    record: index,
                    created_at_ms: now_ms,
                };
                // Under ignore_keys a live entry keeps pointing at the first record, so
                // lookups keep finding it.
                let current = table.by_ref.get(&key).copied();
                if current.is_none_or(|e| !e.live(now_ms, policy.retention_ms)) {
                    table.by_ref.insert(key.clone(), entry);
                }
                *self.effects.entry(key).or_default() += 1;
            }
            None => self.unkeyed_effects += 1,
        }
        CreateOutcome::Created(record)
    }

    /// The first record ever made of `resource`.
    pub fn first_record(&self, resource: Resource) -> Option<Record> {
        self.tables[resource.index()].records.first().cloned()
    }

    /// The record a key refers to, unless the key was forgotten.
    pub fn lookup(
        &self,
        resource: Resource,
        key: &ExternalRef,
        now_ms: u64,
        retention_ms: Option<u64>,
    ) -> Option<Record> {
        let table = &self.tables[resource.index()];
        table
            .by_ref
            .get(key)
            .filter(|e| e.live(now_ms, retention_ms))
            .map(|e| table.records[e.record].clone())
    }

    /// True creations made under one key, across all resources.
    pub fn effects_for(&self, key: &ExternalRef) -> u64 {
        self.effects.get(key).copied().unwrap_or(0)
    }

    /// Creates under one key answered by replaying the first result (no new effect).
    pub fn replays_for(&self, key: &ExternalRef) -> u64 {
        self.replays.get(key).copied().unwrap_or(0)
    }

    pub fn summary(&self) -> EffectsSummary {
        let keyed: u64 = self.effects.values().sum();
        EffectsSummary {
            effects: keyed + self.unkeyed_effects,
            keys: self.effects.len() as u64,
            duplicate_effects: self.effects.values().map(|n| n.saturating_sub(1)).sum(),
        }
    }
}

/// Hex SHA-256 of the body's canonical JSON: object keys sorted, no whitespace, numbers
/// and strings as serde_json prints them. Two bodies that differ only in key order or
/// spacing hash the same.
pub fn body_hash(body: &Map<String, Value>) -> String {
    let mut canonical = String::new();
    write_canonical_object(body, &mut canonical);
    hex::encode(Sha256::digest(canonical.as_bytes()))
}

fn write_canonical_object(map: &Map<String, Value>, out: &mut String) {
    let mut keys: Vec<&String> = map.keys().collect();
    keys.sort();
    out.push('{');
    for (i, key) in keys.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&Value::String(key.clone()).to_string());
        out.push(':');
        if let Some(value) = map.get(key) {
            write_canonical(value, out);
        }
    }
    out.push('}');
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => write_canonical_object(map, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
