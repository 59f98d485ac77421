//! Metric definitions of the design, as pure functions over numbers the store counts.
//! They measure logical outcomes, not RPC success.
//!
//! | metric                 | definition                                                        |
//! |------------------------|-------------------------------------------------------------------|
//! | attempt amplification  | attempts ÷ intents, and the per-intent distribution               |
//! | duplicate-effect rate  | effects beyond the first per intent ÷ committed intents           |
//! | indeterminate rate     | indeterminate intents ÷ dispatched intents                        |
//! | indeterminate age      | now − entered indeterminate, in milliseconds                      |
//! | late-result rate       | attempts completed after the deadline or cancellation ÷ attempts  |
//! | failover divergence    | intents whose proposals disagree ÷ intents with ≥ 2 proposals     |
//! | goodput                | committed intents per minute, and per attempt                     |
//!
//! Every ratio whose denominator is zero is `0.0`: no intents means no amplification, no
//! dispatches means no indeterminate rate. Slicing (by provider, release, tenant…) is the
//! caller's: pass the numbers of one slice.

use serde::{Deserialize, Serialize};

/// A summary of a set of non-negative values.
///
/// Percentiles use the nearest-rank method: the p-th percentile of `n` sorted values is
/// the value at rank `⌈p·n/100⌉` (1-based), so it is always one of the values. An empty
/// set gives all zeros.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Distribution {
    pub count: u64,
    pub mean: f64,
    pub p50: u64,
    pub p95: u64,
    pub p99: u64,
    pub max: u64,
}

/// Summarise `values` (see [`Distribution`]).
pub fn distribution(values: &[u64]) -> Distribution {
    if values.is_empty() {
        return Distribution::default();
    }
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    let n = sorted.len();
    let rank = |p: usize| sorted[(p * n).div_ceil(100).clamp(1, n) - 1];
    let sum: u128 = sorted.iter().map(|&v| u128::from(v)).sum();
    Distribution {
        count: n as u64,
        mean: sum as f64 / n as f64,
        p50: rank(50),
        p95: rank(95),
        p99: rank(99),
        max: sorted[n - 1],
    }
}

/// `num ÷ den`, or `0.0` when `den` is zero.
fn ratio(num: f64, den: f64) -> f64 {
    if den == 0.0 { 0.0 } else { num / den }
}

/// Attempt amplification: the distribution of attempts per intent; its `mean` is
/// attempts ÷ intents.
pub fn amplification(attempts_per_intent: &[u64]) -> Distribution {
    distribution(attempts_per_intent)
}

/// Effects beyond the first, summed over committed intents, ÷ committed intents. One
/// value per committed intent: how many true effects its action key had downstream.
pub fn duplicate_effect_rate(effects_per_committed_intent: &[u64]) -> f64 {
    let beyond_first: u128 = effects_per_committed_intent
        .iter()
        .map(|&e| u128::from(e.saturating_sub(1)))
        .sum();
    ratio(
        beyond_first as f64,
        effects_per_committed_intent.len() as f64,
    )
}

/// Indeterminate intents ÷ dispatched intents.
pub fn indeterminate_rate(indeterminate: u64, dispatched: u64) -> f64 {
    ratio(indeterminate as f64, dispatched as f64)
}

/// The ages of indeterminate intents, in milliseconds: `now_ms − entered_at_ms` each (an
/// entry time after `now_ms` counts as age 0). `max` is the oldest.
pub fn indeterminate_ages_ms(entered_at_ms: &[u64], now_ms: u64) -> Distribution {
    let ages: Vec<u64> = entered_at_ms
        .iter()
        .map(|&at| now_ms.saturating_sub(at))
        .collect();
    distribution(&ages)
}

/// Attempts that completed after their intent's deadline or cancellation ÷ attempts.
pub fn late_result_rate(late: u64, attempts: u64) -> f64 {
    ratio(late as f64, attempts as f64)
}

/// Intents whose proposal hashes are not all equal ÷ intents with at least two proposals.
/// One entry per intent: the proposal hashes of its eligible proposal attempts.
pub fn failover_divergence(proposal_hashes_per_intent: &[Vec<String>]) -> f64 {
    let compared = proposal_hashes_per_intent
        .iter()
        .filter(|hashes| hashes.len() >= 2);
    let (mut intents, mut diverged) = (0u64, 0u64);
    for hashes in compared {
        intents += 1;
        if hashes.iter().any(|h| h != &hashes[0]) {
            diverged += 1;
        }
    }
    divergence_rate(diverged, intents)
}

/// Of `compared` intents with two or more proposals, the share whose proposals differ.
pub fn divergence_rate(diverged: u64, compared: u64) -> f64 {
    ratio(diverged as f64, compared as f64)
}

/// Committed intents per minute over a window of `window_ms` milliseconds.
pub fn goodput_per_min(committed: u64, window_ms: u64) -> f64 {
    ratio(committed as f64 * 60_000.0, window_ms as f64)
}

/// Committed intents per attempt made.
pub fn goodput_per_attempt(committed: u64, attempts: u64) -> f64 {
    ratio(committed as f64, attempts as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_distribution_is_all_zeros() {
        assert_eq!(distribution(&[]), Distribution::default());
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let values: Vec<u64> = (1..=100).rev().collect();
        let d = distribution(&values);
        assert_eq!(
            (d.count, d.p50, d.p95, d.p99, d.max),
            (100, 50, 95, 99, 100)
        );
        assert_eq!(d.mean, 50.5);
        let d = distribution(&[7]);
        assert_eq!((d.p50, d.p99, d.max), (7, 7, 7));
        let d = distribution(&[1, 2, 3]);
        assert_eq!((d.p50, d.p95), (2, 3));
    }

    #[test]
    fn amplification_mean_is_attempts_per_intent() {
        let a = amplification(&[1, 1, 1, 5]);
        assert_eq!(a.mean, 2.0);
        assert_eq!(a.max, 5);
    }

    #[test]
    fn duplicate_effects_count_only_beyond_the_first() {
        assert_eq!(duplicate_effect_rate(&[1, 1, 3, 0]), 0.5);
        assert_eq!(duplicate_effect_rate(&[]), 0.0);
    }

    #[test]
    fn ratios_over_nothing_are_zero() {
        assert_eq!(indeterminate_rate(3, 0), 0.0);
        assert_eq!(late_result_rate(1, 0), 0.0);
        assert_eq!(goodput_per_min(10, 0), 0.0);
        assert_eq!(goodput_per_attempt(10, 0), 0.0);
        assert_eq!(failover_divergence(&[]), 0.0);
    }

    #[test]
    fn rates_divide_as_defined() {
        assert_eq!(indeterminate_rate(1, 4), 0.25);
        assert_eq!(late_result_rate(1, 10), 0.1);
        assert_eq!(goodput_per_min(30, 120_000), 15.0);
        assert_eq!(goodput_per_attempt(3, 4), 0.75);
    }

    #[test]
    fn indeterminate_ages_are_milliseconds_since_entry() {
        let d = indeterminate_ages_ms(&[1_000, 4_000, 9_000, 12_000], 10_000);
        assert_eq!((d.count, d.max, d.p50), (4, 9_000, 1_000));
    }

    #[test]
    fn divergence_counts_intents_with_two_or_more_proposals() {
        let h = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let intents = [
            h(&["a"]),
            h(&["a", "a"]),
            h(&["a", "b"]),
            h(&["c", "c", "d"]),
        ];
        assert_eq!(failover_divergence(&intents), 2.0 / 3.0);
    }
}
