//! The logical-outcome report of a run: what became of every intent, not how many RPCs
//! succeeded.
//!
//! After a run, [`settle`] polls the coordinator (never a fixed sleep) until nothing of the
//! run is `executing`, the dispatch queue is empty and the indeterminate count has stopped
//! falling for a while, or a timeout passes. [`coordinator_report`] then reads the run's
//! intents over the operator API (`GET /v1/intents`, paged; `GET /v1/metrics/summary`) and
//! each mutating intent's true effects from the sandbox (`GET /_sandbox/effects`).
//!
//! Definitions (the design's metrics, over the intents the run created):
//! - `attempts`: attempts counted against budgets (lookups are not attempts);
//! - `amplification`: attempts per intent (mean, p99, max; nearest rank);
//! - `duplicate_effects`: effects beyond the first per intent, from the sandbox;
//! - `indeterminate`: intents left indeterminate, and the oldest one's age;
//! - `late_results`: attempts that ended after their intent's deadline or final state;
//! - `goodput_per_min`: committed intents per minute, from the run's start to its last
//!   commit;
//! - `budget_exceeded`: intents with more attempts than their `max_attempts`.

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use reqwest::{StatusCode, Url};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::driver::{DriveLog, DriveTotals};
use super::error::WorkloadError;
use crate::client::ingest::with_trailing_slash;
use crate::clock::SharedClock;
use crate::domain::metrics::{distribution, goodput_per_min};
use crate::domain::{ActionKey, IntentId, IntentState};
use crate::wire::{Intent, IntentPage};

/// How often settling looks at the coordinator.
const POLL: Duration = Duration::from_millis(200);
/// How long the indeterminate count must stay put before it is taken as settled: longer
/// than a reconcile pass plus the spacing between two lookups of one intent.
const QUIET: Duration = Duration::from_secs(5);
/// Intents per page when reading the run back.
const PAGE: u32 = 500;

/// Attempts per intent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Amplification {
    pub mean: f64,
    pub p50: u64,
    pub p95: u64,
    pub p99: u64,
    pub max: u64,
}

impl Amplification {
    pub fn of(attempts_per_intent: &[u64]) -> Amplification {
        let d = distribution(attempts_per_intent);
        Amplification {
            mean: d.mean,
            p50: d.p50,
            p95: d.p95,
            p99: d.p99,
            max: d.max,
        }
    }
}

/// Indeterminate intents left at the end.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Indeterminate {
    pub count: u64,
    pub oldest_age_secs: u64,
}

/// What only the naive baseline has.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NaiveFigures {
    /// HTTP calls that reached for the downstream (every layer's retries).
    pub downstream_calls: u64,
    /// Intents the client gave up on and reported failed, though the downstream applied
    /// them: unknown outcomes relabelled as failures.
    pub failed_but_applied: u64,
    /// Logical intents that took effect at least once.
    pub applied: u64,
}

/// The logical-outcome report.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// `coordinator` or `naive`.
    pub mode: String,
    pub seed: u64,
    pub faults: String,
    pub intents: u64,
    pub attempts: u64,
    pub amplification: Amplification,
    pub duplicate_effects: u64,
    /// True effects downstream over the run's intents.
    pub effects: u64,
    pub indeterminate: Indeterminate,
    pub late_results: u64,
    pub goodput_per_min: f64,
    pub budget_exceeded: u64,
    pub states: BTreeMap<String, u64>,
    pub elapsed_secs: f64,
    /// False when settling timed out: the figures are a snapshot of a run still moving.
    pub settled: bool,
    /// What the simulated agents did (through a coordinator only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agents: Option<DriveTotals>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub naive: Option<NaiveFigures>,
}

/// Where the report reads from.
#[derive(Clone)]
pub struct ReportSource {
    http: reqwest::Client,
    coordinator: Url,
    token: String,
    sandbox: Url,
    clock: SharedClock,
}

