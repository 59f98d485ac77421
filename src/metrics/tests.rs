//! The index's answers checked against the store's SQL summary, and kept current by the
//! change feed.

use serde_json::json;

use super::*;
use crate::domain::canonical::canonicalize;
use crate::domain::{AttemptId, ConsequenceTier, Event, IntentId, Locale, ReceiptId};
use crate::store::bulk::BulkSpec;
use crate::store::ops::*;
use crate::store::{
    ApplyContext, Approval, CreateOutcome, DispatchPlan, NewIntent, ReceiptSource, Store,
    search_form,
};

const END: u64 = 1_764_489_600_000;
const HOUR: u64 = 3_600_000;

fn bulk(intents: u64) -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut store = Store::open(&dir.path().join("m.sqlite")).expect("open");
    store
        .generate_bulk(&BulkSpec {
            intents,
            mean_attempts: 3.0,
            span_ms: 6 * HOUR,
            end_ms: END,
            seed: 3,
        })
        .expect("bulk");
    (dir, store)
}

fn query(metric: ChartMetric, group_by: GroupBy) -> ChartQuery {
    ChartQuery {
        metric,
        group_by,
        bucket_ms: 600_000,
        from_ms: END - 7 * HOUR,
        to_ms: END + HOUR,
        now_ms: END,
    }
}

#[test]
fn attempts_by_provider_add_up_to_the_summary() {
    let (_dir, mut store) = bulk(2_000);
    let mut index = MetricIndex::default();
    refresh(&mut index, &mut store).expect("refresh");
    let filter = IntentFilter::default();
    let summary = store.summary(&filter, END).expect("summary");
    let chart = super::chart(
        &mut store,
        &index,
        &query(ChartMetric::Attempts, GroupBy::Provider),
        &filter,
    )
    .expect("chart");
    let total: f64 = chart.series.iter().map(|s| s.total).sum();
    assert_eq!(total as u64, summary.attempts);
    let names: Vec<&str> = chart.series.iter().map(|s| s.group.as_str()).collect();
    assert_eq!(names, ["anthropic", "erp", "mistral", "openai"]);

    let late = super::chart(
        &mut store,
        &index,
        &query(ChartMetric::LateResults, GroupBy::None),
        &filter,
    )
    .expect("late");
    assert_eq!(late.series[0].total as u64, summary.late_results);
}

#[test]
fn the_overview_matches_the_summary_under_a_filter() {
    let (_dir, mut store) = bulk(2_000);
    let mut index = MetricIndex::default();
    refresh(&mut index, &mut store).expect("refresh");
    let filter = IntentFilter {
        tenants: vec!["acme".into(), "globex".into()],
        providers: vec!["openai".into()],
        min_attempts: Some(2),
        ..IntentFilter::default()
    };
    let summary = store.summary(&filter, END + HOUR).expect("summary");
    let o = overview(&mut store, &index, &filter, END + HOUR).expect("overview");
    assert_eq!(o.intents, summary.intents);
    assert_eq!(o.attempts, summary.attempts);
    assert_eq!(o.amplification_p99, summary.amplification.p99);
    assert_eq!(o.amplification_max, summary.amplification.max);
    assert_eq!(o.indeterminate, summary.indeterminate.count);
    assert_eq!(
        o.indeterminate_oldest_age_secs,
        summary.indeterminate.oldest_age_secs
    );
    assert_eq!(
        o.indeterminate_p95_age_secs,
        summary.indeterminate.p95_age_secs
    );
    assert_eq!(o.committed, summary.committed);
    assert_eq!(o.late_results, summary.late_results);
}

