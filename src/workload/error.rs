//! The workload's one error type: the client's call error, since every failure of a workload
//! is a call (to the coordinator or the sandbox) that did not give a usable answer.

pub use crate::client::CallError as WorkloadError;
