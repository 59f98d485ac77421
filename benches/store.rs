//! Store speed on a large data set: 1,000,000 intents and about 5,000,000 attempts.
//!
//! The data set is generated once into `target/bench-data/` (about a minute) and reused.
//! Run: `cargo bench --bench store`. Figures and machine go into BENCHMARKS.md.

use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use intentdesk::domain::canonical::canonicalize;
use intentdesk::domain::{AttemptId, ConsequenceTier, Event, IntentId, IntentState, Locale};
use intentdesk::store::bulk::BulkSpec;
use intentdesk::store::ops::*;
use intentdesk::store::{
    ApplyContext, Approval, DispatchPlan, IntentFilter, NewIntent, SortKey, Store, StoreError,
    search_form,
};
use serde_json::json;

const END_MS: u64 = 1_764_489_600_000;
const INTENTS: u64 = 1_000_000;

fn data_set() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-data");
    std::fs::create_dir_all(&dir).expect("bench data folder");
    let path = dir.join("store-1m.sqlite");
    if !path.exists() {
        let partial = dir.join("store-1m.partial.sqlite");
        let _ = std::fs::remove_file(&partial);
        let mut store = Store::open(&partial).expect("store");
        let started = Instant::now();
        let spec = BulkSpec {
            intents: INTENTS,
            mean_attempts: 5.0,
            span_ms: 30 * 24 * 3_600_000,
            end_ms: END_MS,
            seed: 7,
        };
        let stats = store.generate_bulk(&spec).expect("generate");
        drop(store);
        eprintln!(
            "generated {} intents, {} attempts in {:.1?}",
            stats.intents,
            stats.attempts,
            started.elapsed()
        );
        std::fs::rename(&partial, &path).expect("rename");
        for suffix in ["-wal", "-shm"] {
            let _ = std::fs::remove_file(dir.join(format!("store-1m.partial.sqlite{suffix}")));
        }
    }
    path
}

fn queries(c: &mut Criterion) {
    let mut store = Store::open(&data_set()).expect("open");
    let mut group = c.benchmark_group("store_1m");
    group
        .sample_size(30)
        .measurement_time(Duration::from_secs(5));

    let filter = IntentFilter {
        tenants: vec!["acme".into()],
        providers: vec!["anthropic".into()],
        states: vec![IntentState::Committed],
        ..Default::default()
    };
    group.bench_function("first_page_tenant_provider_state", |b| {
        b.iter(|| {
            black_box(
                store
                    .list_intents(&filter, SortKey::Created, false, None, 100)
                    .expect("list"),
            )
        })
    });
    let indeterminate = IntentFilter {
        states: vec![IntentState::Indeterminate],
        ..Default::default()
    };
    group.bench_function("first_page_indeterminate_oldest_first", |b| {
        b.iter(|| {
            black_box(
                store
                    .list_intents(&indeterminate, SortKey::IndeterminateSince, true, None, 100)
                    .expect("list"),
            )
        })
    });
    // A text search: one most intents match (the generator's every order is of paper), one
    // a few do (199 orders of 3,305 sheets), one some do (3,002 with 330 in them), and one
    // none does; the last also as a caller of one tenant asks it.
    for (name, q, tenant) in [
        ("search_first_page", "paper a4", None),
        ("search_few_match", "3305", None),
        ("search_some_match", "330", None),
        ("search_no_match", "nosuchthing", None),
        ("search_no_match_one_tenant", "nosuchthing", Some("acme")),
    ] {
        let search = IntentFilter {
            q: Some(q.into()),
            allowed_tenants: tenant.map(|t| vec![t.to_string()]),
            ..Default::default()
        };
        group.bench_function(name, |b| {
            b.iter(|| {
                black_box(
                    store
                        .list_intents(&search, SortKey::Created, false, None, 100)
                        .expect("search"),
                )
            })
        });
    }
    group.bench_function("indeterminate_age_summary", |b| {
        b.iter(|| {
            black_box(
                store
                    .indeterminate_summary(&IntentFilter::default(), END_MS)
                    .expect("summary"),
            )
        })
    });
    group.bench_function("amplification_series_one_hour_by_provider", |b| {
        b.iter(|| {
            black_box(
                store
                    .series(
                        "amplification",
                        60_000,
                        "provider",
                        &IntentFilter::default(),
                        END_MS - 3_600_000,
                        END_MS,
                    )
                    .expect("series"),
            )
        })
    });
    group.finish();
}

/// What the ingest path writes for one order: create, authorize, dispatch (attempt + outbox).
fn write_one(
    store: &mut Store,
    n: u64,
    args: &serde_json::Value,
    json: &str,
    hash: &str,
) -> Result<(), StoreError> {
    let now = END_MS + n;
    let id = IntentId::generate(now, u128::from(n));
    let new = NewIntent {
        id: id.clone(),
        tenant: "acme".parse().expect("tenant"),
        caller_key: format!("bench-{n}"),
        principal: "agent".into(),
        actor: "agent".into(),
        purpose: "bench".into(),
        operation: "purchase_order.create".into(),
        tool: "erp.po".into(),
        tier: ConsequenceTier::Write,
        args_json: args.to_string(),
        canonical_json: json.to_string(),
        args_hash: hash.to_string(),
        search_text: search_form(&args.to_string()),
        release_id: "r1".into(),
        locale: Locale::EnUs,
        connector: "erp".into(),
        max_attempts: 3,
        created_at_ms: now,
        deadline_at_ms: now + 60_000,
        key_retention_secs: Some(86_400),
        refused: None,
        links: Default::default(),
    };
    store.create_or_replay(&new)?;
    let ctx = ApplyContext {
        now_ms: now,
        authorization: Some(Approval::by("a", "v1")),
        ..Default::default()
    };
    store.apply(&id, &Event::Authorized, &ctx)?;
    let plan = DispatchPlan {
        attempt_id: AttemptId::generate(now, u128::from(n)),
        available_at_ms: now,
    };
    let ctx = ApplyContext {
        now_ms: now,
        dispatch: Some(plan),
        ..Default::default()
    };
    store.apply(&id, &Event::Dispatch, &ctx)?;
    Ok(())
}

fn durable_writes(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut store = Store::open(&dir.path().join("writes.sqlite")).expect("open");
    let args = json!({"item": "paper A4", "qty": 1200, "supplier": "s-12"});
    let canonical = canonicalize(&args).expect("args");
    let mut n: u64 = 0;
    let mut group = c.benchmark_group("durable_writes");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(5));
    group.throughput(Throughput::Elements(1));
    group.bench_function("create_authorize_dispatch_alone", |b| {
        b.iter(|| {
            n += 1;
            write_one(
                black_box(&mut store),
                n,
                &args,
                &canonical.json,
                &canonical.hash,
            )
            .expect("write");
        })
    });
    // What the coordinator's writer does under concurrent load: many requests' writes, each
    // in its own savepoint, committed together.
    const BATCH: u64 = 64;
    group.throughput(Throughput::Elements(BATCH));
    group.bench_function("create_authorize_dispatch_group_commit_64", |b| {
        b.iter(|| {
            store
                .batch(|s| {
                    for _ in 0..BATCH {
                        n += 1;
                        s.atomically(|s| write_one(s, n, &args, &canonical.json, &canonical.hash))
                            .expect("write");
                    }
                })
                .expect("commit");
        })
    });
    group.finish();
}

criterion_group!(benches, queries, durable_writes);
criterion_main!(benches);
