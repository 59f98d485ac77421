//! Small stateless widgets of the intent view: localized text that draws right in Persian
//! (through [`crate::console::text`]), ids in monospace with a copy button, and field rows.
//! Ids, keys and JSON are never translated and never get Persian digits.

use egui::{Color32, Response, RichText};

use super::format;
pub use super::format::{needs_bidi, wt, wt_colored};
use crate::console::text::BidiLabel;
use crate::i18n::Localizer;

/// A localized heading.
pub fn heading(ui: &mut egui::Ui, i18n: &Localizer, text: &str) -> Response {
    if needs_bidi(i18n, text) {
        let font = egui::TextStyle::Heading.resolve(ui.style());
        let color = ui.visuals().strong_text_color();
        ui.add(
            BidiLabel::new(text, i18n.direction())
                .font(font)
                .color(color),
        )
    } else {
        ui.heading(text)
    }
}

/// A localized paragraph, wrapped to the available width.
pub fn say(ui: &mut egui::Ui, i18n: &Localizer, text: &str) -> Response {
    if needs_bidi(i18n, text) {
        ui.add(BidiLabel::new(text, i18n.direction()).wrap())
    } else {
        ui.add(egui::Label::new(text).wrap())
    }
}

/// [`say`] in a colour.
pub fn say_colored(ui: &mut egui::Ui, i18n: &Localizer, text: &str, color: Color32) -> Response {
    if needs_bidi(i18n, text) {
        ui.add(BidiLabel::new(text, i18n.direction()).color(color).wrap())
    } else {
        ui.add(egui::Label::new(RichText::new(text).color(color)).wrap())
    }
}

/// [`say`] in bold.
pub fn say_strong(ui: &mut egui::Ui, i18n: &Localizer, text: &str) -> Response {
    let color = ui.visuals().strong_text_color();
    say_colored(ui, i18n, text, color)
}

/// An id, key or hash in monospace, followed by a button that copies it (from the right in
/// a right-to-left locale; the id itself always reads left to right).
pub fn copyable_ui(ui: &mut egui::Ui, i18n: &Localizer, value: &str) {
    let add = |ui: &mut egui::Ui| {
        // The button's room is kept first, so a long id is cut to what is left rather than
        // pushing the button past the edge (and the panel wider).
        let copy = i18n.tr("text-copy");
        let font = egui::TextStyle::Button.resolve(ui.style());
        let button = crate::console::text::measure(ui, &copy, i18n.direction(), &font)
            + 2.0 * ui.spacing().button_padding.x
            + ui.spacing().item_spacing.x;
        let room = (ui.available_width() - button).max(0.0);
        let label = egui::Label::new(RichText::new(value).monospace()).truncate();
        let line = ui.spacing().interact_size.y;
        ui.allocate_ui(egui::vec2(room, line), |ui| {
            ui.add(label).on_hover_text(value)
        });
        if !value.is_empty()
            && format::small_button(ui, i18n, &i18n.tr("text-copy"))
                .on_hover_text(value)
                .clicked()
        {
            ui.ctx().copy_text(value.to_string());
        }
    };
    if i18n.is_rtl() {
        let layout = egui::Layout::right_to_left(egui::Align::Center);
        let size = egui::vec2(ui.available_width(), ui.spacing().interact_size.y);
        ui.allocate_ui_with_layout(size, layout, add);
    } else {
        ui.horizontal(add);
    }
}

/// A row of widgets that runs from the right in a right-to-left locale, wrapping.
pub fn row<R>(ui: &mut egui::Ui, i18n: &Localizer, add: impl FnOnce(&mut egui::Ui) -> R) -> R {
    if i18n.is_rtl() {
        let layout = egui::Layout::right_to_left(egui::Align::Center).with_main_wrap(true);
        // One line tall to begin with; it grows as it wraps, never to the whole panel.
        let size = egui::vec2(ui.available_width(), ui.spacing().interact_size.y);
        ui.allocate_ui_with_layout(size, layout, add).inner
    } else {
        ui.horizontal_wrapped(add).inner
    }
}

/// A column whose widgets hug the right edge in a right-to-left locale.
pub fn column<R>(ui: &mut egui::Ui, i18n: &Localizer, add: impl FnOnce(&mut egui::Ui) -> R) -> R {
    if i18n.is_rtl() {
        ui.with_layout(egui::Layout::top_down(egui::Align::Max), add)
            .inner
    } else {
        add(ui)
    }
}

