//! The engineer's commands (pause, resume, reconcile, close with evidence), a forger's tries
//! at what no token allows, and a viewer reading across tenants.

use axum::http::Method;
use serde_json::{Value, json};

use super::{OPERATIONS, pick_order};
use crate::domain::IntentId;
use crate::sim::dice::Dice;
use crate::sim::invariants;
use crate::sim::world::{TENANTS, World};
use crate::wire::ScopeBody;

pub(super) fn command(world: &mut World, body: Value) -> (u16, Value) {
    world.commands += 1;
    let (status, answer, _) =
        world.call(Method::POST, "/v1/commands", "engineer", &[], Some(&body));
    (status, answer)
}

/// Whether an operator command was applied: 201 when it is new, 200 when its id was sent
/// before (and its record answered again).
fn applied(status: u16, answer: &Value) -> bool {
    matches!(status, 200 | 201) && answer["status"] == "applied"
}

pub(super) fn pause(world: &mut World, dice: &mut Dice) {
    if world.setup.resumes && !world.pauses.is_empty() && dice.chance(0.5) {
        let i = dice.below(world.pauses.len() as u64) as usize;
        let (_, scope) = world.pauses[i].clone();
        let id = format!("resume-{}-{}", world.seed, world.step);
        let (status, answer) = command(
            world,
            json!({"command_id": id, "kind": "resume", "target": {"scope": scope}}),
        );
        world
            .history
            .note(format!("the engineer resumes {scope:?}: {status}"));
        if applied(status, &answer) {
            world.pauses.retain(|(_, s)| *s != scope);
        }
        return;
    }
    let scope = if dice.chance(0.5) {
        ScopeBody {
            tenant: dice.pick(TENANTS).map(|t| t.0.to_string()),
            ..ScopeBody::default()
        }
    } else {
        ScopeBody {
            operation: dice.pick(OPERATIONS).map(|o| o.0.to_string()),
            ..ScopeBody::default()
        }
    };
    let id = format!("pause-{}-{}", world.seed, world.step);
    let (status, answer) = command(
        world,
        json!({"command_id": id, "kind": "pause", "target": {"scope": scope},
               "reason": "the downstream is slow"}),
    );
    world
        .history
        .note(format!("the engineer pauses {scope:?}: {status}"));
    if applied(status, &answer) {
        world.pauses.push((id, scope));
    }
}

pub(super) fn operator_reconcile(world: &mut World, dice: &mut Dice) {
    let Some(i) = pick_order(world, dice, |o| o.id.is_some()) else {
        return;
    };
    let id = world.orders[i]
        .id
        .clone()
        .map(|i| i.to_string())
        .unwrap_or_default();
    let command_id = format!("reconcile-{}-{}", world.seed, world.step);
    let (status, answer) = command(
        world,
        json!({"command_id": command_id, "kind": "reconcile", "target": {"intent_id": id}}),
    );
    world
        .history
        .note(format!("the engineer reconciles {id}: {status}"));
    if let Some(items) = answer["result"]["lookups"]
        .as_array()
        .or(answer["result"].as_array())
    {
        for item in items {
            if item["result"] == "committed"
                && let Some(downstream_id) = item["downstream_id"].as_str()
            {
                world.evidence.push((id.clone(), downstream_id.to_string()));
            }
        }
    }
}

pub(super) fn close(world: &mut World, dice: &mut Dice) {
    let Some(i) = pick_order(world, dice, |o| {
        o.id.is_some() && o.consequence.is_mutating()
    }) else {
        return;
    };
    let order = world.orders[i].clone();
    let id = order.id.clone().map(|i| i.to_string()).unwrap_or_default();
    let key = order.action_key.clone().unwrap_or_default();
    // The engineer checks the downstream first and closes as it found.
    let found = world.downstream.lock().records_for(&key).first().cloned();
    let command_id = format!("close-{}-{}", world.seed, world.step);
    let body = match &found {
        Some(reference) => json!({"command_id": command_id, "kind": "close",
            "target": {"intent_id": id}, "reason": "found in the ERP",
            "disposition": "committed", "evidence": {"reference": reference}}),
        None => json!({"command_id": command_id, "kind": "close",
            "target": {"intent_id": id}, "reason": "not in the ERP",
            "disposition": "cancelled", "evidence": {"note": "searched the ERP by key: nothing"}}),
    };
    let (status, answer) = command(world, body);
    world.history.note(format!(
        "the engineer closes {id} as {}: {status} {}",
        if found.is_some() {
            "committed"
        } else {
            "cancelled"
        },
        answer["status"]
    ));
    if let Some(reference) = found
        && applied(status, &answer)
    {
        world.evidence.push((id, reference));
    }
}

