//! The action-key ledger of one intent: every attempt that presented the key (a fresh
//! execution, a replay of the first result, a mismatch refusal, an unknown outcome), the
//! lookups made with it, the receipts, and when the downstream may forget the key — with a
//! warning when a retry could come after that, because the downstream would then not
//! deduplicate it. Built from the intent's detail; no extra request.

use egui::RichText;

use super::format;
use super::intent_widgets::{copyable_ui, instant, say, say_colored, say_strong};
use crate::console::model::{AttemptRow, IntentDetail};
use crate::console::theme;
use crate::domain::retry::RetryPolicy;
use crate::domain::{AttemptKind, AttemptOutcome, KeyContract};
use crate::i18n::Localizer;

/// What one use of the key did downstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyUse {
    /// The downstream executed it: the one effect.
    Fresh,
    /// The downstream answered with the first result: no new effect.
    Replay,
    /// The key came with a different body and was refused (422).
    Mismatch,
    /// The answer was lost or late: it may have executed.
    Unknown,
    /// Still waiting for the answer.
    InFlight,
    /// Failed or never sent: nothing applied.
    NotApplied,
    /// A read-only lookup by the key, found or not.
    Lookup { found: bool },
}

impl KeyUse {
    fn of(a: &AttemptRow) -> KeyUse {
        if a.kind == AttemptKind::Lookup {
            return KeyUse::Lookup {
                found: a.outcome == AttemptOutcome::Succeeded,
            };
        }
        if a.http_status == Some(422) {
            return KeyUse::Mismatch;
        }
        if a.replayed == Some(true) {
            return KeyUse::Replay;
        }
        match a.outcome.as_str() {
            "succeeded" => KeyUse::Fresh,
            "timed_out" | "lost" => KeyUse::Unknown,
            "pending" => KeyUse::InFlight,
            _ if a.sent => KeyUse::Unknown,
            _ => KeyUse::NotApplied,
        }
    }

    pub fn label_key(self) -> &'static str {
        match self {
            KeyUse::Fresh => "ledger-use-fresh",
            KeyUse::Replay => "ledger-use-replay",
            KeyUse::Mismatch => "ledger-use-mismatch",
            KeyUse::Unknown => "ledger-use-unknown",
            KeyUse::InFlight => "ledger-use-in-flight",
            KeyUse::NotApplied => "ledger-use-not-applied",
            KeyUse::Lookup { found: true } => "ledger-use-lookup-found",
            KeyUse::Lookup { found: false } => "ledger-use-lookup-not-found",
        }
    }
}

/// One attempt that used the key.
#[derive(Debug, Clone, PartialEq)]
pub struct LedgerRow {
    pub attempt: usize,
    pub use_: KeyUse,
    /// Presented after the downstream may have forgotten the key.
    pub after_forget: bool,
}

/// Why the key's retention needs the operator's attention.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ForgetWarning {
    /// The retention is over and the intent is still open: a retry now would not be
    /// deduplicated.
    Passed { forget_at_ms: u64 },
    /// Retries are still allowed until `last_retry_ms`, after the key may be forgotten.
    RetryAfterForget {
        forget_at_ms: u64,
        last_retry_ms: u64,
    },
}

/// The connector's key retention now differs from the one the key was first sent under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetentionChanged {
    pub sent_under_secs: u64,
    pub live_secs: u64,
}

impl RetentionChanged {
    /// Shorter now: the coordinator takes the key as forgotten earlier than it was sent for.
    pub fn shorter(&self) -> bool {
        self.live_secs < self.sent_under_secs
    }
}

/// The ledger of one action key.
#[derive(Debug, Clone, PartialEq)]
pub struct Ledger {
    pub key: String,
    pub rows: Vec<LedgerRow>,
    pub fresh: usize,
    pub replays: usize,
    pub mismatches: usize,
    /// When the downstream may forget the key, as the coordinator's send gate and
    /// reconciler take it: the retention it was sent under, or the live one if shorter.
    pub forget_at_ms: Option<u64>,
    /// The key retention the key was first sent under.
    pub sent_under_secs: Option<u64>,
    pub retention_changed: Option<RetentionChanged>,
    pub warning: Option<ForgetWarning>,
}

/// When the key first sent at `first_ms` under `sent_under_secs` may be forgotten, with the
/// connector's retention now `live_secs`: the rule the coordinator's send gate and
/// reconciler apply ([`KeyContract::retention_at_most`]), so the ledger says what they do.
pub fn effective_forget_at(first_ms: u64, sent_under_secs: u64, live_secs: Option<u64>) -> u64 {
    let live_ms = live_secs.map_or(u64::MAX, |s| s.saturating_mul(1000));
    KeyContract {
        supports_idempotency: true,
        retention_ms: live_ms,
        timeout_ms: 0,
    }
    .retention_at_most(Some(sent_under_secs))
    .forget_at_ms(first_ms)
}

