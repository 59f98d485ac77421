//! The intent state machine: a pure function from the facts about an intent and an event
//! to the next state and the effects to perform, or a typed refusal.
//!
//! ```text
//! new → prepared → authorized → executing → committed
//!  └──────┴───────────┴→ rejected | cancelled | expired
//!                         executing ⇄ indeterminate (left only by evidence)
//! ```
//!
//! Cancellation is an observation, not a rollback: before anything may have crossed the
//! action boundary `Cancel` ends the intent `cancelled`; after, it records that cancellation
//! is requested and the intent keeps its state until evidence settles it (a receipt:
//! `committed`; a proved absence: `cancelled`, never a resend). Once requested, no new
//! attempt is made.
//!
//! The rules that matter most:
//! - only the coordinator moves `authorized → executing` (`Dispatch`, or `AttemptStarted`
//!   for reported non-mutating work), and each spends one unit of budget;
//! - an outcome that cannot be proved makes the intent `indeterminate`, never failed;
//! - `indeterminate` is left only by evidence: a receipt, a proved non-application with a
//!   permitted retry under the same key, or an operator close that carries evidence;
//! - a passing deadline never relabels an `indeterminate` intent;
//! - terminal states stay terminal.

use serde::{Deserialize, Serialize};

use super::vocab::{Disposition, IntentState};

/// What the machine needs to know about an intent besides its state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IntentFacts {
    pub state: IntentState,
    pub paused: bool,
    /// Attempts already made, of every kind that counts against the budget.
    pub attempts_used: u32,
    pub max_attempts: u32,
    pub deadline_at_ms: u64,
    pub now_ms: u64,
    /// True once a dispatch may have reached the downstream (sent, or its fate unknown).
    pub may_have_crossed_boundary: bool,
    /// False when the authorisation the intent was approved under is no longer valid.
    pub authorization_valid: bool,
    /// True while a dispatcher holds a claimed send of this intent: the request is on its
    /// way to the downstream, or about to be.
    pub dispatch_in_flight: bool,
    /// True once the owner or an operator asked to cancel after something may have crossed:
    /// no new attempt is made, and evidence settles the intent.
    #[serde(default)]
    pub cancel_requested: bool,
}

impl IntentFacts {
    pub fn budget_left(&self) -> u32 {
        self.max_attempts.saturating_sub(self.attempts_used)
    }

    pub fn deadline_passed(&self) -> bool {
        self.now_ms >= self.deadline_at_ms
    }
}

/// Evidence an operator or a connector offers about what happened downstream.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    /// A receipt id or downstream reference proving the effect exists.
    pub reference: Option<String>,
    /// A statement of what was checked, e.g. that nothing was applied.
    pub note: Option<String>,
}

impl Evidence {
    fn has_reference(&self) -> bool {
        self.reference
            .as_deref()
            .is_some_and(|r| !r.trim().is_empty())
    }

    fn has_note(&self) -> bool {
        self.note.as_deref().is_some_and(|n| !n.trim().is_empty())
    }
}

/// Something that happened to an intent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// Validation passed: `new → prepared`.
    Validated,
    /// Validation, policy or the downstream permanently refused the work; nothing applied.
    Refused { reason: String },
    /// An approver authorised the frozen arguments: `prepared → authorized`; on an open
    /// intent already authorised, a fresh approval that keeps its state.
    Authorized,
    /// The coordinator crosses the action boundary with the intent's action key.
    Dispatch,
    /// The coordinator accepts a reported non-mutating attempt (retrieval, inference,
    /// proposal); it spends one unit of budget and nothing crosses the action boundary.
    AttemptStarted,
    /// A receipt (from the dispatch reply, a lookup or a webhook) proves the effect.
    ReceiptFound { receipt_ref: String },
    /// A consequential attempt's outcome cannot be proved (timeout after dispatch,
    /// connection lost after the request may have been sent).
    OutcomeUnknown,
    /// A dispatch provably did not reach the downstream (connect refused, explicit
    /// overload); the intent stays `executing` while a retry is possible.
    NotSent,
    /// A lookup proved the effect absent and the connector guarantees idempotent creation
    /// for the key, so the same command may be sent again with the same key.
    ProvedAbsentRetry,
    /// The owner or an operator cancels. Before anything may have crossed the action
    /// boundary the intent ends `cancelled`; after, the cancellation is requested and the
    /// intent waits for evidence.
    Cancel { reason: String },
    /// A lookup proved the effect absent while a cancellation is requested: nothing was
    /// applied, so the intent ends `cancelled` instead of being sent again.
    ProvedAbsentCancel,
    /// An operator closes with a disposition and evidence.
    OperatorClose {
        disposition: Disposition,
        evidence: Evidence,
    },
    /// The end-to-end deadline has passed.
    DeadlinePassed,
}

