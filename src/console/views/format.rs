//! Small formatting helpers shared by the views: durations and times as an operator reads
//! them. Numbers go through the localizer so Persian shows Persian digits.

use crate::i18n::Localizer;

/// A duration in milliseconds with its two largest units (`3d 4h`, `12m 5s`, `800ms`), unit
/// names and digits in the locale's words.
pub fn duration_ms(i18n: &Localizer, ms: i64) -> String {
    let sign = if ms < 0 { "-" } else { "" };
    let ms = ms.unsigned_abs();
    // Persian writes a space between a number and its unit; English abbreviations do not.
    let gap = if i18n.is_rtl() { " " } else { "" };
    let unit = |key: &str| format!("{gap}{}", i18n.tr(key));
    let (big, big_unit, small, small_unit) = if ms < 1_000 {
        return localize_digits(i18n, &format!("{sign}{ms}{}", unit("unit-ms")));
    } else if ms < 60_000 {
        return localize_digits(i18n, &format!("{sign}{}{}", ms / 1_000, unit("unit-s")));
    } else if ms < 3_600_000 {
        (ms / 60_000, "unit-m", (ms / 1_000) % 60, "unit-s")
    } else if ms < 86_400_000 {
        (ms / 3_600_000, "unit-h", (ms / 60_000) % 60, "unit-m")
    } else {
        (ms / 86_400_000, "unit-d", (ms / 3_600_000) % 24, "unit-h")
    };
    localize_digits(
        i18n,
        &format!("{sign}{big}{} {small}{}", unit(big_unit), unit(small_unit)),
    )
}

/// Text with the locale's digits: Persian digits in the Persian UI. Never for ids, keys or
/// JSON, which always keep Latin digits.
pub fn localize_digits(i18n: &Localizer, text: &str) -> String {
    if i18n.locale() == crate::domain::Locale::FaIr {
        crate::i18n::digits::to_persian_digits(text)
    } else {
        text.to_string()
    }
}

/// Text for any widget, drawn right in the current locale: through the bidi layout in a
/// right-to-left locale or when the text itself holds Persian (joined letters, right word
/// order, Latin ids kept left to right), as plain text otherwise — a Persian reason or
/// purpose reads the same in the English console. Every view draws user-visible text
/// through this.
pub fn wt(i18n: &Localizer, ui: &egui::Ui, text: &str) -> egui::WidgetText {
    if needs_bidi(i18n, text) {
        crate::console::text::widget_text(ui, text, i18n.direction())
    } else {
        text.into()
    }
}

/// Whether `text` must go through the bidi layout: in a right-to-left locale always, in a
/// left-to-right one when it holds Persian.
pub fn needs_bidi(i18n: &Localizer, text: &str) -> bool {
    i18n.is_rtl() || crate::i18n::bidi::has_rtl(text)
}

/// Text a user or agent wrote (a purpose, an argument, a reason, evidence, a note) for any
/// widget: laid out in the direction of its own first strong character whatever the
/// interface's locale, as HTML's `dir=auto` does. A Persian purpose reads in its own order in
/// the English console, and a Latin supplier id stays left to right in the Persian one.
/// Interface strings go through [`wt`].
pub fn user_wt(ui: &egui::Ui, text: &str) -> egui::WidgetText {
    if crate::i18n::bidi::has_rtl(text) {
        crate::console::text::widget_text(ui, text, crate::i18n::bidi::Direction::Auto)
    } else {
        text.into()
    }
}

/// Text a user or agent wrote, ready to go inside an interface sentence: isolated so it keeps
/// its own direction and order, wherever the sentence goes through the bidi layout (always
/// in a right-to-left locale, and in a left-to-right one when the text holds Persian). Plain
/// Latin text in the English console is left as it is, so no label meets a mark it cannot
/// draw.
pub fn isolate(i18n: &Localizer, text: &str) -> String {
    if needs_bidi(i18n, text) {
        crate::i18n::bidi::isolate_auto(text)
    } else {
        text.to_string()
    }
}

