//! The command palette (Ctrl+K): every [`ConsoleCommand`] with a palette entry, and the
//! open intent's commands its role allows, filtered as the operator types (in either
//! language); Enter runs the first match.

use super::command_dialog::availability;
use super::format::{self, wt};
use crate::console::app::ConsoleApp;
use crate::console::commands::ConsoleCommand;
use crate::console::text::{BidiEditState, BidiTextEdit, Direction};

#[derive(Debug, Default)]
pub struct PaletteState {
    pub open: bool,
    pub query: String,
    edit: BidiEditState,
}

impl PaletteState {
    pub fn toggle(&mut self) {
        self.open = !self.open;
        self.query.clear();
        self.edit = BidiEditState::default();
    }
}

/// The palette's entries now: its fixed commands, then pause, resume, reconcile and close
/// for the open intent where they may be started.
fn entries(app: &ConsoleApp) -> Vec<(ConsoleCommand, String)> {
    let i18n = &app.i18n;
    let mut entries: Vec<(ConsoleCommand, String)> = ConsoleCommand::palette()
        .into_iter()
        .map(|(c, key)| (c, i18n.tr(key)))
        .collect();
    let open = app.open.as_ref().and_then(|o| o.detail.as_ref());
    if let Some(detail) = open.filter(|_| app.intent_view.dialog.is_none()) {
        for (kind, key) in super::intent_panel::COMMANDS {
            if availability(i18n, kind, detail, app.intent_view.whoami()).is_ok() {
                entries.push((ConsoleCommand::StartCommand(kind), i18n.tr(key)));
            }
        }
    }
    entries
}

pub fn palette_ui(app: &mut ConsoleApp, ui: &mut egui::Ui) {
    if !app.palette.open {
        return;
    }
    let entries = entries(app);
    let mut chosen = None;
    let mut open = app.palette.open;
    let title = wt(&app.i18n, ui, &app.i18n.tr("command-palette"));
    egui::Window::new(title)
        .open(&mut open)
        .collapsible(false)
        .resizable(false)
        .anchor(egui::Align2::CENTER_TOP, [0.0, 60.0])
        .show(ui.ctx(), |ui| {
            let palette = &mut app.palette;
            let response =
                BidiTextEdit::new(&mut palette.edit, &mut palette.query, Direction::Auto)
                    .id_salt("palette")
                    .show(ui);
            response.request_focus();
            let needle = app.palette.query.to_lowercase();
            let matches: Vec<&(ConsoleCommand, String)> = entries
                .iter()
                .filter(|(_, label)| label.to_lowercase().contains(&needle))
                .collect();
            for (command, label) in &matches {
                if format::button(ui, &app.i18n, label).clicked() {
                    chosen = Some(command.clone());
                }
            }
            if app.palette.edit.take_submitted() {
                chosen = matches.first().map(|(c, _)| c.clone());
            }
        });
    app.palette.open = open && chosen.is_none();
    if let Some(command) = chosen {
        app.queue(command);
    }
}
