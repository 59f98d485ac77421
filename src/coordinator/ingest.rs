//! The ingest API agents call once an intent exists (its creation is [`super::create`]):
//! authorize it, report non-mutating attempts, dispatch, cancel, and the downstream's
//! receipt webhooks.

use std::collections::BTreeMap;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{patch, post};
use axum::{Json, Router};

use super::AppState;
use super::auth::Principal;
use super::body::{parse_body, parse_body_with};
use super::core::{self, revisit};
use super::error::ApiError;
use crate::domain::canonical::canonicalize;
use crate::domain::{
    ActionKey, AttemptId, AttemptKind, AttemptOutcome, CommandId, CommandKind, ErrorClass, Event,
    IntentId, Permission, ReceiptId, Role,
};
use crate::store::ops::*;
use crate::store::{
    ApplyContext, AttemptFinish, CommandAction, NewCommand, ReceiptSource, RecordedCommand,
    ReportedFinish, StoreError,
};
use crate::wire::{
    AttemptReport, Authorize, CancelIntent, Dispatched, NewAttempt, ReceiptDelivery,
};

/// An authorisation lasts at most a year.
pub const MAX_APPROVAL_SECS: u64 = 365 * 24 * 3600;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/v1/intents/{id}/authorize", post(authorize))
        .route("/v1/intents/{id}/attempts", post(report_attempt))
        .route(
            "/v1/intents/{id}/attempts/{attempt_id}",
            patch(finish_attempt),
        )
        .route("/v1/intents/{id}/dispatch", post(dispatch))
        .route("/v1/intents/{id}/cancel", post(cancel))
        .route("/v1/receipts/{connector}", post(receipt_webhook))
}

pub fn parse_id<T: std::str::FromStr<Err = crate::domain::IdError>>(
    raw: &str,
    what: &str,
) -> Result<T, ApiError> {
    raw.parse().map_err(|e: crate::domain::IdError| {
        ApiError::fields(BTreeMap::from([(what.to_string(), e.to_string())]))
    })
}

/// Check a required one-line text field (see `crate::domain::text`).
pub(super) fn check_text(
    fields: &mut BTreeMap<String, String>,
    name: &str,
    value: &str,
    max: usize,
) {
    if let Err(problem) = crate::domain::text::check_text(value, max, true, false) {
        fields.insert(name.to_string(), problem.to_string());
    }
}

/// `POST /v1/intents/{id}/cancel`: the owner's cancellation (the agent whose key created
/// the intent; an admin too). Before anything crossed the action boundary the intent is
/// `cancelled` (200); after, the cancellation is requested and the intent waits for
/// evidence (202). A repeat once cancelled or requested answers the intent as it stands and
/// stores nothing (200, `Idempotent-Replayed: true`); a cancel of an intent that ended
/// otherwise is 409. Recorded in the audit trail as a `cancel` command of its principal.
async fn cancel(
    State(state): State<AppState>,
    principal: Principal,
    Path(raw_id): Path<String>,
    body: axum::body::Bytes,
) -> Result<Response, ApiError> {
    principal.require(Permission::Ingest, "cancel intents")?;
    let req: CancelIntent = parse_body(&body)?;
    let reason = req.reason.trim().to_string();
    let mut fields = BTreeMap::new();
    check_text(&mut fields, "reason", &reason, 2000);
    if !fields.is_empty() {
        return Err(ApiError::fields(fields));
    }
    let (id, intent) = visible_intent_of(&state, &principal, &raw_id).await?;
    if principal.role != Role::Admin
        && intent.created_by.as_deref() != Some(principal.name.as_str())
    {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "not_owner",
            "only the agent whose key created an intent cancels it here; an operator cancels \
             it with the `cancel` command",
        ));
    }
    let settled = |intent: &crate::wire::Intent| {
        intent.state == crate::domain::IntentState::Cancelled
            || (intent.cancel_requested_at_ms.is_some() && !intent.state.is_terminal())
    };
    let replay = |intent: crate::wire::Intent| {
        (
            StatusCode::OK,
            [("Idempotent-Replayed", "true")],
            Json(intent),
        )
            .into_response()
    };
    if settled(&intent) {
        return Ok(replay(intent));
    }
    super::operator::commands::refuse_final_cancel(&intent)?;
    let now = state.clock.now_ms();
    let command_id = CommandId::generate(now, state.entropy.next_u128());
    let body = serde_json::json!({
        "command_id": command_id, "kind": "cancel", "target": {"intent_id": id}, "reason": reason,
    });
    let canonical = canonicalize(&body).map_err(|e| ApiError::bad_request(e.to_string()))?;
    let new = NewCommand {
        id: command_id,
        kind: CommandKind::Cancel,
        actor: principal.name.clone(),
        role: principal.role,
        body_hash: canonical.hash,
        body_json: body.to_string(),
        reason: Some(reason),
        dry_run: false,
        now_ms: now,
    };
    let tenants = principal.tenants.clone();
    let notice = state.cancel_notice();
    let (recorded, intent) = state
        .db
        .ingest(move |s| {
            notice();
            let recorded = s.run_command(
                &new,
                &CommandAction::Cancel { intent: id.clone() },
                tenants.as_deref(),
            )?;
            Ok((recorded, s.intent(&id)?))
        })
        .await?;
    state.events_wake.notify_waiters();
    state.reconcile_wake.notify_one();
    match recorded {
        RecordedCommand::Fresh(record) if record.status == "refused" => {
            // Another cancel came first: the intent as it stands.
            if settled(&intent) {
                return Ok(replay(intent));
            }
            let message = record
                .result
                .get("error")
                .and_then(serde_json::Value::as_str)
                .unwrap_or("the cancel was refused")
                .to_string();
            Err(ApiError::conflict("invalid_state", message))
        }
        _ => {
            let status = if intent.state == crate::domain::IntentState::Cancelled {
                StatusCode::OK
            } else {
                StatusCode::ACCEPTED
            };
            Ok((status, Json(intent)).into_response())
        }
    }
}

