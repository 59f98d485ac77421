//! The audit trail of one intent: every operator command that touched it — who, when, why,
//! and what came of it — newest first. Dry runs changed nothing and are hidden unless asked
//! for.

use serde_json::Value;

use super::format::{self, BidiHover};
use super::intent_widgets::{copyable_ui, instant, say, say_colored, say_strong, wt};
use crate::console::model::{CommandRow, IntentDetail};
use crate::console::theme;
use crate::i18n::Localizer;
use crate::wire::TargetBody;

/// What a command's recorded result says, in words: for pauses how many intents they cover,
/// for a reconcile what the lookup of `intent_id` found, for a close the state change, for a
/// refused command why.
pub fn result_summary(
    i18n: &Localizer,
    kind: &str,
    status: &str,
    result: &Value,
    intent_id: &str,
) -> String {
    let count = |key: &str| result.get(key).and_then(Value::as_u64).unwrap_or(0);
    if status == "refused" {
        let why = result.get("error").and_then(Value::as_str).unwrap_or("");
        return i18n.tr_args("audit-result-refused", &[("reason", why.into())]);
    }
    if status == "dry_run" {
        // Records before the targets were paged said `count`.
        let n = result
            .get("target_count")
            .and_then(Value::as_u64)
            .unwrap_or_else(|| count("count"));
        return i18n.tr_args("audit-result-dry-run", &[("count", n.into())]);
    }
    match kind {
        "pause" => i18n.tr_args(
            "audit-result-pause",
            &[("count", count("covers_open_intents").into())],
        ),
        "resume" => i18n.tr_args(
            "audit-result-resume",
            &[("count", count("pauses_ended").into())],
        ),
        "close" => i18n.tr_args(
            "audit-result-close",
            &[
                (
                    "from",
                    result
                        .get("from")
                        .and_then(Value::as_str)
                        .unwrap_or("-")
                        .into(),
                ),
                (
                    "to",
                    result
                        .get("to")
                        .and_then(Value::as_str)
                        .unwrap_or("-")
                        .into(),
                ),
            ],
        ),
        "cancel" => match result.get("cancellation").and_then(Value::as_str) {
            Some("cancelled") => i18n.tr("audit-result-cancel-cancelled"),
            _ => i18n.tr("audit-result-cancel-requested"),
        },
        "reconcile" => {
            let lookup = result
                .get("lookups")
                .and_then(Value::as_array)
                .and_then(|l| {
                    l.iter()
                        .find(|v| v.get("intent_id").and_then(Value::as_str) == Some(intent_id))
                });
            match lookup {
                None if status == "accepted" => i18n.tr("audit-result-reconcile-running"),
                None => i18n.tr_args(
                    "audit-result-reconcile-others",
                    &[(
                        "count",
                        result
                            .get("lookups")
                            .and_then(Value::as_array)
                            .map_or(0, Vec::len)
                            .into(),
                    )],
                ),
                Some(l) => {
                    let text = |k: &str| l.get(k).and_then(Value::as_str).unwrap_or("").to_string();
                    match text("result").as_str() {
                        "committed" => i18n.tr_args(
                            "audit-result-reconcile-committed",
                            &[("reference", text("downstream_id").into())],
                        ),
                        "resent" => i18n.tr("audit-result-reconcile-resent"),
                        "cancelled" => i18n.tr("audit-result-reconcile-cancelled"),
                        "still_indeterminate" => i18n.tr_args(
                            "audit-result-reconcile-still",
                            &[("why", text("why").into())],
                        ),
                        "not_indeterminate" => i18n.tr_args(
                            "audit-result-reconcile-not-indeterminate",
                            &[("state", text("state").into())],
                        ),
                        "not_due" => i18n.tr("audit-result-reconcile-not-due"),
                        "lookups_exhausted" => i18n.tr("audit-result-reconcile-exhausted"),
                        _ => i18n.tr("audit-result-reconcile-failed"),
                    }
                }
            }
        }
        _ => status.to_string(),
    }
}

/// The colour a command's status is shown in.
pub fn status_color(status: &str) -> egui::Color32 {
    match status {
        "applied" => theme::COMMITTED,
        "refused" => theme::REJECTED,
        "accepted" => theme::EXECUTING,
        _ => theme::QUIET,
    }
}

fn command_ui(ui: &mut egui::Ui, i18n: &Localizer, c: &CommandRow, intent_id: &str) {
    super::intent_widgets::row(ui, i18n, |ui| {
        format::label(ui, i18n, &instant(i18n, c.created_at_ms)).bidi_hover(
            i18n,
            &i18n.date_tooltip(
                c.created_at_ms,
                super::charts::time_axis::local_offset_secs(c.created_at_ms),
            ),
        );
        ui.label(egui::RichText::new(c.kind.as_str()).strong());
        let status = super::intent_widgets::tr_named(i18n, "audit-status", &c.status);
        format::label_colored(ui, i18n, &status, status_color(&c.status));
    });
    say(
        ui,
        i18n,
        &i18n.tr_args(
            "audit-who",
            &[
                ("actor", format::isolate(i18n, &c.actor).into()),
                ("role", format::isolate(i18n, c.role.as_str()).into()),
            ],
        ),
    );
    if let Some(target) = c.body.get("target") {
        // The coordinator recorded the body it accepted, so its target reads as one.
        let target = serde_json::from_value::<Option<TargetBody>>(target.clone())
            .ok()
            .flatten();
        let scope = super::command_dialog::describe_target(i18n, target.as_ref());
        say(ui, i18n, &scope);
    }
    match c.reason.as_deref() {
        Some(reason) => say(
            ui,
            i18n,
            &i18n.tr_args(
                "audit-why",
                &[("reason", format::isolate(i18n, reason).into())],
            ),
        ),
        None => say_colored(
            ui,
            i18n,
            &i18n.tr("audit-no-reason"),
            ui.visuals().weak_text_color(),
        ),
    };
    if let Some(evidence) = c.body.get("evidence") {
        let part =
            |k: &str| format::isolate(i18n, evidence.get(k).and_then(Value::as_str).unwrap_or("-"));
        say(
            ui,
            i18n,
            &i18n.tr_args(
                "audit-evidence",
                &[
                    ("reference", part("reference").into()),
                    ("note", part("note").into()),
                ],
            ),
        );
    }
    say(
        ui,
        i18n,
        &result_summary(i18n, c.kind.as_str(), &c.status, &c.result, intent_id),
    );
    copyable_ui(ui, i18n, &c.command_id);
}

pub fn audit_ui(
    ui: &mut egui::Ui,
    i18n: &Localizer,
    detail: &IntentDetail,
    show_dry_runs: &mut bool,
) {
    say_strong(ui, i18n, &i18n.tr("audit-title"));
    let text = i18n.tr("audit-show-dry-runs");
    let shown = wt(i18n, ui, &text);
    format::said(i18n, &text, ui.checkbox(show_dry_runs, shown));
    let shown: Vec<&CommandRow> = detail
        .commands
        .iter()
        .filter(|c| *show_dry_runs || !c.dry_run)
        .collect();
    if shown.is_empty() {
        say(ui, i18n, &i18n.tr("audit-empty"));
    }
    for c in shown {
        ui.separator();
        ui.push_id(&c.command_id, |ui| {
            command_ui(ui, i18n, c, detail.intent.id.as_str())
        });
    }
}
