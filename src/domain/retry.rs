//! The retry policy: capped exponential backoff with full jitter, `Retry-After`, and the
//! per-intent budget (attempts and deadline) that every retry and failover spends.
//!
//! One layer owns retries: the coordinator. It asks [`plan_retry`] before every automatic
//! retry and every failover; the answer is a delay or a [`GiveUpReason`].
//!
//! - **Budget.** `max_attempts` per intent. Switching provider, region, model or worker
//!   (failover) is a new attempt of the same intent and spends the same budget: failover
//!   never resets it.
//! - **Deadline.** A retry is planned only if it can start and still leave
//!   `confirmation_reserve_ms` before the intent's deadline for confirming the outcome:
//!   `now + delay + reserve ≤ deadline`.
//! - **Backoff.** Full jitter: uniform in `[0, min(cap, base·2ⁿ)]`, where `n` counts the
//!   retries already made (0 for the first retry). Near the deadline the upper bound is
//!   also limited to the time left, so whether to give up never depends on the draw.
//! - **`Retry-After` wins.** When the downstream said how long to wait, the delay is that
//!   long plus a uniform jitter of up to `retry_after_jitter_ms` (again limited to the
//!   time left); if even the bare `Retry-After` does not fit, the intent gives up.
//! - **Pause** stops automatic retries; it is checked first.
//! - **Hedging** (a second concurrent attempt) only for tiers where a losing hedge has no
//!   effect: see [`may_hedge`].
//!
//! Randomness comes in through [`Jitter`]; [`SplitMix64`] is a small seedable source for
//! callers and tests. Nothing here reads a clock: `now_ms` is part of [`BudgetView`].

use serde::{Deserialize, Serialize};

use super::vocab::ConsequenceTier;

/// A source of uniform random numbers in `[0, 1)`.
///
/// Values outside that range (or NaN) from a faulty implementation are clamped into it, so
/// a bad source can skew delays but never break the bounds documented here.
pub trait Jitter {
    /// A number drawn uniformly from `[0, 1)`.
    fn unit(&mut self) -> f64;
}

/// SplitMix64 (Steele, Lea and Flood, 2014): a tiny, fast, seedable generator whose
/// output passes BigCrush. Deterministic for a given seed, which makes retry schedules
/// reproducible in tests and in the load driver. Not for secrets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    /// The next 64 uniformly distributed bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

impl Jitter for SplitMix64 {
    /// The top 53 bits scaled into `[0, 1)`: every value is exactly representable.
    fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

/// How the coordinator spaces retries. All durations in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct RetryPolicy {
    /// The backoff ceiling of the first retry; it doubles with each further retry.
    pub base_delay_ms: u64,
    /// No backoff ceiling grows beyond this.
    pub cap_delay_ms: u64,
    /// Time kept free before the deadline to confirm an attempt's outcome.
    pub confirmation_reserve_ms: u64,
    /// The most jitter added on top of a downstream's `Retry-After`.
    pub retry_after_jitter_ms: u64,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            base_delay_ms: 200,
            cap_delay_ms: 10_000,
            confirmation_reserve_ms: 1_000,
            retry_after_jitter_ms: 250,
        }
    }
}

/// What the policy needs to know about an intent's budget at the moment of deciding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BudgetView {
    /// Attempts already made, of every kind that counts against the budget.
    pub attempts_used: u32,
    pub max_attempts: u32,
    pub now_ms: u64,
    pub deadline_at_ms: u64,
    /// A pause covers the intent.
    pub paused: bool,
}

impl BudgetView {
    /// Retries already made: every attempt after the first.
    pub fn retries_made(&self) -> u32 {
        self.attempts_used.saturating_sub(1)
    }
}

/// Why no further attempt is planned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, thiserror::Error)]
#[serde(rename_all = "snake_case")]
pub enum GiveUpReason {
    #[error("the retry budget is spent")]
    BudgetSpent,
    #[error("the deadline is too close to wait and still confirm the outcome")]
    DeadlineTooClose,
    #[error("the intent is paused")]
    Paused,
}

impl GiveUpReason {
    /// The stable wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::BudgetSpent => "budget_spent",
            Self::DeadlineTooClose => "deadline_too_close",
            Self::Paused => "paused",
        }
    }
}

/// A uniform draw from `[0, max]` (both ends included).
fn uniform_upto(jitter: &mut impl Jitter, max: u64) -> u64 {
    let u = jitter.unit();
    let u = if u.is_finite() {
        u.clamp(0.0, 1.0)
    } else {
        0.0
    };
    // `max + 1` as f64 may round, hence the final `min`; the float-to-int cast saturates.
    let drawn = (u * (max as f64 + 1.0)).floor() as u64;
    drawn.min(max)
}

