//! The send gate: whether a dispatch that is due may cross the action boundary now. The
//! dispatcher asks it in the same transaction that claims the send, so nothing that changed
//! since the send was planned (a close, a pause, a lapsed authorisation, a passed deadline,
//! time running past the downstream's key retention) can let it through.
//!
//! Key retention is judged for the moment the request would *land*, one connector timeout
//! from now, and only once an earlier send of the same key may have crossed: a downstream
//! that never saw the key has nothing to forget.

use super::state::IntentFacts;
use super::vocab::IntentState;

/// What a connector promises about the keys it is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyContract {
    /// The downstream deduplicates creations by their `Idempotency-Key`.
    pub supports_idempotency: bool,
    /// ... for this long after the first request with the key.
    pub retention_ms: u64,
    /// The longest a request may take to land (the connector's timeout).
    pub timeout_ms: u64,
}

impl KeyContract {
    /// The contract with the retention no longer than `stored_secs`, the retention the
    /// intent's key was first sent under (before any send: the one it was created under):
    /// when the configuration changed since, the shorter one is kept. The send gate, the
    /// reconciler and the console's ledger all take a key's forget time by this rule.
    pub fn retention_at_most(self, stored_secs: Option<u64>) -> Self {
        let retention_ms = stored_secs.map_or(self.retention_ms, |s| {
            self.retention_ms.min(s.saturating_mul(1000))
        });
        KeyContract {
            retention_ms,
            ..self
        }
    }

    /// When the downstream may forget a key first sent at `first_sent_at_ms`.
    pub fn forget_at_ms(&self, first_sent_at_ms: u64) -> u64 {
        first_sent_at_ms.saturating_add(self.retention_ms)
    }

    /// Whether a request sent now would land while the downstream still deduplicates a key
    /// first sent at `first_sent_at_ms`.
    pub fn holds_key_on_landing(&self, first_sent_at_ms: u64, now_ms: u64) -> bool {
        self.supports_idempotency
            && now_ms.saturating_add(self.timeout_ms) < self.forget_at_ms(first_sent_at_ms)
    }
}

/// Why a due send is not sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Hold {
    /// The intent is final or no longer executing: the send is withdrawn.
    #[error("the intent is {state}")]
    NotExecuting { state: IntentState },
    /// A pause covers the intent; the retry is planned again after resume.
    #[error("the intent is paused")]
    Paused,
    #[error("the authorisation is no longer valid")]
    AuthorizationLapsed,
    #[error("the deadline has passed")]
    DeadlinePassed,
    /// The intent's cancellation is requested: nothing new is sent.
    #[error("cancellation of the intent is requested")]
    CancellationRequested,
    /// An earlier send may have crossed and the downstream does not deduplicate keys.
    #[error("an earlier send may have crossed and the downstream does not deduplicate keys")]
    NoIdempotency,
    /// An earlier send may have crossed and this one would land after the downstream may
    /// have forgotten the key (key retention), so it would not be deduplicated.
    #[error(
        "it would land after the downstream may have forgotten the key (the key retention runs out first)"
    )]
    KeyMayBeForgotten { forget_at_ms: u64 },
}

/// Whether a send due for the intent described by `facts` may cross now. `first_sent_at_ms`
/// is when an earlier send of its key first left, if any did.
pub fn may_send(
    facts: &IntentFacts,
    first_sent_at_ms: Option<u64>,
    key: &KeyContract,
) -> Result<(), Hold> {
    if facts.state != IntentState::Executing {
        return Err(Hold::NotExecuting { state: facts.state });
    }
    if facts.cancel_requested {
        return Err(Hold::CancellationRequested);
    }
    if facts.paused {
        return Err(Hold::Paused);
    }
    if !facts.authorization_valid {
        return Err(Hold::AuthorizationLapsed);
    }
    if facts.deadline_passed() {
        return Err(Hold::DeadlinePassed);
    }
    if let (true, Some(first)) = (facts.may_have_crossed_boundary, first_sent_at_ms) {
        if !key.supports_idempotency {
            return Err(Hold::NoIdempotency);
        }
        if !key.holds_key_on_landing(first, facts.now_ms) {
            return Err(Hold::KeyMayBeForgotten {
                forget_at_ms: key.forget_at_ms(first),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts() -> IntentFacts {
        IntentFacts {
            state: IntentState::Executing,
            paused: false,
            attempts_used: 1,
            max_attempts: 3,
            deadline_at_ms: 100_000,
            now_ms: 10_000,
            may_have_crossed_boundary: false,
            authorization_valid: true,
            dispatch_in_flight: false,
            cancel_requested: false,
        }
    }

    const KEY: KeyContract = KeyContract {
        supports_idempotency: true,
        retention_ms: 5_000,
        timeout_ms: 1_000,
    };

    #[test]
    fn a_first_send_goes_whatever_the_retention() {
        assert_eq!(may_send(&facts(), None, &KEY), Ok(()));
        assert_eq!(may_send(&facts(), Some(0), &KEY), Ok(()), "nothing crossed");
    }

    #[test]
    fn a_resend_must_land_before_the_key_may_be_forgotten() {
        let mut f = facts();
        f.may_have_crossed_boundary = true;
        // First sent at 6 000: forgotten from 11 000; a send now lands by 11 000.
        assert_eq!(
            may_send(&f, Some(6_000), &KEY),
            Err(Hold::KeyMayBeForgotten {
                forget_at_ms: 11_000
            })
        );
        assert_eq!(may_send(&f, Some(6_001), &KEY), Ok(()));
        let no_keys = KeyContract {
            supports_idempotency: false,
            ..KEY
        };
        assert_eq!(
            may_send(&f, Some(9_999), &no_keys),
            Err(Hold::NoIdempotency)
        );
    }

    #[test]
    fn final_paused_lapsed_and_late_intents_are_not_sent() {
        for state in [
            IntentState::Cancelled,
            IntentState::Committed,
            IntentState::Indeterminate,
        ] {
            let f = IntentFacts { state, ..facts() };
            assert_eq!(may_send(&f, None, &KEY), Err(Hold::NotExecuting { state }));
        }
        let paused = IntentFacts {
            paused: true,
            ..facts()
        };
        assert_eq!(may_send(&paused, None, &KEY), Err(Hold::Paused));
        let lapsed = IntentFacts {
            authorization_valid: false,
            ..facts()
        };
        assert_eq!(
            may_send(&lapsed, None, &KEY),
            Err(Hold::AuthorizationLapsed)
        );
        let late = IntentFacts {
            now_ms: 100_000,
            ..facts()
        };
        assert_eq!(may_send(&late, None, &KEY), Err(Hold::DeadlinePassed));
    }
}
