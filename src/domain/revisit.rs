//! When the retry/failover gate must be looked at again. The gate was decided for what each
//! connector promised (idempotency, lookup, key retention, timeout, which resource each
//! operation creates) and for the providers, releases and tools known then. A change of a
//! promise — a shortened key retention above all — or the first sighting of something new
//! is a *revisit*: the coordinator records it in the audit with what changed, old → new.
//!
//! Here only the comparison: pure, over two contracts as the coordinator stored and read
//! them. Storing them, and noticing first sightings, is the store's and the coordinator's.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::vocab::RevisitKind;

/// What one connector promises, as the gate relies on it. Stored as JSON, compared at start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnectorContract {
    pub supports_idempotency: bool,
    pub supports_lookup: bool,
    pub key_retention_secs: u64,
    pub timeout_ms: u64,
    /// Operation → the downstream resource it creates.
    #[serde(default)]
    pub operations: BTreeMap<String, String>,
}

/// One thing that changed, as the audit records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub kind: RevisitKind,
    /// The field (`key_retention_secs`, `timeout_ms`, …) or, for an operation, its name.
    pub field: String,
    /// The value before; `None` when there was none (a first sighting).
    pub old: Option<String>,
    pub new: String,
}

impl Change {
    fn of(kind: RevisitKind, field: &str, old: Option<String>, new: String) -> Change {
        Change {
            kind,
            field: field.to_string(),
            old,
            new,
        }
    }
}

/// The text a value of the contract is recorded with; an operation that is gone is `none`.
const GONE: &str = "none";

/// What changed from `old` to `new`, in a fixed order: the promises first, then the
/// operations by name. An unchanged contract gives nothing.
pub fn contract_changes(old: &ConnectorContract, new: &ConnectorContract) -> Vec<Change> {
    let mut out = Vec::new();
    if new.key_retention_secs != old.key_retention_secs {
        let kind = if new.key_retention_secs < old.key_retention_secs {
            RevisitKind::RetentionShortened
        } else {
            RevisitKind::ContractChanged
        };
        out.push(Change::of(
            kind,
            "key_retention_secs",
            Some(old.key_retention_secs.to_string()),
            new.key_retention_secs.to_string(),
        ));
    }
    for (field, before, after) in [
        (
            "supports_idempotency",
            old.supports_idempotency,
            new.supports_idempotency,
        ),
        ("supports_lookup", old.supports_lookup, new.supports_lookup),
    ] {
        if before != after {
            out.push(Change::of(
                RevisitKind::ContractChanged,
                field,
                Some(before.to_string()),
                after.to_string(),
            ));
        }
    }
    if new.timeout_ms != old.timeout_ms {
        out.push(Change::of(
            RevisitKind::ContractChanged,
            "timeout_ms",
            Some(old.timeout_ms.to_string()),
            new.timeout_ms.to_string(),
        ));
    }
    for (operation, resource) in &new.operations {
        match old.operations.get(operation) {
            None => out.push(Change::of(
                RevisitKind::OperationFirstSeen,
                operation,
                None,
                resource.clone(),
            )),
            Some(before) if before != resource => out.push(Change::of(
                RevisitKind::ContractChanged,
                operation,
                Some(before.clone()),
                resource.clone(),
            )),
            Some(_) => {}
        }
    }
    for (operation, resource) in &old.operations {
        if !new.operations.contains_key(operation) {
            out.push(Change::of(
                RevisitKind::ContractChanged,
                operation,
                Some(resource.clone()),
                GONE.to_string(),
            ));
        }
    }
    out
}

/// A connector seen for the first time: one change that carries its whole contract.
pub fn new_provider(contract: &ConnectorContract) -> Change {
    let operations: Vec<String> = contract
        .operations
        .iter()
        .map(|(op, resource)| format!("{op}={resource}"))
        .collect();
    Change::of(
        RevisitKind::ProviderFirstSeen,
        "contract",
        None,
        format!(
            "supports_idempotency={}, supports_lookup={}, key_retention_secs={}, timeout_ms={}, operations=[{}]",
            contract.supports_idempotency,
            contract.supports_lookup,
            contract.key_retention_secs,
            contract.timeout_ms,
            operations.join(", ")
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn erp() -> ConnectorContract {
        ConnectorContract {
            supports_idempotency: true,
            supports_lookup: true,
            key_retention_secs: 86_400,
            timeout_ms: 2_000,
            operations: [(
                "purchase_order.create".to_string(),
                "purchase-orders".to_string(),
            )]
            .into_iter()
            .collect(),
        }
    }

    #[test]
    fn an_unchanged_contract_asks_for_nothing() {
        assert!(contract_changes(&erp(), &erp()).is_empty());
    }

    #[test]
    fn a_shortened_retention_is_told_apart_from_a_longer_one() {
        let mut shorter = erp();
        shorter.key_retention_secs = 3_600;
        let changes = contract_changes(&erp(), &shorter);
        assert_eq!(
            changes,
            vec![Change::of(
                RevisitKind::RetentionShortened,
                "key_retention_secs",
                Some("86400".into()),
                "3600".into()
            )]
        );
        let longer = contract_changes(&shorter, &erp());
        assert_eq!(longer[0].kind, RevisitKind::ContractChanged);
    }

    #[test]
    fn operations_added_moved_and_gone_are_each_named() {
        let mut new = erp();
        new.operations
            .insert("payment.initiate".into(), "payments".into());
        new.operations
            .insert("purchase_order.create".into(), "orders-v2".into());
        new.supports_lookup = false;
        let mut old = erp();
        old.operations
            .insert("inventory.reserve".into(), "inventory-reservations".into());
        let changes = contract_changes(&old, &new);
        let said: Vec<(RevisitKind, &str, Option<&str>, &str)> = changes
            .iter()
            .map(|c| (c.kind, c.field.as_str(), c.old.as_deref(), c.new.as_str()))
            .collect();
        assert_eq!(
            said,
            vec![
                (
                    RevisitKind::ContractChanged,
                    "supports_lookup",
                    Some("true"),
                    "false"
                ),
                (
                    RevisitKind::OperationFirstSeen,
                    "payment.initiate",
                    None,
                    "payments"
                ),
                (
                    RevisitKind::ContractChanged,
                    "purchase_order.create",
                    Some("purchase-orders"),
                    "orders-v2"
                ),
                (
                    RevisitKind::ContractChanged,
                    "inventory.reserve",
                    Some("inventory-reservations"),
                    "none"
                ),
            ]
        );
    }
}