#[test]
fn the_overview_counts_goodput_per_hour_and_the_late_result_rate() {
    let (_dir, mut store) = bulk(2_000);
    let mut index = MetricIndex::default();
    refresh(&mut index, &mut store).expect("refresh");
    let filter = IntentFilter::default();
    let at = END - HOUR / 2;
    let o = overview(&mut store, &index, &filter, at).expect("overview");
    use crate::store::sql::ConnExt;
    let committed_between = |store: &mut Store, from: u64, to: u64| -> u64 {
        let n: i64 = store
            .conn()
            .one(
                "SELECT count(*) FROM intents WHERE committed_at_ms > ?1 AND committed_at_ms <= ?2",
                crate::store::sql::params![from as i64, to as i64],
                |r| r.get(0),
            )
            .expect("count");
        n as u64
    };
    let last = committed_between(&mut store, at - HOUR, at);
    let previous = committed_between(&mut store, at - 2 * HOUR, at - HOUR);
    assert!(last > 0 && previous > 0, "{last} {previous}");
    assert_eq!(
        (o.committed_last_hour, o.committed_previous_hour),
        (last, previous)
    );
    let summary = store.summary(&filter, at).expect("summary");
    assert!(summary.late_results > 0);
    let rate = summary.late_results as f64 / summary.attempts as f64;
    assert!(
        (o.late_result_rate - rate).abs() < 1e-12,
        "{}",
        o.late_result_rate
    );
}

#[test]
fn the_late_result_rate_chart_weighs_back_to_the_late_results() {
    let (_dir, mut store) = bulk(2_000);
    let mut index = MetricIndex::default();
    refresh(&mut index, &mut store).expect("refresh");
    let filter = IntentFilter::default();
    let summary = store.summary(&filter, END).expect("summary");
    let chart = super::chart(
        &mut store,
        &index,
        &query(ChartMetric::LateResultRate, GroupBy::None),
        &filter,
    )
    .expect("chart");
    let points = &chart.series[0].points;
    assert!(points.iter().all(|p| (0.0..=1.0).contains(&p[1])));
    // Each point is a share of the attempts started in its bucket: weighed by them, the
    // late attempts come back.
    let late: f64 = points.iter().map(|p| p[1] * p[2]).sum();
    assert_eq!(late.round() as u64, summary.late_results);
    assert_eq!(chart.series[0].total as u64, summary.attempts);
}

#[test]
fn a_search_filter_is_applied_through_sql() {
    let (_dir, mut store) = bulk(500);
    let mut index = MetricIndex::default();
    refresh(&mut index, &mut store).expect("refresh");
    let filter = IntentFilter {
        q: Some("s-7\"".into()),
        ..IntentFilter::default()
    };
    let summary = store.summary(&filter, END).expect("summary");
    let o = overview(&mut store, &index, &filter, END).expect("overview");
    assert!(summary.intents > 0);
    assert_eq!(o.intents, summary.intents);
    // The generator keeps the arguments in rows of their own, as a coordinator on SQLite
    // does: each count and chart of the filter joins them, and counts what the summary does.
    let indeterminate = store
        .indeterminate_summary(&filter, END)
        .expect("indeterminate");
    assert_eq!(indeterminate.count, summary.indeterminate.count);
    let created = store
        .series("intents", HOUR, "none", &filter, END - 7 * HOUR, END + 1)
        .expect("series");
    assert_eq!(
        created.iter().map(|p| p.count).sum::<u64>(),
        summary.intents
    );
    let tenants = store.tenant_counts(&filter, END).expect("tenant counts");
    assert_eq!(
        tenants.iter().flat_map(|t| t.states.values()).sum::<u64>(),
        summary.intents
    );
}

#[test]
fn the_histogram_counts_intents_per_attempt_count_and_marks_the_budget() {
    let (_dir, mut store) = bulk(1_000);
    let mut index = MetricIndex::default();
    refresh(&mut index, &mut store).expect("refresh");
    let h = attempts_histogram(
        &mut store,
        &index,
        GroupBy::None,
        &IntentFilter::default(),
        0,
        u64::MAX,
    )
    .expect("histogram");
    assert_eq!(h.budget, 5);
    let g = &h.groups[0];
    assert_eq!(g.intents, 1_000);
    assert_eq!(g.bins.iter().map(|b| b[1]).sum::<u64>(), 1_000);
    let over: u64 = g.bins.iter().filter(|b| b[0] > 5).map(|b| b[1]).sum();
    assert_eq!(g.over_budget, over);
}