/// Load an intent's tenant and check the caller may see it (404 otherwise).
pub async fn visible_intent(
    state: &AppState,
    principal: &Principal,
    raw_id: &str,
) -> Result<IntentId, ApiError> {
    Ok(visible_intent_of(state, principal, raw_id).await?.0)
}

/// [`visible_intent`] with the intent as read whole.
async fn visible_intent_of(
    state: &AppState,
    principal: &Principal,
    raw_id: &str,
) -> Result<(IntentId, crate::wire::Intent), ApiError> {
    let id: IntentId = raw_id
        .parse()
        .map_err(|_| ApiError::not_found("intent", raw_id))?;
    let lookup = id.clone();
    let intent = state.db.read(move |s| s.intent(&lookup)).await?;
    principal.check_tenant(&intent.tenant, "intent", raw_id)?;
    Ok((id, intent))
}

/// Approve an intent: only a principal other than the one that created it, and never an
/// agent; under the tenant's policy in force, which judges the intent again and bounds how
/// long the approval lasts. An open intent already approved may be approved afresh (after
/// its approval lapsed or its policy changed).
async fn authorize(
    State(state): State<AppState>,
    principal: Principal,
    Path(raw_id): Path<String>,
    body: axum::body::Bytes,
) -> Result<Response, ApiError> {
    principal.require(Permission::Approve, "approve intents")?;
    let req: Authorize = parse_body(&body)?;
    let mut fields = BTreeMap::new();
    check_text(
        &mut fields,
        "authorization_version",
        &req.authorization_version,
        100,
    );
    if let Some(named) = &req.approver
        && named.trim() != principal.name
    {
        fields.insert(
            "approver".into(),
            format!(
                "the approver is the calling token's name (`{}`); leave it out or give that name",
                principal.name
            ),
        );
    }
    if let Some(version) = &req.policy_version {
        check_text(&mut fields, "policy_version", version, 100);
    }
    if req
        .valid_for_secs
        .is_some_and(|s| s == 0 || s > MAX_APPROVAL_SECS)
    {
        fields.insert(
            "valid_for_secs".into(),
            format!("must be between 1 and {MAX_APPROVAL_SECS}"),
        );
    }
    if !fields.is_empty() {
        return Err(ApiError::fields(fields));
    }
    let id: IntentId = raw_id
        .parse()
        .map_err(|_| ApiError::not_found("intent", &raw_id))?;
    let now = state.clock.now_ms();
    let config = state.config.clone();
    let approved = state
        .db
        .ingest(move |s| core::ingest::authorize(s, &config, &principal, &id, &req, now))
        .await??;
    state.events_wake.notify_waiters();
    if approved.again {
        // A fresh approval may free a retry that waited for it; a first one frees nothing.
        state.reconcile_wake.notify_one();
    }
    Ok(Json(approved.intent).into_response())
}