impl Event {
    pub fn name(&self) -> &'static str {
        match self {
            Event::Validated => "validated",
            Event::Refused { .. } => "refused",
            Event::Authorized => "authorized",
            Event::Dispatch => "dispatch",
            Event::AttemptStarted => "attempt_started",
            Event::ReceiptFound { .. } => "receipt_found",
            Event::OutcomeUnknown => "outcome_unknown",
            Event::NotSent => "not_sent",
            Event::ProvedAbsentRetry => "proved_absent_retry",
            Event::Cancel { .. } => "cancel",
            Event::ProvedAbsentCancel => "proved_absent_cancel",
            Event::OperatorClose { .. } => "operator_close",
            Event::DeadlinePassed => "deadline_passed",
        }
    }
}

/// Work the caller must perform as a consequence of a transition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "effect", rename_all = "snake_case")]
pub enum Effect {
    /// Write a dispatch attempt and its outbox row in one transaction.
    EnqueueDispatch,
    /// Look the action key up at the connector (reconciliation).
    ScheduleLookup,
    /// Store the receipt as the authoritative result.
    RecordReceipt { receipt_ref: String },
    /// Tell the owner why the intent stopped.
    SurfaceReason { reason: String },
}

/// A state change and what to do about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transition {
    pub from: IntentState,
    pub to: IntentState,
    pub effects: Vec<Effect>,
}

/// Why an event was refused. Nothing changes when an event is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("the intent is {state}, which is final")]
    Terminal { state: IntentState },
    #[error("`{event}` is not possible while the intent is {state}")]
    NotAllowed {
        state: IntentState,
        event: &'static str,
    },
    #[error("the retry budget is spent ({used} of {max} attempts)")]
    BudgetSpent { used: u32, max: u32 },
    #[error("the deadline has passed")]
    DeadlinePassed,
    #[error("the intent is paused")]
    Paused,
    #[error("the authorisation is no longer valid")]
    AuthorizationInvalid,
    #[error("{0}")]
    MissingEvidence(&'static str),
    #[error(
        "a dispatch is on its way to the downstream; wait for its outcome before closing or cancelling"
    )]
    DispatchInFlight,
    #[error(
        "a {tier} intent is never hedged: a losing hedge of it would be a second proposal or effect; \
         report a retry after the first attempt ended instead"
    )]
    HedgeNotAllowed {
        tier: crate::domain::ConsequenceTier,
    },
    #[error("hedge group `{group}` already has {limit} attempts running; wait for one to end")]
    HedgesAtCap { group: String, limit: u32 },
    /// A reported attempt begun before the backoff or `Retry-After` of the failure before it.
    #[error(
        "the previous attempt failed; the next may begin no sooner than {wait_ms} ms from now \
         (its backoff or the downstream's Retry-After)"
    )]
    TooEarly { wait_ms: u64 },
    /// The intent's cancellation is requested: nothing new is attempted, and a second
    /// request changes nothing.
    #[error("cancellation of the intent is requested; it waits for evidence of what was applied")]
    CancellationRequested,
}

