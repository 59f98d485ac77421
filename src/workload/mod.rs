//! The workload: simulated agents that use a coordinator the way real ones do, and the
//! logical-outcome report of what came of it. Used by the embedded default (a steady
//! workload) and by `intentdesk load` (a bounded run, optionally under sandbox faults).
//!
//! - [`catalog`]: tenants, operations, providers, goods, and how each interface writes an
//!   order (Persian or ASCII digits).
//! - [`generator`]: seeded plans of agent behaviour; pure.
//! - [`driver`]: runs plans over real HTTP at a rate.
//! - [`naive`]: the same workload sent straight to the downstream by a client that retries
//!   at every layer with fresh keys: the baseline the coordinator is measured against.
//! - [`report`]: waits for the coordinator to settle, then builds the logical-outcome report
//!   from the coordinator and the sandbox's ground truth.
//! - [`cli`]: the `load` subcommand.

pub mod catalog;
pub mod cli;
pub mod driver;
mod error;
pub mod generator;
pub mod naive;
pub mod report;

pub use cli::{LoadArgs, run_cli};
pub use driver::{DriveLog, DriveTotals, Driven, DriverConfig, drive};
pub use error::WorkloadError;
pub use generator::{Generator, Mix, Plan};
pub use report::Report;
