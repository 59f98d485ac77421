//! One open command dialog as data: what it is aimed at, the operator's fields, the dry
//! runs asked and the confirmed command, and the body each makes.

use serde_json::Value;

use crate::client::ClientError;
use crate::clock::Entropy;
use crate::console::model::IntentDetail;
use crate::console::text::BidiEditState;
use crate::domain::{CommandId, CommandKind, Disposition, IntentState};
use crate::i18n::Localizer;
use crate::wire::{CommandBody, EvidenceBody, Pause, ScopeBody, TargetBody, Whoami};

/// The dry run's reason when the operator has not typed one yet (a pause needs a reason,
/// even to preview it).
const PREVIEW_REASON: &str = "preview of the target set before confirming";

/// What a pause covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScopeChoice {
    /// Nothing chosen yet: a pause opened from a final intent makes the operator choose.
    Unchosen,
    Intent,
    Tenant,
    Provider(String),
    Tool,
}

/// The disposition of a close.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Closing {
    Committed,
    Cancelled,
}

/// A dry run asked for one target.
#[derive(Debug, Clone, PartialEq)]
pub struct DryRun {
    pub command_id: String,
    /// `None` while no scope is chosen.
    pub target: Option<TargetBody>,
    /// The frozen target set, or why there is none.
    pub result: Option<Result<DryRunTargets, ClientError>>,
}

/// What a dry run found: how many intents it covers and the first of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DryRunTargets {
    pub count: usize,
    pub first: Vec<String>,
}

/// Where a confirmed command stands.
#[derive(Debug, Clone, PartialEq)]
pub enum SendState {
    Sending,
    Applied(Value),
    /// The coordinator answered and did not apply it (refused, forbidden, invalid).
    Refused(ClientError),
    /// No usable answer: it may or may not have arrived; the same body may be sent again.
    Failed(ClientError),
}

/// A confirmed command: its body (with its command id) and what came of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Sent {
    pub command_id: String,
    pub body: CommandBody,
    pub state: SendState,
}

/// What the dialog asks its owner to do this frame.
#[derive(Debug, Clone, PartialEq)]
pub enum DialogAction {
    None,
    /// Send this body (a dry run or a confirmed command) to the coordinator.
    Send(Box<CommandBody>),
    Close,
}

/// One open command dialog.
#[derive(Debug, Clone)]
pub struct CommandDialog {
    pub kind: CommandKind,
    pub intent_id: String,
    pub scope: ScopeChoice,
    /// Resume: which of the pauses covering the intent to end.
    pub pause_index: usize,
    pub reason: String,
    pub closing: Closing,
    pub reference: String,
    pub note: String,
    pub dry_runs: Vec<DryRun>,
    pub sent: Option<Sent>,
    pub(super) reason_edit: BidiEditState,
    pub(super) reference_edit: BidiEditState,
    pub(super) note_edit: BidiEditState,
}

impl CommandDialog {
    pub fn new(kind: CommandKind, detail: &IntentDetail) -> CommandDialog {
        let terminal = detail.intent.state.known().is_some_and(|s| s.is_terminal());
        let closing = match detail.intent.state.known() {
            Some(IntentState::Executing | IntentState::Indeterminate) => Closing::Committed,
            _ => Closing::Cancelled,
        };
        CommandDialog {
            kind,
            intent_id: detail.intent.id.to_string(),
            // A final intent has nothing left to pause: a wider scope must be chosen on
            // purpose, never preselected.
            scope: if terminal {
                ScopeChoice::Unchosen
            } else {
                ScopeChoice::Intent
            },
            pause_index: 0,
            reason: String::new(),
            closing,
            reference: detail.intent.downstream_ref.clone().unwrap_or_default(),
            note: String::new(),
            dry_runs: Vec::new(),
            sent: None,
            reason_edit: BidiEditState::default(),
            reference_edit: BidiEditState::default(),
            note_edit: BidiEditState::default(),
        }
    }

    /// Whether a confirmed command is waiting for its answer.
    pub fn is_sending(&self) -> bool {
        matches!(
            self.sent,
            Some(Sent {
                state: SendState::Sending,
                ..
            })
        )
    }

