//! The ingest API's decisions that read an intent before changing it: an approval and a
//! dispatch. Each is judged on the intent as it stands in its own write (read, checked and
//! applied in one transaction), so nothing read earlier can be stale by the time it acts,
//! and the order path reads nothing before it writes.
//!
//! A decision's refusal is an API error ([`Decided`]): it stores nothing, and its write
//! commits nothing.

use axum::http::StatusCode;

use crate::coordinator::auth::Principal;
use crate::coordinator::config::Config;
use crate::coordinator::error::ApiError;
use crate::domain::policy::Request as PolicyRequest;
use crate::domain::{AttemptId, Event, IntentId, IntentState};
use crate::store::ops::*;
use crate::store::{ApplyContext, Approval, Claim, DispatchPlan, Locked, Store, StoreError};
use crate::wire::{Authorize, Intent};

/// What a decision did, or the API's refusal of it; the outer error is the store's.
pub type Decided<T> = Result<Result<T, ApiError>, StoreError>;

/// The intent `id` as the caller may see it, locked for this write: 404 alike for an intent
/// of another tenant and for none.
fn visible(
    s: &mut Store,
    principal: &Principal,
    id: &IntentId,
) -> Result<Result<Locked, ApiError>, StoreError> {
    match s.lock_visible_intent(id, principal.tenants.as_deref()) {
        Ok(locked) => Ok(Ok(locked)),
        Err(StoreError::NotFound { .. }) => Ok(Err(ApiError::not_found("intent", id.as_str()))),
        Err(e) => Err(e),
    }
}

/// The answer to a request the tenant's policy refuses, naming the rule.
pub fn policy_refused(why: &dyn std::fmt::Display) -> ApiError {
    ApiError::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        "policy_refused",
        format!("refused by {why}"),
    )
}

/// An approval as [`authorize`] applied it.
#[derive(Debug, Clone)]
pub struct Approved {
    pub intent: Intent,
    /// The intent had been approved before (its approval lapsed, or its policy changed): a
    /// retry that waited for a fresh approval may go now.
    pub again: bool,
}

/// Approve the intent `id` for `principal`, whose request `req` is already checked field by
/// field: never by the principal that created it (unless it may approve its own), under the
/// tenant's policy in force, which judges the intent again and bounds how long the approval
/// lasts.
pub fn authorize(
    s: &mut Store,
    config: &Config,
    principal: &Principal,
    id: &IntentId,
    req: &Authorize,
    now: u64,
) -> Decided<Approved> {
    let locked = match visible(s, principal, id)? {
        Ok(locked) => locked,
        Err(refused) => return Ok(Err(refused)),
    };
    let intent = &locked.intent;
    if intent.created_by.as_deref() == Some(principal.name.as_str()) && !principal.may_approve_own {
        return Ok(Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "self_approval",
            format!(
                "`{}` created this intent and may not approve it; another principal (an approver, supervisor or admin) must",
                principal.name
            ),
        )));
    }
    let policy = config.policy(intent.tenant.as_str());
    match (&req.policy_version, policy) {
        (Some(named), None) => {
            return Ok(Err(ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "unknown_policy",
                format!(
                    "tenant `{}` has no policy, so there is no policy version `{named}`",
                    intent.tenant
                ),
            )));
        }
        (Some(named), Some(p)) if *named.trim() != p.version => {
            return Ok(Err(ApiError::conflict(
                "policy_version_mismatch",
                format!(
                    "the policy of tenant `{}` in force is version `{}`, not `{named}`: judge the intent by it",
                    intent.tenant, p.version
                ),
            )));
        }
        _ => {}
    }
    let mut expires_at_ms = req.valid_for_secs.map(|s| now + s * 1000);
    if let Some(p) = policy {
        let args: serde_json::Value = serde_json::from_str(&s.canonical_args(id)?)?;
        if let Err(refusal) = p.check(&PolicyRequest {
            operation: &intent.operation,
            connector: &intent.connector,
            tier: intent.consequence,
            max_attempts: intent.max_attempts,
            args: &args,
        }) {
            return Ok(Err(policy_refused(&refusal)));
        }
        if let Some(secs) = p.approval_secs(&intent.operation) {
            let most = now + secs * 1000;
            expires_at_ms = Some(expires_at_ms.map_or(most, |e| e.min(most)));
        }
    }
    let ctx = ApplyContext {
        now_ms: now,
        authorization: Some(Approval {
            version: req.authorization_version.trim().to_string(),
            approver: principal.name.clone(),
            expires_at_ms,
            policy_version: policy.map(|p| p.version.clone()),
        }),
        ..ApplyContext::default()
    };
    let again = intent.state != IntentState::Prepared;
    let intent = s.apply_locked(&locked, &Event::Authorized, &ctx)?.intent;
    Ok(Ok(Approved { intent, again }))
}

