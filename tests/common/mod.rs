//! What the integration tests share: the real parts started on loopback ([`deploy`]) and,
//! for the console's tests, a rig that drives them and the app from the test's thread
//! ([`console`]).
#![allow(dead_code)] // each test file uses part of it

pub mod backends;
pub mod deploy;

#[cfg(feature = "console")]
pub mod console;
