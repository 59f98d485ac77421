//! Canonical arguments: one JSON text, and its SHA-256, for every way of writing the same
//! order. The same order typed in the Persian and the English console hashes the same; a
//! changed amount or recipient does not.
//!
//! The rules, applied to every value at every depth:
//!
//! 1. **Shape.** The top level must be an object. Containers nest at most [`MAX_DEPTH`]
//!    levels (the top-level object is level 1). The canonical text is at most
//!    [`MAX_ARGS_BYTES`] bytes.
//! 2. **Text** (object keys and strings alike, see [`normalize_text`]): Unicode NFC;
//!    Arabic yeh `ي` (U+064A) and alef maksura `ى` (U+0649) become Persian yeh `ی`
//!    (U+06CC); Arabic kaf `ك` (U+0643) becomes keheh `ک` (U+06A9); Persian `۰–۹`
//!    (U+06F0–06F9) and Arabic-Indic `٠–٩` (U+0660–0669) digits become ASCII digits;
//!    outer whitespace (Unicode `White_Space`) is trimmed; inner whitespace is kept as it
//!    is. NFC comes first, so a decomposed yeh-with-hamza (`ي` + U+0654) composes to `ئ`
//!    and keeps its hamza.
//! 3. **Numeric strings.** A string that, after rule 2 and with the Arabic decimal
//!    separator `٫` (U+066B) read as `.`, is a plain decimal — `-?(0|[1-9][0-9]*)(\.[0-9]+)?`,
//!    where the integer part may instead be grouped in threes by `,` or `٬` (U+066C), e.g.
//!    `1,200` or `1٬234٬567.5` — is a number. So `"۱۲۰۰"`, `"1,200"` and `1200`
//!    canonicalise alike. Strings with leading zeros (`"00123"`, SKUs, phone numbers),
//!    signs other than `-`, exponents or stray separators stay strings (rule 2 only).
//! 4. **Numbers** are written in one form, computed on the decimal text, never through
//!    floating point: no exponent (`1e3` → `1000`), no trailing fractional zeros
//!    (`12.50` → `12.5`, `1200.0` → `1200`), no leading zeros, `-0` → `0`.
//! 5. **Exactness.** A number is *exact* when it is an integer that fits `i64` or `u64`,
//!    or has at most 15 significant digits and at most 22 digits after the point. Exact
//!    numbers survive a JSON parser unchanged: such a decimal is `D / 10^k` with
//!    `D < 2^53` and `k ≤ 22`, both exact doubles, so even serde_json's fast (not
//!    correctly rounding) float parser rounds it once, to the nearest double, and the
//!    shortest text of that double is the decimal itself. A JSON number that is not exact
//!    is refused ([`CanonicalError::InvalidNumber`]): serde_json has already read it as a
//!    64-bit float, so its 16th and later digits may be lost, and two different amounts
//!    could hash alike. Such values are sent as strings, which keep every digit: a numeric
//!    string that is not exact is written as its canonical decimal *string* (rule 4
//!    applied to the text), so it still compares equal across scripts and separators, and
//!    re-canonicalising it changes nothing.
//! 6. **Amounts.** A field whose key (after rule 2) is one of [`AMOUNT_FIELDS`] must hold
//!    a number or a numeric string, else [`CanonicalError::NonNumericAmount`]. In these
//!    fields leading zeros are accepted (`"007"` → `7`): the key says it is a quantity.
//! 7. **Keys** are sorted by Unicode code point (the byte order of UTF-8). Two keys of one
//!    object that become equal under rule 2 are refused ([`CanonicalError::DuplicateKey`])
//!    rather than one silently winning.
//! 8. **Writing.** No whitespace between tokens; strings escaped exactly as serde_json
//!    escapes them (`"`, `\`, `\b \f \n \r \t`, other control characters as `\u00xx`,
//!    everything else literal); `null`, `true`, `false` as themselves.
//!
//! Error messages name the JSON path of the offending value, as `args.lines[2].qty`; keys
//! that are not plain identifiers are quoted, as `args["unit price"]`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};
use sha2::{Digest, Sha256};
use unicode_normalization::UnicodeNormalization;

/// The largest canonical text accepted, in bytes.
pub const MAX_ARGS_BYTES: usize = 65_536;
/// The deepest nesting of objects and arrays accepted; the top-level object is level 1.
pub const MAX_DEPTH: usize = 32;
/// Keys whose values must be numeric, wherever they appear.
pub const AMOUNT_FIELDS: &[&str] = &["amount", "qty", "quantity", "price", "unit_price", "total"];

