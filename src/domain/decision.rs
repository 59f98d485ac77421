//! The decision table: what an attempt's observed outcome means ([`classify`]) and what the
//! coordinator does next ([`next_move`]).
//!
//! Classification, by observation and consequence tier (`mutating` = `write`, `financial`;
//! `compute`/`proposal` are pure inference):
//!
//! | observed                                   | read            | compute, proposal | write, financial |
//! |--------------------------------------------|-----------------|-------------------|------------------|
//! | success, any 2xx                           | —               | —                 | —                |
//! | 4xx except 401, 403, 408, 429              | permanent       | permanent         | permanent        |
//! | policy refusal                             | permanent       | permanent         | permanent        |
//! | 401, 403, stale authorisation              | policy stop     | policy stop       | policy stop      |
//! | incompatible output                        | policy stop     | policy stop       | policy stop      |
//! | 1xx, 3xx, non-HTTP code                    | policy stop     | policy stop       | indeterminate    |
//! | 429, 503 with `Retry-After` (explicit refusal) | overloaded  | overloaded        | overloaded       |
//! | 429, 503 without `Retry-After`             | overloaded      | overloaded        | indeterminate¹   |
//! | connect failed, timeout before send        | pre-dispatch    | pre-dispatch      | pre-dispatch     |
//! | 408, other 5xx                             | transient read  | transient compute | indeterminate    |
//! | timeout after send, connection lost after send | transient read | transient compute | indeterminate |
//!
//! ¹ A bare 503 or 429 proves nothing about a write: a proxy or load balancer in front of
//! the downstream answers so after the request went through. Only `Retry-After`, the
//! downstream's own word that it shed the request, is taken as "not applied" — unless the
//! connector's configuration says its overload answers mean exactly that
//! ([`BareOverload::NotApplied`]).
//!
//! Next move, by class:
//!
//! | class             | next move                                                          |
//! |-------------------|--------------------------------------------------------------------|
//! | permanent         | stop and surface the reason                                        |
//! | policy stop       | route to review                                                    |
//! | indeterminate     | reconcile: look the action key up; never a blind retry             |
//! | overloaded        | retry after `Retry-After` (+ jitter), or backoff when none was given |
//! | pre-dispatch      | retry with backoff                                                 |
//! | transient read    | retry with backoff                                                 |
//! | transient compute | fail over to another eligible release, with backoff               |
//!
//! Every retry and failover goes through [`plan_retry`]: when the budget is spent, the
//! deadline is too close or the intent is paused, the move is [`NextMove::GiveUp`].
//! As a safety net, a transient class paired with a mutating tier (which [`classify`] never
//! produces) is treated as indeterminate: a mutating call is never retried blind.

use serde::{Deserialize, Serialize};

use super::retry::{BudgetView, GiveUpReason, Jitter, RetryPolicy, plan_retry};
use super::vocab::{ConsequenceTier, UnknownName};

/// What the caller saw when an attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Observation {
    Success,
    /// The peer answered with this HTTP status; `retry_after_ms` is its `Retry-After`.
    HttpStatus {
        status: u16,
        retry_after_ms: Option<u64>,
    },
    /// The connection could not be opened: nothing was sent.
    ConnectFailed,
    /// The time ran out before the request was written: nothing was sent.
    TimeoutBeforeSend,
    /// The time ran out after the request was written.
    TimeoutAfterSend,
    /// The connection broke after the request was written.
    ConnectionLostAfterSend,
    /// A policy (ours or the peer's) refused the work as such.
    PolicyRefusal,
    /// The authorisation the intent was approved under is no longer valid.
    StaleAuthorization,
    /// The reply cannot be understood or does not fit what was asked.
    IncompatibleOutput,
}

