//! The HTTP API's shapes, one per message: what the coordinator answers and takes, and what
//! the console, the workload and the client read and send. Both ends use these types, so
//! they cannot drift apart; the API description (`docs/openapi.json`) is held against them
//! by a test.
//!
//! Shapes are exact on write and forgiving on read where a newer coordinator may say more:
//! fields a coordinator always sends but an older one may not default on read, and an
//! intent's state is generic ([`Intent<S>`]) so the console reads it as a [`StateName`],
//! keeping a state it does not know instead of dropping the row.
//!
//! Nothing here performs I/O; the module depends on `domain` and serde only.

pub mod attempt;
pub mod command;
pub mod detail;
pub mod error;
pub mod filter;
pub mod health;
pub mod intent;
pub mod metrics;
pub mod pause;
pub mod receipt;
pub mod revisit;
pub mod whoami;

pub use attempt::{Attempt, AttemptReport, NewAttempt};
pub use command::{
    CommandBody, CommandRecord, CommandTarget, CommandTargets, EvidenceBody, ScopeBody, TargetBody,
};
pub use detail::{IntentDetail, IntentPage, KeyLedger, LinkedIntent, MAX_LINKED, Transition};
pub use error::{ErrorBody, ErrorDetail};
pub use filter::{FilterParam, FilterQuery};
pub use health::{Health, HealthPart, HealthStatus, PartStatus};
pub use intent::{
    Authorize, BatchCreated, BatchIntent, BatchResult, CancelIntent, CreateBatch, CreateIntent,
    Dispatched, Intent, StateName,
};
pub use metrics::{
    ALL_GROUP, AttemptsHistogram, Chart, ChartMetric, ChartSeries, GroupBy, HistogramGroup,
    IndeterminateSummary, Overview, SeriesPoint, Summary,
};
pub use pause::{Pause, PauseScope};
pub use receipt::{Receipt, ReceiptDelivery, WebhookOutcome};
pub use revisit::{Revisit, RevisitPage};
pub use whoami::{Permissions, Whoami};
