//! The dashboard's places: one chart with its title and legend, the ageing board, the
//! notes that say what the charts count. Each is given the dashboard's state and returns
//! what was clicked; the dashboard turns clicks into commands.

use std::collections::BTreeSet;

use egui_plot::LineStyle;

use super::histogram::Histogram;
use super::time_chart::{Kind, TimeChart};
use super::{Hit, SeriesView, board, series_color};
use crate::console::text;
use crate::console::views::dashboard::state::{DashboardSettings, DashboardState};
use crate::i18n::Localizer;
use crate::wire::{ALL_GROUP, ChartMetric};

/// The height of every chart.
pub const CHART_HEIGHT: f32 = 170.0;

/// The dashboard's charts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChartId {
    Histogram,
    Amplification,
    Indeterminate,
    Age,
    Attempts,
    Goodput,
    GoodputPerAttempt,
    LateResults,
    Duplicates,
    Divergence,
}

impl ChartId {
    pub fn id(self) -> &'static str {
        match self {
            ChartId::Histogram => "histogram",
            ChartId::Amplification => "amplification",
            ChartId::Indeterminate => "indeterminate",
            ChartId::Age => "age",
            ChartId::Attempts => "attempts",
            ChartId::Goodput => "goodput",
            ChartId::GoodputPerAttempt => "goodput-per-attempt",
            ChartId::LateResults => "late-results",
            ChartId::Duplicates => "duplicates",
            ChartId::Divergence => "divergence",
        }
    }

    /// The metrics drawn, each with its legend suffix (Fluent id) and line style.
    fn metrics(self) -> &'static [(ChartMetric, &'static str, LineStyle)] {
        const SOLID: LineStyle = LineStyle::Solid;
        const DASHED: LineStyle = LineStyle::Dashed { length: 8.0 };
        const DOTTED: LineStyle = LineStyle::Dotted { spacing: 5.0 };
        match self {
            ChartId::Histogram => &[],
            ChartId::Amplification => &[
                (
                    ChartMetric::AmplificationMean,
                    "dashboard-series-mean",
                    SOLID,
                ),
                (
                    ChartMetric::AmplificationP99,
                    "dashboard-series-p99",
                    DASHED,
                ),
            ],
            ChartId::Indeterminate => &[(ChartMetric::Indeterminate, "", SOLID)],
            ChartId::Age => &[
                (
                    ChartMetric::IndeterminateAgeOldest,
                    "dashboard-series-oldest",
                    SOLID,
                ),
                (
                    ChartMetric::IndeterminateAgeP95,
                    "dashboard-series-p95",
                    DASHED,
                ),
                (
                    ChartMetric::IndeterminateAgeP50,
                    "dashboard-series-p50",
                    DOTTED,
                ),
            ],
            ChartId::Attempts => &[(ChartMetric::Attempts, "", SOLID)],
            ChartId::Goodput => &[(ChartMetric::GoodputPerMin, "", SOLID)],
            ChartId::GoodputPerAttempt => &[(ChartMetric::GoodputPerAttempt, "", SOLID)],
            ChartId::LateResults => &[(ChartMetric::LateResultRate, "", SOLID)],
            ChartId::Duplicates => &[(ChartMetric::DuplicateEffects, "", SOLID)],
            ChartId::Divergence => &[(ChartMetric::FailoverDivergence, "", SOLID)],
        }
    }

    fn kind(self) -> Kind {
        match self {
            ChartId::Attempts | ChartId::Duplicates => Kind::StackedBars,
            _ => Kind::Lines,
        }
    }

    /// Fluent ids of the title, the y axis and the click hint.
    fn words(self) -> (&'static str, &'static str, &'static str) {
        match self {
            ChartId::Histogram => (
                "dashboard-chart-histogram",
                "dashboard-axis-intents",
                "dashboard-click-histogram",
            ),
            ChartId::Amplification => (
                "dashboard-chart-amplification",
                "dashboard-axis-attempts-per-intent",
                "dashboard-click-created",
            ),
            ChartId::Indeterminate => (
                "dashboard-chart-indeterminate",
                "dashboard-axis-intents",
                "dashboard-click-indeterminate",
            ),
            ChartId::Age => (
                "dashboard-chart-age",
                "dashboard-axis-age",
                "dashboard-click-indeterminate",
            ),
            ChartId::Attempts => (
                "dashboard-chart-attempts",
                "dashboard-axis-attempts",
                "dashboard-click-created",
            ),
            ChartId::Goodput => (
                "dashboard-chart-goodput",
                "dashboard-axis-per-minute",
                "dashboard-click-committed",
            ),
            ChartId::GoodputPerAttempt => (
                "dashboard-chart-goodput-attempt",
                "dashboard-axis-ratio",
                "dashboard-click-committed",
            ),
            ChartId::LateResults => (
                "dashboard-chart-late",
                "dashboard-axis-ratio",
                "dashboard-click-created",
            ),
            ChartId::Duplicates => (
                "dashboard-chart-duplicates",
                "dashboard-axis-effects",
                "dashboard-click-created",
            ),
            ChartId::Divergence => (
                "dashboard-chart-divergence",
                "dashboard-axis-ratio",
                "dashboard-click-created",
            ),
        }
    }
}

