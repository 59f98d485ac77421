//! `GET /metrics`: Prometheus text within the caller's tenants (`Permission::Read`),
//! computed at scrape time from the dashboard's metric index (brought up to date from the
//! change feed first; a scrape while the coordinator is still loading the index at start
//! waits for it, as a dashboard does), so a scrape reads no more than the feed gained since
//! the last; only the outbox's depth is counted in the store.
//!
//! Metric families:
//! - `intentdesk_intents{state}` and `intentdesk_intents_by_tenant{tenant,state}`
//! - `intentdesk_attempt_amplification{quantile}` (a summary: `_sum` attempts, `_count`
//!   intents) with `intentdesk_attempt_amplification_mean` and `_max`
//! - `intentdesk_lookup_amplification{quantile}` (`_sum` lookups, `_count` intents) with
//!   `_max`, and `intentdesk_lookups_exhausted_count`: the reconciler's own amplification
//! - `intentdesk_indeterminate_count`, `intentdesk_indeterminate_oldest_age_seconds` and
//!   their `_by_tenant{tenant}` and `_by_provider{tenant,provider}` forms
//! - `intentdesk_duplicate_effects_total`, `intentdesk_late_results_total`,
//!   `intentdesk_goodput_committed_total`
//! - by tenant and provider: `intentdesk_attempts_by_provider_total`,
//!   `intentdesk_late_results_by_provider_total` (each attempt under the provider it used)
//!   and `intentdesk_duplicate_effects_by_provider_total` (under every provider the
//!   intent's attempts used); at most [`crate::metrics::PROVIDERS_PER_TENANT`] providers are named per
//!   tenant, the rest are `provider="(other)"`
//! - only for unrestricted tokens, as they describe the coordinator every tenant shares:
//!   `intentdesk_dispatcher_queue_depth` (the outbox), `intentdesk_ingest_writes_waiting`,
//!   `intentdesk_ingest_writes_limit` and `intentdesk_ingest_shed_total` (agents' writes
//!   refused with 503 because the write queue was full), `intentdesk_metric_index_bytes`,
//!   and how the store commits: `intentdesk_store_commits_total`,
//!   `intentdesk_store_writes_total` (their ratio is the group commit's size),
//!   `intentdesk_store_syncs_total` and `intentdesk_store_sync_seconds_total`; and SQLite's
//!   write-ahead log: `intentdesk_store_log_bytes` and `intentdesk_store_log_restarts_total`;
//!   and `intentdesk_store_groups_rerun_total` (group commits SQLite's writer ran again with
//!   savepoints after a write failed once it had changed rows); and
//!   `intentdesk_refused_answers_total{connector}` (a create's or a lookup's answer that
//!   named no key and a record another intent held: a downstream answering from the wrong
//!   record; counted in the store, through an index of those attempts alone).
//!
//! The per-tenant and per-provider families use their own names so that summing a family
//! never counts an intent twice; an intent that used two providers is under both in the
//! `_by_provider` families of intents (duplicates, indeterminate), never in those of
//! attempts. `deploy/prometheus/intentdesk-rules.yml` holds alerting rules over these.

use std::fmt::Write;

use axum::extract::State;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};

use super::AppState;
use super::auth::Principal;
use super::error::ApiError;
use crate::domain::{IntentState, Permission};
use crate::metrics::ProviderSlice;
use crate::store::IntentFilter;
use crate::store::db::IngestLoad;
use crate::store::operator_queries::TenantCounts;
use crate::store::ops::*;
use crate::store::queue::WriteStats;
use crate::wire::Summary;

/// Everything one scrape reports.
struct Scrape {
    summary: Summary,
    tenants: Vec<TenantCounts>,
    providers: Vec<ProviderSlice>,
    /// What only an unrestricted token sees.
    process: Option<Process>,
}

