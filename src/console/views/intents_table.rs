//! The intents table: virtualised (only the rows on screen are built), server-paged with
//! cursors (the next page loads as the operator nears the end), sortable by the columns
//! the coordinator can order by. State is text and colour; `indeterminate` has its own
//! colour and never reads as failed.

use egui::{RichText, Sense};
use egui_extras::{Column, TableBuilder};

use super::format::{self, BidiHover, wt};
use crate::console::app::ConsoleApp;
use crate::console::commands::ConsoleCommand;
use crate::console::filters::Filters;
use crate::console::model::{IntentRow, StateName};
use crate::console::theme;

const ROW_HEIGHT: f32 = 22.0;
/// Start loading the next page when this many rows are left below the view.
const PREFETCH_ROWS: usize = 60;

/// The columns, with the sort key a click on their header sets (if any).
const COLUMNS: &[(&str, Option<&str>)] = &[
    ("table-column-intent", None),
    ("table-column-tenant", None),
    ("table-column-operation", None),
    ("table-column-state", None),
    ("table-column-attempts", Some("attempts")),
    ("table-column-age", Some("created")),
    ("table-column-deadline", Some("deadline")),
    ("table-column-providers", None),
    ("table-column-receipt", None),
    ("table-column-locale", None),
];

pub fn intents_table_ui(app: &mut ConsoleApp, ui: &mut egui::Ui) {
    header_line_ui(app, ui);
    // A table wider than the panel scrolls sideways.
    let rtl = app.i18n.is_rtl();
    let mut sideways = egui::ScrollArea::horizontal()
        .id_salt("intents-sideways")
        .stick_to_right(rtl);
    // After the language changes (or at start), it starts from the first columns (the id,
    // the state): the right end in Persian. Not in the frame of the change itself: the
    // table re-measures its columns then and reports no width to scroll by.
    let settled = app.table.drawn_rtl == Some(rtl);
    if !settled {
        app.table.start_sideways = true;
    } else if app.table.start_sideways {
        let end = if rtl { app.table.sideways_end } else { 0.0 };
        sideways = sideways.horizontal_scroll_offset(end);
    }
    let shown = sideways.show(ui, |ui| table_ui(app, ui));
    let end = shown.content_size.x - shown.inner_rect.width();
    if end.is_finite() {
        app.table.sideways_end = end.max(0.0);
        if settled {
            app.table.start_sideways = false;
        }
    }
}

