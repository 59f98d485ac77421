//! The intent's envelope (every field stored beside it) and the fields of one selected
//! attempt. Ids, keys and hashes are copyable; times are shown in the locale's calendar,
//! in UTC, with the Gregorian date on hover.

use super::format::{self, BidiHover};
use super::frozen_command::frozen_command_ui;
use super::intent_widgets::{
    field_row, fields_grid, grid_row, id_row, instant, say_strong, user_row,
};
use crate::console::model::{AttemptRow, IntentDetail};
use crate::i18n::Localizer;

fn time_row(ui: &mut egui::Ui, i18n: &Localizer, name_key: &str, at_ms: Option<u64>) {
    grid_row(ui, i18n, name_key, |ui| match at_ms.filter(|&t| t > 0) {
        Some(t) => {
            format::label(ui, i18n, &instant(i18n, t)).bidi_hover(
                i18n,
                &i18n.date_tooltip(t, super::charts::time_axis::local_offset_secs(t)),
            );
        }
        None => {
            ui.label("-");
        }
    });
}

fn or_dash(v: &Option<String>) -> String {
    v.clone()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "-".into())
}

/// The downstream resource the intent's latest send went to, as stored when it was claimed.
pub fn sent_resource(detail: &IntentDetail) -> Option<String> {
    detail
        .attempts
        .iter()
        .rev()
        .find_map(|a| a.downstream_resource.clone())
}

/// When the key may be forgotten as the coordinator takes it: the ledger's rule.
fn forget_at(detail: &IntentDetail) -> Option<u64> {
    let i = &detail.intent;
    match (i.first_dispatch_at_ms, i.key_retention_secs) {
        (Some(first), Some(sent)) => Some(super::ledger::effective_forget_at(
            first,
            sent,
            detail.live_key_retention_secs,
        )),
        _ => detail.key_forget_at_ms,
    }
}