pub(super) fn forge(world: &mut World, dice: &mut Dice) {
    let Some(i) = pick_order(world, dice, |o| o.id.is_some()) else {
        return;
    };
    let order = world.orders[i].clone();
    let id = order.id.clone().map(|i| i.to_string()).unwrap_or_default();
    let key = order.action_key.clone().unwrap_or_default();
    let before = invariants::fingerprint(world, &id);
    let forged = format!("po-forged-{}", world.step);
    let receipt = json!({"event_id": format!("forged-{}", world.step), "action_key": key,
                         "downstream_id": forged, "status": "created"});
    let other_agent = TENANTS
        .iter()
        .find(|t| t.0 != order.tenant)
        .map_or("agent-globex", |t| t.1);
    // A receipt names only the key and a path only the intent: an answer must not name
    // the other.
    let (what, status, answer, hidden) = match dice.below(6) {
        0 if order.tenant != "acme" => {
            let (s, a, _) = world.call(
                Method::POST,
                "/v1/receipts/erp",
                "erp-hook-acme",
                &[],
                Some(&receipt),
            );
            (
                "a receipt from a connector token of another tenant",
                s,
                a,
                id.clone(),
            )
        }
        0 | 1 => {
            let (s, a, _) = world.call(
                Method::POST,
                "/v1/receipts/erp",
                "bank-hook",
                &[],
                Some(&receipt),
            );
            ("a receipt for erp from the bank's token", s, a, id.clone())
        }
        2 => {
            let (s, a, _) = world.call(
                Method::POST,
                "/v1/receipts/erp",
                order.agent,
                &[],
                Some(&receipt),
            );
            ("a receipt from an agent", s, a, id.clone())
        }
        3 => {
            let attempt = invariants::some_attempt(world, &id).unwrap_or_else(|| "att-none".into());
            let (s, a, _) = world.call(
                Method::PATCH,
                &format!("/v1/intents/{id}/attempts/{attempt}"),
                other_agent,
                &[],
                Some(&json!({"outcome": "succeeded"})),
            );
            (
                "another tenant's agent finishing an attempt",
                s,
                a,
                key.clone(),
            )
        }
        4 => {
            let (s, a, _) = world.call(
                Method::POST,
                &format!("/v1/intents/{id}/authorize"),
                other_agent,
                &[],
                Some(&json!({"authorization_version": "v1", "approver": "mallory"})),
            );
            ("another tenant's agent authorising", s, a, key.clone())
        }
        _ => {
            // The agent that created the intent approving it itself: never an approval.
            let (s, a, _) = world.call(
                Method::POST,
                &format!("/v1/intents/{id}/authorize"),
                order.agent,
                &[],
                Some(&json!({"authorization_version": "v1"})),
            );
            (
                "the creating agent approving its own intent",
                s,
                a,
                String::new(),
            )
        }
    };
    world
        .history
        .note(format!("a forger tries {what} on {id}: {status}"));
    let after = invariants::fingerprint(world, &id);
    if (200..300).contains(&status) || before != after {
        world.violate(
            "forgery_changes_nothing",
            format!(
                "{what} on {id} was answered {status} ({answer}); before {before}, after {after}"
            ),
        );
    }
    let text = answer.to_string();
    if !hidden.is_empty() && text.contains(&hidden) {
        world.violate(
            "no_answer_names_another_tenants_intent",
            format!("{what}: the refusal names the intent: {text}"),
        );
    }
}

/// A viewer of one tenant reads another tenant's intent, its key and the list: every read
/// answers only what the token's tenants hold.
pub(super) fn read_across(world: &mut World, dice: &mut Dice) {
    let Some(i) = pick_order(world, dice, |o| o.id.is_some() && o.tenant != "globex") else {
        return;
    };
    let order = world.orders[i].clone();
    let id = order.id.clone().map(|i| i.to_string()).unwrap_or_default();
    let key = order.action_key.clone().unwrap_or_default();
    // Each read must answer exactly as it would for an intent that does not exist.
    let ghost = IntentId::generate(world.now(), u128::from(dice.next_u64())).to_string();
    let ghost_key = key.replace(&id, &ghost);
    let reads = [
        ("/v1/intents/", id.clone(), ghost.clone()),
        ("/v1/action-keys/", key.clone(), ghost_key.clone()),
        ("/v1/commands?intent_id=", id.clone(), ghost.clone()),
    ];
    for (prefix, real, fake) in reads {
        let (status, answer, _) = world.call(
            Method::GET,
            &format!("{prefix}{real}"),
            "viewer-globex",
            &[],
            None,
        );
        let (ghost_status, ghost_answer, _) = world.call(
            Method::GET,
            &format!("{prefix}{fake}"),
            "viewer-globex",
            &[],
            None,
        );
        let text = answer.to_string().replace(&real, "…");
        let ghost_text = ghost_answer.to_string().replace(&fake, "…");
        if status != ghost_status || text != ghost_text {
            world.violate(
                "no_read_answers_another_tenants_data",
                format!(
                    "a globex viewer read {prefix}{real}: {status} {text}; for no intent at all: \
                     {ghost_status} {ghost_text}"
                ),
            );
        }
    }
    let (status, answer, _) = world.call(
        Method::GET,
        "/v1/intents?limit=200",
        "viewer-globex",
        &[],
        None,
    );
    let foreign = answer["items"].as_array().map_or(0, |items| {
        items.iter().filter(|i| i["tenant"] != "globex").count()
    });
    world.history.note(format!(
        "a globex viewer reads {id} of {}, its key and the list: {status}, {foreign} foreign",
        order.tenant
    ));
    if status != 200 || foreign > 0 {
        world.violate(
            "no_read_answers_another_tenants_data",
            format!(
                "the globex viewer's list answered {status} with {foreign} intents of other tenants"
            ),
        );
    }
}
