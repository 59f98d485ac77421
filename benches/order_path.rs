//! What one order costs the store's writer, step by step: the same functions the
//! coordinator's writer runs for create, approve, dispatch (with its claim), record and the
//! receipt webhook, each in group commits of [`GROUP`] writes as under load, on one thread,
//! with no HTTP and no downstream. It prints the writer's time and the log it writes per
//! step.
//!
//! Run: `cargo bench --bench order_path [-- ORDERS]` (20,000 orders by default);
//! `STATEMENTS=1` adds each step's costliest statements, `STATEMENTS=full` all of them
//! whole; `EXPERIMENT_DROP=index,index` drops those indexes first, to measure what each
//! costs the writer (the figures in docs/throughput-log.md); `HISTORY=n` and
//! `RESUMED_PAUSES=n` give the store a past first (finished intents, pauses made and
//! resumed), to measure whether an order costs more on a store that has run for a while;
//! `ARGS_LINES=n` gives each order `n` lines (a SKU, a description, a quantity, a price:
//! about 120 bytes each) beside the peer harness's three small arguments.
//! The file is synced at checkpoints only (`process_crash`), as the writer's own connection
//! commits when a syncer of its own answers the writes (`store::sqlite::sync`): the sync is
//! not the writer's time.

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

use intentdesk::clock::SeededEntropy;
use intentdesk::coordinator::auth::Principal;
use intentdesk::coordinator::core::call::{Call, Reply};
use intentdesk::coordinator::core::{dispatch, ingest};
use intentdesk::coordinator::{Config, token_sha256};
use intentdesk::domain::canonical::canonicalize;
use intentdesk::domain::decision::BareOverload;
use intentdesk::domain::{AttemptId, ConsequenceTier, IntentId, Locale, ReceiptId, Role};
use intentdesk::store::bulk::BulkSpec;
use intentdesk::store::ops::*;
use intentdesk::store::sql::{ConnExt, params};
use intentdesk::store::{ClaimedRow, Durability, NewIntent, ReceiptSource, Store, search_form};
use intentdesk::wire::Authorize;
use serde_json::json;

/// Writes per group commit: about what 32 callers and the dispatcher make the writer commit
/// together.
const GROUP: usize = 32;
const START_MS: u64 = 1_800_000_000_000;

fn main() {
    let orders: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(20_000);
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("orders.sqlite");
    // Statements are counted only when asked for: the count converts and hashes each
    // statement's text at every run, a tenth of the instructions the writer itself spends.
    let statements = std::env::var_os("STATEMENTS").is_some();
    let (mut store, costs) = if statements {
        let (store, costs) =
            intentdesk::store::sqlite::open_writer_profiled(&path, Durability::ProcessCrash)
                .expect("open");
        (store, Some(costs))
    } else {
        let store =
            intentdesk::store::sqlite::open_writer(&path, Durability::ProcessCrash).expect("open");
        (store, None)
    };
    pragma(&store, "wal_autocheckpoint = 0");
    if let Ok(drop) = std::env::var("EXPERIMENT_DROP") {
        for name in drop.split(',').filter(|n| !n.is_empty()) {
            store
                .conn()
                .batch(&format!("DROP INDEX {name}"))
                .expect("drop");
        }
    }
    history(&mut store);
    let config = Config::parse(
        &format!(
            "listen = \"127.0.0.1:0\"\ndatabase = \"{}\"\n\
             [[tokens]]\nname = \"load\"\ntoken_sha256 = \"{}\"\nrole = \"admin\"\ntenants = [\"*\"]\nmay_approve_own = true\n\
             [[connectors]]\nname = \"erp\"\nbase_url = \"http://127.0.0.1:9\"\nkey_retention_secs = 3600\n\
             operations = {{ \"purchase_order.create\" = \"purchase-orders\" }}\n",
            path.display(),
            token_sha256("bench")
        ),
        "bench",
    )
    .expect("config");
    let principal = Principal {
        name: "load".into(),
        role: Role::Admin,
        tenants: None,
        connectors: vec!["erp".into()],
        may_approve_own: true,
    };
    let entropy = SeededEntropy::new(7);
    // Time goes on as under load, a few orders a millisecond: ids made at each step are in
    // the order of time, as they are live.
    let ticks = std::cell::Cell::new(0u64);
    let now = || {
        ticks.set(ticks.get() + 1);
        START_MS + ticks.get() / 8
    };
    let ids: Vec<IntentId> = (0..orders)
        .map(|n| IntentId::generate(START_MS + n as u64 / 8, n as u128 * 7919))
        .collect();

    println!("{orders} orders, group commits of {GROUP}; per write:");
    println!("{:<10} {:>9} {:>12}", "step", "µs", "log KiB");
    let report = |name: &str| {
        if let Some(costs) = &costs {
            let mut costs = costs.lock().expect("costs");
            print_statements(name, &costs);
            costs.clear();
        }
    };
    step(&mut store, &path, "create", orders, |s, n| {
        s.create_or_replay(&new_intent(&ids[n], n, now())).map(drop)
    });
    report("create");
    let approve = Authorize {
        authorization_version: "v1".into(),
        approver: None,
        policy_version: None,
        valid_for_secs: None,
    };
    step(&mut store, &path, "authorize", orders, |s, n| {
        ingest::authorize(s, &config, &principal, &ids[n], &approve, now())
            .map(|r| drop(r.expect("approved").intent))
    });
    report("authorize");
    // The dispatch request claims the send it plans in its own write, as the coordinator's
    // does whenever a send slot is free.
    let mut claimed: Vec<ClaimedRow> = Vec::with_capacity(orders);
    step(&mut store, &path, "dispatch", orders, |s, n| {
        let at = now();
        let attempt = AttemptId::generate(at, n as u128 * 31);
        let claimant = Some(("bench", at));
        let (_, _, claim) =
            ingest::dispatch_and_claim(s, &config, &principal, &ids[n], attempt, at, claimant)?
                .expect("dispatched");
        claimed.extend(claim.expect("claimed").rows);
        Ok(())
    });
    report("dispatch");
    assert_eq!(claimed.len(), orders, "every dispatch claimed");
    step(&mut store, &path, "record", orders, |s, n| {
        let reply = Call::Replied(Reply {
            status: 201,
            retry_after_ms: None,
            body: json!({"id": format!("po-{n}")}),
        });
        let result = dispatch::interpret(&reply, &claimed[n].action_key, BareOverload::Unproven);
        dispatch::record(s, &claimed[n], result, now(), &entropy).map(drop)
    });
    report("record");
    step(&mut store, &path, "webhook", orders, |s, n| {
        let at = now();
        let source = ReceiptSource {
            receipt_id: ReceiptId::generate(at, n as u128),
            downstream_id: format!("po-{n}"),
            source: "webhook",
            event_id: Some(format!("evt-{n}")),
        };
        s.record_webhook("erp", &claimed[n].action_key, None, &source, at)
            .map(drop)
    });
    report("webhook");
    let committed: i64 = store
        .conn()
        .one(
            "SELECT count(*) FROM intents WHERE state = 'committed' AND created_at_ms >= ?1",
            params![START_MS as i64],
            |r| r.get(0),
        )
        .expect("count");
    assert_eq!(committed as usize, orders, "every order committed");
}