/// Apply `event` to an intent described by `facts`.
pub fn apply(facts: &IntentFacts, event: &Event) -> Result<Transition, Refusal> {
    use IntentState as S;
    let state = facts.state;
    if state.is_terminal() {
        return Err(Refusal::Terminal { state });
    }
    let not_allowed = || Refusal::NotAllowed {
        state,
        event: event.name(),
    };
    let to = |to: IntentState, effects: Vec<Effect>| {
        Ok(Transition {
            from: state,
            to,
            effects,
        })
    };

    match event {
        Event::Validated => match state {
            S::New => to(S::Prepared, vec![]),
            _ => Err(not_allowed()),
        },
        Event::Refused { reason } => match state {
            // Once an earlier dispatch may have crossed the action boundary, a refusal of the
            // latest attempt proves nothing about that one (it may still land): the outcome
            // is unproven, so the intent is indeterminate and gets looked up.
            S::Executing if facts.may_have_crossed_boundary => {
                to(S::Indeterminate, vec![Effect::ScheduleLookup])
            }
            // Otherwise nothing was applied; an indeterminate intent needs evidence instead,
            // so it is not refused here.
            S::New | S::Prepared | S::Authorized | S::Executing => to(
                S::Rejected,
                vec![Effect::SurfaceReason {
                    reason: reason.clone(),
                }],
            ),
            _ => Err(not_allowed()),
        },
        Event::Authorized => match state {
            S::Prepared => to(S::Authorized, vec![]),
            // A fresh approval of an open intent (its approval lapsed, or the policy it was
            // given under changed) lets new attempts begin again; the state stays.
            S::Authorized | S::Executing | S::Indeterminate => to(state, vec![]),
            _ => Err(not_allowed()),
        },
        Event::Dispatch => match state {
            S::Authorized | S::Executing => {
                check_may_attempt(facts)?;
                to(S::Executing, vec![Effect::EnqueueDispatch])
            }
            _ => Err(not_allowed()),
        },
        Event::AttemptStarted => match state {
            S::Authorized | S::Executing => {
                check_may_attempt(facts)?;
                to(S::Executing, vec![])
            }
            _ => Err(not_allowed()),
        },
        Event::ReceiptFound { receipt_ref } => match state {
            S::Executing | S::Indeterminate => to(
                S::Committed,
                vec![Effect::RecordReceipt {
                    receipt_ref: receipt_ref.clone(),
                }],
            ),
            _ => Err(not_allowed()),
        },
        Event::OutcomeUnknown => match state {
            S::Executing => to(S::Indeterminate, vec![Effect::ScheduleLookup]),
            _ => Err(not_allowed()),
        },
        Event::NotSent => match state {
            S::Executing => to(S::Executing, vec![]),
            _ => Err(not_allowed()),
        },
        Event::ProvedAbsentRetry => match state {
            S::Indeterminate => {
                check_may_attempt(facts)?;
                to(S::Executing, vec![Effect::EnqueueDispatch])
            }
            _ => Err(not_allowed()),
        },
        Event::Cancel { reason } => cancel(facts, reason),
        Event::ProvedAbsentCancel => match state {
            S::Indeterminate if facts.cancel_requested => to(S::Cancelled, vec![]),
            _ => Err(not_allowed()),
        },
        // A send on its way may still apply, or not: what the close says cannot be known
        // until its outcome is.
        Event::OperatorClose { .. } if facts.dispatch_in_flight => Err(Refusal::DispatchInFlight),
        Event::OperatorClose {
            disposition,
            evidence,
        } => close(facts, *disposition, evidence),
        Event::DeadlinePassed => {
            if !facts.deadline_passed() {
                return Err(not_allowed());
            }
            match state {
                S::New | S::Prepared | S::Authorized => to(S::Expired, vec![]),
                S::Executing if !facts.may_have_crossed_boundary => to(S::Expired, vec![]),
                S::Executing => to(S::Indeterminate, vec![Effect::ScheduleLookup]),
                // Never silently relabelled.
                _ => Err(not_allowed()),
            }
        }
    }
}

