//! The command palette (Ctrl+K): every [`ConsoleCommand`] with a palette entry, and the
//! open intent's commands its role allows, filtered as the operator types (in either
//! language); Enter runs the first match.

use super::command_dialog::availability;
use super::format::{self, wt};
use super::intent_panel::COMMANDS;
use crate::console::actions::Actions;
use crate::console::commands::ConsoleCommand;
use crate::console::model::IntentDetail;
use crate::console::text::{BidiEditState, BidiTextEdit, Direction};
use crate::i18n::Localizer;
use crate::wire::Whoami;

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

/// What the palette reads, and its own state.
pub struct PaletteContext<'a> {
    pub i18n: &'a Localizer,
    pub palette: &'a mut PaletteState,
    /// The open intent's detail, when it has loaded.
    pub detail: Option<&'a IntentDetail>,
    /// A command dialog is open: no other command is offered.
    pub dialog_open: bool,
    pub who: Option<&'a Whoami>,
}

/// The palette's entries now: its fixed commands, then pause, resume, reconcile and close
/// for the open intent where they may be started.
fn entries(cx: &PaletteContext<'_>) -> Vec<(ConsoleCommand, String)> {
    let i18n = cx.i18n;
    let mut entries: Vec<(ConsoleCommand, String)> = ConsoleCommand::palette()
        .into_iter()
        .map(|(c, key)| (c, i18n.tr(key)))
        .collect();
    if let Some(detail) = cx.detail.filter(|_| !cx.dialog_open) {
        for (kind, key) in COMMANDS {
            if availability(i18n, kind, detail, cx.who).is_ok() {
                entries.push((ConsoleCommand::StartCommand(kind), i18n.tr(key)));
            }
        }
    }
    entries
}

pub fn palette_ui(ui: &mut egui::Ui, cx: PaletteContext<'_>, actions: &mut Actions) {
    if !cx.palette.open {
        return;
    }
    let entries = entries(&cx);
    let PaletteContext { i18n, palette, .. } = cx;
    let mut chosen = None;
    let mut open = palette.open;
    let title = wt(i18n, ui, &i18n.tr("command-palette"));
    egui::Window::new(title)
        .open(&mut open)
        .collapsible(false)
        .resizable(false)
        .anchor(egui::Align2::CENTER_TOP, [0.0, 60.0])
        .show(ui.ctx(), |ui| {
            let response =
                BidiTextEdit::new(&mut palette.edit, &mut palette.query, Direction::Auto)
                    .id_salt("palette")
                    .show(ui);
            response.request_focus();
            let needle = palette.query.to_lowercase();
            let matches: Vec<&(ConsoleCommand, String)> = entries
                .iter()
                .filter(|(_, label)| label.to_lowercase().contains(&needle))
                .collect();
            for (command, label) in &matches {
                if format::button(ui, i18n, label).clicked() {
                    chosen = Some(command.clone());
                }
            }
            if palette.edit.take_submitted() {
                chosen = matches.first().map(|(c, _)| c.clone());
            }
        });
    palette.open = open && chosen.is_none();
    if let Some(command) = chosen {
        actions.command(command);
    }
}