/// Where a chart draws the operator's threshold, in its own units: amplification p99 on the
/// amplification chart, the oldest age on the age chart, the late-result rate on the late
/// results chart, and on the goodput chart the rate a drop past the threshold would leave
/// of the previous hour's (known from the overview, and only when that hour committed
/// something). Duplicate effects fire on their total, which no chart of per-interval
/// counts can show as a line; their tile and the badge say it.
fn threshold_line(
    chart: ChartId,
    settings: &DashboardSettings,
    overview: Option<&crate::wire::Overview>,
) -> Option<f64> {
    match chart {
        ChartId::Amplification => Some(settings.amplification_p99_max),
        ChartId::Age => Some((settings.oldest_indeterminate_max_mins * 60) as f64),
        ChartId::LateResults => Some(settings.late_result_rate_max_pct / 100.0),
        ChartId::Goodput => {
            let before = overview?.committed_previous_hour;
            (before > 0)
                .then(|| before as f64 / 60.0 * (1.0 - settings.goodput_drop_max_pct / 100.0))
        }
        _ => None,
    }
}

/// How a chart's values read.
pub(crate) fn y_format(i18n: &Localizer, chart: ChartId, v: f64) -> String {
    match chart {
        ChartId::Age => {
            let mins = (v.max(0.0) / 60.0).round() as u64;
            crate::console::views::format::localize_digits(
                i18n,
                &format!("{}:{:02}", mins / 60, mins % 60),
            )
        }
        ChartId::Amplification | ChartId::Goodput => i18n.decimal(v, 1),
        ChartId::GoodputPerAttempt | ChartId::Divergence | ChartId::LateResults => percent(i18n, v),
        _ if v.fract() == 0.0 => i18n.int(v as i64),
        _ => i18n.decimal(v, 1),
    }
}

/// A share as a percentage in the locale's digits and sign.
pub(crate) fn percent(i18n: &Localizer, share: f64) -> String {
    percent_to(i18n, share, 0)
}

/// [`percent`] with `places` fraction digits.
pub(crate) fn percent_to(i18n: &Localizer, share: f64, places: usize) -> String {
    let sign = if i18n.is_rtl() { '\u{066A}' } else { '%' };
    format!("{}{sign}", i18n.decimal(share * 100.0, places))
}

/// Every group name across the charts, so one value has one colour everywhere.
fn group_names(d: &DashboardState) -> Vec<String> {
    let mut names: BTreeSet<String> = d
        .charts
        .values()
        .flat_map(|c| c.series.iter().map(|s| s.group.clone()))
        .collect();
    if let Some(h) = &d.histogram {
        names.extend(h.groups.iter().map(|g| g.group.clone()));
    }
    names.into_iter().collect()
}

fn legend_label(i18n: &Localizer, group: &str, suffix: &str) -> String {
    match (group == ALL_GROUP, suffix.is_empty()) {
        (true, true) => i18n.tr("dashboard-series-all"),
        (true, false) => i18n.tr(suffix),
        (false, true) => group.to_string(),
        (false, false) => format!("{group} {}", i18n.tr(suffix)),
    }
}