fn table_ui(app: &mut ConsoleApp, ui: &mut egui::Ui) {
    let now = app.now_ms();
    let rows = app.table.rows.len();
    let mut clicked: Option<String> = None;
    let mut sort_to: Option<String> = None;
    let mut max_row_shown = 0usize;
    let mut first_row_shown = usize::MAX;
    let current_sort = app.state.filters.sort_or_default().to_string();
    let rtl = app.i18n.is_rtl();
    // Cells are read, not selected: a click anywhere on a row opens its intent.
    ui.style_mut().interaction.selectable_labels = false;
    let mut builder = TableBuilder::new(ui)
        .id_salt("intents")
        .striped(true)
        .sense(Sense::click())
        .cell_layout(if rtl {
            egui::Layout::right_to_left(egui::Align::Center)
        } else {
            egui::Layout::left_to_right(egui::Align::Center)
        })
        .min_scrolled_height(0.0);
    let widths = [
        120.0, 90.0, 150.0, 110.0, 70.0, 105.0, 120.0, 130.0, 110.0, 50.0,
    ];
    // Column widths are kept by position; when the order flips with the language they would
    // land on the wrong columns, so they start again from their initial sizes.
    if app.table.drawn_rtl.is_some_and(|was| was != rtl) {
        builder.reset();
    }
    app.table.drawn_rtl = Some(rtl);
    let order: Vec<usize> = if rtl {
        (0..COLUMNS.len()).rev().collect()
    } else {
        (0..COLUMNS.len()).collect()
    };
    // In Persian a table narrower than the panel hugs the right edge: its leftmost column
    // takes whatever width the others leave, as the space after the last column does in
    // English. Only while it fits: a filling column in a table that scrolls sideways kept
    // the scroll from reaching the right end.
    let fill = rtl && app.table.sideways_end <= 0.0;
    for (n, &c) in order.iter().enumerate() {
        let column = if fill && n == 0 {
            Column::remainder()
        } else {
            Column::initial(widths[c]).resizable(true)
        };
        builder = builder.column(column.at_least(40.0).clip(true));
    }
    builder
        .header(ROW_HEIGHT, |mut header| {
            for &c in &order {
                let (key, sort) = COLUMNS[c];
                header.col(|ui| {
                    let title = app.i18n.tr(key);
                    if let Some(sort) = sort {
                        let ascending = if current_sort == sort {
                            Some(true)
                        } else if current_sort.strip_prefix('-') == Some(sort) {
                            Some(false)
                        } else {
                            None
                        };
                        let shown = egui::Button::new(wt(&app.i18n, ui, &title)).frame(false);
                        let response = ui.add(shown);
                        // What a screen reader says: the column, and how it is sorted.
                        let said = match ascending {
                            Some(up) => {
                                sort_arrow(ui, up);
                                let key = if up {
                                    "table-sorted-ascending"
                                } else {
                                    "table-sorted-descending"
                                };
                                app.i18n.tr_args(key, &[("column", title.as_str().into())])
                            }
                            None => title.clone(),
                        };
                        format::relabel(&response, &said);
                        if response.clicked() {
                            let descending = format!("-{sort}");
                            sort_to = Some(if current_sort == descending {
                                sort.to_string()
                            } else {
                                descending
                            });
                        }
                    } else {
                        format::label(ui, &app.i18n, &title);
                    }
                });
            }
        })
        .body(|body| {
            body.rows(ROW_HEIGHT, rows, |mut row| {
                let index = row.index();
                max_row_shown = max_row_shown.max(index);
                first_row_shown = first_row_shown.min(index);
                let intent = &app.table.rows[index];
                let open = app
                    .open
                    .as_ref()
                    .is_some_and(|o| o.id == intent.id.as_str());
                row.set_selected(open);
                for &c in &order {
                    row.col(|ui| {
                        if app.table.is_changed(intent.id.as_str()) {
                            ui.painter()
                                .rect_filled(ui.max_rect(), 0.0, theme::CHANGED_ROW);
                        }
                        cell_ui(app, ui, intent, c, now);
                    });
                }
                if row.response().clicked() {
                    clicked = Some(intent.id.to_string());
                }
            });
        });
    if let Some(id) = clicked {
        app.queue(ConsoleCommand::OpenIntent(id));
    }
    if let Some(sort) = sort_to {
        let filters = Filters {
            sort,
            ..app.state.filters.clone()
        };
        app.queue(ConsoleCommand::SetFilters(filters));
    }
    if first_row_shown != usize::MAX {
        app.table.first_row_shown = first_row_shown;
    }
    if rows > 0 && max_row_shown + PREFETCH_ROWS >= rows && app.table.next_cursor.is_some() {
        app.queue(ConsoleCommand::LoadMore);
    }
}

/// A small triangle after a column's title: pointing up for ascending, down for descending.
/// Painted, not a character: neither Vazirmatn nor egui's default font has arrows, and a
/// Latin "v" reads as the Persian digit seven.
fn sort_arrow(ui: &mut egui::Ui, ascending: bool) {
    let (rect, _) = ui.allocate_exact_size(egui::vec2(8.0, 8.0), Sense::hover());
    let c = rect.center();
    let h = 3.5;
    let (tip, base) = if ascending { (-h, h) } else { (h, -h) };
    let points = vec![
        egui::pos2(c.x, c.y + tip),
        egui::pos2(c.x + h, c.y + base),
        egui::pos2(c.x - h, c.y + base),
    ];
    let color = ui.visuals().strong_text_color();
    ui.painter().add(egui::Shape::convex_polygon(
        points,
        color,
        egui::Stroke::NONE,
    ));
}

