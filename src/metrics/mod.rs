//! The dashboard's aggregations: time series of every logical-outcome metric, the
//! attempts-per-intent histogram and an as-of overview, each filtered like the intent list
//! and split by one dimension (one series per value). They run over [`MetricIndex`], an
//! in-memory copy of the columns they need kept current from the change feed, so a series
//! over five million attempts costs a scan of compact arrays, not of the tables.
//!
//! What each series counts, per bucket of `bucket_ms` (buckets start at multiples of it):
//!
//! | metric | value |
//! |---|---|
//! | `attempts` | attempts started in the bucket |
//! | `amplification_mean`, `amplification_p99` | attempts per intent over the intents *created* in the bucket (mean; nearest-rank p99) |
//! | `indeterminate` | intents indeterminate at the bucket's end (or now), from the recorded transitions: a true count over time |
//! | `indeterminate_age_oldest`, `_p50`, `_p95` | how long those intents had been indeterminate then, in seconds |
//! | `committed`, `goodput_per_min` | intents committed in the bucket, and that per minute |
//! | `goodput_per_attempt` | intents committed in the bucket ÷ attempts started in it |
//! | `late_results` | attempts that completed late (after the deadline or a final state), by completion time |
//! | `late_result_rate` | of the attempts started in the bucket, the share that completed late |
//! | `duplicate_effects` | downstream effects beyond the intent's receipt, by when they were seen |
//! | `failover_divergence` | of the intents created in the bucket with ≥ 2 proposals, the share whose proposals differ |
//!
//! The overview counts lookups beside attempts, as their own amplification (lookups per
//! intent, mean and max), never added to the attempts'.
//!
//! Slicing by provider: an attempt belongs to its own provider (and release); an intent to
//! every provider its attempts used, as the intent list's provider filter has it, so the
//! intents behind a provider's point are exactly those that filter shows. Ratios have no
//! point in a bucket with nothing to divide by.

mod chart;
mod index;
mod records;
mod select;
mod slices;
mod summary;

use std::collections::HashMap;

use chart::chart_over;
pub use index::MetricIndex;
use select::{Compiled, group_name, intent_groups, rank, rank_of_counts};
pub use slices::{PROVIDERS_PER_TENANT, ProviderSlice, provider_slices};
pub use summary::{summary, tenant_counts};

use crate::store::metric_source::MetricSource;
use crate::store::{IntentFilter, StoreError};
use crate::wire::{AttemptsHistogram, Chart, ChartMetric, GroupBy, HistogramGroup, Overview};

/// What to plot.
#[derive(Debug, Clone, PartialEq)]
pub struct ChartQuery {
    pub metric: ChartMetric,
    pub group_by: GroupBy,
    pub bucket_ms: u64,
    pub from_ms: u64,
    pub to_ms: u64,
    /// Levels (indeterminate now) are evaluated no later than this.
    pub now_ms: u64,
}

/// Bring `index` up to date with what `source` holds.
pub fn refresh(index: &mut MetricIndex, source: &mut dyn MetricSource) -> Result<(), StoreError> {
    index.refresh(source)
}

/// One chart over `index` (refresh it first); `source` selects by search text and pause.
pub fn chart(
    source: &mut dyn MetricSource,
    index: &MetricIndex,
    query: &ChartQuery,
    filter: &IntentFilter,
) -> Result<Chart, StoreError> {
    let compiled = Compiled::new(index, filter, source.selection(filter)?);
    chart_over(index, query, &compiled).map_err(StoreError::Conflict)
}

/// The attempts-per-intent histogram of the intents created in `[from_ms, to_ms)`.
pub fn attempts_histogram(
    source: &mut dyn MetricSource,
    index: &MetricIndex,
    group_by: GroupBy,
    filter: &IntentFilter,
    from_ms: u64,
    to_ms: u64,
) -> Result<AttemptsHistogram, StoreError> {
    let compiled = Compiled::new(index, filter, source.selection(filter)?);
    let mut dense: Vec<Vec<u64>> = Vec::new();
    let mut over: HashMap<u16, u64> = HashMap::new();
    let mut budgets: HashMap<u32, u64> = HashMap::new();
    let mut groups = Vec::new();
    for (_, r) in index.live() {
        if !compiled.matches(r) || r.created_ms < from_ms || r.created_ms >= to_ms {
            continue;
        }
        *budgets.entry(r.max_attempts).or_default() += 1;
        intent_groups(index, group_by, r, &mut groups);
        for &g in &groups {
            let (g_at, a) = (usize::from(g), r.attempts as usize);
            if dense.len() <= g_at {
                dense.resize(g_at + 1, Vec::new());
            }
            if dense[g_at].len() <= a {
                dense[g_at].resize(a + 1, 0);
            }
            dense[g_at][a] += 1;
            if r.attempts > r.max_attempts {
                *over.entry(g).or_default() += 1;
            }
        }
    }
    let budget = budgets
        .into_iter()
        .max_by_key(|&(b, n)| (n, std::cmp::Reverse(b)))
        .map_or(0, |(b, _)| u64::from(b));
    let mut groups: Vec<HistogramGroup> = dense
        .into_iter()
        .enumerate()
        .filter(|(_, bins)| !bins.is_empty())
        .map(|(g, bins)| HistogramGroup {
            group: group_name(index, group_by, g as u16),
            intents: bins.iter().sum(),
            over_budget: over.get(&(g as u16)).copied().unwrap_or(0),
            bins: bins
                .into_iter()
                .enumerate()
                .filter(|(_, n)| *n > 0)
                .map(|(a, n)| [a as u64, n])
                .collect(),
        })
        .collect();
    groups.sort_by(|a, b| a.group.cmp(&b.group));
    Ok(AttemptsHistogram {
        group_by,
        budget,
        groups,
    })
}

