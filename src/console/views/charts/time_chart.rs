//! A chart of series over time: stacked bars while every bar gets at least two pixels,
//! lines otherwise, min/max downsampled to the plot's pixel columns. It draws a threshold
//! when given one, a legend whose entries hide and show series, a localised tooltip with
//! every series' value in the bucket under the pointer, and reports a click as a [`Hit`].

use std::collections::BTreeSet;

use egui::{Color32, Id, Pos2};
use egui_plot::{Bar, BarChart, HLine, Line, LineStyle, Plot, PlotPoint, PlotTransform};

use super::{Hit, SeriesView, downsample, legend_ui, plot_text, time_axis};
use crate::console::{text, theme};
use crate::i18n::Localizer;

/// How series are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Counts per bucket, stacked (lines when the buckets are too narrow for bars).
    StackedBars,
    Lines,
}

/// A time chart to draw.
pub struct TimeChart<'a> {
    pub id: &'a str,
    pub y_label: String,
    pub kind: Kind,
    pub series: Vec<SeriesView<'a>>,
    pub bucket_ms: u64,
    pub x_range: (f64, f64),
    /// A horizontal line at a value, with its legend label.
    pub threshold: Option<(f64, String)>,
    pub y_format: &'a dyn Fn(f64) -> String,
    /// What a click does, said in the tooltip.
    pub click_hint: String,
    pub height: f32,
    /// Series the legend has hidden, by label.
    pub hidden: &'a mut BTreeSet<String>,
}

/// What a frame of the chart produced.
#[derive(Debug, Clone, Default)]
pub struct ChartOutput {
    pub hit: Option<Hit>,
    /// Where the plot was drawn (for tests that click at a value).
    pub transform: Option<PlotTransform>,
}

/// Whether stacked bars can be drawn at this width.
fn bars_fit(kind: Kind, series: &[SeriesView<'_>], columns: usize) -> bool {
    kind == Kind::StackedBars && series.iter().all(|s| s.points.len() * 2 <= columns)
}

/// The bar under `at` in stacked bars: series are stacked in order, skipping hidden ones.
pub fn hit_stacked(series: &[(&str, &[[f64; 3]])], bucket_ms: f64, at: PlotPoint) -> Option<Hit> {
    let mut base = 0.0;
    for (group, points) in series {
        let i = points.partition_point(|p| p[0] + bucket_ms <= at.x);
        let Some(p) = points.get(i).filter(|p| p[0] <= at.x) else {
            continue;
        };
        if p[1] > 0.0 && at.y >= base && at.y < base + p[1] {
            return Some(Hit {
                group: (*group).to_string(),
                x: p[0],
                value: p[1],
            });
        }
        base += p[1].max(0.0);
    }
    None
}

/// The point nearest to `pointer` on screen, within `radius` pixels.
pub fn hit_nearest(
    series: &[(&str, &[[f64; 3]])],
    transform: &PlotTransform,
    pointer: Pos2,
    radius: f32,
) -> Option<Hit> {
    let at = transform.value_from_position(pointer);
    let mut best: Option<(f32, Hit)> = None;
    for (group, points) in series {
        let i = points.partition_point(|p| p[0] < at.x);
        for p in points[i.saturating_sub(2)..(i + 2).min(points.len())].iter() {
            let d = transform
                .position_from_point(&PlotPoint::new(p[0], p[1]))
                .distance(pointer);
            if d <= radius && best.as_ref().is_none_or(|(bd, _)| d < *bd) {
                best = Some((
                    d,
                    Hit {
                        group: (*group).to_string(),
                        x: p[0],
                        value: p[1],
                    },
                ));
            }
        }
    }
    best.map(|(_, hit)| hit)
}

impl TimeChart<'_> {
    pub fn show(self, ui: &mut egui::Ui, i18n: &Localizer) -> ChartOutput {
        let plot_id = Id::unique(("dashboard-chart", self.id));
        let markers: Vec<(Color32, String)> = self
            .threshold
            .iter()
            .map(|(y, label)| {
                (
                    theme::THRESHOLD,
                    format!("{label}: {}", (self.y_format)(*y)),
                )
            })
            .collect();
        legend_ui(ui, i18n, &self.series, self.hidden, &markers);
        let hidden = self.hidden.clone();
        let series: Vec<&SeriesView<'_>> = self
            .series
            .iter()
            .filter(|s| !hidden.contains(&s.label))
            .collect();
        let width = ui.available_width();
        let columns = (width - 60.0).max(50.0) as usize;
        let bars = bars_fit(self.kind, &self.series, columns);
        let dir = i18n.direction();
        let (x0, x1) = self.x_range;
        let offset = time_axis::local_offset_secs(((x0 + x1) / 2.0).max(0.0) as u64);
        let span = (x1 - x0).max(1.0);
        let y_format = self.y_format;
        let bucket = self.bucket_ms as f64;
        let threshold = self.threshold.clone();
        let drawn = &series;
        let plot = Plot::new(self.id)
            .id(plot_id)
            .height(self.height)
            .x_grid_spacer(time_axis::spacer(offset, width))
            .x_axis_formatter(move |mark, _| {
                plot_text(dir, time_axis::label(i18n, mark.value, span, offset))
            })
            .y_axis_formatter(move |mark, _| plot_text(dir, y_format(mark.value)))
            .y_axis_min_width(36.0)
            .y_axis_label(text::widget_text(ui, &self.y_label, i18n.direction()))
            .show_x(false)
            .show_y(false)
            .allow_drag(false)
            .allow_scroll(false)
            .allow_zoom(false)
            .include_x(x0)
            .include_x(x1)
            .include_y(0.0);
        let response = plot.show(ui, |plot_ui| {
            if bars {
                let mut stacked: Vec<BarChart> = Vec::new();
                for s in drawn {
                    let chart = BarChart::new(
                        s.label.clone(),
                        s.points
                            .iter()
                            .map(|p| Bar::new(p[0] + bucket / 2.0, p[1]).width(bucket * 0.9))
                            .collect(),
                    )
                    .color(s.color);
                    let below: Vec<&BarChart> = stacked.iter().collect();
                    let chart = chart.stack_on(&below);
                    stacked.push(chart);
                }
                for chart in stacked {
                    plot_ui.bar_chart(chart);
                }
            } else {
                let bounds = plot_ui.plot_bounds();
                let (lo, hi) = (bounds.min()[0], bounds.max()[0]);
                for s in drawn {
                    let xy: Vec<[f64; 2]> = s.points.iter().map(|p| [p[0], p[1]]).collect();
                    let points = downsample::min_max(&xy, lo, hi, columns);
                    plot_ui.line(
                        Line::new(s.label.clone(), points)
                            .color(s.color)
                            .style(s.style)
                            .width(1.5),
                    );
                }
            }
            if let Some((y, label)) = &threshold {
                plot_ui.hline(
                    HLine::new(label.clone(), *y)
                        .color(theme::THRESHOLD)
                        .style(LineStyle::dashed_loose())
                        .width(1.5),
                );
            }
            (plot_ui.pointer_coordinate(), plot_ui.response().clicked())
        });
        let (pointer, clicked) = response.inner;
        let visible: Vec<(&str, &[[f64; 3]])> =
            series.iter().map(|s| (s.group, s.points)).collect();
        let mut out = ChartOutput {
            hit: None,
            transform: Some(response.transform),
        };
        let Some(at) = pointer else {
            return out;
        };
        let hit = if bars {
            hit_stacked(&visible, bucket, at)
        } else {
            response
                .response
                .hover_pos()
                .and_then(|pos| hit_nearest(&visible, &response.transform, pos, 24.0))
        };
        if clicked {
            out.hit = hit.clone();
        }
        if response.response.hovered() {
            tooltip(
                ui,
                i18n,
                &response.response,
                &series,
                bucket,
                at.x,
                offset,
                y_format,
                hit.as_ref(),
                &self.click_hint,
            );
        }
        out
    }
}

