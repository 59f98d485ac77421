//! Text on the timeline's canvas: laid out in visual order, anchored at a point.

use egui::{Align2, Color32, FontId, Pos2};

use super::geometry::Geometry;
use crate::i18n::Localizer;

/// `text` laid out in visual order; `ltr` keeps a left-to-right base (axis labels and edge
/// markers read along the time axis, which runs left to right in both locales).
pub(super) fn text_galley(
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
pub(super) fn label_anchor(geo: &Geometry, inset: f32) -> (f32, Align2) {
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
