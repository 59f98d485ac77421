//! Drawing the command dialog: the scope or pause chosen, the dry run's frozen target set,
//! what will and will not happen in plain words, the fields (reason, disposition,
//! reference, evidence), why it cannot be confirmed yet, and the sending state with "Send
//! again" after a failure.

use crate::clock::Entropy;

use super::dialog::{
    Closing, CommandDialog, DialogAction, DryRun, ScopeChoice, SendState, Sent, committable,
    resume_target,
};
use super::words::{describe_error, describe_target};
use crate::client::ClientError;
use crate::console::model::IntentDetail;
use crate::console::text::{BidiTextEdit, Direction};
use crate::console::theme;
use crate::console::views::format;
use crate::console::views::intent_widgets::{self, column, row, say, say_colored, say_strong, wt};
use crate::domain::CommandKind;
use crate::i18n::Localizer;
use crate::wire::Whoami;

/// Target ids listed in a dry run at most; the rest are counted.
const LISTED_TARGETS: usize = 50;

/// The dialog's text fields.
#[derive(Clone, Copy)]
enum Field {
    Reason,
    Reference,
    Note,
}

/// One bidi text field, required or optional as its label says, with a label the
/// accessibility tree ties to it.
fn field(
    ui: &mut egui::Ui,
    i18n: &Localizer,
    dialog: &mut CommandDialog,
    which: Field,
    required: bool,
) {
    let (name, text, state) = match which {
        Field::Reason => ("reason", &mut dialog.reason, &mut dialog.reason_edit),
        Field::Reference => (
            "reference",
            &mut dialog.reference,
            &mut dialog.reference_edit,
        ),
        Field::Note => ("note", &mut dialog.note, &mut dialog.note_edit),
    };
    let label_key = if required {
        format!("dialog-{name}")
    } else {
        format!("dialog-{name}-optional")
    };
    let label = format::label(ui, i18n, &i18n.tr(&label_key));
    // What the operator types takes its direction from its first strong letter.
    BidiTextEdit::new(state, text, Direction::Auto)
        .hint(&i18n.tr(&format!("dialog-{name}-hint")))
        .id_salt(label.id)
        .show(ui)
        .labelled_by(label.id);
}

/// One radio choice whose text goes through the bidi helper.
fn choice<T: PartialEq>(
    ui: &mut egui::Ui,
    i18n: &Localizer,
    current: &mut T,
    value: T,
    text: &str,
) -> egui::Response {
    let shown = wt(i18n, ui, text);
    format::said(i18n, text, ui.radio_value(current, value, shown))
}

/// An error from the coordinator in a sentence (`key` takes it as `reason`), in `color`.
fn say_error(
    ui: &mut egui::Ui,
    i18n: &Localizer,
    key: &str,
    error: &ClientError,
    color: egui::Color32,
) {
    let reason = describe_error(i18n, error);
    say_colored(
        ui,
        i18n,
        &i18n.tr_args(key, &[("reason", reason.into())]),
        color,
    );
}

