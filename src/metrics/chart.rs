//! One chart computed over the index: the window cut into buckets, one row of values per
//! group, filled by one pass over the selected intents (and their attempts where the metric
//! counts attempts). A pure function of the index and the compiled filter.

use std::collections::BTreeMap;

use super::ChartQuery;
use super::index::{self, IntentRec, MetricIndex};
use super::select::{Compiled, group_name, intent_groups, rank, single_group};
use crate::wire::{Chart, ChartMetric, ChartSeries, GroupBy};

/// The buckets of a window.
#[derive(Debug, Clone, Copy)]
pub(super) struct Buckets {
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
pub(super) type Grid = BTreeMap<u16, Vec<f64>>;

/// A grid being filled in a hot loop: rows by group id, allocated on first use.
pub(super) struct Dense {
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

pub(super) fn cell(grid: &mut Grid, g: u16, n: usize) -> &mut Vec<f64> {
    grid.entry(g).or_insert_with(|| vec![0.0; n])
}

/// The most values one chart holds, buckets times groups (a few megabytes of JSON).
pub const MAX_POINTS: u64 = 250_000;
/// The most steps an indeterminate chart takes: buckets times the indeterminate spans it
/// looks at (each bucket counts the spans open at its end).
pub const MAX_LEVEL_STEPS: u64 = 200_000_000;

/// How many groups the chart would have at most: one pass over the selected intents, so
/// a chart that would be too large is refused before anything is allocated for it.
fn groups_in(index: &MetricIndex, q: &ChartQuery, f: &Compiled) -> u64 {
    let by = q.group_by;
    if by == GroupBy::None {
        return 1;
    }
    let mut seen = vec![false; usize::from(u16::MAX) + 1];
    let mut groups = Vec::new();
    let mut count = 0u64;
    let mut see = |g: u16| {
        if !std::mem::replace(&mut seen[usize::from(g)], true) {
            count += 1;
        }
    };
    for (_, r) in index.live() {
        if !f.matches(r) {
            continue;
        }
        intent_groups(index, by, r, &mut groups);
        groups.iter().for_each(|&g| see(g));
        if by == GroupBy::Release {
            // Attempt metrics group by each attempt's own release.
            index.attempts_of(r).iter().for_each(|a| see(a.release()));
        }
    }
    count
}

/// Why a chart is refused: what it would cost, against which bound.
fn too_costly(what: String) -> String {
    format!(
        "{what}; ask for larger buckets (bucket_secs or fewer buckets), a shorter window \
         (from, to), a narrower filter or no group_by"
    )
}

/// The chart itself, a pure function of the index and the compiled filter; refused (with
/// the reason) when it would hold more than [`MAX_POINTS`] values or an indeterminate
/// chart would take more than [`MAX_LEVEL_STEPS`] steps.
pub(super) fn chart_over(
    index: &MetricIndex,
    q: &ChartQuery,
    f: &Compiled,
) -> Result<Chart, String> {
    use ChartMetric as M;
    let b = Buckets::new(q);
    let n = b.n;
    let by = q.group_by;
    let groups = groups_in(index, q, f);
    if (n as u64).saturating_mul(groups) > MAX_POINTS {
        return Err(too_costly(format!(
            "the chart would hold {n} buckets for each of {groups} groups, more than \
             {MAX_POINTS} values"
        )));
    }
    let mut groups = Vec::new();
    let mut values: Grid = BTreeMap::new();
    let mut counts: Grid = BTreeMap::new();
    let attempt_group = |r: &IntentRec, a: &index::AttemptRec| match by {
        GroupBy::Provider => a.provider,
        GroupBy::Release => a.release(),
        other => single_group(other, r),
    };
    match q.metric {
        M::LateResultRate => {
            // Of the attempts started in the bucket, the share that completed late.
            let (mut started, mut late) = (Dense::new(n), Dense::new(n));
            for (_, r) in index.live() {
                if !f.matches(r) {
                    continue;
                }
                for a in index.attempts_of(r) {
                    if let Some(k) = b.of(a.started_ms) {
                        let g = attempt_group(r, a);
                        started.at(g)[k] += 1.0;
                        late.at(g)[k] += f64::from(u8::from(a.late()));
                    }
                }
            }
            counts = started.into_grid();
            let late = late.into_grid();
            for (g, attempts) in &counts {
                let v = cell(&mut values, *g, n);
                for k in 0..n {
                    v[k] = if attempts[k] > 0.0 {
                        late.get(g).map_or(0.0, |l| l[k]) / attempts[k]
                    } else {
                        f64::NAN
                    };
                }
            }
        }
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
                        intent_groups(index, by, r, &mut groups);
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
                intent_groups(index, by, r, &mut groups);
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
                intent_groups(index, by, r, &mut groups);
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
            levels(index, q, f, &b, &mut values, &mut counts)?;
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
    Ok(Chart {
        metric: q.metric,
        group_by: by,
        bucket_ms: b.bucket_ms,
        from_ms: q.from_ms,
        to_ms: q.to_ms,
        series,
    })
}

/// Intents indeterminate at each bucket's end, and their ages then.
pub(super) fn levels(
    index: &MetricIndex,
    q: &ChartQuery,
    f: &Compiled,
    b: &Buckets,
    values: &mut Grid,
    counts: &mut Grid,
) -> Result<(), String> {
    use ChartMetric as M;
    let mut spans: Vec<(u64, u64, u16)> = Vec::new();
    let mut groups = Vec::new();
    for (&pos, list) in &index.indeterminate {
        let r = &index.intents[pos as usize];
        if !r.live || !f.matches(r) {
            continue;
        }
        intent_groups(index, q.group_by, r, &mut groups);
        for s in list {
            for &g in &groups {
                spans.push((s.entered_ms, s.left_ms, g));
            }
        }
    }
    let steps = (b.n as u64).saturating_mul(spans.len() as u64);
    if steps > MAX_LEVEL_STEPS {
        return Err(too_costly(format!(
            "the chart would look at {} indeterminate spans in each of {} buckets, more than \
             {MAX_LEVEL_STEPS} steps",
            spans.len(),
            b.n
        )));
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
    Ok(())
}