impl ReportSource {
    pub fn new(
        coordinator: Url,
        token: &str,
        sandbox: Url,
        clock: SharedClock,
    ) -> Result<ReportSource, WorkloadError> {
        let http = crate::tls::client(None)
            .map_err(|e| WorkloadError::Invalid(e.to_string()))?
            .timeout(Duration::from_secs(30))
            .no_proxy()
            .build()
            .map_err(|e| WorkloadError::Invalid(format!("cannot build the HTTP client: {e}")))?;
        Ok(ReportSource {
            http,
            coordinator: with_trailing_slash(coordinator),
            token: token.to_string(),
            sandbox: with_trailing_slash(sandbox),
            clock,
        })
    }

    async fn get(
        &self,
        what: &'static str,
        base: &Url,
        path: &str,
        query: &[(&str, String)],
    ) -> Result<Value, WorkloadError> {
        let url = base.join(path).map_err(|e| WorkloadError::BadUrl {
            url: path.to_string(),
            detail: e.to_string(),
        })?;
        let response = self
            .http
            .get(url)
            .bearer_auth(&self.token)
            .query(query)
            .send()
            .await
            .map_err(|e| WorkloadError::Lost {
                what,
                detail: crate::client::ingest::kind(&e).to_string(),
            })?;
        let status = response.status();
        let text = response.text().await.unwrap_or_default();
        match status {
            StatusCode::OK => serde_json::from_str(&text).map_err(|e| WorkloadError::Unexpected {
                what,
                status: 200,
                body: e.to_string(),
            }),
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => Err(WorkloadError::Forbidden {
                what,
                status: status.as_u16(),
                hint: "the report reads the operator API: use a token with read access (viewer, supervisor, \
                       engineer or admin), e.g. with --report-token-file",
            }),
            _ => Err(WorkloadError::Unexpected {
                what,
                status: status.as_u16(),
                body: WorkloadError::clip(&text),
            }),
        }
    }

    /// How many of the window's intents are in `state`.
    async fn count(&self, state: IntentState, window: (u64, u64)) -> Result<u64, WorkloadError> {
        let query = [
            ("state", state.as_str().to_string()),
            ("since", window.0.to_string()),
            ("until", window.1.to_string()),
            ("limit", "1".to_string()),
        ];
        let page = self
            .get("count intents", &self.coordinator, "v1/intents", &query)
            .await?;
        Ok(page.get("total").and_then(Value::as_u64).unwrap_or(0))
    }

    /// Dispatches not yet handled, when the token may see the shared queue.
    async fn queue_depth(&self) -> Option<u64> {
        let url = self.coordinator.join("metrics").ok()?;
        let text = self
            .http
            .get(url)
            .bearer_auth(&self.token)
            .send()
            .await
            .ok()?
            .text()
            .await
            .ok()?;
        text.lines()
            .find_map(|l| l.strip_prefix("intentdesk_dispatcher_queue_depth "))
            .and_then(|v| v.trim().parse::<f64>().ok())
            .map(|v| v as u64)
    }

    /// One action key's true effects downstream.
    async fn effects(&self, key: &ActionKey) -> Result<u64, WorkloadError> {
        let body = self
            .get(
                "read effects",
                &self.sandbox,
                "_sandbox/effects",
                &[("action_key", key.to_string())],
            )
            .await?;
        Ok(body.get("effects").and_then(Value::as_u64).unwrap_or(0))
    }

    /// Every intent created in `window` (created-at, unix ms, `until` exclusive).
    async fn intents(&self, window: (u64, u64)) -> Result<Vec<Intent>, WorkloadError> {
        let mut out = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let mut query = vec![
                ("since", window.0.to_string()),
                ("until", window.1.to_string()),
                ("limit", PAGE.to_string()),
                ("sort", "created".to_string()),
            ];
            if let Some(c) = &cursor {
                query.push(("cursor", c.clone()));
            }
            let body = self
                .get("list intents", &self.coordinator, "v1/intents", &query)
                .await?;
            let page: IntentPage =
                serde_json::from_value(body).map_err(|e| WorkloadError::Unexpected {
                    what: "list intents",
                    status: 200,
                    body: e.to_string(),
                })?;
            let _ = page.total;
            out.extend(page.items);
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => return Ok(out),
            }
        }
    }
}

