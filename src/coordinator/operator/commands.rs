//! Operator commands (`POST /v1/commands`), the audit trail (`GET /v1/commands`) and a
//! scope command's frozen targets, paged (`GET /v1/commands/{id}/targets`): a record and its
//! event carry only `target_count`, so a command over a million open intents stays small.
//!
//! A command is recorded under its client-generated `command_id` together with the SHA-256
//! of the body's canonical JSON form, and executed in the same transaction. Sending the same
//! id with the same body again answers the first record (200, `Idempotent-Replayed: true`)
//! and does nothing; the same id with another body is 422 `command_id_mismatch`. A command
//! the state machine refuses is still recorded, as `refused`, and answers with the reason
//! first time and on every replay: 422 for a close without evidence, 409 for one the
//! intent's state does not allow.
//!
//! `reconcile` is recorded first (its target set frozen), then looks each target's action
//! key up (at most [`MAX_LOOKUPS`], a few at a time) and stores the per-intent results as
//! the command's final record. The lookups run in their own task, so a client that hangs up
//! does not cut them short; a replay answers the record as it then stands.
//!
//! Tenant scope: a tenant-limited token may only name a scope inside its tenants (else 403)
//! and only intents of its tenants (else 404); the store also limits the affected intents to
//! the caller's tenants. What the audit trail shows such a token is described in
//! `crate::store::operator_queries`.

use std::collections::BTreeMap;

use axum::extract::Path;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{Map, Value, json};
use tokio::task::JoinSet;

use super::params::{Params, RawQuery};
use crate::coordinator::AppState;
use crate::coordinator::auth::Principal;
use crate::coordinator::body::parse_body;
use crate::coordinator::error::ApiError;
use crate::coordinator::ingest::visible_intent;
use crate::coordinator::reconciler::{Trigger, reconcile_intent};
use crate::domain::canonical::canonicalize;
use crate::domain::{CommandId, CommandKind, Evidence, IntentId, Permission, Role, Tenant};
use crate::store::ops::*;
use crate::store::{CommandAction, MAX_PAGE, NewCommand, RecordedCommand, StoreError};
use crate::wire::{
    CommandBody, CommandRecord, CommandTarget, CommandTargets, PauseScope, ScopeBody,
};

/// A reconcile command looks up at most this many intents; the rest are left to the
/// reconciler's own sweep and counted in the result as `not_looked_up`.
pub const MAX_LOOKUPS: usize = 100;
/// Lookups of one reconcile command in flight at once.
const LOOKUP_CONCURRENCY: usize = 8;
/// The longest reason, and the longest evidence text.
const MAX_TEXT_CHARS: usize = 2000;
/// The longest scope value.
const MAX_SCOPE_CHARS: usize = 100;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/v1/commands", post(run_command).get(audit))
        .route("/v1/commands/{id}/targets", get(command_targets))
}

/// What a command is aimed at, once its body is checked.
enum Target {
    Intent(IntentId),
    Scope(PauseScope),
}

/// Check free text: within `max` characters, line breaks and tabs allowed (see
/// `crate::domain::text`).
fn check_text(fields: &mut BTreeMap<String, String>, name: &str, value: &str, max: usize) {
    if let Err(problem) = crate::domain::text::check_text(value, max, false, true) {
        fields.insert(name.to_string(), problem.to_string());
    }
}