/// Significant digits a number may have and still be exact through a 64-bit float.
const FLOAT_EXACT_DIGITS: usize = 15;
/// Digits after the point such a number may have: 10^22 is the largest exact power of ten.
const FLOAT_EXACT_FRACTION_DIGITS: i64 = 22;

/// The canonical form of an intent's arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CanonicalArgs {
    /// The canonical JSON text.
    pub json: String,
    /// Lowercase hex SHA-256 of `json`: the envelope's `canonical_args_hash`.
    pub hash: String,
}

/// Why arguments have no canonical form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CanonicalError {
    #[error("the arguments take at least {bytes} bytes in canonical form; the limit is {limit}")]
    TooLarge { bytes: usize, limit: usize },
    #[error("{path}: the arguments nest deeper than {limit} levels")]
    TooDeep { path: String, limit: usize },
    #[error("args must be a JSON object, not {found}")]
    NotAnObject { found: &'static str },
    #[error(
        "{path}: an amount must be a number or a string holding one (such as 1200 or \"1,200.50\")"
    )]
    NonNumericAmount { path: String },
    #[error(
        "{path}: this number cannot be kept exactly (more than 15 significant digits or out of range); send it as a string"
    )]
    InvalidNumber { path: String },
    #[error("{path}: two keys of this object are the same once normalised")]
    DuplicateKey { path: String },
}

/// Canonicalise an intent's arguments and hash them. See the module header for the rules.
pub fn canonicalize(args: &Value) -> Result<CanonicalArgs, CanonicalError> {
    let Value::Object(map) = args else {
        return Err(CanonicalError::NotAnObject {
            found: json_kind(args),
        });
    };
    let mut writer = Writer::default();
    writer.object(map, 1)?;
    let json = writer.out;
    let hash = hex::encode(Sha256::digest(json.as_bytes()));
    Ok(CanonicalArgs { json, hash })
}

/// The text rules (rule 2): NFC, Arabic yeh and kaf to Persian, Persian and Arabic-Indic
/// digits to ASCII, outer whitespace trimmed. Used for keys, strings and search terms.
pub fn normalize_text(s: &str) -> String {
    // ASCII text is its own NFC and holds no letter or digit the rules change: only the
    // trim applies (most keys and values an agent sends; held to the full rules by a test).
    if s.is_ascii() {
        return s.trim().to_owned();
    }
    normalize_any_text(s)
}

/// [`normalize_text`] by the full rules, for any text.
pub(crate) fn normalize_any_text(s: &str) -> String {
    let unified: String = s.nfc().map(unify_char).collect();
    let trimmed = unified.trim();
    if trimmed.len() == unified.len() {
        unified
    } else {
        trimmed.to_owned()
    }
}

/// Persian (U+06F0–06F9) and Arabic-Indic (U+0660–0669) digits to ASCII; nothing else
/// changes.
pub fn fold_digits(s: &str) -> String {
    s.chars().map(fold_digit).collect()
}

fn fold_digit(c: char) -> char {
    let zero = match c {
        '\u{06F0}'..='\u{06F9}' => 0x06F0,
        '\u{0660}'..='\u{0669}' => 0x0660,
        _ => return c,
    };
    char::from_digit(u32::from(c) - zero, 10).unwrap_or(c)
}

fn unify_char(c: char) -> char {
    match c {
        '\u{064A}' | '\u{0649}' => '\u{06CC}',
        '\u{0643}' => '\u{06A9}',
        other => fold_digit(other),
    }
}

/// What kind of JSON value `value` is, as a sentence names it ("an array").
pub fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// One step of a JSON path.
enum Seg {
    Key(String),
    Index(usize),
}

#[derive(Default)]
struct Writer {
    out: String,
    path: Vec<Seg>,
}

impl Writer {
    fn path(&self) -> String {
        let mut rendered = String::from("args");
        for seg in &self.path {
            match seg {
                Seg::Index(i) => rendered.push_str(&format!("[{i}]")),
                Seg::Key(key) if is_identifier(key) => {
                    rendered.push('.');
                    rendered.push_str(key);
                }
                Seg::Key(key) => {
                    rendered.push('[');
                    write_json_string(&mut rendered, key);
                    rendered.push(']');
                }
            }
        }
        rendered
    }

    fn check_size(&self) -> Result<(), CanonicalError> {
        if self.out.len() > MAX_ARGS_BYTES {
            return Err(CanonicalError::TooLarge {
                bytes: self.out.len(),
                limit: MAX_ARGS_BYTES,
            });
        }
        Ok(())
    }

