//! Bidirectional text for a shaper that has no bidirectional algorithm.
//!
//! egui shapes Arabic-script letters correctly but places every run left to right in
//! logical order, so Persian sentences with Latin ids or digits come out scrambled. This
//! module turns a logical string into [`Piece`]s in visual order (left to right), ready to be
//! drawn one shaping call per piece:
//!
//! 1. Each line is resolved with the Unicode Bidirectional Algorithm (`unicode-bidi`), with
//!    the base direction of the locale or, for [`Direction::Auto`], of the first strong
//!    character; this gives the visual runs of the line.
//! 2. Each run is split, by grapheme cluster, into pieces the shaper will lay out right to
//!    left (Arabic script, digits and tatweel included; other right-to-left scripts too)
//!    and everything else.
//! 3. In a right-to-left run the pieces are emitted in reverse order. Arabic pieces keep
//!    their logical order because the shaper reverses and joins them itself; other pieces
//!    (spaces, punctuation) are reversed grapheme by grapheme, with brackets and « »
//!    mirrored. In a left-to-right run pieces keep their order, and Arabic pieces (in
//!    practice Persian digits) are pre-reversed, because the shaper will reverse them.
//!
//! Explicit directional marks and isolates (LRM, RLM, ALM, LRE…PDF, LRI…PDI) take part in
//! the resolution and are then dropped from the pieces, as the algorithm's rule X9 allows:
//! no font draws them. Zero-width (non-)joiners stay; the shaper needs them.
//!
//! Wrapping and truncation work on the logical string ([`wrap_lines`],
//! [`truncate_logical`]); each resulting line is reordered afterwards.

use std::ops::Range;

use unicode_bidi::{Level, ParagraphBidiInfo};
use unicode_script::{Script, UnicodeScript};
use unicode_segmentation::UnicodeSegmentation;

use crate::domain::Locale;

/// The ellipsis [`truncate_logical`] appends.
pub const ELLIPSIS: char = '…';

/// A paragraph's base direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Direction {
    /// Left to right (English).
    #[default]
    Ltr,
    /// Right to left (Persian).
    Rtl,
    /// From the first strong character of each line; left to right when there is none.
    /// For text whose language is not known, such as a server's error message.
    Auto,
}

impl Direction {
    /// The base direction of the console's text in `locale`.
    pub fn for_locale(locale: Locale) -> Self {
        match locale {
            Locale::EnUs => Self::Ltr,
            Locale::FaIr => Self::Rtl,
        }
    }

    /// [`Direction::Ltr`] or [`Direction::Rtl`]: `self`, or for `Auto` the direction of the
    /// first strong character of `text`.
    pub fn resolve(self, text: &str) -> Self {
        match self {
            Self::Auto => match unicode_bidi::get_base_direction(text) {
                unicode_bidi::Direction::Rtl => Self::Rtl,
                _ => Self::Ltr,
            },
            fixed => fixed,
        }
    }

    fn level(self) -> Option<Level> {
        match self {
            Self::Ltr => Some(Level::ltr()),
            Self::Rtl => Some(Level::rtl()),
            Self::Auto => None,
        }
    }
}

/// One piece of a line in visual order, to be shaped on its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Piece {
    /// The characters to hand to the shaper, already arranged as described in the module
    /// documentation.
    pub text: String,
    /// Whether the piece lies in a right-to-left run.
    pub rtl: bool,
    /// Whether the shaper will lay the piece out right to left (Arabic script, including
    /// Persian digits and tatweel, or another right-to-left script).
    pub arabic: bool,
    /// The bytes of the logical string this piece shows.
    pub logical: Range<usize>,
}

/// The pieces of `text` in visual order, line by line; lines are separated by a piece
/// holding `"\n"`.
pub fn visual_runs(text: &str, base: Direction) -> Vec<Piece> {
    let mut out = Vec::new();
    for (i, line) in visual_lines(text, base).into_iter().enumerate() {
        if i > 0 {
            let at = out.last().map_or(0, |p: &Piece| p.logical.end);
            out.push(Piece {
                text: "\n".to_owned(),
                rtl: false,
                arabic: false,
                logical: at..at + 1,
            });
        }
        out.extend(line);
    }
    out
}