/// What an unsuccessful attempt means for the intent.
///
/// Serialised as an object tagged by `class`, e.g. `{"class":"overloaded","retry_after_ms":
/// 1500}` or `{"class":"permanent"}`; [`ErrorClass::as_str`] is the bare wire name, and
/// [`ErrorClass::from_parts`] rebuilds a class from that name and a stored `retry_after_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "class", rename_all = "snake_case")]
pub enum ErrorClass {
    /// Validation, permission or policy rejection: retrying cannot help.
    Permanent,
    /// An explicit refusal for load; nothing was applied.
    Overloaded {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retry_after_ms: Option<u64>,
    },
    /// Provably not sent.
    PreDispatch,
    /// A read-only retrieval failed in a way that may pass.
    TransientRead,
    /// Pure inference failed in a way that may pass, or pass elsewhere.
    TransientCompute,
    /// A mutating call may have been applied: only evidence can tell.
    Indeterminate,
    /// Stale authorisation, unknown policy or incompatible output: a person decides.
    PolicyStop,
}

impl ErrorClass {
    /// Every wire name, in table order.
    pub const NAMES: &'static [&'static str] = &[
        "permanent",
        "overloaded",
        "pre_dispatch",
        "transient_read",
        "transient_compute",
        "indeterminate",
        "policy_stop",
    ];

    /// The stable snake_case wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Permanent => "permanent",
            Self::Overloaded { .. } => "overloaded",
            Self::PreDispatch => "pre_dispatch",
            Self::TransientRead => "transient_read",
            Self::TransientCompute => "transient_compute",
            Self::Indeterminate => "indeterminate",
            Self::PolicyStop => "policy_stop",
        }
    }

    /// Rebuild a class from its wire name and the `retry_after_ms` stored beside it (which
    /// only `overloaded` keeps).
    pub fn from_parts(name: &str, retry_after_ms: Option<u64>) -> Result<Self, UnknownName> {
        Ok(match name {
            "permanent" => Self::Permanent,
            "overloaded" => Self::Overloaded { retry_after_ms },
            "pre_dispatch" => Self::PreDispatch,
            "transient_read" => Self::TransientRead,
            "transient_compute" => Self::TransientCompute,
            "indeterminate" => Self::Indeterminate,
            "policy_stop" => Self::PolicyStop,
            other => {
                return Err(UnknownName {
                    what: "error class",
                    got: other.chars().take(60).collect(),
                    expected: Self::NAMES.join(", "),
                });
            }
        })
    }
}

impl std::fmt::Display for ErrorClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The class of a failure that may pass: what it means depends on whether the work mutates.
fn transient(tier: ConsequenceTier) -> ErrorClass {
    match tier {
        ConsequenceTier::Read => ErrorClass::TransientRead,
        ConsequenceTier::Compute | ConsequenceTier::Proposal => ErrorClass::TransientCompute,
        ConsequenceTier::Write | ConsequenceTier::Financial => ErrorClass::Indeterminate,
    }
}

/// What a 503 or 429 without `Retry-After` means for mutating work, by the connector's
/// contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BareOverload {
    /// The request may have been applied (the default): look it up.
    #[default]
    Unproven,
    /// The connector's owner vouches that an overload answer never follows an applied
    /// request.
    NotApplied,
}

/// Classify an observation for work of `tier`; `None` for success. A bare overload answer
/// to mutating work is taken as unproven.
pub fn classify(obs: &Observation, tier: ConsequenceTier) -> Option<ErrorClass> {
    classify_with(obs, tier, BareOverload::Unproven)
}

