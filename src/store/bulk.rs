//! A generator of large, realistic data sets written straight into the store's tables, for
//! benchmarks (`benches/store.rs`) and for trying the console on a million intents.
//!
//! It writes what the coordinator would have written for finished work (intents, their
//! attempts, providers, receipts) in large transactions, skipping the per-intent audit rows
//! a live coordinator also keeps. Deterministic for a given seed.

use super::sql::{Conn, ConnExt, params};
use super::{Store, StoreError, search_form, to_i64};
use crate::domain::retry::SplitMix64;
use crate::domain::{ActionKey, AttemptId, IntentId, ReceiptId, Tenant};

/// What to generate.
#[derive(Debug, Clone)]
pub struct BulkSpec {
    pub intents: u64,
    /// Mean attempts per intent (the distribution is skewed, as retries are).
    pub mean_attempts: f64,
    /// Intents are spread evenly over this many milliseconds before `end_ms`.
    pub span_ms: u64,
    pub end_ms: u64,
    pub seed: u64,
}

/// What was generated.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BulkStats {
    pub intents: u64,
    pub attempts: u64,
}

pub const TENANTS: &[&str] = &["acme", "pars-trading", "globex", "initech", "umbrella"];
pub const PROVIDERS: &[&str] = &["openai", "anthropic", "mistral"];
const OPERATIONS: &[(&str, &str, &str)] = &[
    ("purchase_order.create", "erp.po", "write"),
    ("inventory.reserve", "erp.inventory", "write"),
    ("payment.initiate", "erp.payments", "financial"),
    ("supplier.search", "catalog.search", "read"),
    ("quote.compare", "llm.compare", "compute"),
];

fn pick<'a, T>(rng: &mut SplitMix64, list: &'a [T]) -> &'a T {
    &list[(rng.next_u64() % list.len() as u64) as usize]
}

impl Store {
    /// Generate `spec.intents` intents with their attempts.
    pub fn generate_bulk(&mut self, spec: &BulkSpec) -> Result<BulkStats, StoreError> {
        let mut rng = SplitMix64::new(spec.seed);
        let mut stats = BulkStats::default();
        let start_ms = spec.end_ms.saturating_sub(spec.span_ms);
        let step = spec.span_ms / spec.intents.max(1);
        let chunk = 20_000;
        let mut n = 0;
        while n < spec.intents {
            self.conn.batch("BEGIN")?;
            let tx = &self.conn;
            {
                let intent_sql = "INSERT INTO intents (id, tenant, caller_key, actor, purpose, operation, tool, tier, args_json, \
                     canonical_json, args_hash, search_text, release_id, locale, connector, action_key, state, attempts, \
                     max_attempts, crossed, created_at_ms, updated_at_ms, deadline_at_ms, indeterminate_since_ms, \
                     committed_at_ms, first_dispatch_at_ms, key_retention_secs, receipt_id, downstream_ref) \
                     VALUES (?1, ?2, ?3, 'agent', 'bulk', ?4, ?5, ?6, ?7, ?7, ?8, ?9, ?10, ?11, 'erp', ?12, ?13, ?14, 5, \
                     ?15, ?16, ?17, ?18, ?19, ?20, ?21, 86400, ?22, ?23) RETURNING seq";
                let attempt_sql = "INSERT INTO attempts (id, intent_seq, tenant, kind, provider, release_id, outcome, sent, late, \
                     presented_key, started_at_ms, ended_at_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)";
                let provider_sql = "INSERT INTO intent_providers (provider, intent_seq) VALUES (?1, ?2) ON CONFLICT DO NOTHING";
                let end = (n + chunk).min(spec.intents);
                while n < end {
                    let created = start_ms + n * step;
                    let id = IntentId::generate(
                        created,
                        u128::from(rng.next_u64()) << 16 | u128::from(n as u16),
                    );
                    let tenant_name = *pick(&mut rng, TENANTS);
                    let tenant: Tenant = tenant_name.parse()?;
                    let (operation, tool, tier) = *pick(&mut rng, OPERATIONS);
                    let mutating = matches!(tier, "write" | "financial");
                    let key = ActionKey::new(operation, &tenant, &id);
                    // Skewed attempt counts: most intents need one or two, a few many more.
                    let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
                    let attempts = (1.0 + (-(1.0 - u).ln()) * (spec.mean_attempts - 1.0))
                        .round()
                        .clamp(1.0, 12.0) as u64;
                    let roll = rng.next_u64() % 100;
                    let state = match roll {
                        0..=84 => "committed",
                        85..=89 if mutating => "indeterminate",
                        85..=89 => "committed",
                        90..=93 => "rejected",
                        94..=96 => "executing",
                        97 => "cancelled",
                        _ => "expired",
                    };
                    let qty = rng.next_u64() % 5000;
                    let args = format!(
                        "{{\"item\":\"paper A4\",\"qty\":{qty},\"supplier\":\"s-{}\"}}",
                        qty % 97
                    );
                    let locale = if tenant_name == "pars-trading" {
                        "fa-IR"
                    } else {
                        "en-US"
                    };
                    let ended = created + 400 * attempts;
                    let committed = (state == "committed").then_some(to_i64(ended));
                    let downstream = (state == "committed").then(|| format!("po-b{n}"));
                    let receipt = downstream
                        .as_ref()
                        .map(|_| ReceiptId::generate(ended, u128::from(n)).to_string());
                    let seq: i64 = tx.one(
                        intent_sql,
                        params![
                            id.as_str(),
                            tenant_name,
                            format!("bulk-{n}"),
                            operation,
                            tool,
                            tier,
                            args,
                            format!("{:064x}", rng.next_u64()),
                            search_form(&args),
                            format!("r{}", rng.next_u64() % 4 + 1),
                            locale,
                            key.as_str(),
                            state,
                            to_i64(attempts),
                            mutating,
                            to_i64(created),
                            to_i64(ended),
                            to_i64(created + 120_000),
                            (state == "indeterminate").then_some(to_i64(ended)),
                            committed,
                            mutating.then_some(to_i64(created + 100)),
                            receipt,
                            downstream,
                        ],
                        |r| r.get(0),
                    )?;
                    for a in 0..attempts {
                        let last = a + 1 == attempts;
                        let (kind, provider) = if mutating && last {
                            ("dispatch", "erp")
                        } else {
                            (
                                if a % 2 == 0 { "retrieval" } else { "inference" },
                                *pick(&mut rng, PROVIDERS),
                            )
                        };
                        let outcome = if !last {
                            "failed"
                        } else if state == "indeterminate" {
                            "timed_out"
                        } else {
                            "succeeded"
                        };
                        let started = created + 400 * a;
                        tx.run(
                            attempt_sql,
                            params![
                                AttemptId::generate(started, u128::from(rng.next_u64())).as_str(),
                                seq,
                                tenant_name,
                                kind,
                                provider,
                                "r1",
                                outcome,
                                kind == "dispatch",
                                rng.next_u64().is_multiple_of(200),
                                (kind == "dispatch").then_some(key.as_str()),
                                to_i64(started),
                                to_i64(started + 350),
                            ],
                        )?;
                        tx.run(provider_sql, params![provider, seq])?;
                        stats.attempts += 1;
                    }
                    stats.intents += 1;
                    n += 1;
                }
            }
            tx.batch("COMMIT")?;
        }
        self.conn.batch("ANALYZE")?;
        Ok(stats)
    }
}
