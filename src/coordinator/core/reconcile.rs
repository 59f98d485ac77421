//! The reconciler's decisions: whether an intent can be looked up ([`begin`]), what a
//! lookup's answer says ([`interpret`], pure), and acting on it in the store ([`finish`]).
//!
//! Automatic lookups pace themselves ([`backoff_ms`], [`ConnectorRate`]): after each one that
//! leaves the intent unproven the next waits longer, up to a cap, with jitter, and after the
//! budget the intent waits for an operator ("lookups exhausted"). An operator's lookup is made
//! at once whatever the pacing, and counted like every other.
//!
//! Found downstream → receipt → `committed`. Proved absent, and the connector still
//! deduplicates the key when a resend would land → the same command is planned again with
//! the same key. Anything else leaves the intent indeterminate for an operator. Lookups are
//! read-only downstream, so a pause does not stop them.

use std::collections::HashMap;

use serde::Serialize;

use super::call::Call;
use super::dispatch::Follow;
use crate::clock::Entropy;
use crate::coordinator::config::{Config, LookupPacing};
use crate::domain::{
    ActionKey, AttemptId, AttemptKind, AttemptOutcome, Event, IntentId, IntentState, ReceiptId,
};
use crate::store::ops::*;
use crate::store::{
    ApplyContext, AttemptFinish, DispatchPlan, LOOKUP_HELD_BY_ANOTHER, ReceiptSource, Store,
    StoreError,
};
use crate::wire::NewAttempt;

/// What one lookup found and did.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum LookupResult {
    /// Found downstream; the intent is committed with this downstream id.
    Committed { downstream_id: String },
    /// Proved absent; the same command is being sent again with the same key.
    Resent,
    /// Proved absent while its cancellation was requested: cancelled, not sent again.
    Cancelled,
    /// Still unproven; why it stays indeterminate.
    StillIndeterminate { why: String },
    /// The intent is not indeterminate; nothing to look up.
    NotIndeterminate { state: IntentState },
    /// An automatic lookup asked for before its backoff ended: not made.
    NotDue { next_lookup_at_ms: u64 },
    /// The automatic lookups' budget is spent: the intent waits for an operator.
    LookupsExhausted { lookups: u32 },
}

/// Who asks for a lookup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// The reconciler, paced and within the budget.
    Automatic,
    /// An operator's command: made at once, whatever the pacing.
    Operator,
}

/// The wait after an intent's `n`-th automatic lookup (counting from 1): `first_delay_ms`
/// doubled for each lookup before it, at most `max_delay_ms`, drawn by `jitter` between
/// half and all of that ("equal jitter": never much sooner, and lookups of intents that
/// became indeterminate together drift apart).
pub fn backoff_ms(pacing: &LookupPacing, n: u32, jitter: u64) -> u64 {
    let doublings = n.saturating_sub(1).min(40);
    let full = pacing
        .first_delay_ms
        .saturating_mul(1u64 << doublings)
        .min(pacing.max_delay_ms);
    let half = full / 2;
    half + jitter % (full - half + 1)
}

/// The automatic lookups sent to each connector in the current second: a connector gets at
/// most `per_connector_per_sec` a second, however many of its intents are due.
#[derive(Debug, Default)]
pub struct ConnectorRate {
    windows: HashMap<String, (u64, u32)>,
}

impl ConnectorRate {
    /// Whether one more lookup may be sent to `connector` at `now`; counts it if so.
    pub fn take(&mut self, connector: &str, per_sec: u32, now: u64) -> bool {
        let second = now / 1000;
        let window = self
            .windows
            .entry(connector.to_string())
            .or_insert((second, 0));
        if window.0 != second {
            *window = (second, 0);
        }
        if window.1 >= per_sec {
            return false;
        }
        window.1 += 1;
        true
    }
}

impl LookupResult {
    fn still(why: &str) -> LookupResult {
        LookupResult::StillIndeterminate {
            why: why.to_string(),
        }
    }
}

/// A lookup to make: the attempt recorded for it and what to ask.
#[derive(Debug, Clone, PartialEq)]
pub struct LookupAsk {
    pub intent_id: IntentId,
    pub attempt_id: AttemptId,
    pub connector: String,
    pub resource: String,
    pub action_key: ActionKey,
    pub trigger: Trigger,
}

/// Whether a lookup is to be made.
#[derive(Debug, Clone, PartialEq)]
pub enum Begin {
    /// Nothing to ask: this is the result.
    Done(LookupResult),
    Ask(LookupAsk),
}

