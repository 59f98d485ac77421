//! Command handling: the one place where the [`ConsoleCommand`]s of shortcuts, the palette
//! and the views are applied (at the start of a frame), and where the other
//! [`UiAction`]s the views asked for while drawing are applied (right after it).

use std::path::PathBuf;

use super::ConsoleApp;
use super::state::{OpenIntent, Tab};
use crate::client::ClientError;
use crate::console::actions::{Actions, UiAction};
use crate::console::commands::ConsoleCommand;
use crate::console::export::{ExportKind, intent_json, table_csv};
use crate::console::filters::{Filters, SavedView};
use crate::console::views::command_dialog::{CommandDialog, availability};
use crate::console::worker::Request;
use crate::domain::{CommandKind, Locale};
use crate::i18n::Localizer;

impl ConsoleApp {
    /// Apply every queued command, once.
    pub(super) fn apply_commands(&mut self, ctx: &egui::Context) {
        for command in std::mem::take(&mut self.queue) {
            match command {
                ConsoleCommand::Refresh => {
                    self.last_query = None;
                    self.request_detail();
                }
                ConsoleCommand::TogglePalette => self.palette.toggle(),
                ConsoleCommand::FocusSearch => self.search.focus = true,
                ConsoleCommand::ClearFilters => {
                    self.state.filters = Filters {
                        sort: self.state.filters.sort.clone(),
                        ..Filters::default()
                    };
                    self.search.text.clear();
                }
                ConsoleCommand::ShowIntents => self.state.tab = Tab::Intents,
                ConsoleCommand::ShowDashboard => self.state.tab = Tab::Dashboard,
                ConsoleCommand::SwitchLocale => {
                    self.state.locale = match self.state.locale {
                        Locale::EnUs => Locale::FaIr,
                        Locale::FaIr => Locale::EnUs,
                    };
                    self.i18n = Localizer::new(self.state.locale);
                    ctx.request_repaint();
                }
                ConsoleCommand::OpenIntent(needle) => {
                    let needle = needle.trim().to_string();
                    if needle.starts_with("int_") {
                        self.open_intent(&needle);
                    } else if !needle.is_empty() {
                        self.worker.send(Request::Resolve { needle });
                    }
                }
                ConsoleCommand::CloseIntent => {
                    self.open = None;
                    self.state.open_intent = None;
                }
                ConsoleCommand::ApplyView(filters) | ConsoleCommand::SetFilters(filters) => {
                    self.search.text = filters.q.clone();
                    self.state.filters = filters;
                }
                ConsoleCommand::SaveCurrentView => {
                    let name = format!(
                        "{} {}",
                        self.i18n.tr("views-saved-name"),
                        self.state.views.len() + 1
                    );
                    self.state.views.push(SavedView {
                        name,
                        filters: self.state.filters.clone(),
                    });
                }
                ConsoleCommand::LoadMore => self.load_more(),
                ConsoleCommand::ExportIntent | ConsoleCommand::ExportTable => {
                    let (kind, id) = match command {
                        ConsoleCommand::ExportIntent => {
                            (ExportKind::Intent, self.open.as_ref().map(|o| o.id.clone()))
                        }
                        _ => (ExportKind::Table, None),
                    };
                    let now = self.now_ms();
                    self.intent_view.export.open(kind, id.as_deref(), now);
                }
                ConsoleCommand::StartCommand(kind) => self.start_command(kind),
            }
        }
    }

    /// Open the dialog of `kind` on the open intent, if it may be started now (the same
    /// rule that enables the panel's buttons).
    fn start_command(&mut self, kind: CommandKind) {
        let Some(detail) = self.open.as_ref().and_then(|o| o.detail.as_ref()) else {
            return;
        };
        let allowed = availability(&self.i18n, kind, detail, self.intent_view.whoami());
        if allowed.is_ok() && self.intent_view.dialog.is_none() {
            self.intent_view.dialog = Some(CommandDialog::new(kind, detail));
        }
    }

    pub(super) fn open_intent(&mut self, id: &str) {
        self.open = Some(OpenIntent {
            id: id.to_string(),
            detail: None,
            error: None,
            loading: true,
            from_cache: false,
        });
        self.detail_refresh.restart();
        self.state.open_intent = Some(id.to_string());
        self.request_detail();
    }

    /// Shortcuts become commands.
    pub(super) fn read_shortcuts(&mut self, ctx: &egui::Context) {
        for command in ConsoleCommand::with_shortcuts() {
            // Escape closes the intent view's dialog first, not the intent.
            if command == ConsoleCommand::CloseIntent && self.intent_view.captures_escape() {
                continue;
            }
            if let Some(shortcut) = command.shortcut()
                && ctx.input_mut(|i| i.consume_shortcut(&shortcut))
            {
                self.queue(command);
            }
        }
    }

    /// Apply what the views asked for while drawing this frame; their user commands wait
    /// for the next frame, as the shortcuts' do.
    pub(super) fn handle(&mut self, actions: Actions, ctx: &egui::Context) {
        let (commands, asked) = actions.into_parts();
        self.queue.extend(commands);
        for action in asked {
            match action {
                UiAction::SendCommand(body) => {
                    let id = body.command_id.to_string();
                    if !self.worker.send(Request::Command { body: *body })
                        && let Some(dialog) = self.intent_view.dialog.as_mut()
                    {
                        // The worker's queue is full: nothing was sent.
                        let why = ClientError::BadResponse(self.i18n.tr("intent-queue-full"));
                        dialog.not_sent(&id, why);
                    }
                }
                UiAction::Export { kind, path } => self.export(ctx, kind, path),
                UiAction::DismissNotice => self.notice = None,
                UiAction::AcknowledgeRevisits { up_to_seq } => {
                    let url = self.options.coordinator_url.clone();
                    let seen = self.state.revisits_acknowledged.entry(url).or_default();
                    *seen = (*seen).max(up_to_seq);
                }
            }
        }
    }

    /// Write the open intent or the table's rows to `path`, off the UI thread.
    fn export(&mut self, ctx: &egui::Context, kind: ExportKind, path: PathBuf) {
        let now = self.now_ms();
        let export = &mut self.intent_view.export;
        match kind {
            ExportKind::Intent => {
                let Some(detail) = self.open.as_ref().and_then(|o| o.detail.clone()) else {
                    export.last = Some(Err(self.i18n.tr("export-no-intent")));
                    return;
                };
                let url = self.options.coordinator_url.clone();
                export.start(ctx, path, move || {
                    serde_json::to_vec_pretty(&intent_json(&detail, &url, now))
                        .map_err(|e| e.to_string())
                });
            }
            ExportKind::Table => {
                let rows = self.table.rows.clone();
                export.start(ctx, path, move || Ok(table_csv(&rows).into_bytes()));
            }
        }
    }
}
