//! The timeline widget of one intent, painted by hand (a trace viewer, not a chart):
//! the time axis from creation to the deadline and beyond, the intent's state row, the
//! events row (receipts, webhooks, operator commands), an overview strip that counts every
//! attempt per pixel column, and one lane per attempt with hedges grouped.
//!
//! Pan and zoom: Ctrl+wheel (or pinch) zooms around the pointer, the wheel scrolls lanes,
//! Shift+wheel and dragging pan; with the timeline focused or hovered, `+`/`-` (or W/S) zoom,
//! arrows (or A/D) pan, Page Up/Down page through lanes, Home fits everything. Hover shows
//! details; a click selects an attempt.
//!
//! A frame paints only what is visible: the lanes on screen, and marks merged per kind
//! where they fall within a few pixels ([`timeline_model::clusters`]); the overview strip
//! is one pass over the lanes ([`timeline_model::density`]). 10,000 attempts stay fluid.
//! The time axis runs left to right in both locales, as clocks and trace viewers do.

use egui::{
    EventFilter, Key, Modifiers, Pos2, Rect, Response, Sense, Stroke, Ui, Vec2, pos2, vec2,
};

pub use super::timeline_hover::legend_ui;
use super::timeline_model::{self, Cluster, Mark, Outcome, TimelineModel};
pub use super::timeline_paint::{paint_mark, tick_label, tick_step};
use crate::console::model::IntentDetail;
use crate::i18n::Localizer;

/// The height of one attempt lane.
pub const LANE_H: f32 = 18.0;
pub(super) const AXIS_H: f32 = 20.0;
pub(super) const STATE_H: f32 = 14.0;
pub(super) const EVENTS_H: f32 = 18.0;
pub(super) const OVERVIEW_H: f32 = 24.0;
pub(super) const HEADER_H: f32 = AXIS_H + STATE_H + EVENTS_H + OVERVIEW_H + 4.0;
pub(super) const MARK_R: f32 = 4.5;
/// The width of one character of a lane label.
pub(super) const LABEL_CHAR_W: f32 = 6.3;
/// Marks of one kind closer than this many pixels are drawn as one, with a count.
pub(super) const CLUSTER_GAP_PX: f32 = 7.0;
/// The narrowest visible range: a few milliseconds.
pub(super) const MIN_SPAN_MS: f64 = 4.0;
/// One key press zooms by this factor.
const KEY_ZOOM: f64 = 1.25;

/// What the timeline keeps between frames: the visible range, the first lane shown and
/// the selected attempt.
#[derive(Debug, Clone, Default)]
pub struct TimelineView {
    intent_id: String,
    /// The visible time range, ms relative to the intent's creation.
    pub t0: f64,
    pub t1: f64,
    /// The first lane shown (fractional while scrolling).
    pub top_lane: f32,
    /// The selected attempt, by index into the detail's attempts.
    pub selected: Option<usize>,
    lanes_shown: f32,
    /// The label column sits on the right (a right-to-left locale); time still runs left
    /// to right, as the axis says.
    rtl: bool,
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

/// Where everything sits this frame.
pub(super) struct Geometry {
    pub(super) rect: Rect,
    /// The time area (beside the label column), full height.
    pub(super) plot: Rect,
    /// The lane names: on the left, or on the right in a right-to-left locale.
    pub(super) label_col: Rect,
    pub(super) rtl: bool,
    pub(super) axis: Rect,
    pub(super) state_row: Rect,
    pub(super) events_row: Rect,
    pub(super) overview: Rect,
    pub(super) lanes: Rect,
    pub(super) t0: f64,
    pub(super) px_per_ms: f64,
    pub(super) top_lane: f32,
}

impl Geometry {
    fn new(rect: Rect, view: &TimelineView, label_chars: usize) -> Geometry {
        // Wide enough for the longest lane label (monospace), within reason.
        let wanted = label_chars as f32 * LABEL_CHAR_W + 20.0;
        let label_w = wanted.clamp(110.0, (rect.width() * 0.4).max(110.0));
        let (label_col, plot) = if view.rtl {
            let split = rect.right() - label_w;
            (
                Rect::from_min_max(pos2(split, rect.top()), rect.max),
                Rect::from_min_max(rect.min, pos2(split, rect.bottom())),
            )
        } else {
            let split = rect.left() + label_w;
            (
                Rect::from_min_max(rect.min, pos2(split, rect.bottom())),
                Rect::from_min_max(pos2(split, rect.top()), rect.max),
            )
        };
        let row = |top: f32, h: f32| {
            Rect::from_min_max(pos2(plot.left(), top), pos2(plot.right() - 6.0, top + h))
        };
        let axis = row(rect.top(), AXIS_H);
        let state_row = row(axis.bottom(), STATE_H);
        let events_row = row(state_row.bottom(), EVENTS_H);
        let overview = row(events_row.bottom() + 2.0, OVERVIEW_H);
        let lanes = Rect::from_min_max(
            pos2(rect.left(), rect.top() + HEADER_H + 2.0),
            pos2(rect.right(), rect.bottom()),
        );
        let width = (view.t1 - view.t0).max(MIN_SPAN_MS);
        Geometry {
            rect,
            plot,
            label_col,
            rtl: view.rtl,
            axis,
            state_row,
            events_row,
            overview,
            lanes,
            t0: view.t0,
            px_per_ms: f64::from(axis.width()) / width,
            top_lane: view.top_lane,
        }
    }