/// Decide whether `id` can be looked up now, and if so record the lookup's attempt and
/// count it. An automatic lookup is made only when due and within the budget; it plans the
/// next one at once, so a crash between asking and recording does not bring it back sooner.
pub fn begin(
    s: &mut Store,
    config: &Config,
    id: &IntentId,
    now: u64,
    ids: &dyn Entropy,
    trigger: Trigger,
) -> Result<Begin, StoreError> {
    let intent = s.intent(id)?;
    if intent.state != IntentState::Indeterminate {
        return Ok(Begin::Done(LookupResult::NotIndeterminate {
            state: intent.state,
        }));
    }
    let Some(connector) = config.connector(&intent.connector) else {
        return Ok(Begin::Done(LookupResult::still(
            "its connector is no longer configured",
        )));
    };
    // The key is looked up where it was sent; the configuration only for older sends.
    let Some(resource) = s
        .sent_resource(id)?
        .or_else(|| connector.operations.get(&intent.operation).cloned())
    else {
        return Ok(Begin::Done(LookupResult::still(
            "its connector has no resource for the operation",
        )));
    };
    if !connector.supports_lookup {
        return Ok(Begin::Done(LookupResult::still(
            "the connector cannot look keys up; an operator must close it with evidence",
        )));
    }
    let pace = s.lookup_pace(id)?;
    let pacing = &config.lookups;
    let next_at = match trigger {
        Trigger::Automatic => {
            if pace.exhausted_at_ms.is_some() || pace.automatic >= pacing.budget {
                if pace.exhausted_at_ms.is_none() {
                    s.plan_lookup(id, None, Some(now))?;
                }
                return Ok(Begin::Done(LookupResult::LookupsExhausted {
                    lookups: pace.lookups,
                }));
            }
            if let Some(next) = pace.next_at_ms.filter(|next| *next > now) {
                return Ok(Begin::Done(LookupResult::NotDue {
                    next_lookup_at_ms: next,
                }));
            }
            Some(now + backoff_ms(pacing, pace.automatic + 1, ids.next_u64()))
        }
        // An operator's lookup leaves the automatic ones' plan as it was.
        Trigger::Operator => pace.next_at_ms,
    };
    s.count_lookup(id, trigger == Trigger::Automatic, now, next_at)?;
    let attempt_id = AttemptId::generate(now, ids.next_u128());
    let new = NewAttempt {
        kind: Some(AttemptKind::Lookup),
        provider: connector.name.clone(),
        ..NewAttempt::default()
    };
    s.record_attempt(id, &attempt_id, &new, None, now)?;
    Ok(Begin::Ask(LookupAsk {
        intent_id: id.clone(),
        attempt_id,
        connector: connector.name.clone(),
        resource,
        action_key: intent.action_key,
        trigger,
    }))
}

/// What a lookup's answer says.
#[derive(Debug, Clone, PartialEq)]
pub enum Found {
    /// A record exists downstream under the key: this is its id. `keyed` when the answer
    /// named the action key as the record's `external_ref`.
    Yes { downstream_id: String, keyed: bool },
    /// The downstream answered that no record has the key.
    No,
    /// No usable answer.
    Unknown,
}

/// Read a lookup call's result: how its attempt ended and what it found.
pub fn interpret(call: &Call, key: &ActionKey) -> (AttemptFinish, Found) {
    match call {
        Call::Replied(reply) if reply.is_success() => {
            let unknown = |detail: String| {
                let finish = AttemptFinish {
                    outcome: Some(AttemptOutcome::Failed),
                    http_status: Some(reply.status),
                    detail: Some(detail),
                    ..AttemptFinish::default()
                };
                (finish, Found::Unknown)
            };
            match (reply.names_other_key(key), reply.downstream_id()) {
                (true, _) => {
                    unknown("a lookup answer about another action key's record".to_string())
                }
                (false, Some(downstream_id)) => (
                    AttemptFinish {
                        outcome: Some(AttemptOutcome::Succeeded),
                        http_status: Some(reply.status),
                        provider_request_id: Some(downstream_id.clone()),
                        detail: Some("found by action key".to_string()),
                        ..AttemptFinish::default()
                    },
                    Found::Yes {
                        keyed: reply.names_key(key),
                        downstream_id,
                    },
                ),
                (false, None) => unknown("a lookup answer without a downstream id".to_string()),
            }
        }
        Call::Replied(reply) if reply.status == 404 => (
            AttemptFinish {
                outcome: Some(AttemptOutcome::Succeeded),
                http_status: Some(404),
                detail: Some("not found by action key".to_string()),
                ..AttemptFinish::default()
            },
            Found::No,
        ),
        Call::Replied(reply) => (
            AttemptFinish {
                outcome: Some(AttemptOutcome::Failed),
                http_status: Some(reply.status),
                retry_after_ms: reply.retry_after_ms,
                ..AttemptFinish::default()
            },
            Found::Unknown,
        ),
        Call::Failed { detail, .. } => (
            AttemptFinish {
                outcome: Some(AttemptOutcome::Failed),
                detail: Some(detail.clone()),
                ..AttemptFinish::default()
            },
            Found::Unknown,
        ),
    }
}