/// The backoff ceiling for a retry: `min(cap, base·2ⁿ)`, saturating instead of overflowing.
fn backoff_ceiling_ms(policy: &RetryPolicy, retry_number: u32) -> u64 {
    // 0·2ⁿ is 0 however large n is; only a non-zero base can grow past u64.
    let grown = match policy.base_delay_ms {
        0 => 0,
        base => 2u64
            .checked_pow(retry_number)
            .and_then(|factor| base.checked_mul(factor))
            .unwrap_or(u64::MAX),
    };
    grown.min(policy.cap_delay_ms)
}

/// Full-jitter backoff: uniform in `[0, min(cap, base·2ⁿ)]` where `n = retry_number` counts
/// the retries already made (0 for the first retry). Never overflows, for any `n`.
pub fn backoff_ms(policy: &RetryPolicy, retry_number: u32, jitter: &mut impl Jitter) -> u64 {
    uniform_upto(jitter, backoff_ceiling_ms(policy, retry_number))
}

/// The earliest an agent may begin the next attempt of work it reports, after the attempt
/// that ended at `ended_at_ms` failed: not before the downstream's `retry_after_ms`, nor
/// before half the backoff ceiling of retry number `retry_number` (0 for the first retry).
/// Half, so an agent that jitters its backoff ("full jitter" above the half) is never
/// refused for it, while one that retries at once is.
pub fn reported_retry_not_before(
    policy: &RetryPolicy,
    retry_number: u32,
    ended_at_ms: u64,
    retry_after_ms: Option<u64>,
) -> u64 {
    let backoff = backoff_ceiling_ms(policy, retry_number) / 2;
    ended_at_ms.saturating_add(backoff.max(retry_after_ms.unwrap_or(0)))
}

/// Plan the delay before the next retry or failover of an intent, or say why there is none.
///
/// Checked in order: pause, budget, then deadline. With `retry_after_ms` the delay is
/// `retry_after + uniform[0, retry_after_jitter_ms]`; without it, [`backoff_ms`] for the
/// retries already made. In both cases `now + delay + confirmation_reserve ≤ deadline`
/// holds for every planned delay.
pub fn plan_retry(
    policy: &RetryPolicy,
    budget: &BudgetView,
    retry_after_ms: Option<u64>,
    jitter: &mut impl Jitter,
) -> Result<u64, GiveUpReason> {
    if budget.paused {
        return Err(GiveUpReason::Paused);
    }
    if budget.attempts_used >= budget.max_attempts {
        return Err(GiveUpReason::BudgetSpent);
    }
    // The longest wait that still leaves the confirmation reserve before the deadline.
    let slack_ms = budget
        .deadline_at_ms
        .checked_sub(budget.now_ms)
        .and_then(|left| left.checked_sub(policy.confirmation_reserve_ms))
        .ok_or(GiveUpReason::DeadlineTooClose)?;
    match retry_after_ms {
        Some(retry_after) => {
            let room = slack_ms
                .checked_sub(retry_after)
                .ok_or(GiveUpReason::DeadlineTooClose)?;
            Ok(retry_after + uniform_upto(jitter, policy.retry_after_jitter_ms.min(room)))
        }
        None => {
            let ceiling = backoff_ceiling_ms(policy, budget.retries_made()).min(slack_ms);
            Ok(uniform_upto(jitter, ceiling))
        }
    }
}

/// Whether a second concurrent attempt may be started for work of this tier.
pub fn may_hedge(tier: ConsequenceTier) -> bool {
    tier.may_hedge()
}

#[cfg(test)]
mod pacing_tests {
    use super::*;

