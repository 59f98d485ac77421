//! The figures `/metrics` slices by tenant and provider: attempts and late results by the
//! provider each attempt used, duplicate effects and indeterminate intents under every
//! provider the intent's attempts used (as the dashboard's provider slicing has it).
//!
//! Prometheus keeps one series per label set, so the provider label is bounded: per
//! tenant, the first [`PROVIDERS_PER_TENANT`] providers it used (by its earliest attempt on
//! each, so a provider keeps its label from one scrape to the next) are named, and the rest
//! are counted together as `(other)`, as are the names the index itself had no room for.

use std::collections::{BTreeMap, HashMap};

use super::MetricIndex;
use super::records::OTHER;
use super::select::{Compiled, intent_groups};
use crate::store::metric_source::MetricSource;
use crate::store::{IntentFilter, StoreError};
use crate::wire::GroupBy;

/// The most provider names one tenant shows in `/metrics`; later ones are `(other)`.
pub const PROVIDERS_PER_TENANT: usize = 20;

/// One tenant's figures on one provider, as of one instant.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProviderSlice {
    pub tenant: String,
    pub provider: String,
    /// Attempts made on this provider.
    pub attempts: u64,
    /// Of those, the ones that completed late.
    pub late_results: u64,
    /// Duplicate effects of the intents that used this provider.
    pub duplicate_effects: u64,
    /// Intents that used this provider and are indeterminate now.
    pub indeterminate: u64,
    pub indeterminate_oldest_age_secs: u64,
}

#[derive(Debug, Clone, Copy)]
struct Acc {
    first_ms: u64,
    attempts: u64,
    late: u64,
    duplicates: u64,
    indeterminate: u64,
    oldest_secs: u64,
}

impl Default for Acc {
    fn default() -> Self {
        Acc {
            first_ms: u64::MAX,
            attempts: 0,
            late: 0,
            duplicates: 0,
            indeterminate: 0,
            oldest_secs: 0,
        }
    }
}

/// Every (tenant, provider) slice of the selected intents as of `at_ms`, sorted by tenant
/// then provider, with at most [`PROVIDERS_PER_TENANT`] named providers per tenant.
pub fn provider_slices(
    source: &mut dyn MetricSource,
    index: &MetricIndex,
    filter: &IntentFilter,
    at_ms: u64,
) -> Result<Vec<ProviderSlice>, StoreError> {
    let compiled = Compiled::new(index, filter, source.selection(filter)?);
    Ok(slices_over(index, &compiled, at_ms, PROVIDERS_PER_TENANT))
}

