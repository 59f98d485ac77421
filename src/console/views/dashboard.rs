//! The dashboard: attempt amplification, indeterminate count and age, the ageing board,
//! duplicate effects, goodput, late results and failover divergence, each sliced by one
//! dimension (one series per value) under the console's filters and time range.
//!
//! The coordinator aggregates (`/v1/metrics/chart`, `/histogram`, `/overview`); this view
//! asks again when the filters or the slicing change, at most every few seconds while
//! events say intents changed, and every [`REFRESH`] anyway (ages grow by themselves).
//! A click on a bar or point sets the intents table's filters to the intents behind it and
//! shows the table. Thresholds are the operator's, persisted, drawn on the charts and
//! watched by the top bar's badge ([`threshold_badge_ui`]) whichever view is open.

use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

use egui_plot::PlotTransform;
use serde::{Deserialize, Serialize};

use super::charts::Hit;
pub use super::charts::cells::ChartId;
use super::charts::cells::{board_cell_ui, chart_cell_ui, notes_ui};
use super::charts::header::{controls_ui, tiles_ui};
use super::format::{self, BidiHover, duration_ms};
use crate::console::app::{ConsoleApp, Tab};
use crate::console::commands::ConsoleCommand;
use crate::console::filters::Filters;
use crate::console::worker::{DashboardAnswer, DashboardRead, MetricsError, Request};
use crate::console::{text, theme};
use crate::wire::{ALL_GROUP, AttemptsHistogram, Chart, ChartMetric, GroupBy, Overview};

/// Ask again at least this often while the dashboard is open.
const REFRESH: Duration = Duration::from_secs(15);
/// After intents changed, ask again no sooner than this.
const CHANGED_REFRESH: Duration = Duration::from_secs(3);
/// The badge's figures are refreshed this often while another view is open.
const BADGE_REFRESH: Duration = Duration::from_secs(10);
/// Buckets asked for per chart: two pixel columns each on a 600-pixel chart.
const BUCKETS: u32 = 300;
/// Counts drawn as bars are asked for in fewer, wider buckets.
const BAR_BUCKETS: u32 = 120;
const BAR_METRICS: &[ChartMetric] = &[
    ChartMetric::Attempts,
    ChartMetric::LateResults,
    ChartMetric::DuplicateEffects,
];
const BOARD_ROWS: u32 = 10;

/// The time-series metrics the dashboard asks for.
const METRICS: &[ChartMetric] = &[
    ChartMetric::Attempts,
    ChartMetric::AmplificationMean,
    ChartMetric::AmplificationP99,
    ChartMetric::Indeterminate,
    ChartMetric::IndeterminateAgeOldest,
    ChartMetric::IndeterminateAgeP50,
    ChartMetric::IndeterminateAgeP95,
    ChartMetric::GoodputPerMin,
    ChartMetric::GoodputPerAttempt,
    ChartMetric::LateResults,
    ChartMetric::DuplicateEffects,
    ChartMetric::FailoverDivergence,
];

/// What the dashboard remembers between runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DashboardSettings {
    pub group_by: GroupBy,
    /// Amplification p99 above this lights the badge.
    pub amplification_p99_max: f64,
    /// The oldest indeterminate intent older than this lights the badge.
    pub oldest_indeterminate_max_mins: u64,
}

impl Default for DashboardSettings {
    fn default() -> Self {
        DashboardSettings {
            group_by: GroupBy::None,
            amplification_p99_max: 3.0,
            oldest_indeterminate_max_mins: 10,
        }
    }
}

impl DashboardSettings {
    /// Which thresholds the overview crosses: (amplification, oldest indeterminate).
    pub fn crossed(&self, o: &Overview) -> (bool, bool) {
        (
            o.amplification_p99 as f64 > self.amplification_p99_max,
            o.indeterminate_oldest_age_secs > self.oldest_indeterminate_max_mins * 60,
        )
    }
}

