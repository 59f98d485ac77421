//! The frozen command on screen: the intent's canonical arguments (what was, or may have
//! been, ordered), one row per value, beside the hash they were frozen under. Names and
//! strings are the agent's text, in their own direction; numbers take the locale's digits;
//! the canonical JSON itself is copyable, and its hash is checked against the envelope's.
//! Invisible direction marks in the agent's text are shown, never obeyed: a supervisor must
//! read the supplier and amount that were sent, not what the marks make them look like.

use std::sync::Arc;

use serde_json::Value;

use super::format;
use super::intent_widgets::{fields_grid, grid_row_named, id_row, say_colored, say_strong};
use crate::console::model::IntentRow as Intent;
use crate::console::theme;
use crate::domain::canonical::{AMOUNT_FIELDS, canonicalize, normalize_text};
use crate::i18n::Localizer;
use crate::i18n::bidi::is_bidi_control;

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

/// Every leaf of `args`, depth first, in the canonical order of keys; none for an empty
/// object.
pub fn arg_lines(args: &Value) -> Vec<ArgLine> {
    let mut out = Vec::new();
    if args.as_object().is_some_and(|m| m.is_empty()) {
        return out;
    }
    walk(args, String::new(), &mut out);
    out
}

/// Whether the value at `path` is an amount (its key is one of the canonical rules' amount
/// fields): grouped in thousands when shown. Other numbers (invoice numbers, years) are not.
pub fn is_amount(path: &str) -> bool {
    let key = path.rsplit('.').next().unwrap_or(path);
    let key = key.split('[').next().unwrap_or(key);
    AMOUNT_FIELDS.contains(&normalize_text(key).as_str())
}

