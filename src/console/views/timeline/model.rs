//! The timeline of one intent as data: one lane per attempt (hedges side by side), the
//! intent's state over time, the marks (transitions, dispatches, lost responses, timeouts,
//! lookups, receipts, webhooks, operator commands) and the lines (deadline, confirmation
//! reserve, key retention, now). Built once per detail ([`super::build`]); the widget draws
//! it.
//!
//! The drawing asks this module for what falls inside the visible range only, already
//! aggregated to the pixel: marks closer than a few pixels become one cluster with a count
//! ([`super::cull::clusters`]), and the overview strip counts attempts per pixel column ([`super::cull::density`]),
//! so an intent with 10,000 attempts costs a frame what a few hundred do.
//!
//! Times are milliseconds relative to the intent's creation (`i64`: late results and clock
//! skew may put an event before or after anything expected).

use crate::console::model::{AttemptRow, StateName};

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
    /// When the next automatic lookup is due, while the intent waits for it.
    pub next_lookup_ms: Option<i64>,
    /// When the automatic lookups' budget ran out, while the intent is still unproven.
    pub lookups_exhausted_ms: Option<i64>,
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

pub(super) fn rel(at_ms: u64, origin: u64) -> i64 {
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
