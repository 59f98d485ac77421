//! The ingest API agents call: create an intent under their key, authorize it, report
//! non-mutating attempts, dispatch, and the downstream's receipt webhooks.

use std::collections::BTreeMap;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{patch, post};
use axum::{Json, Router};

use super::AppState;
use super::auth::Principal;
use super::body::{parse_body, parse_body_with};
use super::core::ingest::policy_refused;
use super::core::{self, revisit};
use super::error::ApiError;
use crate::domain::canonical::{MAX_ARGS_BYTES, canonicalize};
use crate::domain::policy::{Request as PolicyRequest, tier_attempt_cap};
use crate::domain::{
    ActionKey, AttemptId, AttemptKind, AttemptOutcome, CommandId, CommandKind, ErrorClass, Event,
    IntentId, Permission, ReceiptId, Role, Tenant,
};
use crate::store::ops::*;
use crate::store::{
    ApplyContext, AttemptFinish, CommandAction, CreateOutcome, LinkRefusal, Links, NewCommand,
    NewIntent, ReceiptSource, RecordedCommand, ReportedFinish, StoreError, search_form,
};
use crate::wire::{
    AttemptReport, Authorize, CancelIntent, CreateIntent, Dispatched, NewAttempt, ReceiptDelivery,
};

/// The longest caller key accepted.
pub const MAX_CALLER_KEY: usize = 200;
/// Deadlines are at most a week away.
pub const MAX_DEADLINE_SECS: u64 = 7 * 24 * 3600;
/// An authorisation lasts at most a year.
pub const MAX_APPROVAL_SECS: u64 = 365 * 24 * 3600;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/v1/intents", post(create_intent))
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
fn check_text(fields: &mut BTreeMap<String, String>, name: &str, value: &str, max: usize) {
    if let Err(problem) = crate::domain::text::check_text(value, max, true, false) {
        fields.insert(name.to_string(), problem.to_string());
    }
}

async fn create_intent(
    State(state): State<AppState>,
    principal: Principal,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Result<Response, ApiError> {
    principal.require(Permission::Ingest, "create intents")?;
    let caller_key = headers
        .get("idempotency-key")
        .ok_or_else(|| {
            ApiError::fields(BTreeMap::from([(
                "Idempotency-Key".into(),
                "this header is required".into(),
            )]))
        })?
        .to_str()
        .map_err(|_| {
            ApiError::fields(BTreeMap::from([(
                "Idempotency-Key".into(),
                "must be visible ASCII".into(),
            )]))
        })?
        .trim()
        .to_string();
    if caller_key.is_empty() || caller_key.len() > MAX_CALLER_KEY {
        return Err(ApiError::fields(BTreeMap::from([(
            "Idempotency-Key".into(),
            format!("must be 1 to {MAX_CALLER_KEY} characters"),
        )])));
    }
    let req: CreateIntent = parse_body_with(&body, |field| field == "args")?;
    let mut fields = BTreeMap::new();
    let tenant: Option<Tenant> = match req.tenant.parse() {
        Ok(t) => Some(t),
        Err(e) => {
            fields.insert("tenant".into(), format!("{e}"));
            None
        }
    };
    check_text(&mut fields, "actor", &req.actor, 200);
    check_text(&mut fields, "purpose", &req.purpose, 2000);
    check_text(&mut fields, "operation", &req.operation, 100);
    check_text(&mut fields, "tool", &req.tool, 100);
    check_text(&mut fields, "release_id", &req.release_id, 100);
    let (tier, locale) = (req.consequence, req.locale);
    if req.deadline_secs == 0 || req.deadline_secs > MAX_DEADLINE_SECS {
        fields.insert(
            "deadline_secs".into(),
            format!("must be between 1 and {MAX_DEADLINE_SECS}"),
        );
    }
    let attempt_cap = tier_attempt_cap(tier);
    if req.max_attempts == 0 || req.max_attempts > attempt_cap {
        fields.insert(
            "max_attempts".into(),
            format!("must be between 1 and {attempt_cap} for {tier} work"),
        );
    }
    let connector_name = req.connector.clone();
    check_text(&mut fields, "connector", &connector_name, 100);
    let connector = state.config.connector(&connector_name);
    if tier.is_mutating() {
        match connector {
            None => {
                fields.insert(
                    "connector".into(),
                    format!("no connector named `{connector_name}` is configured"),
                );
            }
            Some(c) if !c.operations.contains_key(&req.operation) => {
                let known: Vec<&str> = c.operations.keys().map(String::as_str).collect();
                fields.insert(
                    "operation".into(),
                    format!(
                        "connector `{}` has no resource for `{}`; known: {}",
                        c.name,
                        req.operation,
                        known.join(", ")
                    ),
                );
            }
            Some(_) => {}
        }
    }
    let args_text = req.args.to_string();
    if args_text.len() > MAX_ARGS_BYTES {
        fields.insert(
            "args".into(),
            format!(
                "is {} bytes; the limit is {MAX_ARGS_BYTES}",
                args_text.len()
            ),
        );
    }
    let canonical = match canonicalize(&req.args) {
        Ok(c) => Some(c),
        Err(e) => {
            fields.entry("args".into()).or_insert_with(|| e.to_string());
            None
        }
    };
    let links = check_links(&mut fields, &req);
    let (Some(tenant), Some(canonical), true) = (tenant, canonical, fields.is_empty()) else {
        return Err(ApiError::fields(fields));
    };
    if !principal.sees(tenant.as_str()) {
        return Err(ApiError::forbidden(&format!(
            "create intents for tenant `{tenant}`"
        )));
    }
    // An operation with a release registry acts only through the releases it lists.
    state
        .config
        .releases
        .check(req.operation.trim(), req.release_id.trim())?;

    // The tenant's policy judges the canonical arguments; its refusal is decided by the
    // store only once the key is known new, so a key created before a policy change still
    // replays.
    let refused = match state.config.policy(tenant.as_str()) {
        None => None,
        Some(policy) => {
            let args: serde_json::Value =
                serde_json::from_str(&canonical.json).map_err(|_| ApiError::internal())?;
            policy
                .check(&PolicyRequest {
                    operation: req.operation.trim(),
                    connector: &connector_name,
                    tier,
                    max_attempts: req.max_attempts,
                    args: &args,
                })
                .err()
                .map(|refusal| refusal.to_string())
        }
    };

    // No in-flight guard: the store's key decides. The single writer (a unique index under
    // PostgreSQL) orders concurrent first requests with one key, so the first creates and
    // every other answers its result, and nothing can stick when a client hangs up.
    let now = state.clock.now_ms();
    let new = NewIntent {
        id: IntentId::generate(now, state.entropy.next_u128()),
        tenant: tenant.clone(),
        caller_key,
        principal: principal.name.clone(),
        actor: req.actor.trim().to_string(),
        purpose: req.purpose.trim().to_string(),
        operation: req.operation.trim().to_string(),
        tool: req.tool.trim().to_string(),
        tier,
        // As written and in canonical form, so an amount typed `۳۵٬۵۰۰٬۰۰۰` is found as
        // `35500000` too.
        search_text: search_form(&format!("{args_text}\n{}", canonical.json)),
        args_json: args_text,
        canonical_json: canonical.json,
        args_hash: canonical.hash,
        release_id: req.release_id.trim().to_string(),
        locale,
        connector: connector_name,
        max_attempts: req.max_attempts,
        created_at_ms: now,
        deadline_at_ms: now + req.deadline_secs * 1000,
        key_retention_secs: connector.map(|c| c.key_retention_secs),
        refused,
        links,
    };
    let supersedes = new.links.supersedes.is_some();
    let notice = state.cancel_notice();
    let outcome = state
        .db
        .ingest(move |s| {
            if supersedes {
                // A correction cancels the intent it replaces.
                notice();
            }
            s.create_or_replay(&new)
        })
        .await;
    state.events_wake.notify_waiters();
    match outcome? {
        CreateOutcome::Created(intent) => {
            tracing::debug!(intent = %intent.id, action_key = %intent.action_key, "intent created");
            let named = vec![
                revisit::release(&intent.release_id),
                revisit::tool(&intent.tool, intent.consequence),
            ];
            super::revisit::sighted(&state, intent.tenant.as_str(), named).await;
            Ok((StatusCode::CREATED, Json(intent)).into_response())
        }
        CreateOutcome::Replayed(intent) => Ok((
            StatusCode::OK,
            [("Idempotent-Replayed", "true")],
            Json(intent),
        )
            .into_response()),
        CreateOutcome::Refused(why) => Err(policy_refused(&why)),
        CreateOutcome::Link(refusal) => Err(link_refused(refusal)),
        CreateOutcome::Mismatch { intent_id, differs } => {
            // The same principal's key in another tenant: which intent is not said, as the
            // token may no longer see that tenant.
            let named = if differs == "tenant" {
                "an intent of another tenant".to_string()
            } else {
                format!("intent {intent_id} with a different {differs}")
            };
            Err(ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "idempotency_key_mismatch",
                format!(
                    "this Idempotency-Key already names {named}; a changed order needs a new key"
                ),
            ))
        }
    }
}

