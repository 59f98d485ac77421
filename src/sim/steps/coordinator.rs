//! The coordinator's own steps, as its dispatcher and reconciler take them through the core,
//! and the downstream's webhooks.

use axum::http::Method;
use serde_json::json;

use crate::coordinator::core::dispatch;
use crate::coordinator::core::reconcile::{self, Begin, LookupResult, Trigger};
use crate::coordinator::core::sweep;
use crate::domain::IntentId;
use crate::sim::dice::Dice;
use crate::sim::invariants;
use crate::sim::world::{InTransit, World};
use crate::store::StoreError;
use crate::store::ops::*;

pub(super) fn claim(world: &mut World, dice: &mut Dice) -> anyhow::Result<()> {
    let limit = dice.between(1, 4) as u32;
    let (config, worker, now) = (
        world.state.config.clone(),
        world.state.worker.clone(),
        world.now(),
    );
    let claim = match world.write(move |s| dispatch::claim(s, &config, &worker, now, limit)) {
        Ok(claim) => claim,
        Err(e) => {
            world.history.note(format!("claiming failed: {e}"));
            return Ok(());
        }
    };
    for held in &claim.held {
        world
            .history
            .note(format!("the gate holds {}: {}", held.intent_id, held.why));
    }
    send_rows(world, claim.rows);
    Ok(())
}

/// Send claimed rows as the dispatcher does: a reclaimed row is reconciled, never resent;
/// a send that could outlive its lease is given back; the others go to the downstream.
pub fn send_rows(world: &mut World, rows: Vec<crate::store::ClaimedRow>) {
    for row in rows {
        if row.reclaimed {
            world.history.note(format!(
                "reclaims {} of {}: reconciled, never resent",
                row.outbox_seq, row.intent_id
            ));
            world.in_transit.push(InTransit {
                row,
                result: dispatch::reclaimed(),
                definitive: false,
                incarnation: world.incarnation,
            });
            continue;
        }
        if !dispatch::may_begin(&row, world.now(), world.setup.timeout_ms) {
            let (seq, fence, now) = (row.outbox_seq, row.fence, world.now());
            let released = world.write(move |s| s.release_claim(seq, fence, now));
            world
                .history
                .note(format!("gives {seq} back unsent: {released:?}"));
            continue;
        }
        invariants::before_send(world, &row);
        let resource = world
            .config
            .connector(&row.connector)
            .and_then(|c| c.operations.get(&row.operation).cloned())
            .unwrap_or_default();
        let landed_before = landings(world, row.action_key.as_str());
        let call = world.downstream.lock().create(
            &resource,
            row.action_key.as_str(),
            &row.payload_json,
            world.now(),
        );
        let landed = landings(world, row.action_key.as_str()) > landed_before;
        let bare = world
            .config
            .connector(&row.connector)
            .map(|c| c.bare_overload())
            .unwrap_or_default();
        let vouched = bare == crate::domain::decision::BareOverload::NotApplied;
        let result = dispatch::interpret(&call, &row.action_key, bare);
        // What the answer proves once recorded: a receipt (as the coordinator reads the
        // answer: a success about another key's record is none), a refusal of the key, or
        // (by the connector's owner's word) a bare overload answer.
        let definitive = landed
            && (matches!(&result, dispatch::SendResult::Receipt { .. })
                || matches!(&call, crate::coordinator::core::call::Call::Replied(r)
                    if r.status == 409 || (vouched && r.status == 503 && r.retry_after_ms.is_none())));
        world.history.note(format!(
            "sends {} for {} (fence {}): {}",
            row.action_key,
            row.intent_id,
            row.fence,
            describe(&call)
        ));
        world.in_transit.push(InTransit {
            row,
            result,
            definitive,
            incarnation: world.incarnation,
        });
    }
}

fn landings(world: &World, key: &str) -> usize {
    world
        .downstream
        .lock()
        .landings
        .get(key)
        .map_or(0, Vec::len)
}

fn describe(call: &crate::coordinator::core::call::Call) -> String {
    match call {
        crate::coordinator::core::call::Call::Replied(r) => format!("{} {}", r.status, r.body),
        crate::coordinator::core::call::Call::Failed { detail, .. } => detail.clone(),
    }
}

