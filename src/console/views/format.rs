//! Small formatting helpers shared by the views: durations and times as an operator reads
//! them. Numbers go through the localizer so Persian shows Persian digits.

use crate::i18n::Localizer;

/// A duration in milliseconds as `3d 4h`, `12m 5s` or `800ms`, in the locale's digits.
pub fn duration_ms(i18n: &Localizer, ms: i64) -> String {
    let sign = if ms < 0 { "-" } else { "" };
    let ms = ms.unsigned_abs();
    let text = if ms < 1_000 {
        format!("{ms}ms")
    } else if ms < 60_000 {
        format!("{}s", ms / 1_000)
    } else if ms < 3_600_000 {
        format!("{}m {}s", ms / 60_000, (ms / 1_000) % 60)
    } else if ms < 86_400_000 {
        format!("{}h {}m", ms / 3_600_000, (ms / 60_000) % 60)
    } else {
        format!("{}d {}h", ms / 86_400_000, (ms / 3_600_000) % 24)
    };
    localize_digits(i18n, &format!("{sign}{text}"))
}

/// Text with the locale's digits: Persian digits in the Persian UI. Never for ids, keys or
/// JSON, which always keep Latin digits.
pub fn localize_digits(i18n: &Localizer, text: &str) -> String {
    if i18n.locale() == crate::domain::Locale::FaIr {
        crate::i18n::digits::to_persian_digits(text)
    } else {
        text.to_string()
    }
}
