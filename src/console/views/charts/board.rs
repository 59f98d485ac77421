//! The ageing board: the oldest indeterminate intents, oldest first, each with how long it
//! has been indeterminate. Clicking one opens it.

use crate::console::model::IntentRow;
use crate::console::text;
use crate::console::views::format::duration_ms;
use crate::i18n::Localizer;

/// Column headers (Fluent ids) of the board.
const COLUMNS: &[&str] = &[
    "table-column-intent",
    "table-column-tenant",
    "table-column-operation",
    "dashboard-board-age",
    "table-column-providers",
];

/// Draw the board; returns the id of the intent clicked.
pub fn board_ui(
    ui: &mut egui::Ui,
    i18n: &Localizer,
    rows: &[IntentRow],
    now_ms: u64,
    limit_secs: Option<u64>,
) -> Option<String> {
    let mut clicked = None;
    let dir = i18n.direction();
    egui::Grid::new("dashboard-board")
        .striped(true)
        .num_columns(COLUMNS.len())
        .show(ui, |ui| {
            for key in COLUMNS {
                ui.strong(i18n.tr(key));
            }
            ui.end_row();
            for row in rows {
                if ui
                    .button(egui::RichText::new(row.short_id()).monospace())
                    .on_hover_text(&row.id)
                    .clicked()
                {
                    clicked = Some(row.id.clone());
                }
                ui.label(&row.tenant);
                ui.label(&row.operation);
                let age_ms = row
                    .indeterminate_since_ms
                    .map_or(0, |since| now_ms.saturating_sub(since));
                let age = duration_ms(i18n, age_ms as i64);
                let over = limit_secs.is_some_and(|l| age_ms / 1000 > l);
                let color = if over {
                    crate::console::theme::THRESHOLD
                } else {
                    ui.visuals().text_color()
                };
                ui.add(text::BidiLabel::new(&age, dir).color(color));
                ui.label(row.providers.join(", "));
                ui.end_row();
            }
        });
    clicked
}