#[test]
fn indeterminate_is_a_level_over_time() {
    let (_dir, mut store) = bulk(2_000);
    let mut index = MetricIndex::default();
    refresh(&mut index, &mut store).expect("refresh");
    let filter = IntentFilter::default();
    let chart = super::chart(
        &mut store,
        &index,
        &query(ChartMetric::Indeterminate, GroupBy::None),
        &filter,
    )
    .expect("chart");
    let points = &chart.series[0].points;
    // Nothing had been created before the data's span; all of them are open at the end.
    assert_eq!(points[0][1], 0.0);
    let summary = store.summary(&filter, END).expect("summary");
    assert_eq!(chart.series[0].total as u64, summary.indeterminate.count);
    // Non-decreasing: bulk data never leaves indeterminate.
    assert!(points.windows(2).all(|w| w[0][1] <= w[1][1]));
    // No point after "now".
    assert!(points.iter().all(|p| p[0] as u64 <= END));
}

/// A new intent of tenant `acme`, numbered `n`.
pub(crate) fn new_intent(n: u64) -> NewIntent {
    let args = json!({"qty": n});
    let canonical = canonicalize(&args).expect("args");
    NewIntent {
        id: IntentId::generate(END + n, u128::from(n) * 31),
        tenant: "acme".parse().expect("tenant"),
        caller_key: format!("k{n}"),
        principal: "agent".into(),
        actor: "agent".into(),
        purpose: "test".into(),
        operation: "purchase_order.create".into(),
        tool: "erp.po".into(),
        tier: ConsequenceTier::Write,
        search_text: search_form(&args.to_string()),
        args_json: args.to_string(),
        canonical_json: canonical.json,
        args_hash: canonical.hash,
        release_id: "r9".into(),
        locale: Locale::FaIr,
        connector: "erp".into(),
        max_attempts: 3,
        created_at_ms: END + n,
        deadline_at_ms: END + n + 60_000,
        key_retention_secs: None,
        refused: None,
        links: Default::default(),
    }
}

#[test]
fn writes_after_the_load_reach_the_index_through_the_change_feed() {
    let (_dir, mut store) = bulk(100);
    let mut index = MetricIndex::default();
    refresh(&mut index, &mut store).expect("refresh");
    let filter = IntentFilter {
        releases: vec!["r9".into()],
        ..IntentFilter::default()
    };
    assert_eq!(
        overview(&mut store, &index, &filter, END)
            .expect("o")
            .intents,
        0
    );

    let CreateOutcome::Created(intent) = store.create_or_replay(&new_intent(1)).expect("create")
    else {
        panic!("not created");
    };
    let at = |ms: u64| ApplyContext {
        now_ms: END + ms,
        authorization: Some(Approval::by("ann", "v1")),
        dispatch: Some(DispatchPlan {
            attempt_id: AttemptId::generate(END + ms, u128::from(ms)),
            available_at_ms: END + ms,
        }),
        ..ApplyContext::default()
    };
    store
        .apply(&intent.id, &Event::Authorized, &at(10))
        .expect("authorize");
    store
        .apply(&intent.id, &Event::Dispatch, &at(20))
        .expect("dispatch");
    store
        .apply(&intent.id, &Event::OutcomeUnknown, &at(1_000))
        .expect("unknown");
    refresh(&mut index, &mut store).expect("refresh");
    let o = overview(&mut store, &index, &filter, END + 61_000).expect("o");
    assert_eq!((o.intents, o.attempts, o.indeterminate), (1, 1, 1));
    assert_eq!(o.indeterminate_oldest_age_secs, 60);

    let source = |downstream: &str, n: u128| ReceiptSource {
        receipt_id: ReceiptId::generate(END + 2_000, n),
        downstream_id: downstream.into(),
        source: "lookup",
        event_id: None,
    };
    store
        .observe_receipt(&intent.id, &source("po-1", 1), END + 120_000)
        .expect("receipt");
    store
        .observe_receipt(&intent.id, &source("po-2", 2), END + 130_000)
        .expect("duplicate");
    refresh(&mut index, &mut store).expect("refresh");
    let o = overview(&mut store, &index, &filter, END + 200_000).expect("o");
    assert_eq!(
        (o.indeterminate, o.committed, o.duplicate_effects),
        (0, 1, 1)
    );

    // The level remembers the span: indeterminate from 1 s to 120 s after creation.
    let q = ChartQuery {
        metric: ChartMetric::Indeterminate,
        group_by: GroupBy::Locale,
        bucket_ms: 60_000,
        from_ms: END,
        to_ms: END + 240_000,
        now_ms: END + 240_000,
    };
    let chart = super::chart(&mut store, &index, &q, &filter).expect("chart");
    assert_eq!(chart.series.len(), 1);
    assert_eq!(chart.series[0].group, "fa-IR");
    let values: Vec<f64> = chart.series[0].points.iter().map(|p| p[1]).collect();
    assert_eq!(values, [1.0, 0.0, 0.0, 0.0]);
}