fn check_may_attempt(facts: &IntentFacts) -> Result<(), Refusal> {
    if facts.cancel_requested {
        return Err(Refusal::CancellationRequested);
    }
    if facts.paused {
        return Err(Refusal::Paused);
    }
    if !facts.authorization_valid {
        return Err(Refusal::AuthorizationInvalid);
    }
    if facts.deadline_passed() {
        return Err(Refusal::DeadlinePassed);
    }
    if facts.budget_left() == 0 {
        return Err(Refusal::BudgetSpent {
            used: facts.attempts_used,
            max: facts.max_attempts,
        });
    }
    Ok(())
}

/// A cancellation: final while nothing may have crossed, otherwise an observation recorded
/// beside a state that only evidence changes.
fn cancel(facts: &IntentFacts, reason: &str) -> Result<Transition, Refusal> {
    use IntentState as S;
    let state = facts.state;
    let to = |to: IntentState, effects: Vec<Effect>| {
        Ok(Transition {
            from: state,
            to,
            effects,
        })
    };
    let stopped = || {
        vec![Effect::SurfaceReason {
            reason: reason.to_string(),
        }]
    };
    // A send on its way may still apply: the request is recorded and its outcome settles it.
    if facts.dispatch_in_flight {
        return if facts.cancel_requested {
            Err(Refusal::CancellationRequested)
        } else {
            to(state, vec![])
        };
    }
    match state {
        S::New | S::Prepared | S::Authorized => to(S::Cancelled, stopped()),
        S::Executing if !facts.may_have_crossed_boundary => to(S::Cancelled, stopped()),
        // An earlier send may have landed and the next one is withdrawn: what happened is
        // looked up.
        S::Executing => to(S::Indeterminate, vec![Effect::ScheduleLookup]),
        S::Indeterminate if facts.cancel_requested => Err(Refusal::CancellationRequested),
        S::Indeterminate => to(S::Indeterminate, vec![]),
        _ => Err(Refusal::NotAllowed {
            state,
            event: "cancel",
        }),
    }
}

