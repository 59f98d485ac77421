//! The desktop console: intents as timelines of attempts, action keys and receipts, with
//! filters, live updates and operator commands. It talks to a coordinator only through the
//! HTTP API, from a background worker; a frame never waits on the network or the disk.
//!
//! Split as rerun's viewer is: [`app`] holds the app struct and its `eframe::App` impl,
//! split into its plain state, background logic, drawing and command handling; [`worker`]
//! runs the requests off the UI thread; `views/` draws (one view per file), each view
//! given what it reads and an [`actions::Actions`] queue rather than the app; [`commands`]
//! is the one enum of user actions, applied once per frame.

pub mod actions;
pub mod app;
pub mod cache;
pub mod commands;
pub mod export;
pub mod filters;
pub mod model;
pub mod table;
pub mod text;
pub mod theme;
pub mod views;
pub mod worker;

pub use app::{ConsoleApp, ConsoleOptions, run_native};