impl Ledger {
    pub fn build(detail: &IntentDetail, now_ms: u64) -> Ledger {
        let intent = &detail.intent;
        let key = intent.action_key.clone();
        let sent_under_secs = intent.first_dispatch_at_ms.and(intent.key_retention_secs);
        let forget = match (intent.first_dispatch_at_ms, sent_under_secs) {
            (Some(first), Some(secs)) => Some(effective_forget_at(
                first,
                secs,
                detail.live_key_retention_secs,
            )),
            _ => detail.key_forget_at_ms,
        };
        let retention_changed = match (sent_under_secs, detail.live_key_retention_secs) {
            (Some(sent), Some(live)) if sent != live => Some(RetentionChanged {
                sent_under_secs: sent,
                live_secs: live,
            }),
            _ => None,
        };
        let mut rows: Vec<LedgerRow> = detail
            .attempts
            .iter()
            .enumerate()
            .filter(|(_, a)| {
                a.kind == AttemptKind::Lookup || a.presented_key.as_deref() == Some(key.as_str())
            })
            .map(|(i, a)| LedgerRow {
                attempt: i,
                use_: KeyUse::of(a),
                after_forget: a.kind != AttemptKind::Lookup
                    && forget.is_some_and(|f| a.started_at_ms >= f),
            })
            .collect();
        rows.sort_by_key(|r| (detail.attempts[r.attempt].started_at_ms, r.attempt));
        let count = |u: KeyUse| rows.iter().filter(|r| r.use_ == u).count();
        let open = !intent.state.known().is_some_and(|s| s.is_terminal());
        let last_retry_ms = intent
            .deadline_at_ms
            .saturating_sub(RetryPolicy::default().confirmation_reserve_ms);
        let warning = match forget {
            Some(f) if open && now_ms >= f => Some(ForgetWarning::Passed { forget_at_ms: f }),
            Some(f) if open && intent.deadline_at_ms > 0 && last_retry_ms > f => {
                Some(ForgetWarning::RetryAfterForget {
                    forget_at_ms: f,
                    last_retry_ms,
                })
            }
            _ => None,
        };
        Ledger {
            fresh: count(KeyUse::Fresh),
            replays: count(KeyUse::Replay),
            mismatches: count(KeyUse::Mismatch),
            key: key.to_string(),
            rows,
            forget_at_ms: forget,
            sent_under_secs,
            retention_changed,
            warning,
        }
    }
}

pub fn ledger_ui(ui: &mut egui::Ui, i18n: &Localizer, detail: &IntentDetail, ledger: &Ledger) {
    say_strong(ui, i18n, &i18n.tr("ledger-title"));
    if ledger.key.is_empty() {
        say(ui, i18n, &i18n.tr("ledger-no-key"));
        return;
    }
    copyable_ui(ui, i18n, &ledger.key);
    let n = |v: usize| -> crate::i18n::Arg<'static> { v.into() };
    say(
        ui,
        i18n,
        &i18n.tr_args(
            "ledger-summary",
            &[
                ("fresh", n(ledger.fresh)),
                ("replays", n(ledger.replays)),
                ("mismatches", n(ledger.mismatches)),
            ],
        ),
    );
    lookups_ui(ui, i18n, detail);
    if detail.ingest_replays > 0 || detail.ingest_mismatches > 0 {
        say(
            ui,
            i18n,
            &i18n.tr_args(
                "ledger-ingest",
                &[
                    ("replays", detail.ingest_replays.into()),
                    ("mismatches", detail.ingest_mismatches.into()),
                ],
            ),
        );
    }
    match ledger.forget_at_ms {
        Some(f) => say(
            ui,
            i18n,
            &i18n.tr_args("ledger-forget-at", &[("at", instant(i18n, f).into())]),
        ),
        None => say(ui, i18n, &i18n.tr("ledger-forget-unknown")),
    };
    retention_ui(ui, i18n, ledger);
    match ledger.warning {
        Some(ForgetWarning::Passed { forget_at_ms }) => {
            say_colored(
                ui,
                i18n,
                &i18n.tr_args(
                    "ledger-warning-passed",
                    &[("at", instant(i18n, forget_at_ms).into())],
                ),
                theme::INDETERMINATE,
            );
        }
        Some(ForgetWarning::RetryAfterForget {
            forget_at_ms,
            last_retry_ms,
        }) => {
            say_colored(
                ui,
                i18n,
                &i18n.tr_args(
                    "ledger-warning-retry-after",
                    &[
                        ("at", instant(i18n, forget_at_ms).into()),
                        ("until", instant(i18n, last_retry_ms).into()),
                    ],
                ),
                theme::INDETERMINATE,
            );
        }
        None => {}
    }
    ui.add_space(4.0);
    if ledger.rows.is_empty() {
        say(ui, i18n, &i18n.tr("ledger-no-uses"));
    }
    // Only the rows on screen are built: an intent may have thousands of key uses.
    let row_h = ui.spacing().interact_size.y;
    egui::ScrollArea::vertical()
        .id_salt("ledger_rows")
        .max_height((ui.available_height() * 0.6).max(120.0))
        .auto_shrink([false, true])
        .show_rows(ui, row_h, ledger.rows.len(), |ui, range| {
            for row in &ledger.rows[range] {
                use_row_ui(ui, i18n, detail, row);
            }
        });
    ui.add_space(4.0);
    say_strong(ui, i18n, &i18n.tr("intent-receipts"));
    if detail.receipts.is_empty() {
        say(ui, i18n, &i18n.tr("ledger-no-receipts"));
    }
    egui::ScrollArea::vertical()
        .id_salt("ledger_receipts")
        .auto_shrink([false, true])
        .show_rows(ui, row_h, detail.receipts.len(), |ui, range| {
            for r in &detail.receipts[range] {
                super::intent_widgets::row(ui, i18n, |ui| {
                    format::label(ui, i18n, &instant(i18n, r.received_at_ms));
                    copyable_ui(ui, i18n, &r.downstream_id);
                    ui.label(&r.source);
                    let key = if r.authoritative {
                        "ledger-receipt-authoritative"
                    } else {
                        "ledger-receipt-duplicate"
                    };
                    format::label(ui, i18n, &i18n.tr(key));
                });
            }
        });
}

