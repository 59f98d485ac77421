//! The open intent, beside the table: who it is and what state it is in, the operator
//! commands (disabled with the reason when the role or the state forbids them), the outcome
//! of the last command, and four tabs — the timeline with the selected attempt, the envelope,
//! the action-key ledger and the audit trail. State lives in [`super::intent_view`]; the
//! timeline, ledger, audit, dialogs and export each have their own file.

use crate::clock::Entropy;
use egui::RichText;

use super::audit::{audit_ui, result_summary, status_color};
use super::command_dialog::{
    CommandDialog, DialogAction, availability, command_dialog_ui, describe_error,
};
use super::envelope::{attempt_fields_ui, envelope_ui};
use super::format::{self, BidiHover};
use super::intent_view::{IntentTab, IntentViewState, WhoState};
use super::intent_widgets::{column, copyable_ui, row, say_colored, wt};
use super::ledger::ledger_ui;
use super::timeline::{LANE_H, legend_ui, timeline_ui};
use crate::console::actions::{Actions, UiAction};
use crate::console::app::state::OpenIntent;
use crate::console::commands::ConsoleCommand;
use crate::console::export::ExportKind;
use crate::console::model::{IntentDetail, StateName};
use crate::console::theme;
use crate::domain::CommandKind;
use crate::i18n::Localizer;

/// The commands offered on an intent, in order (the panel's buttons and the palette).
pub(crate) const COMMANDS: [(CommandKind, &str); 5] = [
    (CommandKind::Pause, "intent-pause"),
    (CommandKind::Resume, "intent-resume"),
    (CommandKind::Reconcile, "intent-reconcile"),
    (CommandKind::Cancel, "intent-cancel"),
    (CommandKind::Close, "intent-close"),
];

/// What the panel reads, and the intent view's own state.
pub struct IntentPanelContext<'a> {
    pub i18n: &'a Localizer,
    pub open: &'a OpenIntent,
    pub view: &'a mut IntentViewState,
    pub now_ms: u64,
    /// Where a confirmed command's id comes from.
    pub ids: &'a dyn Entropy,
}

pub fn intent_panel_ui(ui: &mut egui::Ui, cx: IntentPanelContext<'_>, actions: &mut Actions) {
    let i18n = cx.i18n;
    column(ui, i18n, |ui| panel_ui(ui, cx, actions));
}

fn panel_ui(ui: &mut egui::Ui, cx: IntentPanelContext<'_>, actions: &mut Actions) {
    let IntentPanelContext {
        i18n,
        open,
        view,
        now_ms: now,
        ids,
    } = cx;
    // Wide enough for the timeline, whatever the tab: the panel does not jump as tabs change.
    let width = (ui.ctx().content_rect().width() * 0.45).clamp(360.0, 760.0);
    ui.set_min_width(width.min(ui.available_width().max(360.0)));
    row(ui, i18n, |ui| {
        let short: String = open.id.chars().take(14).collect();
        let title = i18n.tr_args("view-intent-title", &[("intent", short.into())]);
        super::intent_widgets::heading(ui, i18n, &title);
        if ui
            .button("x")
            .bidi_hover(i18n, &i18n.tr("intent-close-view"))
            .clicked()
        {
            actions.command(ConsoleCommand::CloseIntent);
        }
        if format::button(ui, i18n, &i18n.tr("intent-refresh")).clicked() {
            actions.command(ConsoleCommand::Refresh);
        }
        if format::button_enabled(ui, i18n, open.detail.is_some(), &i18n.tr("intent-export"))
            .clicked()
        {
            view.export.open(ExportKind::Intent, Some(&open.id), now);
        }
    });
    copyable_ui(ui, i18n, &open.id);
    if open.loading && open.detail.is_none() {
        ui.spinner();
    }
    if let Some(error) = &open.error {
        say_colored(ui, i18n, error, theme::REJECTED);
    }
    if open.from_cache {
        say_colored(ui, i18n, &i18n.tr("table-from-cache"), theme::QUIET);
    }
    let Some(detail) = &open.detail else { return };
    // The key is what the downstream knows the intent by: always at hand to copy.
    copyable_ui(ui, i18n, detail.intent.action_key.as_str());
    state_line_ui(ui, i18n, detail);
    super::links::links_ui(ui, i18n, detail, actions);
    commands_ui(ui, i18n, view, detail);
    last_outcome_ui(ui, i18n, view, detail.intent.id.as_str());
    ui.separator();
    row(ui, i18n, |ui| {
        for (tab, key) in [
            (IntentTab::Timeline, "intent-tab-timeline"),
            (IntentTab::Envelope, "intent-tab-envelope"),
            (IntentTab::Ledger, "intent-tab-ledger"),
            (IntentTab::Audit, "intent-tab-audit"),
        ] {
            let text = i18n.tr(key);
            let shown = wt(i18n, ui, &text);
            format::said(i18n, &text, ui.selectable_value(&mut view.tab, tab, shown));
        }
    });
    ui.separator();
    match view.tab {
        IntentTab::Timeline => timeline_tab_ui(ui, i18n, view, detail, now),
        IntentTab::Envelope => {
            egui::ScrollArea::vertical()
                .id_salt("intent_envelope")
                .show(ui, |ui| envelope_ui(ui, i18n, detail));
        }
        IntentTab::Ledger => {
            let ledger = &view.laid(detail, now).ledger;
            ledger_ui(ui, i18n, detail, ledger);
        }
        IntentTab::Audit => {
            egui::ScrollArea::vertical()
                .id_salt("intent_audit")
                .show(ui, |ui| audit_ui(ui, i18n, detail, &mut view.show_dry_runs));
        }
    }
    dialog_ui(ui, i18n, view, detail, now, ids, actions);
}

