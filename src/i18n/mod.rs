//! Everything a person reads, in English or Persian: Fluent messages ([`Localizer`]),
//! numbers ([`digits`]), dates ([`calendar`]) and the visual order of bidirectional text
//! ([`bidi`]). Pure: no egui, no I/O; the console draws what this module produces.
//!
//! Messages live in `locales/<locale>/*.ftl` and are embedded at build time. Locale changes
//! presentation, never identity: ids, action keys and JSON pass through unchanged.
//!
//! Fluent's bidi isolation marks are switched off. Fluent would wrap every placeable in
//! FSI … PDI, which only helps a renderer that runs the bidirectional algorithm; egui does
//! not, so the marks would reach the font as missing glyphs and end up in copied text. The
//! console instead runs the algorithm itself over each whole formatted string
//! ([`bidi::visual_runs`]), where an id such as `PO-1234` or a number is already a run of
//! its own; a value that needs explicit isolation is wrapped with [`bidi::isolate_ltr`],
//! whose marks the layout resolves and removes.

pub mod bidi;
pub mod calendar;
pub mod digits;

use std::borrow::Cow;
use std::fmt;

use fluent_bundle::concurrent::FluentBundle;
use fluent_bundle::types::FluentNumber;
use fluent_bundle::{FluentArgs, FluentResource, FluentValue};
use unic_langid::LanguageIdentifier;

pub use bidi::Direction;

use crate::domain::Locale;

/// The Fluent files of each locale, embedded: `(file name, source)`.
const EN_US: &[(&str, &str)] = &[(
    "console.ftl",
    include_str!("../../locales/en-US/console.ftl"),
)];
const FA_IR: &[(&str, &str)] = &[(
    "console.ftl",
    include_str!("../../locales/fa-IR/console.ftl"),
)];

/// The embedded Fluent sources of `locale`, as `(file name, source)`.
pub fn sources(locale: Locale) -> &'static [(&'static str, &'static str)] {
    match locale {
        Locale::EnUs => EN_US,
        Locale::FaIr => FA_IR,
    }
}

/// A value passed into a Fluent message.
#[derive(Debug, Clone, PartialEq)]
pub enum Arg<'a> {
    /// Text shown as it is: an id, an action key, an already formatted date.
    Text(Cow<'a, str>),
    /// A number, formatted in the locale's digits and used for plural selection.
    Number(f64),
}

impl<'a> From<&'a str> for Arg<'a> {
    fn from(text: &'a str) -> Self {
        Self::Text(Cow::Borrowed(text))
    }
}

impl From<String> for Arg<'_> {
    fn from(text: String) -> Self {
        Self::Text(Cow::Owned(text))
    }
}

impl From<f64> for Arg<'_> {
    fn from(n: f64) -> Self {
        Self::Number(n)
    }
}

macro_rules! number_arg {
    ($($t:ty),*) => {$(
        impl From<$t> for Arg<'_> {
            fn from(n: $t) -> Self {
                // Counts and amounts shown to people; beyond 2^53 precision is not needed.
                Self::Number(n as f64)
            }
        }
    )*};
}
number_arg!(i32, i64, u32, u64, usize);

/// Formats the messages of one locale.
pub struct Localizer {
    locale: Locale,
    bundle: FluentBundle<FluentResource>,
}

impl fmt::Debug for Localizer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Localizer")
            .field("locale", &self.locale)
            .finish_non_exhaustive()
    }
}

impl Localizer {
    /// Loads the embedded messages of `locale`. A malformed entry is logged and skipped; the
    /// rest of the file still loads.
    pub fn new(locale: Locale) -> Self {
        let langid: LanguageIdentifier = locale.as_str().parse().unwrap_or_default();
        let mut bundle = FluentBundle::new_concurrent(vec![langid]);
        bundle.set_use_isolating(false);
        match locale {
            Locale::EnUs => bundle.set_formatter(Some(english_numbers)),
            Locale::FaIr => bundle.set_formatter(Some(persian_numbers)),
        }
        for (file, source) in sources(locale) {
            let resource = match FluentResource::try_new((*source).to_owned()) {
                Ok(resource) => resource,
                Err((resource, errors)) => {
                    tracing::error!(
                        locale = locale.as_str(),
                        file,
                        ?errors,
                        "malformed messages"
                    );
                    resource
                }
            };
            if let Err(errors) = bundle.add_resource(resource) {
                tracing::error!(
                    locale = locale.as_str(),
                    file,
                    ?errors,
                    "duplicate messages"
                );
            }
        }
        Self { locale, bundle }
    }

