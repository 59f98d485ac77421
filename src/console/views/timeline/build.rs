//! Laying one intent's detail out as a [`TimelineModel`]: attempts as lanes (hedges side
//! by side), the state bands from the transitions, the events and the lines.

use super::model::{
    HedgeGroup, Lane, Mark, MarkKind, Outcome, StateBand, TimelineModel, lane_label, rel,
};
use crate::console::model::{AttemptRow, IntentDetail, StateName};
use crate::domain::retry::RetryPolicy;

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
        // The lookups' pacing matters only while the intent is unproven.
        let unproven = intent.state.known() == Some(crate::domain::IntentState::Indeterminate);
        let pacing = |at: Option<u64>| at.filter(|_| unproven).map(|at| rel(at, origin));
        let next_lookup_ms = pacing(intent.next_lookup_at_ms);
        let lookups_exhausted_ms = pacing(intent.lookups_exhausted_at_ms);

        let mut last = deadline_ms.unwrap_or(0);
        for lane in &lanes {
            last = last.max(lane.end_ms);
        }
        for m in state_marks.iter().chain(event_marks.iter()) {
            last = last.max(m.at_ms);
        }
        if let Some(at) = next_lookup_ms.or(lookups_exhausted_ms) {
            last = last.max(at);
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
            next_lookup_ms,
            lookups_exhausted_ms,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::console::views::timeline::cull::density;
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
