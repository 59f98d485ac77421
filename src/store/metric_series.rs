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
//! | `duplicate_effects` | downstream effects beyond the intent's receipt, by when they were seen |
//! | `failover_divergence` | of the intents created in the bucket with ≥ 2 proposals, the share whose proposals differ |
//!
//! Slicing by provider: an attempt belongs to its own provider (and release); an intent to
//! every provider its attempts used, as the intent list's provider filter has it, so the
//! intents behind a provider's point are exactly those that filter shows. Ratios have no
//! point in a bucket with nothing to divide by.

mod index;

use std::collections::{BTreeMap, HashMap, HashSet};

use rusqlite::params_from_iter;
use serde::{Deserialize, Serialize};

pub use index::MetricIndex;
use index::{Dict, IntentRec, provider_bit};

use super::query::{IntentFilter, filter_where};
use super::{Store, StoreError};

/// A metric the dashboard can plot over time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChartMetric {
    Attempts,
    AmplificationMean,
    AmplificationP99,
    Indeterminate,
    IndeterminateAgeOldest,
    IndeterminateAgeP50,
    IndeterminateAgeP95,
    Committed,
    GoodputPerMin,
    GoodputPerAttempt,
    LateResults,
    DuplicateEffects,
    FailoverDivergence,
}

impl ChartMetric {
    pub const ALL: &'static [ChartMetric] = &[
        ChartMetric::Attempts,
        ChartMetric::AmplificationMean,
        ChartMetric::AmplificationP99,
        ChartMetric::Indeterminate,
        ChartMetric::IndeterminateAgeOldest,
        ChartMetric::IndeterminateAgeP50,
        ChartMetric::IndeterminateAgeP95,
        ChartMetric::Committed,
        ChartMetric::GoodputPerMin,
        ChartMetric::GoodputPerAttempt,
        ChartMetric::LateResults,
        ChartMetric::DuplicateEffects,
        ChartMetric::FailoverDivergence,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ChartMetric::Attempts => "attempts",
            ChartMetric::AmplificationMean => "amplification_mean",
            ChartMetric::AmplificationP99 => "amplification_p99",
            ChartMetric::Indeterminate => "indeterminate",
            ChartMetric::IndeterminateAgeOldest => "indeterminate_age_oldest",
            ChartMetric::IndeterminateAgeP50 => "indeterminate_age_p50",
            ChartMetric::IndeterminateAgeP95 => "indeterminate_age_p95",
            ChartMetric::Committed => "committed",
            ChartMetric::GoodputPerMin => "goodput_per_min",
            ChartMetric::GoodputPerAttempt => "goodput_per_attempt",
            ChartMetric::LateResults => "late_results",
            ChartMetric::DuplicateEffects => "duplicate_effects",
            ChartMetric::FailoverDivergence => "failover_divergence",
        }
    }

    pub fn parse(name: &str) -> Option<ChartMetric> {
        Self::ALL.iter().copied().find(|m| m.as_str() == name)
    }
}

/// The dimension a chart is split by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GroupBy {
    #[default]
    None,
    Tenant,
    Provider,
    Release,
    Tool,
    Operation,
    Locale,
    Tier,
}

impl GroupBy {
    pub const ALL: &'static [GroupBy] = &[
        GroupBy::None,
        GroupBy::Tenant,
        GroupBy::Provider,
        GroupBy::Release,
        GroupBy::Tool,
        GroupBy::Operation,
        GroupBy::Locale,
        GroupBy::Tier,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            GroupBy::None => "none",
            GroupBy::Tenant => "tenant",
            GroupBy::Provider => "provider",
            GroupBy::Release => "release",
            GroupBy::Tool => "tool",
            GroupBy::Operation => "operation",
            GroupBy::Locale => "locale",
            GroupBy::Tier => "tier",
        }
    }

    pub fn parse(name: &str) -> Option<GroupBy> {
        Self::ALL.iter().copied().find(|g| g.as_str() == name)
    }
}

/// The name of the one series of an unsplit chart.
pub const ALL_GROUP: &str = "all";

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

/// One series: `points` are `[bucket start ms, value, count behind the value]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChartSeries {
    pub group: String,
    pub points: Vec<[f64; 3]>,
    /// Sum of the counts (events in the window), or the last level for levels.
    pub total: f64,
}

