//! The dashboard's and the summary's figures: what `GET /v1/metrics/summary`, `/series`,
//! `/chart`, `/histogram` and `/overview` answer. Definitions are the domain's
//! (`crate::domain::metrics`).

use serde::{Deserialize, Serialize};

use crate::domain::metrics::Distribution;

/// The logical-outcome summary over the intents a filter selects.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub intents: u64,
    pub attempts: u64,
    pub amplification: Distribution,
    pub states: std::collections::BTreeMap<String, u64>,
    pub dispatched: u64,
    pub indeterminate: IndeterminateSummary,
    /// Downstream results besides the one each intent accepted: every distinct downstream
    /// id once for each intent that reported it.
    pub duplicate_effects: u64,
    pub late_results: u64,
    pub committed: u64,
    pub budget_exceeded: u64,
    pub failover_divergence: f64,
    /// Lookups of the intents' action keys, per intent (their own amplification, beside the
    /// attempts'), and the indeterminate intents whose automatic lookups' budget is spent.
    #[serde(default)]
    pub lookups: u64,
    #[serde(default)]
    pub lookup_amplification: Distribution,
    #[serde(default)]
    pub lookups_exhausted: u64,
}

/// Indeterminate intents and their ages in seconds.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
pub struct IndeterminateSummary {
    pub count: u64,
    pub oldest_age_secs: u64,
    pub p50_age_secs: u64,
    pub p95_age_secs: u64,
    pub rate: f64,
}

/// One point of a series: bucket start, group value and the metric's value there.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeriesPoint {
    pub bucket_start_ms: u64,
    pub group: String,
    pub value: f64,
    pub count: u64,
}

/// A metric the dashboard can plot over time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChartMetric {
    Attempts,
    AmplificationMean,
    AmplificationP99,
    Indeterminate,
    IndeterminateAgeOldest,
    IndeterminateAgeP50,
    IndeterminateAgeP95,
    Committed,
    GoodputPerMin,
    GoodputPerAttempt,
    LateResults,
    LateResultRate,
    DuplicateEffects,
    FailoverDivergence,
}

impl ChartMetric {
    pub const ALL: &'static [ChartMetric] = &[
        ChartMetric::Attempts,
        ChartMetric::AmplificationMean,
        ChartMetric::AmplificationP99,
        ChartMetric::Indeterminate,
        ChartMetric::IndeterminateAgeOldest,
        ChartMetric::IndeterminateAgeP50,
        ChartMetric::IndeterminateAgeP95,
        ChartMetric::Committed,
        ChartMetric::GoodputPerMin,
        ChartMetric::GoodputPerAttempt,
        ChartMetric::LateResults,
        ChartMetric::LateResultRate,
        ChartMetric::DuplicateEffects,
        ChartMetric::FailoverDivergence,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ChartMetric::Attempts => "attempts",
            ChartMetric::AmplificationMean => "amplification_mean",
            ChartMetric::AmplificationP99 => "amplification_p99",
            ChartMetric::Indeterminate => "indeterminate",
            ChartMetric::IndeterminateAgeOldest => "indeterminate_age_oldest",
            ChartMetric::IndeterminateAgeP50 => "indeterminate_age_p50",
            ChartMetric::IndeterminateAgeP95 => "indeterminate_age_p95",
            ChartMetric::Committed => "committed",
            ChartMetric::GoodputPerMin => "goodput_per_min",
            ChartMetric::GoodputPerAttempt => "goodput_per_attempt",
            ChartMetric::LateResults => "late_results",
            ChartMetric::LateResultRate => "late_result_rate",
            ChartMetric::DuplicateEffects => "duplicate_effects",
            ChartMetric::FailoverDivergence => "failover_divergence",
        }
    }

    pub fn parse(name: &str) -> Option<ChartMetric> {
        Self::ALL.iter().copied().find(|m| m.as_str() == name)
    }
}

/// The dimension a chart is split by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GroupBy {
    #[default]
    None,
    Tenant,
    Provider,
    Release,
    Tool,
    Operation,
    Locale,
    Tier,
}

impl GroupBy {
    pub const ALL: &'static [GroupBy] = &[
        GroupBy::None,
        GroupBy::Tenant,
        GroupBy::Provider,
        GroupBy::Release,
        GroupBy::Tool,
        GroupBy::Operation,
        GroupBy::Locale,
        GroupBy::Tier,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            GroupBy::None => "none",
            GroupBy::Tenant => "tenant",
            GroupBy::Provider => "provider",
            GroupBy::Release => "release",
            GroupBy::Tool => "tool",
            GroupBy::Operation => "operation",
            GroupBy::Locale => "locale",
            GroupBy::Tier => "tier",
        }
    }

    pub fn parse(name: &str) -> Option<GroupBy> {
        Self::ALL.iter().copied().find(|g| g.as_str() == name)
    }
}

/// The name of the one series of an unsplit chart.
pub const ALL_GROUP: &str = "all";

/// One series: `points` are `[bucket start ms, value, count behind the value]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChartSeries {
    pub group: String,
    pub points: Vec<[f64; 3]>,
    /// Sum of the counts (events in the window), or the last level for levels.
    pub total: f64,
}

/// A chart's data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Chart {
    pub metric: ChartMetric,
    pub group_by: GroupBy,
    pub bucket_ms: u64,
    pub from_ms: u64,
    pub to_ms: u64,
    pub series: Vec<ChartSeries>,
}

/// Attempts per intent: how many intents needed each number of attempts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistogramGroup {
    pub group: String,
    /// `[attempts, intents]`, ascending.
    pub bins: Vec<[u64; 2]>,
    pub intents: u64,
    /// Intents with more attempts than their own `max_attempts`.
    pub over_budget: u64,
}

/// The histogram of attempts per intent, with the budget most intents have.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttemptsHistogram {
    pub group_by: GroupBy,
    pub budget: u64,
    pub groups: Vec<HistogramGroup>,
}

/// The headline figures as of one instant.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Overview {
    pub at_ms: u64,
    pub intents: u64,
    pub attempts: u64,
    pub amplification_mean: f64,
    pub amplification_p99: u64,
    pub amplification_max: u64,
    pub indeterminate: u64,
    pub indeterminate_oldest_age_secs: u64,
    pub indeterminate_p50_age_secs: u64,
    pub indeterminate_p95_age_secs: u64,
    pub committed: u64,
    pub late_results: u64,
    pub duplicate_effects: u64,
    pub failover_divergence: f64,
    /// When the first and last selected intents were created (0 when none).
    pub first_created_ms: u64,
    pub last_created_ms: u64,
    /// Selected intents committed in the hour up to `at_ms`, and in the hour before it: the
    /// goodput a drop is measured against.
    #[serde(default)]
    pub committed_last_hour: u64,
    #[serde(default)]
    pub committed_previous_hour: u64,
    /// Late results ÷ attempts of the selected intents (0 when there is no attempt).
    #[serde(default)]
    pub late_result_rate: f64,
    /// Lookups of the selected intents' action keys, and per intent (mean, max): the
    /// reconciler's amplification, beside the attempts'.
    #[serde(default)]
    pub lookups: u64,
    #[serde(default)]
    pub lookup_amplification_mean: f64,
    #[serde(default)]
    pub lookup_amplification_max: u64,
}