/// What the dashboard keeps between frames.
#[derive(Debug, Default)]
pub struct DashboardState {
    pub charts: HashMap<ChartMetric, Chart>,
    pub histogram: Option<AttemptsHistogram>,
    pub overview: Option<Overview>,
    pub board: Vec<crate::console::model::IntentRow>,
    pub error: Option<String>,
    /// Where each chart was drawn last frame, by chart id (tests click through these).
    pub transforms: HashMap<&'static str, PlotTransform>,
    /// Series hidden through each chart's legend, by chart id and series label.
    pub hidden: HashMap<&'static str, BTreeSet<String>>,
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
}

/// What the current filters and slicing ask for; a change means a fresh set of answers.
fn request_key(app: &ConsoleApp) -> String {
    let mut q = app.state.filters.query();
    q.push((
        "group_by".into(),
        app.state.dashboard.group_by.as_str().into(),
    ));
    q.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("&")
}

/// The filters' query with the window's end fixed to now (so levels and ages are as of now).
fn base_query(app: &ConsoleApp) -> Vec<(String, String)> {
    app.state.filters.query()
}

fn send(app: &mut ConsoleApp, read: DashboardRead, query: Vec<(String, String)>) {
    if app.worker.send(Request::Dashboard {
        generation: app.dashboard.generation,
        read,
        query,
    }) {
        app.dashboard.waiting += 1;
    }
}

fn send_overview(app: &mut ConsoleApp) {
    let mut q = base_query(app);
    q.push(("at".into(), app.now_ms().to_string()));
    send(app, DashboardRead::Overview, q);
    app.dashboard.overview_sent_at = Some(Instant::now());
}

/// Ask for everything the dashboard draws.
fn fetch_all(app: &mut ConsoleApp) {
    let group = app.state.dashboard.group_by.as_str().to_string();
    let now = app.now_ms();
    let to = app.state.filters.until_ms.unwrap_or(now);
    for metric in METRICS {
        let mut q = base_query(app);
        q.push(("metric".into(), metric.as_str().into()));
        q.push(("group_by".into(), group.clone()));
        let buckets = if BAR_METRICS.contains(metric) {
            BAR_BUCKETS
        } else {
            BUCKETS
        };
        q.push(("buckets".into(), buckets.to_string()));
        q.push(("to".into(), to.to_string()));
        send(app, DashboardRead::Chart(*metric), q);
    }
    let mut q = base_query(app);
    q.push(("group_by".into(), group));
    send(app, DashboardRead::Histogram, q);
    send_overview(app);
    let mut board = app.state.filters.clone();
    board.states = vec!["indeterminate".into()];
    let mut q = board.query();
    q.push(("sort".into(), "indeterminate_since".into()));
    q.push(("limit".into(), BOARD_ROWS.to_string()));
    send(app, DashboardRead::Board, q);
    app.dashboard.sent_at = Some(Instant::now());
    app.dashboard.changed = false;
}

/// Ask again when the question changed, after changes, or when the data has aged.
fn refresh(app: &mut ConsoleApp, ui: &egui::Ui) {
    let key = request_key(app);
    let d = &mut app.dashboard;
    let since = d.sent_at.map(|t| t.elapsed());
    let due = match since {
        _ if d.key.as_deref() != Some(key.as_str()) => true,
        None => true,
        Some(e) => (d.changed && e >= CHANGED_REFRESH) || e >= REFRESH,
    };
    if due {
        if d.key.as_deref() != Some(key.as_str()) {
            d.generation += 1;
            d.waiting = 0;
            d.charts.clear();
            d.histogram = None;
        }
        d.key = Some(key);
        fetch_all(app);
    }
    ui.ctx().request_repaint_after(Duration::from_secs(1));
}