/// A chart's data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Chart {
    pub metric: ChartMetric,
    pub group_by: GroupBy,
    pub bucket_ms: u64,
    pub from_ms: u64,
    pub to_ms: u64,
    pub series: Vec<ChartSeries>,
}

/// Attempts per intent: how many intents needed each number of attempts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistogramGroup {
    pub group: String,
    /// `[attempts, intents]`, ascending.
    pub bins: Vec<[u64; 2]>,
    pub intents: u64,
    /// Intents with more attempts than their own `max_attempts`.
    pub over_budget: u64,
}

/// The histogram of attempts per intent, with the budget most intents have.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttemptsHistogram {
    pub group_by: GroupBy,
    pub budget: u64,
    pub groups: Vec<HistogramGroup>,
}

/// The headline figures as of one instant.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Overview {
    pub at_ms: u64,
    pub intents: u64,
    pub attempts: u64,
    pub amplification_mean: f64,
    pub amplification_p99: u64,
    pub amplification_max: u64,
    pub indeterminate: u64,
    pub indeterminate_oldest_age_secs: u64,
    pub indeterminate_p50_age_secs: u64,
    pub indeterminate_p95_age_secs: u64,
    pub committed: u64,
    pub late_results: u64,
    pub duplicate_effects: u64,
    pub failover_divergence: f64,
    /// When the first and last selected intents were created (0 when none).
    pub first_created_ms: u64,
    pub last_created_ms: u64,
}

/// The nearest-rank percentile of sorted values (the domain's definition).
fn rank<T: Copy + Default>(sorted: &[T], p: usize) -> T {
    let n = sorted.len();
    if n == 0 {
        return T::default();
    }
    sorted[(p * n).div_ceil(100).clamp(1, n) - 1]
}

/// The nearest-rank percentile of values given as counts per value (`counts[v]` values
/// equal to `v`).
fn rank_of_counts(counts: &[u64], p: u64) -> u64 {
    let total: u64 = counts.iter().sum();
    let want = (p * total).div_ceil(100).max(1);
    let mut seen = 0;
    for (v, &n) in counts.iter().enumerate() {
        seen += n;
        if seen >= want {
            return v as u64;
        }
    }
    0
}

/// A filter turned into lookups over interned ids.
struct Compiled {
    tenants: Option<Vec<bool>>,
    allowed: Option<Vec<bool>>,
    states: Option<Vec<bool>>,
    operations: Option<Vec<bool>>,
    tools: Option<Vec<bool>>,
    releases: Option<Vec<bool>>,
    locales: Option<Vec<bool>>,
    tiers: Option<Vec<bool>>,
    providers: Option<u64>,
    since_ms: Option<u64>,
    until_ms: Option<u64>,
    min_attempts: Option<u32>,
    /// The intents a search or pause filter selects, found by SQL.
    seqs: Option<HashSet<i64>>,
}

fn member_set(dict: &Dict, values: &[String]) -> Option<Vec<bool>> {
    if values.is_empty() {
        return None;
    }
    let mut set = vec![false; dict.len()];
    for v in values {
        if let Some(id) = dict.find(v) {
            set[usize::from(id)] = true;
        }
    }
    Some(set)
}

fn allows(set: &Option<Vec<bool>>, id: u16) -> bool {
    set.as_ref()
        .is_none_or(|s| s.get(usize::from(id)).copied().unwrap_or(false))
}