/// [`classify`], with the connector's word on what a bare overload answer means.
pub fn classify_with(
    obs: &Observation,
    tier: ConsequenceTier,
    bare_overload: BareOverload,
) -> Option<ErrorClass> {
    Some(match *obs {
        Observation::Success => return None,
        Observation::HttpStatus {
            status,
            retry_after_ms,
        } => match status {
            200..=299 => return None,
            401 | 403 => ErrorClass::PolicyStop,
            429 | 503
                if retry_after_ms.is_none()
                    && tier.is_mutating()
                    && bare_overload == BareOverload::Unproven =>
            {
                ErrorClass::Indeterminate
            }
            429 | 503 => ErrorClass::Overloaded { retry_after_ms },
            408 | 500..=599 => transient(tier),
            400..=499 => ErrorClass::Permanent,
            // 1xx and 3xx are not answers to an API call, nor is anything outside 100..600.
            // They come from the server the request reached, after it may have acted on it
            // (a 303 is the usual "created, see there"): mutating work is unproven and
            // looked up, never taken as not applied; other work stops for review.
            _ if tier.is_mutating() => ErrorClass::Indeterminate,
            _ => ErrorClass::PolicyStop,
        },
        Observation::ConnectFailed | Observation::TimeoutBeforeSend => ErrorClass::PreDispatch,
        Observation::TimeoutAfterSend | Observation::ConnectionLostAfterSend => transient(tier),
        Observation::PolicyRefusal => ErrorClass::Permanent,
        Observation::StaleAuthorization | Observation::IncompatibleOutput => ErrorClass::PolicyStop,
    })
}

