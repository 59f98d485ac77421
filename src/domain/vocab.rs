//! The closed vocabularies of the design: intent states, consequence tiers, attempt kinds
//! and outcomes, operator roles, command kinds, close dispositions and locales.
//!
//! Each is an enum with one stable snake_case wire name, used in JSON, SQL and Fluent ids
//! alike. Parsing an unknown name is a typed error that lists the accepted names.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A name that is not one of the accepted values of a vocabulary.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} `{got}`; expected one of: {expected}")]
pub struct UnknownName {
    pub what: &'static str,
    pub got: String,
    pub expected: String,
}

macro_rules! vocabulary {
    ($(#[$doc:meta])* $name:ident, $what:literal { $($variant:ident => $wire:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum $name {
            $($variant),+
        }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The stable wire name.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $wire),+
                }
            }
        }

        impl FromStr for $name {
            type Err = UnknownName;
            fn from_str(s: &str) -> Result<Self, UnknownName> {
                match s {
                    $($wire => Ok($name::$variant),)+
                    other => Err(UnknownName {
                        what: $what,
                        got: other.chars().take(60).collect(),
                        expected: [$($wire),+].join(", "),
                    }),
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let raw = <std::borrow::Cow<'de, str>>::deserialize(d)?;
                raw.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}

vocabulary!(
    /// Where an intent stands. `indeterminate` is not terminal: it is left only by evidence.
    IntentState, "state" {
        New => "new",
        Prepared => "prepared",
        Authorized => "authorized",
        Executing => "executing",
        Committed => "committed",
        Rejected => "rejected",
        Cancelled => "cancelled",
        Expired => "expired",
        Indeterminate => "indeterminate",
    }
);

impl IntentState {
    /// Terminal states never change again.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            Self::Committed | Self::Rejected | Self::Cancelled | Self::Expired
        )
    }
}

vocabulary!(
    /// How consequential an operation is. Only `read` and `compute` may be hedged.
    ConsequenceTier, "consequence tier" {
        Read => "read",
        Compute => "compute",
        Proposal => "proposal",
        Write => "write",
        Financial => "financial",
    }
);

vocabulary!(
    /// Which layer retries an intent's work: the coordinator for the mutating work only its
    /// dispatcher may send, the agent for the reads, inference and proposals it reports
    /// (each report still inside the intent's budget and deadline, which the coordinator
    /// enforces).
    RetryOwner, "retry owner" {
        Coordinator => "coordinator",
        Agent => "agent",
    }
);

impl RetryOwner {
    /// Who retries work of `tier`.
    pub fn of(tier: ConsequenceTier) -> RetryOwner {
        if tier.is_mutating() {
            RetryOwner::Coordinator
        } else {
            RetryOwner::Agent
        }
    }
}

vocabulary!(
    /// Why the retry/failover gate should be looked at again: a connector's contract
    /// changed (its key retention shortened above all), or a provider, operation, release
    /// or tool was seen for the first time.
    RevisitKind, "revisit kind" {
        RetentionShortened => "retention_shortened",
        ContractChanged => "contract_changed",
        ProviderFirstSeen => "provider_first_seen",
        OperationFirstSeen => "operation_first_seen",
        ReleaseFirstSeen => "release_first_seen",
        ToolFirstSeen => "tool_first_seen",
    }
);

impl ConsequenceTier {
    /// Whether work of this tier changes something outside intentdesk.
    pub fn is_mutating(self) -> bool {
        matches!(self, Self::Write | Self::Financial)
    }

    /// Hedging (a second concurrent attempt) is allowed only where a losing hedge has no effect.
    pub fn may_hedge(self) -> bool {
        matches!(self, Self::Read | Self::Compute)
    }
}

vocabulary!(
    /// What one attempt did.
    AttemptKind, "attempt kind" {
        Retrieval => "retrieval",
        Inference => "inference",
        Proposal => "proposal",
        Dispatch => "dispatch",
        Lookup => "lookup",
    }
);

impl AttemptKind {
    /// Only `dispatch` crosses the action boundary; agents may report the others.
    pub fn is_mutating(self) -> bool {
        matches!(self, Self::Dispatch)
    }
}