/// The coordinator's own figures, shared by every tenant.
struct Process {
    outbox_depth: u64,
    ingest: IngestLoad,
    writes: WriteStats,
    index_bytes: usize,
    /// Answers that named no key and a record another intent held, by connector: every
    /// configured connector (0 when none), and any other that has some.
    refused_answers: Vec<(String, u64)>,
}

pub(super) async fn scrape(
    State(state): State<AppState>,
    principal: Principal,
) -> Result<Response, ApiError> {
    principal.require(Permission::Read, "read metrics")?;
    let filter = IntentFilter {
        allowed_tenants: principal.tenants.clone(),
        ..IntentFilter::default()
    };
    let unrestricted = principal.tenants.is_none();
    let now = state.clock.now_ms();
    let ingest = state.db.ingest_load();
    let writes = state.db.write_stats();
    let connectors: Vec<String> = state
        .config
        .connectors
        .iter()
        .map(|c| c.name.clone())
        .collect();
    let scrape = super::charts::with_index(&state, move |s, index| {
        Ok(Scrape {
            summary: crate::metrics::summary(s, index, &filter, now)?,
            tenants: crate::metrics::tenant_counts(s, index, &filter, now)?,
            providers: crate::metrics::provider_slices(s, index, &filter, now)?,
            process: if unrestricted {
                Some(Process {
                    outbox_depth: s.outbox_depth()?,
                    ingest,
                    writes,
                    index_bytes: index.memory_bytes(),
                    refused_answers: by_connector(connectors, s.refused_answers()?),
                })
            } else {
                None
            },
        })
    })
    .await?;
    let mut response = render(&scrape).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    Ok(response)
}

/// `counted` beside every name in `configured` (0 where it has none), in name order, so a
/// connector's series exists before its first count and an alert sees its first rise.
fn by_connector(configured: Vec<String>, counted: Vec<(String, u64)>) -> Vec<(String, u64)> {
    let mut all: std::collections::BTreeMap<String, u64> =
        configured.into_iter().map(|name| (name, 0)).collect();
    all.extend(counted);
    all.into_iter().collect()
}

/// A label value with `\`, `"` and line breaks escaped.
fn label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