/// What the coordinator does after an unsuccessful attempt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "move", rename_all = "snake_case")]
pub enum NextMove {
    /// Stop and surface `reason` to the intent's owner.
    Stop { reason: &'static str },
    /// Try the same target again after `delay_ms`.
    Retry { delay_ms: u64 },
    /// Try another eligible provider or release after `delay_ms`.
    Failover { delay_ms: u64 },
    /// Look the action key up downstream before anything else.
    Reconcile,
    /// A person must decide.
    RouteToReview,
    /// No further automatic attempt.
    GiveUp { why: GiveUpReason },
}

/// The reason surfaced when a permanent failure stops an intent.
pub const PERMANENT_STOP_REASON: &str =
    "the work was refused permanently (validation, permission or policy); retrying cannot help";

/// Decide the next move for an attempt that failed with `class`, given the intent's budget.
pub fn next_move(
    class: ErrorClass,
    tier: ConsequenceTier,
    budget: &BudgetView,
    policy: &RetryPolicy,
    jitter: &mut impl Jitter,
) -> NextMove {
    let retry = |retry_after_ms: Option<u64>, jitter: &mut _| {
        plan_retry(policy, budget, retry_after_ms, jitter).map_or_else(
            |why| NextMove::GiveUp { why },
            |delay_ms| NextMove::Retry { delay_ms },
        )
    };
    match class {
        ErrorClass::Permanent => NextMove::Stop {
            reason: PERMANENT_STOP_REASON,
        },
        ErrorClass::PolicyStop => NextMove::RouteToReview,
        ErrorClass::Indeterminate => NextMove::Reconcile,
        // A mutating call whose fate is unknown is never retried blind, whatever the caller
        // classified it as.
        ErrorClass::TransientRead | ErrorClass::TransientCompute if tier.is_mutating() => {
            NextMove::Reconcile
        }
        ErrorClass::Overloaded { retry_after_ms } => retry(retry_after_ms, jitter),
        ErrorClass::PreDispatch | ErrorClass::TransientRead => retry(None, jitter),
        ErrorClass::TransientCompute => match plan_retry(policy, budget, None, jitter) {
            Ok(delay_ms) => NextMove::Failover { delay_ms },
            Err(why) => NextMove::GiveUp { why },
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::retry::SplitMix64;
    use ConsequenceTier as T;

    fn http(status: u16) -> Observation {
        Observation::HttpStatus {
            status,
            retry_after_ms: None,
        }
    }

    fn budget() -> BudgetView {
        BudgetView {
            attempts_used: 1,
            max_attempts: 3,
            now_ms: 0,
            deadline_at_ms: 60_000,
            paused: false,
        }
    }

    fn decide(class: ErrorClass, tier: ConsequenceTier, budget: &BudgetView) -> NextMove {
        next_move(
            class,
            tier,
            budget,
            &RetryPolicy::default(),
            &mut SplitMix64::new(1),
        )
    }

    #[test]
    fn success_has_no_class() {
        for tier in T::ALL {
            assert_eq!(classify(&Observation::Success, *tier), None);
            assert_eq!(classify(&http(201), *tier), None);
        }
    }

    #[test]
    fn client_errors_are_permanent() {
        for status in [400, 404, 409, 410, 422, 451] {
            for tier in T::ALL {
                assert_eq!(
                    classify(&http(status), *tier),
                    Some(ErrorClass::Permanent),
                    "{status}"
                );
            }
        }
        assert_eq!(
            classify(&Observation::PolicyRefusal, T::Financial),
            Some(ErrorClass::Permanent)
        );
    }

    #[test]
    fn authorisation_failures_stop_for_review() {
        for obs in [
            http(401),
            http(403),
            Observation::StaleAuthorization,
            Observation::IncompatibleOutput,
        ] {
            assert_eq!(
                classify(&obs, T::Write),
                Some(ErrorClass::PolicyStop),
                "{obs:?}"
            );
        }
    }

    /// A status that is no answer to an API call came from the server the request reached:
    /// a write may have been applied before it (a 303 "created, see there"), so it is looked
    /// up; a read or a computation stops for review.
    #[test]
    fn a_status_that_is_no_answer_leaves_a_write_unproven() {
        for status in [101, 300, 301, 302, 303, 304, 307, 308, 700, 99] {
            for tier in T::ALL {
                let expected = if tier.is_mutating() {
                    ErrorClass::Indeterminate
                } else {
                    ErrorClass::PolicyStop
                };
                assert_eq!(
                    classify(&http(status), *tier),
                    Some(expected),
                    "{status} {tier:?}"
                );
            }
        }
    }

    #[test]
    fn explicit_overload_keeps_retry_after_for_every_tier() {
        for status in [429, 503] {
            let obs = Observation::HttpStatus {
                status,
                retry_after_ms: Some(1_500),
            };
            for tier in T::ALL {
                assert_eq!(
                    classify(&obs, *tier),
                    Some(ErrorClass::Overloaded {
                        retry_after_ms: Some(1_500)
                    })
                );
            }
        }
    }

    #[test]
    fn a_bare_overload_answer_to_a_write_is_no_proof_unless_the_connector_vouches() {
        for status in [429, 503] {
            let bare = http(status);
            for tier in [T::Write, T::Financial] {
                assert_eq!(classify(&bare, tier), Some(ErrorClass::Indeterminate));
                assert_eq!(
                    classify_with(&bare, tier, BareOverload::NotApplied),
                    Some(ErrorClass::Overloaded {
                        retry_after_ms: None
                    })
                );
            }
            for tier in [T::Read, T::Compute, T::Proposal] {
                assert_eq!(
                    classify(&bare, tier),
                    Some(ErrorClass::Overloaded {
                        retry_after_ms: None
                    }),
                    "nothing to duplicate"
                );
            }
        }
    }

    #[test]
    fn nothing_sent_is_pre_dispatch_for_every_tier() {
        for obs in [Observation::ConnectFailed, Observation::TimeoutBeforeSend] {
            for tier in T::ALL {
                assert_eq!(classify(&obs, *tier), Some(ErrorClass::PreDispatch));
            }
        }
    }

    #[test]
    fn server_errors_and_lost_replies_depend_on_the_tier() {
        for obs in [
            http(500),
            http(502),
            http(504),
            http(408),
            Observation::TimeoutAfterSend,
            Observation::ConnectionLostAfterSend,
        ] {
            assert_eq!(classify(&obs, T::Read), Some(ErrorClass::TransientRead));
            assert_eq!(
                classify(&obs, T::Compute),
                Some(ErrorClass::TransientCompute)
            );
            assert_eq!(
                classify(&obs, T::Proposal),
                Some(ErrorClass::TransientCompute)
            );
            assert_eq!(classify(&obs, T::Write), Some(ErrorClass::Indeterminate));
            assert_eq!(
                classify(&obs, T::Financial),
                Some(ErrorClass::Indeterminate)
            );
        }
    }

    #[test]
    fn permanent_stops_with_a_reason() {
        assert_eq!(
            decide(ErrorClass::Permanent, T::Write, &budget()),
            NextMove::Stop {
                reason: PERMANENT_STOP_REASON
            }
        );
    }

    #[test]
    fn policy_stop_routes_to_review() {
        assert_eq!(
            decide(ErrorClass::PolicyStop, T::Read, &budget()),
            NextMove::RouteToReview
        );
    }

    #[test]
    fn indeterminate_reconciles_even_with_budget_left() {
        assert_eq!(
            decide(ErrorClass::Indeterminate, T::Financial, &budget()),
            NextMove::Reconcile
        );
    }

    #[test]
    fn a_transient_class_on_a_mutating_tier_reconciles() {
        for class in [ErrorClass::TransientRead, ErrorClass::TransientCompute] {
            assert_eq!(decide(class, T::Write, &budget()), NextMove::Reconcile);
        }
    }

    #[test]
    fn overload_waits_at_least_as_told() {
        let class = ErrorClass::Overloaded {
            retry_after_ms: Some(2_000),
        };
        match decide(class, T::Write, &budget()) {
            NextMove::Retry { delay_ms } => assert!((2_000..=2_250).contains(&delay_ms)),
            other => panic!("expected a retry, got {other:?}"),
        }
    }

    #[test]
    fn pre_dispatch_and_transient_read_retry_within_the_cap() {
        for class in [ErrorClass::PreDispatch, ErrorClass::TransientRead] {
            match decide(class, T::Read, &budget()) {
                NextMove::Retry { delay_ms } => assert!(delay_ms <= 200),
                other => panic!("expected a retry, got {other:?}"),
            }
        }
    }

    #[test]
    fn transient_compute_fails_over() {
        assert!(matches!(
            decide(ErrorClass::TransientCompute, T::Compute, &budget()),
            NextMove::Failover { .. }
        ));
    }

    #[test]
    fn failover_spends_the_same_budget() {
        let spent = BudgetView {
            attempts_used: 3,
            ..budget()
        };
        assert_eq!(
            decide(ErrorClass::TransientCompute, T::Proposal, &spent),
            NextMove::GiveUp {
                why: GiveUpReason::BudgetSpent
            }
        );
    }

    #[test]
    fn a_paused_intent_gives_up_retrying_but_still_reconciles() {
        let paused = BudgetView {
            paused: true,
            ..budget()
        };
        assert_eq!(
            decide(ErrorClass::PreDispatch, T::Write, &paused),
            NextMove::GiveUp {
                why: GiveUpReason::Paused
            }
        );
        assert_eq!(
            decide(ErrorClass::Indeterminate, T::Write, &paused),
            NextMove::Reconcile
        );
    }

    #[test]
    fn error_classes_round_trip_with_their_retry_after() {
        let classes = [
            ErrorClass::Permanent,
            ErrorClass::Overloaded {
                retry_after_ms: Some(1_500),
            },
            ErrorClass::Overloaded {
                retry_after_ms: None,
            },
            ErrorClass::PreDispatch,
            ErrorClass::TransientRead,
            ErrorClass::TransientCompute,
            ErrorClass::Indeterminate,
            ErrorClass::PolicyStop,
        ];
        for class in classes {
            let json = serde_json::to_string(&class).expect("serialises");
            assert!(json.contains(class.as_str()), "{json}");
            let back: ErrorClass = serde_json::from_str(&json).expect("deserialises");
            assert_eq!(back, class);
            let retry_after = match class {
                ErrorClass::Overloaded { retry_after_ms } => retry_after_ms,
                _ => None,
            };
            assert_eq!(
                ErrorClass::from_parts(class.as_str(), retry_after),
                Ok(class)
            );
        }
        let json = serde_json::to_string(&ErrorClass::Overloaded {
            retry_after_ms: Some(1_500),
        })
        .expect("serialises");
        assert_eq!(json, r#"{"class":"overloaded","retry_after_ms":1500}"#);
    }

    #[test]
    fn an_unknown_class_name_lists_the_known_ones() {
        let err = ErrorClass::from_parts("flaky", None).expect_err("not a class");
        assert!(err.to_string().contains("pre_dispatch"), "{err}");
    }
}
