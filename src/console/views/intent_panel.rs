//! The open intent, beside the table: its identity, state and envelope, its attempts,
//! receipts and state changes. (The full timeline and the operator commands live in the
//! intent view.)

use egui::RichText;

use crate::console::app::ConsoleApp;
use crate::console::commands::ConsoleCommand;
use crate::console::model::{IntentDetail, StateName};
use crate::console::theme;

pub fn intent_panel_ui(app: &mut ConsoleApp, ui: &mut egui::Ui) {
    let Some(open) = app.open.clone() else { return };
    ui.horizontal(|ui| {
        ui.heading(app.i18n.tr("view-intent-title"));
        if ui
            .button("x")
            .on_hover_text(app.i18n.tr("intent-close-view"))
            .clicked()
        {
            app.queue(ConsoleCommand::CloseIntent);
        }
    });
    ui.label(RichText::new(&open.id).monospace());
    if open.loading && open.detail.is_none() {
        ui.spinner();
    }
    if let Some(error) = &open.error {
        ui.colored_label(theme::REJECTED, error);
    }
    if open.from_cache {
        ui.colored_label(theme::QUIET, app.i18n.tr("table-from-cache"));
    }
    let Some(detail) = &open.detail else { return };
    egui::ScrollArea::vertical()
        .id_salt("intent_panel_scroll")
        .show(ui, |ui| detail_ui(app, ui, detail));
}

fn field_ui(ui: &mut egui::Ui, copy: &str, name: &str, value: &str) {
    ui.label(name);
    let response = ui.label(RichText::new(value).monospace());
    response.context_menu(|ui| {
        if ui.button(copy).clicked() {
            ui.ctx().copy_text(value.to_string());
            ui.close();
        }
    });
    ui.end_row();
}

fn detail_ui(app: &ConsoleApp, ui: &mut egui::Ui, detail: &IntentDetail) {
    let i18n = &app.i18n;
    let intent = &detail.intent;
    let state = match &intent.state {
        StateName::Known(s) => i18n.tr(&format!("state-{}", s.as_str())),
        StateName::Unknown(raw) => raw.clone(),
    };
    ui.colored_label(
        theme::state_color(&intent.state),
        RichText::new(state).strong(),
    );
    if let Some(reason) = &intent.state_reason {
        ui.label(reason);
    }
    let copy = i18n.tr("text-copy");
    egui::Grid::new("envelope")
        .num_columns(2)
        .striped(true)
        .show(ui, |ui| {
            field_ui(ui, &copy, &i18n.tr("field-action-key"), &intent.action_key);
            field_ui(ui, &copy, &i18n.tr("field-tenant"), &intent.tenant);
            field_ui(ui, &copy, &i18n.tr("field-operation"), &intent.operation);
            field_ui(ui, &copy, &i18n.tr("field-tool"), &intent.tool);
            field_ui(ui, &copy, &i18n.tr("field-actor"), &intent.actor);
            field_ui(ui, &copy, &i18n.tr("field-purpose"), &intent.purpose);
            field_ui(ui, &copy, &i18n.tr("field-release"), &intent.release_id);
            field_ui(
                ui,
                &copy,
                &i18n.tr("field-args-hash"),
                &intent.canonical_args_hash,
            );
            field_ui(
                ui,
                &copy,
                &i18n.tr("field-receipt"),
                intent.downstream_ref.as_deref().unwrap_or("—"),
            );
            let attempts = format!("{} / {}", intent.attempts, intent.max_attempts);
            field_ui(ui, &copy, &i18n.tr("field-attempts"), &attempts);
        });
    ui.separator();
    ui.strong(i18n.tr("intent-attempts"));
    egui::Grid::new("attempts")
        .num_columns(5)
        .striped(true)
        .show(ui, |ui| {
            for attempt in &detail.attempts {
                ui.label(RichText::new(&attempt.kind).monospace());
                ui.label(&attempt.provider);
                ui.label(&attempt.outcome);
                ui.label(
                    attempt
                        .http_status
                        .map(|s| s.to_string())
                        .unwrap_or_default(),
                );
                ui.label(attempt.detail.clone().unwrap_or_default());
                ui.end_row();
            }
        });
    ui.separator();
    ui.strong(i18n.tr("intent-receipts"));
    for receipt in &detail.receipts {
        let mark = if receipt.authoritative { "=" } else { "!" };
        ui.label(format!(
            "{mark} {} ({})",
            receipt.downstream_id, receipt.source
        ));
    }
    ui.separator();
    ui.strong(i18n.tr("intent-transitions"));
    for t in &detail.transitions {
        ui.label(format!(
            "{} -> {} ({})",
            t.from.clone().unwrap_or_default(),
            t.to,
            t.event
        ));
    }
}
