//! The plans of statements that run over and over (at every order, every dispatcher or
//! reconciler pass, every intent read or operator command), held here so a store's past
//! does not slow them: each must read along an index what it needs, never walk every
//! intent, key, send or pause ever made, nor sort them. Read from a fresh SQLite store with
//! SQLite's `EXPLAIN QUERY PLAN`; where a plan depends on the statistics `ANALYZE` leaves,
//! the test gives the store figures like a busy one's first.

use super::Store;
use super::sql::{Conn, ConnExt, Dialect, ToValue, params};

fn store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let store = Store::open(&dir.path().join("db.sqlite")).expect("store opens");
    (dir, store)
}

/// The steps of `sql`'s plan, one line each.
fn plan(store: &Store, sql: &str, values: &[&dyn ToValue]) -> Vec<String> {
    store
        .conn
        .rows(&format!("EXPLAIN QUERY PLAN {sql}"), values, |r| r.get(3))
        .expect("plan")
}

/// The steps that read the table its statement calls `alias`.
fn naming<'a>(plan: &'a [String], alias: &str) -> Vec<&'a String> {
    plan.iter()
        .filter(|step| step.split_whitespace().any(|word| word == alias))
        .collect()
}

/// The plans of a list's count and of its page of 51 ordered by `order`, its filter written
/// from what the list learned of the store (`known`).
fn list_plans(
    store: &Store,
    filter: &super::query::IntentFilter,
    known: super::query::Known,
    order: &str,
) -> [Vec<String>; 2] {
    let w = super::query::filter_where_knowing(filter, known);
    let values = super::sql::params_of(&w.values);
    let count = plan(store, &super::query::count_sql(&w), &values);
    let page = plan(
        store,
        &format!(
            "SELECT i.id FROM intents i{} WHERE {} ORDER BY {order} LIMIT 51",
            w.joins(),
            w.sql()
        ),
        &values,
    );
    [count, page]
}

/// Every step searches an index or a key for what it needs: none walks a whole table or a
/// whole index, and none sorts what it found.
fn bounded(plan: &[String]) -> bool {
    plan.iter()
        .all(|step| !step.contains("TEMP B-TREE") && !step.starts_with("SCAN "))
}

/// Give the store's planner the figures `ANALYZE` leaves on a busy store: `(table, index,
/// figures)` rows of `sqlite_stat1`, in place of its own for those tables.
fn busy(store: &Store, figures: &[(&str, Option<&str>, &str)]) {
    store.conn.batch("ANALYZE").expect("analyse");
    for (table, _, _) in figures {
        store
            .conn
            .run("DELETE FROM sqlite_stat1 WHERE tbl = ?1", params![*table])
            .expect("clear figures");
    }
    for (table, index, stat) in figures {
        store
            .conn
            .run(
                "INSERT INTO sqlite_stat1 (tbl, idx, stat) VALUES (?1, ?2, ?3)",
                params![*table, *index, *stat],
            )
            .expect("figures");
    }
    store
        .conn
        .batch("ANALYZE sqlite_schema")
        .expect("reload figures");
}

/// A dispatch's claim looks for its own send among its intent's rows, not along the ready
/// index over every intent's pending sends (then sorted), which grows with the backlog.
#[test]
fn the_planned_send_is_found_among_its_intents_rows() {
    let (_dir, store) = store();
    let steps = plan(&store, super::outbox::PLANNED_SEND_SQL, &[&"int_x", &0i64]);
    assert!(
        steps
            .iter()
            .any(|s| s.contains("USING INDEX outbox_intent")),
        "{steps:?}"
    );
    assert!(bounded(&steps), "{steps:?}");
}