    fn check_depth(&self, depth: usize) -> Result<(), CanonicalError> {
        if depth > MAX_DEPTH {
            return Err(CanonicalError::TooDeep {
                path: self.path(),
                limit: MAX_DEPTH,
            });
        }
        Ok(())
    }

    fn value(&mut self, value: &Value, depth: usize, amount: bool) -> Result<(), CanonicalError> {
        match value {
            Value::Null | Value::Bool(_) | Value::Array(_) | Value::Object(_) if amount => {
                return Err(CanonicalError::NonNumericAmount { path: self.path() });
            }
            Value::Null => self.out.push_str("null"),
            Value::Bool(b) => self.out.push_str(if *b { "true" } else { "false" }),
            Value::Number(n) => self.number(n)?,
            Value::String(s) => self.string(s, amount)?,
            Value::Array(items) => self.array(items, depth + 1)?,
            Value::Object(map) => self.object(map, depth + 1)?,
        }
        self.check_size()
    }

    fn number(&mut self, n: &Number) -> Result<(), CanonicalError> {
        let invalid = || CanonicalError::InvalidNumber { path: self.path() };
        let decimal = Decimal::parse_json(&n.to_string()).ok_or_else(invalid)?;
        if !decimal.is_exact() {
            return Err(invalid());
        }
        decimal.write(&mut self.out);
        Ok(())
    }

    fn string(&mut self, s: &str, amount: bool) -> Result<(), CanonicalError> {
        let text = normalize_text(s);
        match Decimal::parse_plain(&text, amount) {
            Some(decimal) if decimal.is_exact() => decimal.write(&mut self.out),
            Some(decimal) => {
                let mut digits = String::new();
                decimal.write(&mut digits);
                write_json_string(&mut self.out, &digits);
            }
            None if amount => {
                return Err(CanonicalError::NonNumericAmount { path: self.path() });
            }
            None => write_json_string(&mut self.out, &text),
        }
        Ok(())
    }

    fn array(&mut self, items: &[Value], depth: usize) -> Result<(), CanonicalError> {
        self.check_depth(depth)?;
        self.out.push('[');
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                self.out.push(',');
            }
            self.path.push(Seg::Index(i));
            self.value(item, depth, false)?;
            self.path.pop();
        }
        self.out.push(']');
        Ok(())
    }

    fn object(&mut self, map: &Map<String, Value>, depth: usize) -> Result<(), CanonicalError> {
        self.check_depth(depth)?;
        let mut entries: Vec<(String, &Value)> =
            map.iter().map(|(k, v)| (normalize_text(k), v)).collect();
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        if let Some(pair) = entries.windows(2).find(|w| w[0].0 == w[1].0) {
            self.path.push(Seg::Key(pair[0].0.clone()));
            return Err(CanonicalError::DuplicateKey { path: self.path() });
        }
        self.out.push('{');
        for (i, (key, value)) in entries.into_iter().enumerate() {
            if i > 0 {
                self.out.push(',');
            }
            write_json_string(&mut self.out, &key);
            self.out.push(':');
            let amount = AMOUNT_FIELDS.contains(&key.as_str());
            self.path.push(Seg::Key(key));
            self.value(value, depth, amount)?;
            self.path.pop();
        }
        self.out.push('}');
        Ok(())
    }
}

