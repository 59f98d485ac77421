//! Where the timeline's parts sit this frame (rows, the label column, the lanes, time to
//! pixels and back), and what the pointer is over.

use egui::{Pos2, Rect, pos2};

use super::cull;
use super::cull::Cluster;
use super::model::{Mark, Outcome, TimelineModel};
use super::view::{MIN_SPAN_MS, TimelineView};

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
    pub(super) fn new(rect: Rect, view: &TimelineView, label_chars: usize) -> Geometry {
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

/// What the pointer is over.
#[derive(Debug, Clone, Copy)]
pub(super) enum Hit {
    Lane { lane: usize, mark: Option<Mark> },
    State { band: usize, mark: Option<Cluster> },
    Event(Cluster),
    Overview { counts: [u32; Outcome::CLASSES] },
}

pub(super) fn hit(model: &TimelineModel, geo: &Geometry, pos: Pos2) -> Option<Hit> {
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
        let mark = near(cull::clusters(
            &model.state_marks,
            t0,
            t1,
            CLUSTER_GAP_PX,
            |t| geo.x(t),
        ));
        return Some(Hit::State { band, mark });
    }
    if geo.events_row.y_range().contains(pos.y) {
        return near(cull::clusters(
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
        let counts = cull::density(&model.lanes, geo.t0, geo.t1(), columns);
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
