//! Painting the timeline: background, axis and grid, the state row (bands, transitions,
//! pause hatching), the events row, the overview strip, the visible lanes with their bars
//! and marks; the lines are [`super::lines`]. Only what
//! is on screen is painted, marks already merged to the pixel.

use egui::{Align2, Color32, CornerRadius, FontId, Rect, Stroke, StrokeKind, Ui, pos2, vec2};

use super::axis::axis_ui;
use super::colors::outcome_color;
use super::cull;
use super::geometry::{CLUSTER_GAP_PX, Geometry, LANE_H, MARK_R};
use super::labels::{label_anchor, place, text_galley};
use super::lines::lines_ui;
use super::marks::{count_ui, paint_hatch, paint_mark};
use super::model::{Lane, Outcome, TimelineModel};
use super::view::TimelineView;
use crate::console::theme;
use crate::i18n::Localizer;

pub(super) fn paint(
    ui: &Ui,
    i18n: &Localizer,
    model: &TimelineModel,
    view: &TimelineView,
    geo: &Geometry,
    focused: bool,
) {
    let visuals = ui.visuals();
    let painter = ui.painter().with_clip_rect(geo.rect);
    let text_color = visuals.text_color();
    let weak = visuals.weak_text_color();
    let grid = visuals
        .widgets
        .noninteractive
        .bg_stroke
        .color
        .gamma_multiply(0.6);
    painter.rect_filled(geo.rect, CornerRadius::same(2), visuals.extreme_bg_color);
    painter.rect_filled(geo.label_col, CornerRadius::ZERO, visuals.faint_bg_color);

    let plot_painter = painter.with_clip_rect(geo.plot);
    // The confirmation reserve: the last stretch before the deadline, kept for confirming.
    if let (Some(reserve), Some(deadline)) = (model.reserve_ms, model.deadline_ms) {
        let shade = Rect::from_x_y_ranges(
            geo.x(reserve as f64)..=geo.x(deadline as f64),
            geo.axis.bottom()..=geo.rect.bottom(),
        );
        plot_painter.rect_filled(shade, CornerRadius::ZERO, theme::TIMELINE_RESERVE);
    }
    axis_ui(&plot_painter, i18n, geo, grid, weak);

    // Row titles, at the label column's outer edge; the axis row says which way time runs.
    let font = FontId::proportional(11.0);
    let (title_x, title_align) = label_anchor(geo, 4.0);
    let title = |rect: Rect, key: &str| {
        place(
            &painter,
            text_galley(&painter, i18n, &i18n.tr(key), font.clone(), weak, false),
            pos2(title_x, rect.center().y),
            title_align,
        );
    };
    title(geo.axis, "timeline-axis-direction");
    title(geo.state_row, "timeline-row-state");
    title(geo.events_row, "timeline-row-events");
    title(geo.overview, "timeline-row-overview");

    states_ui(&plot_painter, visuals, i18n, model, geo);
    let (t0, t1) = (geo.t(geo.plot.left() - 8.0), geo.t(geo.axis.right() + 8.0));
    for c in cull::clusters(&model.event_marks, t0, t1, CLUSTER_GAP_PX, |t| geo.x(t)) {
        let center = pos2(c.x, geo.events_row.center().y);
        paint_mark(&plot_painter, center, c.kind, visuals.extreme_bg_color);
        count_ui(&plot_painter, i18n, center, c.count, text_color);
    }
    overview_ui(&plot_painter, model, geo);
    painter.hline(
        geo.rect.x_range(),
        geo.lanes.top() - 1.0,
        Stroke::new(1.0, grid),
    );

    lanes_ui(ui, &painter, model, view, geo);
    lines_ui(&plot_painter, visuals, i18n, model, geo);

    if model.lanes.is_empty() {
        place(
            &painter,
            text_galley(
                &painter,
                i18n,
                &i18n.tr("timeline-no-attempts"),
                FontId::proportional(13.0),
                weak,
                false,
            ),
            geo.lanes.center(),
            Align2::CENTER_CENTER,
        );
    }
    let border = if focused {
        visuals.selection.stroke
    } else {
        visuals.widgets.noninteractive.bg_stroke
    };
    painter.rect_stroke(geo.rect, CornerRadius::same(2), border, StrokeKind::Inside);
}