/// Every series' value in the bucket under the pointer.
#[allow(clippy::too_many_arguments)]
fn tooltip(
    ui: &egui::Ui,
    i18n: &Localizer,
    response: &egui::Response,
    series: &[&SeriesView<'_>],
    bucket_ms: f64,
    x: f64,
    offset: i32,
    y_format: &dyn Fn(f64) -> String,
    hit: Option<&Hit>,
    click_hint: &str,
) {
    let start = (x / bucket_ms).floor() * bucket_ms;
    let rows: Vec<(String, Color32, String)> = series
        .iter()
        .filter_map(|s| {
            let i = s.points.partition_point(|p| p[0] < start);
            let p = s.points.get(i).filter(|p| p[0] < start + bucket_ms)?;
            Some((s.label.clone(), s.color, y_format(p[1])))
        })
        .collect();
    if rows.is_empty() {
        return;
    }
    let dir = i18n.direction();
    let _ = ui;
    response.clone().on_hover_ui_at_pointer(|ui| {
        text::rtl_label(
            ui,
            &time_axis::interval(i18n, start.max(0.0) as u64, bucket_ms as u64, offset),
            dir,
        );
        for (label, color, value) in rows {
            ui.horizontal(|ui| {
                let (rect, _) =
                    ui.allocate_exact_size(egui::vec2(10.0, 10.0), egui::Sense::hover());
                ui.painter().rect_filled(rect, 2.0, color);
                text::rtl_label(ui, &format!("{label}: {value}"), dir);
            });
        }
        if let Some(hit) = hit {
            ui.separator();
            text::rtl_label(ui, &format!("{}: {}", hit.group, y_format(hit.value)), dir);
            text::rtl_label(ui, click_hint, dir);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_click_in_a_stacked_bar_finds_its_series() {
        let a = [[0.0, 2.0, 2.0], [60_000.0, 5.0, 5.0]];
        let b = [[0.0, 1.0, 1.0], [60_000.0, 3.0, 3.0]];
        let series: Vec<(&str, &[[f64; 3]])> = vec![("a", &a), ("b", &b)];
        let hit = hit_stacked(&series, 60_000.0, PlotPoint::new(70_000.0, 6.0)).expect("hit");
        assert_eq!((hit.group.as_str(), hit.x, hit.value), ("b", 60_000.0, 3.0));
        let hit = hit_stacked(&series, 60_000.0, PlotPoint::new(10.0, 1.0)).expect("hit");
        assert_eq!(hit.group, "a");
        assert!(hit_stacked(&series, 60_000.0, PlotPoint::new(10.0, 3.5)).is_none());
    }
}
