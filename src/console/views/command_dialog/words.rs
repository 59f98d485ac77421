//! A command's target and a coordinator's refusal, said in words.

use crate::client::ClientError;
use crate::i18n::Localizer;
use crate::wire::TargetBody;

/// A command's target in words: "this intent" or the scope's fields.
pub fn describe_target(i18n: &Localizer, target: Option<&TargetBody>) -> String {
    let Some(target) = target else {
        return i18n.tr("dialog-target-unchosen");
    };
    if let Some(id) = &target.intent_id {
        return i18n.tr_args(
            "dialog-target-intent",
            &[("intent", crate::i18n::bidi::isolate_ltr(id).into())],
        );
    }
    let scope = target.scope.clone().unwrap_or_default();
    let parts: Vec<String> = [
        ("tenant", &scope.tenant),
        ("provider", &scope.provider),
        ("tool", &scope.tool),
        ("operation", &scope.operation),
    ]
    .iter()
    .filter_map(|(k, v)| {
        v.as_ref()
            .map(|v| format!("{k}={}", crate::console::views::format::isolate(i18n, v)))
    })
    .collect();
    let scope = if parts.is_empty() {
        i18n.tr("dialog-target-everything")
    } else {
        parts.join(", ")
    };
    i18n.tr_args("dialog-target-scope", &[("scope", scope.into())])
}

/// An error in words an operator can act on; a refusal carries the coordinator's reason.
pub fn describe_error(i18n: &Localizer, e: &ClientError) -> String {
    match e {
        ClientError::Refused { code, message, .. } if code == "release_not_eligible" => i18n
            .tr_args(
                "error-release-not-eligible",
                &[("detail", message.as_str().into())],
            ),
        ClientError::Refused { message, .. } if !message.is_empty() => message.clone(),
        ClientError::Forbidden(message) => i18n.tr_args(
            "dialog-error-forbidden",
            &[("detail", message.as_str().into())],
        ),
        ClientError::Unauthorized => i18n.tr("error-unauthorized"),
        other => other.to_string(),
    }
}