pub fn envelope_ui(ui: &mut egui::Ui, i18n: &Localizer, detail: &IntentDetail) {
    let i = &detail.intent;
    say_strong(ui, i18n, &i18n.tr("envelope-title"));
    fields_grid(ui, i18n, "envelope_fields", |ui| {
        id_row(ui, i18n, "envelope-intent-id", i.id.as_str());
        user_row(ui, i18n, "field-tenant", i.tenant.as_str());
        user_row(ui, i18n, "field-actor", &i.actor);
        user_row(ui, i18n, "field-purpose", &i.purpose);
        user_row(ui, i18n, "field-operation", &i.operation);
        user_row(ui, i18n, "field-tool", &i.tool);
        let tier = i18n.tr(&format!("tier-{}", i.consequence));
        field_row(ui, i18n, "envelope-consequence", &tier);
        if i.args.is_none() {
            // Otherwise shown beside the arguments it covers, below.
            id_row(ui, i18n, "field-args-hash", &i.canonical_args_hash);
        }
        user_row(
            ui,
            i18n,
            "envelope-authorization",
            &format!(
                "{} ({})",
                or_dash(&i.authorization_version),
                or_dash(&i.approver)
            ),
        );
        let policy = match (&i.policy_version, &i.approver) {
            (Some(v), _) => v.clone(),
            (None, Some(_)) => i18n.tr("envelope-no-policy"),
            (None, None) => "-".into(),
        };
        user_row(ui, i18n, "envelope-policy-version", &policy);
        user_row(ui, i18n, "envelope-created-by", &or_dash(&i.created_by));
        time_row(ui, i18n, "envelope-approved-at", i.authorized_at_ms);
        time_row(
            ui,
            i18n,
            "envelope-approval-expires",
            i.authorization_expires_at_ms,
        );
        user_row(ui, i18n, "field-release", &i.release_id);
        id_row(ui, i18n, "field-action-key", i.action_key.as_str());
        user_row(
            ui,
            i18n,
            "envelope-downstream",
            &format!("{} / {}", i.connector, i.operation),
        );
        user_row(
            ui,
            i18n,
            "envelope-downstream-resource",
            &or_dash(&sent_resource(detail)),
        );
        time_row(ui, i18n, "envelope-created", Some(i.created_at_ms));
        time_row(ui, i18n, "envelope-deadline", Some(i.deadline_at_ms));
        let retention = i
            .key_retention_secs
            .map(|s| super::format::duration_ms(i18n, (s * 1000) as i64))
            .unwrap_or_else(|| "-".into());
        field_row(ui, i18n, "envelope-key-retention", &retention);
        if let Some(live) = detail
            .live_key_retention_secs
            .filter(|&live| i.key_retention_secs.is_some_and(|sent| sent != live))
        {
            let live = super::format::duration_ms(i18n, (live * 1000) as i64);
            field_row(ui, i18n, "envelope-key-retention-now", &live);
        }
        time_row(ui, i18n, "envelope-key-forget", forget_at(detail));
        field_row(
            ui,
            i18n,
            "envelope-max-attempts",
            &format!(
                "{} / {}",
                i18n.int(i64::from(i.attempts)),
                i18n.int(i64::from(i.max_attempts))
            ),
        );
        // Lookups are their own amplification, beside the attempts; shown once there are any.
        if i.lookups > 0 || i.next_lookup_at_ms.is_some() {
            field_row(
                ui,
                i18n,
                "envelope-lookups",
                &i18n.tr_args(
                    "envelope-lookups-value",
                    &[
                        ("lookups", i.lookups.into()),
                        ("attempts", i.attempts.into()),
                    ],
                ),
            );
            time_row(ui, i18n, "envelope-last-lookup", i.last_lookup_at_ms);
            time_row(ui, i18n, "envelope-next-lookup", i.next_lookup_at_ms);
            if i.lookups_exhausted_at_ms.is_some() {
                time_row(
                    ui,
                    i18n,
                    "envelope-lookups-exhausted",
                    i.lookups_exhausted_at_ms,
                );
            }
        }
        let owner = i18n.tr(&format!("retry-owner-{}", i.retry_owner));
        field_row(ui, i18n, "envelope-retry-owner", &owner);
        id_row(
            ui,
            i18n,
            "envelope-receipt-id",
            i.receipt_id.as_deref().unwrap_or(""),
        );
        id_row(
            ui,
            i18n,
            "envelope-downstream-ref",
            i.downstream_ref.as_deref().unwrap_or(""),
        );
        field_row(ui, i18n, "envelope-locale", i.locale.as_str());
        id_row(ui, i18n, "envelope-caller-key", &i.caller_key);
        time_row(ui, i18n, "envelope-first-dispatch", i.first_dispatch_at_ms);
        time_row(
            ui,
            i18n,
            "envelope-indeterminate-since",
            i.indeterminate_since_ms,
        );
        time_row(ui, i18n, "envelope-committed-at", i.committed_at_ms);
        if i.cancel_requested_at_ms.is_some() {
            time_row(
                ui,
                i18n,
                "envelope-cancel-requested",
                i.cancel_requested_at_ms,
            );
            user_row(
                ui,
                i18n,
                "envelope-cancel-by",
                &or_dash(&i.cancel_requested_by),
            );
            user_row(
                ui,
                i18n,
                "envelope-cancel-reason",
                &or_dash(&i.cancel_reason),
            );
        }
        if let Some(workflow) = &i.workflow_id {
            user_row(ui, i18n, "envelope-workflow", workflow);
        }
        for (key, link) in [
            ("envelope-parent", &i.parent_intent_id),
            ("envelope-supersedes", &i.supersedes),
            ("envelope-superseded-by", &i.superseded_by),
        ] {
            if let Some(id) = link {
                id_row(ui, i18n, key, id.as_str());
            }
        }
    });
    if i.args.is_some() || i.canonical_args.is_some() {
        frozen_command_ui(ui, i18n, i);
    }
}

/// An attempt's reported cost in its billing currency's units (millionths written out as a
/// decimal, `4200` as `0.0042`), in the locale's digits; `-` when none was reported.
fn cost_text(i18n: &Localizer, micros: Option<u64>) -> String {
    let Some(m) = micros else {
        return "-".into();
    };
    let fraction = format!("{:06}", m % 1_000_000);
    let fraction = fraction.trim_end_matches('0');
    let plain = if fraction.is_empty() {
        (m / 1_000_000).to_string()
    } else {
        format!("{}.{fraction}", m / 1_000_000)
    };
    crate::i18n::digits::format_decimal_text(&plain, true, i18n.locale()).unwrap_or(plain)
}

