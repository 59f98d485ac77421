//! The gate's revisit signals, decided: at start, each configured connector's contract
//! against the one stored at the last start; while serving, the providers, releases and
//! tools an intent or attempt names against those seen before. What changed becomes a
//! revisit event in the audit (`store::ops::Revisits`).
//!
//! The first start on a database records its baseline without events: the gate was decided
//! for the configuration it starts with. Every later start compares, and so does every
//! coordinator of a shared database; the store makes one event of one change whoever sees
//! it.

use crate::coordinator::config::{Config, ConnectorConfig};
use crate::domain::revisit::{Change, ConnectorContract, contract_changes, new_provider};
use crate::domain::{ConsequenceTier, RevisitKind};
use crate::store::ops::*;
use crate::store::{Sighting, Store, StoreError};

/// What `connector` promises, as the gate relies on it.
pub fn contract_of(connector: &ConnectorConfig) -> ConnectorContract {
    ConnectorContract {
        supports_idempotency: connector.supports_idempotency,
        supports_lookup: connector.supports_lookup,
        key_retention_secs: connector.key_retention_secs,
        timeout_ms: connector.timeout_ms,
        operations: connector.operations.clone(),
    }
}

/// Compare every configured connector's contract with the stored one and store it, each
/// change recorded as a revisit event; on a database that never stored one, only store
/// them. Answers how many events were recorded.
pub fn compare_at_start(s: &mut Store, config: &Config, now: u64) -> Result<usize, StoreError> {
    let stored = s.contracts()?;
    let baseline = stored.is_empty();
    let mut recorded = 0;
    for connector in &config.connectors {
        let contract = contract_of(connector);
        let json = serde_json::to_string(&contract)?;
        let before = stored.iter().find(|(name, _)| *name == connector.name);
        let (old_json, changes) = match before {
            None if baseline => (None, Vec::new()),
            None => (None, vec![new_provider(&contract)]),
            Some((_, old_json)) => {
                let old: ConnectorContract = serde_json::from_str(old_json)?;
                if old == contract {
                    continue;
                }
                (Some(old_json.as_str()), contract_changes(&old, &contract))
            }
        };
        if s.replace_contract(&connector.name, old_json, &json, &changes, now)? {
            recorded += changes.len();
        }
    }
    // A connector is a provider too: an attempt that names it is no first sighting.
    let providers: Vec<Sighting> = config
        .connectors
        .iter()
        .map(|c| provider(&c.name))
        .collect();
    s.sight(&providers, None, None, now)?;
    Ok(recorded)
}

/// A provider by name.
pub fn provider(name: &str) -> Sighting {
    Sighting {
        kind: "provider",
        name: name.to_string(),
        variant: String::new(),
    }
}

/// A release by id.
pub fn release(id: &str) -> Sighting {
    Sighting {
        kind: "release",
        name: id.to_string(),
        variant: String::new(),
    }
}

/// A tool used at a consequence tier: a tool first seen at a mutating tier has gained a
/// side effect.
pub fn tool(name: &str, tier: ConsequenceTier) -> Sighting {
    Sighting {
        kind: "tool",
        name: name.to_string(),
        variant: tier.as_str().to_string(),
    }
}

/// The revisit event a first sighting makes, given the variants of the same name seen
/// before (a tool's earlier tiers).
pub fn first_sighting(sighting: &Sighting, before: &[String]) -> Change {
    let (kind, field) = match sighting.kind {
        "tool" => (RevisitKind::ToolFirstSeen, "consequence"),
        "release" => (RevisitKind::ReleaseFirstSeen, "release"),
        _ => (RevisitKind::ProviderFirstSeen, "provider"),
    };
    let new = if sighting.variant.is_empty() {
        sighting.name.clone()
    } else {
        sighting.variant.clone()
    };
    Change {
        kind,
        field: field.to_string(),
        old: (!before.is_empty()).then(|| before.join(", ")),
        new,
    }
}