fn is_identifier(key: &str) -> bool {
    let mut chars = key.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Append `s` as a JSON string literal, escaped exactly as serde_json escapes it.
fn write_json_string(out: &mut String, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0C}' => out.push_str("\\f"),
            c if u32::from(c) < 0x20 => {
                let byte = u32::from(c) as usize;
                out.push_str("\\u00");
                out.push(char::from(HEX[byte >> 4]));
                out.push(char::from(HEX[byte & 0xF]));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A decimal number held as text: `±0.digits × 10^point`, i.e. the decimal point sits
/// `point` places after the first significant digit's position. `digits` has no leading
/// or trailing zeros; zero is the empty string, never negative.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Decimal {
    negative: bool,
    digits: String,
    point: i64,
}

impl Decimal {
    fn new(negative: bool, int: &str, frac: &str, exponent: i64) -> Option<Self> {
        let all = format!("{int}{frac}");
        let leading = all.len() - all.trim_start_matches('0').len();
        let digits = all.trim_start_matches('0').trim_end_matches('0').to_owned();
        if digits.is_empty() {
            return Some(Self {
                negative: false,
                digits,
                point: 0,
            });
        }
        let int_len = i64::try_from(int.len()).ok()?;
        let leading = i64::try_from(leading).ok()?;
        let point = int_len.checked_add(exponent)?.checked_sub(leading)?;
        Some(Self {
            negative,
            digits,
            point,
        })
    }

    /// A JSON number's text: `-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?`.
    fn parse_json(text: &str) -> Option<Self> {
        let (negative, rest) = split_sign(text);
        let (mantissa, exponent) = match rest.find(['e', 'E']) {
            Some(at) => (&rest[..at], Some(&rest[at + 1..])),
            None => (rest, None),
        };
        let (int, frac) = match mantissa.split_once('.') {
            Some((int, frac)) => (int, frac),
            None => (mantissa, ""),
        };
        if !all_digits(int) || (mantissa.contains('.') && !all_digits(frac)) {
            return None;
        }
        let exponent = match exponent {
            None => 0,
            Some(e) => {
                let digits = e.strip_prefix(['+', '-']).unwrap_or(e);
                if !all_digits(digits) {
                    return None;
                }
                match e.parse::<i64>() {
                    Ok(value) => value,
                    // An exponent too large for i64 only means something for zero.
                    Err(_) if int.bytes().chain(frac.bytes()).all(|b| b == b'0') => 0,
                    Err(_) => return None,
                }
            }
        };
        Self::new(negative, int, frac, exponent)
    }

    /// A numeric string after text normalisation (rule 3): `None` when it is not one.
    /// `leading_zeros` admits `007`, for amount fields.
    fn parse_plain(text: &str, leading_zeros: bool) -> Option<Self> {
        let (negative, rest) = split_sign(text);
        let (int, frac) = match rest.split_once(['.', '\u{066B}']) {
            Some((int, frac)) if all_digits(frac) => (int, frac),
            Some(_) => return None,
            None => (rest, ""),
        };
        let int = if int.contains([',', '\u{066C}']) {
            let mut groups = int.split([',', '\u{066C}']);
            let first = groups.next()?;
            let first_ok =
                (1..=3).contains(&first.len()) && all_digits(first) && !first.starts_with('0');
            if !first_ok || !groups.all(|g| g.len() == 3 && all_digits(g)) {
                return None;
            }
            int.replace([',', '\u{066C}'], "")
        } else {
            let plain = all_digits(int) && (leading_zeros || int == "0" || !int.starts_with('0'));
            if !plain {
                return None;
            }
            int.to_owned()
        };
        Self::new(negative, &int, frac, 0)
    }

    fn is_zero(&self) -> bool {
        self.digits.is_empty()
    }

    fn len(&self) -> i64 {
        i64::try_from(self.digits.len()).unwrap_or(i64::MAX)
    }

    /// Rule 5: fits `i64`/`u64` as an integer, or round-trips through a 64-bit float.
    fn is_exact(&self) -> bool {
        if self.is_zero() {
            return true;
        }
        let fraction_digits = self.len() - self.point;
        if fraction_digits <= 0 {
            if self.point > 20 {
                return false;
            }
            let mut text = String::new();
            self.write(&mut text);
            return text.parse::<i64>().is_ok() || text.parse::<u64>().is_ok();
        }
        self.digits.len() <= FLOAT_EXACT_DIGITS && fraction_digits <= FLOAT_EXACT_FRACTION_DIGITS
    }

    /// Rule 4: plain decimal notation, no exponent, no superfluous zeros.
    fn write(&self, out: &mut String) {
        if self.is_zero() {
            out.push('0');
            return;
        }
        if self.negative {
            out.push('-');
        }
        let len = self.len();
        if self.point <= 0 {
            out.push_str("0.");
            out.extend(std::iter::repeat_n(
                '0',
                usize::try_from(-self.point).unwrap_or(0),
            ));
            out.push_str(&self.digits);
        } else if self.point >= len {
            out.push_str(&self.digits);
            out.extend(std::iter::repeat_n(
                '0',
                usize::try_from(self.point - len).unwrap_or(0),
            ));
        } else {
            let (int, frac) = self
                .digits
                .split_at(usize::try_from(self.point).unwrap_or(0));
            out.push_str(int);
            out.push('.');
            out.push_str(frac);
        }
    }
}

fn split_sign(text: &str) -> (bool, &str) {
    match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    }
}