impl Compiled {
    fn new(index: &MetricIndex, filter: &IntentFilter, seqs: Option<HashSet<i64>>) -> Compiled {
        let d = &index.dicts;
        let names = |list: &[String]| list.to_vec();
        Compiled {
            tenants: member_set(&d.tenant, &filter.tenants),
            allowed: filter.allowed_tenants.as_ref().map(|allowed| {
                member_set(&d.tenant, allowed).unwrap_or_else(|| vec![false; d.tenant.len()])
            }),
            states: member_set(
                &d.state,
                &filter
                    .states
                    .iter()
                    .map(|s| s.as_str().to_string())
                    .collect::<Vec<_>>(),
            ),
            operations: member_set(&d.operation, &names(&filter.operations)),
            tools: member_set(&d.tool, &names(&filter.tools)),
            releases: member_set(&d.release, &names(&filter.releases)),
            locales: member_set(
                &d.locale,
                &filter
                    .locales
                    .iter()
                    .map(|l| l.as_str().to_string())
                    .collect::<Vec<_>>(),
            ),
            tiers: member_set(
                &d.tier,
                &filter
                    .tiers
                    .iter()
                    .map(|t| t.as_str().to_string())
                    .collect::<Vec<_>>(),
            ),
            providers: (!filter.providers.is_empty()).then(|| {
                filter
                    .providers
                    .iter()
                    .filter_map(|p| d.provider.find(p))
                    .fold(0u64, |m, id| m | provider_bit(id))
            }),
            since_ms: filter.since_ms,
            until_ms: filter.until_ms,
            min_attempts: filter.min_attempts,
            seqs,
        }
    }

    fn matches(&self, r: &IntentRec) -> bool {
        allows(&self.tenants, r.tenant)
            && allows(&self.allowed, r.tenant)
            && allows(&self.states, r.state)
            && allows(&self.operations, r.operation)
            && allows(&self.tools, r.tool)
            && allows(&self.releases, r.release)
            && allows(&self.locales, r.locale)
            && allows(&self.tiers, r.tier)
            && self.providers.is_none_or(|m| r.providers & m != 0)
            && self.since_ms.is_none_or(|s| r.created_ms >= s)
            && self.until_ms.is_none_or(|u| r.created_ms < u)
            && self.min_attempts.is_none_or(|m| r.attempts >= m)
            && self.seqs.as_ref().is_none_or(|s| s.contains(&r.seq))
    }
}

/// Group ids of one intent under `by` (several for providers).
fn intent_groups(by: GroupBy, r: &IntentRec, out: &mut Vec<u16>) {
    out.clear();
    match by {
        GroupBy::Provider => {
            let mut mask = r.providers;
            while mask != 0 {
                out.push(mask.trailing_zeros() as u16);
                mask &= mask - 1;
            }
        }
        other => out.push(single_group(other, r)),
    }
}

/// The group of an intent under a dimension it has exactly one value of.
fn single_group(by: GroupBy, r: &IntentRec) -> u16 {
    match by {
        GroupBy::None | GroupBy::Provider => 0,
        GroupBy::Tenant => r.tenant,
        GroupBy::Release => r.release,
        GroupBy::Tool => r.tool,
        GroupBy::Operation => r.operation,
        GroupBy::Locale => r.locale,
        GroupBy::Tier => r.tier,
    }
}

fn group_name(index: &MetricIndex, by: GroupBy, id: u16) -> String {
    let d = &index.dicts;
    match by {
        GroupBy::None => ALL_GROUP,
        GroupBy::Tenant => d.tenant.name(id),
        GroupBy::Provider => d.provider.name(id),
        GroupBy::Release => d.release.name(id),
        GroupBy::Tool => d.tool.name(id),
        GroupBy::Operation => d.operation.name(id),
        GroupBy::Locale => d.locale.name(id),
        GroupBy::Tier => d.tier.name(id),
    }
    .to_string()
}

/// The buckets of a window.
#[derive(Debug, Clone, Copy)]
struct Buckets {
    start_ms: u64,
    bucket_ms: u64,
    n: usize,
    from_ms: u64,
    to_ms: u64,
}

impl Buckets {
    fn new(q: &ChartQuery) -> Buckets {
        let bucket_ms = q.bucket_ms.max(1000);
        let start_ms = q.from_ms / bucket_ms * bucket_ms;
        let n = q.to_ms.saturating_sub(start_ms).div_ceil(bucket_ms) as usize;
        Buckets {
            start_ms,
            bucket_ms,
            n,
            from_ms: q.from_ms,
            to_ms: q.to_ms,
        }
    }

    fn of(&self, t: u64) -> Option<usize> {
        (t >= self.from_ms && t < self.to_ms)
            .then(|| ((t - self.start_ms) / self.bucket_ms) as usize)
    }

    fn start(&self, k: usize) -> u64 {
        self.start_ms + k as u64 * self.bucket_ms
    }
}