/// The name-and-value fields of the envelope and of an attempt, rows added by
/// [`grid_row`] and the rows built on it. Left to right it is a striped egui grid. Right to
/// left, where egui's grid cannot run from the right, each row is laid out from the right
/// edge: the name in a column as wide as the widest name, its value starting right beside
/// it, right-aligned.
pub fn fields_grid(
    ui: &mut egui::Ui,
    i18n: &Localizer,
    id_salt: &str,
    add: impl FnOnce(&mut egui::Ui),
) {
    if !i18n.is_rtl() {
        egui::Grid::new(id_salt)
            .num_columns(2)
            .striped(true)
            .show(ui, add);
        return;
    }
    ui.push_id(id_salt, |ui| {
        let key = names_key(ui);
        let widest = ui
            .data(|d| d.get_temp::<RtlFields>(key))
            .unwrap_or_default()
            .widest;
        ui.data_mut(|d| {
            d.insert_temp(
                key,
                RtlFields {
                    widest,
                    seen: 0.0,
                    row: 0,
                },
            )
        });
        add(ui);
        let changed = ui.data_mut(|d| {
            let fields = d.get_temp_mut_or_default::<RtlFields>(key);
            let changed = fields.widest != fields.seen;
            fields.widest = fields.seen;
            changed
        });
        if changed {
            // The names' column was not known yet (a first frame): draw it again at once
            // rather than showing ragged rows until the next repaint.
            ui.ctx()
                .request_discard("the names' column of a right-to-left fields grid");
        }
    });
}

/// What a right-to-left [`fields_grid`] keeps between its rows and frames.
#[derive(Debug, Clone, Copy, Default)]
struct RtlFields {
    /// The widest name of the last frame: the names' column.
    widest: f32,
    /// The widest name so far this frame.
    seen: f32,
    /// Rows drawn so far this frame (for the stripes).
    row: usize,
}

fn names_key(ui: &egui::Ui) -> egui::Id {
    ui.scope_id().with("rtl_fields")
}

/// One row of [`fields_grid`]: a localized name and a value drawn by `value`.
pub fn grid_row(
    ui: &mut egui::Ui,
    i18n: &Localizer,
    name_key: &str,
    value: impl FnOnce(&mut egui::Ui),
) {
    row_of(ui, i18n, &i18n.tr(name_key), false, value);
}

/// One row of [`fields_grid`] named by text a user or agent wrote (an argument's path).
pub fn grid_row_named(
    ui: &mut egui::Ui,
    i18n: &Localizer,
    name: &str,
    value: impl FnOnce(&mut egui::Ui),
) {
    row_of(ui, i18n, name, true, value);
}

fn row_of(
    ui: &mut egui::Ui,
    i18n: &Localizer,
    name: &str,
    users: bool,
    value: impl FnOnce(&mut egui::Ui),
) {
    let name_ui = |ui: &mut egui::Ui| {
        if users {
            user_name(ui, name)
        } else {
            format::label(ui, i18n, name)
        }
    };
    if !i18n.is_rtl() {
        name_ui(ui);
        value(ui);
        ui.end_row();
        return;
    }
    let key = names_key(ui);
    let fields = ui
        .data(|d| d.get_temp::<RtlFields>(key))
        .unwrap_or_default();
    let stripe = ui.painter().add(egui::Shape::Noop);
    let gap = ui.spacing().item_spacing.x;
    let width = ui.available_width();
    let line = ui.spacing().interact_size.y;
    // A very long name (an argument's deep path) is cut rather than leaving its value no room.
    let most = width * 0.4;
    let names_width = fields.widest.min(most);
    let rtl = egui::Layout::right_to_left(egui::Align::Min);
    let row = ui.allocate_ui_with_layout(egui::vec2(width, line), rtl, |ui| {
        let names = ui.allocate_ui_with_layout(egui::vec2(names_width, line), rtl, |ui| {
            ui.set_min_width(names_width);
            ui.set_max_width(most);
            name_ui(ui).rect.width()
        });
        ui.add_space(gap);
        let rest = egui::vec2(ui.available_width(), line);
        ui.allocate_ui_with_layout(rest, egui::Layout::top_down(egui::Align::Max), value);
        names.inner
    });
    if fields.row % 2 == 1 {
        let rows = row
            .response
            .rect
            .y_range()
            .expand(ui.spacing().item_spacing.y / 2.0);
        let rect = egui::Rect::from_x_y_ranges(ui.max_rect().x_range(), rows);
        let color = ui.visuals().faint_bg_color;
        ui.painter()
            .set(stripe, egui::Shape::rect_filled(rect, 2.0, color));
    }
    ui.data_mut(|d| {
        let fields = d.get_temp_mut_or_default::<RtlFields>(key);
        fields.seen = fields.seen.max(row.inner);
        fields.row += 1;
    });
}

