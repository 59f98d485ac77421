//! The seeds' acceptance gate, over real HTTP with the sandbox: what a team must be able to
//! answer yes to before it turns on automatic retry or failover. One test binary, one module
//! per part of the gate.

mod approvals;
#[path = "../common/mod.rs"]
mod common;
mod lifecycle;
mod pacing;
mod releases;