fn states_ui(
    painter: &egui::Painter,
    visuals: &egui::Visuals,
    i18n: &Localizer,
    model: &TimelineModel,
    geo: &Geometry,
) {
    let row = geo.state_row.shrink2(vec2(0.0, 2.0));
    let (t0, t1) = (geo.t0, geo.t1());
    let first = model.states.partition_point(|b| (b.to_ms as f64) < t0);
    // Bands narrower than a pixel are skipped: the band drawn over that pixel stands for them.
    let mut drawn_to = f32::NEG_INFINITY;
    for band in model.states.iter().skip(first) {
        if band.from_ms as f64 > t1 {
            break;
        }
        let x0 = geo.x(band.from_ms as f64).max(geo.plot.left() - 1.0);
        let x1 = geo
            .x(band.to_ms as f64)
            .min(geo.axis.right() + 1.0)
            .max(x0 + 1.0);
        if x1 <= drawn_to + 0.5 {
            continue;
        }
        let r = Rect::from_x_y_ranges(x0.max(drawn_to)..=x1, row.y_range());
        painter.rect_filled(
            r,
            CornerRadius::ZERO,
            theme::state_color(&band.state).gamma_multiply(0.75),
        );
        drawn_to = x1;
    }
    let text = visuals.strong_text_color();
    for c in cull::clusters(
        &model.state_marks,
        t0 - 1.0,
        t1 + 1.0,
        CLUSTER_GAP_PX,
        |t| geo.x(t),
    ) {
        painter.vline(c.x, geo.state_row.y_range(), Stroke::new(1.5, text));
        if c.count > 1 {
            place(
                painter,
                text_galley(
                    painter,
                    i18n,
                    &i18n.int(c.count as i64),
                    FontId::proportional(9.5),
                    text,
                    true,
                ),
                pos2(c.x + 2.0, geo.state_row.center().y),
                Align2::LEFT_CENTER,
            );
        }
    }
    // Paused: hatching over the state row.
    for &(from, to) in &model.paused {
        let to = to.unwrap_or(model.now_ms);
        let x0 = geo.x(from as f64).max(geo.plot.left() - 1.0);
        let x1 = geo.x(to as f64).min(geo.axis.right() + 1.0).max(x0 + 2.0);
        paint_hatch(painter, Rect::from_x_y_ranges(x0..=x1, row.y_range()), text);
    }
}

/// Every attempt, per pixel column, stacked by outcome class.
fn overview_ui(painter: &egui::Painter, model: &TimelineModel, geo: &Geometry) {
    let columns = geo.axis.width().max(1.0) as usize;
    let counts = cull::density(&model.lanes, geo.t0, geo.t1(), columns);
    let max = counts
        .iter()
        .map(|c| c.iter().sum::<u32>())
        .max()
        .unwrap_or(0)
        .max(1);
    let bottom = geo.overview.bottom();
    let h = geo.overview.height();
    let colors = [
        outcome_color(Outcome::Succeeded),
        outcome_color(Outcome::Lost),
        outcome_color(Outcome::Failed),
        outcome_color(Outcome::Pending),
    ];
    // Runs of equal columns are one rectangle each.
    let mut run_start = 0usize;
    for i in 1..=counts.len() {
        if i < counts.len() && counts[i] == counts[run_start] {
            continue;
        }
        let c = counts[run_start];
        let x0 = geo.plot.left() + run_start as f32;
        let x1 = geo.plot.left() + i as f32;
        let mut y = bottom;
        for (k, color) in colors.iter().enumerate() {
            if c[k] == 0 {
                continue;
            }
            let dh = (c[k] as f32 / max as f32 * h).max(1.0);
            painter.rect_filled(
                Rect::from_x_y_ranges(x0..=x1, (y - dh)..=y),
                CornerRadius::ZERO,
                *color,
            );
            y -= dh;
        }
        run_start = i;
    }
}

