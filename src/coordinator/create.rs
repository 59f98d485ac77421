//! Creating intents: one under the caller's `Idempotency-Key` header, or up to
//! [`MAX_BATCH`] in one request, each under its own key and with its own answer, all written
//! in one store write.

use std::collections::BTreeMap;

use axum::Extension;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::Value;

use super::AppState;
use super::auth::Principal;
use super::body::{parse_body_with, parse_fields_with, parse_object};
use super::core::ingest::policy_refused;
use super::core::revisit;
use super::error::ApiError;
use super::ingest::check_text;
use super::limits::{OVER_CAP_PAUSE, TokenPlaces};
use crate::domain::canonical::{MAX_ARGS_BYTES, canonicalize, json_kind};
use crate::domain::policy::{Request as PolicyRequest, tier_attempt_cap};
use crate::domain::{IntentId, Permission, Tenant};
use crate::store::ops::*;
use crate::store::{CreateOutcome, LinkRefusal, Links, NewIntent, search_form};
use crate::wire::{BatchCreated, BatchResult, CreateIntent, ErrorDetail, Intent};

/// The longest caller key accepted.
pub const MAX_CALLER_KEY: usize = 200;
/// Deadlines are at most a week away.
pub const MAX_DEADLINE_SECS: u64 = 7 * 24 * 3600;
/// The most intents one batch creates. A batch is one store write: larger ones would hold
/// the writer, and every other agent's create behind it, for longer.
pub const MAX_BATCH: usize = 100;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/v1/intents", post(create_intent))
        .route("/v1/intents/batch", post(create_batch))
}

/// `POST /v1/intents`: one intent under the caller's `Idempotency-Key` header.
async fn create_intent(
    State(state): State<AppState>,
    principal: Principal,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Result<Response, ApiError> {
    principal.require(Permission::Ingest, "create intents")?;
    let raw = headers.get("idempotency-key").ok_or_else(|| {
        ApiError::fields(BTreeMap::from([(
            "Idempotency-Key".into(),
            "this header is required".into(),
        )]))
    })?;
    let caller_key = caller_key(raw.to_str().ok(), "Idempotency-Key")?;
    let req: CreateIntent = parse_body_with(&body, |field| field == "args")?;
    let new = prepare(&state, &principal, caller_key, req)?;
    let outcome = write(&state, vec![new]).await?.pop();
    let outcome = outcome.ok_or_else(ApiError::internal)?;
    sight(&state, std::slice::from_ref(&outcome)).await;
    match answer(outcome)? {
        (intent, false) => Ok((StatusCode::CREATED, Json(intent)).into_response()),
        (intent, true) => Ok((
            StatusCode::OK,
            [("Idempotent-Replayed", "true")],
            Json(intent),
        )
            .into_response()),
    }
}

/// `POST /v1/intents/batch`: `{"intents": [...]}`, each an intent of `POST /v1/intents`
/// with its caller key as `idempotency_key`. A body that is not a well-formed batch (not an
/// object, no `intents`, none or more than [`MAX_BATCH`], or an intent that endpoint would
/// answer 400) is refused whole, naming each bad field, and nothing is stored. Otherwise
/// each intent is judged alone, exactly as that endpoint judges it (its tenant, release,
/// policy, links and key), and answered in `results` at its index with the status that
/// endpoint would have given; the ones that pass are written in one store write, in the
/// order of their keys ([`write`]: a key named twice creates once and the second answers a
/// replay; of two that compete, such as two corrections of one intent, the one whose key
/// comes first is written first).
async fn create_batch(
    State(state): State<AppState>,
    principal: Principal,
    places: Option<Extension<TokenPlaces>>,
    body: axum::body::Bytes,
) -> Result<Response, ApiError> {
    principal.require(Permission::Ingest, "create intents")?;
    let items = batch_items(&body)?;
    let _held = hold_places(places, items.len()).await?;
    let mut results: Vec<Option<BatchResult>> = (0..items.len()).map(|_| None).collect();
    let (mut news, mut at, mut malformed) = (Vec::new(), Vec::new(), BTreeMap::new());
    for (index, item) in items.into_iter().enumerate() {
        match prepare_item(&state, &principal, item) {
            Ok(new) => {
                news.push(new);
                at.push(index);
            }
            // Bad input is the sender's mistake in the batch itself: the whole batch is
            // refused, every bad field named under its intent's place, and nothing stored.
            Err(refused) if refused.status == StatusCode::BAD_REQUEST => {
                let place = format!("intents[{index}]");
                if refused.fields.is_empty() {
                    malformed.insert(place, refused.message);
                } else {
                    for (field, problem) in refused.fields {
                        malformed.insert(format!("{place}.{field}"), problem);
                    }
                }
            }
            Err(refused) => results[index] = Some(failed(index, refused)),
        }
    }
    if !malformed.is_empty() {
        return Err(ApiError::fields(malformed));
    }
    if !news.is_empty() {
        let outcomes = write(&state, news).await?;
        sight(&state, &outcomes).await;
        for (index, outcome) in at.into_iter().zip(outcomes) {
            results[index] = Some(match answer(outcome) {
                Ok((intent, replayed)) => BatchResult {
                    index,
                    status: if replayed { 200 } else { 201 },
                    replayed,
                    intent: Some(intent),
                    error: None,
                },
                Err(refused) => failed(index, refused),
            });
        }
    }
    let results = results.into_iter().flatten().collect();
    Ok(Json(BatchCreated { results }).into_response())
}

/// The places of its token a batch of `intents` holds beside its request's own, one for each
/// intent: 400 for a batch larger than the token may ever hold, 429 when they are not free
/// now (after the pause a token past its cap waits for its refusal).
async fn hold_places(
    places: Option<Extension<TokenPlaces>>,
    intents: usize,
) -> Result<Option<tokio::sync::OwnedSemaphorePermit>, ApiError> {
    let Some(Extension(places)) = places else {
        return Ok(None);
    };
    if intents > places.cap() {
        return Err(ApiError::fields(BTreeMap::from([(
            "intents".into(),
            format!(
                "this token may have {} intents in progress at once \
                 (limits.max_concurrent_per_token); send at most that many in a batch",
                places.cap()
            ),
        )])));
    }
    match places.take_more(intents.saturating_sub(1)) {
        Some(held) => Ok(Some(held)),
        None => {
            tokio::time::sleep(OVER_CAP_PAUSE).await;
            Err(ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "too_many_requests",
                "this token has too many requests or batched intents in progress for this \
                 batch; retry when some are answered",
            )
            .retry_after(OVER_CAP_PAUSE.as_secs()))
        }
    }
}