/// The pieces of each line of `text` (split at `\n`; a trailing `\r` is dropped), in
/// visual order. Logical ranges refer to `text`.
pub fn visual_lines(text: &str, base: Direction) -> Vec<Vec<Piece>> {
    let mut offset = 0;
    text.split('\n')
        .map(|raw| {
            let line = raw.strip_suffix('\r').unwrap_or(raw);
            let pieces = visual_line(line, offset, base);
            offset += raw.len() + 1;
            pieces
        })
        .collect()
}

/// The visual string of `text`: the pieces concatenated. What a reader sees only once the
/// shaper has reversed the Arabic pieces; useful in tests and logs.
pub fn visual_string(text: &str, base: Direction) -> String {
    visual_runs(text, base)
        .into_iter()
        .map(|p| p.text)
        .collect()
}

/// Wraps `text` in a left-to-right isolate (LRI … PDI), so that an id or key placed inside
/// a Persian sentence neither takes nor gives direction to its neighbours. The marks are
/// resolved and removed by [`visual_runs`].
pub fn isolate_ltr(text: &str) -> String {
    format!("\u{2066}{text}\u{2069}")
}

/// Wraps text a user or agent wrote in a first-strong isolate (FSI … PDI), so that inside
/// an interface sentence it keeps its own direction and order and lends none to its
/// neighbours (HTML's `<bdi>`). The marks are resolved and removed by [`visual_runs`].
pub fn isolate_auto(text: &str) -> String {
    format!("\u{2068}{text}\u{2069}")
}

fn visual_line(line: &str, offset: usize, base: Direction) -> Vec<Piece> {
    if line.is_empty() {
        return Vec::new();
    }
    let info = ParagraphBidiInfo::new(line, base.level());
    let (levels, runs) = info.visual_runs(0..line.len());
    let mut out = Vec::new();
    for run in runs {
        let rtl = levels.get(run.start).is_some_and(|l| l.is_rtl());
        let mut pieces = split_pieces(line, run);
        if rtl {
            pieces.reverse();
        }
        for (range, arabic) in pieces {
            let source = &line[range.clone()];
            let text = match (rtl, arabic) {
                (true, false) => reversed_graphemes(source, true),
                (false, true) => reversed_graphemes(source, false),
                _ => without_controls(source),
            };
            if text.is_empty() {
                continue;
            }
            out.push(Piece {
                text,
                rtl,
                arabic,
                logical: offset + range.start..offset + range.end,
            });
        }
    }
    out
}

/// Splits one visual run into maximal logical ranges of Arabic and non-Arabic graphemes.
fn split_pieces(line: &str, run: Range<usize>) -> Vec<(Range<usize>, bool)> {
    let mut pieces: Vec<(Range<usize>, bool)> = Vec::new();
    for (at, grapheme) in line[run.clone()].grapheme_indices(true) {
        let start = run.start + at;
        let end = start + grapheme.len();
        let arabic = match classify(grapheme) {
            Some(arabic) => arabic,
            // Directional marks join whatever piece they follow; they are dropped later.
            None => pieces.last().is_some_and(|p| p.1),
        };
        match pieces.last_mut() {
            Some((range, kind)) if *kind == arabic => range.end = end,
            _ => pieces.push((start..end, arabic)),
        }
    }
    pieces
}

/// `Some(true)` for a grapheme the shaper lays out right to left, `Some(false)` for others,
/// `None` for a lone directional mark.
fn classify(grapheme: &str) -> Option<bool> {
    if grapheme.chars().all(is_bidi_control) {
        return None;
    }
    Some(
        grapheme
            .chars()
            .any(|c| c == '\u{0640}' || shaped_rtl(c.script())),
    )
}

/// Scripts whose text the shaper lays out right to left.
fn shaped_rtl(script: Script) -> bool {
    matches!(
        script,
        Script::Arabic | Script::Hebrew | Script::Syriac | Script::Thaana | Script::Nko
    )
}

/// Whether `c` is an explicit directional mark or isolate, resolved but never drawn.
/// Whether `text` holds a right-to-left letter (Persian, Arabic, Hebrew...): text without one
/// reads the same laid out plainly, in either base direction of a left-to-right line.
pub fn has_rtl(text: &str) -> bool {
    text.chars().any(|c| {
        !c.is_ascii()
            && matches!(
                unicode_bidi::bidi_class(c),
                unicode_bidi::BidiClass::R | unicode_bidi::BidiClass::AL
            )
    })
}

pub fn is_bidi_control(c: char) -> bool {
    matches!(
        c,
        '\u{200E}' | '\u{200F}' | '\u{061C}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'
    )
}