/// What order `n` of a test's flow is applied with, `ms` into it: approved, and a
/// dispatch planned.
fn order_at(n: u64, ms: u64) -> ApplyContext {
    ApplyContext {
        now_ms: END + n * 10 + ms,
        authorization: Some(Approval::by("ann", "v1")),
        dispatch: Some(DispatchPlan {
            attempt_id: AttemptId::generate(END + ms, u128::from(n) * 7),
            available_at_ms: END + ms,
        }),
        ..ApplyContext::default()
    }
}

/// Authorize order `n`, then dispatch it.
fn authorize_and_dispatch(store: &mut Store, id: &IntentId, n: u64) {
    store
        .apply(id, &Event::Authorized, &order_at(n, 1))
        .expect("authorize");
    store
        .apply(id, &Event::Dispatch, &order_at(n, 2))
        .expect("dispatch");
}

/// How many intents `index` counts.
fn counted(store: &mut Store, index: &MetricIndex) -> u64 {
    overview(store, index, &IntentFilter::default(), END)
        .expect("overview")
        .intents
}

/// Drop every event of the feed but the newest.
fn prune_all_but_newest(store: &mut Store) {
    while store.prune_events(u64::MAX, 1, 1_000).expect("prune") > 0 {}
    assert_eq!(
        store.oldest_event_seq().expect("oldest"),
        Some(store.last_event_seq().expect("newest"))
    );
}

#[test]
fn a_pruned_change_feed_makes_the_index_read_everything_again() {
    let (_dir, mut store) = bulk(100);
    let mut index = MetricIndex::default();
    store.create_or_replay(&new_intent(1)).expect("create");
    refresh(&mut index, &mut store).expect("refresh");
    assert_eq!(counted(&mut store, &index), 101);
    // The event the index saw last is dropped with all but the newest.
    store.create_or_replay(&new_intent(2)).expect("create");
    prune_all_but_newest(&mut store);
    refresh(&mut index, &mut store).expect("refresh");
    assert_eq!(counted(&mut store, &index), 102);
}

#[test]
fn a_feed_pruned_after_the_index_loaded_it_empty_is_read_again_whole() {
    let (_dir, mut store) = bulk(100);
    assert_eq!(
        store.last_event_seq().expect("newest"),
        0,
        "bulk rows are not announced"
    );
    let mut index = MetricIndex::default();
    refresh(&mut index, &mut store).expect("load");
    // Two orders while the index does not follow; the first one's event is pruned.
    store.create_or_replay(&new_intent(1)).expect("create");
    store.create_or_replay(&new_intent(2)).expect("create");
    prune_all_but_newest(&mut store);
    refresh(&mut index, &mut store).expect("refresh");
    assert_eq!(counted(&mut store, &index), 102);
}