/// The intents of a batch's body, as sent: 1 to [`MAX_BATCH`] of them.
fn batch_items(body: &[u8]) -> Result<Vec<Value>, ApiError> {
    let mut fields = parse_object(body)?;
    let mut problems = BTreeMap::new();
    for name in fields.keys().filter(|name| *name != "intents") {
        problems.insert(
            name.clone(),
            "unknown field: a batch has only `intents`".to_string(),
        );
    }
    let items = match fields.remove("intents") {
        Some(Value::Array(items)) if (1..=MAX_BATCH).contains(&items.len()) => Some(items),
        Some(Value::Array(items)) => {
            problems.insert(
                "intents".into(),
                format!("must hold 1 to {MAX_BATCH} intents, not {}", items.len()),
            );
            None
        }
        Some(other) => {
            problems.insert(
                "intents".into(),
                format!("must be an array of intents, not {}", json_kind(&other)),
            );
            None
        }
        None => {
            problems.insert("intents".into(), "this field is required".into());
            None
        }
    };
    match items {
        Some(items) if problems.is_empty() => Ok(items),
        _ => Err(ApiError::fields(problems)),
    }
}

/// One intent of a batch, judged as `POST /v1/intents` judges a body and its key.
fn prepare_item(
    state: &AppState,
    principal: &Principal,
    item: Value,
) -> Result<NewIntent, ApiError> {
    let Value::Object(mut fields) = item else {
        return Err(ApiError::bad_request(format!(
            "each intent must be a JSON object, not {}",
            json_kind(&item)
        )));
    };
    let key = match fields.remove("idempotency_key") {
        Some(Value::String(key)) => caller_key(Some(&key), "idempotency_key")?,
        Some(_) => {
            return Err(ApiError::fields(BTreeMap::from([(
                "idempotency_key".into(),
                "must be a string".into(),
            )])));
        }
        None => {
            return Err(ApiError::fields(BTreeMap::from([(
                "idempotency_key".into(),
                "this field is required".into(),
            )])));
        }
    };
    let req: CreateIntent = parse_fields_with(fields, |field| field == "args")?;
    prepare(state, principal, key, req)
}