/// The filters that show the intents behind a click.
pub fn filters_for_hit(
    current: &Filters,
    group_by: GroupBy,
    chart: ChartId,
    hit: &Hit,
    bucket_ms: u64,
) -> Filters {
    let mut f = current.clone();
    if hit.group != ALL_GROUP {
        let value = vec![hit.group.clone()];
        match group_by {
            GroupBy::None => {}
            GroupBy::Tenant => f.tenants = value,
            GroupBy::Provider => f.providers = value,
            GroupBy::Release => f.releases = value,
            GroupBy::Tool => f.tools = value,
            GroupBy::Operation => f.operations = value,
            GroupBy::Locale => f.locales = value,
            GroupBy::Tier => f.tiers = value,
        }
    }
    match chart {
        ChartId::Histogram => {
            f.min_attempts = Some(hit.x.max(0.0) as u32);
            f.sort = "attempts".into();
        }
        ChartId::Indeterminate | ChartId::Age => {
            f.states = vec!["indeterminate".into()];
            f.sort = "indeterminate_since".into();
        }
        other => {
            let start = hit.x.max(0.0) as u64;
            f.since_ms = Some(start);
            f.until_ms = Some(start + bucket_ms);
            if matches!(other, ChartId::Goodput | ChartId::GoodputPerAttempt) {
                f.states = vec!["committed".into()];
            }
            if other == ChartId::Amplification {
                f.sort = "-attempts".into();
            }
        }
    }
    f
}

/// What one place of the dashboard's grid holds.
#[derive(Debug, Clone, Copy)]
enum Cell {
    Chart(ChartId),
    Board,
    Notes,
}

/// The dashboard's grid, two places a row.
const LAYOUT: [[Cell; 2]; 6] = [
    [
        Cell::Chart(ChartId::Histogram),
        Cell::Chart(ChartId::Amplification),
    ],
    [
        Cell::Chart(ChartId::Indeterminate),
        Cell::Chart(ChartId::Age),
    ],
    [Cell::Board, Cell::Chart(ChartId::Attempts)],
    [
        Cell::Chart(ChartId::Goodput),
        Cell::Chart(ChartId::GoodputPerAttempt),
    ],
    [
        Cell::Chart(ChartId::LateResults),
        Cell::Chart(ChartId::Duplicates),
    ],
    [Cell::Chart(ChartId::Divergence), Cell::Notes],
];

pub fn dashboard_ui(app: &mut ConsoleApp, ui: &mut egui::Ui) {
    // The grid is mirrored by hand in Persian; every row inside runs left to right.
    ui.with_layout(egui::Layout::top_down(egui::Align::Min), |ui| {
        body_ui(app, ui)
    });
}

fn body_ui(app: &mut ConsoleApp, ui: &mut egui::Ui) {
    refresh(app, ui);
    controls_ui(app, ui);
    tiles_ui(app, ui);
    ui.separator();
    let mut clicked: Option<(ChartId, Hit, u64)> = None;
    let mut open: Option<String> = None;
    egui::ScrollArea::vertical()
        .id_salt("dashboard-scroll")
        .auto_shrink([false, false])
        .show(ui, |ui| {
            let rtl = app.i18n.is_rtl();
            for row in LAYOUT {
                ui.columns(2, |cols| {
                    if rtl {
                        cols.reverse();
                    }
                    for (col, cell) in cols.iter_mut().zip(row.iter().copied()) {
                        match cell {
                            Cell::Chart(chart) => {
                                if let Some(hit) = chart_cell_ui(app, col, chart) {
                                    clicked = Some(hit);
                                }
                            }
                            Cell::Board => open = board_cell_ui(app, col),
                            Cell::Notes => notes_ui(app, col),
                        }
                    }
                });
                ui.add_space(8.0);
            }
        });
    if let Some((chart, hit, bucket_ms)) = clicked {
        let f = filters_for_hit(
            &app.state.filters,
            app.state.dashboard.group_by,
            chart,
            &hit,
            bucket_ms,
        );
        app.queue(ConsoleCommand::SetFilters(f));
        app.queue(ConsoleCommand::ShowIntents);
    }
    if let Some(id) = open {
        app.queue(ConsoleCommand::OpenIntent(id));
    }
}