    /// What the command is aimed at, as `POST /v1/commands` takes it; `None` while a pause
    /// has no scope chosen.
    pub fn target(&self, detail: &IntentDetail, who: Option<&Whoami>) -> Option<TargetBody> {
        let intent = &detail.intent;
        let intent_target = intent_target(intent.id.as_str());
        match self.kind {
            CommandKind::Reconcile | CommandKind::Close | CommandKind::Cancel => {
                Some(intent_target)
            }
            CommandKind::Resume => Some(
                detail
                    .pauses
                    .get(self.pause_index)
                    .map_or(intent_target, |p| resume_target(p, intent.id.as_str())),
            ),
            CommandKind::Pause => {
                // A token limited to some tenants may only name scopes inside them.
                let limited = who.is_some_and(|w| w.tenants.is_some());
                let mut scope = ScopeBody::default();
                match &self.scope {
                    ScopeChoice::Unchosen => return None,
                    ScopeChoice::Intent => return Some(intent_target),
                    ScopeChoice::Tenant => scope.tenant = Some(intent.tenant.to_string()),
                    ScopeChoice::Provider(p) => scope.provider = Some(p.clone()),
                    ScopeChoice::Tool => scope.tool = Some(intent.tool.clone()),
                }
                if limited {
                    scope.tenant = Some(intent.tenant.to_string());
                }
                Some(TargetBody {
                    intent_id: None,
                    scope: Some(scope),
                })
            }
        }
    }

    pub(super) fn trimmed(text: &str) -> Option<String> {
        Some(text.trim().to_string()).filter(|t| !t.is_empty())
    }

    /// Why the command cannot be confirmed yet, if it cannot.
    pub fn missing(
        &self,
        i18n: &Localizer,
        detail: &IntentDetail,
        who: Option<&Whoami>,
    ) -> Option<String> {
        let needs_reason = matches!(
            self.kind,
            CommandKind::Pause | CommandKind::Close | CommandKind::Cancel
        );
        if needs_reason && Self::trimmed(&self.reason).is_none() {
            return Some(i18n.tr("dialog-needs-reason"));
        }
        match self.kind {
            CommandKind::Pause if self.scope == ScopeChoice::Unchosen => {
                Some(i18n.tr("dialog-needs-scope"))
            }
            CommandKind::Pause | CommandKind::Resume => {
                let target = self.target(detail, who);
                let done = self
                    .dry_runs
                    .iter()
                    .any(|d| d.target == target && matches!(d.result, Some(Ok(_))));
                (!done).then(|| i18n.tr("dialog-needs-dry-run"))
            }
            CommandKind::Close => match self.closing {
                Closing::Committed if !committable(detail) => {
                    Some(i18n.tr("dialog-committed-not-now"))
                }
                Closing::Committed if Self::trimmed(&self.reference).is_none() => {
                    Some(i18n.tr("dialog-needs-reference"))
                }
                Closing::Cancelled
                    if Self::trimmed(&self.note).is_none()
                        && Self::trimmed(&self.reference).is_none() =>
                {
                    Some(i18n.tr("dialog-needs-evidence"))
                }
                _ => None,
            },
            CommandKind::Reconcile | CommandKind::Cancel => None,
        }
    }

    /// The body of the command as confirmed now, with a new command id.
    pub fn body(
        &self,
        detail: &IntentDetail,
        who: Option<&Whoami>,
        now_ms: u64,
        dry_run: bool,
        ids: &dyn Entropy,
    ) -> CommandBody {
        let reason = Self::trimmed(&self.reason).or_else(|| {
            (dry_run && self.kind == CommandKind::Pause).then(|| PREVIEW_REASON.into())
        });
        let (disposition, evidence) = if self.kind == CommandKind::Close {
            let disposition = match self.closing {
                Closing::Committed => Disposition::Committed,
                Closing::Cancelled => Disposition::Cancelled,
            };
            let evidence = EvidenceBody {
                reference: Self::trimmed(&self.reference),
                note: Self::trimmed(&self.note),
            };
            let given = evidence.reference.is_some() || evidence.note.is_some();
            (Some(disposition), given.then_some(evidence))
        } else {
            (None, None)
        };
        CommandBody {
            command_id: CommandId::generate(now_ms, ids.next_u128()),
            kind: self.kind,
            // Never sent without a target: a pause is previewed and confirmed only once
            // its scope is chosen.
            target: self.target(detail, who).unwrap_or_default(),
            reason,
            disposition,
            evidence,
            dry_run,
        }
    }

    /// The body with `command_id` never left (the worker's queue was full): a dry run is
    /// asked again next frame; a confirmed command waits for "Send again" with the same
    /// body.
    pub fn not_sent(&mut self, command_id: &str, why: ClientError) {
        self.dry_runs.retain(|d| d.command_id != command_id);
        if let Some(sent) = self.sent.as_mut().filter(|s| s.command_id == command_id) {
            sent.state = SendState::Failed(why);
        }
    }

