//! The intents table: virtualised (only the rows on screen are built), server-paged with
//! cursors (the next page loads as the operator nears the end), sortable by the columns
//! the coordinator can order by. State is text and colour; `indeterminate` has its own
//! colour and never reads as failed.

use egui::{RichText, Sense};
use egui_extras::{Column, TableBuilder};

use super::format::{self, BidiHover, wt};
use crate::console::actions::Actions;
use crate::console::commands::ConsoleCommand;
use crate::console::filters::Filters;
use crate::console::model::{IntentRow, StateName};
use crate::console::table::TableData;
use crate::console::theme;
use crate::i18n::Localizer;

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

/// What the table reads, and its rows with where it was scrolled and measured.
pub struct TableContext<'a> {
    pub i18n: &'a Localizer,
    pub table: &'a mut TableData,
    pub filters: &'a Filters,
    /// The open intent's id, drawn selected.
    pub open_id: Option<&'a str>,
    pub now_ms: u64,
}

pub fn intents_table_ui(ui: &mut egui::Ui, mut cx: TableContext<'_>, actions: &mut Actions) {
    header_line_ui(&cx, ui);
    // A table wider than the panel scrolls sideways.
    let rtl = cx.i18n.is_rtl();
    let mut sideways = egui::ScrollArea::horizontal()
        .id_salt("intents-sideways")
        .stick_to_right(rtl);
    // After the language changes (or at start), it starts from the first columns (the id,
    // the state): the right end in Persian. Not in the frame of the change itself: the
    // table re-measures its columns then and reports no width to scroll by.
    let settled = cx.table.drawn_rtl == Some(rtl);
    if !settled {
        cx.table.start_sideways = true;
    } else if cx.table.start_sideways {
        let end = if rtl { cx.table.sideways_end } else { 0.0 };
        sideways = sideways.horizontal_scroll_offset(end);
    } else if rtl {
        let end = (cx.table.sideways_content - ui.available_width()).max(0.0);
        sideways = sideways.horizontal_scroll_offset((end - cx.table.sideways_from_end).max(0.0));
    }
    let shown = sideways.show(ui, |ui| table_ui(&mut cx, ui, actions));
    let end = shown.content_size.x - shown.inner_rect.width();
    if end.is_finite() {
        cx.table.sideways_end = end.max(0.0);
        cx.table.sideways_content = shown.content_size.x;
        cx.table.sideways_from_end = (end.max(0.0) - shown.state.clamped_offset().x).max(0.0);
        if settled {
            cx.table.start_sideways = false;
        }
    }
}

fn table_ui(cx: &mut TableContext<'_>, ui: &mut egui::Ui, actions: &mut Actions) {
    let now = cx.now_ms;
    let rows = cx.table.rows.len();
    let mut clicked: Option<String> = None;
    let mut sort_to: Option<String> = None;
    let mut max_row_shown = 0usize;
    let mut first_row_shown = usize::MAX;
    let current_sort = cx.filters.sort_or_default().to_string();
    let rtl = cx.i18n.is_rtl();
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
    if cx.table.drawn_rtl.is_some_and(|was| was != rtl) {
        builder.reset();
    }
    cx.table.drawn_rtl = Some(rtl);
    let order: Vec<usize> = if rtl {
        (0..COLUMNS.len()).rev().collect()
    } else {
        (0..COLUMNS.len()).collect()
    };
    // In Persian a table narrower than the panel hugs the right edge: its leftmost column
    // takes whatever width the others leave, as the space after the last column does in
    // English. Only while it fits: a filling column in a table that scrolls sideways kept
    // the scroll from reaching the right end.
    let fill = rtl && cx.table.sideways_end <= 0.0;
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
                    let title = cx.i18n.tr(key);
                    if let Some(sort) = sort {
                        let ascending = if current_sort == sort {
                            Some(true)
                        } else if current_sort.strip_prefix('-') == Some(sort) {
                            Some(false)
                        } else {
                            None
                        };
                        let shown = egui::Button::new(wt(cx.i18n, ui, &title)).frame(false);
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
                                cx.i18n.tr_args(key, &[("column", title.as_str().into())])
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
                        format::label(ui, cx.i18n, &title);
                    }
                });
            }
        })
        .body(|body| {
            body.rows(ROW_HEIGHT, rows, |mut row| {
                let index = row.index();
                max_row_shown = max_row_shown.max(index);
                first_row_shown = first_row_shown.min(index);
                let intent = &cx.table.rows[index];
                let open = cx.open_id == Some(intent.id.as_str());
                row.set_selected(open);
                for &c in &order {
                    row.col(|ui| {
                        if cx.table.is_changed(intent.id.as_str()) {
                            ui.painter()
                                .rect_filled(ui.max_rect(), 0.0, theme::CHANGED_ROW);
                        }
                        cell_ui(cx.i18n, ui, intent, c, now);
                    });
                }
                if row.response().clicked() {
                    clicked = Some(intent.id.to_string());
                }
            });
        });
    if let Some(id) = clicked {
        actions.command(ConsoleCommand::OpenIntent(id));
    }
    if let Some(sort) = sort_to {
        let filters = Filters {
            sort,
            ..cx.filters.clone()
        };
        actions.command(ConsoleCommand::SetFilters(filters));
    }
    if first_row_shown != usize::MAX {
        cx.table.first_row_shown = first_row_shown;
    }
    if rows > 0 && max_row_shown + PREFETCH_ROWS >= rows && cx.table.next_cursor.is_some() {
        actions.command(ConsoleCommand::LoadMore);
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

fn header_line_ui(cx: &TableContext<'_>, ui: &mut egui::Ui) {
    super::intent_widgets::row(ui, cx.i18n, |ui| {
        let shown = cx.i18n.int(cx.table.rows.len() as i64);
        let total = cx.i18n.int(cx.table.total as i64);
        let plus = if cx.table.total_exact { "" } else { "+" };
        let line = format!("{} {shown} / {total}{plus}", cx.i18n.tr("table-showing"));
        format::label(ui, cx.i18n, &line);
        if cx.table.loading {
            ui.spinner();
        }
        if cx.table.from_cache {
            format::label_colored(ui, cx.i18n, &cx.i18n.tr("table-from-cache"), theme::QUIET);
        }
        if let Some(error) = &cx.table.error {
            format::label_colored(ui, cx.i18n, error, theme::REJECTED);
        }
    });
}

fn cell_ui(i18n: &Localizer, ui: &mut egui::Ui, intent: &IntentRow, column: usize, now: u64) {
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
            format::user_label(ui, intent.tenant.as_str());
        }
        2 => {
            format::user_label(ui, &intent.operation);
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
            format::user_label(ui, &intent.providers.join(", "));
        }
        8 => {
            ui.label(RichText::new(intent.downstream_ref.clone().unwrap_or_default()).monospace());
        }
        _ => {
            ui.label(intent.locale.as_str());
        }
    }
}