fn render(scrape: &Scrape) -> String {
    let s = &scrape.summary;
    let mut out = String::new();

    family(&mut out, "intentdesk_intents", "gauge", "Intents by state.");
    for state in IntentState::ALL {
        let n = s.states.get(state.as_str()).copied().unwrap_or(0);
        let _ = writeln!(out, "intentdesk_intents{{state=\"{state}\"}} {n}");
    }
    family(
        &mut out,
        "intentdesk_intents_by_tenant",
        "gauge",
        "Intents by tenant and state.",
    );
    for t in &scrape.tenants {
        for (state, n) in &t.states {
            let _ = writeln!(
                out,
                "intentdesk_intents_by_tenant{{tenant=\"{}\",state=\"{}\"}} {n}",
                label(&t.tenant),
                label(state)
            );
        }
    }

    let a = &s.amplification;
    family(
        &mut out,
        "intentdesk_attempt_amplification",
        "summary",
        "Attempts per intent.",
    );
    for (q, v) in [("0.5", a.p50), ("0.95", a.p95), ("0.99", a.p99)] {
        let _ = writeln!(
            out,
            "intentdesk_attempt_amplification{{quantile=\"{q}\"}} {v}"
        );
    }
    let _ = writeln!(out, "intentdesk_attempt_amplification_sum {}", s.attempts);
    let _ = writeln!(out, "intentdesk_attempt_amplification_count {}", s.intents);
    family(
        &mut out,
        "intentdesk_attempt_amplification_mean",
        "gauge",
        "Attempts divided by intents.",
    );
    let _ = writeln!(out, "intentdesk_attempt_amplification_mean {}", a.mean);
    family(
        &mut out,
        "intentdesk_attempt_amplification_max",
        "gauge",
        "The most attempts any one intent took.",
    );
    let _ = writeln!(out, "intentdesk_attempt_amplification_max {}", a.max);

    let l = &s.lookup_amplification;
    family(
        &mut out,
        "intentdesk_lookup_amplification",
        "summary",
        "Lookups of an action key per intent.",
    );
    for (q, v) in [("0.5", l.p50), ("0.95", l.p95), ("0.99", l.p99)] {
        let _ = writeln!(
            out,
            "intentdesk_lookup_amplification{{quantile=\"{q}\"}} {v}"
        );
    }
    let _ = writeln!(out, "intentdesk_lookup_amplification_sum {}", s.lookups);
    let _ = writeln!(out, "intentdesk_lookup_amplification_count {}", s.intents);
    family(
        &mut out,
        "intentdesk_lookup_amplification_max",
        "gauge",
        "The most lookups any one intent took.",
    );
    let _ = writeln!(out, "intentdesk_lookup_amplification_max {}", l.max);
    family(
        &mut out,
        "intentdesk_lookups_exhausted_count",
        "gauge",
        "Indeterminate intents whose automatic lookups' budget is spent: they wait for an operator.",
    );
    let _ = writeln!(
        out,
        "intentdesk_lookups_exhausted_count {}",
        s.lookups_exhausted
    );

    family(
        &mut out,
        "intentdesk_indeterminate_count",
        "gauge",
        "Intents whose outcome is not proved either way.",
    );
    let _ = writeln!(
        out,
        "intentdesk_indeterminate_count {}",
        s.indeterminate.count
    );
    family(
        &mut out,
        "intentdesk_indeterminate_oldest_age_seconds",
        "gauge",
        "How long the oldest indeterminate intent has been indeterminate.",
    );
    let _ = writeln!(
        out,
        "intentdesk_indeterminate_oldest_age_seconds {}",
        s.indeterminate.oldest_age_secs
    );
    family(
        &mut out,
        "intentdesk_indeterminate_count_by_tenant",
        "gauge",
        "Indeterminate intents by tenant.",
    );
    for t in &scrape.tenants {
        let _ = writeln!(
            out,
            "intentdesk_indeterminate_count_by_tenant{{tenant=\"{}\"}} {}",
            label(&t.tenant),
            t.indeterminate
        );
    }
    family(
        &mut out,
        "intentdesk_indeterminate_oldest_age_seconds_by_tenant",
        "gauge",
        "Age of the oldest indeterminate intent, by tenant.",
    );
    for t in &scrape.tenants {
        let _ = writeln!(
            out,
            "intentdesk_indeterminate_oldest_age_seconds_by_tenant{{tenant=\"{}\"}} {}",
            label(&t.tenant),
            t.indeterminate_oldest_age_secs
        );
    }

    family(
        &mut out,
        "intentdesk_duplicate_effects_total",
        "counter",
        "Downstream effects beyond an intent's first.",
    );
    let _ = writeln!(
        out,
        "intentdesk_duplicate_effects_total {}",
        s.duplicate_effects
    );
    family(
        &mut out,
        "intentdesk_late_results_total",
        "counter",
        "Attempts that completed after their intent's deadline or cancellation.",
    );
    let _ = writeln!(out, "intentdesk_late_results_total {}", s.late_results);
    family(
        &mut out,
        "intentdesk_goodput_committed_total",
        "counter",
        "Committed intents.",
    );
    let _ = writeln!(out, "intentdesk_goodput_committed_total {}", s.committed);

    render_providers(&mut out, &scrape.providers);
    if let Some(process) = &scrape.process {
        render_process(&mut out, process);
    }
    out
}