/// One read intent of `tenant` with one reported attempt on `provider`.
fn attempt_on(store: &mut Store, n: u64, tenant: &str, provider: &str) {
    let mut new = new_intent(n);
    new.tenant = tenant.parse().expect("tenant");
    new.tier = ConsequenceTier::Read;
    let created = match store.create_or_replay(&new).expect("create") {
        CreateOutcome::Created(intent) => intent,
        other => panic!("{other:?}"),
    };
    let ctx = ApplyContext {
        now_ms: END + n,
        authorization: Some(Approval::by("ann", "v1")),
        ..ApplyContext::default()
    };
    store
        .apply(&created.id, &Event::Authorized, &ctx)
        .expect("authorize");
    let attempt = crate::wire::NewAttempt {
        provider: provider.to_string(),
        ..Default::default()
    };
    store
        .record_attempt(
            &created.id,
            &AttemptId::generate(END + n, u128::from(n)),
            &attempt,
            Some("agent"),
            END + n,
        )
        .expect("attempt");
}

fn provider_labels(store: &mut Store, index: &MetricIndex, filter: &IntentFilter) -> Vec<String> {
    let mut q = query(ChartMetric::Attempts, GroupBy::Provider);
    q.to_ms = END + 2 * HOUR;
    super::chart(store, index, &q, filter)
        .expect("chart")
        .series
        .into_iter()
        .map(|s| s.group)
        .collect()
}

/// One tenant brings more provider names than the mask's bits and than its share of the
/// dictionary; the other's names, added after, still label only its own series, and no
/// series of the first is shown under another's name.
#[test]
fn two_tenants_with_many_providers_never_share_a_label() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut store = Store::open(&dir.path().join("m.sqlite")).expect("open");
    let many = u64::from(records::PER_TENANT) + 20;
    for p in 0..many {
        attempt_on(&mut store, p, "acme", &format!("acme-model-{p:04}"));
    }
    for p in 0..3 {
        attempt_on(&mut store, many + p, "globex", &format!("globex-model-{p}"));
    }
    let mut index = MetricIndex::default();
    refresh(&mut index, &mut store).expect("refresh");

    let globex = IntentFilter {
        tenants: vec!["globex".into()],
        ..IntentFilter::default()
    };
    assert_eq!(
        provider_labels(&mut store, &index, &globex),
        ["globex-model-0", "globex-model-1", "globex-model-2"]
    );
    // Limited to globex by the token rather than a filter: the same.
    let limited = IntentFilter {
        allowed_tenants: Some(vec!["globex".into()]),
        ..IntentFilter::default()
    };
    assert_eq!(provider_labels(&mut store, &index, &limited).len(), 3);

    let acme = IntentFilter {
        tenants: vec!["acme".into()],
        ..IntentFilter::default()
    };
    let labels = provider_labels(&mut store, &index, &acme);
    let kept = records::PER_TENANT as usize;
    assert_eq!(
        labels.len(),
        kept + 1,
        "each name its own series, and one for the rest"
    );
    let expected: Vec<String> = [records::OTHER.to_string()]
        .into_iter()
        .chain((0..kept as u64).map(|p| format!("acme-model-{p:04}")))
        .collect();
    assert!(
        labels == expected,
        "labels differ: first {:?}, last {:?}",
        labels.first(),
        labels.last()
    );

    // A provider past the mask's 64 bits selects its own intents only.
    let one = IntentFilter {
        providers: vec!["acme-model-0080".into()],
        ..IntentFilter::default()
    };
    let mut q = query(ChartMetric::Attempts, GroupBy::Provider);
    q.to_ms = END + 2 * HOUR;
    let chart = super::chart(&mut store, &index, &q, &one).expect("chart");
    let totals: Vec<(String, f64)> = chart
        .series
        .into_iter()
        .map(|s| (s.group, s.total))
        .collect();
    assert_eq!(totals, [("acme-model-0080".to_string(), 1.0)]);
}