/// Record the lookup `ask` answered with `call`, and act on it, in one transaction. An
/// automatic lookup that leaves the intent unproven spends the budget: the last one marks it
/// "lookups exhausted"; one answered with `Retry-After` waits at least that long.
pub fn finish(
    s: &mut Store,
    config: &Config,
    ask: &LookupAsk,
    call: &Call,
    now: u64,
    ids: &dyn Entropy,
) -> Result<(LookupResult, Follow), StoreError> {
    let (result, follow) = settle(s, config, ask, call, now, ids)?;
    let id = &ask.intent_id;
    match &result {
        LookupResult::StillIndeterminate { .. } if ask.trigger == Trigger::Automatic => {
            let pace = s.lookup_pace(id)?;
            if pace.automatic >= config.lookups.budget {
                s.plan_lookup(id, None, Some(now))?;
            } else if let Call::Replied(reply) = call
                && let Some(wait) = reply.retry_after_ms
            {
                let next = pace.next_at_ms.unwrap_or(now).max(now.saturating_add(wait));
                s.plan_lookup(id, Some(next), None)?;
            }
        }
        // Sent again: if it comes back indeterminate, its first lookup is not held back.
        LookupResult::Resent => s.plan_lookup(id, None, None)?,
        _ => {}
    }
    Ok((result, follow))
}