/// Send the intent `id` across the action boundary: its first dispatch attempt and outbox
/// row, under `attempt_id`. A repeated dispatch is answered with where the intent stands and
/// sends nothing (`false`); only the coordinator retries, so an agent's retry never sends
/// twice. The dispatch acts under the intent's release: one the registry no longer lists
/// (it changed since the intent was created) sends nothing.
pub fn dispatch(
    s: &mut Store,
    config: &Config,
    principal: &Principal,
    id: &IntentId,
    attempt_id: AttemptId,
    now: u64,
) -> Decided<(bool, Intent)> {
    let locked = match visible(s, principal, id)? {
        Ok(locked) => locked,
        Err(refused) => return Ok(Err(refused)),
    };
    let intent = &locked.intent;
    if let Err(ineligible) = config.releases.check(&intent.operation, &intent.release_id) {
        return Ok(Err(ineligible.into()));
    }
    if !intent.consequence.is_mutating() {
        return Err(StoreError::NotDispatchable(format!(
            "a {} intent changes nothing downstream; report its work as attempts",
            intent.consequence
        )));
    }
    // Reported work (retrieval, inference) may already have moved the intent to executing;
    // it is dispatched once all the same.
    let already = match intent.state {
        IntentState::Indeterminate | IntentState::Committed => true,
        IntentState::Executing => s.was_dispatched(&locked)?,
        _ => false,
    };
    if already {
        // Answered as it stands, in the shape of every dispatch's answer (no arguments).
        return Ok(Ok((false, locked.intent)));
    }
    let ctx = ApplyContext {
        now_ms: now,
        dispatch: Some(DispatchPlan {
            attempt_id,
            available_at_ms: now,
        }),
        ..ApplyContext::default()
    };
    Ok(Ok((
        true,
        s.apply_locked(&locked, &Event::Dispatch, &ctx)?.intent,
    )))
}

/// [`dispatch`], and with a `claimant` (a worker, and the time as the writer runs this) the
/// claim of the send it planned, in the same write ([`super::dispatch::claim_planned`]): the
/// coordinator's way when a send slot is free. A claim that fails rolls back alone and
/// leaves the send planned, for the dispatcher. When the claim's gate held the send back,
/// the answer is the intent as that left it.
pub fn dispatch_and_claim(
    s: &mut Store,
    config: &Config,
    principal: &Principal,
    id: &IntentId,
    attempt_id: AttemptId,
    now: u64,
    claimant: Option<(&str, u64)>,
) -> Decided<(bool, Intent, Option<Claim>)> {
    let (fresh, intent) = match dispatch(s, config, principal, id, attempt_id, now)? {
        Ok(done) => done,
        Err(refused) => return Ok(Err(refused)),
    };
    let Some((worker, claim_now)) = claimant.filter(|_| fresh) else {
        return Ok(Ok((fresh, intent, None)));
    };
    let Ok(claim) = super::dispatch::claim_planned(s, config, worker, claim_now, &intent) else {
        return Ok(Ok((fresh, intent, None)));
    };
    let mut intent = if claim.held.is_empty() {
        intent
    } else {
        s.lock_intent(id)?.intent
    };
    // The send claimed in this write crossed the boundary in it: the answer says so, with
    // what the claim stored, not what the dispatch left before it.
    if let Some(row) = claim.rows.iter().find(|r| r.intent_id == intent.id) {
        intent.may_have_crossed_boundary = true;
        intent.first_dispatch_at_ms = Some(row.first_dispatch_at_ms);
        intent.key_retention_secs = row.key_retention_secs;
    }
    Ok(Ok((fresh, intent, Some(claim))))
}
