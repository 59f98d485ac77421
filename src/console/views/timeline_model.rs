//! The timeline of one intent as data: one lane per attempt (hedges side by side), the
//! intent's state over time, the marks (transitions, dispatches, lost responses, timeouts,
//! lookups, receipts, webhooks, operator commands) and the lines (deadline, confirmation
//! reserve, key retention, now). Built once per detail; [`crate::console::views::timeline`]
//! draws it.
//!
//! The drawing asks this module for what falls inside the visible range only, already
//! aggregated to the pixel: marks closer than a few pixels become one cluster with a count
//! ([`clusters`]), and the overview strip counts attempts per pixel column ([`density`]),
//! so an intent with 10,000 attempts costs a frame what a few hundred do.
//!
//! Times are milliseconds relative to the intent's creation (`i64`: late results and clock
//! skew may put an event before or after anything expected).

use crate::console::model::{AttemptRow, IntentDetail, StateName};
use crate::domain::retry::RetryPolicy;

/// How one attempt ended, as the timeline colours it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    Pending,
    Succeeded,
    Failed,
    /// The response did not come in time: unknown, never drawn as failed.
    TimedOut,
    /// The connection broke after the request may have been sent: unknown.
    Lost,
    Abandoned,
    /// A name this console does not know.
    Other,
}

impl Outcome {
    pub fn parse(raw: &str) -> Outcome {
        match raw {
            "pending" => Outcome::Pending,
            "succeeded" => Outcome::Succeeded,
            "failed" => Outcome::Failed,
            "timed_out" => Outcome::TimedOut,
            "lost" => Outcome::Lost,
            "abandoned" => Outcome::Abandoned,
            _ => Outcome::Other,
        }
    }

    /// The overview strip stacks these classes, in this order.
    pub const CLASSES: usize = 4;

    /// 0 succeeded, 1 unknown (timed out, lost), 2 failed, 3 other (pending, abandoned).
    pub fn class(self) -> usize {
        match self {
            Outcome::Succeeded => 0,
            Outcome::TimedOut | Outcome::Lost => 1,
            Outcome::Failed => 2,
            Outcome::Pending | Outcome::Abandoned | Outcome::Other => 3,
        }
    }
}

/// What a mark says happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MarkKind {
    /// The intent changed state (state row).
    Transition,
    /// A dispatch crossed the action boundary (attempt start).
    Dispatch,
    /// The connection broke after sending: outcome unknown (attempt end).
    LostResponse,
    /// No answer in time (attempt end).
    Timeout,
    /// A lookup by action key (attempt start).
    Lookup,
    /// The downstream answered with the first result for a key it had seen (attempt end).
    Replay,
    /// The downstream refused the key with a different body, 422 (attempt end).
    Mismatch,
    /// A receipt from the dispatch answer or a lookup (events row).
    Receipt,
    /// A receipt delivered by webhook (events row).
    Webhook,
    /// An operator command (events row).
    Command,
}

impl MarkKind {
    /// Every kind, in legend order.
    pub const ALL: [MarkKind; 10] = [
        MarkKind::Transition,
        MarkKind::Dispatch,
        MarkKind::LostResponse,
        MarkKind::Timeout,
        MarkKind::Lookup,
        MarkKind::Replay,
        MarkKind::Mismatch,
        MarkKind::Receipt,
        MarkKind::Webhook,
        MarkKind::Command,
    ];

    /// The Fluent id of its legend label.
    pub fn label_key(self) -> &'static str {
        match self {
            MarkKind::Transition => "timeline-mark-transition",
            MarkKind::Dispatch => "timeline-mark-dispatch",
            MarkKind::LostResponse => "timeline-mark-lost",
            MarkKind::Timeout => "timeline-mark-timeout",
            MarkKind::Lookup => "timeline-mark-lookup",
            MarkKind::Replay => "timeline-mark-replay",
            MarkKind::Mismatch => "timeline-mark-mismatch",
            MarkKind::Receipt => "timeline-mark-receipt",
            MarkKind::Webhook => "timeline-mark-webhook",
            MarkKind::Command => "timeline-mark-command",
        }
    }
}

/// One mark. `source` indexes the list it came from: transitions for
/// [`MarkKind::Transition`], receipts for receipts and webhooks, commands for commands,
/// attempts for the rest.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Mark {
    pub at_ms: i64,
    pub kind: MarkKind,
    pub source: usize,
}