/// Whether a pause holds an intent is asked at every read of one: only the pauses in force
/// are read, never every pause made and resumed since the store began.
#[test]
fn an_intents_pause_is_looked_for_among_the_pauses_in_force() {
    let (_dir, store) = store();
    let sql = format!(
        "SELECT {} FROM intents i WHERE i.id = ?1",
        super::intents::INTENT_COLUMNS
    );
    let steps = plan(&store, &sql, &[&"int_x"]);
    let pauses = naming(&steps, "z");
    assert!(!pauses.is_empty(), "{steps:?}");
    assert!(
        pauses.iter().all(|s| s.contains("pauses_active")),
        "{steps:?}"
    );
}

/// A list of the intents of providers few intents have reads them through the providers'
/// index and each intent by its key, to count them and to show them in any order: it never
/// walks every intent asking each for its providers. A provider on many intents is still
/// asked of each intent, which finds a page of them soon.
#[test]
fn a_few_providers_intents_are_read_through_the_providers_index() {
    use super::query::{IntentFilter, Known, ProviderMatch};
    let (_dir, store) = store();
    // Only the providers' rows are asked for: no intent needs to be there.
    store
        .conn
        .batch("PRAGMA foreign_keys = OFF")
        .expect("pragma");
    for (n, provider) in [(3, "rare"), (40, "common")] {
        for seq in 1..=n {
            store
                .conn
                .run(
                    "INSERT INTO intent_providers (provider, intent_seq) VALUES (?1, ?2)",
                    params![provider, seq],
                )
                .expect("a provider's intent");
        }
    }
    let filter = |provider: &str| IntentFilter {
        providers: vec![provider.into()],
        ..IntentFilter::default()
    };
    for (provider, expected) in [
        ("rare", ProviderMatch::FromTheProviders),
        ("nobody", ProviderMatch::FromTheProviders),
        ("common", ProviderMatch::OfEachIntent),
    ] {
        let matched = super::query::provider_match(&*store.conn, &filter(provider), 10);
        assert_eq!(matched.expect("counted"), expected, "{provider}");
    }
    let known = Known {
        providers: ProviderMatch::FromTheProviders,
        ..Known::nothing(Dialect::Sqlite)
    };
    for steps in list_plans(
        &store,
        &filter("rare"),
        known,
        "+i.attempts DESC, i.seq DESC",
    ) {
        assert!(
            steps
                .iter()
                .any(|s| s.contains("USING COVERING INDEX intent_providers_provider")),
            "{steps:?}"
        );
        assert!(
            naming(&steps, "i")
                .iter()
                .all(|s| s.contains("INTEGER PRIMARY KEY")),
            "{steps:?}"
        );
    }
}

/// A list of one consequence tier, or of one locale, counts and finds its intents through
/// that column's index: a tier or a locale few intents have is not looked for in every
/// intent.
#[test]
fn a_tiers_and_a_locales_intents_are_read_through_their_index() {
    use super::query::{IntentFilter, count_sql, filter_where};
    use super::sql::params_of;
    use crate::domain::{ConsequenceTier, Locale};
    let (_dir, store) = store();
    for (filter, index) in [
        (
            IntentFilter {
                tiers: vec![ConsequenceTier::Financial],
                ..IntentFilter::default()
            },
            "intents_tier",
        ),
        (
            IntentFilter {
                locales: vec![Locale::FaIr],
                ..IntentFilter::default()
            },
            "intents_locale",
        ),
    ] {
        let w = filter_where(&filter, Dialect::Sqlite);
        let steps = plan(&store, &count_sql(&w), &params_of(&w.values));
        let reads = naming(&steps, "i");
        assert!(
            !reads.is_empty()
                && reads
                    .iter()
                    .all(|s| s.starts_with("SEARCH") && s.contains(index)),
            "{steps:?}"
        );
    }
}