/// The longest workflow id.
pub const MAX_WORKFLOW_CHARS: usize = 200;

/// Check the links a new intent names; ids are checked against the tenant by the store.
fn check_links(fields: &mut BTreeMap<String, String>, req: &CreateIntent) -> Links {
    if let Some(workflow) = &req.workflow_id {
        check_text(fields, "workflow_id", workflow, MAX_WORKFLOW_CHARS);
    }
    let mut id = |name: &str, raw: &Option<String>| -> Option<IntentId> {
        let raw = raw.as_deref()?;
        match raw.parse::<IntentId>() {
            Ok(id) if id.as_str() == raw => Some(id),
            Ok(id) => {
                fields.insert(name.into(), format!("write the id exactly as issued: {id}"));
                None
            }
            Err(e) => {
                fields.insert(name.into(), e.to_string());
                None
            }
        }
    };
    Links {
        parent_intent_id: id("parent_intent_id", &req.parent_intent_id),
        supersedes: id("supersedes", &req.supersedes),
        workflow_id: req.workflow_id.as_deref().map(|w| w.trim().to_string()),
    }
}

/// The answer to a link the store refused: 404 for an intent the tenant does not have (the
/// same whether it exists elsewhere), 409 for one that cannot be superseded now.
fn link_refused(refusal: LinkRefusal) -> ApiError {
    let message = refusal.to_string();
    let (status, code, field) = match &refusal {
        LinkRefusal::Unknown { field, .. } => (StatusCode::NOT_FOUND, "not_found", *field),
        LinkRefusal::AlreadySuperseded { .. } => {
            (StatusCode::CONFLICT, "already_superseded", "supersedes")
        }
        LinkRefusal::StillOpen { .. } => (StatusCode::CONFLICT, "supersedes_open", "supersedes"),
        LinkRefusal::NotOwner { .. } => (StatusCode::FORBIDDEN, "not_owner", "supersedes"),
    };
    let mut error = ApiError::new(status, code, message.clone());
    error.fields.insert(field.to_string(), message);
    error
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
