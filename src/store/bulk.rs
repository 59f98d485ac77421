//! A generator of large, realistic data sets written straight into the store's tables, for
//! benchmarks (`benches/store.rs`) and for trying the console on a million intents.
//!
//! It writes what the coordinator would have written for finished work (intents, their
//! attempts, providers, receipts) in large transactions, skipping the per-intent audit rows
//! a live coordinator also keeps. Deterministic for a given seed.

use super::sql::{Conn, Row, ToValue, Value};
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

/// Rows of one table written in multi-row statements: one round trip per `per_statement`
/// rows instead of one per row (on PostgreSQL a round trip, not the insert, is the cost).
struct Rows {
    head: &'static str,
    tail: &'static str,
    width: usize,
    values: Vec<Value>,
}

impl Rows {
    fn new(head: &'static str, tail: &'static str, width: usize) -> Rows {
        Rows {
            head,
            tail,
            width,
            values: Vec::new(),
        }
    }

    fn push(&mut self, row: Vec<Value>) {
        debug_assert_eq!(row.len(), self.width);
        self.values.extend(row);
    }

    /// Write every row, `per_statement` at a time; `f` reads what each statement returns.
    fn write(
        &mut self,
        tx: &dyn Conn,
        per_statement: usize,
        f: &mut dyn FnMut(&Row<'_>) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        for chunk in self.values.chunks(per_statement * self.width) {
            let rows = chunk.len() / self.width;
            let mut sql = String::from(self.head);
            sql.push_str(" VALUES ");
            for r in 0..rows {
                sql.push_str(if r == 0 { "(" } else { ", (" });
                for c in 0..self.width {
                    if c > 0 {
                        sql.push_str(", ");
                    }
                    sql.push_str(&format!("?{}", r * self.width + c + 1));
                }
                sql.push(')');
            }
            sql.push(' ');
            sql.push_str(self.tail);
            let params: Vec<&dyn ToValue> = chunk.iter().map(|v| v as &dyn ToValue).collect();
            tx.each(&sql, &params, f)?;
        }
        self.values.clear();
        Ok(())
    }
}

fn opt(v: Option<i64>) -> Value {
    v.map_or(Value::Null, Value::Int)
}

fn text(v: Option<String>) -> Value {
    v.map_or(Value::Null, Value::Text)
}

