//! A seeded generator of agent behaviour: which intents agents ask for, how they phrase
//! them, which providers their non-mutating work calls (and how those calls fail), and how
//! agents and people repeat themselves.
//!
//! The generator is pure: the same seed and run tag give the same plans, and nothing here
//! performs I/O or reads a clock. The driver turns plans into HTTP calls.
//!
//! What one plan may carry besides the intent itself:
//! - **attempts** for `read`, `compute` and `proposal` work: provider calls in failover
//!   order (openai → anthropic → mistral, starting anywhere), each failing with the
//!   simulated fault rates; `read` and `compute` work is sometimes hedged (two concurrent
//!   calls, the loser finishing late);
//! - a **dispatch** for `write` and `financial` work, sometimes called twice by a nervous
//!   agent;
//! - a **replay**: the same caller key sent again, either identically or from the other
//!   interface (Persian digits against ASCII digits) — one intent either way;
//! - a **repeat**: the same instruction given again on purpose under a new caller key —
//!   a second, legitimate intent;
//! - a **changed reuse**: the caller key sent again with a changed order — refused.

use super::catalog::{
    Interface, OPERATIONS, OperationProfile, Order, PROVIDERS, TENANTS, TenantProfile, purpose,
};
use crate::domain::{ConsequenceTier, Jitter, Locale, SplitMix64};
use crate::wire::CreateIntent;

/// How often agents and people do each thing; probabilities in `0..=1`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Mix {
    /// A provider call fails with a transient error (5xx, reset).
    pub provider_failure: f64,
    /// A provider call is refused for load (429 with `Retry-After`).
    pub provider_overload: f64,
    /// A provider call times out.
    pub provider_timeout: f64,
    /// `read`/`compute` work starts with a hedge (two concurrent calls).
    pub hedge: f64,
    /// The caller key is sent again with the same rendering.
    pub replay_same: f64,
    /// The caller key is sent again from the other interface.
    pub replay_other_interface: f64,
    /// The instruction is repeated on purpose under a new caller key.
    pub repeat: f64,
    /// The caller key is sent again with a changed order.
    pub changed_reuse: f64,
    /// A mutating intent's dispatch is called twice.
    pub double_dispatch: f64,
    /// Multiplies every simulated provider latency.
    pub latency_scale: f64,
    /// Multiplies every deadline (at least one second remains).
    pub deadline_scale: f64,
    /// Mutating work sent through the [`LEGACY_CONNECTOR`] instead of `erp`: a downstream
    /// that cannot look keys up, so a lost response leaves its intent indeterminate until
    /// an operator settles it. Zero unless the coordinator has such a connector.
    pub legacy: f64,
}

/// The connector of the [`Mix::legacy`] share of mutating work.
pub const LEGACY_CONNECTOR: &str = "legacy-erp";

impl Default for Mix {
    fn default() -> Self {
        Mix {
            provider_failure: 0.08,
            provider_overload: 0.04,
            provider_timeout: 0.03,
            hedge: 0.15,
            replay_same: 0.05,
            replay_other_interface: 0.05,
            repeat: 0.02,
            changed_reuse: 0.02,
            double_dispatch: 0.05,
            latency_scale: 1.0,
            deadline_scale: 1.0,
            legacy: 0.0,
        }
    }
}

/// How a simulated provider call ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallOutcome {
    Succeeded,
    /// 5xx or a reset: worth a failover.
    Transient {
        status: u16,
    },
    /// 429 with `Retry-After`.
    Overloaded {
        retry_after_ms: u64,
    },
    TimedOut,
}

/// One simulated provider call.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub provider: &'static str,
    pub model: &'static str,
    pub region: &'static str,
    pub release_id: String,
    pub worker: String,
    pub latency_ms: u64,
    pub outcome: CallOutcome,
    /// For proposals: the hash of what was proposed.
    pub proposal_hash: Option<String>,
}

/// One step of non-mutating work.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    Single(Call),
    /// Two concurrent calls; the first to finish wins, the other finishes late.
    Hedge(Call, Call),
}

/// What the agent does once the intent is authorized.
#[derive(Debug, Clone, PartialEq)]
pub enum Work {
    /// Report provider calls as attempts until one succeeds or the coordinator refuses.
    Attempts(Vec<Step>),
    /// Ask the coordinator to cross the action boundary, `calls` times.
    Dispatch { calls: u32 },
}

/// A second sending of the caller key.
#[derive(Debug, Clone, PartialEq)]
pub enum Replay {
    None,
    /// Exactly the same request again.
    Same,
    /// The same order from the other interface (other digits, other locale).
    OtherInterface(CreateIntent),
    /// The same key with a changed order: must be refused.
    Changed(CreateIntent),
}

/// Everything one simulated agent does for one intent.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub seq: u64,
    pub caller_key: String,
    pub request: CreateIntent,
    pub work: Work,
    pub replay: Replay,
    /// The same instruction again under this new caller key.
    pub repeat_key: Option<String>,
}

