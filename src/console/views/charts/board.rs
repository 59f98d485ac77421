//! The ageing board: the oldest indeterminate intents, oldest first, each with how long it
//! has been indeterminate. Clicking one opens it. Columns run right to left in Persian.

use crate::console::model::IntentRow;
use crate::console::text;
use crate::console::theme;
use crate::console::views::format::duration_ms;
use crate::i18n::Localizer;

/// The board's columns, in reading order.
#[derive(Debug, Clone, Copy)]
enum Column {
    Intent,
    Tenant,
    Operation,
    Age,
    Providers,
}

const COLUMNS: [Column; 5] = [
    Column::Intent,
    Column::Tenant,
    Column::Operation,
    Column::Age,
    Column::Providers,
];

impl Column {
    /// The header's Fluent id.
    fn key(self) -> &'static str {
        match self {
            Column::Intent => "table-column-intent",
            Column::Tenant => "table-column-tenant",
            Column::Operation => "table-column-operation",
            Column::Age => "dashboard-board-age",
            Column::Providers => "table-column-providers",
        }
    }
}

/// Draw the board; returns the id of the intent clicked. Ages above `limit_secs` are drawn
/// in the threshold colour.
pub fn board_ui(
    ui: &mut egui::Ui,
    i18n: &Localizer,
    rows: &[IntentRow],
    now_ms: u64,
    limit_secs: Option<u64>,
) -> Option<String> {
    let mut clicked = None;
    let dir = i18n.direction();
    let mut order = COLUMNS;
    if i18n.is_rtl() {
        order.reverse();
    }
    egui::Grid::new("dashboard-board")
        .striped(true)
        .num_columns(order.len())
        .show(ui, |ui| {
            let strong = ui.visuals().strong_text_color();
            for column in order {
                ui.add(text::BidiLabel::new(&i18n.tr(column.key()), dir).color(strong));
            }
            ui.end_row();
            for row in rows {
                for column in order {
                    match column {
                        Column::Intent => {
                            if ui
                                .button(egui::RichText::new(row.short_id()).monospace())
                                .on_hover_text(row.id.as_str())
                                .clicked()
                            {
                                clicked = Some(row.id.to_string());
                            }
                        }
                        Column::Tenant => {
                            crate::console::views::format::user_label(ui, row.tenant.as_str());
                        }
                        Column::Operation => {
                            crate::console::views::format::user_label(ui, &row.operation);
                        }
                        Column::Age => {
                            let age_ms = row
                                .indeterminate_since_ms
                                .map_or(0, |since| now_ms.saturating_sub(since));
                            let over = limit_secs.is_some_and(|l| age_ms / 1000 > l);
                            let color = if over {
                                theme::THRESHOLD
                            } else {
                                ui.visuals().text_color()
                            };
                            let age = duration_ms(i18n, age_ms as i64);
                            ui.add(text::BidiLabel::new(&age, dir).color(color));
                        }
                        Column::Providers => {
                            crate::console::views::format::user_label(
                                ui,
                                &row.providers.join(", "),
                            );
                        }
                    }
                }
                ui.end_row();
            }
        });
    clicked
}