/// The longest provider, region, model, release, worker and hedge group names.
const MAX_NAME_CHARS: usize = 100;
/// The longest provider request id and proposal hash.
const MAX_REF_CHARS: usize = 200;
/// The most one attempt may be reported to cost, in millionths.
const MAX_COST_MICROS: u64 = 1_000_000_000_000_000;
/// The longest attempt detail.
const MAX_DETAIL_CHARS: usize = 2000;

/// Check optional text the way [`check_text`] checks required text.
fn check_optional(
    fields: &mut BTreeMap<String, String>,
    name: &str,
    value: Option<&str>,
    max: usize,
) {
    if let Some(value) = value {
        check_text(fields, name, value, max);
    }
}

fn check_new_attempt(req: &NewAttempt) -> Result<(), ApiError> {
    let mut fields = BTreeMap::new();
    check_text(&mut fields, "provider", &req.provider, MAX_NAME_CHARS);
    for (name, value) in [
        ("region", &req.region),
        ("model", &req.model),
        ("release_id", &req.release_id),
        ("worker", &req.worker),
        ("hedge_group", &req.hedge_group),
    ] {
        check_optional(&mut fields, name, value.as_deref(), MAX_NAME_CHARS);
    }
    for (name, value) in [
        ("provider_request_id", &req.provider_request_id),
        ("proposal_hash", &req.proposal_hash),
    ] {
        check_optional(&mut fields, name, value.as_deref(), MAX_REF_CHARS);
    }
    match req.kind {
        Some(AttemptKind::Dispatch) => {
            fields.insert(
                "kind".into(),
                "mutating work is never reported; POST /v1/intents/{id}/dispatch".into(),
            );
        }
        Some(AttemptKind::Lookup) => {
            fields.insert(
                "kind".into(),
                "lookups are the coordinator's own; report retrieval, inference or proposal".into(),
            );
        }
        _ => {}
    }
    if fields.is_empty() {
        Ok(())
    } else {
        Err(ApiError::fields(fields))
    }
}

fn check_report(req: &AttemptReport) -> Result<(), ApiError> {
    let mut fields = BTreeMap::new();
    if req.outcome == AttemptOutcome::Pending {
        fields.insert(
            "outcome".into(),
            "a finished attempt has an outcome other than pending".into(),
        );
    }
    if let Some(class) = &req.error_class
        && !ErrorClass::NAMES.contains(&class.as_str())
    {
        fields.insert(
            "error_class".into(),
            format!("expected one of: {}", ErrorClass::NAMES.join(", ")),
        );
    }
    if req.http_status.is_some_and(|s| !(100..600).contains(&s)) {
        fields.insert("http_status".into(), "must be between 100 and 599".into());
    }
    if req.cost_micros.is_some_and(|c| c > MAX_COST_MICROS) {
        fields.insert(
            "cost_micros".into(),
            format!("must be at most {MAX_COST_MICROS} (a billion in the billing currency)"),
        );
    }
    for (name, value) in [
        ("provider_request_id", &req.provider_request_id),
        ("proposal_hash", &req.proposal_hash),
    ] {
        check_optional(&mut fields, name, value.as_deref(), MAX_REF_CHARS);
    }
    check_optional(
        &mut fields,
        "detail",
        req.detail.as_deref(),
        MAX_DETAIL_CHARS,
    );
    if fields.is_empty() {
        Ok(())
    } else {
        Err(ApiError::fields(fields))
    }
}

