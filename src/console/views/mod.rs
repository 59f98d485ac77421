//! The console's views, one per file. Each draws with `*_ui` functions given what it reads
//! (the state structs and data it shows, the localizer, the time) and its own state to
//! change; anything else it wants it pushes onto [`super::actions::Actions`]. A view never
//! sees the app and never talks to the network itself.

pub mod audit;
pub mod charts;
pub mod command_dialog;
pub mod dashboard;
pub mod envelope;
pub mod export;
pub mod filters_bar;
pub mod format;
pub mod frozen_command;
pub mod intent_panel;
pub mod intent_view;
pub mod intent_widgets;
pub mod intents_table;
pub mod ledger;
pub mod links;
pub mod palette;
pub mod revisit_notice;
pub mod timeline;
pub mod top_bar;
