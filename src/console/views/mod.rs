//! The console's views, one per file. Each draws with `*_ui` functions and only queues
//! [`super::commands::ConsoleCommand`]s; it never talks to the network itself.

pub mod audit;
pub mod charts;
pub mod command_dialog;
pub mod dashboard;
pub mod envelope;
pub mod export;
pub mod filters_bar;
pub mod format;
pub mod intent_panel;
pub mod intent_view;
pub mod intent_widgets;
pub mod intents_table;
pub mod ledger;
pub mod palette;
pub mod timeline;
pub mod top_bar;
