//! The export dialog: where to write the open intent (JSON) or the table's rows (CSV),
//! what is being written and the last export's result. The file itself is written by the
//! app, off the UI thread ([`crate::console::export`]).

use std::path::PathBuf;

use super::format;
use super::intent_widgets::{self, say, say_colored};
use crate::console::actions::{Actions, UiAction};
use crate::console::export::{ExportKind, ExportState};
use crate::console::theme;
use crate::i18n::Localizer;

/// The export dialog (when open) and the result of the last export.
///
/// `rows` is how many rows the table would write.
pub fn export_ui(
    ui: &mut egui::Ui,
    i18n: &Localizer,
    export: &mut ExportState,
    rows: usize,
    actions: &mut Actions,
) {
    let Some((kind, mut path)) = export.dialog.clone() else {
        return;
    };
    let mut close = false;
    let mut save = false;
    let busy = export.busy();
    let modal = egui::Modal::new(egui::Id::unique("export_dialog")).show(ui.ctx(), |ui| {
        ui.set_width(520.0);
        let title = match kind {
            ExportKind::Intent => "export-title-intent",
            ExportKind::Table => "export-title-table",
        };
        intent_widgets::heading(ui, i18n, &i18n.tr(title));
        let what = match kind {
            ExportKind::Intent => i18n.tr("export-what-intent"),
            ExportKind::Table => i18n.tr_args("export-what-table", &[("count", rows.into())]),
        };
        say(ui, i18n, &what);
        let label = format::label(ui, i18n, &i18n.tr("export-path"));
        ui.add(egui::TextEdit::singleline(&mut path).desired_width(f32::INFINITY))
            .labelled_by(label.id);
        if busy {
            ui.horizontal(|ui| {
                ui.spinner();
                say(ui, i18n, &i18n.tr("export-writing"));
            });
        }
        match &export.last {
            Some(Ok(done)) => {
                say_colored(
                    ui,
                    i18n,
                    &i18n.tr_args(
                        "export-done",
                        &[("path", done.display().to_string().into())],
                    ),
                    theme::COMMITTED,
                );
            }
            Some(Err(e)) => {
                say_colored(
                    ui,
                    i18n,
                    &i18n.tr_args("export-failed", &[("reason", e.as_str().into())]),
                    theme::REJECTED,
                );
            }
            None => {}
        }
        ui.horizontal(|ui| {
            let ok = !busy && !path.trim().is_empty();
            save = format::button_enabled(ui, i18n, ok, &i18n.tr("export-save")).clicked();
            close = format::button(ui, i18n, &i18n.tr("export-close")).clicked();
        });
    });
    close |= modal.should_close() && !busy;
    export.dialog = (!close).then_some((kind, path.clone()));
    if save {
        let path = PathBuf::from(path.trim());
        actions.push(UiAction::Export { kind, path });
    }
}