/// Check everything that needs no store: required fields per kind, one target, sizes.
fn check_body(req: &CommandBody) -> Result<(Option<String>, Target), ApiError> {
    let mut fields = BTreeMap::new();
    let reason = req
        .reason
        .as_deref()
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .map(str::to_string);
    match &reason {
        Some(r) => check_text(&mut fields, "reason", r, MAX_TEXT_CHARS),
        None if matches!(
            req.kind,
            CommandKind::Pause | CommandKind::Close | CommandKind::Cancel
        ) =>
        {
            fields.insert("reason".into(), format!("a {} needs a reason", req.kind));
        }
        None => {}
    }
    if req.kind == CommandKind::Close {
        if req.disposition.is_none() {
            fields.insert(
                "disposition".into(),
                "a close needs a disposition: committed or cancelled".into(),
            );
        }
        if let Some(evidence) = &req.evidence {
            for (name, value) in [
                ("evidence.reference", &evidence.reference),
                ("evidence.note", &evidence.note),
            ] {
                if let Some(v) = value {
                    check_text(&mut fields, name, v, MAX_TEXT_CHARS);
                }
            }
        }
    } else {
        if req.disposition.is_some() {
            fields.insert(
                "disposition".into(),
                "only a close takes a disposition".into(),
            );
        }
        if req.evidence.is_some() {
            fields.insert("evidence".into(), "only a close takes evidence".into());
        }
    }
    let target = match (&req.target.intent_id, &req.target.scope) {
        (Some(raw), None) => match raw.parse::<IntentId>() {
            // The body is stored as sent and the audit trail matches ids in it exactly.
            Ok(id) if id.as_str() == raw => Some(Target::Intent(id)),
            Ok(id) => {
                fields.insert(
                    "target.intent_id".into(),
                    format!("write the id exactly as issued: {id}"),
                );
                None
            }
            Err(e) => {
                fields.insert("target.intent_id".into(), e.to_string());
                None
            }
        },
        (None, Some(_)) if matches!(req.kind, CommandKind::Close | CommandKind::Cancel) => {
            fields.insert(
                "target".into(),
                format!("a {} names one intent: target.intent_id", req.kind),
            );
            None
        }
        (None, Some(scope)) => Some(Target::Scope(check_scope(&mut fields, scope))),
        _ => {
            fields.insert(
                "target".into(),
                "name exactly one of target.intent_id or target.scope".into(),
            );
            None
        }
    };
    match (target, fields.is_empty()) {
        (Some(target), true) => Ok((reason, target)),
        _ => Err(ApiError::fields(fields)),
    }
}

fn check_scope(fields: &mut BTreeMap<String, String>, scope: &ScopeBody) -> PauseScope {
    let mut value = |name: &str, raw: &Option<String>| -> Option<String> {
        let v = raw.as_deref().map(str::trim).filter(|v| !v.is_empty())?;
        let path = format!("target.scope.{name}");
        if v.chars().count() > MAX_SCOPE_CHARS {
            fields.insert(path, format!("is longer than {MAX_SCOPE_CHARS} characters"));
        } else if let Err(problem) =
            crate::domain::text::check_text(v, MAX_SCOPE_CHARS, false, false)
        {
            fields.insert(path, problem.to_string());
        }
        Some(v.to_string())
    };
    let out = PauseScope {
        tenant: value("tenant", &scope.tenant),
        provider: value("provider", &scope.provider),
        tool: value("tool", &scope.tool),
        operation: value("operation", &scope.operation),
        intent_id: None,
    };
    // Checked untrimmed: the body is stored as sent and the audit trail matches tenants in it
    // exactly.
    if let Some(raw) = &scope.tenant
        && let Err(e) = raw.parse::<Tenant>()
    {
        fields.insert("target.scope.tenant".into(), e.to_string());
    }
    out
}

/// A cancel of a final intent is refused before anything is recorded: there is nothing left
/// to cancel (409).
pub fn refuse_final_cancel(intent: &crate::wire::Intent) -> Result<(), ApiError> {
    if intent.state.is_terminal() {
        return Err(ApiError::conflict(
            "intent_final",
            format!(
                "intent {} is {}, which is final: there is nothing left to cancel",
                intent.id, intent.state
            ),
        ));
    }
    Ok(())
}

