//! What the aggregations share: the nearest-rank percentile, a filter compiled to lookups
//! over the index's interned ids, and the group (series) an intent or attempt falls in.

use std::collections::HashSet;

use super::index::{Dict, IntentRec, MetricIndex, provider_bit};
use super::records::{MASK_BITS, OVERFLOW_BIT};
use crate::store::IntentFilter;
use crate::wire::{ALL_GROUP, GroupBy};

/// The nearest-rank percentile of sorted values (the domain's definition).
pub(super) fn rank<T: Copy + Default>(sorted: &[T], p: usize) -> T {
    let n = sorted.len();
    if n == 0 {
        return T::default();
    }
    sorted[(p * n).div_ceil(100).clamp(1, n) - 1]
}

/// Count one more `value` in `counts` (`counts[v]` values equal to `v`).
pub(super) fn count_value(counts: &mut Vec<u64>, value: u32) {
    let at = value as usize;
    if counts.len() <= at {
        counts.resize(at + 1, 0);
    }
    counts[at] += 1;
}

/// The nearest-rank percentile of values given as counts per value (`counts[v]` values
/// equal to `v`).
pub(super) fn rank_of_counts(counts: &[u64], p: u64) -> u64 {
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

/// A provider filter: the mask bits of the named providers, and the intents that used a
/// named provider past the mask's bits (which share its last bit).
struct ProviderFilter {
    mask: u64,
    by_attempts: Option<HashSet<i64>>,
}

impl ProviderFilter {
    fn matches(&self, r: &IntentRec) -> bool {
        r.providers & self.mask != 0
            || self
                .by_attempts
                .as_ref()
                .is_some_and(|s| s.contains(&r.seq))
    }
}

/// A filter turned into lookups over interned ids.
pub(super) struct Compiled {
    tenants: Option<Vec<bool>>,
    allowed: Option<Vec<bool>>,
    states: Option<Vec<bool>>,
    operations: Option<Vec<bool>>,
    tools: Option<Vec<bool>>,
    releases: Option<Vec<bool>>,
    locales: Option<Vec<bool>>,
    tiers: Option<Vec<bool>>,
    providers: Option<ProviderFilter>,
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
    pub(super) fn new(
        index: &MetricIndex,
        filter: &IntentFilter,
        seqs: Option<HashSet<i64>>,
    ) -> Compiled {
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
                let ids: Vec<u16> = filter
                    .providers
                    .iter()
                    .filter_map(|p| d.provider.find(p))
                    .collect();
                let mask = ids
                    .iter()
                    .filter(|&&id| id < MASK_BITS - 1)
                    .fold(0u64, |m, &id| m | provider_bit(id));
                let past_mask: Vec<u16> =
                    ids.into_iter().filter(|&id| id >= MASK_BITS - 1).collect();
                // Intents that used a named provider past the mask, found in their attempts.
                let by_attempts = (!past_mask.is_empty()).then(|| {
                    index
                        .live()
                        .filter(|(_, r)| r.providers & OVERFLOW_BIT != 0)
                        .filter(|(_, r)| used_any(index, r, &past_mask))
                        .map(|(_, r)| r.seq)
                        .collect()
                });
                ProviderFilter { mask, by_attempts }
            }),
            since_ms: filter.since_ms,
            until_ms: filter.until_ms,
            min_attempts: filter.min_attempts,
            seqs,
        }
    }

    pub(super) fn matches(&self, r: &IntentRec) -> bool {
        allows(&self.tenants, r.tenant)
            && allows(&self.allowed, r.tenant)
            && allows(&self.states, r.state)
            && allows(&self.operations, r.operation)
            && allows(&self.tools, r.tool)
            && allows(&self.releases, r.release)
            && allows(&self.locales, r.locale)
            && allows(&self.tiers, r.tier)
            && self.providers.as_ref().is_none_or(|p| p.matches(r))
            && self.since_ms.is_none_or(|s| r.created_ms >= s)
            && self.until_ms.is_none_or(|u| r.created_ms < u)
            && self.min_attempts.is_none_or(|m| r.attempts >= m)
            && self.seqs.as_ref().is_none_or(|s| s.contains(&r.seq))
    }
}

/// Group ids of one intent under `by` (several for providers).
pub(super) fn intent_groups(index: &MetricIndex, by: GroupBy, r: &IntentRec, out: &mut Vec<u16>) {
    out.clear();
    match by {
        GroupBy::Provider => {
            let mut mask = r.providers & !OVERFLOW_BIT;
            while mask != 0 {
                out.push(mask.trailing_zeros() as u16);
                mask &= mask - 1;
            }
            if r.providers & OVERFLOW_BIT != 0 {
                // Providers past the mask's bits share its last one: their own ids are in
                // the attempts.
                for a in index.attempts_of(r) {
                    if a.provider >= MASK_BITS - 1 && !out.contains(&a.provider) {
                        out.push(a.provider);
                    }
                }
            }
        }
        other => out.push(single_group(other, r)),
    }
}

/// Whether one of `r`'s attempts used one of `providers`.
fn used_any(index: &MetricIndex, r: &IntentRec, providers: &[u16]) -> bool {
    index
        .attempts_of(r)
        .iter()
        .any(|a| providers.contains(&a.provider))
}

/// The group of an intent under a dimension it has exactly one value of.
pub(super) fn single_group(by: GroupBy, r: &IntentRec) -> u16 {
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

pub(super) fn group_name(index: &MetricIndex, by: GroupBy, id: u16) -> String {
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
