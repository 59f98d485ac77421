//! Where the sandbox reads the time: unix milliseconds from a [`Clock`].
//!
//! Record creation times and key retention use this clock, so a test can move time
//! forward with a [`ManualClock`] instead of waiting. Request delays are real waits and
//! do not use it.

pub use crate::clock::{Clock, ManualClock, SystemClock};
