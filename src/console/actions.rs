//! What a view asks of the app while it draws. A view changes its own state (its struct)
//! itself; everything else it wants it puts on [`Actions`]: a user command
//! ([`ConsoleCommand`]), queued like a shortcut's for the start of the next frame, or a
//! [`UiAction`] — a body sent to the coordinator, a file written, a notice dismissed —
//! which the app applies as soon as the frame is drawn.

use std::path::PathBuf;

use super::commands::ConsoleCommand;
use super::export::ExportKind;
use crate::wire::CommandBody;

/// One thing a view asked for besides a user command.
#[derive(Debug, Clone, PartialEq)]
pub enum UiAction {
    /// Send the command dialog's body (a dry run or a confirmed command).
    SendCommand(Box<CommandBody>),
    /// Write the export dialog's file to `path`.
    Export { kind: ExportKind, path: PathBuf },
    /// The operator closed the notice under the top bar.
    DismissNotice,
    /// The operator acknowledged the gate-revisit events up to this one.
    AcknowledgeRevisits { up_to_seq: u64 },
}

/// What the views of one frame asked for, each kind in the order asked.
#[derive(Debug, Default)]
pub struct Actions {
    commands: Vec<ConsoleCommand>,
    asked: Vec<UiAction>,
}

impl Actions {
    /// Ask for a user command.
    pub fn command(&mut self, command: ConsoleCommand) {
        self.commands.push(command);
    }

    pub fn push(&mut self, action: UiAction) {
        self.asked.push(action);
    }

    /// The user commands and the other actions asked for.
    pub fn into_parts(self) -> (Vec<ConsoleCommand>, Vec<UiAction>) {
        (self.commands, self.asked)
    }
}