/// Draw the dialog; returns what its owner should do.
pub fn command_dialog_ui(
    ctx: &egui::Context,
    i18n: &Localizer,
    dialog: &mut CommandDialog,
    detail: &IntentDetail,
    who: Option<&Whoami>,
    now_ms: u64,
    ids: &dyn Entropy,
) -> DialogAction {
    let mut action = DialogAction::None;
    // Pause and resume show the frozen target set first: ask once per target.
    let chosen = dialog.kind == CommandKind::Resume || dialog.scope != ScopeChoice::Unchosen;
    if matches!(dialog.kind, CommandKind::Pause | CommandKind::Resume)
        && chosen
        && !dialog.is_sending()
    {
        let target = dialog.target(detail, who);
        if !dialog.dry_runs.iter().any(|d| d.target == target) {
            let body = dialog.body(detail, who, now_ms, true, ids);
            dialog.dry_runs.push(DryRun {
                command_id: body.command_id.to_string(),
                target,
                result: None,
            });
            action = DialogAction::Send(Box::new(body));
        }
    }
    let modal = egui::Modal::new(egui::Id::unique("intent_command_dialog")).show(ctx, |ui| {
        ui.set_width(520.0_f32.min(ctx.content_rect().width() - 40.0));
        column(ui, i18n, |ui| {
            let title = format!("dialog-title-{}", dialog.kind.as_str());
            intent_widgets::heading(ui, i18n, &i18n.tr(&title));
            say(
                ui,
                i18n,
                &describe_target(i18n, dialog.target(detail, who).as_ref()),
            );
            ui.separator();
            egui::ScrollArea::vertical()
                .max_height(ctx.content_rect().height() * 0.7)
                .show(ui, |ui| {
                    column(ui, i18n, |ui| body_ui(ui, i18n, dialog, detail, who))
                });
            ui.separator();
            buttons_ui(ui, i18n, dialog, detail, who, now_ms, ids)
        })
    });
    let close = modal.should_close();
    match modal.inner {
        DialogAction::None => {}
        other => action = other,
    }
    if close && !dialog.is_sending() {
        action = DialogAction::Close;
    }
    action
}