/// One chart with its title; a click returns what it landed on.
pub(crate) fn chart_cell_ui(
    ui: &mut egui::Ui,
    i18n: &Localizer,
    settings: &DashboardSettings,
    dashboard: &mut DashboardState,
    chart: ChartId,
) -> Option<(ChartId, Hit, u64)> {
    let (title, y_label, hint) = chart.words();
    title_ui(ui, &i18n.tr(title), i18n.direction());
    let names = group_names(dashboard);
    let name_refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let loading = dashboard.loading();
    let DashboardState {
        charts,
        histogram,
        hidden,
        transforms,
        overview,
        ..
    } = dashboard;
    let hidden = hidden.entry(chart.id()).or_default();
    let histogram_rows: Vec<(String, Vec<[f64; 3]>)>;
    let output = if chart == ChartId::Histogram {
        let Some(h) = histogram else {
            return placeholder_ui(ui, i18n, loading);
        };
        histogram_rows = h
            .groups
            .iter()
            .map(|g| {
                (
                    g.group.clone(),
                    g.bins
                        .iter()
                        .map(|b| [b[0] as f64 - 0.5, b[1] as f64, b[1] as f64])
                        .collect(),
                )
            })
            .collect();
        if histogram_rows.is_empty() {
            return placeholder_ui(ui, i18n, false);
        }
        let series = histogram_rows
            .iter()
            .map(|(g, points)| SeriesView {
                group: g,
                label: legend_label(i18n, g, ""),
                color: series_color(&name_refs, g),
                style: LineStyle::Solid,
                points,
            })
            .collect();
        Histogram {
            id: chart.id(),
            series,
            budget: (h.budget > 0).then(|| {
                (
                    h.budget as f64,
                    i18n.tr_args("dashboard-budget", &[("budget", h.budget.into())]),
                )
            }),
            x_label: i18n.tr("dashboard-axis-attempts-per-intent"),
            y_label: i18n.tr(y_label),
            click_hint: i18n.tr(hint),
            height: CHART_HEIGHT,
            hidden,
        }
        .show(ui, i18n)
    } else {
        let mut series = Vec::new();
        let mut bucket_ms = 0;
        let mut x_range = (f64::MAX, f64::MIN);
        for (metric, suffix, style) in chart.metrics() {
            let Some(c) = charts.get(metric) else {
                continue;
            };
            bucket_ms = c.bucket_ms;
            x_range = (c.from_ms as f64, c.to_ms as f64);
            for s in &c.series {
                series.push(SeriesView {
                    group: &s.group,
                    label: legend_label(i18n, &s.group, suffix),
                    color: series_color(&name_refs, &s.group),
                    style: *style,
                    points: &s.points,
                });
            }
        }
        if bucket_ms == 0 || series.iter().all(|s| s.points.is_empty()) {
            return placeholder_ui(ui, i18n, loading && bucket_ms == 0);
        }
        let threshold = threshold_line(chart, settings, overview.as_ref())
            .map(|y| (y, i18n.tr("dashboard-threshold")));
        let format = |v: f64| y_format(i18n, chart, v);
        TimeChart {
            id: chart.id(),
            y_label: i18n.tr(y_label),
            kind: chart.kind(),
            series,
            bucket_ms,
            x_range,
            threshold,
            y_format: &format,
            click_hint: i18n.tr(hint),
            height: CHART_HEIGHT,
            hidden,
        }
        .show(ui, i18n)
    };
    if let Some(t) = output.transform {
        transforms.insert(chart.id(), t);
    }
    let bucket_ms = chart
        .metrics()
        .first()
        .and_then(|(m, _, _)| charts.get(m))
        .map_or(0, |c| c.bucket_ms);
    output.hit.map(|hit| (chart, hit, bucket_ms))
}

fn title_ui(ui: &mut egui::Ui, title: &str, dir: crate::i18n::Direction) {
    let color = ui.visuals().strong_text_color();
    ui.add(text::BidiLabel::new(title, dir).color(color));
}

fn placeholder_ui<T>(ui: &mut egui::Ui, i18n: &Localizer, loading: bool) -> Option<T> {
    let (rect, _) = ui.allocate_exact_size(
        egui::vec2(ui.available_width(), CHART_HEIGHT),
        egui::Sense::hover(),
    );
    let key = if loading {
        "dashboard-loading"
    } else {
        "dashboard-empty"
    };
    let words = i18n.tr(key);
    let shown = text::widget_text(ui, &words, i18n.direction());
    let label = ui.put(rect, egui::Label::new(shown));
    crate::console::views::format::said(i18n, &words, label);
    None
}

pub(crate) fn board_cell_ui(
    ui: &mut egui::Ui,
    i18n: &Localizer,
    settings: &DashboardSettings,
    dashboard: &DashboardState,
    now_ms: u64,
) -> Option<String> {
    title_ui(ui, &i18n.tr("dashboard-chart-board"), i18n.direction());
    if dashboard.board.is_empty() {
        return placeholder_ui(ui, i18n, dashboard.loading());
    }
    let limit = settings.oldest_indeterminate_max_mins * 60;
    egui::ScrollArea::vertical()
        .id_salt("dashboard-board-scroll")
        .max_height(CHART_HEIGHT)
        .show(ui, |ui| {
            board::board_ui(ui, i18n, &dashboard.board, now_ms, Some(limit))
        })
        .inner
}

pub(crate) fn notes_ui(ui: &mut egui::Ui, i18n: &Localizer) {
    let dir = i18n.direction();
    for key in [
        "dashboard-note-indeterminate",
        "dashboard-note-cohort",
        "dashboard-note-provider",
        "dashboard-note-time",
    ] {
        text::rtl_label_wrapped(ui, &i18n.tr(key), dir);
        ui.add_space(4.0);
    }
}
