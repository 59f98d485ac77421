//! Attempts per intent: how many intents needed one attempt, two, three…, stacked by
//! series, with the retry budget most intents have marked as a vertical line. A click on a
//! bar reports its series and attempt count.

use std::collections::BTreeSet;

use egui::Id;
use egui_plot::{Bar, BarChart, Plot, VLine};

use super::time_chart::{ChartOutput, hit_stacked};
use super::{SeriesView, legend_ui, plot_text};
use crate::console::{text, theme};
use crate::i18n::Localizer;

/// The histogram to draw: series points are `[attempts, intents, intents]`.
pub struct Histogram<'a> {
    pub id: &'a str,
    pub series: Vec<SeriesView<'a>>,
    pub budget: Option<(f64, String)>,
    pub x_label: String,
    pub y_label: String,
    pub click_hint: String,
    pub height: f32,
    /// Series the legend has hidden, by label.
    pub hidden: &'a mut BTreeSet<String>,
}

impl Histogram<'_> {
    pub fn show(self, ui: &mut egui::Ui, i18n: &Localizer) -> ChartOutput {
        let plot_id = Id::unique(("dashboard-chart", self.id));
        let markers: Vec<(egui::Color32, String)> = self
            .budget
            .iter()
            .map(|(_, label)| (theme::BUDGET, label.clone()))
            .collect();
        legend_ui(ui, i18n, &self.series, self.hidden, &markers);
        let hidden = self.hidden.clone();
        let series: Vec<&SeriesView<'_>> = self
            .series
            .iter()
            .filter(|s| !hidden.contains(&s.label))
            .collect();
        let drawn = &series;
        let budget = self.budget.clone();
        let dir = i18n.direction();
        let int = move |v: f64| {
            if v.fract() == 0.0 && v >= 0.0 {
                plot_text(dir, i18n.int(v as i64))
            } else {
                String::new()
            }
        };
        let response = Plot::new(self.id)
            .id(plot_id)
            .height(self.height)
            .x_grid_spacer(egui_plot::uniform_grid_spacer(|_| [1.0, 5.0, 10.0]))
            .x_axis_formatter(move |mark, _| int(mark.value))
            .y_axis_formatter(move |mark, _| int(mark.value))
            .y_axis_min_width(36.0)
            .x_axis_label(text::widget_text(ui, &self.x_label, i18n.direction()))
            .y_axis_label(text::widget_text(ui, &self.y_label, i18n.direction()))
            .show_x(false)
            .show_y(false)
            .allow_drag(false)
            .allow_scroll(false)
            .allow_zoom(false)
            .include_y(0.0)
            .show(ui, |plot_ui| {
                let mut stacked: Vec<BarChart> = Vec::new();
                for s in drawn {
                    let chart = BarChart::new(
                        s.label.clone(),
                        s.points
                            .iter()
                            .map(|p| Bar::new(p[0] + 0.5, p[1]).width(0.8))
                            .collect(),
                    )
                    .color(s.color);
                    let below: Vec<&BarChart> = stacked.iter().collect();
                    stacked.push(chart.stack_on(&below));
                }
                for chart in stacked {
                    plot_ui.bar_chart(chart);
                }
                if let Some((at, label)) = &budget {
                    plot_ui.vline(
                        VLine::new(label.clone(), *at + 0.5)
                            .color(theme::BUDGET)
                            .style(egui_plot::LineStyle::dashed_dense())
                            .width(1.5),
                    );
                }
                (plot_ui.pointer_coordinate(), plot_ui.response().clicked())
            });
        let (pointer, clicked) = response.inner;
        let mut out = ChartOutput {
            hit: None,
            transform: Some(response.transform),
        };
        let visible: Vec<(&str, &[[f64; 3]])> =
            series.iter().map(|s| (s.group, s.points)).collect();
        if let Some(at) = pointer {
            let hit = hit_stacked(&visible, 1.0, at);
            if let Some(hit) = &hit
                && response.response.hovered()
            {
                let dir = i18n.direction();
                let hint = self.click_hint.clone();
                let line = format!(
                    "{}: {} = {}",
                    hit.group,
                    i18n.int(hit.x as i64),
                    i18n.int(hit.value as i64)
                );
                response.response.clone().on_hover_ui_at_pointer(|ui| {
                    text::rtl_label(ui, &line, dir);
                    text::rtl_label(ui, &hint, dir);
                });
            }
            if clicked {
                out.hit = hit;
            }
        }
        out
    }
}
