//! Painting the timeline: background, axis and grid, the state row (bands, transitions,
//! pause hatching), the events row, the overview strip, the visible lanes with their bars
//! and marks, and the lines (confirmation reserve, deadline, key retention, now). Only what
//! is on screen is painted, marks already merged to the pixel.

use egui::epaint::PathShape;
use egui::{
    Align2, Color32, CornerRadius, FontId, Pos2, Rect, Shape, Stroke, StrokeKind, Ui, Vec2, pos2,
    vec2,
};

use super::timeline::{CLUSTER_GAP_PX, Geometry, LANE_H, MARK_R, TimelineView};
use super::timeline_model::{self, Lane, MarkKind, Outcome, TimelineModel};
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
    for c in timeline_model::clusters(&model.event_marks, t0, t1, CLUSTER_GAP_PX, |t| geo.x(t)) {
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

/// Ticks every 1, 2 or 5 times a power of ten milliseconds, at least ~90 px apart.
fn axis_ui(
    painter: &egui::Painter,
    i18n: &Localizer,
    geo: &Geometry,
    grid: Color32,
    weak: Color32,
) {
    let step = tick_step(90.0 / geo.px_per_ms);
    let first = (geo.t0 / step).ceil() as i64;
    let last = (geo.t1() / step).floor() as i64;
    let font = FontId::proportional(10.5);
    for k in first..=last.min(first + 200) {
        let t = k as f64 * step;
        let x = geo.x(t);
        painter.vline(
            x,
            geo.axis.bottom()..=geo.rect.bottom(),
            Stroke::new(1.0, grid),
        );
        place(
            painter,
            text_galley(
                painter,
                i18n,
                &tick_label(i18n, t, step),
                font.clone(),
                weak,
                true,
            ),
            pos2(x + 3.0, geo.axis.center().y),
            Align2::LEFT_CENTER,
        );
    }
}

/// The smallest of 1, 2, 5 × 10^k ms that is at least `min_ms`.
pub fn tick_step(min_ms: f64) -> f64 {
    let min_ms = min_ms.max(1.0);
    let mut power = 10f64.powf(min_ms.log10().floor());
    loop {
        for m in [1.0, 2.0, 5.0] {
            if m * power >= min_ms {
                return m * power;
            }
        }
        power *= 10.0;
    }
}

/// A tick's offset from creation: `+250ms`, `+1.5s`, `+12s`, `+2m30s`, `+1h05m`.
pub fn tick_label(i18n: &Localizer, t: f64, step: f64) -> String {
    let sign = if t < 0.0 { "-" } else { "+" };
    let ms = t.abs().round();
    let text = if ms == 0.0 {
        "0".to_string()
    } else if step < 1_000.0 && ms < 1_000.0 {
        format!("{ms}ms")
    } else if step < 1_000.0 {
        let places = if step >= 100.0 {
            1
        } else if step >= 10.0 {
            2
        } else {
            3
        };
        format!("{:.*}s", places, ms / 1_000.0)
    } else if ms < 60_000.0 {
        format!("{}s", (ms / 1_000.0).round())
    } else if ms < 3_600_000.0 {
        let secs = (ms / 1_000.0).round() as u64;
        if secs.is_multiple_of(60) {
            format!("{}m", secs / 60)
        } else {
            format!("{}m{:02}s", secs / 60, secs % 60)
        }
    } else {
        let mins = (ms / 60_000.0).round() as u64;
        format!("{}h{:02}m", mins / 60, mins % 60)
    };
    super::format::localize_digits(i18n, &format!("{sign}{text}"))
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
    for c in timeline_model::clusters(
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
    let counts = timeline_model::density(&model.lanes, geo.t0, geo.t1(), columns);
    let max = counts
        .iter()
        .map(|c| c.iter().sum::<u32>())
        .max()
        .unwrap_or(0)
        .max(1);
    let bottom = geo.overview.bottom();
    let h = geo.overview.height();
    let colors = [
        theme::outcome_color(Outcome::Succeeded),
        theme::outcome_color(Outcome::Lost),
        theme::outcome_color(Outcome::Failed),
        theme::outcome_color(Outcome::Pending),
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
    let color = theme::outcome_color(lane.outcome);
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

fn lines_ui(
    painter: &egui::Painter,
    visuals: &egui::Visuals,
    i18n: &Localizer,
    model: &TimelineModel,
    geo: &Geometry,
) {
    let span = geo.axis.bottom()..=geo.rect.bottom();
    let font = FontId::proportional(10.0);
    let mut label_y = geo.lanes.top() + 2.0;
    // Lines outside the visible range are named at the edge they lie beyond, with when.
    let mut edge_y = [geo.lanes.bottom() - 14.0; 2];
    let mut line = |at: Option<i64>, color: Color32, dashed: bool, key: &str| {
        let Some(at) = at else { return };
        let x = geo.x(at as f64);
        if x < geo.plot.left() || x > geo.axis.right() {
            let right = x > geo.axis.right();
            let when = tick_label(i18n, at as f64, 1_000.0);
            // Name and time laid out apart, so no locale reorders them, and an arrow drawn
            // (not a glyph a shaper might mirror) pointing off the edge the line lies beyond.
            let pieces = [
                text_galley(painter, i18n, &i18n.tr(key), font.clone(), color, false),
                text_galley(painter, i18n, &when, font.clone(), color, true),
            ];
            let gap = 4.0;
            let arrow = 6.0;
            let width = pieces[0].size().x + pieces[1].size().x + 2.0 * gap + arrow;
            let height = pieces.iter().map(|g| g.size().y).fold(0.0, f32::max);
            let slot = usize::from(right);
            let left = if right {
                geo.axis.right() - width - 2.0
            } else {
                geo.plot.left() + 2.0
            };
            let top = edge_y[slot];
            painter.rect_filled(
                Rect::from_min_size(pos2(left, top), vec2(width, height)).expand(1.0),
                CornerRadius::same(2),
                visuals.extreme_bg_color.gamma_multiply(0.85),
            );
            let mid = top + height / 2.0;
            let mut x = left;
            let tip = |x: f32| {
                let (back, point) = if right {
                    (x, x + arrow)
                } else {
                    (x + arrow, x)
                };
                painter.add(PathShape::convex_polygon(
                    vec![
                        pos2(back, mid - 4.0),
                        pos2(point, mid),
                        pos2(back, mid + 4.0),
                    ],
                    color,
                    Stroke::NONE,
                ));
            };
            if !right {
                tip(x);
                x += arrow + gap;
            }
            for g in &pieces {
                painter.galley(pos2(x, top), g.clone(), color);
                x += g.size().x + gap;
            }
            if right {
                tip(x);
            }
            edge_y[slot] -= 13.0;
            return;
        }
        if dashed {
            painter.extend(Shape::dashed_line(
                &[pos2(x, *span.start()), pos2(x, *span.end())],
                Stroke::new(1.5, color),
                5.0,
                4.0,
            ));
        } else {
            painter.vline(x, span.clone(), Stroke::new(1.5, color));
        }
        let text = i18n.tr(key);
        let galley = text_galley(painter, i18n, &text, font.clone(), color, false);
        let at_left = x + 3.0 + galley.size().x > geo.axis.right();
        let pos = if at_left {
            pos2(x - 3.0 - galley.size().x, label_y)
        } else {
            pos2(x + 3.0, label_y)
        };
        painter.rect_filled(
            Rect::from_min_size(pos, galley.size()).expand(1.0),
            CornerRadius::same(2),
            visuals.extreme_bg_color.gamma_multiply(0.85),
        );
        painter.galley(pos, galley, color);
        label_y += 13.0;
    };
    line(
        model.reserve_ms,
        theme::INDETERMINATE,
        true,
        "timeline-line-reserve",
    );
    line(
        model.deadline_ms,
        theme::TIMELINE_DEADLINE,
        false,
        "timeline-line-deadline",
    );
    line(
        model.key_forget_ms,
        theme::TIMELINE_KEY_FORGET,
        true,
        "timeline-line-key-forget",
    );
    line(Some(model.now_ms), theme::QUIET, false, "timeline-line-now");
}

/// A mark's shape, drawn over a halo so it reads on any bar.
pub fn paint_mark(painter: &egui::Painter, c: Pos2, kind: MarkKind, halo: Color32) {
    let color = theme::mark_color(kind);
    let r = MARK_R;
    let halo_stroke = Stroke::new(3.0, halo);
    let poly = |points: Vec<Pos2>| {
        painter.add(PathShape::convex_polygon(
            points.clone(),
            color,
            halo_stroke,
        ));
        painter.add(PathShape::convex_polygon(points, color, Stroke::NONE));
    };
    match kind {
        MarkKind::Transition => {
            painter.vline(c.x, (c.y - r)..=(c.y + r), Stroke::new(2.0, color));
        }
        MarkKind::Dispatch => poly(vec![
            pos2(c.x - r * 0.6, c.y - r),
            pos2(c.x + r, c.y),
            pos2(c.x - r * 0.6, c.y + r),
        ]),
        MarkKind::Lookup => poly(vec![
            pos2(c.x, c.y - r),
            pos2(c.x + r, c.y),
            pos2(c.x, c.y + r),
            pos2(c.x - r, c.y),
        ]),
        MarkKind::Command => poly(vec![
            pos2(c.x - r, c.y - r),
            pos2(c.x + r, c.y - r),
            pos2(c.x, c.y + r),
        ]),
        MarkKind::LostResponse => {
            for (a, b) in [
                (pos2(c.x - r, c.y - r), pos2(c.x + r, c.y + r)),
                (pos2(c.x - r, c.y + r), pos2(c.x + r, c.y - r)),
            ] {
                painter.line_segment([a, b], Stroke::new(4.0, halo));
                painter.line_segment([a, b], Stroke::new(2.0, color));
            }
        }
        MarkKind::Timeout => {
            let sq = Rect::from_center_size(c, Vec2::splat(r * 1.6));
            painter.rect_stroke(
                sq,
                CornerRadius::ZERO,
                Stroke::new(3.5, halo),
                StrokeKind::Middle,
            );
            painter.rect_stroke(
                sq,
                CornerRadius::ZERO,
                Stroke::new(2.0, color),
                StrokeKind::Middle,
            );
        }
        MarkKind::Mismatch => {
            let sq = Rect::from_center_size(c, Vec2::splat(r * 1.6));
            painter.rect_filled(sq.expand(1.5), CornerRadius::ZERO, halo);
            painter.rect_filled(sq, CornerRadius::ZERO, color);
        }
        MarkKind::Receipt => {
            painter.circle_filled(c, r + 1.5, halo);
            painter.circle_filled(c, r, color);
        }
        MarkKind::Replay | MarkKind::Webhook => {
            painter.circle_stroke(c, r - 0.5, Stroke::new(4.0, halo));
            painter.circle_stroke(c, r - 0.5, Stroke::new(2.0, color));
            if kind == MarkKind::Webhook {
                painter.circle_filled(c, 1.5, color);
            }
        }
    }
}

/// The number of marks a cluster stands for, beside it.
fn count_ui(painter: &egui::Painter, i18n: &Localizer, at: Pos2, count: usize, color: Color32) {
    if count > 1 {
        place(
            painter,
            text_galley(
                painter,
                i18n,
                &i18n.int(count as i64),
                FontId::proportional(9.5),
                color,
                true,
            ),
            pos2(at.x + MARK_R + 1.0, at.y - 1.0),
            Align2::LEFT_BOTTOM,
        );
    }
}

/// `text` laid out in visual order; `ltr` keeps a left-to-right base (axis labels and edge
/// markers read along the time axis, which runs left to right in both locales).
fn text_galley(
    painter: &egui::Painter,
    i18n: &Localizer,
    text: &str,
    font: FontId,
    color: Color32,
    ltr: bool,
) -> std::sync::Arc<egui::Galley> {
    if i18n.is_rtl() {
        let base = if ltr {
            crate::console::text::Direction::Ltr
        } else {
            i18n.direction()
        };
        painter.layout_job(crate::console::text::layout_job(text, base, font, color))
    } else {
        painter.layout_no_wrap(text.to_string(), font, color)
    }
}

/// Where text in the label column is anchored: `inset` from its outer edge, aligned to it.
fn label_anchor(geo: &Geometry, inset: f32) -> (f32, Align2) {
    if geo.rtl {
        (geo.label_col.right() - inset, Align2::RIGHT_CENTER)
    } else {
        (geo.label_col.left() + inset, Align2::LEFT_CENTER)
    }
}

/// A laid-out text placed by its anchor.
pub(super) fn place(
    painter: &egui::Painter,
    galley: std::sync::Arc<egui::Galley>,
    pos: Pos2,
    align: Align2,
) {
    let rect = align.anchor_size(pos, galley.size());
    painter.galley(rect.min, galley, Color32::PLACEHOLDER);
}

/// Diagonal hatching over `rect`: the mark of a pause.
pub(super) fn paint_hatch(painter: &egui::Painter, rect: Rect, color: Color32) {
    let painter = painter.with_clip_rect(rect.intersect(painter.clip_rect()));
    let stroke = Stroke::new(1.2, color.gamma_multiply(0.8));
    let h = rect.height();
    let mut x = rect.left() - h;
    while x < rect.right() {
        painter.line_segment([pos2(x, rect.bottom()), pos2(x + h, rect.top())], stroke);
        x += 5.0;
    }
}