    #[test]
    fn a_reported_retry_waits_for_half_the_backoff_or_the_downstreams_word() {
        let p = RetryPolicy::default();
        assert_eq!(reported_retry_not_before(&p, 0, 1_000, None), 1_100);
        assert_eq!(reported_retry_not_before(&p, 2, 1_000, None), 1_400);
        assert_eq!(
            reported_retry_not_before(&p, 30, 1_000, None),
            6_000,
            "capped"
        );
        assert_eq!(reported_retry_not_before(&p, 0, 1_000, Some(3_000)), 4_000);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A jitter source that always returns the same value.
    struct Fixed(f64);
    impl Jitter for Fixed {
        fn unit(&mut self) -> f64 {
            self.0
        }
    }

    const TOP: f64 = 1.0 - f64::EPSILON;

    fn budget() -> BudgetView {
        BudgetView {
            attempts_used: 1,
            max_attempts: 3,
            now_ms: 0,
            deadline_at_ms: 60_000,
            paused: false,
        }
    }

    #[test]
    fn splitmix_is_reproducible_and_stays_in_the_unit_interval() {
        let mut a = SplitMix64::new(7);
        let mut b = SplitMix64::new(7);
        for _ in 0..1_000 {
            let u = a.unit();
            assert_eq!(u, b.unit());
            assert!((0.0..1.0).contains(&u), "{u}");
        }
        assert_ne!(SplitMix64::new(1).next_u64(), SplitMix64::new(2).next_u64());
    }

    #[test]
    fn splitmix_matches_the_reference_sequence() {
        // First outputs of the reference implementation for seed 0.
        let mut g = SplitMix64::new(0);
        assert_eq!(g.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(g.next_u64(), 0x6E78_9E6A_A1B9_65F4);
    }

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let policy = RetryPolicy::default();
        assert_eq!(backoff_ms(&policy, 0, &mut Fixed(TOP)), 200);
        assert_eq!(backoff_ms(&policy, 3, &mut Fixed(TOP)), 1_600);
        assert_eq!(backoff_ms(&policy, 10, &mut Fixed(TOP)), 10_000);
        assert_eq!(backoff_ms(&policy, u32::MAX, &mut Fixed(TOP)), 10_000);
        assert_eq!(backoff_ms(&policy, 5, &mut Fixed(0.0)), 0);
    }

    #[test]
    fn a_faulty_jitter_source_cannot_break_the_bounds() {
        let policy = RetryPolicy::default();
        assert_eq!(backoff_ms(&policy, 0, &mut Fixed(7.0)), 200);
        assert_eq!(backoff_ms(&policy, 0, &mut Fixed(-1.0)), 0);
        assert_eq!(backoff_ms(&policy, 0, &mut Fixed(f64::NAN)), 0);
    }

    #[test]
    fn retry_after_wins_over_backoff() {
        let policy = RetryPolicy::default();
        let delay = plan_retry(&policy, &budget(), Some(5_000), &mut Fixed(TOP));
        assert_eq!(delay, Ok(5_250));
        let delay = plan_retry(&policy, &budget(), Some(5_000), &mut Fixed(0.0));
        assert_eq!(delay, Ok(5_000));
    }

    #[test]
    fn a_spent_budget_gives_up() {
        let b = BudgetView {
            attempts_used: 3,
            ..budget()
        };
        let plan = plan_retry(&RetryPolicy::default(), &b, None, &mut Fixed(0.5));
        assert_eq!(plan, Err(GiveUpReason::BudgetSpent));
    }

    #[test]
    fn a_pause_wins_over_everything() {
        let b = BudgetView {
            paused: true,
            attempts_used: 9,
            ..budget()
        };
        let plan = plan_retry(&RetryPolicy::default(), &b, None, &mut Fixed(0.5));
        assert_eq!(plan, Err(GiveUpReason::Paused));
    }

    #[test]
    fn a_retry_after_past_the_reserve_gives_up() {
        let b = BudgetView {
            now_ms: 50_000,
            ..budget()
        };
        // 10 s left, 1 s reserve: waiting 9 s fits, 9.001 s does not.
        let policy = RetryPolicy::default();
        assert_eq!(
            plan_retry(&policy, &b, Some(9_000), &mut Fixed(TOP)),
            Ok(9_000)
        );
        assert_eq!(
            plan_retry(&policy, &b, Some(9_001), &mut Fixed(0.0)),
            Err(GiveUpReason::DeadlineTooClose)
        );
    }

    #[test]
    fn inside_the_reserve_nothing_is_planned() {
        let b = BudgetView {
            now_ms: 59_500,
            ..budget()
        };
        let plan = plan_retry(&RetryPolicy::default(), &b, None, &mut Fixed(0.0));
        assert_eq!(plan, Err(GiveUpReason::DeadlineTooClose));
    }

    #[test]
    fn near_the_deadline_backoff_shrinks_to_the_time_left() {
        let b = BudgetView {
            attempts_used: 2,
            now_ms: 58_900,
            ..budget()
        };
        let plan = plan_retry(&RetryPolicy::default(), &b, None, &mut Fixed(TOP));
        assert_eq!(plan, Ok(100));
    }

    #[test]
    fn only_read_and_compute_may_hedge() {
        let hedgeable: Vec<_> = ConsequenceTier::ALL
            .iter()
            .filter(|t| may_hedge(**t))
            .collect();
        assert_eq!(
            hedgeable,
            [&ConsequenceTier::Read, &ConsequenceTier::Compute]
        );
    }

    #[test]
    fn give_up_reasons_have_wire_names() {
        for reason in [
            GiveUpReason::BudgetSpent,
            GiveUpReason::DeadlineTooClose,
            GiveUpReason::Paused,
        ] {
            let json = serde_json::to_string(&reason).expect("serialises");
            assert_eq!(json, format!("\"{}\"", reason.as_str()));
        }
    }
}