fn lanes_ui(
    ui: &Ui,
    painter: &egui::Painter,
    model: &TimelineModel,
    view: &TimelineView,
    geo: &Geometry,
) {
    let visuals = ui.visuals();
    let clip = painter.with_clip_rect(geo.lanes.intersect(geo.rect));
    let inner = if geo.rtl {
        geo.label_col.x_range().min + 4.0..=geo.label_col.right()
    } else {
        geo.label_col.left()..=geo.label_col.right() - 4.0
    };
    let label_clip = clip.with_clip_rect(Rect::from_x_y_ranges(inner, geo.lanes.y_range()));
    let plot_clip = clip.with_clip_rect(Rect::from_x_y_ranges(
        geo.plot.x_range(),
        geo.lanes.y_range(),
    ));
    let (label_x, label_align) = label_anchor(geo, 8.0);
    let font = FontId::monospace(10.5);
    let text_color = visuals.text_color();
    for i in geo.visible_lanes(model.lanes.len()) {
        let lane = &model.lanes[i];
        let top = geo.lane_top(i);
        let row = Rect::from_min_max(
            pos2(geo.rect.left(), top),
            pos2(geo.rect.right(), top + LANE_H),
        );
        if view.selected == Some(lane.attempt) {
            clip.rect_filled(row, CornerRadius::ZERO, theme::TIMELINE_SELECTED);
            clip.rect_stroke(
                row.shrink(0.5),
                CornerRadius::ZERO,
                visuals.selection.stroke,
                StrokeKind::Inside,
            );
        } else if lane.group.is_some() {
            clip.rect_filled(
                row,
                CornerRadius::ZERO,
                theme::TIMELINE_HEDGE.gamma_multiply(0.12),
            );
        } else if i % 2 == 1 {
            clip.rect_filled(
                row,
                CornerRadius::ZERO,
                visuals.faint_bg_color.gamma_multiply(0.6),
            );
        }
        // Lane names are Latin ids: one too long for the column keeps its start in view
        // (cut at its end), on either side.
        let galley = label_clip.layout_no_wrap(lane.label.clone(), font.clone(), text_color);
        let (x, align) = if geo.rtl && galley.size().x > geo.label_col.width() - 12.0 {
            (geo.label_col.left() + 8.0, Align2::LEFT_CENTER)
        } else {
            (label_x, label_align)
        };
        place(&label_clip, galley, pos2(x, row.center().y), align);
        bar_ui(&plot_clip, lane, geo, row, visuals.extreme_bg_color);
    }
    // Hedge groups: a bracket in the label column over the lanes of each group.
    for g in &model.groups {
        let y0 = geo.lane_top(g.first) + 2.0;
        let y1 = geo.lane_top(g.last) + LANE_H - 2.0;
        if y1 < geo.lanes.top() || y0 > geo.lanes.bottom() {
            continue;
        }
        let x = if geo.rtl {
            geo.label_col.right() - 6.0
        } else {
            geo.label_col.left() + 3.0
        };
        clip.rect_filled(
            Rect::from_x_y_ranges(x..=x + 3.0, y0..=y1),
            CornerRadius::same(1),
            theme::TIMELINE_HEDGE,
        );
    }
}

fn bar_ui(painter: &egui::Painter, lane: &Lane, geo: &Geometry, row: Rect, halo: Color32) {
    let x0 = geo.x(lane.start_ms as f64);
    // A bar narrower than two pixels is drawn two pixels wide: it stays visible.
    let x1 = geo.x(lane.end_ms as f64).max(x0 + 2.0);
    if x1 < geo.plot.left() - MARK_R * 2.0 || x0 > geo.rect.right() + MARK_R * 2.0 {
        return;
    }
    let bar = Rect::from_x_y_ranges(x0..=x1, (row.top() + 4.0)..=(row.bottom() - 4.0));
    let color = outcome_color(lane.outcome);
    painter.rect_filled(bar, CornerRadius::same(2), color);
    if lane.open {
        // Still running: the end fades out towards "now".
        let tail = Rect::from_x_y_ranges((x1 - 12.0).max(x0)..=x1, bar.y_range());
        painter.rect_filled(tail, CornerRadius::ZERO, halo.gamma_multiply(0.45));
    }
    if lane.late {
        painter.rect_stroke(
            bar,
            CornerRadius::same(2),
            Stroke::new(1.5, theme::TIMELINE_DEADLINE),
            StrokeKind::Outside,
        );
    }
    for m in &lane.marks {
        paint_mark(
            painter,
            pos2(geo.x(m.at_ms as f64), row.center().y),
            m.kind,
            halo,
        );
    }
}
