//! Records, replays, retention and effect counts, without HTTP.

use serde_json::{Map, Value, json};

use super::{CreateOutcome, EffectsSummary, ExternalRef, KeyPolicy, Resource, Store, body_hash};

fn key(s: &str) -> ExternalRef {
    s.parse().expect("test key is valid")
}

fn body(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("test body must be an object, got {other}"),
    }
}

fn created(outcome: CreateOutcome) -> super::Record {
    match outcome {
        CreateOutcome::Created(record) => record,
        other => panic!("expected a creation, got {other:?}"),
    }
}

const KEEP: KeyPolicy = KeyPolicy {
    retention_ms: None,
    ignore_keys: false,
};

#[test]
fn first_post_creates_and_the_same_body_replays() {
    let mut store = Store::new();
    let first = created(store.create(
        Resource::PurchaseOrders,
        Some(key("po:acme:1")),
        body(json!({"qty": 3})),
        10,
        KEEP,
    ));
    assert_eq!(first.id.as_str(), "po-1");
    let again = store.create(
        Resource::PurchaseOrders,
        Some(key("po:acme:1")),
        body(json!({"qty": 3})),
        20,
        KEEP,
    );
    assert_eq!(again, CreateOutcome::Replayed(first));
    assert_eq!(store.effects_for(&key("po:acme:1")), 1);
}

#[test]
fn a_different_body_under_the_same_key_is_a_mismatch() {
    let mut store = Store::new();
    let k = Some(key("pay:acme:1"));
    created(store.create(
        Resource::Payments,
        k.clone(),
        body(json!({"amount": 5})),
        0,
        KEEP,
    ));
    let outcome = store.create(Resource::Payments, k, body(json!({"amount": 6})), 0, KEEP);
    assert!(matches!(outcome, CreateOutcome::Mismatch(_)));
    assert_eq!(store.summary().effects, 1);
}

#[test]
fn each_resource_numbers_its_own_ids() {
    let mut store = Store::new();
    let po = created(store.create(
        Resource::PurchaseOrders,
        Some(key("a")),
        Map::new(),
        0,
        KEEP,
    ));
    let inv = created(store.create(
        Resource::InventoryReservations,
        Some(key("b")),
        Map::new(),
        0,
        KEEP,
    ));
    let pay = created(store.create(Resource::Payments, Some(key("c")), Map::new(), 0, KEEP));
    assert_eq!(
        [po.id.as_str(), inv.id.as_str(), pay.id.as_str()],
        ["po-1", "inv-1", "pay-1"]
    );
}

#[test]
fn a_forgotten_key_creates_a_true_duplicate_and_lookups_miss() {
    let mut store = Store::new();
    let policy = KeyPolicy {
        retention_ms: Some(1_000),
        ignore_keys: false,
    };
    let k = key("po:acme:2");
    created(store.create(
        Resource::PurchaseOrders,
        Some(k.clone()),
        Map::new(),
        0,
        policy,
    ));
    assert!(
        store
            .lookup(Resource::PurchaseOrders, &k, 999, policy.retention_ms)
            .is_some()
    );
    assert!(
        store
            .lookup(Resource::PurchaseOrders, &k, 1_000, policy.retention_ms)
            .is_none()
    );
    let second = created(store.create(
        Resource::PurchaseOrders,
        Some(k.clone()),
        Map::new(),
        1_000,
        policy,
    ));
    assert_eq!(second.id.as_str(), "po-2");
    assert_eq!(store.effects_for(&k), 2);
    assert_eq!(
        store.lookup(Resource::PurchaseOrders, &k, 1_500, policy.retention_ms),
        Some(second)
    );
}

#[test]
fn ignored_keys_count_every_creation_and_lookup_finds_the_first() {
    let mut store = Store::new();
    let policy = KeyPolicy {
        retention_ms: None,
        ignore_keys: true,
    };
    let k = key("inv:acme:3");
    let first = created(store.create(
        Resource::InventoryReservations,
        Some(k.clone()),
        Map::new(),
        0,
        policy,
    ));
    created(store.create(
        Resource::InventoryReservations,
        Some(k.clone()),
        Map::new(),
        1,
        policy,
    ));
    created(store.create(Resource::InventoryReservations, None, Map::new(), 2, policy));
    assert_eq!(
        store.summary(),
        EffectsSummary {
            effects: 3,
            keys: 1,
            duplicate_effects: 1
        }
    );
    assert_eq!(
        store.lookup(Resource::InventoryReservations, &k, 3, None),
        Some(first)
    );
}

#[test]
fn body_hash_ignores_key_order_and_spacing() {
    let a = body(serde_json::from_str(r#"{"b": [1, {"y": 2, "x": 1}], "a": "é"}"#).expect("json"));
    let b = body(serde_json::from_str(r#"{"a":"é","b":[1,{"x":1,"y":2}]}"#).expect("json"));
    assert_eq!(body_hash(&a), body_hash(&b));
    let c = body(json!({"a": "é", "b": [1, {"x": 1, "y": 3}]}));
    assert_ne!(body_hash(&a), body_hash(&c));
}

#[test]
fn external_refs_must_be_visible_ascii_of_bounded_length() {
    assert!("po:acme:int_01".parse::<ExternalRef>().is_ok());
    assert!("".parse::<ExternalRef>().is_err());
    assert!("has space".parse::<ExternalRef>().is_err());
    assert!("x".repeat(256).parse::<ExternalRef>().is_err());
}

#[test]
fn resources_parse_from_their_path_segment_only() {
    for r in Resource::ALL {
        assert_eq!(r.as_str().parse::<Resource>(), Ok(r));
    }
    assert!("invoices".parse::<Resource>().is_err());
}