fn close(
    facts: &IntentFacts,
    disposition: Disposition,
    evidence: &Evidence,
) -> Result<Transition, Refusal> {
    use IntentState as S;
    let state = facts.state;
    match disposition {
        Disposition::Committed => {
            if !matches!(state, S::Executing | S::Indeterminate) {
                return Err(Refusal::NotAllowed {
                    state,
                    event: "operator_close",
                });
            }
            if !evidence.has_reference() {
                return Err(Refusal::MissingEvidence(
                    "closing as committed needs a receipt id or downstream reference",
                ));
            }
            let receipt_ref = evidence.reference.clone().unwrap_or_default();
            Ok(Transition {
                from: state,
                to: S::Committed,
                effects: vec![Effect::RecordReceipt { receipt_ref }],
            })
        }
        Disposition::Cancelled => {
            if !evidence.has_note() && !evidence.has_reference() {
                return Err(Refusal::MissingEvidence(
                    "closing as cancelled needs evidence that nothing was applied",
                ));
            }
            Ok(Transition {
                from: state,
                to: S::Cancelled,
                effects: vec![],
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(state: IntentState) -> IntentFacts {
        IntentFacts {
            state,
            paused: false,
            attempts_used: 0,
            max_attempts: 3,
            deadline_at_ms: 10_000,
            now_ms: 1_000,
            may_have_crossed_boundary: false,
            authorization_valid: true,
            dispatch_in_flight: false,
            cancel_requested: false,
        }
    }

    #[test]
    fn the_happy_path_reaches_committed() {
        let mut f = facts(IntentState::New);
        for event in [
            Event::Validated,
            Event::Authorized,
            Event::Dispatch,
            Event::ReceiptFound {
                receipt_ref: "po-1".into(),
            },
        ] {
            f.state = apply(&f, &event).expect("allowed").to;
        }
        assert_eq!(f.state, IntentState::Committed);
    }

    #[test]
    fn a_lost_response_is_indeterminate_not_failed() {
        let t = apply(&facts(IntentState::Executing), &Event::OutcomeUnknown).expect("allowed");
        assert_eq!(t.to, IntentState::Indeterminate);
        assert_eq!(t.effects, vec![Effect::ScheduleLookup]);
    }

    #[test]
    fn a_passing_deadline_never_relabels_indeterminate() {
        let mut f = facts(IntentState::Indeterminate);
        f.now_ms = f.deadline_at_ms + 1;
        assert!(apply(&f, &Event::DeadlinePassed).is_err());
    }

    #[test]
    fn closing_as_committed_needs_a_reference() {
        let f = facts(IntentState::Indeterminate);
        let close = Event::OperatorClose {
            disposition: Disposition::Committed,
            evidence: Evidence::default(),
        };
        assert!(matches!(
            apply(&f, &close),
            Err(Refusal::MissingEvidence(_))
        ));
    }

    #[test]
    fn giving_up_after_an_unproven_dispatch_is_indeterminate_not_rejected() {
        let mut f = facts(IntentState::Executing);
        f.may_have_crossed_boundary = true;
        let t = apply(
            &f,
            &Event::Refused {
                reason: "budget spent".into(),
            },
        )
        .expect("allowed");
        assert_eq!(t.to, IntentState::Indeterminate);
    }

    #[test]
    fn a_paused_intent_is_not_dispatched() {
        let mut f = facts(IntentState::Authorized);
        f.paused = true;
        assert_eq!(apply(&f, &Event::Dispatch), Err(Refusal::Paused));
    }

    #[test]
    fn nothing_is_closed_as_cancelled_while_a_send_is_on_its_way() {
        let mut f = facts(IntentState::Executing);
        f.dispatch_in_flight = true;
        let close = Event::OperatorClose {
            disposition: Disposition::Cancelled,
            evidence: Evidence {
                reference: None,
                note: Some("nothing applied".into()),
            },
        };
        assert_eq!(apply(&f, &close), Err(Refusal::DispatchInFlight));
        f.dispatch_in_flight = false;
        assert_eq!(apply(&f, &close).map(|t| t.to), Ok(IntentState::Cancelled));
    }

    #[test]
    fn a_cancel_before_the_boundary_is_final() {
        let cancel = Event::Cancel {
            reason: "owner".into(),
        };
        for state in [
            IntentState::Prepared,
            IntentState::Authorized,
            IntentState::Executing,
        ] {
            assert_eq!(
                apply(&facts(state), &cancel).map(|t| t.to),
                Ok(IntentState::Cancelled)
            );
        }
    }

    #[test]
    fn a_cancel_after_a_crossing_is_an_observation_that_stops_new_attempts() {
        let cancel = Event::Cancel {
            reason: "owner".into(),
        };
        let mut f = facts(IntentState::Executing);
        f.may_have_crossed_boundary = true;
        f.dispatch_in_flight = true;
        assert_eq!(
            apply(&f, &cancel).map(|t| t.to),
            Ok(IntentState::Executing),
            "the send on its way settles it"
        );
        f.cancel_requested = true;
        assert_eq!(apply(&f, &cancel), Err(Refusal::CancellationRequested));
        assert_eq!(
            apply(&f, &Event::Dispatch),
            Err(Refusal::CancellationRequested)
        );
        f.state = IntentState::Indeterminate;
        f.dispatch_in_flight = false;
        assert_eq!(
            apply(&f, &Event::ProvedAbsentRetry),
            Err(Refusal::CancellationRequested)
        );
        assert_eq!(
            apply(&f, &Event::ProvedAbsentCancel).map(|t| t.to),
            Ok(IntentState::Cancelled)
        );
        let receipt = Event::ReceiptFound {
            receipt_ref: "po-1".into(),
        };
        assert_eq!(
            apply(&f, &receipt).map(|t| t.to),
            Ok(IntentState::Committed)
        );
    }

    #[test]
    fn a_proved_absence_cancels_only_when_cancellation_was_requested() {
        let f = facts(IntentState::Indeterminate);
        assert!(apply(&f, &Event::ProvedAbsentCancel).is_err());
    }

    #[test]
    fn dispatch_refuses_when_the_budget_is_spent() {
        let mut f = facts(IntentState::Executing);
        f.attempts_used = 3;
        assert_eq!(
            apply(&f, &Event::Dispatch),
            Err(Refusal::BudgetSpent { used: 3, max: 3 })
        );
    }
}
