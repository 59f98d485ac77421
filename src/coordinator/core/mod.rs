//! The coordinator's core: every decision the dispatcher and the reconciler make, and the
//! ingest API's approvals and dispatches, as plain functions over a
//! [`Store`](crate::store::Store), the time and an id source, with no network, no timers and
//! no tasks. The async shells (`super::dispatcher`,
//! `super::reconciler`) call the downstream and feed its answer in as a [`call::Call`]; a
//! simulation feeds in answers of its own and drives the same steps.

pub mod call;
pub mod dispatch;
pub mod ingest;
pub mod reconcile;
pub mod revisit;
pub mod sweep;

pub use dispatch::Follow;
