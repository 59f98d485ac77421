//! The operator's alert thresholds: which figure each watches, the values it accepts, how
//! a typed value is read (Persian or Latin digits, in either locale) and refused with a
//! reason, and which thresholds an overview crosses. No drawing here: the dashboard's
//! controls edit these, the badge and the tiles light from [`fired`].

use crate::i18n::digits::{format_int, format_number, to_latin_digits};
use crate::i18n::{Arg, Localizer};
use crate::wire::Overview;

use super::state::DashboardSettings;

/// One threshold the operator sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Threshold {
    /// Duplicate effects beyond this many (0: any duplicate fires).
    Duplicates,
    /// Amplification p99 above this.
    AmplificationP99,
    /// The oldest indeterminate intent older than this many minutes.
    OldestIndeterminate,
    /// Goodput of the last hour lower than the hour before by more than this percentage.
    GoodputDrop,
    /// Late results as a percentage of attempts above this.
    LateResults,
}

/// Why a typed threshold was refused; the previous value stays in force.
#[derive(Debug, Clone, PartialEq)]
pub enum ThresholdError {
    Empty,
    NotANumber,
    NotWhole,
    OutOfRange { min: f64, max: f64 },
}

/// A threshold that an overview crosses: the figure and the limit it passed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fired {
    pub threshold: Threshold,
    pub value: f64,
    pub limit: f64,
}

impl Threshold {
    pub const ALL: [Threshold; 5] = [
        Threshold::Duplicates,
        Threshold::AmplificationP99,
        Threshold::OldestIndeterminate,
        Threshold::GoodputDrop,
        Threshold::LateResults,
    ];

    /// A stable name, for widget ids.
    pub fn id(self) -> &'static str {
        match self {
            Threshold::Duplicates => "duplicates",
            Threshold::AmplificationP99 => "amplification-p99",
            Threshold::OldestIndeterminate => "oldest-indeterminate",
            Threshold::GoodputDrop => "goodput-drop",
            Threshold::LateResults => "late-results",
        }
    }

    /// The Fluent id of the field's label.
    pub fn label_key(self) -> &'static str {
        match self {
            Threshold::Duplicates => "dashboard-threshold-duplicates",
            Threshold::AmplificationP99 => "dashboard-threshold-p99",
            Threshold::OldestIndeterminate => "dashboard-threshold-oldest",
            Threshold::GoodputDrop => "dashboard-threshold-goodput",
            Threshold::LateResults => "dashboard-threshold-late",
        }
    }

    /// The values accepted, inclusive.
    pub fn range(self) -> (f64, f64) {
        match self {
            Threshold::Duplicates => (0.0, 1_000_000.0),
            Threshold::AmplificationP99 => (1.0, 50.0),
            Threshold::OldestIndeterminate => (1.0, 10_000.0),
            Threshold::GoodputDrop => (1.0, 100.0),
            Threshold::LateResults => (0.0, 100.0),
        }
    }

    /// Whether only whole numbers are accepted.
    pub fn whole(self) -> bool {
        matches!(self, Threshold::Duplicates | Threshold::OldestIndeterminate)
    }

    fn percent(self) -> bool {
        matches!(self, Threshold::GoodputDrop | Threshold::LateResults)
    }

    pub fn value(self, s: &DashboardSettings) -> f64 {
        match self {
            Threshold::Duplicates => s.duplicate_effects_max as f64,
            Threshold::AmplificationP99 => s.amplification_p99_max,
            Threshold::OldestIndeterminate => s.oldest_indeterminate_max_mins as f64,
            Threshold::GoodputDrop => s.goodput_drop_max_pct,
            Threshold::LateResults => s.late_result_rate_max_pct,
        }
    }

    /// Put `v` in force (one [`Threshold::parse`] accepted).
    pub fn set(self, s: &mut DashboardSettings, v: f64) {
        match self {
            Threshold::Duplicates => s.duplicate_effects_max = v as u64,
            Threshold::AmplificationP99 => s.amplification_p99_max = v,
            Threshold::OldestIndeterminate => s.oldest_indeterminate_max_mins = v as u64,
            Threshold::GoodputDrop => s.goodput_drop_max_pct = v,
            Threshold::LateResults => s.late_result_rate_max_pct = v,
        }
    }

    /// Read a typed value: digits in either script, `.` or the Persian decimal separator,
    /// grouping separators ignored, a trailing percent sign allowed on percentages.
    pub fn parse(self, typed: &str) -> Result<f64, ThresholdError> {
        let latin = to_latin_digits(typed.trim());
        let mut text = latin.as_str();
        if self.percent() {
            text = text.trim_end_matches(['%', '\u{066A}']).trim_end();
        }
        let text: String = text
            .chars()
            .filter(|c| !matches!(c, ',' | '\u{066C}'))
            .map(|c| if c == '\u{066B}' { '.' } else { c })
            .collect();
        if text.is_empty() {
            return Err(ThresholdError::Empty);
        }
        // Only a plain decimal: no exponents, no `inf` or `NaN`.
        let unsigned = text.strip_prefix('-').unwrap_or(&text);
        let plain = !unsigned.is_empty()
            && unsigned.chars().all(|c| c.is_ascii_digit() || c == '.')
            && unsigned.chars().filter(|&c| c == '.').count() <= 1
            && unsigned.chars().any(|c| c.is_ascii_digit());
        let v: f64 = match text.parse() {
            Ok(v) if plain => v,
            _ => return Err(ThresholdError::NotANumber),
        };
        if self.whole() && v.fract() != 0.0 {
            return Err(ThresholdError::NotWhole);
        }
        let (min, max) = self.range();
        if !(min..=max).contains(&v) {
            return Err(ThresholdError::OutOfRange { min, max });
        }
        Ok(v)
    }

    /// A value as the field shows it, in the locale's digits.
    pub fn format(self, v: f64, i18n: &Localizer) -> String {
        if self.whole() {
            format_int(v as i64, i18n.locale())
        } else {
            format_number(v, None, Some(2), false, i18n.locale())
        }
    }

    /// What the badge says when this threshold fired, in the locale's words and digits.
    pub fn fired_text(self, f: &Fired, i18n: &Localizer) -> String {
        let pct = |x: f64| i18n.decimal(x, 1);
        let args: Vec<(&str, Arg<'_>)> = match self {
            Threshold::Duplicates => vec![("value", f.value.into()), ("limit", f.limit.into())],
            Threshold::AmplificationP99 => {
                vec![("value", f.value.into()), ("limit", f.limit.into())]
            }
            Threshold::OldestIndeterminate => vec![
                (
                    "age",
                    crate::console::views::format::duration_ms(i18n, (f.value * 1000.0) as i64)
                        .into(),
                ),
                ("limit", f.limit.into()),
            ],
            Threshold::GoodputDrop | Threshold::LateResults => vec![
                ("value", pct(f.value).into()),
                ("limit", pct(f.limit).into()),
            ],
        };
        let key = match self {
            Threshold::Duplicates => "dashboard-badge-duplicates",
            Threshold::AmplificationP99 => "dashboard-badge-p99",
            Threshold::OldestIndeterminate => "dashboard-badge-oldest",
            Threshold::GoodputDrop => "dashboard-badge-goodput",
            Threshold::LateResults => "dashboard-badge-late",
        };
        i18n.tr_args(key, &args)
    }
}