fn body_ui(
    ui: &mut egui::Ui,
    i18n: &Localizer,
    dialog: &mut CommandDialog,
    detail: &IntentDetail,
    who: Option<&Whoami>,
) {
    let intent = &detail.intent;
    match dialog.kind {
        CommandKind::Pause => {
            say_strong(ui, i18n, &i18n.tr("dialog-scope"));
            let terminal = intent.state.known().is_some_and(|s| s.is_terminal());
            ui.add_enabled_ui(!terminal, |ui| {
                let intent = choice(
                    ui,
                    i18n,
                    &mut dialog.scope,
                    ScopeChoice::Intent,
                    &i18n.tr("dialog-scope-intent"),
                );
                format::disabled_hover(i18n, intent, &i18n.tr("dialog-scope-intent-final"));
            });
            let tenant = i18n.tr_args(
                "dialog-scope-tenant",
                &[("tenant", intent.tenant.as_str().into())],
            );
            choice(ui, i18n, &mut dialog.scope, ScopeChoice::Tenant, &tenant);
            let mut providers = intent.providers.clone();
            if providers.is_empty() && !intent.connector.is_empty() {
                providers.push(intent.connector.clone());
            }
            for p in providers {
                let text = i18n.tr_args(
                    "dialog-scope-provider",
                    &[("provider", format::isolate(i18n, &p).into())],
                );
                choice(ui, i18n, &mut dialog.scope, ScopeChoice::Provider(p), &text);
            }
            if !intent.tool.is_empty() {
                let text = i18n.tr_args(
                    "dialog-scope-tool",
                    &[("tool", format::isolate(i18n, &intent.tool).into())],
                );
                choice(ui, i18n, &mut dialog.scope, ScopeChoice::Tool, &text);
            }
            if let Some(tenants) = who.and_then(|w| w.tenants.as_ref())
                && dialog.scope != ScopeChoice::Intent
            {
                say_colored(
                    ui,
                    i18n,
                    &i18n.tr_args(
                        "dialog-scope-limited",
                        &[("tenants", tenants.join(", ").into())],
                    ),
                    ui.visuals().weak_text_color(),
                );
            }
            dry_run_ui(ui, i18n, dialog, detail, who);
            plain_words_ui(ui, i18n, "dialog-pause-will", "dialog-pause-will-not", &[]);
            field(ui, i18n, dialog, Field::Reason, true);
        }
        CommandKind::Resume => {
            say_strong(ui, i18n, &i18n.tr("dialog-resume-which"));
            for (k, p) in detail.pauses.iter().enumerate() {
                let scope = describe_target(i18n, Some(&resume_target(p, intent.id.as_str())));
                let who = format::isolate(i18n, &p.created_by);
                let why = format::isolate(i18n, &p.reason);
                let text = format!("{scope} ({who}: {why})");
                choice(ui, i18n, &mut dialog.pause_index, k, &text);
            }
            dry_run_ui(ui, i18n, dialog, detail, who);
            plain_words_ui(
                ui,
                i18n,
                "dialog-resume-will",
                "dialog-resume-will-not",
                &[],
            );
            field(ui, i18n, dialog, Field::Reason, false);
        }
        CommandKind::Reconcile => {
            plain_words_ui(
                ui,
                i18n,
                "dialog-reconcile-will",
                "dialog-reconcile-will-not",
                &[("key", intent.action_key.as_str())],
            );
            field(ui, i18n, dialog, Field::Reason, false);
        }
        CommandKind::Cancel => {
            // Before anything crossed it ends cancelled; after, it waits for evidence.
            let will = if intent.may_have_crossed_boundary {
                "dialog-cancel-crossed-will"
            } else {
                "dialog-cancel-will"
            };
            plain_words_ui(ui, i18n, will, "dialog-cancel-will-not", &[]);
            field(ui, i18n, dialog, Field::Reason, true);
        }
        CommandKind::Close => {
            say_strong(ui, i18n, &i18n.tr("dialog-disposition"));
            ui.add_enabled_ui(committable(detail), |ui| {
                let committed = choice(
                    ui,
                    i18n,
                    &mut dialog.closing,
                    Closing::Committed,
                    &i18n.tr("dialog-disposition-committed"),
                );
                format::disabled_hover(i18n, committed, &i18n.tr("dialog-committed-not-now"));
            });
            choice(
                ui,
                i18n,
                &mut dialog.closing,
                Closing::Cancelled,
                &i18n.tr("dialog-disposition-cancelled"),
            );
            // Committed needs the downstream's reference as evidence; cancelled needs a
            // note saying why. The other of the two stays optional.
            let reference = CommandDialog::trimmed(&dialog.reference)
                .map(|r| format::isolate(i18n, &r))
                .unwrap_or_else(|| "...".into());
            let (will, args, required, optional) = match dialog.closing {
                Closing::Committed => (
                    "dialog-close-committed-will",
                    vec![("reference", reference.as_str())],
                    Field::Reference,
                    Field::Note,
                ),
                Closing::Cancelled => (
                    "dialog-close-cancelled-will",
                    vec![],
                    Field::Note,
                    Field::Reference,
                ),
            };
            plain_words_ui(ui, i18n, will, "dialog-close-will-not", &args);
            field(ui, i18n, dialog, required, true);
            field(ui, i18n, dialog, optional, false);
            field(ui, i18n, dialog, Field::Reason, true);
        }
    }
}

