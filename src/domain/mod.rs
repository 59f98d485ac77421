//! The pure core: vocabulary, the intent state machine, the decision table, the retry
//! policy, canonical arguments and metric definitions. Nothing here performs I/O, reads a
//! clock or draws a random number; callers pass time and randomness in.

pub mod canonical;
pub mod decision;
pub mod ids;
pub mod metrics;
pub mod policy;
pub mod release;
pub mod retry;
pub mod revisit;
pub mod send;
pub mod state;
pub mod text;
pub mod vocab;

pub use canonical::{
    CanonicalArgs, CanonicalError, MAX_ARGS_BYTES, MAX_DEPTH, canonicalize, fold_digits,
    normalize_text,
};
pub use decision::{
    BareOverload, ErrorClass, NextMove, Observation, classify, classify_with, next_move,
};
pub use ids::{ActionKey, AttemptId, CommandId, IdError, IntentId, ReceiptId, Tenant};
pub use metrics::Distribution;
pub use release::{IneligibleRelease, Release, ReleaseRegistry};
pub use retry::{
    BudgetView, GiveUpReason, Jitter, RetryPolicy, SplitMix64, backoff_ms, may_hedge, plan_retry,
};
pub use send::{Hold, KeyContract, may_send};
pub use state::{Effect, Event, Evidence, IntentFacts, Refusal, Transition};
pub use vocab::{
    AttemptKind, AttemptOutcome, CommandKind, ConsequenceTier, Disposition, IntentState, Locale,
    Permission, RetryOwner, RevisitKind, Role, UnknownName,
};
