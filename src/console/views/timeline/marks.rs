//! The shapes of the timeline's marks, a cluster's count beside it, and the hatching of a
//! pause; the legend draws them too.

use egui::epaint::PathShape;
use egui::{Align2, Color32, CornerRadius, FontId, Pos2, Rect, Stroke, StrokeKind, Vec2, pos2};

use super::colors::mark_color;
use super::geometry::MARK_R;
use super::labels::{place, text_galley};
use super::model::MarkKind;
use crate::i18n::Localizer;

/// A mark's shape, drawn over a halo so it reads on any bar.
pub fn paint_mark(painter: &egui::Painter, c: Pos2, kind: MarkKind, halo: Color32) {
    let color = mark_color(kind);
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
pub(super) fn count_ui(
    painter: &egui::Painter,
    i18n: &Localizer,
    at: Pos2,
    count: usize,
    color: Color32,
) {
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