/// Record the `i`-th send in transit, as its dispatcher would.
pub fn record(world: &mut World, i: usize) -> anyhow::Result<()> {
    let sent = world.in_transit.remove(i);
    let (row, result, now, entropy) = (
        sent.row.clone(),
        sent.result.clone(),
        world.now(),
        world.entropy.clone(),
    );
    // An answer naming a record another intent already holds is no receipt for this one
    // (`Receipts::held_by_another`): nothing of it is owed to the store. Asked before the
    // answer is recorded, as the coordinator asks it.
    let receipt = result
        .downstream_id()
        .filter(|id| {
            result.unkeyed_receipt().is_none()
                || !world
                    .reader
                    .held_by_another(&sent.row.intent_id, id, now)
                    .unwrap_or(false)
        })
        .map(str::to_string);
    // A success refused so proves nothing of what its key did.
    let refused = receipt.is_none() && result.downstream_id().is_some();
    let outcome = world.write(move |s| dispatch::record(s, &row, result.clone(), now, &*entropy));
    world.history.note(format!(
        "records the answer for {} (fence {}, process {}): {outcome:?}",
        sent.row.intent_id, sent.row.fence, sent.incarnation
    ));
    match outcome {
        Ok(_) => {
            if sent.definitive && !refused {
                world
                    .downstream
                    .lock()
                    .unproven
                    .remove(sent.row.action_key.as_str());
            }
            if let Some(id) = receipt {
                world.evidence.push((sent.row.intent_id.to_string(), id));
            }
        }
        Err(StoreError::Fenced { .. }) => {
            if let Some(downstream_id) = receipt {
                let (row, entropy, result) =
                    (sent.row.clone(), world.entropy.clone(), sent.result.clone());
                let observed = world.write(move |s| {
                    dispatch::observe_fenced_receipt(s, &row, &result, now, &*entropy)
                });
                world
                    .history
                    .note(format!("… fenced; its receipt observed: {observed:?}"));
                if observed.is_ok() {
                    world
                        .evidence
                        .push((sent.row.intent_id.to_string(), downstream_id));
                }
            }
        }
        Err(_) => {}
    }
    Ok(())
}

/// One pass of the reconciler: deadlines, stalled retries, then lookups.
pub fn sweep_once(world: &mut World, dice: &mut Dice) -> anyhow::Result<()> {
    let now = world.now();
    let overdue = world.write(move |s| s.overdue_intents(now, 50))?;
    for id in overdue {
        let rid = id.clone();
        let passed = world.write(move |s| sweep::pass_deadline(s, &rid, now));
        world
            .history
            .note(format!("the deadline of {id} passed: {passed:?}"));
    }
    let stalled = world.write(move |s| s.stalled_executing(50, now))?;
    for id in stalled {
        let (rid, entropy) = (id.clone(), world.entropy.clone());
        let follow = world.write(move |s| sweep::replan(s, &rid, now, &*entropy));
        world
            .history
            .note(format!("re-plans the stalled {id}: {follow:?}"));
    }
    let due = world.write(move |s| s.due_lookups(now, 50))?;
    let take = dice.between(1, 6) as usize;
    for due in due.into_iter().take(take) {
        look_up(world, &due.intent_id, Trigger::Automatic)?;
    }
    Ok(())
}

/// Look one intent up, as the reconciler does (`Trigger::Automatic`, paced) or an operator.
pub fn look_up(world: &mut World, id: &IntentId, trigger: Trigger) -> anyhow::Result<()> {
    let (config, rid, now, entropy) = (
        world.state.config.clone(),
        id.clone(),
        world.now(),
        world.entropy.clone(),
    );
    let begun =
        world.write(move |s| reconcile::begin(s, &config, &rid, now, &*entropy, trigger))?;
    let Begin::Ask(ask) = begun else {
        return Ok(());
    };
    let call = world
        .downstream
        .lock()
        .lookup(&ask.resource, ask.action_key.as_str(), now);
    let (config, entropy, a) = (
        world.state.config.clone(),
        world.entropy.clone(),
        ask.clone(),
    );
    let finished = world.write(move |s| reconcile::finish(s, &config, &a, &call, now, &*entropy));
    world
        .history
        .note(format!("looks {} up: {finished:?}", ask.action_key));
    if let Ok((LookupResult::Committed { downstream_id }, _)) = finished {
        world.evidence.push((id.to_string(), downstream_id));
    }
    Ok(())
}

/// Deliver one webhook the downstream owes.
pub fn deliver_webhook(world: &mut World, dice: &mut Dice) {
    let hook = {
        let mut downstream = world.downstream.lock();
        if downstream.webhooks.is_empty() {
            return;
        }
        let i = dice.below(downstream.webhooks.len() as u64) as usize;
        let hook = downstream.webhooks[i].clone();
        if hook.left <= 1 {
            downstream.webhooks.remove(i);
        } else {
            downstream.webhooks[i].left -= 1;
        }
        hook
    };
    let body = json!({"event_id": hook.event_id, "action_key": hook.action_key,
                      "downstream_id": hook.downstream_id, "status": "created"});
    let (status, answer, _) = world.call(
        Method::POST,
        "/v1/receipts/erp",
        "erp-hook",
        &[],
        Some(&body),
    );
    world.history.note(format!(
        "the downstream delivers {} for {}: {status} {answer}",
        hook.event_id, hook.action_key
    ));
    if (200..300).contains(&status) {
        let intent = world
            .orders
            .iter()
            .find(|o| o.action_key.as_deref() == Some(hook.action_key.as_str()))
            .and_then(|o| o.id.clone())
            .map(|i| i.to_string())
            .or_else(|| invariants::intent_of_key(world, &hook.action_key));
        if let Some(intent) = intent {
            world.evidence.push((intent, hook.downstream_id));
        }
    }
}
