//! The time axis: ticks every 1, 2 or 5 times a power of ten, labelled relative to the
//! intent's creation in the locale's digits.

use egui::{Align2, Color32, FontId, Stroke, pos2};

use super::geometry::Geometry;
use super::labels::{place, text_galley};
use crate::console::views::format;
use crate::i18n::Localizer;

/// Ticks every 1, 2 or 5 times a power of ten milliseconds, at least ~90 px apart.
pub(super) fn axis_ui(
    painter: &egui::Painter,
    i18n: &Localizer,
    geo: &Geometry,
    grid: Color32,
    weak: Color32,
) {
    let step = tick_step(90.0 / geo.px_per_ms);
    let first = (geo.t0 / step).ceil() as i64;
    let last = (geo.t1() / step).floor() as i64;
    let font = FontId::proportional(10.5);
    for k in first..=last.min(first + 200) {
        let t = k as f64 * step;
        let x = geo.x(t);
        painter.vline(
            x,
            geo.axis.bottom()..=geo.rect.bottom(),
            Stroke::new(1.0, grid),
        );
        place(
            painter,
            text_galley(
                painter,
                i18n,
                &tick_label(i18n, t, step),
                font.clone(),
                weak,
                true,
            ),
            pos2(x + 3.0, geo.axis.center().y),
            Align2::LEFT_CENTER,
        );
    }
}

/// The smallest of 1, 2, 5 × 10^k ms that is at least `min_ms`.
pub fn tick_step(min_ms: f64) -> f64 {
    let min_ms = min_ms.max(1.0);
    let mut power = 10f64.powf(min_ms.log10().floor());
    loop {
        for m in [1.0, 2.0, 5.0] {
            if m * power >= min_ms {
                return m * power;
            }
        }
        power *= 10.0;
    }
}

/// A tick's offset from creation: `+250ms`, `+1.5s`, `+12s`, `+2m30s`, `+1h05m`.
pub fn tick_label(i18n: &Localizer, t: f64, step: f64) -> String {
    let sign = if t < 0.0 { "-" } else { "+" };
    let ms = t.abs().round();
    let text = if ms == 0.0 {
        "0".to_string()
    } else if step < 1_000.0 && ms < 1_000.0 {
        format!("{ms}ms")
    } else if step < 1_000.0 {
        let places = if step >= 100.0 {
            1
        } else if step >= 10.0 {
            2
        } else {
            3
        };
        format!("{:.*}s", places, ms / 1_000.0)
    } else if ms < 60_000.0 {
        format!("{}s", (ms / 1_000.0).round())
    } else if ms < 3_600_000.0 {
        let secs = (ms / 1_000.0).round() as u64;
        if secs.is_multiple_of(60) {
            format!("{}m", secs / 60)
        } else {
            format!("{}m{:02}s", secs / 60, secs % 60)
        }
    } else {
        let mins = (ms / 60_000.0).round() as u64;
        format!("{}h{:02}m", mins / 60, mins % 60)
    };
    format::localize_digits(i18n, &format!("{sign}{text}"))
}
