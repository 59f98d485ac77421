//! The one way the console draws text that may be Persian: the Vazirmatn font, layout jobs
//! in visual order ([`layout_job`]), labels that wrap and truncate in logical order
//! ([`BidiLabel`], [`rtl_label`]) and a single-line editor ([`bidi_text_edit`]).
//!
//! egui shapes Arabic script but has no bidirectional algorithm, so every string goes
//! through [`crate::i18n::bidi`], which arranges it in visual order as pieces. Each piece
//! becomes its own [`egui::text::LayoutSection`], pushed directly: `LayoutJob::append`
//! merges neighbouring sections of the same format, and a merged section hands several
//! pieces to one shaping call, which reverses them a second time.
//!
//! A laid-out job holds visual-order text, so labels here are not selectable; their context
//! menu copies the logical string, and their accessibility label is the logical string.

mod edit;
mod fonts;
mod label;
mod layout;

pub use crate::i18n::bidi::Direction;
pub use edit::{BidiEditState, BidiTextEdit, bidi_text_edit};
pub use fonts::{PERSIAN_FONT, install_fonts};
pub use label::{BidiLabel, rtl_label, rtl_label_truncated, rtl_label_wrapped, set_copy_label};
pub use layout::{layout_job, measure, widget_text};
