//! The timeline's legend: every mark shape with its name, the outcome colours and the
//! pause hatching.

use egui::{CornerRadius, Rect, Sense, Ui, vec2};

use super::colors::outcome_color;
use super::marks::{paint_hatch, paint_mark};
use super::model::{MarkKind, Outcome};
use crate::console::views::intent_widgets;
use crate::i18n::Localizer;

/// The legend: every mark shape with its name, and the outcome colours.
pub fn legend_ui(ui: &mut Ui, i18n: &Localizer) {
    let halo = ui.visuals().extreme_bg_color;
    let swatch = |ui: &mut Ui, key: &str, paint: &dyn Fn(&egui::Painter, Rect)| {
        let text = intent_widgets::wt(i18n, ui, &i18n.tr(key));
        let galley = text.clone().into_galley(
            ui,
            Some(egui::TextWrapMode::Extend),
            f32::INFINITY,
            egui::TextStyle::Body,
        );
        // A swatch and its name stay on one line.
        let left = ui.max_rect().right() - ui.cursor().min.x;
        if left < galley.size().x + 24.0 {
            ui.end_row();
        }
        let (rect, _) = ui.allocate_exact_size(vec2(14.0, 12.0), Sense::hover());
        paint(ui.painter(), rect);
        ui.label(text);
        ui.add_space(6.0);
    };
    ui.horizontal_wrapped(|ui| {
        ui.spacing_mut().item_spacing.x = 4.0;
        for kind in MarkKind::ALL {
            swatch(ui, kind.label_key(), &|p, r| {
                paint_mark(p, r.center(), kind, halo)
            });
        }
        for (outcome, key) in [
            (Outcome::Succeeded, "timeline-outcome-succeeded"),
            (Outcome::Lost, "timeline-overview-unknown"),
            (Outcome::Failed, "timeline-outcome-failed"),
            (Outcome::Pending, "timeline-outcome-pending"),
        ] {
            swatch(ui, key, &|p, r| {
                p.rect_filled(
                    r.shrink2(vec2(0.0, 2.0)),
                    CornerRadius::same(2),
                    outcome_color(outcome),
                );
            });
        }
        let hatch = ui.visuals().strong_text_color();
        swatch(ui, "state-paused", &|p, r| paint_hatch(p, r, hatch));
    });
    intent_widgets::say_colored(
        ui,
        i18n,
        &i18n.tr("timeline-help"),
        ui.visuals().weak_text_color(),
    );
}