fn header_line_ui(app: &ConsoleApp, ui: &mut egui::Ui) {
    super::intent_widgets::row(ui, &app.i18n, |ui| {
        let shown = app.i18n.int(app.table.rows.len() as i64);
        let total = app.i18n.int(app.table.total as i64);
        let plus = if app.table.total_exact { "" } else { "+" };
        let line = format!("{} {shown} / {total}{plus}", app.i18n.tr("table-showing"));
        format::label(ui, &app.i18n, &line);
        if app.table.loading {
            ui.spinner();
        }
        if app.table.from_cache {
            format::label_colored(
                ui,
                &app.i18n,
                &app.i18n.tr("table-from-cache"),
                theme::QUIET,
            );
        }
        if let Some(error) = &app.table.error {
            format::label_colored(ui, &app.i18n, error, theme::REJECTED);
        }
    });
}

fn cell_ui(app: &ConsoleApp, ui: &mut egui::Ui, intent: &IntentRow, column: usize, now: u64) {
    let i18n = &app.i18n;
    match column {
        0 => {
            let response = ui
                .label(RichText::new(intent.short_id()).monospace())
                .on_hover_text(intent.id.as_str());
            response.context_menu(|ui| {
                if format::button(ui, i18n, &i18n.tr("action-copy-id")).clicked() {
                    ui.ctx().copy_text(intent.id.to_string());
                    ui.close();
                }
                if format::button(ui, i18n, &i18n.tr("action-copy-key")).clicked() {
                    ui.ctx().copy_text(intent.action_key.to_string());
                    ui.close();
                }
            });
            if intent.paused {
                ui.colored_label(theme::PAUSED, "II")
                    .bidi_hover(i18n, &i18n.tr("state-paused"));
            }
        }
        1 => {
            ui.label(intent.tenant.as_str());
        }
        2 => {
            ui.label(&intent.operation);
        }
        3 => {
            let label = match &intent.state {
                StateName::Known(s) => i18n.tr(&format!("state-{}", s.as_str())),
                StateName::Unknown(raw) => format!("{raw} ({})", i18n.tr("state-unknown")),
            };
            format::label_colored(ui, i18n, &label, theme::state_color(&intent.state));
        }
        4 => {
            let text = i18n.tr_args(
                "table-attempts-of",
                &[
                    ("used", intent.attempts.into()),
                    ("max", intent.max_attempts.into()),
                ],
            );
            let color = if intent.attempts > 1 {
                theme::INDETERMINATE
            } else {
                ui.visuals().text_color()
            };
            format::label_colored(ui, i18n, &text, color);
        }
        5 => {
            let age = super::format::duration_ms(i18n, now as i64 - intent.created_at_ms as i64);
            // On hover, when it was created: in the locale's calendar (Solar Hijri in
            // Persian), then the Gregorian date.
            format::label(ui, i18n, &age).on_hover_ui(|ui| {
                let created = intent.created_at_ms;
                let text = format!(
                    "{}\n{}",
                    super::intent_widgets::instant(i18n, created),
                    i18n.date_tooltip(
                        created,
                        super::charts::time_axis::local_offset_secs(created)
                    )
                );
                format::label(ui, i18n, &text);
            });
        }
        6 => {
            let left = intent.deadline_at_ms as i64 - now as i64;
            if intent.state.known().is_some_and(|s| s.is_terminal()) {
                ui.label("—");
            } else {
                let left = super::format::duration_ms(i18n, left);
                format::label(ui, i18n, &left);
            }
        }
        7 => {
            ui.label(intent.providers.join(", "));
        }
        8 => {
            ui.label(RichText::new(intent.downstream_ref.clone().unwrap_or_default()).monospace());
        }
        _ => {
            ui.label(intent.locale.as_str());
        }
    }
}
