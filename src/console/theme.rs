//! The console's colours, in one place. `indeterminate` has its own colour, deliberately
//! unlike the colour of refusal: an unknown outcome is not a failure.

use egui::Color32;

use super::model::StateName;
use crate::domain::IntentState;

pub const COMMITTED: Color32 = Color32::from_rgb(46, 160, 67);
pub const EXECUTING: Color32 = Color32::from_rgb(56, 132, 244);
pub const INDETERMINATE: Color32 = Color32::from_rgb(214, 142, 0);
pub const REJECTED: Color32 = Color32::from_rgb(200, 60, 60);
pub const QUIET: Color32 = Color32::from_rgb(130, 130, 140);
pub const PREPARED: Color32 = Color32::from_rgb(120, 110, 200);
pub const UNKNOWN: Color32 = Color32::from_rgb(170, 90, 170);
pub const CHANGED_ROW: Color32 = Color32::from_rgba_unmultiplied_const(56, 132, 244, 40);
pub const STALE_BANNER: Color32 = Color32::from_rgb(120, 80, 0);
/// Behind the gate-revisit notice; its text is [`REVISIT_TEXT`].
pub const REVISIT_BANNER: Color32 = Color32::from_rgb(64, 44, 0);
pub const REVISIT_TEXT: Color32 = Color32::from_rgb(255, 214, 120);
pub const PAUSED: Color32 = Color32::from_rgb(180, 120, 40);

/// The colour a state is drawn in.
pub fn state_color(state: &StateName) -> Color32 {
    match state.known() {
        Some(IntentState::Committed) => COMMITTED,
        Some(IntentState::Executing | IntentState::Authorized) => EXECUTING,
        Some(IntentState::Indeterminate) => INDETERMINATE,
        Some(IntentState::Rejected) => REJECTED,
        Some(IntentState::New | IntentState::Prepared) => PREPARED,
        Some(IntentState::Cancelled | IntentState::Expired) => QUIET,
        None => UNKNOWN,
    }
}

// The intent timeline's marks and lines; which colour each outcome and mark takes is the
// timeline's (`views/timeline/colors.rs`).

pub const TIMELINE_DEADLINE: Color32 = Color32::from_rgb(220, 70, 70);
pub const TIMELINE_RESERVE: Color32 = Color32::from_rgba_premultiplied(24, 16, 0, 24);
pub const TIMELINE_KEY_FORGET: Color32 = Color32::from_rgb(190, 110, 200);
pub const TIMELINE_HEDGE: Color32 = Color32::from_rgb(120, 110, 200);
pub const TIMELINE_WEBHOOK: Color32 = Color32::from_rgb(160, 120, 230);
pub const TIMELINE_COMMAND: Color32 = Color32::from_rgb(80, 190, 220);
pub const TIMELINE_SELECTED: Color32 = Color32::from_rgba_premultiplied(22, 52, 96, 96);

/// Dashboard series, in order of the groups' names; chosen to stay apart on dark and light
/// backgrounds.
pub const SERIES: [Color32; 8] = [
    Color32::from_rgb(76, 140, 230),
    Color32::from_rgb(230, 150, 40),
    Color32::from_rgb(70, 170, 110),
    Color32::from_rgb(200, 90, 160),
    Color32::from_rgb(150, 120, 220),
    Color32::from_rgb(60, 180, 190),
    Color32::from_rgb(190, 170, 60),
    Color32::from_rgb(160, 160, 170),
];
/// A threshold line on a chart, and the top bar's badge when one is crossed.
pub const THRESHOLD: Color32 = Color32::from_rgb(220, 60, 60);
/// The retry budget marked on the attempts histogram.
pub const BUDGET: Color32 = Color32::from_rgb(150, 150, 160);