/// The top bar's badge: lit when a threshold is crossed; a click shows the dashboard.
/// It keeps its figures fresh itself, whichever view is open.
pub fn threshold_badge_ui(app: &mut ConsoleApp, ui: &mut egui::Ui) {
    let stale = app
        .dashboard
        .overview_sent_at
        .is_none_or(|t| t.elapsed() >= BADGE_REFRESH);
    if stale && app.state.tab != Tab::Dashboard && !app.options.offline {
        send_overview(app);
    }
    let Some(o) = app.dashboard.overview.clone() else {
        return;
    };
    let s = &app.state.dashboard;
    let (amp, old) = s.crossed(&o);
    if !amp && !old {
        return;
    }
    let i18n = &app.i18n;
    let mut parts = Vec::new();
    if amp {
        parts.push(i18n.tr_args(
            "dashboard-badge-p99",
            &[
                ("value", o.amplification_p99.into()),
                ("limit", s.amplification_p99_max.into()),
            ],
        ));
    }
    if old {
        parts.push(i18n.tr_args(
            "dashboard-badge-oldest",
            &[
                (
                    "age",
                    duration_ms(i18n, (o.indeterminate_oldest_age_secs * 1000) as i64).into(),
                ),
                ("limit", s.oldest_indeterminate_max_mins.into()),
            ],
        ));
    }
    let label = format!("! {}", parts.join(" | "));
    let dir = i18n.direction();
    let galley = text::layout_job(
        &label,
        dir,
        egui::TextStyle::Button.resolve(ui.style()),
        egui::Color32::WHITE,
    );
    let button = egui::Button::new(ui.painter().layout_job(galley)).fill(theme::THRESHOLD);
    let badge = format::said(i18n, &label, ui.add(button));
    if badge
        .bidi_hover(i18n, &i18n.tr("dashboard-badge-hint"))
        .clicked()
    {
        app.queue(ConsoleCommand::ShowDashboard);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(group: &str, x: f64) -> Hit {
        Hit {
            group: group.into(),
            x,
            value: 1.0,
        }
    }

    #[test]
    fn a_bar_filters_to_its_group_and_bucket() {
        let f = filters_for_hit(
            &Filters::default(),
            GroupBy::Provider,
            ChartId::Attempts,
            &hit("openai", 60_000.0),
            60_000,
        );
        assert_eq!(f.providers, ["openai"]);
        assert_eq!((f.since_ms, f.until_ms), (Some(60_000), Some(120_000)));
    }

    #[test]
    fn an_indeterminate_point_filters_to_indeterminate_intents_oldest_first() {
        let start = Filters {
            tenants: vec!["acme".into()],
            ..Filters::default()
        };
        let f = filters_for_hit(
            &start,
            GroupBy::Tier,
            ChartId::Age,
            &hit("write", 5.0),
            60_000,
        );
        assert_eq!(f.tenants, ["acme"]);
        assert_eq!(f.tiers, ["write"]);
        assert_eq!(f.states, ["indeterminate"]);
        assert_eq!(f.sort, "indeterminate_since");
        assert_eq!(f.since_ms, None);
    }

    #[test]
    fn a_histogram_bar_filters_to_at_least_its_attempts() {
        let f = filters_for_hit(
            &Filters::default(),
            GroupBy::None,
            ChartId::Histogram,
            &hit(ALL_GROUP, 4.0),
            0,
        );
        assert_eq!(f.min_attempts, Some(4));
        assert!(f.providers.is_empty());
    }

    #[test]
    fn thresholds_light_when_crossed() {
        let s = DashboardSettings::default();
        let o = Overview {
            amplification_p99: 4,
            indeterminate_oldest_age_secs: 599,
            ..Overview::default()
        };
        assert_eq!(s.crossed(&o), (true, false));
    }
}