    /// Take the answer to a body this dialog sent; true when it was this dialog's.
    pub fn on_answer(&mut self, body: &CommandBody, result: &Result<Value, ClientError>) -> bool {
        let id = body.command_id.as_str();
        if let Some(d) = self.dry_runs.iter_mut().find(|d| d.command_id == id) {
            d.result = Some(match result {
                Ok(record) => {
                    let first: Vec<String> = record
                        .pointer("/result/targets")
                        .and_then(Value::as_array)
                        .map(|l| {
                            l.iter()
                                .filter_map(|v| v.as_str().map(String::from))
                                .collect()
                        })
                        .unwrap_or_default();
                    // An older coordinator sent the whole set and no count.
                    let count = record
                        .pointer("/result/target_count")
                        .and_then(Value::as_u64)
                        .map_or(first.len(), |n| n as usize);
                    Ok(DryRunTargets { count, first })
                }
                Err(e) => Err(e.clone()),
            });
            return true;
        }
        match &mut self.sent {
            Some(sent) if sent.command_id == id => {
                sent.state = match result {
                    Ok(record) => SendState::Applied(record.clone()),
                    Err(
                        e @ (ClientError::Unreachable { .. }
                        | ClientError::BadResponse(_)
                        | ClientError::TooLarge { .. }),
                    ) => SendState::Failed(e.clone()),
                    Err(e) => SendState::Refused(e.clone()),
                };
                true
            }
            _ => false,
        }
    }
}

/// Committed is a possible disposition only from `executing` or `indeterminate`.
pub(super) fn committable(detail: &IntentDetail) -> bool {
    matches!(
        detail.intent.state.known(),
        Some(IntentState::Executing | IntentState::Indeterminate)
    )
}

/// The target that is the one intent `intent_id`.
fn intent_target(intent_id: &str) -> TargetBody {
    TargetBody {
        intent_id: Some(intent_id.to_string()),
        scope: None,
    }
}

/// The target that ends exactly this pause: its scope, field by field.
pub(super) fn resume_target(pause: &Pause, intent_id: &str) -> TargetBody {
    let scope = &pause.scope;
    if scope.intent_id.is_some() {
        return intent_target(intent_id);
    }
    TargetBody {
        intent_id: None,
        scope: Some(ScopeBody {
            tenant: scope.tenant.clone(),
            provider: scope.provider.clone(),
            tool: scope.tool.clone(),
            operation: scope.operation.clone(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::console::views::command_dialog::fixtures::{detail, who};
    use crate::domain::Locale;
    use serde_json::json;

    #[test]
    fn a_confirmed_body_carries_a_new_command_id_and_the_evidence() {
        let d = detail("indeterminate");
        let mut dialog = CommandDialog::new(CommandKind::Close, &d);
        dialog.reason = " found it in the ERP ".into();
        dialog.reference = "PO-4500".into();
        let ids = crate::clock::SeededEntropy::new(1);
        let first = json!(dialog.body(&d, None, 10, false, &ids));
        let second = json!(dialog.body(&d, None, 10, false, &ids));
        assert_ne!(
            first["command_id"], second["command_id"],
            "each confirmation is new"
        );
        assert_eq!(first["disposition"], "committed");
        assert_eq!(first["evidence"]["reference"], "PO-4500");
        assert_eq!(first["reason"], "found it in the ERP");
        assert!(first.get("dry_run").is_none());
    }

    #[test]
    fn a_pause_from_a_final_intent_needs_a_chosen_scope_and_stays_inside_the_tokens_tenants() {
        let i18n = Localizer::new(Locale::EnUs);
        let d = detail("committed");
        let mut dialog = CommandDialog::new(CommandKind::Pause, &d);
        dialog.reason = "incident".into();
        assert_eq!(dialog.target(&d, None), None);
        assert_eq!(
            dialog.missing(&i18n, &d, None),
            Some(i18n.tr("dialog-needs-scope"))
        );
        dialog.scope = ScopeChoice::Tool;
        let limited = who("engineer", Some(vec!["acme".into()]));
        assert_eq!(
            json!(dialog.target(&d, Some(&limited))),
            json!({"scope": {"tool": "erp.po", "tenant": "acme"}})
        );
        assert_eq!(
            json!(dialog.target(&d, None)),
            json!({"scope": {"tool": "erp.po"}})
        );
    }
}