/// Per group, one value per bucket.
type Grid = BTreeMap<u16, Vec<f64>>;

/// A grid being filled in a hot loop: rows by group id, allocated on first use.
struct Dense {
    rows: Vec<Vec<f64>>,
    n: usize,
}

impl Dense {
    fn new(n: usize) -> Dense {
        Dense {
            rows: Vec::new(),
            n,
        }
    }

    fn at(&mut self, g: u16) -> &mut Vec<f64> {
        let g = usize::from(g);
        if self.rows.len() <= g {
            self.rows.resize(g + 1, Vec::new());
        }
        let row = &mut self.rows[g];
        if row.is_empty() {
            row.resize(self.n, 0.0);
        }
        row
    }

    fn into_grid(self) -> Grid {
        self.rows
            .into_iter()
            .enumerate()
            .filter(|(_, r)| !r.is_empty())
            .map(|(g, r)| (g as u16, r))
            .collect()
    }
}

fn cell(grid: &mut Grid, g: u16, n: usize) -> &mut Vec<f64> {
    grid.entry(g).or_insert_with(|| vec![0.0; n])
}

impl Store {
    /// Bring `index` up to date with this connection's view of the database.
    pub fn refresh_metric_index(&mut self, index: &mut MetricIndex) -> Result<(), StoreError> {
        index.refresh(&self.conn)
    }

    /// The intents a search text or pause filter selects (the rest filters in memory).
    fn sql_selection(&mut self, filter: &IntentFilter) -> Result<Option<HashSet<i64>>, StoreError> {
        if filter.q.as_deref().is_none_or(|q| q.trim().is_empty()) && filter.paused.is_none() {
            return Ok(None);
        }
        let w = filter_where(filter);
        let sql = format!("SELECT i.seq FROM intents i WHERE {}", w.sql());
        let mut stmt = self.conn.prepare_cached(&sql)?;
        let seqs = stmt
            .query_map(params_from_iter(w.values.iter()), |r| r.get::<_, i64>(0))?
            .collect::<Result<HashSet<_>, _>>()?;
        Ok(Some(seqs))
    }

    /// One chart over `index` (refresh it first).
    pub fn chart(
        &mut self,
        index: &MetricIndex,
        query: &ChartQuery,
        filter: &IntentFilter,
    ) -> Result<Chart, StoreError> {
        let compiled = Compiled::new(index, filter, self.sql_selection(filter)?);
        Ok(chart_over(index, query, &compiled))
    }