/// A chart with more values than the bound is refused, naming it; the same with larger
/// buckets is answered.
#[test]
fn a_chart_past_the_cost_bound_is_refused() {
    let (_dir, mut store) = bulk(500);
    let mut index = MetricIndex::default();
    refresh(&mut index, &mut store).expect("refresh");
    let filter = IntentFilter::default();
    let mut q = query(ChartMetric::Attempts, GroupBy::Provider);
    q.bucket_ms = 1_000;
    q.from_ms = END - 30 * HOUR;
    let refused = super::chart(&mut store, &index, &q, &filter).expect_err("too large");
    let message = refused.to_string();
    assert!(
        message.contains(&chart::MAX_POINTS.to_string()),
        "{message}"
    );
    assert!(message.contains("larger buckets"), "{message}");
    q.bucket_ms = 60_000;
    assert!(super::chart(&mut store, &index, &q, &filter).is_ok());
}

#[test]
fn catching_up_a_stretch_at_a_time_reads_what_a_whole_load_reads() {
    let (_dir, mut store) = bulk(200);
    // One index per stretch of the feed read at a time: one event, a few, all of them.
    let mut followed: Vec<(i64, MetricIndex)> = [1, 7, 100_000]
        .into_iter()
        .map(|stretch| (stretch, MetricIndex::default()))
        .collect();
    for (_, index) in &mut followed {
        refresh(index, &mut store).expect("refresh");
    }

    // Forty intents come after the load. Every fifth is only created (one event); the others
    // are authorized and dispatched, every other one is left indeterminate, and every fourth
    // one of those is receipted twice half an hour later (a duplicate effect, and a closed
    // span of being indeterminate).
    for n in 1..=40u64 {
        let CreateOutcome::Created(intent) =
            store.create_or_replay(&new_intent(n)).expect("create")
        else {
            panic!("not created");
        };
        if n % 5 == 0 {
            continue;
        }
        authorize_and_dispatch(&mut store, &intent.id, n);
        if n % 2 == 0 {
            store
                .apply(&intent.id, &Event::OutcomeUnknown, &order_at(n, 1_000))
                .expect("unknown");
        }
        if n % 4 == 0 {
            for (downstream, k) in [("po-a", 1), ("po-b", 2)] {
                let source = ReceiptSource {
                    receipt_id: ReceiptId::generate(END + HOUR / 2, u128::from(n) * 3 + k),
                    // Each intent's own records, as a downstream that keeps one record per
                    // order answers.
                    downstream_id: format!("{downstream}-{n}"),
                    source: "lookup",
                    event_id: None,
                };
                store
                    .observe_receipt(&intent.id, &source, END + HOUR / 2 + n)
                    .expect("receipt");
            }
        }
    }
    let mut loaded = MetricIndex::default();
    refresh(&mut loaded, &mut store).expect("load");

    let all = IntentFilter::default();
    let now = END + 2 * HOUR;
    let o = overview(&mut store, &loaded, &all, now).expect("o");
    assert!(o.duplicate_effects >= 5 && o.indeterminate >= 10, "{o:?}");
    for (stretch, index) in &mut followed {
        index.refresh_by(&mut store, *stretch).expect("catch up");
        assert_eq!(
            overview(&mut store, index, &all, now).expect("followed"),
            o,
            "{stretch} events a stretch"
        );
        for &metric in ChartMetric::ALL {
            for &group_by in GroupBy::ALL {
                let q = ChartQuery {
                    from_ms: END - HOUR,
                    to_ms: now,
                    now_ms: now,
                    ..query(metric, group_by)
                };
                assert_eq!(
                    super::chart(&mut store, index, &q, &all).expect("followed"),
                    super::chart(&mut store, &loaded, &q, &all).expect("loaded"),
                    "{metric:?} by {group_by:?}, {stretch} events a stretch"
                );
            }
        }
    }
}