impl ThresholdError {
    /// The reason, in the locale's words, with the value that stays in force.
    pub fn message(&self, threshold: Threshold, previous: f64, i18n: &Localizer) -> String {
        let previous = threshold.format(previous, i18n);
        match self {
            ThresholdError::Empty => i18n.tr_args(
                "dashboard-threshold-error-empty",
                &[("previous", previous.into())],
            ),
            ThresholdError::NotANumber => i18n.tr_args(
                "dashboard-threshold-error-number",
                &[("previous", previous.into())],
            ),
            ThresholdError::NotWhole => i18n.tr_args(
                "dashboard-threshold-error-whole",
                &[("previous", previous.into())],
            ),
            ThresholdError::OutOfRange { min, max } => i18n.tr_args(
                "dashboard-threshold-error-range",
                &[
                    ("min", threshold.format(*min, i18n).into()),
                    ("max", threshold.format(*max, i18n).into()),
                    ("previous", previous.into()),
                ],
            ),
        }
    }
}

/// How far the last hour's goodput fell below the hour before's, in percent (`None` when
/// the hour before committed nothing, so there is nothing to fall from).
pub fn goodput_drop_pct(o: &Overview) -> Option<f64> {
    (o.committed_previous_hour > 0).then(|| {
        let before = o.committed_previous_hour as f64;
        (before - o.committed_last_hour as f64) / before * 100.0
    })
}

