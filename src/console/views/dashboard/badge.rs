//! The top bar's badge: lit when the overview crosses one of the operator's thresholds; a
//! click shows the dashboard. Its figures are kept fresh by the app whichever view is open.

use super::state::DashboardSettings;
use crate::console::actions::Actions;
use crate::console::commands::ConsoleCommand;
use crate::console::views::format::{self, BidiHover, duration_ms};
use crate::console::{text, theme};
use crate::i18n::Localizer;
use crate::wire::Overview;

/// Draw the badge when `overview` crosses a threshold of `settings`.
pub fn threshold_badge_ui(
    ui: &mut egui::Ui,
    i18n: &Localizer,
    overview: Option<&Overview>,
    settings: &DashboardSettings,
    actions: &mut Actions,
) {
    let Some(o) = overview else {
        return;
    };
    let s = settings;
    let (amp, old) = s.crossed(o);
    if !amp && !old {
        return;
    }
    let mut parts = Vec::new();
    if amp {
        parts.push(i18n.tr_args(
            "dashboard-badge-p99",
            &[
                ("value", o.amplification_p99.into()),
                ("limit", s.amplification_p99_max.into()),
            ],
        ));
    }
    if old {
        parts.push(i18n.tr_args(
            "dashboard-badge-oldest",
            &[
                (
                    "age",
                    duration_ms(i18n, (o.indeterminate_oldest_age_secs * 1000) as i64).into(),
                ),
                ("limit", s.oldest_indeterminate_max_mins.into()),
            ],
        ));
    }
    let label = format!("! {}", parts.join(" | "));
    let dir = i18n.direction();
    let galley = text::layout_job(
        &label,
        dir,
        egui::TextStyle::Button.resolve(ui.style()),
        egui::Color32::WHITE,
    );
    let button = egui::Button::new(ui.painter().layout_job(galley)).fill(theme::THRESHOLD);
    let badge = format::said(i18n, &label, ui.add(button));
    if badge
        .bidi_hover(i18n, &i18n.tr("dashboard-badge-hint"))
        .clicked()
    {
        actions.command(ConsoleCommand::ShowDashboard);
    }
}