#[test]
fn copies_replaced_while_catching_up_are_dropped_on_the_way() {
    let (_dir, mut store) = bulk(50);
    let mut followed = MetricIndex::default();
    refresh(&mut followed, &mut store).expect("refresh");
    // Six hundred intents of four events each, caught up one event at a time: each intent is
    // read four times, leaving three replaced copies, past the point where they are dropped.
    let intents = 600u64;
    for n in 1..=intents {
        let CreateOutcome::Created(intent) =
            store.create_or_replay(&new_intent(n)).expect("create")
        else {
            panic!("not created");
        };
        let at = |ms: u64| ApplyContext {
            now_ms: END + n + ms,
            authorization: Some(Approval::by("ann", "v1")),
            dispatch: Some(DispatchPlan {
                attempt_id: AttemptId::generate(END + ms, u128::from(n)),
                available_at_ms: END + ms,
            }),
            ..ApplyContext::default()
        };
        for (event, ms) in [
            (Event::Authorized, 1),
            (Event::Dispatch, 2),
            (Event::OutcomeUnknown, 1_000),
        ] {
            store.apply(&intent.id, &event, &at(ms)).expect("event");
        }
    }
    followed.refresh_by(&mut store, 1).expect("catch up");
    assert!(
        followed.intents.len() < 2 * (50 + intents as usize),
        "{} records held for {} intents",
        followed.intents.len(),
        50 + intents
    );
    let mut loaded = MetricIndex::default();
    refresh(&mut loaded, &mut store).expect("load");
    let all = IntentFilter::default();
    let now = END + HOUR;
    let o = overview(&mut store, &loaded, &all, now).expect("loaded");
    assert_eq!(o.indeterminate, intents, "{o:?}");
    assert_eq!(
        overview(&mut store, &followed, &all, now).expect("followed"),
        o
    );
    let q = ChartQuery {
        from_ms: END - HOUR,
        to_ms: now,
        now_ms: now,
        ..query(ChartMetric::Indeterminate, GroupBy::Tenant)
    };
    assert_eq!(
        super::chart(&mut store, &followed, &q, &all).expect("followed"),
        super::chart(&mut store, &loaded, &q, &all).expect("loaded")
    );
}

