//! The dashboard's chart widgets: time series (stacked bars or lines), the attempts
//! histogram and the ageing board, plus what they share: series colours, legends, local-time
//! axes and min/max downsampling ([`downsample`]). Widgets draw what they are given and
//! report a click as a [`Hit`]; the dashboard decides what a click means. [`cells`] and
//! [`header`] are the dashboard's places and header, built from these widgets.

pub mod board;
pub mod cells;
pub mod downsample;
pub mod header;
pub mod histogram;
pub mod time_axis;
pub mod time_chart;

use std::collections::BTreeSet;

use egui::Color32;

use crate::console::{text, theme};
use crate::i18n::{Direction, Localizer};

/// One series as a chart draws it.
#[derive(Debug, Clone)]
pub struct SeriesView<'a> {
    /// The group value the series stands for (what a click filters by).
    pub group: &'a str,
    /// What the legend says.
    pub label: String,
    pub color: Color32,
    pub style: egui_plot::LineStyle,
    /// `[x, value, count]` points, x ascending (unix ms for time charts).
    pub points: &'a [[f64; 3]],
}

/// What a click on a chart landed on.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    /// The series' group value.
    pub group: String,
    /// The bar's or point's x (bucket start in unix ms; attempts for the histogram).
    pub x: f64,
    pub value: f64,
}

/// The colour of a series, stable for a group value across charts and frames.
pub fn series_color(names: &[&str], group: &str) -> Color32 {
    let i = names.iter().position(|n| *n == group).unwrap_or(0);
    theme::SERIES[i % theme::SERIES.len()]
}

/// A legend above a chart: one toggle per series (a click hides or shows it), then the
/// marker lines' labels. Drawn by the console's text layout, so Persian reads right.
pub fn legend_ui(
    ui: &mut egui::Ui,
    i18n: &Localizer,
    series: &[SeriesView<'_>],
    hidden: &mut BTreeSet<String>,
    markers: &[(Color32, String)],
) {
    let dir = i18n.direction();
    let layout = egui::Layout::left_to_right(egui::Align::Center).with_main_wrap(true);
    let size = egui::vec2(ui.available_width(), ui.spacing().interact_size.y);
    ui.allocate_ui_with_layout(size, layout, |ui| {
        ui.spacing_mut().item_spacing.x = 10.0;
        let mut seen = BTreeSet::new();
        for s in series {
            if !seen.insert(s.label.as_str()) {
                continue;
            }
            let on = !hidden.contains(&s.label);
            let color = if on { s.color } else { theme::QUIET };
            let response = legend_entry_ui(ui, dir, &s.label, color, s.style);
            if response.clicked() {
                if on {
                    hidden.insert(s.label.clone());
                } else {
                    hidden.remove(&s.label);
                }
            }
        }
        for (color, label) in markers {
            legend_entry_ui(
                ui,
                dir,
                label,
                *color,
                egui_plot::LineStyle::Dashed { length: 6.0 },
            );
        }
    });
}

/// One legend entry, a single widget (so the row wraps between entries): the series'
/// stroke and its label; clicking toggles it.
fn legend_entry_ui(
    ui: &mut egui::Ui,
    dir: Direction,
    label: &str,
    color: Color32,
    style: egui_plot::LineStyle,
) -> egui::Response {
    let font = egui::TextStyle::Body.resolve(ui.style());
    let text_color = if color == theme::QUIET {
        theme::QUIET
    } else {
        ui.visuals().text_color()
    };
    let galley = ui
        .painter()
        .layout_job(text::layout_job(label, dir, font, text_color));
    let size = egui::vec2(22.0 + galley.size().x, galley.size().y.max(14.0));
    let (rect, response) = ui.allocate_exact_size(size, egui::Sense::click());
    response.widget_info(|| egui::WidgetInfo::labeled(egui::Role::Button, ui.is_enabled(), label));
    let marker = egui::Rect::from_min_size(
        egui::pos2(rect.left(), rect.center().y - 5.0),
        egui::vec2(18.0, 10.0),
    );
    marker_paint(ui.painter(), marker, color, style);
    let at = egui::pos2(rect.left() + 22.0, rect.center().y - galley.size().y / 2.0);
    ui.painter().galley(at, galley, text_color);
    response
}

/// A short stroke in a series' colour and line style.
fn marker_paint(
    painter: &egui::Painter,
    rect: egui::Rect,
    color: Color32,
    style: egui_plot::LineStyle,
) {
    let y = rect.center().y;
    let stroke = egui::Stroke::new(2.5, color);
    match style {
        egui_plot::LineStyle::Solid => {
            painter.hline(rect.x_range(), y, stroke);
        }
        egui_plot::LineStyle::Dashed { .. } => {
            painter.hline(rect.left()..=rect.left() + 7.0, y, stroke);
            painter.hline(rect.right() - 7.0..=rect.right(), y, stroke);
        }
        egui_plot::LineStyle::Dotted { .. } => {
            for i in 0..4 {
                painter.circle_filled(
                    egui::pos2(rect.left() + 2.0 + 4.5 * i as f32, y),
                    1.3,
                    color,
                );
            }
        }
    }
}

/// A label drawn inside a plot (axis ticks), which egui lays out as one run: a number in
/// Persian digits is laid out right to left by the shaper, so it is given reversed. Only
/// for digits and punctuation; words go through [`text`] outside the plot.
pub fn plot_text(dir: Direction, s: String) -> String {
    let arabic = s.chars().any(|c| ('\u{0600}'..='\u{06FF}').contains(&c));
    if dir == Direction::Rtl && arabic && !s.chars().any(char::is_alphabetic) {
        s.chars().rev().collect()
    } else {
        s
    }
}
