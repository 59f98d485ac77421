//! What the timeline keeps between frames, and how it moves: fitting, zooming, panning
//! and scrolling the lanes, kept within the intent.

use super::model::TimelineModel;

/// The narrowest visible range: a few milliseconds.
pub(super) const MIN_SPAN_MS: f64 = 4.0;

/// What the timeline keeps between frames: the visible range, the first lane shown and
/// the selected attempt.
#[derive(Debug, Clone, Default)]
pub struct TimelineView {
    pub(super) intent_id: String,
    /// The visible time range, ms relative to the intent's creation.
    pub t0: f64,
    pub t1: f64,
    /// The first lane shown (fractional while scrolling).
    pub top_lane: f32,
    /// The selected attempt, by index into the detail's attempts.
    pub selected: Option<usize>,
    pub(super) lanes_shown: f32,
    /// The label column sits on the right (a right-to-left locale); time still runs left
    /// to right, as the axis says.
    pub(super) rtl: bool,
}

impl TimelineView {
    /// Fit the whole intent when a new one is shown.
    pub fn sync(&mut self, model: &TimelineModel) {
        if self.intent_id != model.intent_id {
            *self = TimelineView {
                intent_id: model.intent_id.clone(),
                rtl: self.rtl,
                ..TimelineView::default()
            };
            self.fit(model);
        }
    }

    /// Show where things happened (and the deadline, when it is near) and the first lanes.
    pub fn fit(&mut self, model: &TimelineModel) {
        let (lo, hi) = model.activity_ms;
        let mut hi = hi.max(lo + 1_000);
        if let Some(deadline) = model.deadline_ms
            && deadline > hi
            && deadline - lo <= 4 * (hi - lo)
        {
            hi = deadline;
        }
        // An intent still open shows how long it has been waiting, when that is not far off.
        if model.open_state && model.now_ms > hi && model.now_ms - lo <= 2 * (hi - lo) {
            hi = model.now_ms;
        }
        let margin = (hi - lo) as f64 * 0.04;
        self.t0 = lo as f64 - margin;
        self.t1 = hi as f64 + margin;
        self.top_lane = 0.0;
    }

    /// Show everything from creation to the deadline (and any late result or "now").
    pub fn fit_span(&mut self, model: &TimelineModel) {
        self.t0 = model.span_ms.0 as f64;
        self.t1 = model.span_ms.1 as f64;
    }

    /// Zoom by `factor` (above 1 zooms in) keeping time `around` where it is on screen.
    pub fn zoom(&mut self, model: &TimelineModel, factor: f64, around: f64) {
        if !(factor.is_finite() && factor > 0.0) {
            return;
        }
        let width = self.t1 - self.t0;
        let span = (model.span_ms.1 - model.span_ms.0) as f64;
        let to_now = (model.now_ms - model.span_ms.0) as f64;
        let max = (span * 4.0).max(to_now * 1.1).max(MIN_SPAN_MS);
        let new_width = (width / factor).clamp(MIN_SPAN_MS, max);
        let at = if width > 0.0 {
            ((around - self.t0) / width).clamp(0.0, 1.0)
        } else {
            0.5
        };
        self.t0 = around - at * new_width;
        self.t1 = self.t0 + new_width;
        self.clamp(model);
    }

    /// Move the visible range by `dt` milliseconds.
    pub fn pan(&mut self, model: &TimelineModel, dt: f64) {
        self.t0 += dt;
        self.t1 += dt;
        self.clamp(model);
    }

    /// Scroll lanes by `by` (positive: further down the list).
    pub fn scroll_lanes(&mut self, model: &TimelineModel, by: f32) {
        self.top_lane += by;
        self.clamp(model);
    }

    /// Keep some of the intent in view and the lane scroll in range.
    fn clamp(&mut self, model: &TimelineModel) {
        let width = self.t1 - self.t0;
        let (lo, hi) = (model.span_ms.0 as f64, model.span_ms.1 as f64);
        let keep = width * 0.1;
        if self.t1 < lo + keep {
            self.t0 = lo + keep - width;
            self.t1 = lo + keep;
        }
        if self.t0 > hi - keep {
            self.t0 = hi - keep;
            self.t1 = hi - keep + width;
        }
        let max_top = (model.lanes.len() as f32 - self.lanes_shown.max(1.0)).max(0.0);
        self.top_lane = self.top_lane.clamp(0.0, max_top);
    }
}
