//! Metric summaries and time series, aggregated in the database so the console only draws.
//! Definitions are the domain's (`crate::domain::metrics`); this module feeds them.

use super::query::{IntentFilter, filter_where};
use super::sql::{ConnExt, params_of};
use super::{Store, StoreError, to_i64, to_u64};
use crate::domain::ReleaseRegistry;
use crate::domain::metrics::distribution;
use crate::wire::{IndeterminateSummary, SeriesPoint, Summary};

/// Filters for metrics are the intent filters.
pub type MetricFilter = IntentFilter;

/// Which dimension a series is split by.
pub fn group_column(group_by: &str, on_attempts: bool) -> Option<&'static str> {
    Some(match (group_by, on_attempts) {
        ("none" | "", _) => "'all'",
        ("tenant", _) => "i.tenant",
        ("provider", true) => "a.provider",
        ("provider", false) => "i.connector",
        ("release", true) => "coalesce(a.release_id, i.release_id)",
        ("release", false) => "i.release_id",
        ("tool", _) => "i.tool",
        ("operation", _) => "i.operation",
        ("locale", _) => "i.locale",
        ("tier", _) => "i.tier",
        _ => return None,
    })
}

/// The series a caller may ask for.
pub const SERIES_METRICS: &[&str] = &[
    "attempts",
    "intents",
    "amplification",
    "indeterminate",
    "committed",
    "late_results",
    "duplicate_effects",
];

/// The logical-outcome summary and time series, aggregated in the database.
pub trait Metrics {
    /// The indeterminate count and ages over the filtered intents.
    fn indeterminate_summary(
        &mut self,
        filter: &MetricFilter,
        now_ms: u64,
    ) -> Result<IndeterminateSummary, StoreError>;

    /// The whole logical-outcome summary.
    fn summary(&mut self, filter: &MetricFilter, now_ms: u64) -> Result<Summary, StoreError> {
        self.summary_with(filter, now_ms, &ReleaseRegistry::default())
    }

    /// [`Metrics::summary`], its failover divergence comparing only the proposals of the
    /// releases `releases` lets act for their operation.
    fn summary_with(
        &mut self,
        filter: &MetricFilter,
        now_ms: u64,
        releases: &ReleaseRegistry,
    ) -> Result<Summary, StoreError>;

    /// A time series of `metric` in buckets of `bucket_ms` between `from_ms` and `to_ms`,
    /// one series per value of `group_by`. Unknown metric or group names are `Conflict`.
    #[allow(clippy::too_many_arguments)]
    fn series(
        &mut self,
        metric: &str,
        bucket_ms: u64,
        group_by: &str,
        filter: &MetricFilter,
        from_ms: u64,
        to_ms: u64,
    ) -> Result<Vec<SeriesPoint>, StoreError>;
}

impl Metrics for Store {
    fn indeterminate_summary(
        &mut self,
        filter: &MetricFilter,
        now_ms: u64,
    ) -> Result<IndeterminateSummary, StoreError> {
        let mut w = filter_where(filter, self.conn.dialect());
        w.push("i.state = 'indeterminate'");
        let sql = format!(
            "SELECT i.indeterminate_since_ms FROM intents i{} WHERE {} ORDER BY 1",
            w.joins(),
            w.sql()
        );
        let ages: Vec<u64> = self.conn.rows(&sql, &params_of(&w.values), |r| {
            let since: Option<u64> = r.get(0)?;
            Ok(now_ms.saturating_sub(since.unwrap_or(now_ms)) / 1000)
        })?;
        let d = distribution(&ages);
        Ok(IndeterminateSummary {
            count: d.count,
            oldest_age_secs: d.max,
            p50_age_secs: d.p50,
            p95_age_secs: d.p95,
            rate: 0.0,
        })
    }

