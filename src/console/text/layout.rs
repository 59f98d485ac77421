//! Text in visual order as egui layout jobs: one section per bidi piece, so egui shapes
//! each piece once and never reverses it a second time.

use egui::text::{ByteIndex, LayoutJob, LayoutSection, TextFormat};
use egui::{Color32, FontId, TextStyle, Ui, WidgetText};

use crate::i18n::bidi::{self, Direction, Piece};

/// `text` laid out in visual order, one section per piece, without wrapping. Lines are
/// left-aligned inside the job; the label functions right-align right-to-left lines.
pub fn layout_job(text: &str, base: Direction, font: FontId, color: Color32) -> LayoutJob {
    let format = TextFormat::simple(font, color);
    job_from_pieces(&bidi::visual_runs(text, base), &format)
}

fn job_from_pieces(pieces: &[Piece], format: &TextFormat) -> LayoutJob {
    let mut job = LayoutJob {
        break_on_newline: true,
        ..LayoutJob::default()
    };
    job.wrap.max_width = f32::INFINITY;
    for piece in pieces {
        let start = job.text.len();
        job.text.push_str(&piece.text);
        job.sections.push(LayoutSection {
            leading_space: 0.0,
            byte_range: ByteIndex(start)..ByteIndex(job.text.len()),
            format: format.clone(),
        });
    }
    job
}

/// One line of `text` as a ready galley for buttons, headers, menu entries and hover texts,
/// in the style's button font; egui colours it as it colours any widget text.
pub fn widget_text(ui: &Ui, text: &str, base: Direction) -> WidgetText {
    let font = TextStyle::Button.resolve(ui.style());
    let job = layout_job(text, base, font, Color32::PLACEHOLDER);
    WidgetText::Galley(ui.painter().layout_job(job))
}

/// The drawn width of one logical line.
pub fn measure(ui: &Ui, text: &str, base: Direction, font: &FontId) -> f32 {
    let job = layout_job(text, base, font.clone(), Color32::PLACEHOLDER);
    ui.painter().layout_job(job).size().x
}
