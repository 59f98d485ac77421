//! Which of the theme's colours an attempt's outcome and each kind of mark are drawn in. An
//! unknown outcome (timed out, lost) has the indeterminate colour, never that of failure.

use egui::Color32;

use super::model::{MarkKind, Outcome};
use crate::console::theme;

/// The colour of an attempt's bar.
pub fn outcome_color(outcome: Outcome) -> Color32 {
    match outcome {
        Outcome::Succeeded => theme::COMMITTED,
        Outcome::Failed => theme::REJECTED,
        Outcome::TimedOut | Outcome::Lost => theme::INDETERMINATE,
        Outcome::Pending => theme::EXECUTING,
        Outcome::Abandoned => theme::QUIET,
        Outcome::Other => theme::UNKNOWN,
    }
}

/// The colour of a mark.
pub fn mark_color(kind: MarkKind) -> Color32 {
    match kind {
        MarkKind::Transition => theme::QUIET,
        MarkKind::Dispatch => theme::EXECUTING,
        MarkKind::LostResponse | MarkKind::Timeout => theme::INDETERMINATE,
        MarkKind::Lookup => theme::PREPARED,
        MarkKind::Replay | MarkKind::Receipt => theme::COMMITTED,
        MarkKind::Mismatch => theme::REJECTED,
        MarkKind::Webhook => theme::TIMELINE_WEBHOOK,
        MarkKind::Command => theme::TIMELINE_COMMAND,
    }
}