impl Store {
    /// Generate `spec.intents` intents with their attempts.
    pub fn generate_bulk(&mut self, spec: &BulkSpec) -> Result<BulkStats, StoreError> {
        let mut rng = SplitMix64::new(spec.seed);
        let mut stats = BulkStats::default();
        let start_ms = spec.end_ms.saturating_sub(spec.span_ms);
        let step = spec.span_ms / spec.intents.max(1);
        let chunk = 20_000;
        let mut intents = Rows::new(
            "INSERT INTO intents (id, tenant, caller_key, actor, purpose, operation, tool, tier, args_json, \
             canonical_json, args_hash, search_text, release_id, locale, connector, action_key, state, attempts, \
             max_attempts, crossed, created_at_ms, updated_at_ms, deadline_at_ms, indeterminate_since_ms, \
             committed_at_ms, first_dispatch_at_ms, key_retention_secs, receipt_id, downstream_ref, retry_owner)",
            "RETURNING seq, caller_key",
            30,
        );
        // Each attempt row waits for its intent's seq: (intent number, the row without it).
        let mut attempts: Vec<(u64, &str, Vec<Value>)> = Vec::new();
        // As the coordinator writes them: the arguments in a row of their own where the
        // dialect keeps them so, each waiting for its intent's seq too.
        let apart = self.conn.dialect().payload_apart();
        let mut payloads: Vec<(u64, String)> = Vec::new();
        let mut n = 0;
        while n < spec.intents {
            self.conn.batch("BEGIN")?;
            let tx = &self.conn;
            let first = n;
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
                let attempt_count = (1.0 + (-(1.0 - u).ln()) * (spec.mean_attempts - 1.0))
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
                let ended = created + 400 * attempt_count;
                let committed = (state == "committed").then_some(to_i64(ended));
                let downstream = (state == "committed").then(|| format!("po-b{n}"));
                let receipt = downstream
                    .as_ref()
                    .map(|_| ReceiptId::generate(ended, u128::from(n)).to_string());
                let hash = format!("{:064x}", rng.next_u64());
                let release = format!("r{}", rng.next_u64() % 4 + 1);
                intents.push(vec![
                    id.as_str().into(),
                    tenant_name.into(),
                    format!("bulk-{n}").into(),
                    "agent".into(),
                    "bulk".into(),
                    operation.into(),
                    tool.into(),
                    tier.into(),
                    (if apart { "" } else { &args }).into(),
                    (if apart { "" } else { &args }).into(),
                    hash.into(),
                    (if apart {
                        String::new()
                    } else {
                        search_form(&args)
                    })
                    .into(),
                    release.into(),
                    locale.into(),
                    "erp".into(),
                    key.as_str().into(),
                    state.into(),
                    to_i64(attempt_count).into(),
                    Value::Int(5),
                    Value::Int(mutating.into()),
                    to_i64(created).into(),
                    to_i64(ended).into(),
                    to_i64(created + 120_000).into(),
                    opt((state == "indeterminate").then_some(to_i64(ended))),
                    opt(committed),
                    opt(mutating.then_some(to_i64(created + 100))),
                    Value::Int(86_400),
                    text(receipt),
                    text(downstream),
                    (if mutating { "coordinator" } else { "agent" }).into(),
                ]);
                for a in 0..attempt_count {
                    let last = a + 1 == attempt_count;
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
                    attempts.push((
                        n,
                        provider,
                        vec![
                            AttemptId::generate(started, u128::from(rng.next_u64()))
                                .as_str()
                                .into(),
                            tenant_name.into(),
                            kind.into(),
                            provider.into(),
                            "r1".into(),
                            outcome.into(),
                            Value::Int((kind == "dispatch").into()),
                            Value::Int(rng.next_u64().is_multiple_of(200).into()),
                            text((kind == "dispatch").then(|| key.as_str().to_string())),
                            to_i64(started).into(),
                            to_i64(started + 350).into(),
                        ],
                    ));
                    stats.attempts += 1;
                }
                if apart {
                    payloads.push((n, args));
                }
                stats.intents += 1;
                n += 1;
            }
            let mut seqs = vec![0i64; (end - first) as usize];
            intents.write(tx.as_conn(), 500, &mut |row| {
                let seq: i64 = row.get(0)?;
                let caller_key: String = row.get(1)?;
                let number = caller_key
                    .strip_prefix("bulk-")
                    .and_then(|v| v.parse::<u64>().ok())
                    .ok_or_else(|| StoreError::Corrupt(format!("caller key {caller_key}")))?;
                seqs[(number - first) as usize] = seq;
                Ok(())
            })?;
            let mut attempt_rows = Rows::new(
                "INSERT INTO attempts (id, intent_seq, tenant, kind, provider, release_id, outcome, sent, \
                 late, presented_key, started_at_ms, ended_at_ms)",
                "",
                12,
            );
            let mut providers = Rows::new(
                "INSERT INTO intent_providers (provider, intent_seq)",
                "ON CONFLICT DO NOTHING",
                2,
            );
            let mut payload_rows = Rows::new(
                "INSERT INTO intent_payloads (intent_seq, args_json, canonical_json, search_text)",
                "",
                4,
            );
            for (number, args) in payloads.drain(..) {
                let seq = seqs[(number - first) as usize];
                payload_rows.push(vec![
                    Value::Int(seq),
                    args.as_str().into(),
                    args.as_str().into(),
                    search_form(&args).into(),
                ]);
            }
            let mut seen = std::collections::HashSet::new();
            for (number, provider, mut row) in attempts.drain(..) {
                let seq = seqs[(number - first) as usize];
                if seen.insert((seq, provider)) {
                    providers.push(vec![provider.into(), Value::Int(seq)]);
                }
                row.insert(1, Value::Int(seq));
                attempt_rows.push(row);
            }
            payload_rows.write(tx.as_conn(), 500, &mut |_| Ok(()))?;
            attempt_rows.write(tx.as_conn(), 400, &mut |_| Ok(()))?;
            providers.write(tx.as_conn(), 1000, &mut |_| Ok(()))?;
            tx.batch("COMMIT")?;
        }
        self.conn.batch("ANALYZE")?;
        Ok(stats)
    }
}