/// One attempt's lane.
#[derive(Debug, Clone, PartialEq)]
pub struct Lane {
    /// Index into `IntentDetail::attempts`.
    pub attempt: usize,
    /// `provider / region / release / kind`.
    pub label: String,
    pub start_ms: i64,
    pub end_ms: i64,
    /// Still running: the bar ends at "now".
    pub open: bool,
    pub outcome: Outcome,
    pub late: bool,
    /// Index into [`TimelineModel::groups`] for a hedged attempt.
    pub group: Option<usize>,
    /// Sorted by time.
    pub marks: Vec<Mark>,
}

/// Attempts that ran as hedges of each other: lanes `first..=last`.
#[derive(Debug, Clone, PartialEq)]
pub struct HedgeGroup {
    pub name: String,
    pub first: usize,
    pub last: usize,
}

/// The intent in one state from `from_ms` to `to_ms`.
#[derive(Debug, Clone, PartialEq)]
pub struct StateBand {
    pub from_ms: i64,
    pub to_ms: i64,
    pub state: StateName,
}

/// Everything the timeline draws for one intent.
#[derive(Debug, Clone, PartialEq)]
pub struct TimelineModel {
    pub intent_id: String,
    /// The intent's creation, unix ms: time zero of the axis.
    pub origin_ms: u64,
    /// The whole span worth showing: creation to the deadline or the last event, whichever
    /// is later, plus a margin.
    pub span_ms: (i64, i64),
    /// Where things happened: the first to the last attempt, transition, receipt or command
    /// (an attempt still running counts to now).
    pub activity_ms: (i64, i64),
    pub deadline_ms: Option<i64>,
    /// From here to the deadline is kept free to confirm an outcome; no retry starts inside.
    pub reserve_ms: Option<i64>,
    /// When the downstream may forget the action key.
    pub key_forget_ms: Option<i64>,
    pub now_ms: i64,
    pub lanes: Vec<Lane>,
    pub groups: Vec<HedgeGroup>,
    pub states: Vec<StateBand>,
    /// The last state is not final: its band runs to now.
    pub open_state: bool,
    /// Transitions, sorted by time.
    pub state_marks: Vec<Mark>,
    /// Receipts, webhooks and operator commands, sorted by time.
    pub event_marks: Vec<Mark>,
    /// When pauses covered the intent: from, and to (`None` while still paused).
    pub paused: Vec<(i64, Option<i64>)>,
    /// The longest lane label, in characters: the label column's width.
    pub label_chars: usize,
}

fn rel(at_ms: u64, origin: u64) -> i64 {
    at_ms as i64 - origin as i64
}

/// `provider / region / release / kind`, with `-` for what the attempt did not report.
pub fn lane_label(a: &AttemptRow) -> String {
    let dash = |v: &Option<String>| v.clone().filter(|s| !s.is_empty()).unwrap_or("-".into());
    format!(
        "{} / {} / {} / {}",
        a.provider,
        dash(&a.region),
        dash(&a.release_id),
        a.kind
    )
}

