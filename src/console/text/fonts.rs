//! The Persian font: Vazirmatn, registered with egui.

use egui::{FontData, FontFamily, FontInsert, FontPriority, InsertFontFamily};

/// Vazirmatn Regular (SIL Open Font License, `assets/fonts/OFL.txt`).
const VAZIRMATN: &[u8] = include_bytes!("../../../assets/fonts/Vazirmatn-Regular.ttf");

/// The name the Persian font is registered under.
pub const PERSIAN_FONT: &str = "Vazirmatn";

/// Adds Vazirmatn first in the proportional family (its Latin glyphs sit well beside its
/// Persian ones) and as a fallback in the monospace family, so Persian inside code-like
/// text still has glyphs.
pub fn install_fonts(ctx: &egui::Context) {
    ctx.add_font(FontInsert::new(
        PERSIAN_FONT,
        FontData::from_static(VAZIRMATN),
        vec![
            InsertFontFamily {
                family: FontFamily::Proportional,
                priority: FontPriority::Highest,
            },
            InsertFontFamily {
                family: FontFamily::Monospace,
                priority: FontPriority::Lowest,
            },
        ],
    ));
}