    fn summary_with(
        &mut self,
        filter: &MetricFilter,
        now_ms: u64,
        releases: &ReleaseRegistry,
    ) -> Result<Summary, StoreError> {
        let w = filter_where(filter, self.conn.dialect());
        let cond = w.sql();
        let joins = w.joins();
        let bound = params_of(&w.values);
        let values = || bound.as_slice();

        let mut per_intent: Vec<u64> = Vec::new();
        let mut budget_exceeded = 0;
        {
            let sql = format!(
                "SELECT i.attempts, i.attempts > i.max_attempts, count(*) FROM intents i{joins} WHERE {cond} GROUP BY 1, 2"
            );
            let rows = self.conn.rows(&sql, values(), |r| {
                Ok((r.get::<i64>(0)?, r.get::<bool>(1)?, r.get::<i64>(2)?))
            })?;
            for (attempts, over, n) in rows {
                if over {
                    budget_exceeded += to_u64(n);
                }
                per_intent.extend(std::iter::repeat_n(to_u64(attempts), to_u64(n) as usize));
            }
        }
        let amplification = distribution(&per_intent);
        let attempts: u64 = per_intent.iter().sum();

        let mut states = std::collections::BTreeMap::new();
        {
            let sql =
                format!("SELECT i.state, count(*) FROM intents i{joins} WHERE {cond} GROUP BY 1");
            let rows = self.conn.rows(&sql, values(), |r| {
                Ok((r.get::<String>(0)?, r.get::<i64>(1)?))
            })?;
            for (state, n) in rows {
                states.insert(state, to_u64(n));
            }
        }
        let count_where =
            |extra: &str| format!("SELECT count(*) FROM intents i{joins} WHERE {cond} AND {extra}");
        let dispatched: i64 = self.conn.one(
            &count_where("i.first_dispatch_at_ms IS NOT NULL"),
            values(),
            |r| r.get(0),
        )?;
        let duplicate_effects: i64 = self.conn.one(
            &format!(
                "SELECT count(*) FROM (SELECT DISTINCT r.intent_seq, r.downstream_id \
                 FROM receipts r JOIN intents i ON i.seq = r.intent_seq{joins} \
                 WHERE {cond} AND r.authoritative = 0 AND r.downstream_id IS DISTINCT FROM i.downstream_ref) d"
            ),
            values(),
            |r| r.get(0),
        )?;
        let late_results: i64 = self.conn.one(
            &format!("SELECT count(*) FROM attempts a JOIN intents i ON i.seq = a.intent_seq{joins} WHERE {cond} AND a.late = 1"),
            values(),
            |r| r.get(0),
        )?;
        let (with_two, diverged): (i64, i64) = if !releases.releases.is_empty() {
            let sql = format!(
                "SELECT a.intent_seq, i.operation, coalesce(a.release_id, i.release_id), a.proposal_hash \
                 FROM attempts a JOIN intents i ON i.seq = a.intent_seq{joins} WHERE {cond} \
                 AND a.proposal_hash IS NOT NULL ORDER BY a.intent_seq, a.seq"
            );
            let rows: Vec<(i64, String, String, String)> = self.conn.rows(&sql, values(), |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
            })?;
            let mut per_intent: Vec<Vec<String>> = Vec::new();
            let mut last = None;
            for (seq, operation, release, hash) in rows {
                if !releases.eligible(&operation, &release) {
                    continue;
                }
                if last != Some(seq) {
                    per_intent.push(Vec::new());
                    last = Some(seq);
                }
                if let Some(hashes) = per_intent.last_mut() {
                    hashes.push(hash);
                }
            }
            let with_two = per_intent.iter().filter(|h| h.len() >= 2);
            (
                with_two.clone().count() as i64,
                with_two.filter(|h| h.iter().any(|x| x != &h[0])).count() as i64,
            )
        } else {
            self.conn.one(
            &format!(
                "SELECT count(*), CAST(coalesce(sum(CASE WHEN d > 1 THEN 1 ELSE 0 END), 0) AS BIGINT) FROM (SELECT count(DISTINCT a.proposal_hash) AS d, count(*) AS n \
                 FROM attempts a JOIN intents i ON i.seq = a.intent_seq{joins} WHERE {cond} AND a.proposal_hash IS NOT NULL \
                 GROUP BY a.intent_seq HAVING count(*) >= 2) AS per_intent"
            ),
            values(),
            |r| Ok((r.get(0)?, r.get(1)?)),
            )?
        };
        let mut per_intent_lookups: Vec<u64> = Vec::new();
        {
            let sql =
                format!("SELECT i.lookups, count(*) FROM intents i{joins} WHERE {cond} GROUP BY 1");
            let rows = self
                .conn
                .rows(&sql, values(), |r| Ok((r.get::<i64>(0)?, r.get::<i64>(1)?)))?;
            for (lookups, n) in rows {
                per_intent_lookups.extend(std::iter::repeat_n(to_u64(lookups), to_u64(n) as usize));
            }
        }
        let lookups_exhausted: i64 = self.conn.one(
            &count_where("i.state = 'indeterminate' AND i.lookups_exhausted_at_ms IS NOT NULL"),
            values(),
            |r| r.get(0),
        )?;
        let mut indeterminate = self.indeterminate_summary(filter, now_ms)?;
        indeterminate.rate =
            crate::domain::metrics::indeterminate_rate(indeterminate.count, to_u64(dispatched));
        Ok(Summary {
            intents: per_intent.len() as u64,
            attempts,
            amplification,
            committed: states.get("committed").copied().unwrap_or(0),
            states,
            dispatched: to_u64(dispatched),
            indeterminate,
            duplicate_effects: to_u64(duplicate_effects),
            late_results: to_u64(late_results),
            budget_exceeded,
            failover_divergence: crate::domain::metrics::divergence_rate(
                to_u64(diverged),
                to_u64(with_two),
            ),
            lookups: per_intent_lookups.iter().sum(),
            lookup_amplification: distribution(&per_intent_lookups),
            lookups_exhausted: to_u64(lookups_exhausted),
        })
    }

    /// A time series of `metric` in buckets of `bucket_ms` between `from_ms` and `to_ms`,
    /// one series per value of `group_by`. Unknown metric or group names are `Conflict`.
    #[allow(clippy::too_many_arguments)]
    fn series(
        &mut self,
        metric: &str,
        bucket_ms: u64,
        group_by: &str,
        filter: &MetricFilter,
        from_ms: u64,
        to_ms: u64,
    ) -> Result<Vec<SeriesPoint>, StoreError> {
        let bucket_ms = bucket_ms.max(1000);
        let on_attempts = matches!(metric, "attempts" | "amplification" | "late_results");
        let group = group_column(group_by, on_attempts)
            .ok_or_else(|| StoreError::Conflict(format!("unknown group_by `{group_by}`")))?;
        let mut w = filter_where(filter, self.conn.dialect());
        let b = w.bind(to_i64(bucket_ms));
        let (time, from_table, value) = match metric {
            "attempts" => (
                "a.started_at_ms",
                "attempts a JOIN intents i ON i.seq = a.intent_seq",
                "count(*)",
            ),
            "amplification" => (
                "a.started_at_ms",
                "attempts a JOIN intents i ON i.seq = a.intent_seq",
                "CAST(count(*) AS REAL) / count(DISTINCT a.intent_seq)",
            ),
            "late_results" => {
                w.push("a.late = 1");
                (
                    "a.ended_at_ms",
                    "attempts a JOIN intents i ON i.seq = a.intent_seq",
                    "count(*)",
                )
            }
            "intents" => ("i.created_at_ms", "intents i", "count(*)"),
            "committed" => ("i.committed_at_ms", "intents i", "count(*)"),
            "indeterminate" => {
                w.push("i.state = 'indeterminate'");
                ("i.indeterminate_since_ms", "intents i", "count(*)")
            }
            // As the summary counts them: each downstream id once for each intent that
            // reported it besides the one it accepted, when it was first reported.
            "duplicate_effects" => (
                "r.first_ms",
                "(SELECT r.intent_seq, min(r.received_at_ms) AS first_ms \
                  FROM receipts r JOIN intents i ON i.seq = r.intent_seq \
                  WHERE r.authoritative = 0 AND r.downstream_id IS DISTINCT FROM i.downstream_ref \
                  GROUP BY r.intent_seq, r.downstream_id) r JOIN intents i ON i.seq = r.intent_seq",
                "count(*)",
            ),
            other => {
                return Err(StoreError::Conflict(format!(
                    "unknown metric `{other}`; expected one of {}",
                    SERIES_METRICS.join(", ")
                )));
            }
        };
        let f = w.bind(to_i64(from_ms));
        let t = w.bind(to_i64(to_ms));
        w.push(&format!("{time} >= {f} AND {time} < {t}"));
        let sql = format!(
            "SELECT ({time} / {b}) * {b} AS bucket, {group} AS g, {value}, count(*) FROM {from_table}{} WHERE {} \
             GROUP BY bucket, g ORDER BY bucket, g",
            w.joins(),
            w.sql()
        );
        self.conn.rows(&sql, &params_of(&w.values), |r| {
            Ok(SeriesPoint {
                bucket_start_ms: r.get(0)?,
                group: r.get::<Option<String>>(1)?.unwrap_or_default(),
                value: r.get(2)?,
                count: r.get(3)?,
            })
        })
    }
}
