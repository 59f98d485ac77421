//! The operator commands of the intent view: pause, resume, reconcile now, close. Each opens
//! a confirmation that says in plain words what will and will not happen; pause and resume
//! first show, by a dry run, the exact set of open intents they would cover.
//!
//! The command id is generated when the operator confirms and stays with that body: the
//! worker resends the same body when the network fails, and "Send again" does too, so the
//! coordinator applies it at most once. Any change to the form makes a new command.
//!
//! Whether a command is possible (role, state) is decided here, with the reason in words,
//! so the buttons can be disabled and say why.
//!
//! [`dialog`] holds one dialog's data and builds its bodies, [`allowed`] decides what may be
//! started, [`words`] says targets and errors, [`ui`] draws the dialog.

pub mod allowed;
pub mod dialog;
pub mod ui;
pub mod words;

pub use allowed::availability;
pub use dialog::{Closing, CommandDialog, DialogAction, DryRun, ScopeChoice, SendState, Sent};
pub use ui::command_dialog_ui;
pub use words::{describe_error, describe_target};

/// What the tests of [`allowed`] and [`dialog`] open a dialog on.
#[cfg(test)]
mod fixtures {
    use serde_json::json;

    use crate::console::model::IntentDetail;
    use crate::wire::Whoami;

    /// An intent of tenant `acme` in `state`.
    pub fn detail(state: &str) -> IntentDetail {
        serde_json::from_value(json!({
            "intent": {"id": "int_01kbx7q3p9d2m8v4r6t0y5zs01", "tenant": "acme", "operation": "purchase_order.create",
                       "tool": "erp.po", "state": state, "created_at_ms": 1, "connector": "erp",
                       "consequence": "write", "action_key": "po:acme:int_01kbx7q3p9d2m8v4r6t0y5zs01"},
        }))
        .expect("detail")
    }

    /// A principal named `sam` of `role` in `tenants`.
    pub fn who(role: &str, tenants: Option<Vec<String>>) -> Whoami {
        Whoami {
            name: "sam".into(),
            role: role.parse().expect("role"),
            tenants,
            connectors: Vec::new(),
            may: Default::default(),
        }
    }
}