    pub(super) fn x(&self, t: f64) -> f32 {
        self.plot.left() + ((t - self.t0) * self.px_per_ms) as f32
    }

    pub(super) fn t(&self, x: f32) -> f64 {
        self.t0 + f64::from(x - self.plot.left()) / self.px_per_ms
    }

    pub(super) fn t1(&self) -> f64 {
        self.t(self.axis.right())
    }

    pub(super) fn lanes_shown(&self) -> f32 {
        self.lanes.height() / LANE_H
    }

    pub(super) fn lane_top(&self, lane: usize) -> f32 {
        self.lanes.top() + (lane as f32 - self.top_lane) * LANE_H
    }

    pub(super) fn lane_at(&self, y: f32, lanes: usize) -> Option<usize> {
        if !(self.lanes.top()..=self.lanes.bottom()).contains(&y) {
            return None;
        }
        let lane = (self.top_lane + (y - self.lanes.top()) / LANE_H).floor();
        (lane >= 0.0 && (lane as usize) < lanes).then_some(lane as usize)
    }

    pub(super) fn visible_lanes(&self, lanes: usize) -> std::ops::Range<usize> {
        let first = self.top_lane.floor().max(0.0) as usize;
        let last = (self.top_lane + self.lanes_shown()).ceil().max(0.0) as usize + 1;
        first.min(lanes)..last.min(lanes)
    }
}

/// Draw the timeline in the next `height` points of `ui`, full width.
pub fn timeline_ui(
    ui: &mut Ui,
    i18n: &Localizer,
    detail: &IntentDetail,
    model: &TimelineModel,
    view: &mut TimelineView,
    height: f32,
) -> Response {
    view.rtl = i18n.is_rtl();
    view.sync(model);
    let size = vec2(
        ui.available_width().max(240.0),
        height.max(HEADER_H + LANE_H * 2.0),
    );
    let (rect, response) = ui.allocate_exact_size(size, Sense::click_and_drag());
    response.widget_info(|| {
        egui::WidgetInfo::labeled(egui::Role::Canvas, true, i18n.tr("timeline-title"))
    });
    view.lanes_shown = Geometry::new(rect, view, model.label_chars).lanes_shown();
    read_input(ui, &response, model, view, rect);
    let geo = Geometry::new(rect, view, model.label_chars);
    if ui.is_rect_visible(rect) {
        super::timeline_paint::paint(ui, i18n, model, view, &geo, response.has_focus());
    }
    let hover = response.hover_pos().and_then(|pos| hit(model, &geo, pos));
    if let Some(pos) = response.hover_pos().filter(|p| geo.plot.contains(*p)) {
        // A hairline under the pointer, to read times off the axis.
        ui.painter().with_clip_rect(geo.plot).vline(
            pos.x,
            geo.rect.y_range(),
            Stroke::new(1.0, ui.visuals().weak_text_color().gamma_multiply(0.6)),
        );
    }
    if response.clicked()
        && let Some(Hit::Lane { lane, .. }) = hover
    {
        view.selected = Some(model.lanes[lane].attempt);
    }
    match hover {
        Some(hit) => {
            let t = response.hover_pos().map(|p| geo.t(p.x)).unwrap_or_default();
            response.on_hover_ui_at_pointer(|ui| {
                super::timeline_hover::hover_ui(ui, i18n, detail, model, hit, t)
            })
        }
        None => response,
    }
}

fn read_input(
    ui: &Ui,
    response: &Response,
    model: &TimelineModel,
    view: &mut TimelineView,
    rect: Rect,
) {
    let geo = Geometry::new(rect, view, model.label_chars);
    if response.clicked() || response.drag_started() {
        response.request_focus();
    }
    let focused = response.has_focus();
    if focused {
        ui.memory_mut(|m| {
            m.set_focus_lock_filter(
                response.id,
                EventFilter {
                    horizontal_arrows: true,
                    vertical_arrows: true,
                    tab: false,
                    escape: false,
                },
            )
        });
    }
    if response.hovered() {
        let (zoom, scroll, pointer) =
            ui.input(|i| (i.zoom_delta(), i.smooth_scroll_delta, i.pointer.hover_pos()));
        let around = pointer.map_or((view.t0 + view.t1) / 2.0, |p| geo.t(p.x));
        if zoom != 1.0 {
            view.zoom(model, f64::from(zoom), around);
        } else {
            if scroll.x != 0.0 {
                view.pan(model, -f64::from(scroll.x) / geo.px_per_ms);
            }
            if scroll.y != 0.0 {
                view.scroll_lanes(model, -scroll.y / LANE_H);
            }
        }
        // The timeline took the wheel: nothing around it scrolls too.
        ui.ctx().input_mut(|i| i.smooth_scroll_delta = Vec2::ZERO);
    }
    if response.dragged() {
        let d = response.drag_delta();
        view.pan(model, -f64::from(d.x) / geo.px_per_ms);
        view.scroll_lanes(model, -d.y / LANE_H);
    }
    let nothing_else_focused = ui.memory(|m| m.focused().is_none());
    if focused || (response.hovered() && nothing_else_focused) {
        let width = view.t1 - view.t0;
        let center = (view.t0 + view.t1) / 2.0;
        let page = geo.lanes_shown().floor().max(1.0);
        let pressed = |keys: &[Key]| {
            // Every alias is consumed, so none of them reaches another widget.
            ui.ctx().input_mut(|i| {
                let mut any = false;
                for key in keys {
                    any |= i.consume_key(Modifiers::NONE, *key);
                }
                any
            })
        };
        if pressed(&[Key::Plus, Key::Equals, Key::W]) {
            view.zoom(model, KEY_ZOOM, center);
        }
        if pressed(&[Key::Minus, Key::S]) {
            view.zoom(model, 1.0 / KEY_ZOOM, center);
        }
        if pressed(&[Key::ArrowLeft, Key::A]) {
            view.pan(model, -width * 0.1);
        }
        if pressed(&[Key::ArrowRight, Key::D]) {
            view.pan(model, width * 0.1);
        }
        if pressed(&[Key::ArrowUp]) {
            view.scroll_lanes(model, -1.0);
        }
        if pressed(&[Key::ArrowDown]) {
            view.scroll_lanes(model, 1.0);
        }
        if pressed(&[Key::PageUp]) {
            view.scroll_lanes(model, -page);
        }
        if pressed(&[Key::PageDown]) {
            view.scroll_lanes(model, page);
        }
        if pressed(&[Key::Home]) {
            view.fit(model);
        }
        if pressed(&[Key::End]) {
            view.fit_span(model);
        }
    }
}

/// What the pointer is over.
#[derive(Debug, Clone, Copy)]
pub(super) enum Hit {
    Lane { lane: usize, mark: Option<Mark> },
    State { band: usize, mark: Option<Cluster> },
    Event(Cluster),
    Overview { counts: [u32; Outcome::CLASSES] },
}

fn hit(model: &TimelineModel, geo: &Geometry, pos: Pos2) -> Option<Hit> {
    if geo.label_col.x_range().contains(pos.x) {
        return geo
            .lane_at(pos.y, model.lanes.len())
            .map(|lane| Hit::Lane { lane, mark: None });
    }
    let near = |clusters: Vec<Cluster>| {
        clusters
            .into_iter()
            .filter(|c| (c.x - pos.x).abs() <= MARK_R + 2.0)
            .min_by(|a, b| (a.x - pos.x).abs().total_cmp(&(b.x - pos.x).abs()))
    };
    let (t0, t1) = (geo.t(geo.plot.left() - 8.0), geo.t(geo.axis.right() + 8.0));
    if geo.state_row.y_range().contains(pos.y) {
        let t = geo.t(pos.x);
        let band = model
            .states
            .partition_point(|b| (b.from_ms as f64) <= t)
            .checked_sub(1)?;
        let mark = near(timeline_model::clusters(
            &model.state_marks,
            t0,
            t1,
            CLUSTER_GAP_PX,
            |t| geo.x(t),
        ));
        return Some(Hit::State { band, mark });
    }
    if geo.events_row.y_range().contains(pos.y) {
        return near(timeline_model::clusters(
            &model.event_marks,
            t0,
            t1,
            CLUSTER_GAP_PX,
            |t| geo.x(t),
        ))
        .map(Hit::Event);
    }
    if geo.overview.y_range().contains(pos.y) {
        let column = (pos.x - geo.plot.left()).max(0.0) as usize;
        let columns = geo.axis.width().max(1.0) as usize;
        let counts = timeline_model::density(&model.lanes, geo.t0, geo.t1(), columns);
        return counts.get(column).map(|&counts| Hit::Overview { counts });
    }
    let lane = geo.lane_at(pos.y, model.lanes.len())?;
    let mark = model.lanes[lane]
        .marks
        .iter()
        .filter(|m| (geo.x(m.at_ms as f64) - pos.x).abs() <= MARK_R + 2.0)
        .min_by(|a, b| {
            let da = (geo.x(a.at_ms as f64) - pos.x).abs();
            let db = (geo.x(b.at_ms as f64) - pos.x).abs();
            da.total_cmp(&db)
        })
        .copied();
    Some(Hit::Lane { lane, mark })
}
