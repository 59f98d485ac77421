//! What the shown views keep fresh, asked for at the start of each drawn frame: the
//! dashboard's figures while it shows, the badge's overview while another view does, who
//! the token is while an intent is open, and the export writer's answer.

use std::time::{Duration, Instant};

use super::ConsoleApp;
use super::state::Tab;
use crate::console::views::intent_view::WhoState;
use crate::console::worker::{DashboardRead, Query, Request};
use crate::wire::ChartMetric;

/// Buckets asked for per chart: two pixel columns each on a 600-pixel chart.
const BUCKETS: u32 = 300;
/// Counts drawn as bars are asked for in fewer, wider buckets.
const BAR_BUCKETS: u32 = 120;
const BAR_METRICS: &[ChartMetric] = &[ChartMetric::Attempts, ChartMetric::DuplicateEffects];
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
    ChartMetric::LateResultRate,
    ChartMetric::DuplicateEffects,
    ChartMetric::FailoverDivergence,
];

impl ConsoleApp {
    /// Ask for what the views about to be drawn need and do not have, or have aged.
    pub(super) fn keep_shown_fresh(&mut self, ctx: &egui::Context) {
        if self.state.tab != Tab::Dashboard
            && !self.options.offline
            && self.dashboard.overview_stale()
        {
            self.ask_overview();
        }
        if self.open.is_some() {
            self.ask_who();
        }
        self.ask_revisits(ctx);
        if self.state.tab == Tab::Dashboard {
            self.refresh_dashboard(ctx);
        }
        self.intent_view.export.poll();
    }

    /// Ask for the gate-revisit events when they are due, and wake in time for the next.
    fn ask_revisits(&mut self, ctx: &egui::Context) {
        if self.options.offline {
            return;
        }
        let now = Instant::now();
        if self.revisits.due(now) && self.worker.send(Request::Revisits) {
            self.revisits.asked(now);
        }
        ctx.request_repaint_after(Duration::from_secs(60));
    }

    /// Ask the coordinator who the token is, when the intent view wants to know.
    fn ask_who(&mut self) {
        let view = &mut self.intent_view;
        if view.should_ask_who() && self.worker.send(Request::Whoami) {
            view.who = WhoState::Asking;
            view.who_asked_at = Some(Instant::now());
        }
    }

    /// Ask again when the question changed, after changes, or when the data has aged.
    pub(super) fn refresh_dashboard(&mut self, ctx: &egui::Context) {
        let key = self.dashboard_key();
        if self.dashboard.due(&key) {
            self.dashboard.start(key);
            self.fetch_dashboard();
        }
        ctx.request_repaint_after(Duration::from_secs(1));
    }

    /// What the current filters and slicing ask for; a change means a fresh set of answers.
    fn dashboard_key(&self) -> String {
        let mut q = self.state.filters.query();
        q.push((
            "group_by".into(),
            self.state.dashboard.group_by.as_str().into(),
        ));
        q.iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("&")
    }

    fn ask_dashboard(&mut self, read: DashboardRead, query: Query) {
        if self.worker.send(Request::Dashboard {
            generation: self.dashboard.generation(),
            read,
            query,
        }) {
            self.dashboard.asked();
        }
    }

    /// The headline figures as of now.
    fn ask_overview(&mut self) {
        let mut q = self.state.filters.query();
        q.push(("at".into(), self.now_ms().to_string()));
        self.ask_dashboard(DashboardRead::Overview, q);
        self.dashboard.overview_asked(Instant::now());
    }

    /// Ask for everything the dashboard draws.
    fn fetch_dashboard(&mut self) {
        let group = self.state.dashboard.group_by.as_str().to_string();
        let now = self.now_ms();
        // The window ends now, so levels and ages are as of now.
        let to = self.state.filters.until_ms.unwrap_or(now);
        for metric in METRICS {
            let mut q = self.state.filters.query();
            q.push(("metric".into(), metric.as_str().into()));
            q.push(("group_by".into(), group.clone()));
            let buckets = if BAR_METRICS.contains(metric) {
                BAR_BUCKETS
            } else {
                BUCKETS
            };
            q.push(("buckets".into(), buckets.to_string()));
            q.push(("to".into(), to.to_string()));
            self.ask_dashboard(DashboardRead::Chart(*metric), q);
        }
        let mut q = self.state.filters.query();
        q.push(("group_by".into(), group));
        self.ask_dashboard(DashboardRead::Histogram, q);
        self.ask_overview();
        let mut board = self.state.filters.clone();
        board.states = vec!["indeterminate".into()];
        let mut q = board.query();
        q.push(("sort".into(), "indeterminate_since".into()));
        q.push(("limit".into(), BOARD_ROWS.to_string()));
        self.ask_dashboard(DashboardRead::Board, q);
        self.dashboard.all_asked(Instant::now());
    }
}