/// A name a user or agent wrote, cut at its logical end when it is wider than the room.
fn user_name(ui: &mut egui::Ui, name: &str) -> Response {
    if crate::i18n::bidi::has_rtl(name) {
        ui.add(BidiLabel::new(name, crate::i18n::bidi::Direction::Auto).truncate())
    } else {
        ui.add(egui::Label::new(name).truncate())
    }
}

/// One row of [`fields_grid`]: a localized name and a value in the interface's words.
pub fn field_row(ui: &mut egui::Ui, i18n: &Localizer, name_key: &str, value: &str) {
    grid_row(ui, i18n, name_key, |ui| {
        // Wrapped in logical order, so a long Persian value never widens the panel.
        say(ui, i18n, value);
    });
}

/// One row of [`fields_grid`]: a localized name and text a user or agent wrote, wrapped, in
/// its own direction.
pub fn user_row(ui: &mut egui::Ui, i18n: &Localizer, name_key: &str, value: &str) {
    grid_row(ui, i18n, name_key, |ui| {
        user_say(ui, value);
    });
}

/// Text a user or agent wrote, wrapped to the available width, in its own direction (see
/// [`format::user_wt`]).
pub fn user_say(ui: &mut egui::Ui, text: &str) -> Response {
    if crate::i18n::bidi::has_rtl(text) {
        ui.add(BidiLabel::new(text, crate::i18n::bidi::Direction::Auto).wrap())
    } else {
        ui.add(egui::Label::new(text).wrap())
    }
}

/// One row of a two-column grid whose value is an id to copy.
pub fn id_row(ui: &mut egui::Ui, i18n: &Localizer, name_key: &str, value: &str) {
    grid_row(ui, i18n, name_key, |ui| copyable_ui(ui, i18n, value));
}

/// The message `prefix-<raw>` (underscores in `raw` read as dashes), or `raw` itself when
/// this console has no words for it (a name from a newer coordinator).
pub fn tr_named(i18n: &Localizer, prefix: &str, raw: &str) -> String {
    let key = format!("{prefix}-{}", raw.replace('_', "-"));
    let text = i18n.tr(&key);
    if text == key { raw.to_string() } else { text }
}

/// A unix time as the operator reads it: the locale's date, hours, minutes, seconds and
/// milliseconds in the user's zone (as the dashboard's axes), with the offset written so it
/// is never ambiguous when incident reports compare machines.
pub fn instant(i18n: &Localizer, unix_ms: u64) -> String {
    let offset = super::charts::time_axis::local_offset_secs(unix_ms);
    let base = i18n.datetime(unix_ms, offset);
    let seconds = (unix_ms / 1000) % 60;
    let millis = unix_ms % 1000;
    let zone = utc_offset(offset);
    super::format::localize_digits(i18n, &format!("{base}:{seconds:02}.{millis:03} {zone}"))
}

/// `UTC`, or `UTC+03:30` / `UTC-05:00` for an offset in seconds.
pub fn utc_offset(offset_secs: i32) -> String {
    if offset_secs == 0 {
        return "UTC".to_string();
    }
    let sign = if offset_secs < 0 { '-' } else { '+' };
    let minutes = offset_secs.unsigned_abs() / 60;
    format!("UTC{sign}{:02}:{:02}", minutes / 60, minutes % 60)
}

#[cfg(test)]
mod tests {
    use super::utc_offset;

    #[test]
    fn offsets_are_said_with_sign_hours_and_minutes() {
        assert_eq!(utc_offset(0), "UTC");
        assert_eq!(utc_offset(12_600), "UTC+03:30");
        assert_eq!(utc_offset(-18_000), "UTC-05:00");
    }
}
