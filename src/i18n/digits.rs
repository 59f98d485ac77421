//! Numbers as the console shows them: Latin digits with `,` and `.` in English, Persian
//! digits (۰–۹) with the Persian thousands separator `٬` and decimal separator `٫` in
//! Persian.
//!
//! Only numbers meant for reading go through here. Identifiers (intent, attempt and
//! receipt ids), action keys, JSON and anything a person may copy into another system keep
//! their Latin digits in every locale: converting them would change the identity they
//! carry, and searching for them must keep working byte for byte.

use crate::domain::Locale;

/// The Persian digit zero; the others follow it in code point order.
const PERSIAN_ZERO: u32 = 0x06F0;
/// The Arabic-Indic digit zero, which some keyboards produce instead of the Persian digits.
const ARABIC_INDIC_ZERO: u32 = 0x0660;
/// Separates groups of thousands in Persian (ARABIC THOUSANDS SEPARATOR).
pub const PERSIAN_THOUSANDS: char = '\u{066C}';
/// Separates the fraction in Persian (ARABIC DECIMAL SEPARATOR).
pub const PERSIAN_DECIMAL: char = '\u{066B}';
/// The Persian minus: a left-to-right mark keeps the sign on the left of the digits inside
/// right-to-left text (the layout resolves the mark and does not draw it), then U+2212.
pub const PERSIAN_MINUS: &str = "\u{200E}\u{2212}";

/// Replaces the ASCII digits (and Arabic-Indic digits) of `text` with Persian digits.
/// Everything else is kept, so only pass text that is meant for reading.
pub fn to_persian_digits(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '0'..='9' => shift_digit(c, '0' as u32, PERSIAN_ZERO),
            '\u{0660}'..='\u{0669}' => shift_digit(c, ARABIC_INDIC_ZERO, PERSIAN_ZERO),
            _ => c,
        })
        .collect()
}

/// Replaces Persian and Arabic-Indic digits with ASCII digits (what a search box needs
/// before it compares with stored values).
pub fn to_latin_digits(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '\u{06F0}'..='\u{06F9}' => shift_digit(c, PERSIAN_ZERO, '0' as u32),
            '\u{0660}'..='\u{0669}' => shift_digit(c, ARABIC_INDIC_ZERO, '0' as u32),
            _ => c,
        })
        .collect()
}

fn shift_digit(c: char, from_zero: u32, to_zero: u32) -> char {
    char::from_u32(c as u32 - from_zero + to_zero).unwrap_or(c)
}

/// An integer with grouped thousands: `1,234,567` or `۱٬۲۳۴٬۵۶۷`.
pub fn format_int(n: i64, locale: Locale) -> String {
    let digits = n.unsigned_abs().to_string();
    assemble(n < 0, &digits, None, true, locale)
}

/// A decimal number rounded to `places` fraction digits: `1,234.50` or `۱٬۲۳۴٫۵۰`.
/// Not-a-number and infinities are written the way Rust writes them.
pub fn format_decimal(x: f64, places: usize, locale: Locale) -> String {
    format_number(x, Some(places), Some(places), true, locale)
}

/// The general form behind [`format_int`] and [`format_decimal`], also used for numbers
/// passed to Fluent messages. With no `max_fraction` the shortest exact form is used; the
/// fraction is then padded to `min_fraction` digits.
pub fn format_number(
    x: f64,
    min_fraction: Option<usize>,
    max_fraction: Option<usize>,
    grouping: bool,
    locale: Locale,
) -> String {
    if !x.is_finite() {
        return x.to_string();
    }
    let plain = match max_fraction {
        Some(places) => format!("{:.*}", places, x.abs()),
        None => x.abs().to_string(),
    };
    let (int_part, frac_part) = match plain.split_once('.') {
        Some((i, f)) => (i.to_string(), f.to_string()),
        None => (plain, String::new()),
    };
    let mut frac = frac_part;
    if max_fraction.is_some() {
        // Trim zeros that rounding produced beyond what is required.
        let min = min_fraction.unwrap_or(0);
        while frac.len() > min && frac.ends_with('0') {
            frac.pop();
        }
    }
    while frac.len() < min_fraction.unwrap_or(0) {
        frac.push('0');
    }
    let negative =
        x < 0.0 && (int_part.bytes().any(|b| b != b'0') || frac.bytes().any(|b| b != b'0'));
    let frac = (!frac.is_empty()).then_some(frac.as_str());
    assemble(negative, &int_part, frac, grouping, locale)
}