vocabulary!(
    /// How one attempt ended, as far as it is known.
    AttemptOutcome, "attempt outcome" {
        Pending => "pending",
        Succeeded => "succeeded",
        Failed => "failed",
        TimedOut => "timed_out",
        Lost => "lost",
        Abandoned => "abandoned",
    }
);

vocabulary!(
    /// A token's role; what each may do is in [`Role::may`].
    Role, "role" {
        Agent => "agent",
        Approver => "approver",
        Connector => "connector",
        Viewer => "viewer",
        Supervisor => "supervisor",
        Engineer => "engineer",
        Admin => "admin",
    }
);

vocabulary!(
    /// An operator command.
    CommandKind, "command kind" {
        Pause => "pause",
        Resume => "resume",
        Reconcile => "reconcile",
        Close => "close",
        Cancel => "cancel",
    }
);

vocabulary!(
    /// How an operator closes an indeterminate intent.
    Disposition, "disposition" {
        Committed => "committed",
        Cancelled => "cancelled",
    }
);

vocabulary!(
    /// The locale an intent was created in, and the console's display locale.
    Locale, "locale" {
        EnUs => "en-US",
        FaIr => "fa-IR",
    }
);

/// Something a role may or may not do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Permission {
    Ingest,
    /// Authorise an intent that another principal created.
    Approve,
    /// Deliver a downstream's receipts (for the connectors the token names).
    Receipt,
    Read,
    PauseResume,
    Reconcile,
    Close,
}

impl Role {
    /// The permission table of the design: agents ingest and never approve; approvers read
    /// and approve; connectors deliver receipts and nothing else; viewers read; supervisors
    /// read, approve, reconcile and close; engineers read, pause and resume, reconcile and
    /// close; admins do everything but deliver receipts. Nobody approves an intent it
    /// created (the ingest handler checks the creator). A receipt is the
    /// downstream's word: an operator who has evidence of an effect closes the intent with
    /// it, which the audit trail records under the operator's name.
    pub fn may(self, permission: Permission) -> bool {
        use Permission as P;
        match self {
            Role::Admin => !matches!(permission, P::Receipt),
            Role::Agent => matches!(permission, P::Ingest),
            Role::Approver => matches!(permission, P::Read | P::Approve),
            Role::Connector => matches!(permission, P::Receipt),
            Role::Viewer => matches!(permission, P::Read),
            Role::Supervisor => {
                matches!(permission, P::Read | P::Approve | P::Reconcile | P::Close)
            }
            Role::Engineer => {
                matches!(
                    permission,
                    P::Read | P::PauseResume | P::Reconcile | P::Close
                )
            }
        }
    }

    /// The permission a command needs.
    pub fn permission_for(kind: CommandKind) -> Permission {
        match kind {
            CommandKind::Pause | CommandKind::Resume => Permission::PauseResume,
            CommandKind::Reconcile => Permission::Reconcile,
            // Cancelling is an observation, not a rollback: who may close may cancel.
            CommandKind::Close | CommandKind::Cancel => Permission::Close,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_round_trips() {
        for state in IntentState::ALL {
            assert_eq!(state.as_str().parse::<IntentState>(), Ok(*state));
        }
        for locale in Locale::ALL {
            let json = serde_json::to_string(locale).expect("serialises");
            assert_eq!(json, format!("\"{}\"", locale.as_str()));
        }
    }

    #[test]
    fn unknown_names_list_what_is_accepted() {
        let err = "failed"
            .parse::<IntentState>()
            .expect_err("there is no failed state");
        assert!(err.to_string().contains("indeterminate"), "{err}");
    }

    #[test]
    fn supervisors_may_close_but_not_pause() {
        assert!(Role::Supervisor.may(Permission::Close));
        assert!(!Role::Supervisor.may(Role::permission_for(CommandKind::Pause)));
        assert!(Role::Engineer.may(Role::permission_for(CommandKind::Pause)));
        assert!(!Role::Viewer.may(Permission::Reconcile));
        assert!(!Role::Agent.may(Permission::Read));
    }

    #[test]
    fn only_connectors_deliver_receipts() {
        for role in Role::ALL {
            assert_eq!(
                role.may(Permission::Receipt),
                *role == Role::Connector,
                "{role}"
            );
        }
        assert!(!Role::Connector.may(Permission::Ingest));
        assert!(!Role::Connector.may(Permission::Read));
    }
}