fn plain_words_ui(
    ui: &mut egui::Ui,
    i18n: &Localizer,
    will: &str,
    will_not: &str,
    args: &[(&str, &str)],
) {
    let args: Vec<(&str, crate::i18n::Arg<'_>)> =
        args.iter().map(|(k, v)| (*k, (*v).into())).collect();
    ui.add_space(4.0);
    say_strong(ui, i18n, &i18n.tr("dialog-will"));
    say(ui, i18n, &i18n.tr_args(will, &args));
    say_strong(ui, i18n, &i18n.tr("dialog-will-not"));
    say(ui, i18n, &i18n.tr_args(will_not, &args));
    ui.add_space(4.0);
}

fn dry_run_ui(
    ui: &mut egui::Ui,
    i18n: &Localizer,
    dialog: &CommandDialog,
    detail: &IntentDetail,
    who: Option<&Whoami>,
) {
    let target = dialog.target(detail, who);
    let Some(dry) = dialog.dry_runs.iter().find(|d| d.target == target) else {
        return;
    };
    ui.add_space(4.0);
    match &dry.result {
        None => {
            row(ui, i18n, |ui| {
                ui.spinner();
                say(ui, i18n, &i18n.tr("dialog-dry-run-asking"));
            });
        }
        Some(Err(e)) => say_error(ui, i18n, "dialog-dry-run-failed", e, theme::REJECTED),
        Some(Ok(targets)) => {
            say_strong(
                ui,
                i18n,
                &i18n.tr_args("dialog-dry-run-result", &[("count", targets.count.into())]),
            );
            egui::ScrollArea::vertical()
                .id_salt("dry_run_targets")
                .max_height(120.0)
                .show(ui, |ui| {
                    let listed = targets.first.len().min(LISTED_TARGETS);
                    for id in &targets.first[..listed] {
                        ui.label(egui::RichText::new(id).monospace());
                    }
                    if targets.count > listed {
                        say(
                            ui,
                            i18n,
                            &i18n.tr_args(
                                "dialog-dry-run-more",
                                &[("count", (targets.count - listed).into())],
                            ),
                        );
                    }
                });
            if dialog.kind == CommandKind::Pause && dialog.scope != ScopeChoice::Intent {
                say(ui, i18n, &i18n.tr("dialog-dry-run-future"));
            }
        }
    }
}

fn buttons_ui(
    ui: &mut egui::Ui,
    i18n: &Localizer,
    dialog: &mut CommandDialog,
    detail: &IntentDetail,
    who: Option<&Whoami>,
    now_ms: u64,
    ids: &dyn Entropy,
) -> DialogAction {
    let mut action = DialogAction::None;
    if let Some(sent) = &dialog.sent {
        match &sent.state {
            SendState::Sending => {
                row(ui, i18n, |ui| {
                    ui.spinner();
                    say(
                        ui,
                        i18n,
                        &i18n.tr_args("dialog-sending", &[("id", sent.command_id.as_str().into())]),
                    );
                });
            }
            SendState::Refused(e) => {
                say_error(ui, i18n, "dialog-refused", e, theme::REJECTED);
            }
            SendState::Failed(e) => {
                say_error(ui, i18n, "dialog-failed", e, theme::INDETERMINATE);
            }
            SendState::Applied(_) => {}
        }
    }
    let missing = dialog.missing(i18n, detail, who);
    if let Some(why) = &missing {
        say_colored(ui, i18n, why, theme::INDETERMINATE);
    }
    row(ui, i18n, |ui| {
        let sending = dialog.is_sending();
        // After a failed send only the same body may go again: a new command id could
        // apply the command a second time if the first did arrive.
        let failed = matches!(
            dialog.sent,
            Some(Sent {
                state: SendState::Failed(_),
                ..
            })
        );
        let confirm = format!("dialog-confirm-{}", dialog.kind.as_str());
        let enabled = missing.is_none() && !sending && !failed;
        let mut confirm = format::button_enabled(ui, i18n, enabled, &i18n.tr(&confirm));
        if let Some(why) = &missing {
            confirm = format::disabled_hover(i18n, confirm, why);
        }
        let clicked = confirm.clicked();
        if clicked {
            // The command id is made now, once; every retry of this body reuses it.
            let body = dialog.body(detail, who, now_ms, false, ids);
            dialog.sent = Some(Sent {
                command_id: body.command_id.to_string(),
                body: body.clone(),
                state: SendState::Sending,
            });
            action = DialogAction::Send(Box::new(body));
        }
        if let Some(Sent {
            body,
            state: SendState::Failed(_),
            ..
        }) = &dialog.sent
            && format::button(ui, i18n, &i18n.tr("dialog-send-again")).clicked()
        {
            let body = body.clone();
            if let Some(sent) = dialog.sent.as_mut() {
                sent.state = SendState::Sending;
            }
            action = DialogAction::Send(Box::new(body));
        }
        if format::button_enabled(ui, i18n, !sending, &i18n.tr("dialog-cancel")).clicked() {
            action = DialogAction::Close;
        }
    });
    action
}