/// Resolve the checked target against the store and the caller's tenants.
async fn resolve(
    state: &AppState,
    principal: &Principal,
    req: &CommandBody,
    target: Target,
) -> Result<CommandAction, ApiError> {
    let scope = match target {
        Target::Scope(scope) => {
            if let Some(list) = &principal.tenants {
                let inside = scope.tenant.as_ref().is_some_and(|t| list.contains(t));
                if !inside {
                    return Err(ApiError::new(
                        StatusCode::FORBIDDEN,
                        "forbidden",
                        format!(
                            "this token is limited to tenants {}; a scoped command must name one of them in \
                             target.scope.tenant",
                            list.join(", ")
                        ),
                    ));
                }
            }
            scope
        }
        Target::Intent(id) => {
            let shown = id.to_string();
            let lookup = id.clone();
            let intent = state.db.read(move |s| s.intent(&lookup)).await?;
            principal.check_tenant(&intent.tenant, "intent", &shown)?;
            if req.kind == CommandKind::Cancel {
                refuse_final_cancel(&intent)?;
                return Ok(CommandAction::Cancel { intent: id });
            }
            if let (CommandKind::Close, Some(disposition)) = (req.kind, req.disposition) {
                let evidence = req
                    .evidence
                    .as_ref()
                    .map_or_else(Evidence::default, |e| Evidence {
                        reference: e.reference.clone(),
                        note: e.note.clone(),
                    });
                return Ok(CommandAction::Close {
                    intent: id,
                    disposition,
                    evidence,
                });
            }
            // The tenant is part of the scope so a pause of one intent is listed only to
            // those who may see the intent.
            PauseScope {
                tenant: Some(intent.tenant.to_string()),
                intent_id: Some(shown),
                ..PauseScope::default()
            }
        }
    };
    Ok(match req.kind {
        CommandKind::Pause => CommandAction::Pause { scope },
        CommandKind::Resume => CommandAction::Resume { scope },
        CommandKind::Reconcile => CommandAction::Reconcile { scope },
        // `check_body` lets a close through only with an intent target and a disposition,
        // and a cancel only with an intent target.
        CommandKind::Close | CommandKind::Cancel => {
            return Err(ApiError::fields(BTreeMap::from([(
                "target".to_string(),
                format!("a {} names one intent: target.intent_id", req.kind),
            )])));
        }
    })
}

async fn run_command(
    State(state): State<AppState>,
    principal: Principal,
    body: axum::body::Bytes,
) -> Result<Response, ApiError> {
    let commands = [
        Permission::PauseResume,
        Permission::Reconcile,
        Permission::Close,
    ];
    if !commands.iter().any(|p| principal.role.may(*p)) {
        return Err(ApiError::forbidden("run operator commands"));
    }
    let req: CommandBody = parse_body(&body)?;
    principal.require(
        Role::permission_for(req.kind),
        &format!("{} intents", req.kind),
    )?;
    let (reason, target) = check_body(&req)?;
    let action = resolve(&state, &principal, &req, target).await?;

    let value: Value =
        serde_json::from_slice(&body).map_err(|e| ApiError::bad_request(e.to_string()))?;
    let canonical = canonicalize(&value)
        .map_err(|e| ApiError::bad_request(format!("the body has no canonical form: {e}")))?;
    let new = NewCommand {
        id: req.command_id.clone(),
        kind: req.kind,
        actor: principal.name.clone(),
        role: principal.role,
        body_hash: canonical.hash,
        body_json: value.to_string(),
        reason,
        dry_run: req.dry_run,
        now_ms: state.clock.now_ms(),
    };
    let tenants = principal.tenants.clone();
    let (cancels, notice) = (req.kind == CommandKind::Cancel, state.cancel_notice());
    let recorded = state
        .db
        .write(move |s| {
            if cancels {
                notice();
            }
            s.run_command(&new, &action, tenants.as_deref())
        })
        .await?;
    state.events_wake.notify_waiters();
    match recorded {
        RecordedCommand::Fresh(record) => {
            tracing::info!(command = %record.command_id, kind = %record.kind, actor = %record.actor,
                status = %record.status, "operator command");
            let record = if record.kind == CommandKind::Reconcile
                && !record.dry_run
                && record.status == "accepted"
            {
                finish_reconcile(&state, record).await?
            } else {
                record
            };
            if matches!(req.kind, CommandKind::Resume | CommandKind::Cancel) {
                // Retries held back by the pause may go now.
                state.reconcile_wake.notify_one();
            }
            Ok(answer(record, false))
        }
        RecordedCommand::Replayed(record) => Ok(answer(record, true)),
        RecordedCommand::InUse => Err(ApiError::conflict(
            "command_id_in_use",
            "another principal already used this command_id; make a new one",
        )),
        RecordedCommand::Mismatch(_) => Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "command_id_mismatch",
            format!(
                "command_id {} was already used for a different command; a new command needs a new command_id",
                req.command_id
            ),
        )),
    }
}