fn slices_over(
    index: &MetricIndex,
    compiled: &Compiled,
    at_ms: u64,
    per_tenant: usize,
) -> Vec<ProviderSlice> {
    let mut acc: HashMap<(u16, u16), Acc> = HashMap::new();
    let mut groups = Vec::new();
    for (pos, r) in index.live() {
        if !compiled.matches(r) {
            continue;
        }
        for a in index.attempts_of(r) {
            let s = acc.entry((r.tenant, a.provider)).or_default();
            s.first_ms = s.first_ms.min(a.started_ms);
            s.attempts += 1;
            s.late += u64::from(a.late());
        }
        let duplicates = index.duplicates.get(&pos).map_or(0, |d| d.len() as u64);
        let age = index.indeterminate.get(&pos).and_then(|spans| {
            spans
                .iter()
                .filter(|s| s.entered_ms <= at_ms && at_ms < s.left_ms)
                .map(|s| (at_ms - s.entered_ms) / 1000)
                .max()
        });
        if duplicates == 0 && age.is_none() {
            continue;
        }
        intent_groups(index, GroupBy::Provider, r, &mut groups);
        for &g in &groups {
            let s = acc.entry((r.tenant, g)).or_default();
            s.duplicates += duplicates;
            if let Some(age) = age {
                s.indeterminate += 1;
                s.oldest_secs = s.oldest_secs.max(age);
            }
        }
    }
    // Per tenant, its providers in the order it first used them.
    let mut by_tenant: BTreeMap<u16, Vec<(u16, Acc)>> = BTreeMap::new();
    for ((tenant, provider), a) in acc {
        by_tenant.entry(tenant).or_default().push((provider, a));
    }
    let d = &index.dicts;
    let mut out = Vec::new();
    for (tenant, mut providers) in by_tenant {
        providers.sort_by_key(|&(id, a)| (a.first_ms, id));
        let mut named: BTreeMap<&str, Acc> = BTreeMap::new();
        for (n, (id, a)) in providers.into_iter().enumerate() {
            let name = if n < per_tenant {
                d.provider.name(id)
            } else {
                OTHER
            };
            let s = named.entry(name).or_default();
            s.attempts += a.attempts;
            s.late += a.late;
            s.duplicates += a.duplicates;
            s.indeterminate += a.indeterminate;
            s.oldest_secs = s.oldest_secs.max(a.oldest_secs);
        }
        for (provider, a) in named {
            out.push(ProviderSlice {
                tenant: d.tenant.name(tenant).to_string(),
                provider: provider.to_string(),
                attempts: a.attempts,
                late_results: a.late,
                duplicate_effects: a.duplicates,
                indeterminate: a.indeterminate,
                indeterminate_oldest_age_secs: a.oldest_secs,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;
    use crate::store::bulk::BulkSpec;

    const END: u64 = 1_764_489_600_000;

    fn bulk() -> (tempfile::TempDir, Store, MetricIndex) {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut store = Store::open(&dir.path().join("s.sqlite")).expect("open");
        store
            .generate_bulk(&BulkSpec {
                intents: 1_500,
                mean_attempts: 2.5,
                span_ms: 6 * 3_600_000,
                end_ms: END,
                seed: 5,
            })
            .expect("bulk");
        let mut index = MetricIndex::default();
        super::super::refresh(&mut index, &mut store).expect("refresh");
        (dir, store, index)
    }

    #[test]
    fn attempts_and_late_results_by_provider_add_up_to_the_summary() {
        use crate::store::ops::*;
        let (_dir, mut store, index) = bulk();
        let filter = IntentFilter::default();
        let summary = store.summary(&filter, END).expect("summary");
        let slices = provider_slices(&mut store, &index, &filter, END).expect("slices");
        let attempts: u64 = slices.iter().map(|s| s.attempts).sum();
        let late: u64 = slices.iter().map(|s| s.late_results).sum();
        assert_eq!((attempts, late), (summary.attempts, summary.late_results));
        let tenants: std::collections::BTreeSet<&str> =
            slices.iter().map(|s| s.tenant.as_str()).collect();
        assert!(tenants.len() > 1, "{tenants:?}");
        assert!(slices.iter().all(|s| s.provider != OTHER));
    }

    #[test]
    fn past_the_bound_a_tenants_later_providers_are_other() {
        let (_dir, mut store, index) = bulk();
        let filter = IntentFilter::default();
        let compiled = Compiled::new(&index, &filter, store.selection(&filter).expect("sel"));
        let all = slices_over(&index, &compiled, END, 100);
        let bounded = slices_over(&index, &compiled, END, 2);
        let tenant = &all[0].tenant;
        let of = |list: &[ProviderSlice]| -> Vec<ProviderSlice> {
            list.iter()
                .filter(|s| &s.tenant == tenant)
                .cloned()
                .collect()
        };
        let (all, bounded) = (of(&all), of(&bounded));
        assert!(all.len() > 3, "{all:?}");
        assert_eq!(bounded.len(), 3, "two named and (other): {bounded:?}");
        assert!(bounded.iter().any(|s| s.provider == OTHER));
        // Nothing is lost or counted twice by the bound.
        let sum = |l: &[ProviderSlice]| l.iter().map(|s| s.attempts).sum::<u64>();
        assert_eq!(sum(&all), sum(&bounded));
    }
}
