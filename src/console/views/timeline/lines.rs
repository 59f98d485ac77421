//! The timeline's lines: the confirmation reserve, the deadline, when the downstream may
//! forget the action key, and now.

use egui::epaint::PathShape;
use egui::{Color32, CornerRadius, FontId, Rect, Shape, Stroke, pos2, vec2};

use super::axis::tick_label;
use super::geometry::Geometry;
use super::labels::text_galley;
use super::model::TimelineModel;
use crate::console::theme;
use crate::i18n::Localizer;

pub(super) fn lines_ui(
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
    line(
        model.next_lookup_ms,
        theme::PREPARED,
        true,
        "timeline-line-next-lookup",
    );
    line(
        model.lookups_exhausted_ms,
        theme::INDETERMINATE,
        false,
        "timeline-line-lookups-exhausted",
    );
    line(Some(model.now_ms), theme::QUIET, false, "timeline-line-now");
}
