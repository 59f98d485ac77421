//! The intent view's state: the tab shown, the timeline's zoom and selection, the laid-out
//! timeline and ledger of the open intent (rebuilt only when the detail changes), what the
//! coordinator says the token may do, the open command dialog, the last command's outcome
//! and the export dialog. Answers from the worker arrive through
//! [`IntentViewState::on_whoami`] and [`IntentViewState::on_command`].

use serde_json::Value;

use super::command_dialog::{CommandDialog, SendState};
use super::ledger::Ledger;
use super::timeline::{TimelineModel, TimelineView};
use crate::client::ClientError;
use crate::console::export::ExportState;
use crate::console::model::IntentDetail;
use crate::wire::{CommandBody, Whoami};

/// The tabs of the intent view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IntentTab {
    #[default]
    Timeline,
    Envelope,
    Ledger,
    Audit,
}

/// What the coordinator says the console's token is.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum WhoState {
    #[default]
    NotAsked,
    Asking,
    Known(Whoami),
    /// The coordinator did not say (an older one without `/v1/whoami`, or unreachable):
    /// every command is offered and the coordinator decides. `retry` when it was unreachable.
    Unknown {
        why: String,
        retry: bool,
    },
}

/// The outcome of the last confirmed command, shown above the tabs.
#[derive(Debug, Clone, PartialEq)]
pub struct CommandOutcome {
    pub body: CommandBody,
    pub result: Result<Value, ClientError>,
}

/// The timeline and ledger of one version of one intent's detail.
#[derive(Debug)]
pub struct Laid {
    key: (String, u64, usize, usize, usize, usize, Option<u64>),
    pub model: TimelineModel,
    pub ledger: Ledger,
}

/// What the intent view keeps between frames.
#[derive(Debug, Default)]
pub struct IntentViewState {
    pub tab: IntentTab,
    pub timeline: TimelineView,
    laid: Option<Laid>,
    pub who: WhoState,
    /// When the coordinator was last asked who the token is.
    pub who_asked_at: Option<std::time::Instant>,
    pub dialog: Option<CommandDialog>,
    pub last: Option<CommandOutcome>,
    pub show_dry_runs: bool,
    pub export: ExportState,
}

impl IntentViewState {
    /// What the coordinator said the token is.
    pub fn on_whoami(&mut self, result: Result<Whoami, ClientError>) {
        self.who = match result {
            Ok(who) => WhoState::Known(who),
            Err(e) => WhoState::Unknown {
                retry: matches!(e, ClientError::Unreachable { .. }),
                why: e.to_string(),
            },
        };
    }

    /// The answer to a command this view sent; true when the open intent should refresh.
    pub fn on_command(&mut self, body: &CommandBody, result: Result<Value, ClientError>) -> bool {
        let dry_run = body.dry_run;
        if let Some(dialog) = self.dialog.as_mut()
            && dialog.on_answer(body, &result)
        {
            if dry_run {
                return false;
            }
            let state = dialog.sent.as_ref().map(|s| s.state.clone());
            match state {
                Some(SendState::Applied(_)) => {
                    self.dialog = None;
                }
                Some(SendState::Failed(_)) => {
                    self.last = Some(CommandOutcome {
                        body: body.clone(),
                        result,
                    });
                    return false;
                }
                _ => {}
            }
        }
        if dry_run {
            return false;
        }
        // Applied or refused, the coordinator recorded it: the intent and its audit changed.
        let recorded = !matches!(
            result,
            Err(ClientError::Unreachable { .. }
                | ClientError::BadResponse(_)
                | ClientError::TooLarge { .. })
        );
        self.last = Some(CommandOutcome {
            body: body.clone(),
            result,
        });
        recorded
    }

    /// Whether to ask the coordinator who the token is now: once, and again a while after
    /// an answer that said nothing (the coordinator may have been away).
    pub fn should_ask_who(&self) -> bool {
        match &self.who {
            WhoState::NotAsked => true,
            WhoState::Unknown { retry, .. } => {
                *retry
                    && self
                        .who_asked_at
                        .is_none_or(|at| at.elapsed() > std::time::Duration::from_secs(15))
            }
            WhoState::Asking | WhoState::Known(_) => false,
        }
    }

    /// What the coordinator said about the token, once known.
    pub fn whoami(&self) -> Option<&Whoami> {
        match &self.who {
            WhoState::Known(w) => Some(w),
            _ => None,
        }
    }

    /// Whether the view wants Escape for itself (to close a dialog, not the intent).
    pub fn captures_escape(&self) -> bool {
        self.dialog.is_some() || self.export.dialog.is_some()
    }

    /// The laid-out timeline of `detail` and the timeline's view state, borrowed together.
    pub fn timeline_parts(
        &mut self,
        detail: &IntentDetail,
        now_ms: u64,
    ) -> (&TimelineModel, &mut TimelineView) {
        let laid = lay(&mut self.laid, detail, now_ms);
        (&laid.model, &mut self.timeline)
    }

    /// The timeline and ledger of `detail`, laid out again only when the detail changed;
    /// attempts still running grow to `now_ms`.
    pub fn laid(&mut self, detail: &IntentDetail, now_ms: u64) -> &Laid {
        lay(&mut self.laid, detail, now_ms)
    }
}

fn lay<'a>(slot: &'a mut Option<Laid>, detail: &IntentDetail, now_ms: u64) -> &'a mut Laid {
    let key = (
        detail.intent.id.to_string(),
        detail.intent.updated_at_ms,
        detail.attempts.len(),
        detail.receipts.len(),
        detail.transitions.len(),
        detail.commands.len(),
        // The connector's retention now: the ledger warns when it differs.
        detail.live_key_retention_secs,
    );
    let laid = match slot.take() {
        Some(laid) if laid.key == key => laid,
        _ => Laid {
            key,
            model: TimelineModel::build(detail, now_ms),
            ledger: Ledger::build(detail, now_ms),
        },
    };
    let laid = slot.insert(laid);
    laid.model.advance_now(now_ms);
    laid
}
