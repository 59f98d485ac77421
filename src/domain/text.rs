//! The one check of free text every API field gets: a length bound, and no characters that
//! hide or reorder what an operator reads. Control characters are refused (line breaks and
//! tabs too, unless the field is multi-line), and so are the invisible characters that
//! change how text is laid out without being seen: bidirectional embeddings, overrides and
//! isolates (U+202A–U+202E, U+2066–U+2069) and line and paragraph separators (U+2028,
//! U+2029). A purpose or reason showing one order while stating another is a spoofing tool
//! in a console that lays out Persian and English together. The joiners Persian is written
//! with (ZWNJ U+200C, ZWJ U+200D) and the marks LRM and RLM stay allowed.

/// Why a text field was refused; `Display` is the sentence the API sends.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TextProblem {
    #[error("must not be empty")]
    Empty,
    #[error("is {len} characters; the limit is {max}")]
    TooLong { len: usize, max: usize },
    #[error("must not contain control characters")]
    Control,
    #[error(
        "must not contain invisible layout characters (bidirectional controls, line separators)"
    )]
    Layout,
}

/// Whether `c` may not appear in a field; `multiline` lets line breaks and tabs through.
fn problem(c: char, multiline: bool) -> Option<TextProblem> {
    match c {
        '\n' | '\t' if multiline => None,
        '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{2028}' | '\u{2029}' => {
            Some(TextProblem::Layout)
        }
        c if c.is_control() => Some(TextProblem::Control),
        _ => None,
    }
}

/// Check `value` for a field of at most `max` characters. A `required` field must hold more
/// than white space.
pub fn check_text(
    value: &str,
    max: usize,
    required: bool,
    multiline: bool,
) -> Result<(), TextProblem> {
    if required && value.trim().is_empty() {
        return Err(TextProblem::Empty);
    }
    let len = value.chars().count();
    if len > max {
        return Err(TextProblem::TooLong { len, max });
    }
    match value.chars().find_map(|c| problem(c, multiline)) {
        Some(p) => Err(p),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn persian_joiners_pass_and_layout_controls_do_not() {
        assert_eq!(check_text("تأمین‌کننده", 100, true, false), Ok(()));
        assert_eq!(
            check_text("pay \u{202E}gnp.exe", 100, true, false),
            Err(TextProblem::Layout)
        );
        assert_eq!(
            check_text("a\u{2028}b", 100, true, false),
            Err(TextProblem::Layout)
        );
        assert_eq!(
            check_text("a\nb", 100, true, false),
            Err(TextProblem::Control)
        );
        assert_eq!(check_text("a\nb", 100, true, true), Ok(()));
        assert_eq!(check_text("  ", 100, true, false), Err(TextProblem::Empty));
        assert_eq!(check_text("", 100, false, false), Ok(()));
        assert_eq!(
            check_text("abcd", 3, true, false),
            Err(TextProblem::TooLong { len: 4, max: 3 })
        );
    }
}