/// When the first selected intent was created (`None` when none is selected).
pub fn first_created(
    source: &mut dyn MetricSource,
    index: &MetricIndex,
    filter: &IntentFilter,
) -> Result<Option<u64>, StoreError> {
    let compiled = Compiled::new(index, filter, source.selection(filter)?);
    Ok(index
        .live()
        .filter(|(_, r)| compiled.matches(r))
        .map(|(_, r)| r.created_ms)
        .min())
}

const HOUR_MS: u64 = 3_600_000;

/// The headline figures of the selected intents as of `at_ms`; goodput is counted in the
/// hour up to `at_ms` and the hour before, the late-result rate over every attempt.
pub fn overview(
    source: &mut dyn MetricSource,
    index: &MetricIndex,
    filter: &IntentFilter,
    at_ms: u64,
) -> Result<Overview, StoreError> {
    let compiled = Compiled::new(index, filter, source.selection(filter)?);
    let mut o = Overview {
        at_ms,
        first_created_ms: u64::MAX,
        ..Overview::default()
    };
    // Intents by attempt count.
    let mut per_intent: Vec<u64> = Vec::new();
    let mut ages = Vec::new();
    let (mut with_two, mut diverged) = (0u64, 0u64);
    for (pos, r) in index.live() {
        if !compiled.matches(r) {
            continue;
        }
        o.intents += 1;
        o.attempts += u64::from(r.attempts);
        o.lookups += u64::from(r.lookups);
        o.lookup_amplification_max = o.lookup_amplification_max.max(u64::from(r.lookups));
        select::count_value(&mut per_intent, r.attempts);
        o.first_created_ms = o.first_created_ms.min(r.created_ms);
        o.last_created_ms = o.last_created_ms.max(r.created_ms);
        if r.committed_ms != 0 && r.committed_ms <= at_ms {
            o.committed += 1;
            match at_ms - r.committed_ms {
                age if age < HOUR_MS => o.committed_last_hour += 1,
                age if age < 2 * HOUR_MS => o.committed_previous_hour += 1,
                _ => {}
            }
        }
        o.late_results += u64::from(r.late);
        o.duplicate_effects += index.duplicates.get(&pos).map_or(0, |d| d.len() as u64);
        if r.proposals >= 2 {
            with_two += 1;
            diverged += u64::from(r.diverged);
        }
        if let Some(spans) = index.indeterminate.get(&pos) {
            for s in spans {
                if s.entered_ms <= at_ms && at_ms < s.left_ms {
                    ages.push((at_ms - s.entered_ms) / 1000);
                }
            }
        }
    }
    if o.intents == 0 {
        o.first_created_ms = 0;
    }
    o.amplification_mean = if o.intents == 0 {
        0.0
    } else {
        o.attempts as f64 / o.intents as f64
    };
    o.lookup_amplification_mean = if o.intents == 0 {
        0.0
    } else {
        o.lookups as f64 / o.intents as f64
    };
    o.amplification_p99 = rank_of_counts(&per_intent, 99);
    o.amplification_max = per_intent
        .iter()
        .rposition(|&n| n > 0)
        .map_or(0, |a| a as u64);
    ages.sort_unstable();
    o.indeterminate = ages.len() as u64;
    o.indeterminate_oldest_age_secs = ages.last().copied().unwrap_or(0);
    o.indeterminate_p50_age_secs = rank(&ages, 50);
    o.indeterminate_p95_age_secs = rank(&ages, 95);
    o.late_result_rate = if o.attempts == 0 {
        0.0
    } else {
        o.late_results as f64 / o.attempts as f64
    };
    o.failover_divergence = crate::domain::metrics::divergence_rate(diverged, with_two);
    Ok(o)
}

#[cfg(test)]
pub(crate) mod tests;