fn state_line_ui(ui: &mut egui::Ui, i18n: &Localizer, detail: &IntentDetail) {
    let intent = &detail.intent;
    row(ui, i18n, |ui| {
        let state = match &intent.state {
            StateName::Known(s) => i18n.tr(&format!("state-{}", s.as_str())),
            StateName::Unknown(raw) => format!("{raw} ({})", i18n.tr("state-unknown")),
        };
        format::label_colored(ui, i18n, &state, theme::state_color(&intent.state));
        if intent.paused || !detail.pauses.is_empty() {
            format::label_colored(ui, i18n, &i18n.tr("state-paused"), theme::PAUSED);
        }
        format::user_label(ui, &format!("{} · {}", intent.tenant, intent.operation));
        let attempts = i18n.tr_args(
            "intent-attempts-of",
            &[
                ("attempts", intent.attempts.into()),
                ("max", intent.max_attempts.into()),
            ],
        );
        format::label(ui, i18n, &attempts);
        // Asked for after a crossing: the state stays until evidence settles it.
        let open = intent.state.known().is_some_and(|s| !s.is_terminal());
        if open && intent.cancel_requested_at_ms.is_some() {
            format::label_colored(ui, i18n, &i18n.tr("links-cancel-requested"), theme::PAUSED);
        }
    });
    if let Some(reason) = &intent.state_reason {
        super::intent_widgets::user_say(ui, reason);
    }
}

fn commands_ui(
    ui: &mut egui::Ui,
    i18n: &Localizer,
    view: &mut IntentViewState,
    detail: &IntentDetail,
) {
    let who = view.whoami().cloned();
    match &view.who {
        WhoState::Known(w) => {
            let line = i18n.tr_args(
                "intent-signed-in",
                &[
                    ("name", w.name.as_str().into()),
                    ("role", w.role.as_str().into()),
                ],
            );
            say_colored(ui, i18n, &line, ui.visuals().weak_text_color());
        }
        WhoState::Asking | WhoState::NotAsked => {
            say_colored(
                ui,
                i18n,
                &i18n.tr("intent-role-checking"),
                ui.visuals().weak_text_color(),
            );
        }
        WhoState::Unknown { .. } => {
            say_colored(
                ui,
                i18n,
                &i18n.tr("intent-role-unknown"),
                ui.visuals().weak_text_color(),
            );
        }
    }
    let mut reasons = Vec::new();
    row(ui, i18n, |ui| {
        for (kind, key) in COMMANDS {
            let allowed = availability(i18n, kind, detail, who.as_ref());
            let enabled = allowed.is_ok() && view.dialog.is_none();
            let response = format::button_enabled(ui, i18n, enabled, &i18n.tr(key));
            if let Err(why) = allowed {
                format::disabled_hover(i18n, response, &why);
                // Pause and resume share a reason; it is said once.
                if !reasons.contains(&why) {
                    reasons.push(why);
                }
            } else if response.clicked() {
                view.dialog = Some(CommandDialog::new(kind, detail));
            }
        }
    });
    for why in reasons {
        say_colored(ui, i18n, &why, ui.visuals().weak_text_color());
    }
}