fn all_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ascii_text_is_normalized_as_the_full_rules_do() {
        // Every ASCII character alone, between letters, and around them (whitespace and
        // control characters among them: the trim is the only rule that applies).
        for byte in 0u8..=0x7f {
            let c = char::from(byte);
            for text in [
                c.to_string(),
                format!("a{c}b"),
                format!("{c}a{c}"),
                format!("{c}{c}"),
            ] {
                assert_eq!(normalize_text(&text), normalize_any_text(&text), "{text:?}");
            }
        }
        assert_eq!(normalize_text("  PO-17 \t"), "PO-17");
        // Past ASCII the full rules run.
        assert_eq!(normalize_text(" ي "), "ی");
    }

    fn canon(value: Value) -> String {
        canonicalize(&value).expect("canonicalises").json
    }

    fn error(value: Value) -> String {
        canonicalize(&value)
            .expect_err("has no canonical form")
            .to_string()
    }

    #[test]
    fn the_hash_is_the_sha256_of_the_canonical_text() {
        let c = canonicalize(&json!({})).expect("canonicalises");
        assert_eq!(c.json, "{}");
        assert_eq!(
            c.hash,
            "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
        );
    }

    #[test]
    fn a_persian_order_hashes_like_its_english_twin() {
        let persian = json!({
            " vendor ": "شركت كاغذ يزد",
            "lines": [{"sku": "۰۰۱۲۳", "qty": "۱٬۲۰۰", "unit_price": "۱۲٫۵۰"}],
            "total": "۱۵٬۰۰۰",
        });
        let english = json!({
            "lines": [{"qty": 1200, "sku": "00123", "unit_price": 12.5}],
            "total": 15000,
            "vendor": "شرکت کاغذ یزد",
        });
        assert_eq!(
            canonicalize(&persian).expect("canonicalises"),
            canonicalize(&english).expect("canonicalises")
        );
    }

    #[test]
    fn numbers_have_one_form() {
        for (raw, canonical) in [
            (json!(1200), "1200"),
            (json!(1200.0), "1200"),
            (json!(12.50), "12.5"),
            (json!(-0.0), "0"),
            (json!(1e3), "1000"),
            (json!(1.5e-7), "0.00000015"),
            (json!(1e-22), "0.0000000000000000000001"),
            (json!(u64::MAX), "18446744073709551615"),
            (json!(i64::MIN), "-9223372036854775808"),
            (json!("-0"), "0"),
            (json!("1,200"), "1200"),
            (json!("1,234,567.50"), "1234567.5"),
            (json!("١٢٣٤"), "1234"),
            (json!(" 0.5 "), "0.5"),
        ] {
            assert_eq!(
                canon(json!({ "n": raw })),
                format!("{{\"n\":{canonical}}}"),
                "{raw}"
            );
        }
    }

    #[test]
    fn strings_that_only_look_numeric_stay_strings() {
        for raw in [
            "00123", "1,20", "12,3456", "+5", "1e3", ".5", "5.", "1 200", "0,123",
        ] {
            assert_eq!(
                canon(json!({ "sku": raw })),
                format!("{{\"sku\":\"{raw}\"}}"),
                "{raw}"
            );
        }
    }

    #[test]
    fn persian_separators_outside_numbers_are_kept() {
        assert_eq!(canon(json!({"note": "الف٬ب"})), "{\"note\":\"الف٬ب\"}");
    }

    #[test]
    fn numbers_that_a_float_parser_could_change_are_refused() {
        // Its canonical text would read back one unit in the last place off.
        for raw in [
            "-6.58188949330329e90",
            "1e20",
            "1e-23",
            "1234567890123456.5",
            "0.30000000000000004",
        ] {
            let args = serde_json::from_str(&format!("{{\"n\":{raw}}}")).expect("parses");
            assert!(
                matches!(
                    canonicalize(&args),
                    Err(CanonicalError::InvalidNumber { .. })
                ),
                "{raw}"
            );
        }
    }

    #[test]
    fn exact_numbers_read_back_unchanged() {
        for raw in [
            "123456789012345",
            "0.0000000123456789012345",
            "-99999999999999.9",
        ] {
            let c = canon(serde_json::from_str(&format!("{{\"n\":{raw}}}")).expect("parses"));
            assert_eq!(c, format!("{{\"n\":{raw}}}"));
            assert_eq!(canon(serde_json::from_str(&c).expect("parses")), c);
        }
    }

    #[test]
    fn long_numeric_strings_keep_every_digit_as_a_canonical_string() {
        let c = canon(json!({"amount": "۱۲۳٬۴۵۶٬۷۸۹٬۰۱۲٬۳۴۵٬۶۷۸٬۹۰۱٫۲۵۰"}));
        assert_eq!(c, r#"{"amount":"123456789012345678901.25"}"#);
        assert_eq!(canon(serde_json::from_str(&c).expect("parses")), c);
    }

    #[test]
    fn text_is_nfc_with_persian_letters_and_ascii_digits() {
        assert_eq!(normalize_text("  كيك\u{0649} ۱۲ "), "کیکی 12");
        // Alef followed by a combining madda composes to the single letter.
        assert_eq!(normalize_text("\u{0627}\u{0653}ب"), "\u{0622}ب");
        // NFC comes first: a decomposed yeh with hamza keeps its hamza.
        assert_eq!(normalize_text("\u{064A}\u{0654}"), "\u{0626}");
        assert_eq!(normalize_text("a  b\u{200C}c"), "a  b\u{200C}c");
        assert_eq!(fold_digits("۰۹ ٠٩ 09 ك"), "09 09 09 ك");
    }

    #[test]
    fn keys_are_sorted_by_code_point_and_normalised() {
        assert_eq!(
            canon(json!({"b": 1, "a": {"z": true, " y": null}, "ک": 2, "Z": 3})),
            r#"{"Z":3,"a":{"y":null,"z":true},"b":1,"ک":2}"#
        );
    }

    #[test]
    fn strings_are_escaped_as_serde_json_escapes_them() {
        let raw = "q\"b\\s\u{08}\u{0C}\n\r\t\u{01}\u{1F}\u{7F}\u{2028}é";
        let mut mine = String::new();
        write_json_string(&mut mine, raw);
        assert_eq!(mine, serde_json::to_string(raw).expect("serialises"));
    }

    #[test]
    fn amounts_accept_leading_zeros() {
        assert_eq!(canon(json!({"qty": "۰۰۷"})), r#"{"qty":7}"#);
    }

    #[test]
    fn a_non_numeric_amount_names_its_path() {
        let msg = error(json!({"lines": [{}, {}, {"qty": "twelve"}]}));
        assert!(
            msg.starts_with("args.lines[2].qty: an amount must be"),
            "{msg}"
        );
        let msg = error(json!({"order": {"total": null}}));
        assert!(msg.starts_with("args.order.total:"), "{msg}");
    }

    #[test]
    fn an_inexact_number_names_its_path_and_the_remedy() {
        let msg = error(json!({"unit price": 0.30000000000000004}));
        assert!(
            msg.starts_with("args[\"unit price\"]: this number"),
            "{msg}"
        );
        assert!(msg.ends_with("send it as a string"), "{msg}");
        let msg =
            error(serde_json::from_str(r#"{"n": 123456789012345678901234}"#).expect("parses"));
        assert!(msg.starts_with("args.n:"), "{msg}");
    }

    #[test]
    fn only_objects_are_arguments() {
        assert_eq!(
            error(json!([1])),
            "args must be a JSON object, not an array"
        );
        assert_eq!(
            error(json!("x")),
            "args must be a JSON object, not a string"
        );
    }

    #[test]
    fn nesting_is_limited() {
        let mut deep = json!({});
        for _ in 0..MAX_DEPTH {
            deep = json!({ "a": deep });
        }
        let msg = error(deep);
        assert!(msg.contains("deeper than 32 levels"), "{msg}");
        assert!(msg.starts_with("args.a.a."), "{msg}");
        let mut fits = json!({});
        for _ in 0..MAX_DEPTH - 1 {
            fits = json!([fits]);
        }
        assert!(canonicalize(&json!({ "a": fits })).is_err());
        let mut fits = json!(1);
        for _ in 0..MAX_DEPTH - 1 {
            fits = json!([fits]);
        }
        assert!(canonicalize(&json!({ "a": fits })).is_ok());
    }

    #[test]
    fn size_is_limited() {
        let big = "x".repeat(MAX_ARGS_BYTES);
        let err = canonicalize(&json!({ "note": big })).expect_err("too large");
        assert!(matches!(
            err,
            CanonicalError::TooLarge {
                limit: MAX_ARGS_BYTES,
                ..
            }
        ));
        assert!(err.to_string().contains("the limit is 65536"), "{err}");
    }

    #[test]
    fn keys_that_collide_after_normalisation_are_refused() {
        let msg = error(json!({"vendor": {"كد": 1, "کد": 2}}));
        assert_eq!(
            msg,
            "args.vendor[\"کد\"]: two keys of this object are the same once normalised"
        );
    }
}
