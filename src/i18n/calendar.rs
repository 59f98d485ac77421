//! Dates as the console shows them: Gregorian `2026-11-30` in English, Solar Hijri
//! `۱۴۰۵/۰۹/۰۹` in Persian, with the Gregorian date available for a hover text.
//!
//! The calendar conversion is `icu_calendar`'s Persian calendar; nothing here does calendar
//! arithmetic beyond splitting a Unix time into a day number and a time of day.

use icu_calendar::cal::Persian;
use icu_calendar::types::RataDie;
use icu_calendar::{Date, Iso};

use super::digits::to_persian_digits;
use crate::domain::Locale;

const MILLIS_PER_DAY: i64 = 86_400_000;
/// 1970-01-01 as a fixed day number (day 1 is 0001-01-01 of the proleptic Gregorian
/// calendar); checked against `icu_calendar` in the tests.
const UNIX_EPOCH: RataDie = RataDie::new(719_163);

/// A calendar date and a time of day, in one calendar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Parts {
    year: i32,
    month: u8,
    day: u8,
    hour: u32,
    minute: u32,
}

/// Splits a Unix time, shifted by the display time zone's offset, into a fixed day number
/// and milliseconds into that day.
fn local_day(unix_ms: u64, tz_offset_secs: i32) -> (RataDie, i64) {
    let ms = i64::try_from(unix_ms)
        .unwrap_or(i64::MAX)
        .saturating_add(i64::from(tz_offset_secs) * 1000);
    let days = ms.div_euclid(MILLIS_PER_DAY);
    (UNIX_EPOCH + days, ms.rem_euclid(MILLIS_PER_DAY))
}

fn gregorian_parts(unix_ms: u64, tz_offset_secs: i32) -> Parts {
    let (rd, ms_of_day) = local_day(unix_ms, tz_offset_secs);
    let date = Date::from_rata_die(rd, Iso);
    parts(
        date.year().extended_year(),
        date.month().ordinal,
        date.day_of_month().0,
        ms_of_day,
    )
}

fn solar_hijri_parts(unix_ms: u64, tz_offset_secs: i32) -> Parts {
    let (rd, ms_of_day) = local_day(unix_ms, tz_offset_secs);
    let date = Date::from_rata_die(rd, Persian);
    parts(
        date.year().extended_year(),
        date.month().ordinal,
        date.day_of_month().0,
        ms_of_day,
    )
}

fn parts(year: i32, month: u8, day: u8, ms_of_day: i64) -> Parts {
    let minutes = u32::try_from(ms_of_day / 60_000).unwrap_or(0);
    Parts {
        year,
        month,
        day,
        hour: minutes / 60,
        minute: minutes % 60,
    }
}

/// The date in the locale's calendar: `2026-11-30` (en-US), `۱۴۰۵/۰۹/۰۹` (fa-IR).
pub fn format_date(unix_ms: u64, locale: Locale, tz_offset_secs: i32) -> String {
    match locale {
        Locale::EnUs => {
            let p = gregorian_parts(unix_ms, tz_offset_secs);
            format!("{:04}-{:02}-{:02}", p.year, p.month, p.day)
        }
        Locale::FaIr => {
            let p = solar_hijri_parts(unix_ms, tz_offset_secs);
            to_persian_digits(&format!("{:04}/{:02}/{:02}", p.year, p.month, p.day))
        }
    }
}

/// The date and 24-hour time: `2026-11-30 14:05` (en-US), `۱۴۰۵/۰۹/۰۹ ۱۴:۰۵` (fa-IR).
pub fn format_datetime(unix_ms: u64, locale: Locale, tz_offset_secs: i32) -> String {
    let date = format_date(unix_ms, locale, tz_offset_secs);
    let p = gregorian_parts(unix_ms, tz_offset_secs);
    let time = format!("{:02}:{:02}", p.hour, p.minute);
    match locale {
        Locale::EnUs => format!("{date} {time}"),
        Locale::FaIr => format!("{date} {}", to_persian_digits(&time)),
    }
}