impl Plan {
    pub fn tier(&self) -> ConsequenceTier {
        self.request.consequence
    }
}

/// The seeded source of plans.
#[derive(Debug, Clone)]
pub struct Generator {
    rng: SplitMix64,
    run_tag: String,
    mix: Mix,
    seq: u64,
}

impl Generator {
    /// Plans for one run. `run_tag` goes into every caller key, so runs against one
    /// database never share keys; keep it short and ASCII.
    pub fn new(seed: u64, run_tag: &str, mix: Mix) -> Generator {
        Generator {
            rng: SplitMix64::new(seed),
            run_tag: run_tag.to_string(),
            mix,
            seq: 0,
        }
    }

    pub fn mix(&self) -> &Mix {
        &self.mix
    }

    fn unit(&mut self) -> f64 {
        self.rng.unit()
    }

    fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && self.unit() < p
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.rng.next_u64() % n as u64) as usize
        }
    }

    fn between(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            lo
        } else {
            lo + self.rng.next_u64() % (hi - lo + 1)
        }
    }

    fn weighted<T>(&mut self, items: &'static [T], weight: impl Fn(&T) -> u32) -> &'static T {
        let total: u64 = items.iter().map(|i| u64::from(weight(i))).sum();
        let mut pick = self.rng.next_u64() % total.max(1);
        for item in items {
            let w = u64::from(weight(item));
            if pick < w {
                return item;
            }
            pick -= w;
        }
        &items[items.len() - 1]
    }

    /// The next plan.
    pub fn next_plan(&mut self) -> Plan {
        self.seq += 1;
        let seq = self.seq;
        let tenant = self.weighted(TENANTS, |t| t.weight);
        let op = self.weighted(OPERATIONS, |o| o.weight);
        let order = self.order(tenant);
        let interface = Interface::of(tenant.locale);
        let release = tenant.releases[self.below(tenant.releases.len())].to_string();
        let actor = tenant.actors[self.below(tenant.actors.len())].to_string();
        let deadline_secs =
            ((op.deadline_secs as f64 * self.mix.deadline_scale).round() as u64).max(1);
        // Drawn only when asked for, so other mixes keep their sequence of plans.
        let legacy = op.tier.is_mutating() && self.chance(self.mix.legacy);
        let connector = if legacy { LEGACY_CONNECTOR } else { "erp" };
        let request = CreateIntent {
            tenant: tenant.name.to_string(),
            actor,
            purpose: purpose(op.operation, tenant.locale == Locale::FaIr).to_string(),
            operation: op.operation.to_string(),
            tool: op.tool.to_string(),
            consequence: op.tier,
            args: order.args(op.operation, interface),
            deadline_secs,
            max_attempts: op.max_attempts,
            release_id: release.clone(),
            locale: tenant.locale,
            connector: connector.to_string(),
            workflow_id: None,
            parent_intent_id: None,
            supersedes: None,
        };
        let work = if op.tier.is_mutating() {
            let calls = if self.chance(self.mix.double_dispatch) {
                2
            } else {
                1
            };
            Work::Dispatch { calls }
        } else {
            Work::Attempts(self.steps(op, &release, &order))
        };
        let replay = self.replay(&request, &order, interface);
        let repeat_key = self
            .chance(self.mix.repeat)
            .then(|| self.caller_key(tenant, seq, "r"));
        Plan {
            seq,
            caller_key: self.caller_key(tenant, seq, "k"),
            request,
            work,
            replay,
            repeat_key,
        }
    }

    fn caller_key(&self, tenant: &TenantProfile, seq: u64, kind: &str) -> String {
        format!("{}-{}-{kind}{seq}", tenant.name, self.run_tag)
    }

    fn order(&mut self, tenant: &TenantProfile) -> Order {
        let qty = self.between(1, 120) * 10;
        let unit = self.between(tenant.unit_price.0, tenant.unit_price.1);
        Order {
            good: self.below(7),
            supplier: self.below(4),
            warehouse: self.below(2),
            qty,
            amount: qty.saturating_mul(unit),
            currency: tenant.currency,
            reference: self.between(1000, 9999),
            persian_names: tenant.locale == Locale::FaIr,
        }
    }

    fn replay(&mut self, request: &CreateIntent, order: &Order, interface: Interface) -> Replay {
        let draw = self.unit();
        let m = self.mix;
        if draw < m.replay_same {
            Replay::Same
        } else if draw < m.replay_same + m.replay_other_interface {
            let other = interface.other();
            Replay::OtherInterface(CreateIntent {
                args: order.args(&request.operation, other),
                locale: other.locale(),
                ..request.clone()
            })
        } else if draw < m.replay_same + m.replay_other_interface + m.changed_reuse {
            Replay::Changed(CreateIntent {
                args: order.changed().args(&request.operation, interface),
                ..request.clone()
            })
        } else {
            Replay::None
        }
    }

    /// Provider calls in failover order until one succeeds, a few more than the budget
    /// allows at most, so an agent that keeps going meets the coordinator's refusal.
    fn steps(&mut self, op: &OperationProfile, release: &str, order: &Order) -> Vec<Step> {
        let first = self.below(PROVIDERS.len());
        let mut steps = Vec::new();
        let mut n = 0usize;
        let limit = op.max_attempts as usize + 2;
        if op.tier.may_hedge() && self.chance(self.mix.hedge) {
            let a = self.call(op, release, order, first, n);
            let b = self.call(op, release, order, first + 1, n + 1);
            n += 2;
            let won = a.outcome == CallOutcome::Succeeded || b.outcome == CallOutcome::Succeeded;
            steps.push(Step::Hedge(a, b));
            if won {
                return steps;
            }
        }
        while n < limit {
            let call = self.call(op, release, order, first + n, n);
            n += 1;
            let done = call.outcome == CallOutcome::Succeeded;
            steps.push(Step::Single(call));
            if done {
                break;
            }
        }
        steps
    }

    fn call(
        &mut self,
        op: &OperationProfile,
        release: &str,
        order: &Order,
        provider: usize,
        n: usize,
    ) -> Call {
        let p = &PROVIDERS[provider % PROVIDERS.len()];
        let latency = self.between(op.latency_ms.0, op.latency_ms.1);
        let latency_ms = (latency as f64 * self.mix.latency_scale).round() as u64;
        let m = self.mix;
        let draw = self.unit();
        let outcome = if draw < m.provider_failure {
            CallOutcome::Transient {
                status: [500, 502, 503, 504][self.below(4)],
            }
        } else if draw < m.provider_failure + m.provider_overload {
            let retry_after_ms =
                ((self.between(1, 3) * 1000) as f64 * m.latency_scale).round() as u64;
            CallOutcome::Overloaded { retry_after_ms }
        } else if draw < m.provider_failure + m.provider_overload + m.provider_timeout {
            CallOutcome::TimedOut
        } else {
            CallOutcome::Succeeded
        };
        // Different models may propose different things: the hash is the proposal's.
        let proposal_hash = (op.tier == ConsequenceTier::Proposal).then(|| {
            let variant = if self.chance(0.1) { "alt" } else { "base" };
            format!("{}-{}-{}-{variant}", order.good, order.supplier, order.qty)
        });
        Call {
            provider: p.name,
            model: p.models[self.below(p.models.len())],
            region: p.regions[self.below(p.regions.len())],
            release_id: release.to_string(),
            worker: format!("worker-{}", (n % 4) + 1),
            latency_ms,
            outcome,
            proposal_hash,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::canonicalize;

    fn plans(seed: u64, n: usize) -> Vec<Plan> {
        let mut g = Generator::new(seed, "t1", Mix::default());
        (0..n).map(|_| g.next_plan()).collect()
    }

    #[test]
    fn the_same_seed_gives_the_same_plans() {
        assert_eq!(plans(7, 50), plans(7, 50));
        assert_ne!(plans(7, 50), plans(8, 50));
    }

    #[test]
    fn every_tier_tenant_and_provider_appears() {
        let all = plans(1, 2_000);
        for tier in ConsequenceTier::ALL {
            assert!(all.iter().any(|p| p.tier() == *tier), "{tier}");
        }
        for t in TENANTS {
            assert!(all.iter().any(|p| p.request.tenant == t.name), "{}", t.name);
        }
        for provider in PROVIDERS {
            let used = all.iter().any(|p| match &p.work {
                Work::Attempts(steps) => steps.iter().any(|s| match s {
                    Step::Single(c) => c.provider == provider.name,
                    Step::Hedge(a, b) => a.provider == provider.name || b.provider == provider.name,
                }),
                Work::Dispatch { .. } => false,
            });
            assert!(used, "{}", provider.name);
        }
    }

    #[test]
    fn persian_tenants_write_persian_digits_and_replays_hash_alike() {
        let all = plans(3, 3_000);
        let fa = all.iter().find(|p| {
            p.request.locale == Locale::FaIr && p.request.operation == "purchase_order.create"
        });
        let fa = fa.expect("a Persian purchase order");
        let qty = fa.request.args["qty"].as_str().expect("qty is text");
        assert!(
            qty.chars().all(|c| ('\u{06F0}'..='\u{06F9}').contains(&c)),
            "{qty}"
        );
        let mut other_interface = 0;
        for plan in &all {
            if let Replay::OtherInterface(other) = &plan.replay {
                other_interface += 1;
                assert_ne!(other.locale, plan.request.locale);
                let a = canonicalize(&plan.request.args).expect("canonical");
                let b = canonicalize(&other.args).expect("canonical");
                assert_eq!(a.hash, b.hash, "{}", plan.caller_key);
            }
        }
        assert!(other_interface > 0);
    }

    #[test]
    fn only_read_and_compute_work_is_hedged() {
        for plan in plans(5, 3_000) {
            if let Work::Attempts(steps) = &plan.work
                && steps.iter().any(|s| matches!(s, Step::Hedge(..)))
            {
                assert!(plan.tier().may_hedge(), "{:?}", plan.tier());
            }
        }
    }
}