impl TimelineModel {
    /// Lay the intent out; `now_ms` (unix) ends the bars of attempts still running.
    pub fn build(detail: &IntentDetail, now_unix_ms: u64) -> TimelineModel {
        let intent = &detail.intent;
        let origin = intent.created_at_ms;
        let now_ms = rel(now_unix_ms, origin);
        let (lanes, groups) = lanes(detail, origin, now_ms);
        let (states, state_marks) = states(detail, origin, now_ms);
        let mut event_marks = Vec::with_capacity(detail.receipts.len() + detail.commands.len());
        for (i, r) in detail.receipts.iter().enumerate() {
            let kind = if r.source == "webhook" {
                MarkKind::Webhook
            } else {
                MarkKind::Receipt
            };
            event_marks.push(Mark {
                at_ms: rel(r.received_at_ms, origin),
                kind,
                source: i,
            });
        }
        for (i, c) in detail.commands.iter().enumerate() {
            // A dry run changed nothing; the audit trail lists it, the timeline does not.
            if !c.dry_run {
                event_marks.push(Mark {
                    at_ms: rel(c.created_at_ms, origin),
                    kind: MarkKind::Command,
                    source: i,
                });
            }
        }
        event_marks.sort_by_key(|m| (m.at_ms, m.kind));

        let deadline_ms = (intent.deadline_at_ms > 0).then(|| rel(intent.deadline_at_ms, origin));
        let reserve = RetryPolicy::default().confirmation_reserve_ms as i64;
        let reserve_ms = deadline_ms.map(|d| (d - reserve).max(0));
        let key_forget_ms = detail.key_forget_at_ms.map(|f| rel(f, origin));

        let mut last = deadline_ms.unwrap_or(0);
        for lane in &lanes {
            last = last.max(lane.end_ms);
        }
        for m in state_marks.iter().chain(event_marks.iter()) {
            last = last.max(m.at_ms);
        }
        let mut activity = (i64::MAX, i64::MIN);
        for (a, b) in lanes.iter().map(|l| (l.start_ms, l.end_ms)).chain(
            state_marks
                .iter()
                .chain(event_marks.iter())
                .map(|m| (m.at_ms, m.at_ms)),
        ) {
            activity = (activity.0.min(a), activity.1.max(b));
        }
        if activity.0 > activity.1 {
            activity = (0, 0);
        }
        // An open intent's age matters: "now" is in view, unless it would squeeze the rest
        // to less than half the width (then it is a zoom-out away).
        let open_state = !intent.state.known().is_some_and(|s| s.is_terminal());
        if open_state && now_ms > last && now_ms <= last * 2 {
            last = now_ms;
        }
        let mut first = 0i64;
        for lane in &lanes {
            first = first.min(lane.start_ms);
        }
        let width = (last - first).max(1_000);
        let margin = width / 30;
        let span_ms = (first - margin, last + margin);
        let mut states = states;
        if !open_state && let Some(final_band) = states.last_mut() {
            // A final state holds from then on.
            final_band.to_ms = span_ms.1.max(final_band.from_ms);
        }
        let paused = detail
            .pauses
            .iter()
            .map(|p| {
                let to = p.resumed_at_ms.map(|t| rel(t, origin));
                (rel(p.created_at_ms, origin), to)
            })
            .collect();
        let label_chars = lanes
            .iter()
            .map(|l| l.label.chars().count())
            .max()
            .unwrap_or(0);
        TimelineModel {
            intent_id: intent.id.to_string(),
            origin_ms: origin,
            span_ms,
            activity_ms: activity,
            deadline_ms,
            reserve_ms,
            key_forget_ms,
            now_ms,
            lanes,
            groups,
            states,
            open_state,
            state_marks,
            event_marks,
            paused,
            label_chars,
        }
    }

    /// Move "now" on: bars of attempts still running and an open last state grow to it.
    pub fn advance_now(&mut self, now_unix_ms: u64) {
        let now_ms = rel(now_unix_ms, self.origin_ms);
        if now_ms == self.now_ms {
            return;
        }
        self.now_ms = now_ms;
        for lane in self.lanes.iter_mut().filter(|l| l.open) {
            lane.end_ms = now_ms.max(lane.start_ms);
        }
        if self.open_state
            && let Some(last) = self.states.last_mut()
        {
            last.to_ms = now_ms.max(last.from_ms);
        }
    }

    /// The lane of an attempt, by its index in the detail.
    pub fn lane_of_attempt(&self, attempt: usize) -> Option<usize> {
        self.lanes.iter().position(|l| l.attempt == attempt)
    }
}

/// Lanes in order of start, except that hedges sit together where their group first starts.
fn lanes(detail: &IntentDetail, origin: u64, now_ms: i64) -> (Vec<Lane>, Vec<HedgeGroup>) {
    let attempts = &detail.attempts;
    let mut order: Vec<usize> = (0..attempts.len()).collect();
    order.sort_by_key(|&i| (attempts[i].started_at_ms, i));
    let mut placed = vec![false; attempts.len()];
    let mut by_group: std::collections::HashMap<&str, Vec<usize>> = Default::default();
    for &i in &order {
        if let Some(g) = attempts[i].hedge_group.as_deref().filter(|g| !g.is_empty()) {
            by_group.entry(g).or_default().push(i);
        }
    }
    let mut lanes = Vec::with_capacity(attempts.len());
    let mut groups = Vec::new();
    for &i in &order {
        if placed[i] {
            continue;
        }
        let members = attempts[i]
            .hedge_group
            .as_deref()
            .and_then(|g| by_group.get(g))
            .filter(|m| m.len() > 1);
        match members {
            Some(members) => {
                let group = groups.len();
                let first = lanes.len();
                for &m in members {
                    placed[m] = true;
                    lanes.push(lane(&attempts[m], m, origin, now_ms, Some(group)));
                }
                groups.push(HedgeGroup {
                    name: attempts[i].hedge_group.clone().unwrap_or_default(),
                    first,
                    last: lanes.len() - 1,
                });
            }
            None => {
                placed[i] = true;
                lanes.push(lane(&attempts[i], i, origin, now_ms, None));
            }
        }
    }
    (lanes, groups)
}

