//! Time on a chart's x axis, in the user's time zone: grid marks on round local times
//! (minutes, hours, days) and their labels in the locale's digits and calendar.

use std::sync::atomic::{AtomicBool, Ordering};

use chrono::{Local, Offset, TimeZone};
use egui_plot::{GridInput, GridMark};

use crate::i18n::Localizer;

/// Whether every time is shown in UTC instead of the machine's zone.
static IN_UTC: AtomicBool = AtomicBool::new(false);

/// Show every time in UTC (`--utc`: incident reports that compare machines, and pictures
/// that must not depend on where they were taken) or in the machine's zone.
pub fn show_times_in_utc(on: bool) {
    IN_UTC.store(on, Ordering::Relaxed);
}

/// The user's UTC offset at `unix_ms`, in seconds (daylight saving included); 0 when times
/// are shown in UTC.
pub fn local_offset_secs(unix_ms: u64) -> i32 {
    if IN_UTC.load(Ordering::Relaxed) {
        return 0;
    }
    i64::try_from(unix_ms)
        .ok()
        .and_then(|ms| Local.timestamp_millis_opt(ms).single())
        .map_or(0, |t| t.offset().fix().local_minus_utc())
}

/// Round steps for time marks, in milliseconds.
const STEPS_MS: &[u64] = &[
    1_000,
    5_000,
    15_000,
    60_000,
    300_000,
    900_000,
    1_800_000,
    3_600_000,
    10_800_000,
    21_600_000,
    43_200_000,
    86_400_000,
    604_800_000,
];

/// The step that puts about `marks` marks across `span_ms`.
pub fn step_for(span_ms: f64, marks: f64) -> u64 {
    let want = span_ms / marks.max(1.0);
    STEPS_MS
        .iter()
        .copied()
        .find(|&s| s as f64 >= want)
        .unwrap_or(604_800_000)
}

/// Marks on round local times within `bounds`, with `offset_secs` the user's offset.
pub fn marks(bounds: (f64, f64), width_px: f32, offset_secs: i32) -> Vec<GridMark> {
    let (lo, hi) = bounds;
    if hi <= lo || !lo.is_finite() || !hi.is_finite() {
        return Vec::new();
    }
    let step = step_for(hi - lo, f64::from((width_px / 90.0).max(2.0)));
    let offset = i64::from(offset_secs) * 1000;
    let step_i = step as i64;
    let first = ((lo as i64 + offset).div_euclid(step_i) + 1) * step_i - offset;
    let mut out = Vec::new();
    let mut t = first;
    while (t as f64) <= hi && out.len() < 200 {
        out.push(GridMark {
            value: t as f64,
            step_size: step as f64,
        });
        t += step_i;
    }
    out
}

/// A grid spacer for egui_plot in the user's time zone.
pub fn spacer(offset_secs: i32, width_px: f32) -> impl Fn(GridInput) -> Vec<GridMark> {
    move |input: GridInput| marks(input.bounds, width_px, offset_secs)
}

/// The label of a mark: time of day for short spans, the date for long ones.
pub fn label(i18n: &Localizer, unix_ms: f64, span_ms: f64, offset_secs: i32) -> String {
    if !unix_ms.is_finite() || unix_ms < 0.0 {
        return String::new();
    }
    let ms = unix_ms as u64;
    if span_ms > 3.0 * 86_400_000.0 {
        i18n.date(ms, offset_secs)
    } else {
        clock(i18n, ms, offset_secs)
    }
}

/// `HH:MM` in local time and the locale's digits.
pub fn clock(i18n: &Localizer, unix_ms: u64, offset_secs: i32) -> String {
    let local = (unix_ms as i64 + i64::from(offset_secs) * 1000).rem_euclid(86_400_000) / 60_000;
    let text = format!("{:02}:{:02}", local / 60, local % 60);
    super::super::format::localize_digits(i18n, &text)
}

/// A bucket as a reader names it: its date and local start and end times.
pub fn interval(i18n: &Localizer, start_ms: u64, bucket_ms: u64, offset_secs: i32) -> String {
    format!(
        "{} {} - {}",
        i18n.date(start_ms, offset_secs),
        clock(i18n, start_ms, offset_secs),
        clock(i18n, start_ms + bucket_ms, offset_secs)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_fall_on_round_local_times() {
        // 2025-11-30 00:00 UTC; Tehran is UTC+03:30.
        let t0 = 1_764_460_800_000.0;
        let m = marks((t0, t0 + 6.0 * 3_600_000.0), 600.0, 12_600);
        assert!(!m.is_empty());
        for mark in &m {
            let local = mark.value as i64 + 12_600_000;
            assert_eq!(local % mark.step_size as i64, 0);
        }
    }

    #[test]
    fn steps_grow_with_the_span() {
        assert_eq!(step_for(3_600_000.0, 6.0), 900_000);
        assert_eq!(step_for(7.0 * 86_400_000.0, 6.0), 604_800_000);
        assert_eq!(step_for(10_000.0, 6.0), 5_000);
    }

    #[test]
    fn clock_is_local() {
        let i18n = Localizer::new(crate::domain::Locale::EnUs);
        assert_eq!(clock(&i18n, 1_764_460_800_000, 12_600), "03:30");
    }
}