    /// The locale these messages are in.
    pub fn locale(&self) -> Locale {
        self.locale
    }

    /// Whether the locale is written right to left.
    pub fn is_rtl(&self) -> bool {
        matches!(self.locale, Locale::FaIr)
    }

    /// The base direction of text in this locale.
    pub fn direction(&self) -> Direction {
        Direction::for_locale(self.locale)
    }

    /// The message `id` (or attribute `id.attr`); the id itself when there is none.
    pub fn tr(&self, id: &str) -> String {
        self.format(id, None)
    }

    /// The message `id` with named values: `tr_args("table-count", &[("count", 12.into())])`.
    pub fn tr_args(&self, id: &str, args: &[(&str, Arg<'_>)]) -> String {
        let mut fluent_args = FluentArgs::with_capacity(args.len());
        for (name, value) in args {
            let value = match value {
                Arg::Text(text) => FluentValue::String(Cow::Borrowed(text.as_ref())),
                Arg::Number(n) => FluentValue::Number(FluentNumber::from(*n)),
            };
            fluent_args.set(*name, value);
        }
        self.format(id, Some(&fluent_args))
    }

    /// An integer in this locale's digits and separators.
    pub fn int(&self, n: i64) -> String {
        digits::format_int(n, self.locale)
    }

    /// A decimal number with `places` fraction digits in this locale's digits.
    pub fn decimal(&self, x: f64, places: usize) -> String {
        digits::format_decimal(x, places, self.locale)
    }

    /// A date in this locale's calendar (Solar Hijri in Persian).
    pub fn date(&self, unix_ms: u64, tz_offset_secs: i32) -> String {
        calendar::format_date(unix_ms, self.locale, tz_offset_secs)
    }

    /// A date and time in this locale's calendar.
    pub fn datetime(&self, unix_ms: u64, tz_offset_secs: i32) -> String {
        calendar::format_datetime(unix_ms, self.locale, tz_offset_secs)
    }

    /// The hover text of a date: its Gregorian form, labelled.
    pub fn date_tooltip(&self, unix_ms: u64, tz_offset_secs: i32) -> String {
        let date = calendar::gregorian_tooltip(unix_ms, self.locale, tz_offset_secs);
        self.tr_args("date-gregorian", &[("date", date.into())])
    }

    fn format(&self, id: &str, args: Option<&FluentArgs<'_>>) -> String {
        let (message_id, attribute) = match id.split_once('.') {
            Some((message, attribute)) => (message, Some(attribute)),
            None => (id, None),
        };
        let pattern = self
            .bundle
            .get_message(message_id)
            .and_then(|m| match attribute {
                Some(name) => m.get_attribute(name).map(|a| a.value()),
                None => m.value(),
            });
        let Some(pattern) = pattern else {
            tracing::debug!(locale = self.locale.as_str(), id, "missing message");
            return id.to_owned();
        };
        let mut errors = Vec::new();
        let text = self.bundle.format_pattern(pattern, args, &mut errors);
        if !errors.is_empty() {
            tracing::debug!(
                locale = self.locale.as_str(),
                id,
                ?errors,
                "message formatted with errors"
            );
        }
        text.into_owned()
    }
}

/// Numbers in English messages: grouped thousands, `.` decimal.
fn english_numbers<M>(value: &FluentValue<'_>, _intls: &M) -> Option<String> {
    format_fluent_number(value, Locale::EnUs)
}

/// Numbers in Persian messages: Persian digits, `٬` thousands, `٫` decimal.
fn persian_numbers<M>(value: &FluentValue<'_>, _intls: &M) -> Option<String> {
    format_fluent_number(value, Locale::FaIr)
}

fn format_fluent_number(value: &FluentValue<'_>, locale: Locale) -> Option<String> {
    let FluentValue::Number(n) = value else {
        return None;
    };
    let o = &n.options;
    Some(digits::format_number(
        n.value,
        o.minimum_fraction_digits,
        o.maximum_fraction_digits,
        o.use_grouping,
        locale,
    ))
}

#[cfg(test)]
mod tests;