fn lane(a: &AttemptRow, index: usize, origin: u64, now_ms: i64, group: Option<usize>) -> Lane {
    let start_ms = rel(a.started_at_ms, origin);
    let outcome = Outcome::parse(a.outcome.as_str());
    let (end_ms, open) = match a.ended_at_ms {
        Some(end) => (rel(end, origin).max(start_ms), false),
        None if outcome == Outcome::Pending => (now_ms.max(start_ms), true),
        None => (start_ms, false),
    };
    let mut marks = Vec::new();
    let mut mark = |at_ms, kind| {
        marks.push(Mark {
            at_ms,
            kind,
            source: index,
        })
    };
    match a.kind.as_str() {
        "dispatch" => mark(start_ms, MarkKind::Dispatch),
        "lookup" => mark(start_ms, MarkKind::Lookup),
        _ => {}
    }
    match outcome {
        Outcome::Lost => mark(end_ms, MarkKind::LostResponse),
        Outcome::TimedOut => mark(end_ms, MarkKind::Timeout),
        _ => {}
    }
    if a.replayed == Some(true) {
        mark(end_ms, MarkKind::Replay);
    }
    if a.http_status == Some(422) && a.presented_key.is_some() {
        mark(end_ms, MarkKind::Mismatch);
    }
    Lane {
        attempt: index,
        label: lane_label(a),
        start_ms,
        end_ms,
        open,
        outcome,
        late: a.late,
        group,
        marks,
    }
}

/// The intent's state over time, from its transitions (in the order they were recorded).
fn states(detail: &IntentDetail, origin: u64, now_ms: i64) -> (Vec<StateBand>, Vec<Mark>) {
    let mut marks: Vec<Mark> = detail
        .transitions
        .iter()
        .enumerate()
        .map(|(i, t)| Mark {
            at_ms: rel(t.at_ms, origin),
            kind: MarkKind::Transition,
            source: i,
        })
        .collect();
    // Stable: transitions at the same millisecond keep their recorded order.
    marks.sort_by_key(|m| m.at_ms);
    let mut bands: Vec<StateBand> = Vec::with_capacity(marks.len());
    for (k, m) in marks.iter().enumerate() {
        let t = &detail.transitions[m.source];
        let to_ms = marks.get(k + 1).map_or_else(
            || {
                let terminal = StateName::parse(&t.to)
                    .known()
                    .is_some_and(|s| s.is_terminal());
                if terminal {
                    m.at_ms
                } else {
                    now_ms.max(m.at_ms)
                }
            },
            |next| next.at_ms,
        );
        bands.push(StateBand {
            from_ms: m.at_ms,
            to_ms,
            state: StateName::parse(&t.to),
        });
    }
    (bands, marks)
}

/// Marks of one kind drawn as one: where they fall within a few pixels of each other.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cluster {
    /// Position in pixels from the left of the plot.
    pub x: f32,
    pub kind: MarkKind,
    pub count: usize,
    /// The first mark of the cluster (by index into the slice given).
    pub first: usize,
}

/// The visible marks of `marks` (sorted by time) merged per kind where they are closer than
/// `gap_px`. `to_x` maps a time to pixels; `t0..t1` is the visible range.
pub fn clusters(
    marks: &[Mark],
    t0: f64,
    t1: f64,
    gap_px: f32,
    to_x: impl Fn(f64) -> f32,
) -> Vec<Cluster> {
    let start = marks.partition_point(|m| (m.at_ms as f64) < t0);
    let end = marks.partition_point(|m| (m.at_ms as f64) <= t1);
    let mut out: Vec<Cluster> = Vec::new();
    // The last open cluster of each kind.
    let mut open: [Option<usize>; MarkKind::ALL.len()] = [None; MarkKind::ALL.len()];
    for (i, m) in marks.iter().enumerate().take(end).skip(start) {
        let x = to_x(m.at_ms as f64);
        let slot = m.kind as usize;
        match open[slot] {
            Some(c) if x - out[c].x < gap_px => out[c].count += 1,
            _ => {
                open[slot] = Some(out.len());
                out.push(Cluster {
                    x,
                    kind: m.kind,
                    count: 1,
                    first: i,
                });
            }
        }
    }
    out
}