/// A list of what the few pauses in force hold, each naming an intent, a tenant's tool or
/// an operation, counts and pages them through the intents' indexes of those: it does not
/// ask each intent whether a pause covers it, which read every intent.
#[test]
fn a_few_pauses_intents_are_read_through_the_intents_indexes() {
    use super::query::{IntentFilter, Known};
    use crate::wire::PauseScope;
    let (_dir, store) = store();
    let filter = IntentFilter {
        paused: Some(true),
        ..IntentFilter::default()
    };
    let scopes = vec![
        PauseScope {
            intent_id: Some("int_x".into()),
            ..PauseScope::default()
        },
        PauseScope {
            tenant: Some("acme".into()),
            tool: Some("erp".into()),
            ..PauseScope::default()
        },
        PauseScope {
            operation: Some("payment.initiate".into()),
            provider: Some("bank".into()),
            ..PauseScope::default()
        },
    ];
    let reads = |known: Known| list_plans(&store, &filter, known, "+i.seq DESC");
    for steps in reads(Known {
        pauses: Some(scopes),
        no_statistics: true,
        ..Known::nothing(Dialect::Sqlite)
    }) {
        let intents = naming(&steps, "i");
        assert!(
            !intents.is_empty() && intents.iter().all(|s| s.starts_with("SEARCH")),
            "{steps:?}"
        );
        // A tenant's tool through the tenant's index, not that of a tool most intents have.
        assert!(
            intents.iter().any(|s| s.contains("intents_tenant_state"))
                && !intents.iter().any(|s| s.contains("intents_tool")),
            "{steps:?}"
        );
    }
    // Asked of each intent, as when the pauses in force are many.
    for steps in reads(Known::nothing(Dialect::Sqlite)) {
        assert!(steps.iter().any(|s| s.starts_with("SCAN i")), "{steps:?}");
    }
}

/// A tenant's list of what the few pauses in force hold (a tenant-scoped operator's is
/// always one) reads those intents first, through the scopes' indexes: it does not walk
/// the tenant's intents asking each.
#[test]
fn a_tenants_paused_intents_are_read_first_when_few() {
    use super::query::{IntentFilter, Known};
    use crate::wire::PauseScope;
    let (_dir, store) = store();
    let filter = IntentFilter {
        allowed_tenants: Some(vec!["acme".into()]),
        paused: Some(true),
        ..IntentFilter::default()
    };
    let known = |paused_first| Known {
        pauses: Some(vec![
            PauseScope {
                intent_id: Some("int_x".into()),
                ..PauseScope::default()
            },
            PauseScope {
                tenant: Some("globex".into()),
                tool: Some("erp".into()),
                ..PauseScope::default()
            },
        ]),
        no_statistics: true,
        paused_first,
        ..Known::nothing(Dialect::Sqlite)
    };
    let tenants_index = |steps: &[String]| {
        naming(steps, "i")
            .iter()
            .any(|s| s.contains("intents_tenant_state"))
    };
    let [steps, _] = list_plans(&store, &filter, known(true), "+i.seq DESC");
    let by_key = |steps: &[String]| {
        steps
            .iter()
            .any(|s| s.starts_with("SEARCH i USING INTEGER PRIMARY KEY"))
    };
    assert!(
        by_key(&steps) && naming(&steps, "i").iter().all(|s| s.starts_with("SEARCH")),
        "{steps:?}"
    );
    // Written in place, the tenant's index is walked, each of its intents asked.
    let [steps, _] = list_plans(&store, &filter, known(false), "+i.seq DESC");
    assert!(!by_key(&steps) && tenants_index(&steps), "{steps:?}");
}

/// An intent's detail reads its caller key's counts by the key, not through every key.
#[test]
fn an_intents_caller_key_is_read_by_the_key() {
    let (_dir, store) = store();
    let steps = plan(&store, super::query::CALLER_KEY_COUNTS_SQL, &[&"int_x"]);
    assert!(steps.iter().any(|s| s.contains("k USING")), "{steps:?}");
    assert!(bounded(&steps), "{steps:?}");
}