/// The created-at window of a run, `until` exclusive.
pub fn window_of(log: &DriveLog) -> (u64, u64) {
    (
        log.started_at_ms,
        log.finished_at_ms.max(log.started_at_ms) + 1,
    )
}

/// Poll until the run's intents stop moving (see the module header), at most `timeout`;
/// true when they did.
pub async fn settle(
    source: &ReportSource,
    window: (u64, u64),
    timeout: Duration,
) -> Result<bool, WorkloadError> {
    let started = Instant::now();
    let mut last_indeterminate: Option<(u64, Instant)> = None;
    loop {
        let executing = source.count(IntentState::Executing, window).await?;
        let queued = source.queue_depth().await.unwrap_or(0);
        let indeterminate = source.count(IntentState::Indeterminate, window).await?;
        let quiet_since = match last_indeterminate {
            Some((n, since)) if n == indeterminate => since,
            _ => Instant::now(),
        };
        last_indeterminate = Some((indeterminate, quiet_since));
        let quiet = indeterminate == 0 || quiet_since.elapsed() >= QUIET;
        if executing == 0 && queued == 0 && quiet {
            return Ok(true);
        }
        if started.elapsed() >= timeout {
            tracing::warn!(
                executing,
                queued,
                indeterminate,
                "the run did not settle before the timeout"
            );
            return Ok(false);
        }
        tokio::time::sleep(POLL).await;
    }
}

/// The report of a run driven through the coordinator.
pub async fn coordinator_report(
    source: &ReportSource,
    log: &DriveLog,
    seed: u64,
    faults: &str,
    settled: bool,
) -> Result<Report, WorkloadError> {
    let window = window_of(log);
    let ours: HashSet<&IntentId> = log.intents.iter().map(|d| &d.id).collect();
    let listed: Vec<Intent> = source
        .intents(window)
        .await?
        .into_iter()
        .filter(|i| ours.contains(&i.id))
        .collect();
    let summary_query = [
        ("since", window.0.to_string()),
        ("until", window.1.to_string()),
    ];
    let summary = source
        .get(
            "read the summary",
            &source.coordinator,
            "v1/metrics/summary",
            &summary_query,
        )
        .await?;
    let now = source.clock.now_ms();

    let per_intent: Vec<u64> = listed.iter().map(|i| u64::from(i.attempts)).collect();
    let mut states = BTreeMap::new();
    let (mut effects, mut duplicate_effects) = (0, 0);
    for intent in &listed {
        *states.entry(intent.state.as_str().to_string()).or_insert(0) += 1;
        if intent.consequence.is_mutating() {
            let n = source.effects(&intent.action_key).await?;
            effects += n;
            duplicate_effects += n.saturating_sub(1);
        }
    }
    let indeterminate: Vec<u64> = listed
        .iter()
        .filter(|i| i.state == IntentState::Indeterminate)
        .map(|i| i.indeterminate_since_ms.unwrap_or(now))
        .collect();
    let committed = states
        .get(IntentState::Committed.as_str())
        .copied()
        .unwrap_or(0);
    let last_commit = listed
        .iter()
        .filter_map(|i| i.committed_at_ms)
        .max()
        .unwrap_or(log.finished_at_ms);
    Ok(Report {
        mode: "coordinator".to_string(),
        seed,
        faults: faults.to_string(),
        intents: listed.len() as u64,
        attempts: per_intent.iter().sum(),
        amplification: Amplification::of(&per_intent),
        duplicate_effects,
        effects,
        indeterminate: Indeterminate {
            count: indeterminate.len() as u64,
            oldest_age_secs: indeterminate
                .iter()
                .map(|at| now.saturating_sub(*at) / 1000)
                .max()
                .unwrap_or(0),
        },
        late_results: summary
            .get("late_results")
            .and_then(Value::as_u64)
            .unwrap_or(log.totals.late_reported),
        goodput_per_min: goodput_per_min(committed, last_commit.saturating_sub(log.started_at_ms)),
        budget_exceeded: listed
            .iter()
            .filter(|i| i.attempts > i.max_attempts)
            .count() as u64,
        states,
        elapsed_secs: now.saturating_sub(log.started_at_ms) as f64 / 1000.0,
        settled,
        agents: Some(log.totals.clone()),
        naive: None,
    })
}