/// How many attempts are active in each of `columns` pixel columns over `t0..t1`, per
/// [`Outcome::class`]: the overview strip. One pass over the lanes plus one over the columns.
pub fn density(lanes: &[Lane], t0: f64, t1: f64, columns: usize) -> Vec<[u32; Outcome::CLASSES]> {
    let mut diff = vec![[0i64; Outcome::CLASSES]; columns + 1];
    if columns == 0 || t1 <= t0 {
        return Vec::new();
    }
    let scale = columns as f64 / (t1 - t0);
    let column = |t: f64| ((t - t0) * scale).floor();
    for lane in lanes {
        let a = column(lane.start_ms as f64);
        let b = column(lane.end_ms as f64);
        if b < 0.0 || a >= columns as f64 {
            continue;
        }
        let a = a.max(0.0) as usize;
        let b = (b.min(columns as f64 - 1.0) as usize).max(a);
        let class = lane.outcome.class();
        diff[a][class] += 1;
        diff[b + 1][class] -= 1;
    }
    let mut out = Vec::with_capacity(columns);
    let mut running = [0i64; Outcome::CLASSES];
    for d in diff.iter().take(columns) {
        for k in 0..Outcome::CLASSES {
            running[k] += d[k];
        }
        out.push(running.map(|v| v.max(0) as u32));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn detail(attempts: serde_json::Value) -> IntentDetail {
        serde_json::from_value(json!({
            "intent": {"id": "int_01kbx7q3p9d2m8v4r6t0y5zs01", "tenant": "acme", "operation": "quote.compare",
                       "consequence": "compute", "action_key": "quote:acme:int_01kbx7q3p9d2m8v4r6t0y5zs01",
                       "state": "executing", "created_at_ms": 1_000, "deadline_at_ms": 11_000},
            "attempts": attempts,
            "transitions": [
                {"from": null, "to": "prepared", "event": "validated", "at_ms": 1_000},
                {"from": "prepared", "to": "authorized", "event": "authorized", "at_ms": 1_100},
                {"from": "authorized", "to": "executing", "event": "attempt_started", "at_ms": 1_200}
            ]
        }))
        .expect("detail")
    }

    fn attempt(
        id: &str,
        start: u64,
        end: Option<u64>,
        outcome: &str,
        hedge: Option<&str>,
    ) -> serde_json::Value {
        // Each test names its attempts by one letter; the id carries it.
        let id = format!("att_01kbx7q3p9d2m8v4r6t0y5zs{id}0");
        json!({"id": id, "kind": "inference", "provider": "p", "outcome": outcome, "hedge_group": hedge,
               "started_at_ms": start, "ended_at_ms": end})
    }

    #[test]
    fn hedges_sit_together_where_their_group_first_starts() {
        let d = detail(json!([
            attempt("a", 1_300, Some(2_000), "failed", None),
            attempt("b", 1_400, Some(2_500), "succeeded", Some("h1")),
            attempt("c", 1_500, Some(1_600), "timed_out", None),
            attempt("d", 1_450, Some(2_600), "abandoned", Some("h1")),
        ]));
        let m = TimelineModel::build(&d, 5_000);
        let order: Vec<usize> = m.lanes.iter().map(|l| l.attempt).collect();
        assert_eq!(order, vec![0, 1, 3, 2]);
        assert_eq!(
            m.groups,
            vec![HedgeGroup {
                name: "h1".into(),
                first: 1,
                last: 2
            }]
        );
        assert_eq!(m.reserve_ms, Some(9_000));
        assert_eq!(
            m.states.last().map(|b| b.to_ms),
            Some(4_000),
            "an open state runs to now"
        );
    }

    #[test]
    fn marks_closer_than_the_gap_become_one_cluster_per_kind() {
        let marks: Vec<Mark> = (0..10_000)
            .map(|i| Mark {
                at_ms: i,
                kind: MarkKind::Command,
                source: i as usize,
            })
            .collect();
        // 10,000 marks over 100 px: one cluster per 4 px at most.
        let c = clusters(&marks, 0.0, 10_000.0, 4.0, |t| (t / 100.0) as f32);
        assert!(c.len() <= 26, "{}", c.len());
        assert_eq!(c.iter().map(|c| c.count).sum::<usize>(), 10_000);
    }

    #[test]
    fn density_counts_each_attempt_in_every_column_it_covers() {
        let d = detail(json!([
            attempt("a", 1_000, Some(6_000), "succeeded", None),
            attempt("b", 6_000, Some(6_000), "lost", None),
        ]));
        let m = TimelineModel::build(&d, 7_000);
        let cols = density(&m.lanes, 0.0, 10_000.0, 10);
        assert_eq!(cols[0][0], 1);
        assert_eq!(cols[4][0], 1);
        assert_eq!(cols[6][0], 0);
        assert_eq!(
            cols[5][1], 1,
            "a zero-length attempt still shows in its column"
        );
    }
}