/// A store with a past, when asked for: `HISTORY=n` finished intents (with their attempts
/// and receipts) spread over the 30 days before the orders, and `RESUMED_PAUSES=n` pauses
/// an operator made and resumed. Whatever the orders' writes read that grows with either
/// shows as a dearer step than on a fresh store.
fn history(store: &mut Store) {
    let count = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<u64>().ok());
    if let Some(intents) = count("HISTORY") {
        let started = Instant::now();
        let made = store
            .generate_bulk(&BulkSpec {
                intents,
                mean_attempts: 1.6,
                span_ms: 30 * 86_400_000,
                end_ms: START_MS - 60_000,
                seed: 11,
            })
            .expect("history");
        println!(
            "history: {} intents and {} attempts before the orders ({:.1?})",
            made.intents,
            made.attempts,
            started.elapsed()
        );
    }
    if let Some(pauses) = count("RESUMED_PAUSES") {
        let conn = store.conn();
        conn.batch("BEGIN").expect("begin");
        for n in 0..pauses {
            let at = START_MS - 60_000 - pauses + n;
            let command: i64 = conn
                .one(
                    "INSERT INTO commands (id, kind, actor, role, body_hash, body_json, dry_run, status, \
                     result_json, created_at_ms) VALUES (?1, 'pause', 'ops', 'operator', '', '{}', 0, \
                     'applied', '{}', ?2) RETURNING seq",
                    params![format!("cmd-{n}"), at as i64],
                    |r| r.get(0),
                )
                .expect("command");
            conn.run_held(
                "INSERT INTO pauses (command_seq, tenant, reason, created_by, created_at_ms, resumed_at_ms) \
                 VALUES (?1, ?2, 'incident', 'ops', ?3, ?4)",
                params![command, format!("tenant-{}", n % 16), at as i64, at as i64 + 1],
            )
            .expect("pause");
        }
        conn.batch("COMMIT").expect("commit");
        println!("history: {pauses} pauses made and resumed before the orders");
    }
}