/// The reconciler's pass reads the lookups due in the order they came due and stops at its
/// page: it neither reads the intents whose lookup budget is spent nor sorts.
#[test]
fn the_lookups_due_are_read_in_their_order_and_no_further() {
    let (_dir, store) = store();
    let sql = super::lookups::due_lookups_sql(super::sql::Dialect::Sqlite);
    let steps = plan(&store, &sql, &[&0i64, &16i64]);
    assert!(
        steps.iter().any(|s| s.contains("intents_lookups_due")),
        "{steps:?}"
    );
    assert!(bounded(&steps), "{steps:?}");
}

/// When the next send comes due is read along the ready index, one read a status, even on a
/// store whose statistics say every send ever made is one of the two: as one condition over
/// both, SQLite read the whole table there.
#[test]
fn the_next_send_due_is_read_from_the_ready_index() {
    let (_dir, store) = store();
    busy(
        &store,
        &[
            ("outbox", None, "1000000"),
            ("outbox", Some("outbox_ready"), "1000000 500000 1"),
            ("outbox", Some("outbox_intent"), "1000000 1 1"),
        ],
    );
    let steps = plan(&store, super::outbox::NEXT_DUE_SQL, &[]);
    let outbox: Vec<&String> = steps.iter().filter(|s| s.contains("outbox")).collect();
    assert_eq!(outbox.len(), 2, "{steps:?}");
    assert!(
        outbox.iter().all(|s| s.contains("outbox_ready")),
        "{steps:?}"
    );
}

/// An intent's detail reads the commands that touched it or named it along indexes, not
/// through every command ever recorded.
#[test]
fn an_intents_commands_are_read_along_indexes() {
    let (_dir, store) = store();
    let sql = super::commands::audit_of_intent_sql(super::sql::Dialect::Sqlite);
    let steps = plan(&store, &sql, &[&"int_x", &200i64]);
    let commands = naming(&steps, "c");
    assert!(!commands.is_empty(), "{steps:?}");
    assert!(
        commands.iter().all(|s| s.starts_with("SEARCH ")),
        "{steps:?}"
    );
    assert!(
        steps.iter().any(|s| s.contains("commands_target_intent")),
        "{steps:?}"
    );
}

/// A search whose term few intents' text holds is written as those intents' keys: its count
/// and its page, a tenant's too, reach each intent by its key or by the index of the key the
/// term may be, and never walk the intents asking each for its text. Asked of each intent
/// (a term many intents hold), they read each intent's arguments' row.
#[test]
fn a_terms_few_intents_are_read_by_their_keys() {
    use super::query::{IntentFilter, Known};
    let (_dir, store) = store();
    for tenants in [vec![], vec!["acme".to_string()]] {
        let filter = IntentFilter {
            q: Some("walnut".into()),
            tenants,
            ..IntentFilter::default()
        };
        let known = Known {
            no_statistics: true,
            text_matches: Some(vec![3, 17, 42]),
            ..Known::nothing(Dialect::Sqlite)
        };
        let [count, page] = list_plans(&store, &filter, known, "+i.seq DESC");
        for steps in [&count, &page] {
            let intents = naming(steps, "i");
            assert!(
                !intents.is_empty() && intents.iter().all(|s| s.starts_with("SEARCH")),
                "{steps:?}"
            );
            assert!(
                intents.iter().any(|s| s.contains("INTEGER PRIMARY KEY")),
                "{steps:?}"
            );
            assert!(
                !steps.iter().any(|s| s.contains("intent_payloads")),
                "{steps:?}"
            );
        }
        assert!(
            !count.iter().any(|s| s.contains("TEMP B-TREE")),
            "{count:?}"
        );
        let asked = list_plans(
            &store,
            &filter,
            Known::nothing(Dialect::Sqlite),
            "+i.seq DESC",
        );
        assert!(
            asked
                .iter()
                .all(|steps| steps.iter().any(|s| s.starts_with("SEARCH ip"))),
            "{asked:?}"
        );
    }
}