fn without_controls(text: &str) -> String {
    text.chars().filter(|&c| !is_bidi_control(c)).collect()
}

fn reversed_graphemes(text: &str, mirror: bool) -> String {
    let clean = without_controls(text);
    clean
        .graphemes(true)
        .rev()
        .flat_map(|g| g.chars())
        .map(|c| if mirror { mirrored(c) } else { c })
        .collect()
}

/// The mirror image of a paired punctuation mark, as drawn in a right-to-left run.
fn mirrored(c: char) -> char {
    match c {
        '(' => ')',
        ')' => '(',
        '[' => ']',
        ']' => '[',
        '{' => '}',
        '}' => '{',
        '<' => '>',
        '>' => '<',
        '«' => '»',
        '»' => '«',
        '‹' => '›',
        '›' => '‹',
        '≤' => '≥',
        '≥' => '≤',
        other => other,
    }
}

/// Breaks `text` into lines no wider than `max_width`, greedily and in logical order:
/// at spaces where possible, between grapheme clusters when one word is too wide. `\n`
/// always breaks. Trailing spaces are trimmed. `measure` gives the drawn width of a
/// logical string.
pub fn wrap_lines(text: &str, max_width: f32, measure: impl Fn(&str) -> f32) -> Vec<String> {
    let mut lines = Vec::new();
    for paragraph in text.split('\n') {
        let paragraph = paragraph.strip_suffix('\r').unwrap_or(paragraph);
        let mut current = String::new();
        for word in words(paragraph) {
            let candidate = format!("{current}{word}");
            if current.is_empty() || measure(candidate.trim_end()) <= max_width {
                current = candidate;
            } else {
                lines.push(current.trim_end().to_owned());
                current = word.to_owned();
            }
            if measure(current.trim_end()) > max_width {
                let mut pieces = break_word(&current, max_width, &measure);
                current = pieces.pop().unwrap_or_default();
                lines.extend(pieces);
            }
        }
        lines.push(current.trim_end().to_owned());
    }
    lines
}