/// How many lookups the key had, when the last was, and when the next automatic one is due
/// or that their budget ran out and the intent waits for an operator.
fn lookups_ui(ui: &mut egui::Ui, i18n: &Localizer, detail: &IntentDetail) {
    let intent = &detail.intent;
    if intent.lookups == 0 && intent.next_lookup_at_ms.is_none() {
        return;
    }
    let last = intent
        .last_lookup_at_ms
        .map_or_else(|| i18n.tr("ledger-lookups-never"), |at| instant(i18n, at));
    say(
        ui,
        i18n,
        &i18n.tr_args(
            "ledger-lookups",
            &[
                ("count", intent.lookups.into()),
                ("attempts", intent.attempts.into()),
                ("last", last.into()),
            ],
        ),
    );
    let unproven = intent.state.known() == Some(crate::domain::IntentState::Indeterminate);
    if !unproven {
        return;
    }
    if let Some(at) = intent.lookups_exhausted_at_ms {
        say_colored(
            ui,
            i18n,
            &i18n.tr_args(
                "ledger-lookups-exhausted",
                &[("at", instant(i18n, at).into())],
            ),
            theme::INDETERMINATE,
        );
    } else if let Some(at) = intent.next_lookup_at_ms {
        say(
            ui,
            i18n,
            &i18n.tr_args("ledger-lookups-next", &[("at", instant(i18n, at).into())]),
        );
    }
}

/// The retention the key was sent under, and a warning when the connector's differs now.
fn retention_ui(ui: &mut egui::Ui, i18n: &Localizer, ledger: &Ledger) {
    let secs = |s: u64| -> crate::i18n::Arg<'static> {
        format::duration_ms(
            i18n,
            i64::try_from(s.saturating_mul(1000)).unwrap_or(i64::MAX),
        )
        .into()
    };
    if let Some(sent) = ledger.sent_under_secs {
        say(
            ui,
            i18n,
            &i18n.tr_args("ledger-sent-under", &[("retention", secs(sent))]),
        );
    }
    let Some(changed) = ledger.retention_changed else {
        return;
    };
    let args = [
        ("sent", secs(changed.sent_under_secs)),
        ("live", secs(changed.live_secs)),
    ];
    if changed.shorter() {
        say_colored(
            ui,
            i18n,
            &i18n.tr_args("ledger-retention-shorter-now", &args),
            theme::INDETERMINATE,
        );
    } else {
        say_colored(
            ui,
            i18n,
            &i18n.tr_args("ledger-retention-longer-now", &args),
            theme::INDETERMINATE,
        );
    }
}

