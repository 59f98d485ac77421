//! Whether an operator command may be started on an intent now — the token's role and
//! the intent's state decide — and if not, why, in words the disabled button shows.

use crate::console::model::IntentDetail;
use crate::domain::{CommandKind, IntentState, Role};
use crate::i18n::Localizer;
use crate::wire::Whoami;

/// Whether a command may be started, and if not, why (in words).
pub fn availability(
    i18n: &Localizer,
    kind: CommandKind,
    detail: &IntentDetail,
    who: Option<&Whoami>,
) -> Result<(), String> {
    let role = who.map(|w| w.role);
    if let Some(role) = role
        && !role.may(Role::permission_for(kind))
    {
        let key = match kind {
            CommandKind::Pause | CommandKind::Resume => "intent-disabled-pause-role",
            CommandKind::Reconcile => "intent-disabled-reconcile-role",
            CommandKind::Close => "intent-disabled-close-role",
            CommandKind::Cancel => "intent-disabled-cancel-role",
        };
        return Err(i18n.tr_args(key, &[("role", role.as_str().into())]));
    }
    let state = detail.intent.state.known();
    let state_words = || i18n.tr(&format!("state-{}", detail.intent.state.wire()));
    match kind {
        CommandKind::Pause => Ok(()),
        CommandKind::Resume if detail.pauses.is_empty() => {
            Err(i18n.tr("intent-disabled-resume-none"))
        }
        CommandKind::Resume => Ok(()),
        CommandKind::Reconcile if state != Some(IntentState::Indeterminate) => Err(i18n.tr_args(
            "intent-disabled-reconcile-state",
            &[("state", state_words().into())],
        )),
        CommandKind::Reconcile => Ok(()),
        CommandKind::Close if state.is_some_and(IntentState::is_terminal) => Err(i18n.tr_args(
            "intent-disabled-close-final",
            &[("state", state_words().into())],
        )),
        CommandKind::Close => Ok(()),
        CommandKind::Cancel if state.is_some_and(IntentState::is_terminal) => Err(i18n.tr_args(
            "intent-disabled-cancel-final",
            &[("state", state_words().into())],
        )),
        CommandKind::Cancel if detail.intent.cancel_requested_at_ms.is_some() => {
            Err(i18n.tr("intent-disabled-cancel-requested"))
        }
        CommandKind::Cancel => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::console::views::command_dialog::fixtures::{detail, who};
    use crate::domain::Locale;

    #[test]
    fn the_role_and_the_state_decide_what_is_offered_and_say_why() {
        let i18n = Localizer::new(Locale::EnUs);
        let open = detail("indeterminate");
        let sup = who("supervisor", None);
        let pause = availability(&i18n, CommandKind::Pause, &open, Some(&sup));
        assert!(pause.expect_err("no pause").contains("supervisor"));
        assert!(availability(&i18n, CommandKind::Reconcile, &open, Some(&sup)).is_ok());
        let done = detail("committed");
        let why = availability(&i18n, CommandKind::Close, &done, Some(&sup)).expect_err("final");
        assert!(why.contains("final"), "{why}");
        assert!(availability(&i18n, CommandKind::Reconcile, &done, None).is_err());
        assert!(
            availability(&i18n, CommandKind::Pause, &open, None).is_ok(),
            "an unknown role is left to the coordinator"
        );
    }
}