/// A label of text a user or agent wrote, in its own direction (see [`user_wt`]).
pub fn user_label(ui: &mut egui::Ui, text: &str) -> egui::Response {
    let response = ui.label(user_wt(ui, text));
    if crate::i18n::bidi::has_rtl(text) {
        relabel(&response, text);
    }
    response
}

/// [`wt`] in a colour.
pub fn wt_colored(
    i18n: &Localizer,
    ui: &egui::Ui,
    text: &str,
    color: egui::Color32,
) -> egui::WidgetText {
    if needs_bidi(i18n, text) {
        let font = egui::TextStyle::Body.resolve(ui.style());
        let job = crate::console::text::layout_job(text, i18n.direction(), font, color);
        egui::WidgetText::Galley(ui.painter().layout_job(job))
    } else {
        egui::RichText::new(text).color(color).into()
    }
}

/// `response` of a widget drawn with [`wt`] text, its accessibility label set back to the
/// logical `text`: egui labels a widget with its galley's text, which after the bidi layout
/// holds the pieces in visual order (a screen reader would read a mixed sentence backwards).
pub fn said(i18n: &Localizer, text: &str, response: egui::Response) -> egui::Response {
    if needs_bidi(i18n, text) {
        relabel(&response, text);
    }
    response
}

/// Give `response`'s widget `text` as what a screen reader says of it.
pub fn relabel(response: &egui::Response, text: &str) {
    response.ctx.accesskit_node_builder(response.id, |node| {
        // egui gives a label's text as its value and any other widget's as its label.
        if node.role() == egui::accesskit::Role::Label {
            node.set_value(text);
        } else {
            node.set_label(text);
        }
    });
}

/// A label of text that may be Persian.
pub fn label(ui: &mut egui::Ui, i18n: &Localizer, text: &str) -> egui::Response {
    let shown = wt(i18n, ui, text);
    said(i18n, text, ui.label(shown))
}

/// A label of text that may be Persian, in `color`.
pub fn label_colored(
    ui: &mut egui::Ui,
    i18n: &Localizer,
    text: &str,
    color: egui::Color32,
) -> egui::Response {
    let shown = wt_colored(i18n, ui, text, color);
    said(i18n, text, ui.label(shown))
}

/// A button of text that may be Persian.
pub fn button(ui: &mut egui::Ui, i18n: &Localizer, text: &str) -> egui::Response {
    let shown = wt(i18n, ui, text);
    said(i18n, text, ui.button(shown))
}

/// A small button of text that may be Persian.
pub fn small_button(ui: &mut egui::Ui, i18n: &Localizer, text: &str) -> egui::Response {
    let shown = wt(i18n, ui, text);
    said(i18n, text, ui.small_button(shown))
}

/// A button of text that may be Persian, enabled or not.
pub fn button_enabled(
    ui: &mut egui::Ui,
    i18n: &Localizer,
    enabled: bool,
    text: &str,
) -> egui::Response {
    let shown = wt(i18n, ui, text);
    said(
        i18n,
        text,
        ui.add_enabled(enabled, egui::Button::new(shown)),
    )
}

/// `response` with a text that may be Persian, shown on hover while it is disabled.
pub fn disabled_hover(i18n: &Localizer, response: egui::Response, text: &str) -> egui::Response {
    response.on_disabled_hover_ui(|ui| {
        label(ui, i18n, text);
    })
}

/// Hover texts that may be Persian, chained as egui's own `on_hover_text`.
pub trait BidiHover {
    fn bidi_hover(self, i18n: &Localizer, text: &str) -> egui::Response;
}

impl BidiHover for egui::Response {
    fn bidi_hover(self, i18n: &Localizer, text: &str) -> egui::Response {
        self.on_hover_ui(|ui| {
            label(ui, i18n, text);
        })
    }
}

/// A row of widgets that runs from the right in a right-to-left locale.
pub fn row<R>(rtl: bool, ui: &mut egui::Ui, add: impl FnOnce(&mut egui::Ui) -> R) -> R {
    if rtl {
        ui.with_layout(
            egui::Layout::right_to_left(egui::Align::Center).with_main_wrap(true),
            add,
        )
        .inner
    } else {
        ui.horizontal_wrapped(add).inner
    }
}
