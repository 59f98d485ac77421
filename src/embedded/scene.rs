//! The demo's opening scene, set once per database when the embedded default starts, so
//! that the first minute shows what intentdesk is for rather than a quiet dashboard:
//!
//! - **An unprovable payment.** A Persian employee's payment to ACME-IR goes to the
//!   `legacy-erp` connector, a downstream that cannot look keys up and whose first
//!   response is lost after it commits. The intent stays indeterminate, never "failed",
//!   until an operator reconciles it against the ERP or closes it with evidence.
//! - **A paused scope.** Northwind's payments are paused for a bank's settlement window, so
//!   they wait visibly instead of being sent.
//!
//! Both are sent under fixed keys (the caller key, the command id): starting the demo again
//! over the same database replays them instead of adding new ones, and an operator's resume
//! or close from an earlier run stands.

use std::time::Duration;

use anyhow::Context;
use serde_json::json;

use crate::client::Client;
use crate::client::ingest::{Answer, Created, IngestClient};
use crate::domain::{ConsequenceTier, Locale};
use crate::wire::CreateIntent;
use crate::workload::generator::LEGACY_CONNECTOR;

/// The caller key of the scene's payment.
pub const STORY_KEY: &str = "demo-scene-payment-acme-ir";
/// The purpose its employee typed.
pub const STORY_PURPOSE: &str = "پرداخت ۳۵٫۵ میلیون ریال به تأمین‌کننده ACME-IR در ۱۴۰۵/۰۹/۱۰";

/// The command id of the scene's pause: one id for every run.
pub const PAUSE_COMMAND_ID: &str = "demo-scene-pause-northwind-payments";

/// Sets the scene on the coordinator at `coordinator`, waiting (within `patience`) for it
/// to start listening: the agent creates and sends the payment, the approver approves it,
/// the admin pauses.
pub async fn stage(
    coordinator: &str,
    tokens: &super::Tokens,
    patience: Duration,
) -> anyhow::Result<()> {
    let agent = IngestClient::new(
        coordinator.parse().context("the coordinator's address")?,
        &tokens.agent,
        Duration::from_secs(10),
        patience,
        0x5ce4e,
    )?
    .with_approver(&tokens.approver);
    let payment = CreateIntent {
        tenant: "pars-trading".into(),
        actor: "agent:kharid-bot".into(),
        purpose: STORY_PURPOSE.into(),
        operation: "payment.initiate".into(),
        tool: "erp.payments".into(),
        consequence: ConsequenceTier::Financial,
        args: json!({
            "supplier": "ACME-IR",
            "amount": "۳۵٬۵۰۰٬۰۰۰",
            "currency": "IRR",
            "invoice": "INV-1405-0910",
            "note": "پرداخت فاکتور کاغذ A4",
        }),
        deadline_secs: 3_600,
        max_attempts: 3,
        release_id: "procure-agent@2.4.0".into(),
        locale: Locale::FaIr,
        connector: LEGACY_CONNECTOR.into(),
        workflow_id: None,
        parent_intent_id: None,
        supersedes: None,
    };
    // On a replay (a later start over the same database) the two steps are asked again: an
    // earlier run may have stopped between them. Both are idempotent; a refusal says the
    // intent has moved on, which is the operator's business now.
    let paid = async {
        let intent = match agent.create(STORY_KEY, &payment).await? {
            Created::New(intent) | Created::Replayed(intent) => intent,
            Created::Mismatch => anyhow::bail!("{STORY_KEY} names another payment"),
        };
        if intent.state == crate::domain::IntentState::Prepared
            && let Answer::Refused { code } = agent.authorize(&intent.id, None).await?
        {
            tracing::debug!(%code, "the scene's payment was not authorized");
        }
        if let Answer::Refused { code } = agent.dispatch(&intent.id).await? {
            tracing::debug!(%code, "the scene's payment was not dispatched again");
        }
        anyhow::Ok(())
    }
    .await;

    let operator = Client::new(coordinator, &tokens.admin)?;
    let pause = json!({
        "command_id": PAUSE_COMMAND_ID,
        "kind": "pause",
        "target": {"scope": {"tenant": "northwind", "operation": "payment.initiate"}},
        "reason": "Bank settlement window closed: Northwind's payments wait until it reopens (ticket OPS-4411)",
    });
    let paused = operator.command(&pause).await;
    paid?;
    paused?;
    Ok(())
}