async fn report_attempt(
    State(state): State<AppState>,
    principal: Principal,
    Path(raw_id): Path<String>,
    body: axum::body::Bytes,
) -> Result<Response, ApiError> {
    principal.require(Permission::Ingest, "report attempts")?;
    let req: NewAttempt = parse_body(&body)?;
    check_new_attempt(&req)?;
    let (id, intent) = visible_intent_of(&state, &principal, &raw_id).await?;
    // A retry or a failover to another release is refused unless that release is eligible
    // for the operation; an intent's operation and release never change, so reading them
    // before the write decides the same as reading them in it.
    let release = req
        .release_id
        .as_deref()
        .map_or(intent.release_id.as_str(), str::trim);
    state.config.releases.check(&intent.operation, release)?;
    let tenant = intent.tenant;
    let now = state.clock.now_ms();
    let attempt_id = AttemptId::generate(now, state.entropy.next_u128());
    let reporter = principal.name.clone();
    let mut named = vec![revisit::provider(req.provider.trim())];
    named.extend(
        req.release_id
            .as_deref()
            .map(|r| revisit::release(r.trim())),
    );
    let attempt = state
        .db
        .ingest(move |s| s.record_attempt(&id, &attempt_id, &req, Some(&reporter), now))
        .await?;
    state.events_wake.notify_waiters();
    super::revisit::sighted(&state, tenant.as_str(), named).await;
    Ok((StatusCode::CREATED, Json(attempt)).into_response())
}

async fn finish_attempt(
    State(state): State<AppState>,
    principal: Principal,
    Path((raw_id, raw_attempt)): Path<(String, String)>,
    body: axum::body::Bytes,
) -> Result<Response, ApiError> {
    principal.require(Permission::Ingest, "report attempts")?;
    let req: AttemptReport = parse_body(&body)?;
    check_report(&req)?;
    let id = visible_intent(&state, &principal, &raw_id).await?;
    let attempt_id: AttemptId = raw_attempt
        .parse()
        .map_err(|_| ApiError::not_found("attempt", &raw_attempt))?;
    let now = state.clock.now_ms();
    let reporter = principal.name.clone();
    let entropy = state.entropy.clone();
    let result = state
        .db
        .ingest(move |s| {
            let finish = AttemptFinish::from(req.clone());
            let attempt =
                match s.finish_reported_attempt(&id, &attempt_id, &finish, &reporter, now)? {
                    ReportedFinish::Finished(attempt) => attempt,
                    // A retry of the same finish: it changed nothing the first time did not.
                    ReportedFinish::AlreadyEnded(attempt) => return Ok(attempt),
                };
            // For work that changes nothing outside, the first successful attempt is the
            // intent's one result; later ones (losing hedges) are late, not results.
            let intent = s.intent(&id)?;
            let succeeded = attempt.outcome == AttemptOutcome::Succeeded;
            if succeeded && !intent.consequence.is_mutating() && !intent.state.is_terminal() {
                let receipt = ReceiptSource {
                    receipt_id: ReceiptId::generate(now, entropy.next_u128()),
                    downstream_id: attempt
                        .provider_request_id
                        .clone()
                        .unwrap_or_else(|| attempt.id.to_string()),
                    source: "attempt",
                    event_id: None,
                };
                s.observe_receipt(&id, &receipt, now)?;
                if attempt.hedge_group.is_some() {
                    s.mark_losing_hedges(&id, &attempt.id, now)?;
                }
            } else if !succeeded
                && attempt.outcome != AttemptOutcome::Pending
                && !intent.consequence.is_mutating()
                && intent.state == crate::domain::IntentState::Executing
                && intent.attempts >= intent.max_attempts
            {
                // The last attempt the budget allowed failed and none is still running:
                // nothing more may be tried, so the intent stops, as the dispatcher stops a
                // mutating intent whose budget is spent.
                let running = s
                    .attempts_of(&id)?
                    .iter()
                    .any(|a| a.kind != AttemptKind::Lookup && a.outcome == AttemptOutcome::Pending);
                if !running {
                    let reason = crate::domain::GiveUpReason::BudgetSpent.to_string();
                    let ctx = ApplyContext {
                        now_ms: now,
                        ..ApplyContext::default()
                    };
                    s.apply(&id, &Event::Refused { reason }, &ctx)?;
                }
            }
            Ok(attempt)
        })
        .await?;
    state.events_wake.notify_waiters();
    Ok(Json(result).into_response())
}

