//! What the console reads from the coordinator: the wire shapes (`crate::wire`), with an
//! intent's state read as a [`StateName`], so a state a newer coordinator adds is kept as
//! text and shown as such, never dropped and never read as failed.

pub use crate::wire::StateName;

/// One intent as a list row or an envelope.
pub type IntentRow = crate::wire::Intent<StateName>;
/// One page of the intents list.
pub type IntentPage = crate::wire::IntentPage<StateName>;
/// One intent with everything attached.
pub type IntentDetail = crate::wire::IntentDetail<StateName>;
/// One attempt of an intent.
pub type AttemptRow = crate::wire::Attempt;
/// One receipt.
pub type ReceiptRow = crate::wire::Receipt;
/// One state change.
pub type TransitionRow = crate::wire::Transition;
/// One operator command from the audit trail.
pub type CommandRow = crate::wire::CommandRecord;
