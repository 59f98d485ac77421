//! The intents linked to the open one: the other actions of its workflow and the revision
//! chain of a corrected order (each replaces the one before), each with its state and a
//! button that opens it. Shown only when the intent has links.

use super::format;
use super::intent_widgets::{row, say_colored, say_strong};
use crate::console::actions::Actions;
use crate::console::commands::ConsoleCommand;
use crate::console::model::{IntentDetail, StateName};
use crate::console::theme;
use crate::i18n::Localizer;
use crate::wire::LinkedIntent;

/// Whether the intent has links worth a section.
pub fn has_links(detail: &IntentDetail) -> bool {
    detail.workflow.len() > 1 || !detail.revisions.is_empty()
}

pub fn links_ui(ui: &mut egui::Ui, i18n: &Localizer, detail: &IntentDetail, actions: &mut Actions) {
    if !has_links(detail) {
        return;
    }
    say_strong(ui, i18n, &i18n.tr("links-title"));
    let this = detail.intent.id.as_str();
    if let (Some(workflow), true) = (&detail.intent.workflow_id, detail.workflow.len() > 1) {
        let title = i18n.tr_args(
            "links-workflow",
            &[("workflow", format::isolate(i18n, workflow).into())],
        );
        say_colored(ui, i18n, &title, ui.visuals().weak_text_color());
        for linked in &detail.workflow {
            linked_row_ui(ui, i18n, linked, this, actions);
        }
    }
    if !detail.revisions.is_empty() {
        say_colored(
            ui,
            i18n,
            &i18n.tr("links-revisions"),
            ui.visuals().weak_text_color(),
        );
        for linked in &detail.revisions {
            linked_row_ui(ui, i18n, linked, this, actions);
        }
    }
    ui.separator();
}

/// One linked intent: its short id (a button that opens it, or a label for the open one),
/// its state and its operation.
fn linked_row_ui(
    ui: &mut egui::Ui,
    i18n: &Localizer,
    linked: &LinkedIntent<StateName>,
    this: &str,
    actions: &mut Actions,
) {
    let id = linked.id.as_str();
    let short: String = id.chars().take(14).collect();
    row(ui, i18n, |ui| {
        if id == this {
            ui.label(egui::RichText::new(&short).monospace().strong());
            format::label(ui, i18n, &format!("({})", i18n.tr("links-this")));
        } else if ui
            .button(egui::RichText::new(&short).monospace())
            .on_hover_text(id)
            .clicked()
        {
            actions.command(ConsoleCommand::OpenIntent(id.to_string()));
        }
        let state = match &linked.state {
            StateName::Known(s) => i18n.tr(&format!("state-{}", s.as_str())),
            StateName::Unknown(raw) => raw.clone(),
        };
        format::label_colored(ui, i18n, &state, theme::state_color(&linked.state));
        let open = linked.state.known().is_some_and(|s| !s.is_terminal());
        if open && linked.cancel_requested_at_ms.is_some() {
            format::label_colored(ui, i18n, &i18n.tr("links-cancel-requested"), theme::QUIET);
        }
        format::user_label(ui, &linked.operation);
    });
}