/// Every field of one attempt; ids copyable. Its release is shown beside the intent's
/// (`original_release`), and a change of release is flagged: a failover to another release.
pub fn attempt_fields_ui(
    ui: &mut egui::Ui,
    i18n: &Localizer,
    a: &AttemptRow,
    original_release: &str,
) {
    fields_grid(ui, i18n, "attempt_fields", |ui| {
        id_row(ui, i18n, "attempt-id", a.id.as_str());
        field_row(ui, i18n, "attempt-kind", a.kind.as_str());
        user_row(ui, i18n, "attempt-provider", &a.provider);
        user_row(ui, i18n, "attempt-region", &or_dash(&a.region));
        user_row(ui, i18n, "attempt-model", &or_dash(&a.model));
        user_row(ui, i18n, "field-release", &or_dash(&a.release_id));
        user_row(ui, i18n, "attempt-original-release", original_release);
        if release_changed(a, original_release) {
            field_row(
                ui,
                i18n,
                "attempt-release-change",
                &i18n.tr("attempt-release-changed"),
            );
        }
        user_row(ui, i18n, "attempt-worker", &or_dash(&a.worker));
        id_row(
            ui,
            i18n,
            "attempt-provider-request-id",
            a.provider_request_id.as_deref().unwrap_or(""),
        );
        user_row(ui, i18n, "attempt-hedge-group", &or_dash(&a.hedge_group));
        let outcome = super::intent_widgets::tr_named(i18n, "timeline-outcome", a.outcome.as_str());
        field_row(ui, i18n, "attempt-outcome", &outcome);
        user_row(ui, i18n, "attempt-error-class", &or_dash(&a.error_class));
        let status = a.http_status.map(|s| s.to_string()).unwrap_or("-".into());
        field_row(ui, i18n, "attempt-http-status", &status);
        let retry_after = a
            .retry_after_ms
            .map(|ms| super::format::duration_ms(i18n, ms as i64))
            .unwrap_or("-".into());
        field_row(ui, i18n, "attempt-retry-after", &retry_after);
        id_row(
            ui,
            i18n,
            "attempt-proposal-hash",
            a.proposal_hash.as_deref().unwrap_or(""),
        );
        id_row(
            ui,
            i18n,
            "attempt-presented-key",
            a.presented_key.as_deref().unwrap_or(""),
        );
        let yes_no = |b: bool| i18n.tr(if b { "filter-yes" } else { "filter-no" });
        let replayed = a.replayed.map(yes_no).unwrap_or("-".into());
        field_row(ui, i18n, "attempt-replayed", &replayed);
        field_row(ui, i18n, "attempt-sent", &yes_no(a.sent));
        field_row(ui, i18n, "attempt-late", &yes_no(a.late));
        if a.hedge_group.is_some() {
            field_row(ui, i18n, "attempt-hedge-lost", &yes_no(a.hedge_lost));
        }
        field_row(ui, i18n, "attempt-cost", &cost_text(i18n, a.cost_micros));
        user_row(ui, i18n, "attempt-detail", &or_dash(&a.detail));
        user_row(
            ui,
            i18n,
            "attempt-downstream-resource",
            &or_dash(&a.downstream_resource),
        );
        let retention = a
            .key_retention_secs
            .map(|s| super::format::duration_ms(i18n, (s * 1000) as i64))
            .unwrap_or_else(|| "-".into());
        field_row(ui, i18n, "attempt-key-retention", &retention);
        time_row(ui, i18n, "attempt-started", Some(a.started_at_ms));
        time_row(ui, i18n, "attempt-ended", a.ended_at_ms);
        let took = a
            .ended_at_ms
            .map(|e| super::format::duration_ms(i18n, e as i64 - a.started_at_ms as i64))
            .unwrap_or("-".into());
        field_row(ui, i18n, "attempt-duration", &took);
    });
}

/// Whether attempt `a` acted under another release than the intent's.
pub fn release_changed(a: &AttemptRow, original_release: &str) -> bool {
    a.release_id
        .as_deref()
        .is_some_and(|r| !r.is_empty() && r != original_release)
}