fn settle(
    s: &mut Store,
    config: &Config,
    ask: &LookupAsk,
    call: &Call,
    now: u64,
    ids: &dyn Entropy,
) -> Result<(LookupResult, Follow), StoreError> {
    let (mut attempt, mut found) = interpret(call, &ask.action_key);
    let id = &ask.intent_id;
    let held = match &found {
        Found::Yes {
            downstream_id,
            keyed: false,
        } => s.held_by_another(id, downstream_id, now)?,
        _ => false,
    };
    if held {
        // One record is one order's outcome: this one already commits another intent.
        attempt = AttemptFinish {
            outcome: Some(AttemptOutcome::Failed),
            provider_request_id: None,
            detail: Some(LOOKUP_HELD_BY_ANOTHER.to_string()),
            ..attempt
        };
        found = Found::Unknown;
    }
    s.finish_attempt(id, &ask.attempt_id, &attempt, now)?;
    match found {
        Found::Yes { downstream_id, .. } => {
            let source = ReceiptSource {
                receipt_id: ReceiptId::generate(now, ids.next_u128()),
                downstream_id: downstream_id.clone(),
                source: "lookup",
                event_id: None,
            };
            s.observe_receipt(id, &source, now)?;
            Ok((LookupResult::Committed { downstream_id }, Follow::Nothing))
        }
        Found::Unknown => Ok((
            LookupResult::still(if held {
                LOOKUP_HELD_BY_ANOTHER
            } else {
                "the lookup did not answer"
            }),
            Follow::Nothing,
        )),
        // Its cancellation was asked for: absent is settled as cancelled, never resent. A
        // request the downstream still holds may land later all the same; a receipt for it
        // then contradicts the cancelled state and is kept as evidence for an operator.
        Found::No if s.cancel_requested(id)? => {
            let ctx = ApplyContext {
                now_ms: now,
                ..ApplyContext::default()
            };
            match s.apply(id, &Event::ProvedAbsentCancel, &ctx) {
                Ok(_) => Ok((LookupResult::Cancelled, Follow::Nothing)),
                Err(StoreError::Refused(refusal)) => Ok((
                    LookupResult::StillIndeterminate {
                        why: format!("not found, but not cancelled: {refusal}"),
                    },
                    Follow::Nothing,
                )),
                Err(e) => Err(e),
            }
        }
        Found::No => {
            // A resend is safe only while the downstream still deduplicates the key: the
            // resend must arrive (within one timeout) before the key may be forgotten. The
            // dispatcher's claim asks the same again when the resend is due.
            let intent = s.intent(id)?;
            let safe = config.connector(&ask.connector).is_some_and(|connector| {
                intent.first_dispatch_at_ms.is_some_and(|first| {
                    connector
                        .key_contract()
                        .retention_at_most(intent.key_retention_secs)
                        .holds_key_on_landing(first, now)
                })
            });
            if !safe {
                return Ok((
                    LookupResult::still(
                        "not found, but the downstream may have forgotten the key: a resend \
                         would not be deduplicated",
                    ),
                    Follow::Nothing,
                ));
            }
            let ctx = ApplyContext {
                now_ms: now,
                dispatch: Some(DispatchPlan {
                    attempt_id: AttemptId::generate(now, ids.next_u128()),
                    available_at_ms: now,
                }),
                ..ApplyContext::default()
            };
            match s.apply(id, &Event::ProvedAbsentRetry, &ctx) {
                Ok(_) => Ok((LookupResult::Resent, Follow::Dispatch)),
                Err(StoreError::Refused(refusal)) => Ok((
                    LookupResult::StillIndeterminate {
                        why: format!("not found, but no resend: {refusal}"),
                    },
                    Follow::Nothing,
                )),
                Err(e) => Err(e),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coordinator::core::call::Reply;

    /// A lookup answered with another key's record (a downstream that ignored the
    /// `external_ref` it was asked for) found nothing for this key; with this key's record,
    /// or a record that names no key, it found it.
    #[test]
    fn a_lookup_answered_with_another_keys_record_finds_nothing() {
        let key: ActionKey = "po:acme:int_01m91z8h05n91he8sex76r3432"
            .parse()
            .expect("a key");
        let answer = |body: serde_json::Value| {
            Call::Replied(Reply {
                status: 200,
                retry_after_ms: None,
                body,
            })
        };
        let other = "po:globex:int_01m91z8h05n91he8sex76r3433";
        let (finish, found) = interpret(
            &answer(serde_json::json!({"id": "po-9", "external_ref": other})),
            &key,
        );
        assert_eq!(found, Found::Unknown);
        let detail = finish.detail.expect("a detail");
        assert!(detail.contains("another action key"), "{detail}");
        assert!(!detail.contains(other), "{detail}");
        for (body, keyed) in [
            (
                serde_json::json!({"id": "po-1", "external_ref": key.as_str()}),
                true,
            ),
            (serde_json::json!({"id": "po-1"}), false),
            (
                serde_json::json!({"id": "po-1", "external_ref": null}),
                false,
            ),
        ] {
            let (_, found) = interpret(&answer(body), &key);
            assert_eq!(
                found,
                Found::Yes {
                    downstream_id: "po-1".to_string(),
                    keyed
                }
            );
        }
    }

    fn pacing() -> LookupPacing {
        LookupPacing {
            first_delay_ms: 1_000,
            max_delay_ms: 60_000,
            budget: 20,
            per_connector_per_sec: 2,
        }
    }

    #[test]
    fn each_wait_doubles_up_to_the_cap_and_stays_within_half_and_all_of_it() {
        let p = pacing();
        for (n, full) in [
            (1, 1_000),
            (2, 2_000),
            (3, 4_000),
            (7, 60_000),
            (60, 60_000),
        ] {
            assert_eq!(
                backoff_ms(&p, n, 0),
                full / 2,
                "the least wait after lookup {n}"
            );
            assert_eq!(
                backoff_ms(&p, n, full / 2),
                full,
                "the most after lookup {n}"
            );
            for jitter in [1, 77, u64::MAX] {
                let wait = backoff_ms(&p, n, jitter);
                assert!((full / 2..=full).contains(&wait), "{n}: {wait}");
            }
        }
    }

    #[test]
    fn a_connector_gets_its_rate_a_second_and_others_theirs() {
        let mut rate = ConnectorRate::default();
        assert!(rate.take("erp", 2, 10_000));
        assert!(rate.take("erp", 2, 10_500));
        assert!(!rate.take("erp", 2, 10_999), "the third in one second");
        assert!(rate.take("bank", 2, 10_999), "another connector's own");
        assert!(rate.take("erp", 2, 11_000), "the next second");
    }
}