#[test]
fn the_scrape_counts_from_the_index_what_the_store_counts_from_its_tables() {
    use crate::store::ops::{Lookups, Metrics, OperatorQueries};
    let (_dir, mut store) = bulk(1_500);
    let mut index = MetricIndex::default();
    refresh(&mut index, &mut store).expect("load");
    let send_terms = |_: &str, _: &str| -> Result<crate::store::SendTerms, String> {
        Ok(crate::store::SendTerms {
            key: crate::domain::KeyContract {
                supports_idempotency: true,
                retention_ms: 86_400_000,
                timeout_ms: 100,
            },
            resource: "purchase-orders".into(),
        })
    };

    // After the load, through the change feed: forty orders of two tenants. Every fifth is
    // only created; the others are dispatched; every other one is left indeterminate, and
    // of those every third had two automatic lookups and those not receipted below spend
    // their budget last; every
    // fourth is receipted twice (a duplicate effect, and committed).
    let mut waiting = Vec::new();
    for n in 1..=40u64 {
        let mut new = new_intent(n);
        if n % 3 == 0 {
            new.tenant = "globex".parse().expect("tenant");
        }
        let CreateOutcome::Created(intent) = store.create_or_replay(&new).expect("create") else {
            panic!("not created");
        };
        if n % 5 == 0 {
            continue;
        }
        authorize_and_dispatch(&mut store, &intent.id, n);
        // The follower reads the dispatch before the dispatcher claims the send on its own
        // (not in the dispatch's write); for the odd orders nothing is written after it.
        refresh(&mut index, &mut store).expect("catch up");
        let claimed = store
            .claim_outbox("w1", END + n * 10 + 3, 10 * HOUR, 64, &send_terms)
            .expect("claim");
        assert_eq!(claimed.rows.len(), 1, "order {n}: {claimed:?}");
        // Every seventh had two providers propose; every fourteenth, different actions.
        if n % 7 == 0 {
            for (k, provider) in [(1u64, "openai"), (2, "anthropic")] {
                let proposal = crate::wire::NewAttempt {
                    kind: Some(crate::domain::AttemptKind::Proposal),
                    provider: provider.into(),
                    proposal_hash: Some(if n % 14 == 0 && k == 2 {
                        "other".into()
                    } else {
                        "same".into()
                    }),
                    ..Default::default()
                };
                let now = END + n * 10 + 3 + k;
                let id = AttemptId::generate(now, u128::from(n) * 13 + u128::from(k));
                store
                    .record_attempt(&intent.id, &id, &proposal, None, now)
                    .expect("proposal");
            }
        }
        if n % 2 == 0 {
            store
                .apply(&intent.id, &Event::OutcomeUnknown, &order_at(n, 1_000 * n))
                .expect("unknown");
            if n % 3 == 0 {
                for k in 1..=2u64 {
                    let now = END + HOUR / 4 + n * 100 + k;
                    store
                        .count_lookup(&intent.id, true, now, None)
                        .expect("count");
                    let lookup = crate::wire::NewAttempt {
                        kind: Some(crate::domain::AttemptKind::Lookup),
                        provider: "erp".into(),
                        ..Default::default()
                    };
                    let id = AttemptId::generate(now, u128::from(n) * 11 + u128::from(k));
                    store
                        .record_attempt(&intent.id, &id, &lookup, None, now)
                        .expect("lookup");
                }
            }
            if n % 6 == 0 && n % 4 != 0 {
                waiting.push(intent.id.clone());
            }
        }
        if n % 4 == 0 {
            // The second and third are one downstream id that several orders report, each
            // twice a minute apart: one duplicate effect of each of them.
            for k in 1..=3u64 {
                let source = ReceiptSource {
                    receipt_id: ReceiptId::generate(
                        END + HOUR / 2,
                        u128::from(n) * 5 + u128::from(k),
                    ),
                    downstream_id: if k == 1 {
                        format!("po-{n}-{k}")
                    } else {
                        "po-twice".into()
                    },
                    source: "lookup",
                    event_id: Some(format!("evt-{n}-{k}")),
                };
                let at = END + HOUR / 2 + n + if k == 3 { 60_000 } else { 0 };
                store
                    .observe_receipt(&intent.id, &source, at)
                    .expect("receipt");
            }
        }
    }
    let now = END + 2 * HOUR;
    let filters = [
        IntentFilter::default(),
        IntentFilter {
            allowed_tenants: Some(vec!["acme".into(), "globex".into()]),
            ..IntentFilter::default()
        },
        IntentFilter {
            providers: vec!["erp".into()],
            min_attempts: Some(2),
            ..IntentFilter::default()
        },
    ];
    let agree = |store: &mut Store, index: &MetricIndex, what: &str| {
        for filter in &filters {
            let from_index = summary(store, index, filter, now).expect("index");
            let from_tables = store
                .summary_with(filter, now, index.releases())
                .expect("tables");
            assert_eq!(from_index, from_tables, "{what}: summary under {filter:?}");
            // The series the API plots counts duplicate effects as the summary does, each
            // in the second it was first reported.
            let plotted: f64 = store
                .series("duplicate_effects", 1_000, "tenant", filter, 0, now + 1)
                .expect("series")
                .iter()
                .map(|p| p.value)
                .sum();
            assert_eq!(
                plotted, from_tables.duplicate_effects as f64,
                "{what}: duplicate effects plotted under {filter:?}"
            );
            assert_eq!(
                tenant_counts(store, index, filter, now).expect("index"),
                store.tenant_counts(filter, now).expect("tables"),
                "{what}: tenants under {filter:?}"
            );
        }
    };
    refresh(&mut index, &mut store).expect("catch up");
    let s = summary(&mut store, &index, &IntentFilter::default(), now).expect("summary");
    assert!(
        s.duplicate_effects >= 5
            && s.lookups >= 4
            && s.indeterminate.count >= 10
            && s.dispatched >= 32
            && s.failover_divergence > 0.0,
        "{s:?}"
    );
    agree(&mut store, &index, "caught up");

    // Spending the budget is a change of its own, with nothing else written.
    for id in &waiting {
        store.plan_lookup(id, None, Some(now)).expect("spent");
    }
    refresh(&mut index, &mut store).expect("catch up");
    let s = summary(&mut store, &index, &IntentFilter::default(), now).expect("summary");
    assert_eq!(s.lookups_exhausted, waiting.len() as u64);
    agree(&mut store, &index, "budgets spent");
}