/// The Gregorian date and time for a hover text beside a displayed date, in the locale's
/// digits: `2026-11-30 14:05` (en-US), `۲۰۲۶/۱۱/۳۰ ۱۴:۰۵` (fa-IR). The words around it
/// ("Gregorian: …") come from the Fluent message `date-gregorian`.
pub fn gregorian_tooltip(unix_ms: u64, locale: Locale, tz_offset_secs: i32) -> String {
    let p = gregorian_parts(unix_ms, tz_offset_secs);
    match locale {
        Locale::EnUs => format!(
            "{:04}-{:02}-{:02} {:02}:{:02}",
            p.year, p.month, p.day, p.hour, p.minute
        ),
        Locale::FaIr => to_persian_digits(&format!(
            "{:04}/{:02}/{:02} {:02}:{:02}",
            p.year, p.month, p.day, p.hour, p.minute
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Unix milliseconds of midnight UTC on a Gregorian date, computed by `icu_calendar`.
    fn utc_midnight_ms(year: i32, month: u8, day: u8) -> u64 {
        let rd = Date::try_new_iso(year, month, day)
            .expect("valid test date")
            .to_rata_die();
        let days = rd - UNIX_EPOCH;
        u64::try_from(days * MILLIS_PER_DAY).expect("date after 1970")
    }

    #[test]
    fn the_epoch_constant_is_1970_01_01() {
        let epoch = Date::try_new_iso(1970, 1, 1).expect("valid date");
        assert_eq!(epoch.to_rata_die(), UNIX_EPOCH);
        assert_eq!(format_date(0, Locale::EnUs, 0), "1970-01-01");
    }

    #[test]
    fn november_30_2026_is_9_azar_1405() {
        let ms = utc_midnight_ms(2026, 11, 30);
        assert_eq!(format_date(ms, Locale::EnUs, 0), "2026-11-30");
        assert_eq!(format_date(ms, Locale::FaIr, 0), "۱۴۰۵/۰۹/۰۹");
    }

    #[test]
    fn nowruz_2025_is_the_first_day_of_1404() {
        let ms = utc_midnight_ms(2025, 3, 21);
        assert_eq!(format_date(ms, Locale::FaIr, 0), "۱۴۰۴/۰۱/۰۱");
        let eve = utc_midnight_ms(2025, 3, 20);
        assert_eq!(format_date(eve, Locale::FaIr, 0), "۱۴۰۳/۱۲/۳۰");
    }

    #[test]
    fn the_time_zone_offset_moves_the_date_and_time() {
        // 2026-11-29 22:00 UTC is 2026-11-30 01:30 in Tehran (UTC+03:30).
        let ms = utc_midnight_ms(2026, 11, 29) + 22 * 3_600_000;
        let tehran = 3 * 3600 + 1800;
        assert_eq!(format_datetime(ms, Locale::EnUs, 0), "2026-11-29 22:00");
        assert_eq!(
            format_datetime(ms, Locale::EnUs, tehran),
            "2026-11-30 01:30"
        );
        assert_eq!(
            format_datetime(ms, Locale::FaIr, tehran),
            "۱۴۰۵/۰۹/۰۹ ۰۱:۳۰"
        );
        assert_eq!(format_date(0, Locale::EnUs, -3600), "1969-12-31");
    }

    #[test]
    fn the_gregorian_hover_text_uses_the_locale_digits() {
        let ms = utc_midnight_ms(2026, 11, 30) + 14 * 3_600_000 + 5 * 60_000;
        assert_eq!(gregorian_tooltip(ms, Locale::EnUs, 0), "2026-11-30 14:05");
        assert_eq!(gregorian_tooltip(ms, Locale::FaIr, 0), "۲۰۲۶/۱۱/۳۰ ۱۴:۰۵");
    }
}