impl Report {
    /// A table for people.
    pub fn to_table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "intentdesk load: logical outcomes ({})", self.mode);
        let _ = writeln!(
            out,
            "  seed {} · faults {} · {:.1} s",
            self.seed, self.faults, self.elapsed_secs
        );
        if !self.settled {
            let _ = writeln!(
                out,
                "  (not settled before the timeout: figures are a snapshot)"
            );
        }
        let row = |out: &mut String, name: &str, value: String| {
            let _ = writeln!(out, "  {name:<18} {value}");
        };
        let a = &self.amplification;
        row(&mut out, "intents", self.intents.to_string());
        row(&mut out, "attempts", self.attempts.to_string());
        row(
            &mut out,
            "amplification",
            format!(
                "mean {:.2} · p50 {} · p95 {} · p99 {} · max {}",
                a.mean, a.p50, a.p95, a.p99, a.max
            ),
        );
        row(
            &mut out,
            "duplicate effects",
            format!(
                "{} (of {} effects, sandbox ground truth)",
                self.duplicate_effects, self.effects
            ),
        );
        row(
            &mut out,
            "indeterminate",
            format!(
                "{} (oldest {} s)",
                self.indeterminate.count, self.indeterminate.oldest_age_secs
            ),
        );
        row(&mut out, "late results", self.late_results.to_string());
        row(
            &mut out,
            "goodput",
            format!("{:.1} committed/min", self.goodput_per_min),
        );
        row(
            &mut out,
            "budget exceeded",
            self.budget_exceeded.to_string(),
        );
        let states: Vec<String> = self
            .states
            .iter()
            .map(|(s, n)| format!("{s} {n}"))
            .collect();
        row(&mut out, "states", states.join(" · "));
        if let Some(n) = &self.naive {
            row(&mut out, "downstream calls", n.downstream_calls.to_string());
            row(
                &mut out,
                "failed, yet applied",
                n.failed_but_applied.to_string(),
            );
        }
        if let Some(g) = &self.agents {
            row(
                &mut out,
                "agents",
                format!(
                    "{} create requests · {} replays ({} from the other interface; {} answered with the same intent) · \
                     changed reuse refused {} of {} · {} deliberate repeats · {} errors",
                    g.create_requests,
                    g.replays_sent,
                    g.cross_interface_replays,
                    g.replays_same_intent,
                    g.changed_reuse_refused,
                    g.changed_reuse_refused + g.changed_reuse_accepted,
                    g.repeats,
                    g.errors
                ),
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amplification_uses_nearest_rank() {
        let a = Amplification::of(&[1, 1, 1, 2, 5]);
        assert_eq!((a.p50, a.p99, a.max), (1, 5, 5));
        assert!((a.mean - 2.0).abs() < 1e-9);
    }

    #[test]
    fn the_json_form_has_the_designs_fields() {
        let value = serde_json::to_value(Report::default()).expect("serialises");
        for field in [
            "intents",
            "attempts",
            "amplification",
            "duplicate_effects",
            "indeterminate",
            "late_results",
            "goodput_per_min",
            "budget_exceeded",
            "states",
        ] {
            assert!(value.get(field).is_some(), "{field}");
        }
        assert!(value.pointer("/amplification/p99").is_some());
        assert!(value.pointer("/indeterminate/oldest_age_secs").is_some());
    }
}