/// The families sliced by tenant and provider.
fn render_providers(out: &mut String, slices: &[ProviderSlice]) {
    type Figure = fn(&ProviderSlice) -> u64;
    let families: [(&str, &str, &str, Figure); 5] = [
        (
            "intentdesk_attempts_by_provider_total",
            "counter",
            "Attempts, by tenant and the provider each used.",
            |s| s.attempts,
        ),
        (
            "intentdesk_late_results_by_provider_total",
            "counter",
            "Attempts that completed after their intent's deadline or cancellation, by tenant and provider.",
            |s| s.late_results,
        ),
        (
            "intentdesk_duplicate_effects_by_provider_total",
            "counter",
            "Downstream effects beyond an intent's first, under every provider the intent used.",
            |s| s.duplicate_effects,
        ),
        (
            "intentdesk_indeterminate_count_by_provider",
            "gauge",
            "Indeterminate intents, under every provider the intent used.",
            |s| s.indeterminate,
        ),
        (
            "intentdesk_indeterminate_oldest_age_seconds_by_provider",
            "gauge",
            "Age of the oldest indeterminate intent, by tenant and provider.",
            |s| s.indeterminate_oldest_age_secs,
        ),
    ];
    for (name, kind, help, figure) in families {
        family(out, name, kind, help);
        for s in slices {
            let _ = writeln!(
                out,
                "{name}{{tenant=\"{}\",provider=\"{}\"}} {}",
                label(&s.tenant),
                label(&s.provider),
                figure(s)
            );
        }
    }
}

fn render_process(out: &mut String, p: &Process) {
    let figures = [
        (
            "intentdesk_dispatcher_queue_depth",
            "gauge",
            "Dispatches waiting or in flight.",
            p.outbox_depth,
        ),
        (
            "intentdesk_ingest_writes_waiting",
            "gauge",
            "Agents' writes waiting for or in the store (a batch counts its intents).",
            p.ingest.in_flight as u64,
        ),
        (
            "intentdesk_ingest_writes_limit",
            "gauge",
            "Agents' writes allowed to wait at once (limits.max_queued_writes).",
            p.ingest.cap as u64,
        ),
        (
            "intentdesk_ingest_shed_total",
            "counter",
            "Agents' writes refused with 503 because the write queue was full (a batch counts its intents).",
            p.ingest.shed_total,
        ),
        (
            "intentdesk_metric_index_bytes",
            "gauge",
            "Memory the dashboard's metric index holds, roughly.",
            p.index_bytes as u64,
        ),
        (
            "intentdesk_store_commits_total",
            "counter",
            "Transactions the store's writers committed (a group commit is one).",
            p.writes.commits,
        ),
        (
            "intentdesk_store_writes_total",
            "counter",
            "Writes those transactions held: per commit, the size of the group commits.",
            p.writes.writes,
        ),
        (
            "intentdesk_store_syncs_total",
            "counter",
            "Syncs of SQLite's log that answered them (each answers every commit before it).",
            p.writes.syncs,
        ),
        (
            "intentdesk_store_log_bytes",
            "gauge",
            "Bytes in SQLite's write-ahead log after the last commit (0 on PostgreSQL).",
            p.writes.log_bytes,
        ),
        (
            "intentdesk_store_log_restarts_total",
            "counter",
            "Times SQLite's write-ahead log was started over from its beginning.",
            p.writes.log_restarts,
        ),
        (
            "intentdesk_store_groups_rerun_total",
            "counter",
            "Group commits SQLite's writer ran again with savepoints after a failed write had changed rows.",
            p.writes.reruns,
        ),
    ];
    for (name, kind, help, value) in figures {
        family(out, name, kind, help);
        let _ = writeln!(out, "{name} {value}");
    }
    family(
        out,
        "intentdesk_store_sync_seconds_total",
        "counter",
        "Time spent in those syncs.",
    );
    let _ = writeln!(
        out,
        "intentdesk_store_sync_seconds_total {}",
        p.writes.sync_micros as f64 / 1e6
    );
    family(
        out,
        "intentdesk_refused_answers_total",
        "counter",
        "Answers, a create's or a lookup's, that named no key and a record another intent held \
         (a downstream answering from the wrong record), by connector; each left its intent to be looked up.",
    );
    for (connector, n) in &p.refused_answers {
        let _ = writeln!(
            out,
            "intentdesk_refused_answers_total{{connector=\"{}\"}} {n}",
            label(connector)
        );
    }
}
