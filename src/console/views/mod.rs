//! The console's views, one per file. Each draws with `*_ui` functions and only queues
//! [`super::commands::ConsoleCommand`]s; it never talks to the network itself.

pub mod charts;
pub mod dashboard;
pub mod filters_bar;
pub mod format;
pub mod intent_panel;
pub mod intent_view;
pub mod intents_table;
pub mod palette;
pub mod top_bar;