/// One use of the key: when, what it did downstream, which attempt, and whether it came
/// after the key may have been forgotten.
fn use_row_ui(ui: &mut egui::Ui, i18n: &Localizer, detail: &IntentDetail, row: &LedgerRow) {
    let a = &detail.attempts[row.attempt];
    super::intent_widgets::row(ui, i18n, |ui| {
        format::label(ui, i18n, &instant(i18n, a.started_at_ms));
        let color = match row.use_ {
            KeyUse::Fresh | KeyUse::Replay | KeyUse::Lookup { found: true } => theme::COMMITTED,
            KeyUse::Mismatch => theme::REJECTED,
            KeyUse::Unknown => theme::INDETERMINATE,
            _ => ui.visuals().text_color(),
        };
        let words = i18n.tr(row.use_.label_key());
        format::label_colored(ui, i18n, &words, color);
        ui.label(RichText::new(a.id.as_str()).monospace())
            .on_hover_text(super::timeline::model::lane_label(a));
        if row.after_forget {
            let late = i18n.tr("ledger-after-forget");
            format::label_colored(ui, i18n, &late, theme::INDETERMINATE);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn detail(state: &str, forget: u64, deadline: u64) -> IntentDetail {
        serde_json::from_value(json!({
            "intent": {"id": "int_01kbx7q3p9d2m8v4r6t0y5zs01", "tenant": "acme",
                       "operation": "purchase_order.create", "consequence": "write", "state": state,
                       "action_key": "po:acme:int_01kbx7q3p9d2m8v4r6t0y5zs01", "created_at_ms": 0,
                       "deadline_at_ms": deadline},
            "attempts": [
                {"id": "att_01kbx7q3p9d2m8v4r6t0y5zsa1", "kind": "dispatch", "provider": "erp", "outcome": "lost", "sent": true,
                 "presented_key": "po:acme:int_01kbx7q3p9d2m8v4r6t0y5zs01", "started_at_ms": 10},
                {"id": "att_01kbx7q3p9d2m8v4r6t0y5zsa2", "kind": "dispatch", "provider": "erp", "outcome": "succeeded", "replayed": true,
                 "presented_key": "po:acme:int_01kbx7q3p9d2m8v4r6t0y5zs01", "started_at_ms": 2_000},
                {"id": "att_01kbx7q3p9d2m8v4r6t0y5zsa3", "kind": "inference", "provider": "p", "outcome": "succeeded", "started_at_ms": 5}
            ],
            "key_forget_at_ms": forget
        }))
        .expect("detail")
    }

    #[test]
    fn a_replay_is_not_a_second_effect_and_a_late_retry_is_flagged() {
        let l = Ledger::build(&detail("executing", 1_000, 60_000), 500);
        assert_eq!(l.rows.len(), 2, "only attempts that presented the key");
        assert_eq!(l.rows[0].use_, KeyUse::Unknown);
        assert_eq!(l.rows[1].use_, KeyUse::Replay);
        assert!(l.rows[1].after_forget);
        assert_eq!((l.fresh, l.replays), (0, 1));
        assert_eq!(
            l.warning,
            Some(ForgetWarning::RetryAfterForget {
                forget_at_ms: 1_000,
                last_retry_ms: 59_000
            })
        );
    }

    fn dispatched(first: u64, sent_under: u64, live: Option<u64>) -> IntentDetail {
        let mut d = detail("indeterminate", first + sent_under * 1000, 10_000_000);
        d.intent.first_dispatch_at_ms = Some(first);
        d.intent.key_retention_secs = Some(sent_under);
        d.live_key_retention_secs = live;
        d
    }

    #[test]
    fn the_key_is_forgotten_by_the_retention_it_was_sent_under() {
        let l = Ledger::build(&dispatched(10, 600, Some(600)), 20);
        assert_eq!(l.forget_at_ms, Some(600_010));
        assert_eq!(l.sent_under_secs, Some(600));
        assert_eq!(l.retention_changed, None);
    }

    #[test]
    fn a_longer_retention_now_keeps_the_one_sent_under_and_says_so() {
        let l = Ledger::build(&dispatched(10, 600, Some(3_600)), 20);
        assert_eq!(l.forget_at_ms, Some(600_010));
        let changed = l.retention_changed.expect("the difference is told");
        assert!(!changed.shorter());
    }

    #[test]
    fn a_shorter_retention_now_brings_the_forget_time_forward_as_the_gate_does() {
        let l = Ledger::build(&dispatched(10, 600, Some(60)), 20);
        let gate = KeyContract {
            supports_idempotency: true,
            retention_ms: 60_000,
            timeout_ms: 0,
        }
        .retention_at_most(Some(600))
        .forget_at_ms(10);
        assert_eq!(l.forget_at_ms, Some(gate));
        assert_eq!(gate, 60_010);
        assert!(l.retention_changed.expect("told").shorter());
    }

    #[test]
    fn a_committed_intent_needs_no_warning() {
        assert_eq!(
            Ledger::build(&detail("committed", 1_000, 60_000), 5_000).warning,
            None
        );
        assert_eq!(
            Ledger::build(&detail("indeterminate", 1_000, 60_000), 5_000).warning,
            Some(ForgetWarning::Passed {
                forget_at_ms: 1_000
            })
        );
    }
}