fn last_outcome_ui(
    ui: &mut egui::Ui,
    i18n: &Localizer,
    view: &mut IntentViewState,
    intent_id: &str,
) {
    let Some(last) = &view.last else { return };
    let kind = last.body.kind.as_str();
    let id = last.body.command_id.as_str();
    let mut dismiss = false;
    egui::Frame::group(ui.style()).show(ui, |ui| {
        row(ui, i18n, |ui| {
            ui.label(RichText::new(kind).strong());
            ui.label(RichText::new(id).monospace().small());
            dismiss = ui.small_button("x").clicked();
        });
        match &last.result {
            Ok(record) => {
                let status = record.get("status").and_then(|v| v.as_str()).unwrap_or("");
                let result = record.get("result").cloned().unwrap_or_default();
                let text = result_summary(i18n, kind, status, &result, intent_id);
                let status_words = super::intent_widgets::tr_named(i18n, "audit-status", status);
                say_colored(
                    ui,
                    i18n,
                    &format!("{status_words}: {text}"),
                    status_color(status),
                );
            }
            Err(e) => {
                let text = i18n.tr_args(
                    "intent-command-error",
                    &[("reason", describe_error(i18n, e).into())],
                );
                say_colored(ui, i18n, &text, theme::REJECTED);
            }
        }
    });
    if dismiss {
        view.last = None;
    }
}

fn timeline_tab_ui(
    ui: &mut egui::Ui,
    i18n: &Localizer,
    view: &mut IntentViewState,
    detail: &IntentDetail,
    now: u64,
) {
    let lanes = detail.attempts.len() as f32;
    let wanted = 100.0 + (lanes.max(2.0) * LANE_H) + 8.0;
    let height = wanted.min((ui.available_height() - 120.0).max(220.0));
    let (model, timeline) = view.timeline_parts(detail, now);
    row(ui, i18n, |ui| {
        if format::small_button(ui, i18n, &i18n.tr("timeline-fit-activity"))
            .on_hover_text("Home")
            .clicked()
        {
            timeline.fit(model);
        }
        if format::small_button(ui, i18n, &i18n.tr("timeline-fit-span"))
            .on_hover_text("End")
            .clicked()
        {
            timeline.fit_span(model);
        }
    });
    timeline_ui(ui, i18n, detail, model, timeline, height);
    let legend = i18n.tr("timeline-legend");
    let shown = egui::CollapsingHeader::new(wt(i18n, ui, &legend))
        .id_salt("timeline_legend")
        .show(ui, |ui| legend_ui(ui, i18n));
    format::said(i18n, &legend, shown.header_response);
    ui.separator();
    match view.timeline.selected.and_then(|i| detail.attempts.get(i)) {
        Some(attempt) => {
            egui::ScrollArea::vertical()
                .id_salt("intent_attempt")
                .show(ui, |ui| {
                    attempt_fields_ui(ui, i18n, attempt, &detail.intent.release_id)
                });
        }
        None => {
            say_colored(
                ui,
                i18n,
                &i18n.tr("timeline-select-hint"),
                ui.visuals().weak_text_color(),
            );
        }
    }
}

fn dialog_ui(
    ui: &mut egui::Ui,
    i18n: &Localizer,
    view: &mut IntentViewState,
    detail: &IntentDetail,
    now: u64,
    ids: &dyn Entropy,
    actions: &mut Actions,
) {
    let who = view.whoami().cloned();
    let Some(dialog) = view.dialog.as_mut() else {
        return;
    };
    if dialog.intent_id != detail.intent.id.as_str() {
        if !dialog.is_sending() {
            view.dialog = None;
        }
        return;
    }
    match command_dialog_ui(ui.ctx(), i18n, dialog, detail, who.as_ref(), now, ids) {
        DialogAction::None => {}
        DialogAction::Send(body) => actions.push(UiAction::SendCommand(body)),
        DialogAction::Close => view.dialog = None,
    }
}
