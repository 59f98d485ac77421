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

/// An id, key or hash in monospace, followed by a button that copies it.
pub fn copyable_ui(ui: &mut egui::Ui, i18n: &Localizer, value: &str) {
    ui.horizontal(|ui| {
        ui.add(egui::Label::new(RichText::new(value).monospace()).truncate())
            .on_hover_text(value);
        if !value.is_empty()
            && format::small_button(ui, i18n, &i18n.tr("text-copy"))
                .on_hover_text(value)
                .clicked()
        {
            ui.ctx().copy_text(value.to_string());
        }
    });
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

/// One row of a two-column grid: a name and a value drawn by `value`. In a right-to-left
/// locale the value comes first, so the name stands on the right.
pub fn grid_row(
    ui: &mut egui::Ui,
    i18n: &Localizer,
    name_key: &str,
    value: impl FnOnce(&mut egui::Ui),
) {
    let name = i18n.tr(name_key);
    if i18n.is_rtl() {
        value(ui);
        format::label(ui, i18n, &name);
    } else {
        format::label(ui, i18n, &name);
        value(ui);
    }
    ui.end_row();
}

/// One row of a two-column grid: a localized name and a plain value.
pub fn field_row(ui: &mut egui::Ui, i18n: &Localizer, name_key: &str, value: &str) {
    grid_row(ui, i18n, name_key, |ui| {
        let shown = wt(i18n, ui, value);
        format::said(i18n, value, ui.add(egui::Label::new(shown).wrap()));
    });
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