/// 201 for a fresh record, 200 for a replay; a refused command, either way, 422 when it
/// lacked evidence and 409 when the intent's state does not allow it.
fn answer(record: CommandRecord, replayed: bool) -> Response {
    let mut response = if record.status == "refused" {
        let message = record
            .result
            .get("error")
            .and_then(Value::as_str)
            .unwrap_or("the command was refused");
        let status = match record.result.get("code").and_then(Value::as_str) {
            Some("invalid_state") => StatusCode::CONFLICT,
            _ => StatusCode::UNPROCESSABLE_ENTITY,
        };
        ApiError::new(status, "command_refused", message).into_response()
    } else if replayed {
        (StatusCode::OK, Json(record)).into_response()
    } else {
        (StatusCode::CREATED, Json(record)).into_response()
    };
    if replayed {
        response
            .headers_mut()
            .insert("idempotent-replayed", HeaderValue::from_static("true"));
    }
    response
}

/// Look the frozen targets up and store the results as the command's final record.
async fn finish_reconcile(
    state: &AppState,
    record: CommandRecord,
) -> Result<CommandRecord, ApiError> {
    let id: CommandId = record.command_id.parse().map_err(|e| {
        tracing::error!(error = %e, "a stored command id does not parse");
        ApiError::internal()
    })?;
    let count = record
        .result
        .get("target_count")
        .and_then(Value::as_u64)
        .unwrap_or(0) as usize;
    let listed = id.clone();
    // The command's tenant limit was applied when its targets were frozen.
    let page = state
        .db
        .read(move |s| s.command_targets(&listed, None, 0, MAX_LOOKUPS as u32))
        .await?;
    let targets: Vec<IntentId> = page
        .items
        .iter()
        .filter_map(|(id, _)| id.parse().ok())
        .collect();
    let mut result = match record.result {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    let task_state = state.clone();
    let task = tokio::spawn(async move {
        let skipped = count.saturating_sub(targets.len());
        let lookups = look_up_all(&task_state, targets).await;
        result.insert("lookups".into(), Value::Array(lookups));
        result.insert("not_looked_up".into(), json!(skipped));
        let result = Value::Object(result);
        let at = task_state.clock.now_ms();
        task_state
            .db
            .write(move |s| {
                s.finish_command(&id, "applied", &result)?;
                s.announce_command(&id, at)
            })
            .await
    });
    let record = task.await.map_err(|e| {
        tracing::error!(error = %e, "a reconcile command's lookups failed");
        ApiError::internal()
    })??;
    state.events_wake.notify_waiters();
    Ok(record)
}

/// One lookup per intent, a few at a time; results in the order of `ids`.
async fn look_up_all(state: &AppState, ids: Vec<IntentId>) -> Vec<Value> {
    let mut results: Vec<Value> = ids
        .iter()
        .map(|id| json!({ "intent_id": id, "result": "lookup_failed" }))
        .collect();
    let mut pending = ids.into_iter().enumerate();
    let mut running = JoinSet::new();
    loop {
        while running.len() < LOOKUP_CONCURRENCY {
            let Some((index, id)) = pending.next() else {
                break;
            };
            let task_state = state.clone();
            running.spawn(async move {
                let outcome = reconcile_intent(&task_state, &id, Trigger::Operator).await;
                (index, id, outcome)
            });
        }
        let Some(joined) = running.join_next().await else {
            break;
        };
        match joined {
            Ok((index, id, outcome)) => results[index] = lookup_json(&id, outcome),
            Err(e) => tracing::error!(error = %e, "a lookup task failed"),
        }
    }
    results
}

fn lookup_json(
    id: &IntentId,
    outcome: Result<crate::coordinator::reconciler::LookupResult, StoreError>,
) -> Value {
    let mut map = Map::new();
    map.insert("intent_id".into(), json!(id));
    match outcome.map(|r| serde_json::to_value(&r)) {
        Ok(Ok(Value::Object(fields))) => map.extend(fields),
        Ok(_) => {
            map.insert("result".into(), json!("lookup_failed"));
        }
        Err(e) => {
            tracing::warn!(intent = %id, error = %e, "an operator lookup failed");
            map.insert("result".into(), json!("lookup_failed"));
        }
    }
    Value::Object(map)
}

async fn audit(
    State(state): State<AppState>,
    principal: Principal,
    query: RawQuery,
) -> Result<Json<Value>, ApiError> {
    principal.require(Permission::Read, "read the audit trail")?;
    let mut p = Params::new(query, &[&["intent_id", "limit"]])?;
    let raw_intent = p.text("intent_id");
    let limit = p.number("limit", 1, MAX_PAGE).unwrap_or(100);
    if let Some(raw) = &raw_intent
        && let Err(e) = raw.parse::<IntentId>()
    {
        p.fail("intent_id", e.to_string());
    }
    p.finish()?;
    let intent = match &raw_intent {
        Some(raw) => Some(visible_intent(&state, &principal, raw).await?),
        None => None,
    };
    let tenants = principal.tenants.clone();
    let items = state
        .db
        .read(move |s| match &tenants {
            None => s.audit(intent.as_ref(), limit),
            Some(list) => s.audit_within(intent.as_ref(), list, limit),
        })
        .await?;
    Ok(Json(json!({ "items": items })))
}

/// `GET /v1/commands/{id}/targets?limit&cursor`: the intents a command covered when it was
/// recorded, oldest first, within the caller's tenants.
async fn command_targets(
    State(state): State<AppState>,
    principal: Principal,
    Path(raw_id): Path<String>,
    query: RawQuery,
) -> Result<Json<CommandTargets>, ApiError> {
    principal.require(Permission::Read, "read the audit trail")?;
    let mut p = Params::new(query, &[&["limit", "cursor"]])?;
    let limit = p.number("limit", 1, MAX_PAGE).unwrap_or(100);
    let after = p.text("cursor").map_or(0, |raw| match raw.parse::<i64>() {
        Ok(n) if n > 0 => n,
        _ => {
            p.fail(
                "cursor",
                "not a cursor this endpoint gave; pass next_cursor as it came",
            );
            0
        }
    });
    p.finish()?;
    let id: CommandId = raw_id
        .parse()
        .map_err(|_| ApiError::not_found("command", &raw_id))?;
    let tenants = principal.tenants.clone();
    let page = state
        .db
        .read(move |s| {
            // A command the caller may not see is as absent as one never recorded.
            let visible = match &tenants {
                None => true,
                Some(list) => s.command_visible_within(&id, list)?,
            };
            if !visible {
                return Err(StoreError::NotFound {
                    what: "command",
                    id: id.to_string(),
                });
            }
            s.command(&id)?;
            s.command_targets(&id, tenants.as_deref(), after, limit)
        })
        .await?;
    Ok(Json(CommandTargets {
        items: page
            .items
            .into_iter()
            .map(|(intent_id, tenant)| CommandTarget { intent_id, tenant })
            .collect(),
        next_cursor: page.next.map(|n| n.to_string()),
    }))
}
