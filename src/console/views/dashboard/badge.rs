//! The top bar's badge: lit when the overview crosses one of the operator's thresholds,
//! naming each that fired with its figure and limit; a click shows the dashboard. Its
//! figures are kept fresh by the app whichever view is open.

use super::state::DashboardSettings;
use crate::console::actions::Actions;
use crate::console::commands::ConsoleCommand;
use crate::console::views::format::{self, BidiHover};
use crate::console::{text, theme};
use crate::i18n::{Localizer, bidi};
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
    let fired = settings.fired(o);
    if fired.is_empty() {
        return;
    }
    let parts: Vec<String> = fired
        .iter()
        .map(|f| f.threshold.fired_text(f, i18n))
        .collect();
    let label = format!("! {}", parts.join(" | "));
    let dir = i18n.direction();
    let font = egui::TextStyle::Button.resolve(ui.style());
    // The top bar keeps its one line: past its width the badge is cut at its logical end,
    // and says everything on hover and to a screen reader.
    let shown = bidi::truncate_logical(&label, MAX_WIDTH, |line| {
        text::measure(ui, line, dir, &font)
    });
    let galley = text::layout_job(&shown, dir, font, egui::Color32::WHITE);
    let button = egui::Button::new(ui.painter().layout_job(galley)).fill(theme::THRESHOLD);
    let badge = ui.add(button);
    format::relabel(&badge, &label);
    let hint = format!("{label}\n{}", i18n.tr("dashboard-badge-hint"));
    if badge.bidi_hover(i18n, &hint).clicked() {
        actions.command(ConsoleCommand::ShowDashboard);
    }
}

/// The widest the badge is drawn.
const MAX_WIDTH: f32 = 300.0;
