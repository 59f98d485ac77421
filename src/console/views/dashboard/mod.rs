//! The dashboard: attempt amplification, indeterminate count and age, the ageing board,
//! duplicate effects, goodput, late results and failover divergence, each sliced by one
//! dimension (one series per value) under the console's filters and time range.
//!
//! The coordinator aggregates (`/v1/metrics/chart`, `/histogram`, `/overview`); the app
//! asks again when the filters or the slicing change, at most every few seconds while
//! events say intents changed, and every [`state::REFRESH`] anyway (ages grow by
//! themselves); [`state`] keeps the figures and when they were asked for.
//! A click on a bar or point sets the intents table's filters to the intents behind it and
//! shows the table. Thresholds are the operator's ([`thresholds`]: duplicate effects,
//! amplification p99, oldest indeterminate, goodput drop against the previous hour,
//! late-result rate), persisted, drawn on the charts and watched by the top bar's badge
//! ([`badge`]), which names what fired, whichever view is open; [`hits`] turns a click into
//! filters.

pub mod badge;
pub mod hits;
pub mod state;
pub mod thresholds;

pub use badge::threshold_badge_ui;
pub use hits::filters_for_hit;
pub use state::{DashboardSettings, DashboardState};
pub use thresholds::{Fired, Threshold};

use super::charts::Hit;
pub use super::charts::cells::ChartId;
use super::charts::cells::{board_cell_ui, chart_cell_ui, notes_ui};
use super::charts::header::{controls_ui, tiles_ui};
use crate::console::actions::Actions;
use crate::console::commands::ConsoleCommand;
use crate::console::filters::Filters;
use crate::i18n::Localizer;

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

/// What the dashboard reads, and the state it changes, while it draws.
pub struct DashboardContext<'a> {
    pub i18n: &'a Localizer,
    pub now_ms: u64,
    /// The console's filters, which a click narrows.
    pub filters: &'a Filters,
    pub settings: &'a mut DashboardSettings,
    pub state: &'a mut DashboardState,
}

pub fn dashboard_ui(ui: &mut egui::Ui, cx: DashboardContext<'_>, actions: &mut Actions) {
    // The grid is mirrored by hand in Persian; every row inside runs left to right.
    ui.with_layout(egui::Layout::top_down(egui::Align::Min), |ui| {
        body_ui(ui, cx, actions)
    });
}

fn body_ui(ui: &mut egui::Ui, cx: DashboardContext<'_>, actions: &mut Actions) {
    let DashboardContext {
        i18n,
        now_ms,
        filters,
        settings,
        state,
    } = cx;
    controls_ui(ui, i18n, settings, state);
    tiles_ui(ui, i18n, state.overview.as_ref(), settings);
    ui.separator();
    let mut clicked: Option<(ChartId, Hit, u64)> = None;
    let mut open: Option<String> = None;
    egui::ScrollArea::vertical()
        .id_salt("dashboard-scroll")
        .auto_shrink([false, false])
        .show(ui, |ui| {
            let rtl = i18n.is_rtl();
            for row in LAYOUT {
                ui.columns(2, |cols| {
                    if rtl {
                        cols.reverse();
                    }
                    for (col, cell) in cols.iter_mut().zip(row.iter().copied()) {
                        match cell {
                            Cell::Chart(chart) => {
                                if let Some(hit) = chart_cell_ui(col, i18n, settings, state, chart)
                                {
                                    clicked = Some(hit);
                                }
                            }
                            Cell::Board => open = board_cell_ui(col, i18n, settings, state, now_ms),
                            Cell::Notes => notes_ui(col, i18n),
                        }
                    }
                });
                ui.add_space(8.0);
            }
        });
    if let Some((chart, hit, bucket_ms)) = clicked {
        let f = filters_for_hit(filters, settings.group_by, chart, &hit, bucket_ms);
        actions.command(ConsoleCommand::SetFilters(f));
        actions.command(ConsoleCommand::ShowIntents);
    }
    if let Some(id) = open {
        actions.command(ConsoleCommand::OpenIntent(id));
    }
}