/// A caller's key as `POST /v1/intents` takes it in its header (visible ASCII, trimmed, 1 to
/// [`MAX_CALLER_KEY`] characters), `None` when it is not visible ASCII; `field` names it.
fn caller_key(raw: Option<&str>, field: &str) -> Result<String, ApiError> {
    let bad = |problem: String| ApiError::fields(BTreeMap::from([(field.to_string(), problem)]));
    let raw = raw
        .filter(|key| key.chars().all(|c| c == '\t' || (' '..='~').contains(&c)))
        .ok_or_else(|| bad("must be visible ASCII".into()))?;
    let key = raw.trim();
    if key.is_empty() || key.len() > MAX_CALLER_KEY {
        return Err(bad(format!("must be 1 to {MAX_CALLER_KEY} characters")));
    }
    Ok(key.to_string())
}

/// One item's refusal, as its own endpoint would have answered it.
fn failed(index: usize, refused: ApiError) -> BatchResult {
    BatchResult {
        index,
        status: refused.status.as_u16(),
        replayed: false,
        intent: None,
        error: Some(ErrorDetail {
            code: refused.code.to_string(),
            message: refused.message,
            fields: refused.fields,
        }),
    }
}

/// Write `news` in one store write: each created, replayed or refused alone, and answered
/// at its place in `news`.
///
/// No in-flight guard: the store's key decides. The single writer (a unique index under
/// PostgreSQL) orders concurrent first requests with one key, so the first creates and
/// every other answers its result, and nothing can stick when a client hangs up.
///
/// They are written in the order of their keys (tenant, then caller key; one key named
/// twice in the order it was named, so the first creates and the next replays), not as
/// sent. On PostgreSQL two writes run side by side, and one waits at a key the other has
/// written until the other commits: in one order for all, neither ever holds a key the
/// other waits for while it waits for one of the other's, whatever order their callers
/// named them in. Before any key, the intents they correct are held
/// ([`Intents::hold_corrected`](crate::store::Intents::hold_corrected)).
async fn write(state: &AppState, news: Vec<NewIntent>) -> Result<Vec<CreateOutcome>, ApiError> {
    let supersedes = news.iter().any(|new| new.links.supersedes.is_some());
    let notice = state.cancel_notice();
    let outcomes = state
        .db
        .ingest_many(news.len(), move |s| {
            if supersedes {
                // A correction cancels the intent it replaces.
                notice();
            }
            s.hold_corrected(&news)?;
            let mut order: Vec<usize> = (0..news.len()).collect();
            order.sort_by_key(|&n| (news[n].tenant.as_str(), news[n].caller_key.as_str()));
            let mut outcomes: Vec<Option<CreateOutcome>> = news.iter().map(|_| None).collect();
            for n in order {
                outcomes[n] = Some(s.create_or_replay(&news[n])?);
            }
            Ok(outcomes.into_iter().flatten().collect())
        })
        .await;
    state.events_wake.notify_waiters();
    Ok(outcomes?)
}

/// Note the releases and tools the intents just created name, a tenant's at a time: a name
/// never seen before is a reason to revisit the retry gate (one store write a tenant).
async fn sight(state: &AppState, outcomes: &[CreateOutcome]) {
    let mut by_tenant: BTreeMap<&str, Vec<crate::store::Sighting>> = BTreeMap::new();
    for outcome in outcomes {
        if let CreateOutcome::Created(intent) = outcome {
            tracing::debug!(intent = %intent.id, action_key = %intent.action_key, "intent created");
            by_tenant
                .entry(intent.tenant.as_str())
                .or_default()
                .extend([
                    revisit::release(&intent.release_id),
                    revisit::tool(&intent.tool, intent.consequence),
                ]);
        }
    }
    for (tenant, named) in by_tenant {
        super::revisit::sighted(state, tenant, named).await;
    }
}

/// The intent a create answers with, and whether it is a replay; or why it was refused.
fn answer(outcome: CreateOutcome) -> Result<(Intent, bool), ApiError> {
    match outcome {
        CreateOutcome::Created(intent) => Ok((intent, false)),
        CreateOutcome::Replayed(intent) => Ok((intent, true)),
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

/// A new intent from a create's body and key, every bad field named; or the refusal a
/// scope, release registry or (decided by the store, once the key is known new) policy
/// gives it before anything is stored.
fn prepare(
    state: &AppState,
    principal: &Principal,
    caller_key: String,
    req: CreateIntent,
) -> Result<NewIntent, ApiError> {
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

    let now = state.clock.now_ms();
    Ok(NewIntent {
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
    })
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
