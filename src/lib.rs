//! intentdesk keeps one intent per business outcome, lets it own every attempt, gives each
//! mutating action one stable action key, accepts one receipt, and marks an unprovable
//! outcome indeterminate until it is reconciled.
//!
//! Layers, each depending only on those above it:
//! - [`domain`]: pure vocabulary, state machine, decision table, retry policy,
//!   canonical arguments and metric definitions. No I/O.
//! - [`store`]: SQLite persistence of intents, attempts, receipts, outbox, commands.
//! - [`sandbox`]: a stand-in downstream ERP with switchable faults.

pub mod client;
pub mod clock;
#[cfg(feature = "console")]
pub mod console;
pub mod coordinator;
pub mod domain;
pub mod embedded;
pub mod i18n;
pub mod metrics;
pub mod sandbox;
pub mod serving;
pub mod sim;
pub mod store;
pub mod tls;
pub mod wire;
pub mod workload;

/// mimalloc instead of the system allocator: the coordinator's request path allocates and
/// frees small objects at a high rate (JSON, canonical arguments, rows), and glibc's malloc
/// took about a sixth of its CPU time under load (see BENCHMARKS.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