/// Words with their trailing whitespace; leading whitespace stays with the first word.
fn words(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut in_space = false;
    let mut seen_word = false;
    for (i, c) in text.char_indices() {
        let space = c.is_whitespace();
        if !space && in_space && seen_word {
            out.push(&text[start..i]);
            start = i;
        }
        seen_word |= !space;
        in_space = space;
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

/// Splits one over-wide word between grapheme clusters; the last part may still grow.
fn break_word(word: &str, max_width: f32, measure: &impl Fn(&str) -> f32) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    for g in word.graphemes(true) {
        let candidate = format!("{current}{g}");
        if !current.is_empty() && measure(candidate.trim_end()) > max_width {
            out.push(std::mem::take(&mut current));
            current.push_str(g);
        } else {
            current = candidate;
        }
    }
    out.push(current);
    out
}

/// The longest logical prefix of the first line of `text` that fits `max_width` together
/// with an appended [`ELLIPSIS`]; `text` itself when it fits. Cutting the logical end means
/// a Persian line loses its left end and an English line its right end.
pub fn truncate_logical(text: &str, max_width: f32, measure: impl Fn(&str) -> f32) -> String {
    let first_line = text.split('\n').next().unwrap_or_default();
    let first_line = first_line.strip_suffix('\r').unwrap_or(first_line);
    if first_line.len() == text.len() && measure(text) <= max_width {
        return text.to_owned();
    }
    let ends: Vec<usize> = first_line
        .grapheme_indices(true)
        .map(|(i, g)| i + g.len())
        .collect();
    let with_ellipsis = |end: usize| format!("{}{ELLIPSIS}", first_line[..end].trim_end());
    // Binary search for the longest prefix that fits; width grows with the prefix.
    let (mut lo, mut hi) = (0usize, ends.len());
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if measure(&with_ellipsis(ends[mid - 1])) <= max_width {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    match lo {
        0 => ELLIPSIS.to_string(),
        n => with_ellipsis(ends[n - 1]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(pieces: &[Piece]) -> Vec<&str> {
        pieces.iter().map(|p| p.text.as_str()).collect()
    }

    /// One unit per character: enough to test line breaking.
    fn chars(s: &str) -> f32 {
        s.chars().count() as f32
    }

    #[test]
    fn pure_persian_line_is_reversed_word_by_word() {
        let pieces = visual_runs("درخواست خرید تأیید شده", Direction::Rtl);
        assert_eq!(
            texts(&pieces),
            ["شده", " ", "تأیید", " ", "خرید", " ", "درخواست"]
        );
        assert!(pieces.iter().all(|p| p.rtl));
    }

    #[test]
    fn english_text_in_an_english_ui_is_one_piece() {
        let pieces = visual_runs("Purchase order approved", Direction::Ltr);
        assert_eq!(texts(&pieces), ["Purchase order approved"]);
        assert_eq!(pieces[0].logical, 0..23);
    }

    #[test]
    fn auto_direction_follows_the_first_strong_character() {
        assert_eq!(Direction::Auto.resolve("PO-1234 سفارش"), Direction::Ltr);
        assert_eq!(Direction::Auto.resolve("۱۲ سفارش PO"), Direction::Rtl);
        assert_eq!(Direction::Auto.resolve("1234"), Direction::Ltr);
        assert_eq!(
            texts(&visual_runs("سفارش PO", Direction::Auto)),
            ["PO", " ", "سفارش"]
        );
    }

    #[test]
    fn user_text_keeps_its_own_direction_inside_an_english_sentence() {
        // A purpose a Persian employee typed, as a supervisor opens it in English.
        let purpose = "پرداخت ۳۵٫۵ میلیون ریال به تأمین‌کننده ACME-IR در ۱۴۰۵/۰۹/۱۰";
        let own = visual_string(purpose, Direction::Rtl);
        assert_eq!(visual_string(purpose, Direction::Auto), own);
        assert_ne!(
            visual_string(purpose, Direction::Ltr),
            own,
            "laid out with the interface's direction the date lands before «در»"
        );
        let sentence = format!("Why: {}", isolate_auto(purpose));
        assert_eq!(
            visual_string(&sentence, Direction::Ltr),
            format!("Why: {own}")
        );
        // Latin text ending in a bracket keeps it at its end inside a Persian sentence.
        let reason = "ticket (OPS-4411)";
        let persian = format!("دلیل: {}", isolate_auto(reason));
        assert!(visual_string(&persian, Direction::Rtl).starts_with("ticket (OPS-4411) "));
    }

    #[test]
    fn isolates_and_marks_are_resolved_and_not_drawn() {
        let text = format!("کلید {} ثبت شد", isolate_ltr("pay:acme:12"));
        let visual = visual_string(&text, Direction::Rtl);
        assert_eq!(visual, "شد ثبت pay:acme:12 کلید");
    }

    #[test]
    fn brackets_are_mirrored_only_in_right_to_left_runs() {
        assert_eq!(visual_string("(a)", Direction::Ltr), "(a)");
        assert_eq!(visual_string("(مورد)", Direction::Rtl), "(مورد)");
        assert_eq!(visual_string("«سلام»", Direction::Rtl), "«سلام»");
    }

    #[test]
    fn multiple_lines_are_reordered_one_by_one() {
        let lines = visual_lines("الف ب\nج د", Direction::Rtl);
        assert_eq!(texts(&lines[0]), ["ب", " ", "الف"]);
        assert_eq!(texts(&lines[1]), ["د", " ", "ج"]);
        assert_eq!(lines[1][0].logical, 13..15);
    }

    #[test]
    fn wrapping_breaks_at_spaces_in_logical_order() {
        let lines = wrap_lines("aaa bb cccc d", 6.0, chars);
        assert_eq!(lines, ["aaa bb", "cccc d"]);
        let lines = wrap_lines("این یک متن است", 7.0, chars);
        assert_eq!(lines, ["این یک", "متن است"]);
    }

    #[test]
    fn an_over_wide_word_is_broken_between_graphemes() {
        assert_eq!(
            wrap_lines("abcdefgh ij", 3.0, chars),
            ["abc", "def", "gh", "ij"]
        );
        assert_eq!(wrap_lines("a\n\nb", 10.0, chars), ["a", "", "b"]);
    }

    #[test]
    fn truncation_cuts_the_logical_end() {
        assert_eq!(truncate_logical("short", 10.0, chars), "short");
        assert_eq!(truncate_logical("abcdef ghij", 7.0, chars), "abcdef…");
        assert_eq!(truncate_logical("سفارش خرید بزرگ", 7.0, chars), "سفارش…");
        assert_eq!(truncate_logical("abc", 0.5, chars), "…");
        assert_eq!(truncate_logical("ab\ncd", 10.0, chars), "ab…");
    }
}
