//! Every user action of the console is one [`ConsoleCommand`]: label, shortcut and palette
//! entry in one place. Views only queue commands; the app applies them once per frame.

use egui::{Key, KeyboardShortcut, Modifiers};

use super::filters::Filters;
use crate::domain::CommandKind;

/// A user action.
#[derive(Debug, Clone, PartialEq)]
pub enum ConsoleCommand {
    Refresh,
    TogglePalette,
    FocusSearch,
    ClearFilters,
    ShowIntents,
    ShowDashboard,
    SwitchLocale,
    OpenIntent(String),
    CloseIntent,
    ApplyView(Filters),
    SetFilters(Filters),
    SaveCurrentView,
    LoadMore,
    /// Save the open intent as JSON (the export dialog asks where).
    ExportIntent,
    /// Save the table's rows as CSV (the export dialog asks where).
    ExportTable,
    /// Start pause, resume, reconcile or close on the open intent: its dialog opens, with
    /// the dry run and the confirmation it always asks for.
    StartCommand(CommandKind),
}

impl ConsoleCommand {
    /// The commands the palette lists, with their Fluent label ids.
    pub fn palette() -> Vec<(ConsoleCommand, &'static str)> {
        vec![
            (ConsoleCommand::Refresh, "command-refresh"),
            (ConsoleCommand::FocusSearch, "command-search"),
            (ConsoleCommand::ClearFilters, "filter-clear"),
            (ConsoleCommand::ShowIntents, "command-show-intents"),
            (ConsoleCommand::ShowDashboard, "command-show-dashboard"),
            (ConsoleCommand::SwitchLocale, "command-switch-locale"),
            (ConsoleCommand::SaveCurrentView, "command-save-view"),
            (ConsoleCommand::ExportIntent, "command-export-intent"),
            (ConsoleCommand::ExportTable, "command-export-table"),
        ]
    }

    pub fn shortcut(&self) -> Option<KeyboardShortcut> {
        let ctrl = |key| Some(KeyboardShortcut::new(Modifiers::COMMAND, key));
        match self {
            ConsoleCommand::Refresh => Some(KeyboardShortcut::new(Modifiers::NONE, Key::F5)),
            ConsoleCommand::TogglePalette => ctrl(Key::K),
            ConsoleCommand::FocusSearch => ctrl(Key::F),
            ConsoleCommand::SwitchLocale => ctrl(Key::L),
            ConsoleCommand::CloseIntent => {
                Some(KeyboardShortcut::new(Modifiers::NONE, Key::Escape))
            }
            _ => None,
        }
    }

    /// The commands bound to a shortcut.
    pub fn with_shortcuts() -> [ConsoleCommand; 5] {
        [
            ConsoleCommand::Refresh,
            ConsoleCommand::TogglePalette,
            ConsoleCommand::FocusSearch,
            ConsoleCommand::SwitchLocale,
            ConsoleCommand::CloseIntent,
        ]
    }
}
