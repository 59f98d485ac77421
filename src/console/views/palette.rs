//! The command palette (Ctrl+K): every [`ConsoleCommand`] with a palette entry, filtered as
//! the operator types; Enter runs the first match.

use crate::console::app::ConsoleApp;
use crate::console::commands::ConsoleCommand;

#[derive(Debug, Default)]
pub struct PaletteState {
    pub open: bool,
    pub query: String,
}

impl PaletteState {
    pub fn toggle(&mut self) {
        self.open = !self.open;
        self.query.clear();
    }
}

pub fn palette_ui(app: &mut ConsoleApp, ui: &mut egui::Ui) {
    if !app.palette.open {
        return;
    }
    let entries: Vec<(ConsoleCommand, String)> = ConsoleCommand::palette()
        .into_iter()
        .map(|(c, key)| (c, app.i18n.tr(key)))
        .collect();
    let mut chosen = None;
    let mut open = app.palette.open;
    egui::Window::new(app.i18n.tr("command-palette"))
        .open(&mut open)
        .collapsible(false)
        .resizable(false)
        .anchor(egui::Align2::CENTER_TOP, [0.0, 60.0])
        .show(ui.ctx(), |ui| {
            let response = ui.text_edit_singleline(&mut app.palette.query);
            response.request_focus();
            let needle = app.palette.query.to_lowercase();
            let matches: Vec<&(ConsoleCommand, String)> = entries
                .iter()
                .filter(|(_, label)| label.to_lowercase().contains(&needle))
                .collect();
            for (command, label) in &matches {
                if ui.button(super::format::wt(&app.i18n, ui, label)).clicked() {
                    chosen = Some(command.clone());
                }
            }
            if ui.input(|i| i.key_pressed(egui::Key::Enter)) {
                chosen = matches.first().map(|(c, _)| c.clone());
            }
        });
    app.palette.open = open && chosen.is_none();
    if let Some(command) = chosen {
        app.queue(command);
    }
}
