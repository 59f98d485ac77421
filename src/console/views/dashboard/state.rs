//! The dashboard's state: the settings it remembers between runs (the slicing and the
//! operator's thresholds) and what it keeps between frames (the figures, where each chart
//! was drawn, the hidden series), with the bookkeeping of which question the figures
//! answer and when to ask again.

use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

use egui_plot::PlotTransform;
use serde::{Deserialize, Serialize};

use super::thresholds::{self, Fired, Threshold, ThresholdError};
use crate::console::model::IntentRow;
use crate::console::text::BidiEditState;
use crate::console::worker::{DashboardAnswer, DashboardRead, MetricsError};
use crate::wire::{AttemptsHistogram, Chart, ChartMetric, GroupBy, Overview};

/// Ask again at least this often while the dashboard is open.
pub const REFRESH: Duration = Duration::from_secs(15);
/// After intents changed, ask again no sooner than this.
pub const CHANGED_REFRESH: Duration = Duration::from_secs(3);
/// The badge's figures are refreshed this often while another view is open.
pub const BADGE_REFRESH: Duration = Duration::from_secs(10);

/// What the dashboard remembers between runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DashboardSettings {
    pub group_by: GroupBy,
    /// Duplicate effects beyond this many light the badge (0: any duplicate).
    pub duplicate_effects_max: u64,
    /// Amplification p99 above this lights the badge.
    pub amplification_p99_max: f64,
    /// The oldest indeterminate intent older than this lights the badge.
    pub oldest_indeterminate_max_mins: u64,
    /// Goodput of the last hour this many percent below the hour before lights the badge.
    pub goodput_drop_max_pct: f64,
    /// Late results above this percentage of attempts light the badge.
    pub late_result_rate_max_pct: f64,
}

impl Default for DashboardSettings {
    fn default() -> Self {
        DashboardSettings {
            group_by: GroupBy::None,
            duplicate_effects_max: 0,
            amplification_p99_max: 3.0,
            oldest_indeterminate_max_mins: 10,
            goodput_drop_max_pct: 50.0,
            late_result_rate_max_pct: 5.0,
        }
    }
}

impl DashboardSettings {
    /// The thresholds the overview crosses.
    pub fn fired(&self, o: &Overview) -> Vec<Fired> {
        thresholds::fired(self, o)
    }

    /// Whether the overview crosses `threshold`.
    pub fn fires(&self, o: &Overview, threshold: Threshold) -> bool {
        self.fired(o).iter().any(|f| f.threshold == threshold)
    }
}

/// A threshold's field while the operator types in it: the text as typed (none while it
/// shows the value in force), its caret, and why the text was refused.
#[derive(Debug, Clone, Default)]
pub struct ThresholdField {
    pub text: Option<String>,
    pub edit: BidiEditState,
    pub error: Option<ThresholdError>,
}

/// What the dashboard keeps between frames.
#[derive(Debug, Default)]
pub struct DashboardState {
    pub charts: HashMap<ChartMetric, Chart>,
    pub histogram: Option<AttemptsHistogram>,
    pub overview: Option<Overview>,
    pub board: Vec<IntentRow>,
    pub error: Option<String>,
    /// Where each chart was drawn last frame, by chart id (tests click through these).
    pub transforms: HashMap<&'static str, PlotTransform>,
    /// Series hidden through each chart's legend, by chart id and series label.
    pub hidden: HashMap<&'static str, BTreeSet<String>>,
    /// The threshold fields being typed in.
    pub fields: HashMap<Threshold, ThresholdField>,
    generation: u64,
    key: Option<String>,
    sent_at: Option<Instant>,
    overview_sent_at: Option<Instant>,
    changed: bool,
    waiting: usize,
}

impl DashboardState {
    /// The answer to a read asked for the question of `generation`. The overview is taken
    /// whichever question asked for it (the top bar's badge asks for it too); the rest only
    /// when it answers the current question.
    pub fn on_answer(
        &mut self,
        generation: u64,
        read: DashboardRead,
        result: Result<DashboardAnswer, MetricsError>,
    ) {
        if read != DashboardRead::Overview && generation != self.generation {
            return;
        }
        self.waiting = self.waiting.saturating_sub(1);
        match result {
            Ok(DashboardAnswer::Chart(c)) => {
                self.charts.insert(c.metric, c);
            }
            Ok(DashboardAnswer::Histogram(h)) => self.histogram = Some(h),
            Ok(DashboardAnswer::Overview(o)) => self.overview = Some(o),
            Ok(DashboardAnswer::Board(rows)) => self.board = rows,
            Err(e) => {
                self.error = Some(e.to_string());
                return;
            }
        }
        if self.waiting == 0 {
            self.error = None;
        }
    }

    /// Events said intents changed: ask again soon.
    pub fn on_changed(&mut self) {
        self.changed = true;
    }

    /// Ask for everything again on the next frame.
    pub fn refresh_now(&mut self) {
        self.sent_at = None;
    }

    /// Whether answers are still on their way.
    pub fn loading(&self) -> bool {
        self.waiting > 0
    }

    /// The generation of the current question; answers to older ones are dropped.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Whether to ask everything again for the question `key`: when the question changed,
    /// a while after events said intents changed, and when the answers have aged.
    pub fn due(&self, key: &str) -> bool {
        let since = self.sent_at.map(|t| t.elapsed());
        match since {
            _ if self.key.as_deref() != Some(key) => true,
            None => true,
            Some(e) => (self.changed && e >= CHANGED_REFRESH) || e >= REFRESH,
        }
    }

    /// Start asking the question `key`; a new question starts a new generation and forgets
    /// the answers to the old one.
    pub fn start(&mut self, key: String) {
        if self.key.as_deref() != Some(key.as_str()) {
            self.generation += 1;
            self.waiting = 0;
            self.charts.clear();
            self.histogram = None;
        }
        self.key = Some(key);
    }

    /// The worker took one read; its answer is awaited.
    pub fn asked(&mut self) {
        self.waiting += 1;
    }

    /// The overview was asked for at `at`.
    pub fn overview_asked(&mut self, at: Instant) {
        self.overview_sent_at = Some(at);
    }

    /// Everything was asked for at `at`.
    pub fn all_asked(&mut self, at: Instant) {
        self.sent_at = Some(at);
        self.changed = false;
    }

    /// Whether the badge's figures are due again while another view is open.
    pub fn overview_stale(&self) -> bool {
        self.overview_sent_at
            .is_none_or(|t| t.elapsed() >= BADGE_REFRESH)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_light_when_crossed() {
        let s = DashboardSettings::default();
        let o = Overview {
            amplification_p99: 4,
            indeterminate_oldest_age_secs: 599,
            ..Overview::default()
        };
        assert!(s.fires(&o, Threshold::AmplificationP99));
        assert!(!s.fires(&o, Threshold::OldestIndeterminate));
    }

    #[test]
    fn settings_saved_before_the_new_thresholds_load_with_their_defaults() {
        let old = r#"{"group_by":"provider","amplification_p99_max":4.0,"oldest_indeterminate_max_mins":20}"#;
        let s: DashboardSettings = serde_json::from_str(old).expect("old settings load");
        assert_eq!(s.amplification_p99_max, 4.0);
        assert_eq!(s.duplicate_effects_max, 0);
        assert_eq!(s.goodput_drop_max_pct, 50.0);
        assert_eq!(s.late_result_rate_max_pct, 5.0);
    }
}
