//! The frozen command on screen: the intent's canonical arguments (what was, or may have
//! been, ordered), one row per value, beside the hash they were frozen under. Names and
//! strings are the agent's text, in their own direction; numbers take the locale's digits;
//! the canonical JSON itself is copyable, and its hash is checked against the envelope's.

use serde_json::Value;

use super::format;
use super::intent_widgets::{fields_grid, grid_row_named, id_row, say_colored, say_strong};
use crate::console::theme;
use crate::domain::canonical::canonicalize;
use crate::i18n::Localizer;

/// One value of the arguments and where it sits (`supplier`, `lines[0].qty`).
#[derive(Debug, Clone, PartialEq)]
pub struct ArgLine {
    pub path: String,
    pub value: ArgValue,
}

/// A value as the operator reads it.
#[derive(Debug, Clone, PartialEq)]
pub enum ArgValue {
    /// Text, shown as written.
    Text(String),
    /// A number in its canonical decimal form (`35500000`, `12.5`).
    Number(String),
    Bool(bool),
    Null,
    /// An empty object or array, which has no leaves of its own.
    Empty(&'static str),
}

/// Every leaf of `args`, depth first, in the canonical order of keys.
pub fn arg_lines(args: &Value) -> Vec<ArgLine> {
    let mut out = Vec::new();
    walk(args, String::new(), &mut out);
    out
}

fn walk(value: &Value, path: String, out: &mut Vec<ArgLine>) {
    let leaf = |value| ArgLine {
        path: path.clone(),
        value,
    };
    match value {
        Value::Object(map) if map.is_empty() => out.push(leaf(ArgValue::Empty("{}"))),
        Value::Array(items) if items.is_empty() => out.push(leaf(ArgValue::Empty("[]"))),
        Value::Object(map) => {
            for (key, inner) in map {
                let path = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                walk(inner, path, out);
            }
        }
        Value::Array(items) => {
            for (n, inner) in items.iter().enumerate() {
                walk(inner, format!("{path}[{n}]"), out);
            }
        }
        Value::String(s) => out.push(leaf(ArgValue::Text(s.clone()))),
        Value::Number(n) => out.push(leaf(ArgValue::Number(n.to_string()))),
        Value::Bool(b) => out.push(leaf(ArgValue::Bool(*b))),
        Value::Null => out.push(leaf(ArgValue::Null)),
    }
}

/// A canonical number in the locale's digits: integers grouped in thousands, decimals with
/// the locale's separator (`35,500,000`, `۳۵٬۵۰۰٬۰۰۰`, `۱۲٫۵`).
pub fn number_text(i18n: &Localizer, canonical: &str) -> String {
    let (int, frac) = canonical.split_once('.').unwrap_or((canonical, ""));
    let negative = int.starts_with('-');
    let digits = int.trim_start_matches('-');
    let mut grouped = String::new();
    for (n, c) in digits.chars().enumerate() {
        if n > 0 && (digits.len() - n) % 3 == 0 {
            grouped.push(if i18n.is_rtl() { '٬' } else { ',' });
        }
        grouped.push(c);
    }
    let mut text = format!("{}{grouped}", if negative { "-" } else { "" });
    if !frac.is_empty() {
        text.push(if i18n.is_rtl() { '٫' } else { '.' });
        text.push_str(frac);
    }
    format::localize_digits(i18n, &text)
}

/// The arguments of the open intent, under the envelope's fields.
pub fn frozen_command_ui(ui: &mut egui::Ui, i18n: &Localizer, args: &Value, hash: &str) {
    ui.add_space(6.0);
    say_strong(ui, i18n, &i18n.tr("envelope-args"));
    let canonical = canonicalize(args).ok();
    let shown: Value = canonical
        .as_ref()
        .and_then(|c| serde_json::from_str(&c.json).ok())
        .unwrap_or_else(|| args.clone());
    fields_grid(ui, i18n, "envelope_args", |ui| {
        let lines = arg_lines(&shown);
        if lines.is_empty() {
            grid_row_named(ui, i18n, "-", |ui| {
                format::label(ui, i18n, &i18n.tr("envelope-args-empty"));
            });
        }
        for line in lines {
            grid_row_named(ui, i18n, &line.path, |ui| match &line.value {
                ArgValue::Text(s) => {
                    super::intent_widgets::user_say(ui, s);
                }
                ArgValue::Number(n) => {
                    format::label(ui, i18n, &number_text(i18n, n));
                }
                ArgValue::Bool(b) => {
                    format::label(
                        ui,
                        i18n,
                        &i18n.tr(if *b { "filter-yes" } else { "filter-no" }),
                    );
                }
                ArgValue::Null => {
                    ui.label("null");
                }
                ArgValue::Empty(e) => {
                    ui.monospace(*e);
                }
            });
        }
        id_row(ui, i18n, "field-args-hash", hash);
    });
    match &canonical {
        Some(c) if c.hash == hash => {
            say_colored(
                ui,
                i18n,
                &i18n.tr("envelope-args-hash-matches"),
                theme::QUIET,
            );
        }
        _ => {
            say_colored(
                ui,
                i18n,
                &i18n.tr("envelope-args-hash-differs"),
                theme::REJECTED,
            );
        }
    }
    if let Some(c) = &canonical {
        let title = i18n.tr("envelope-args-canonical");
        let shown = egui::CollapsingHeader::new(format::wt(i18n, ui, &title))
            .id_salt("envelope_args_json")
            .show(ui, |ui| {
                if format::small_button(ui, i18n, &i18n.tr("envelope-args-copy")).clicked() {
                    ui.ctx().copy_text(c.json.clone());
                }
                // JSON is never translated: left to right, Latin digits.
                ui.add(egui::Label::new(egui::RichText::new(&c.json).monospace()).wrap());
            });
        format::said(i18n, &title, shown.header_response);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::domain::Locale;

    #[test]
    fn every_leaf_is_one_line_named_by_its_path() {
        let args = json!({"supplier": "ACME-IR", "lines": [{"qty": 3}], "rush": true, "extra": {}});
        let paths: Vec<String> = arg_lines(&args).into_iter().map(|l| l.path).collect();
        assert_eq!(paths, ["extra", "lines[0].qty", "rush", "supplier"]);
    }

    #[test]
    fn numbers_take_the_locales_digits_and_separators() {
        let en = Localizer::new(Locale::EnUs);
        let fa = Localizer::new(Locale::FaIr);
        assert_eq!(number_text(&en, "35500000"), "35,500,000");
        assert_eq!(number_text(&fa, "35500000"), "۳۵٬۵۰۰٬۰۰۰");
        assert_eq!(number_text(&fa, "-1200.5"), "-۱٬۲۰۰٫۵");
        assert_eq!(number_text(&en, "12"), "12");
    }
}