/// Run `write` for `0..count` in group commits, each write in its own savepoint as the
/// writer runs it; print the time and the log written per write.
fn step(
    store: &mut Store,
    path: &Path,
    name: &str,
    count: usize,
    mut write: impl FnMut(&mut Store, usize) -> Result<(), intentdesk::store::StoreError>,
) {
    pragma(store, "wal_checkpoint(TRUNCATE)");
    // As the writer runs a group whose writes all succeed: without savepoints (unless
    // `SAVEPOINTS` is set, to measure what they cost).
    let elision = store.conn().elision().expect("SQLite's connection elides");
    elision.set(std::env::var_os("SAVEPOINTS").is_none());
    let started = Instant::now();
    for group in (0..count).collect::<Vec<_>>().chunks(GROUP) {
        store
            .batch(|s| {
                for &n in group {
                    s.atomically(|s| write(s, n)).expect("write");
                }
            })
            .expect("commit");
        assert!(
            !store.conn().elision().is_some_and(|e| e.take_unrolled()),
            "a write of the bench would have been rolled back"
        );
    }
    store.conn().elision().expect("elides").set(false);
    let micros = started.elapsed().as_secs_f64() * 1e6 / count as f64;
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    if let Some(keep) = std::env::var_os("KEEP_LOGS") {
        // The step's log, for a look at which tables and indexes its pages belong to.
        let keep = Path::new(&keep);
        std::fs::create_dir_all(keep).expect("keep folder");
        std::fs::copy(&wal, keep.join(format!("{}.wal", name.replace(' ', "-")))).expect("copy");
        std::fs::copy(path, keep.join("orders.sqlite")).expect("copy");
    }
    let log = std::fs::metadata(&wal).map_or(0, |m| m.len());
    println!(
        "{name:<10} {micros:>9.1} {:>12.1}",
        log as f64 / 1024.0 / count as f64
    );
}

/// The statements that took the most of a step's time, with their share and their cost per
/// run.
fn print_statements(step: &str, costs: &HashMap<String, (u64, Duration)>) {
    let total: Duration = costs.values().map(|(_, took)| *took).sum();
    let mut rows: Vec<_> = costs.iter().collect();
    rows.sort_by_key(|(_, (_, took))| std::cmp::Reverse(*took));
    println!("  {step}: the statements' time, {:.1?} in all", total);
    // `STATEMENTS=full` prints every statement whole (to EXPLAIN them), not the first 12 cut.
    let full = std::env::var("STATEMENTS").is_ok_and(|v| v == "full");
    let (shown, width) = if full {
        (usize::MAX, usize::MAX)
    } else {
        (12, 110)
    };
    for (sql, (runs, took)) in rows.into_iter().take(shown) {
        let text: String = sql.split_whitespace().collect::<Vec<_>>().join(" ");
        println!(
            "    {:5.1}% {:>8.1} µs x{runs:<7} {}",
            100.0 * took.as_secs_f64() / total.as_secs_f64().max(1e-9),
            took.as_secs_f64() * 1e6 / *runs as f64,
            text.chars().take(width).collect::<String>()
        );
    }
}

fn pragma(store: &Store, pragma: &str) {
    store
        .conn()
        .one(&format!("PRAGMA {pragma}"), params![], |r| r.get::<i64>(0))
        .expect("pragma");
}

/// Order `n` as the peer harness sends it: one of 16 tenants, a small argument object, and
/// `ARGS_LINES` lines of a purchase order if asked for.
fn new_intent(id: &IntentId, n: usize, now: u64) -> NewIntent {
    let mut args = json!({"title": format!("intent {n}"), "priority": (n % 3).to_string(), "ref": format!("run-{n}")});
    static LINES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    let lines = *LINES.get_or_init(|| {
        std::env::var("ARGS_LINES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    });
    if lines > 0 {
        args["lines"] = (0..lines)
            .map(|l| json!({"sku": format!("SKU-{:06}", (n * 7 + l) % 999_999), "description": format!("part {l} of order {n}, as the requisition names it"), "quantity": l % 9 + 1, "unit_price": format!("{}.{:02}", 10 + l, n % 100)}))
            .collect();
    }
    let canonical = canonicalize(&args).expect("canonical");
    let args_text = args.to_string();
    NewIntent {
        id: id.clone(),
        tenant: format!("tenant-{}", n % 16).parse().expect("tenant"),
        caller_key: format!("run-{n}"),
        principal: "load".into(),
        actor: "load".into(),
        purpose: "benchmark".into(),
        operation: "purchase_order.create".into(),
        tool: "erp".into(),
        tier: ConsequenceTier::Write,
        search_text: search_form(&format!("{args_text}\n{}", canonical.json)),
        args_json: args_text,
        canonical_json: canonical.json,
        args_hash: canonical.hash,
        release_id: "bench".into(),
        locale: Locale::EnUs,
        connector: "erp".into(),
        max_attempts: 3,
        created_at_ms: now,
        deadline_at_ms: now + 300_000,
        key_retention_secs: Some(3600),
        refused: None,
        links: Default::default(),
    }
}