    /// The attempts-per-intent histogram of the intents created in `[from_ms, to_ms)`.
    pub fn attempts_histogram(
        &mut self,
        index: &MetricIndex,
        group_by: GroupBy,
        filter: &IntentFilter,
        from_ms: u64,
        to_ms: u64,
    ) -> Result<AttemptsHistogram, StoreError> {
        let compiled = Compiled::new(index, filter, self.sql_selection(filter)?);
        let mut dense: Vec<Vec<u64>> = Vec::new();
        let mut over: HashMap<u16, u64> = HashMap::new();
        let mut budgets: HashMap<u32, u64> = HashMap::new();
        let mut groups = Vec::new();
        for (_, r) in index.live() {
            if !compiled.matches(r) || r.created_ms < from_ms || r.created_ms >= to_ms {
                continue;
            }
            *budgets.entry(r.max_attempts).or_default() += 1;
            intent_groups(group_by, r, &mut groups);
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
        &mut self,
        index: &MetricIndex,
        filter: &IntentFilter,
    ) -> Result<Option<u64>, StoreError> {
        let compiled = Compiled::new(index, filter, self.sql_selection(filter)?);
        Ok(index
            .live()
            .filter(|(_, r)| compiled.matches(r))
            .map(|(_, r)| r.created_ms)
            .min())
    }

    /// The headline figures of the selected intents as of `at_ms`.
    pub fn overview(
        &mut self,
        index: &MetricIndex,
        filter: &IntentFilter,
        at_ms: u64,
    ) -> Result<Overview, StoreError> {
        let compiled = Compiled::new(index, filter, self.sql_selection(filter)?);
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
            let a = r.attempts as usize;
            if per_intent.len() <= a {
                per_intent.resize(a + 1, 0);
            }
            per_intent[a] += 1;
            o.first_created_ms = o.first_created_ms.min(r.created_ms);
            o.last_created_ms = o.last_created_ms.max(r.created_ms);
            if r.committed_ms != 0 && r.committed_ms <= at_ms {
                o.committed += 1;
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
        o.failover_divergence = if with_two == 0 {
            0.0
        } else {
            diverged as f64 / with_two as f64
        };
        Ok(o)
    }
}

/// The chart itself, a pure function of the index and the compiled filter.
fn chart_over(index: &MetricIndex, q: &ChartQuery, f: &Compiled) -> Chart {
    use ChartMetric as M;
    let b = Buckets::new(q);
    let n = b.n;
    let by = q.group_by;
    let mut groups = Vec::new();
    let mut values: Grid = BTreeMap::new();
    let mut counts: Grid = BTreeMap::new();
    let attempt_group = |r: &IntentRec, a: &index::AttemptRec| match by {
        GroupBy::Provider => a.provider,
        GroupBy::Release => a.release(),
        other => single_group(other, r),
    };
    match q.metric {
        M::Attempts | M::LateResults | M::GoodputPerAttempt => {
            let mut dense = Dense::new(n);
            for (_, r) in index.live() {
                if !f.matches(r) {
                    continue;
                }
                for a in index.attempts_of(r) {
                    let t = if q.metric == M::LateResults {
                        if !a.late() {
                            continue;
                        }
                        a.ended_ms().unwrap_or(a.started_ms)
                    } else {
                        a.started_ms
                    };
                    if let Some(k) = b.of(t) {
                        dense.at(attempt_group(r, a))[k] += 1.0;
                    }
                }
            }
            counts = dense.into_grid();
            if q.metric == M::GoodputPerAttempt {
                let mut committed: Grid = BTreeMap::new();
                for (_, r) in index.live() {
                    if !f.matches(r) || r.committed_ms == 0 {
                        continue;
                    }
                    if let Some(k) = b.of(r.committed_ms) {
                        intent_groups(by, r, &mut groups);
                        for &g in &groups {
                            cell(&mut committed, g, n)[k] += 1.0;
                        }
                    }
                }
                for (g, attempts) in &counts {
                    let done = committed.get(g);
                    let v = cell(&mut values, *g, n);
                    for k in 0..n {
                        v[k] = if attempts[k] > 0.0 {
                            done.map_or(0.0, |d| d[k]) / attempts[k]
                        } else {
                            f64::NAN
                        };
                    }
                }
            } else {
                values = counts.clone();
            }
        }
        M::Committed | M::GoodputPerMin | M::DuplicateEffects => {
            let per_min = if q.metric == M::GoodputPerMin {
                60_000.0 / b.bucket_ms as f64
            } else {
                1.0
            };
            let mut dense = Dense::new(n);
            for (pos, r) in index.live() {
                if !f.matches(r) {
                    continue;
                }
                intent_groups(by, r, &mut groups);
                let times: &[u64] = if q.metric == M::DuplicateEffects {
                    index.duplicates.get(&pos).map_or(&[], Vec::as_slice)
                } else if r.committed_ms != 0 {
                    std::slice::from_ref(&r.committed_ms)
                } else {
                    &[]
                };
                for &t in times {
                    if let Some(k) = b.of(t) {
                        for &g in &groups {
                            dense.at(g)[k] += 1.0;
                        }
                    }
                }
            }
            counts = dense.into_grid();
            values = counts
                .iter()
                .map(|(g, c)| (*g, c.iter().map(|x| x * per_min).collect()))
                .collect();
        }
        M::AmplificationMean | M::AmplificationP99 | M::FailoverDivergence => {
            let mut cohorts: BTreeMap<u16, Vec<Vec<u32>>> = BTreeMap::new();
            for (_, r) in index.live() {
                if !f.matches(r) {
                    continue;
                }
                let Some(k) = b.of(r.created_ms) else {
                    continue;
                };
                if q.metric == M::FailoverDivergence && r.proposals < 2 {
                    continue;
                }
                let v = if q.metric == M::FailoverDivergence {
                    u32::from(r.diverged)
                } else {
                    r.attempts
                };
                intent_groups(by, r, &mut groups);
                for &g in &groups {
                    cohorts.entry(g).or_insert_with(|| vec![Vec::new(); n])[k].push(v);
                }
            }
            for (g, mut buckets) in cohorts {
                let v = cell(&mut values, g, n);
                let c = cell(&mut counts, g, n);
                for k in 0..n {
                    let list = &mut buckets[k];
                    c[k] = list.len() as f64;
                    v[k] = if list.is_empty() {
                        f64::NAN
                    } else if q.metric == M::AmplificationP99 {
                        list.sort_unstable();
                        f64::from(rank(list, 99))
                    } else {
                        list.iter().map(|&x| f64::from(x)).sum::<f64>() / list.len() as f64
                    };
                }
            }
        }
        M::Indeterminate
        | M::IndeterminateAgeOldest
        | M::IndeterminateAgeP50
        | M::IndeterminateAgeP95 => {
            levels(index, q, f, &b, &mut values, &mut counts);
        }
    }
    let level = matches!(
        q.metric,
        M::Indeterminate
            | M::IndeterminateAgeOldest
            | M::IndeterminateAgeP50
            | M::IndeterminateAgeP95
    );
    let mut series: Vec<ChartSeries> = values
        .into_iter()
        .map(|(g, v)| {
            let c = counts.get(&g);
            let points: Vec<[f64; 3]> = (0..n)
                .filter(|&k| !v[k].is_nan())
                .map(|k| [b.start(k) as f64, v[k], c.map_or(0.0, |c| c[k])])
                .collect();
            let total = if level {
                points.last().map_or(0.0, |p| p[1])
            } else {
                c.map_or(0.0, |c| c.iter().sum())
            };
            ChartSeries {
                group: group_name(index, by, g),
                points,
                total,
            }
        })
        .collect();
    series.sort_by(|a, b| a.group.cmp(&b.group));
    Chart {
        metric: q.metric,
        group_by: by,
        bucket_ms: b.bucket_ms,
        from_ms: q.from_ms,
        to_ms: q.to_ms,
        series,
    }
}

/// Intents indeterminate at each bucket's end, and their ages then.
fn levels(
    index: &MetricIndex,
    q: &ChartQuery,
    f: &Compiled,
    b: &Buckets,
    values: &mut Grid,
    counts: &mut Grid,
) {
    use ChartMetric as M;
    let mut spans: Vec<(u64, u64, u16)> = Vec::new();
    let mut groups = Vec::new();
    for (&pos, list) in &index.indeterminate {
        let r = &index.intents[pos as usize];
        if !r.live || !f.matches(r) {
            continue;
        }
        intent_groups(q.group_by, r, &mut groups);
        for s in list {
            for &g in &groups {
                spans.push((s.entered_ms, s.left_ms, g));
            }
        }
    }
    spans.sort_unstable();
    let mut ages: BTreeMap<u16, Vec<u64>> = BTreeMap::new();
    for k in 0..b.n {
        let start = b.start(k);
        if start > q.now_ms {
            break;
        }
        let at = (start + b.bucket_ms).min(q.now_ms).min(b.to_ms);
        ages.values_mut().for_each(Vec::clear);
        for &(entered, left, g) in spans.iter().take_while(|s| s.0 <= at) {
            if at < left {
                ages.entry(g).or_default().push((at - entered) / 1000);
            }
        }
        for (&g, list) in &mut ages {
            // Ages come in descending order (spans sorted by entry): reverse for ranks.
            list.reverse();
            let v = match q.metric {
                M::Indeterminate => list.len() as f64,
                M::IndeterminateAgeOldest => list.last().copied().unwrap_or(0) as f64,
                M::IndeterminateAgeP50 => rank(list, 50) as f64,
                _ => rank(list, 95) as f64,
            };
            cell(values, g, b.n)[k] = v;
            cell(counts, g, b.n)[k] = list.len() as f64;
        }
        // A group with none open here reads 0 (the grid starts at 0 and past buckets stay).
    }
    // Buckets after `now` have no level: mark them as gaps.
    for v in values.values_mut() {
        for (k, x) in v.iter_mut().enumerate() {
            if b.start(k) > q.now_ms {
                *x = f64::NAN;
            }
        }
    }
}

#[cfg(test)]
mod tests;