async fn dispatch(
    State(state): State<AppState>,
    principal: Principal,
    Path(raw_id): Path<String>,
) -> Result<Response, ApiError> {
    principal.require(Permission::Ingest, "dispatch intents")?;
    let id: IntentId = raw_id
        .parse()
        .map_err(|_| ApiError::not_found("intent", &raw_id))?;
    let now = state.clock.now_ms();
    let attempt_id = AttemptId::generate(now, state.entropy.next_u128());
    let config = state.config.clone();
    // With a send slot free, the send this plans is claimed in the same write and leaves
    // from here; otherwise the dispatcher claims it. Cancellations requested before the
    // write is queued are the claim's gate's to see, as in the dispatcher.
    let slot = state.send_slots.take_for_planned();
    let cancels = state.cancels.load(std::sync::atomic::Ordering::Acquire);
    let claimant = slot
        .as_ref()
        .map(|_| (state.worker.clone(), state.clock.clone()));
    // The write and the hand-off of the send it claimed run in a task of their own: a
    // client that hangs up while its write is queued must not leave a claimed send unsent
    // until its lease runs out, to be looked up then instead of sent.
    let handing = {
        let state = state.clone();
        async move {
            let (fresh, intent, claim) = match state
                .db
                .ingest(move |s| {
                    let claimant = claimant
                        .as_ref()
                        .map(|(worker, clock)| (&**worker, clock.now_ms()));
                    core::ingest::dispatch_and_claim(
                        s,
                        &config,
                        &principal,
                        &id,
                        attempt_id.clone(),
                        now,
                        claimant,
                    )
                })
                .await?
            {
                Ok(done) => done,
                Err(refused) => return Ok(Err(refused)),
            };
            match (claim, slot) {
                (Some(claim), Some(slot)) if !claim.rows.is_empty() || !claim.held.is_empty() => {
                    super::dispatcher::take_planned(&state, claim, cancels, slot);
                }
                _ if fresh => state.dispatch_wake.notify_one(),
                _ => {}
            }
            Ok::<_, StoreError>(Ok((fresh, intent)))
        }
    };
    let (fresh, intent) = tokio::spawn(handing)
        .await
        .map_err(|_| ApiError::internal())???;
    state.events_wake.notify_waiters();
    let body = Dispatched {
        dispatched: fresh,
        intent,
    };
    Ok((StatusCode::ACCEPTED, Json(body)).into_response())
}

/// The one answer to a receipt for a key that is not the connector's: the same whether the
/// intent exists in another tenant, belongs to another connector, or does not exist.
fn no_such_key() -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "not_found",
        "no intent of this connector that this token may see has that action key",
    )
}

/// `POST /v1/receipts/{connector}`: only a connector token that speaks for `connector`, and
/// only for the stored action key of an intent of that connector in the token's tenants.
async fn receipt_webhook(
    State(state): State<AppState>,
    principal: Principal,
    Path(connector): Path<String>,
    body: axum::body::Bytes,
) -> Result<Response, ApiError> {
    principal.require(Permission::Receipt, "deliver receipts")?;
    if !principal.speaks_for(&connector) {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            format!(
                "this token does not speak for connector `{}`",
                connector.chars().take(60).collect::<String>()
            ),
        ));
    }
    if state.config.connector(&connector).is_none() {
        return Err(ApiError::not_found("connector", &connector));
    }
    // Fields a downstream adds besides the four it must send are its own.
    let known = ["event_id", "action_key", "downstream_id", "status"];
    let req: ReceiptDelivery = parse_body_with(&body, |field| !known.contains(&field))?;
    let mut fields = BTreeMap::new();
    check_text(&mut fields, "event_id", &req.event_id, 200);
    check_text(&mut fields, "downstream_id", &req.downstream_id, 200);
    if req.status.as_deref().is_some_and(|s| s != "created") {
        fields.insert(
            "status".into(),
            "only `created` receipts are understood".into(),
        );
    }
    let key: Option<ActionKey> = req.action_key.parse().ok();
    if key.is_none() {
        fields.insert(
            "action_key".into(),
            "not an action key of this coordinator".into(),
        );
    }
    let (Some(key), true) = (key, fields.is_empty()) else {
        return Err(ApiError::fields(fields));
    };
    let now = state.clock.now_ms();
    let source = ReceiptSource {
        receipt_id: ReceiptId::generate(now, state.entropy.next_u128()),
        downstream_id: req.downstream_id,
        source: "webhook",
        event_id: Some(req.event_id),
    };
    let tenants = principal.tenants.clone();
    let outcome = state
        .db
        .write(move |s| s.record_webhook(&connector, &key, tenants.as_deref(), &source, now))
        .await
        .map_err(|e| match e {
            StoreError::NotFound { .. } => no_such_key(),
            other => other.into(),
        })?;
    state.events_wake.notify_waiters();
    Ok(Json(outcome).into_response())
}