/// `text` with every explicit direction mark written out as `⟦U+202E⟧`, and whether it had
/// any.
pub fn marks_shown(text: &str) -> (String, bool) {
    let mut any = false;
    let shown = text
        .chars()
        .map(|c| {
            if is_bidi_control(c) {
                any = true;
                format!("⟦U+{:04X}⟧", c as u32)
            } else {
                c.to_string()
            }
        })
        .collect();
    (shown, any)
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

/// A canonical number in the locale's digits, decimals with the locale's separator; with
/// `grouped`, thousands grouped (`35,500,000`, `۳۵٬۵۰۰٬۰۰۰`, `۱۲٫۵`), as every number of the
/// console is written. A number written with an exponent is shown as it is.
pub fn number_text(i18n: &Localizer, canonical: &str, grouped: bool) -> String {
    crate::i18n::digits::format_decimal_text(canonical, grouped, i18n.locale())
        .unwrap_or_else(|| canonical.to_string())
}

/// What the frozen command shows, worked out once per intent and hash rather than every
/// frame: the canonical text and whether it gives the recorded hash, and its rows.
struct Frozen {
    json: Option<String>,
    matches: bool,
    lines: Vec<ArgLine>,
}

fn frozen(ui: &egui::Ui, intent: &Intent) -> Arc<Frozen> {
    let hash = intent.canonical_args_hash.as_str();
    // One slot for the open intent, named by its id and hash: what one intent claims is
    // never shown for another with the same hash, and intents opened before are let go.
    let key = egui::Id::unique("intentdesk.frozen_command");
    let tag = (intent.id.as_str().to_string(), hash.to_string());
    if let Some((held, done)) = ui.data(|d| d.get_temp::<((String, String), Arc<Frozen>)>(key))
        && held == tag
    {
        return done;
    }
    // The text the coordinator froze, when it sent it; else this console's canonical form
    // of the arguments (an older coordinator).
    let json = intent.canonical_args.clone().or_else(|| {
        let args = intent.args.as_ref()?;
        canonicalize(args).ok().map(|c| c.json)
    });
    let shown: Option<Value> = json.as_deref().and_then(|j| serde_json::from_str(j).ok());
    let shown = shown.or_else(|| intent.args.clone()).unwrap_or(Value::Null);
    let done = Arc::new(Frozen {
        matches: json.as_deref().is_some_and(|j| sha256_hex(j) == hash),
        json,
        lines: arg_lines(&shown),
    });
    ui.data_mut(|d| d.insert_temp(key, (tag, done.clone())));
    done
}

fn sha256_hex(text: &str) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// The arguments of the open intent, under the envelope's fields.
pub fn frozen_command_ui(ui: &mut egui::Ui, i18n: &Localizer, intent: &Intent) {
    ui.add_space(6.0);
    say_strong(ui, i18n, &i18n.tr("envelope-args"));
    let hash = intent.canonical_args_hash.as_str();
    let frozen = frozen(ui, intent);
    let mut marked = false;
    fields_grid(ui, i18n, "envelope_args", |ui| {
        if frozen.lines.is_empty() {
            grid_row_named(ui, i18n, "-", |ui| {
                format::label(ui, i18n, &i18n.tr("envelope-args-empty"));
            });
        }
        for line in &frozen.lines {
            let (path, path_marked) = marks_shown(&line.path);
            marked |= path_marked;
            grid_row_named(ui, i18n, &path, |ui| match &line.value {
                ArgValue::Text(s) => {
                    let (shown, text_marked) = marks_shown(s);
                    marked |= text_marked;
                    super::intent_widgets::user_say(ui, &shown);
                }
                ArgValue::Number(n) => {
                    format::label(ui, i18n, &number_text(i18n, n, is_amount(&line.path)));
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
    if marked {
        say_colored(ui, i18n, &i18n.tr("envelope-args-marks"), theme::REJECTED);
    }
    if frozen.matches {
        say_colored(
            ui,
            i18n,
            &i18n.tr("envelope-args-hash-matches"),
            theme::QUIET,
        );
    } else {
        say_colored(
            ui,
            i18n,
            &i18n.tr("envelope-args-hash-differs"),
            theme::REJECTED,
        );
    }
    if let Some(json) = &frozen.json {
        let title = i18n.tr("envelope-args-canonical");
        let shown = egui::CollapsingHeader::new(format::wt(i18n, ui, &title))
            .id_salt("envelope_args_json")
            .show(ui, |ui| {
                if format::small_button(ui, i18n, &i18n.tr("envelope-args-copy")).clicked() {
                    ui.ctx().copy_text(json.clone());
                }
                // JSON is never translated: left to right, Latin digits; Persian strings
                // inside it still read in their own order.
                let (text, _) = marks_shown(json);
                let font = egui::TextStyle::Monospace.resolve(ui.style());
                ui.add(
                    crate::console::text::BidiLabel::new(&text, crate::i18n::bidi::Direction::Ltr)
                        .font(font)
                        .wrap(),
                );
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
        assert_eq!(number_text(&en, "35500000", true), "35,500,000");
        assert_eq!(number_text(&fa, "35500000", true), "۳۵٬۵۰۰٬۰۰۰");
        let minus = crate::i18n::digits::PERSIAN_MINUS;
        assert_eq!(number_text(&fa, "-1200.5", true), format!("{minus}۱٬۲۰۰٫۵"));
        assert_eq!(number_text(&en, "-1200.5", true), "-1,200.5");
        // Beyond what a float holds exactly, every digit is kept.
        assert_eq!(
            number_text(&en, "18446744073709551615", false),
            "18446744073709551615"
        );
        assert_eq!(number_text(&en, "12", true), "12");
        // An invoice number is not an amount: no grouping.
        assert_eq!(number_text(&fa, "14050910", false), "۱۴۰۵۰۹۱۰");
        assert_eq!(number_text(&en, "1e-7", true), "1e-7");
    }

    #[test]
    fn only_amount_fields_are_grouped() {
        assert!(is_amount("amount"));
        assert!(is_amount("lines[2].unit_price"));
        assert!(!is_amount("invoice"));
        assert!(!is_amount("lines[0].sku"));
    }

    #[test]
    fn direction_marks_are_written_out() {
        let (shown, any) = marks_shown("ACME\u{202E}RI-");
        assert!(any);
        assert_eq!(shown, "ACME⟦U+202E⟧RI-");
        assert_eq!(marks_shown("ACME-IR"), ("ACME-IR".to_string(), false));
    }

    #[test]
    fn an_empty_object_has_no_rows() {
        assert!(arg_lines(&json!({})).is_empty());
        assert_eq!(arg_lines(&json!({"a": {}})).len(), 1);
    }
}