/// Joins sign, integer digits (grouped by thousands when asked) and fraction with the
/// locale's separators, then turns the digits into the locale's digits.
/// A decimal written as text (`-1200.5`, as canonical arguments hold it) in the locale's
/// digits and separators, grouped in thousands when asked; exact whatever its size, since it
/// never goes through a float. `None` for text that is not a plain decimal.
pub fn format_decimal_text(text: &str, grouping: bool, locale: Locale) -> Option<String> {
    let (negative, unsigned) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (int, frac) = match unsigned.split_once('.') {
        Some((int, frac)) => (int, Some(frac)),
        None => (unsigned, None),
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(int) || frac.is_some_and(|f| !digits(f)) {
        return None;
    }
    Some(assemble(negative, int, frac, grouping, locale))
}

fn assemble(
    negative: bool,
    int_digits: &str,
    frac: Option<&str>,
    grouping: bool,
    locale: Locale,
) -> String {
    let mut out = String::new();
    if negative {
        out.push_str(minus(locale));
    }
    let len = int_digits.len();
    for (i, d) in int_digits.chars().enumerate() {
        if grouping && i > 0 && (len - i).is_multiple_of(3) {
            out.push(thousands_separator(locale));
        }
        out.push(d);
    }
    if let Some(frac) = frac {
        out.push(decimal_separator(locale));
        out.push_str(frac);
    }
    localize_digits(out, locale)
}

fn localize_digits(text: String, locale: Locale) -> String {
    match locale {
        Locale::EnUs => text,
        Locale::FaIr => to_persian_digits(&text),
    }
}

fn minus(locale: Locale) -> &'static str {
    match locale {
        Locale::EnUs => "-",
        Locale::FaIr => PERSIAN_MINUS,
    }
}

fn thousands_separator(locale: Locale) -> char {
    match locale {
        Locale::EnUs => ',',
        Locale::FaIr => PERSIAN_THOUSANDS,
    }
}

fn decimal_separator(locale: Locale) -> char {
    match locale {
        Locale::EnUs => '.',
        Locale::FaIr => PERSIAN_DECIMAL,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_are_grouped_by_thousands_in_both_locales() {
        assert_eq!(format_int(1_234_567, Locale::EnUs), "1,234,567");
        assert_eq!(format_int(1_234_567, Locale::FaIr), "۱٬۲۳۴٬۵۶۷");
        assert_eq!(format_int(1200, Locale::FaIr), "۱٬۲۰۰");
        assert_eq!(format_int(999, Locale::FaIr), "۹۹۹");
        assert_eq!(format_int(0, Locale::FaIr), "۰");
    }

    #[test]
    fn negative_persian_numbers_keep_their_sign_on_the_left() {
        assert_eq!(format_int(-42, Locale::EnUs), "-42");
        assert_eq!(format_int(-42, Locale::FaIr), "\u{200E}\u{2212}۴۲");
        assert_eq!(
            format_int(i64::MIN, Locale::EnUs),
            "-9,223,372,036,854,775,808"
        );
    }

    #[test]
    fn decimals_use_the_persian_decimal_separator() {
        assert_eq!(format_decimal(1234.5, 2, Locale::EnUs), "1,234.50");
        assert_eq!(format_decimal(1234.5, 2, Locale::FaIr), "۱٬۲۳۴٫۵۰");
        assert_eq!(format_decimal(0.125, 1, Locale::FaIr), "۰٫۱");
        assert_eq!(format_decimal(2.0, 0, Locale::EnUs), "2");
    }

    #[test]
    fn shortest_form_is_used_without_a_maximum() {
        assert_eq!(format_number(1.5, None, None, true, Locale::FaIr), "۱٫۵");
        assert_eq!(
            format_number(1.5, Some(2), None, true, Locale::EnUs),
            "1.50"
        );
        assert_eq!(
            format_number(12345.0, None, None, false, Locale::EnUs),
            "12345"
        );
        assert_eq!(
            format_number(-0.0001, None, Some(2), true, Locale::EnUs),
            "0"
        );
    }

    #[test]
    fn digit_conversion_round_trips_and_leaves_other_text_alone() {
        assert_eq!(to_persian_digits("PO-1234 x 1200"), "PO-۱۲۳۴ x ۱۲۰۰");
        assert_eq!(to_latin_digits("۱۲۰۰ و ١٢"), "1200 و 12");
        assert_eq!(
            to_latin_digits(&to_persian_digits("0123456789")),
            "0123456789"
        );
    }
}