/// The thresholds of `s` that `o` crosses, in [`Threshold::ALL`]'s order.
pub fn fired(s: &DashboardSettings, o: &Overview) -> Vec<Fired> {
    let figure = |t: Threshold| -> Option<f64> {
        match t {
            Threshold::Duplicates => Some(o.duplicate_effects as f64),
            Threshold::AmplificationP99 => Some(o.amplification_p99 as f64),
            Threshold::OldestIndeterminate => Some(o.indeterminate_oldest_age_secs as f64),
            Threshold::GoodputDrop => goodput_drop_pct(o),
            Threshold::LateResults => Some(o.late_result_rate * 100.0),
        }
    };
    Threshold::ALL
        .into_iter()
        .filter_map(|t| {
            let value = figure(t)?;
            let limit = t.value(s);
            let over = match t {
                Threshold::OldestIndeterminate => value > limit * 60.0,
                _ => value > limit,
            };
            over.then_some(Fired {
                threshold: t,
                value,
                limit,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Locale;

    fn en() -> Localizer {
        Localizer::new(Locale::EnUs)
    }

    fn fa() -> Localizer {
        Localizer::new(Locale::FaIr)
    }

    #[test]
    fn persian_and_latin_digits_read_the_same() {
        for (typed, want) in [
            ("۱۵", 15.0),
            ("15", 15.0),
            ("٢٠", 20.0),
            (" ۳ ", 3.0),
            ("۱٬۰۰۰", 1000.0),
        ] {
            assert_eq!(
                Threshold::OldestIndeterminate.parse(typed),
                Ok(want),
                "{typed}"
            );
        }
        assert_eq!(Threshold::AmplificationP99.parse("۲٫۵"), Ok(2.5));
        assert_eq!(Threshold::AmplificationP99.parse("2.5"), Ok(2.5));
        assert_eq!(Threshold::LateResults.parse("۷٪"), Ok(7.0));
        assert_eq!(Threshold::GoodputDrop.parse("40 %"), Ok(40.0));
    }

    #[test]
    fn text_is_refused_as_not_a_number() {
        for typed in ["ten", "ده", "1e3", "inf", "NaN", "3.4.5", "-", "."] {
            assert_eq!(
                Threshold::AmplificationP99.parse(typed),
                Err(ThresholdError::NotANumber),
                "{typed}"
            );
        }
        assert_eq!(
            Threshold::AmplificationP99.parse("  "),
            Err(ThresholdError::Empty)
        );
        // A percent sign is for percentages only.
        assert_eq!(
            Threshold::AmplificationP99.parse("3%"),
            Err(ThresholdError::NotANumber)
        );
    }

    #[test]
    fn out_of_range_and_fractions_of_whole_thresholds_are_refused() {
        assert_eq!(
            Threshold::AmplificationP99.parse("۰٫۵"),
            Err(ThresholdError::OutOfRange {
                min: 1.0,
                max: 50.0
            })
        );
        assert_eq!(
            Threshold::LateResults.parse("101"),
            Err(ThresholdError::OutOfRange {
                min: 0.0,
                max: 100.0
            })
        );
        assert!(matches!(
            Threshold::Duplicates.parse("-1"),
            Err(ThresholdError::OutOfRange { .. })
        ));
        assert_eq!(
            Threshold::OldestIndeterminate.parse("۲٫۵"),
            Err(ThresholdError::NotWhole)
        );
    }

    #[test]
    fn the_reason_is_said_in_each_locale_with_its_digits() {
        let range = ThresholdError::OutOfRange {
            min: 1.0,
            max: 50.0,
        };
        let t = Threshold::AmplificationP99;
        let english = range.message(t, 3.0, &en());
        assert!(english.contains("between 1 and 50"), "{english}");
        assert!(english.contains("3 stays"), "{english}");
        let persian = range.message(t, 3.0, &fa());
        assert!(persian.contains("۱") && persian.contains("۵۰"), "{persian}");
        assert!(persian.contains("۳"), "{persian}");
        assert!(!persian.chars().any(|c| c.is_ascii_digit()), "{persian}");
        let text = ThresholdError::NotANumber.message(t, 2.5, &fa());
        assert!(text.contains("۲٫۵"), "{text}");
        assert_ne!(text, ThresholdError::NotANumber.message(t, 2.5, &en()));
    }

    #[test]
    fn a_field_shows_its_value_in_the_locales_digits() {
        let t = Threshold::AmplificationP99;
        assert_eq!(t.format(2.5, &fa()), "۲٫۵");
        assert_eq!(t.format(3.0, &en()), "3");
        assert_eq!(Threshold::Duplicates.format(1000.0, &fa()), "۱٬۰۰۰");
        // What a field shows reads back as the same value.
        for t in Threshold::ALL {
            for l in [en(), fa()] {
                let v = t.value(&DashboardSettings::default());
                assert_eq!(t.parse(&t.format(v, &l)), Ok(v), "{t:?}");
            }
        }
    }

    #[test]
    fn each_threshold_fires_only_past_its_limit() {
        let s = DashboardSettings::default();
        let quiet = Overview {
            amplification_p99: 3,
            indeterminate_oldest_age_secs: 600,
            committed_last_hour: 50,
            committed_previous_hour: 100,
            late_results: 5,
            attempts: 100,
            late_result_rate: 0.05,
            ..Overview::default()
        };
        assert_eq!(fired(&s, &quiet), []);
        let loud = Overview {
            duplicate_effects: 1,
            amplification_p99: 4,
            indeterminate_oldest_age_secs: 601,
            committed_last_hour: 49,
            late_result_rate: 0.051,
            ..quiet.clone()
        };
        let names: Vec<Threshold> = fired(&s, &loud).iter().map(|f| f.threshold).collect();
        assert_eq!(names, Threshold::ALL);
        // No hour before: nothing to drop from.
        let first_hour = Overview {
            committed_previous_hour: 0,
            committed_last_hour: 0,
            ..quiet.clone()
        };
        assert_eq!(fired(&s, &first_hour), []);
    }
}
