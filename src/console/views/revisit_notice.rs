//! The gate-revisit notice under the top bar: what changed since the retry/failover gate was
//! decided (a connector's contract, a first-seen provider, release or tool), newest first,
//! until the operator acknowledges it.
//!
//! Acknowledging is this desk's: it remembers, per coordinator, the newest event it was
//! shown, so every operator sees a change once, as a notification is read once. The events
//! themselves stay in the coordinator's audit trail (`GET /v1/revisits`). A notice does not
//! time out: a shortened key retention matters however late the console is opened.

use std::time::{Duration, Instant};

use super::format::{self, BidiHover};
use crate::console::actions::{Actions, UiAction};
use crate::console::theme;
use crate::domain::RevisitKind;
use crate::i18n::Localizer;
use crate::wire::Revisit;

/// How often the console asks for new revisit events while nothing else prompts it (a
/// coordinator's restart does: the event stream reconnects).
const REFRESH: Duration = Duration::from_secs(60);
/// The most events read, and listed on hover.
pub const SHOWN: u32 = 50;

/// What the console knows of the revisit events.
#[derive(Debug, Default)]
pub struct RevisitNotice {
    /// The newest events, newest first.
    pub items: Vec<Revisit>,
    asked_at: Option<Instant>,
    in_flight: bool,
    /// Asked for again at the next chance (the coordinator may have restarted).
    stale: bool,
}

impl RevisitNotice {
    /// Whether to ask the coordinator now.
    pub fn due(&self, now: Instant) -> bool {
        !self.in_flight
            && (self.stale
                || self
                    .asked_at
                    .is_none_or(|at| now.duration_since(at) >= REFRESH))
    }

    pub fn asked(&mut self, now: Instant) {
        self.in_flight = true;
        self.stale = false;
        self.asked_at = Some(now);
    }

    /// Ask again at the next chance.
    pub fn mark_stale(&mut self) {
        self.stale = true;
    }

    /// The answer arrived; on an error the events known are kept.
    pub fn answered(&mut self, items: Option<Vec<Revisit>>) {
        self.in_flight = false;
        if let Some(items) = items {
            self.items = items;
        }
    }

    /// The events newer than `acknowledged_seq`, newest first.
    pub fn unacknowledged(&self, acknowledged_seq: u64) -> Vec<&Revisit> {
        self.items
            .iter()
            .filter(|r| r.seq > acknowledged_seq)
            .collect()
    }
}

/// A value of a contract field in words: durations for retentions and timeouts.
fn value(i18n: &Localizer, field: &str, raw: &str) -> String {
    let ms = match (field, raw.parse::<i64>()) {
        ("key_retention_secs", Ok(secs)) => secs.saturating_mul(1000),
        ("timeout_ms", Ok(ms)) => ms,
        _ => return raw.to_string(),
    };
    format::duration_ms(i18n, ms)
}

/// One revisit event in words.
pub fn revisit_text(i18n: &Localizer, r: &Revisit) -> String {
    let old = r.old.as_deref().unwrap_or("-");
    match r.kind {
        RevisitKind::RetentionShortened => i18n.tr_args(
            "revisit-retention-shortened",
            &[
                ("subject", r.subject.as_str().into()),
                ("old", value(i18n, &r.field, old).into()),
                ("new", value(i18n, &r.field, &r.new).into()),
            ],
        ),
        RevisitKind::ContractChanged => i18n.tr_args(
            "revisit-contract-changed",
            &[
                ("subject", r.subject.as_str().into()),
                ("field", r.field.as_str().into()),
                ("old", value(i18n, &r.field, old).into()),
                ("new", value(i18n, &r.field, &r.new).into()),
            ],
        ),
        RevisitKind::ProviderFirstSeen => i18n.tr_args(
            "revisit-provider-first-seen",
            &[("subject", r.subject.as_str().into())],
        ),
        RevisitKind::OperationFirstSeen => i18n.tr_args(
            "revisit-operation-first-seen",
            &[
                ("subject", r.subject.as_str().into()),
                ("operation", r.field.as_str().into()),
                ("resource", r.new.as_str().into()),
            ],
        ),
        RevisitKind::ReleaseFirstSeen => i18n.tr_args(
            "revisit-release-first-seen",
            &[("subject", r.subject.as_str().into())],
        ),
        RevisitKind::ToolFirstSeen => {
            let tier = |t: &str| i18n.tr(&format!("tier-{t}"));
            match &r.old {
                None => i18n.tr_args(
                    "revisit-tool-first-seen",
                    &[
                        ("subject", r.subject.as_str().into()),
                        ("tier", tier(&r.new).into()),
                    ],
                ),
                Some(before) => {
                    let before: Vec<String> = before.split(", ").map(tier).collect();
                    i18n.tr_args(
                        "revisit-tool-new-tier",
                        &[
                            ("subject", r.subject.as_str().into()),
                            ("tier", tier(&r.new).into()),
                            ("before", before.join(", ").into()),
                        ],
                    )
                }
            }
        }
    }
}

/// The notice, when events are waiting to be acknowledged: the newest in words, how many
/// more, every one of them on hover, and the acknowledgement.
pub fn revisit_notice_ui(
    ui: &mut egui::Ui,
    i18n: &Localizer,
    notice: &RevisitNotice,
    acknowledged_seq: u64,
    actions: &mut Actions,
) {
    let waiting = notice.unacknowledged(acknowledged_seq);
    let Some(newest) = waiting.first() else {
        return;
    };
    let all: Vec<String> = waiting
        .iter()
        .map(|r| format!("• {}", revisit_text(i18n, r)))
        .collect();
    egui::Frame::new()
        .fill(theme::REVISIT_BANNER)
        .inner_margin(6.0)
        .show(ui, |ui| {
            // One line (wrapping when narrow), from the side the locale reads from.
            let layout = if i18n.is_rtl() {
                egui::Layout::right_to_left(egui::Align::Center)
            } else {
                egui::Layout::left_to_right(egui::Align::Center)
            };
            let line = egui::vec2(ui.available_width(), ui.spacing().interact_size.y);
            ui.allocate_ui_with_layout(line, layout.with_main_wrap(true), |ui| {
                let title = i18n.tr("revisit-notice-title");
                format::label_colored(ui, i18n, &title, theme::REVISIT_TEXT);
                let newest_text = revisit_text(i18n, newest);
                format::label_colored(ui, i18n, &newest_text, egui::Color32::WHITE)
                    .bidi_hover(i18n, &all.join("\n"));
                if waiting.len() > 1 {
                    let more = i18n.tr_args(
                        "revisit-notice-more",
                        &[("count", (waiting.len() - 1).into())],
                    );
                    format::label_colored(ui, i18n, &more, theme::REVISIT_TEXT)
                        .bidi_hover(i18n, &all.join("\n"));
                }
                let ack = i18n.tr("revisit-notice-acknowledge");
                if format::small_button(ui, i18n, &ack)
                    .bidi_hover(i18n, &i18n.tr("revisit-notice-acknowledge-hint"))
                    .clicked()
                {
                    actions.push(UiAction::AcknowledgeRevisits {
                        up_to_seq: newest.seq,
                    });
                }
            });
        });
}
