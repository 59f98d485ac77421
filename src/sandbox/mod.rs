//! A stand-in downstream ERP with switchable faults.
//!
//! It creates purchase orders, inventory reservations and payments under idempotency
//! keys, answers lookups by external reference, counts true effects per action key (the
//! ground truth for duplicate effects) and posts a webhook per creation. Faults are set
//! at start and replaced at run time through `POST /_sandbox/faults`.
//!
//! - [`faults`]: the fault settings and their SPEC grammar.
//! - [`store`]: records, idempotency maps and effect counts, in memory.
//! - [`state`]: the shared state one server runs on.
//! - [`server`]: the router and the connection-owning accept loop.
//! - [`webhooks`]: asynchronous webhook delivery.
//! - [`clock`]: the time source, replaceable in tests.
//! - [`cli`]: the `sandbox` subcommand's flags and entry point.

pub mod cli;
pub mod clock;
mod error;
pub mod faults;
mod handlers;
mod rng;
pub mod server;
pub mod state;
pub mod store;
pub mod webhooks;

pub use cli::{SandboxArgs, run_cli};
pub use clock::{Clock, ManualClock, SystemClock};
pub use faults::{Delay, FaultSpec, FaultSpecError, FaultSpecProblem, Probability};
pub use server::{router, run};
pub use state::{SandboxOptions, SandboxState};
pub use store::{DownstreamId, EffectsSummary, ExternalRef, Record, Resource};
pub use webhooks::{EventId, WebhookEvent, WebhookTarget};
