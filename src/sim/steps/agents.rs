//! The agents' steps: order, replay in either script, change an order under its key, repeat
//! one on purpose under a new key, authorise, ask for dispatch, report their own work.

use axum::http::Method;
use serde_json::{Value, json};

use super::pick_order;
use crate::domain::IntentId;
use crate::sim::dice::Dice;
use crate::sim::invariants;
use crate::sim::world::{Order, TENANTS, World};

use super::OPERATIONS;

pub(super) fn order_body(order: &Order, persian: bool) -> Value {
    json!({
        "tenant": order.tenant,
        "actor": "agent:kharid-bot",
        "purpose": "restock paper",
        "operation": order.operation,
        "tool": if order.consequence.is_mutating() { "erp" } else { "llm" },
        "consequence": order.consequence,
        "args": order.args(persian),
        "deadline_secs": 30 + (order.amount % 300),
        "max_attempts": 1 + (order.amount % 5),
        "release_id": "procure-agent@2.4.0",
        "locale": if persian { "fa-IR" } else { "en-US" },
        "connector": "erp",
    })
}

/// Send `order` under its key; the answer, and whether it was a replay.
pub(super) fn send_order(world: &mut World, order: &Order, persian: bool) -> (u16, Value, bool) {
    let body = order_body(order, persian);
    world.call(
        Method::POST,
        "/v1/intents",
        order.agent,
        &[("idempotency-key", &order.caller_key)],
        Some(&body),
    )
}

pub(super) fn learn(world: &mut World, index: usize, answer: &Value) {
    let id = answer["id"]
        .as_str()
        .and_then(|s| s.parse::<IntentId>().ok());
    if let Some(id) = id {
        world.answered.insert(id.to_string());
        world.orders[index].id = Some(id);
        world.orders[index].action_key = answer["action_key"].as_str().map(str::to_string);
    }
}

pub(super) fn create(world: &mut World, dice: &mut Dice) {
    let (tenant, agent) = *dice.pick(TENANTS).unwrap_or(&TENANTS[0]);
    let (operation, consequence) = *dice.pick(OPERATIONS).unwrap_or(&OPERATIONS[0]);
    let order = Order {
        tenant,
        agent,
        caller_key: format!("order-{}", world.step),
        amount: dice.between(1, 99_999),
        operation,
        consequence,
        id: None,
        action_key: None,
        stage: 0,
    };
    let persian = dice.chance(0.5);
    // Some agents hang up before the answer: mid-request (the handler is dropped where it
    // first waits) or just before reading it.
    let hang_up = dice.weighted(&[80, 10, 10]);
    let caller_key = order.caller_key.clone();
    world.orders.push(order.clone());
    let index = world.orders.len() - 1;
    if hang_up == 1 {
        let body = order_body(&order, persian);
        world.call_and_hang_up(
            Method::POST,
            "/v1/intents",
            agent,
            &[("idempotency-key", &caller_key)],
            Some(&body),
        );
        world.history.note(format!(
            "{agent} orders {operation} as {caller_key} ({}) and hangs up mid-request",
            if persian { "fa" } else { "en" }
        ));
        return;
    }
    let (status, answer, _) = send_order(world, &order, persian);
    world.history.note(format!(
        "{agent} orders {operation} as {caller_key} ({}): {status}{}",
        if persian { "fa" } else { "en" },
        if hang_up == 2 {
            ", but hangs up before reading it"
        } else {
            ""
        }
    ));
    if status != 201 {
        world.violate(
            "valid_order_created",
            format!("a valid new order was answered {status}: {answer}"),
        );
    } else if hang_up == 0 {
        learn(world, index, &answer);
    }
}

pub(super) fn replay(world: &mut World, dice: &mut Dice) {
    let Some(i) = pick_order(world, dice, |_| true) else {
        return;
    };
    let order = world.orders[i].clone();
    let persian = dice.chance(0.5);
    let (status, answer, replayed) = send_order(world, &order, persian);
    world.history.note(format!(
        "{} replays {} ({}): {status}",
        order.agent,
        order.caller_key,
        if persian { "fa" } else { "en" }
    ));
    if status == 201 && order.id.is_none() {
        // The first request was dropped before it reached the store: this one created it.
        learn(world, i, &answer);
        return;
    }
    if status != 200 || !replayed {
        world.violate(
            "replay_answers_the_first_intent",
            format!(
                "a replay of {} was answered {status} (replayed: {replayed}): {answer}",
                order.caller_key
            ),
        );
        return;
    }
    let id = answer["id"].as_str().unwrap_or_default();
    match &order.id {
        Some(known) if known.as_str() != id => world.violate(
            "replay_answers_the_first_intent",
            format!("{} first named {known}, now {id}", order.caller_key),
        ),
        Some(_) => {}
        None => learn(world, i, &answer),
    }
}

pub(super) fn change(world: &mut World, dice: &mut Dice) {
    let Some(i) = pick_order(world, dice, |_| true) else {
        return;
    };
    let mut changed = world.orders[i].clone();
    changed.amount += 1 + dice.below(1_000);
    let before = invariants::count(world, "SELECT count(*) FROM intents");
    let (status, answer, _) = send_order(world, &changed, dice.chance(0.5));
    world.history.note(format!(
        "{} changes the amount under {}: {status}",
        changed.agent, changed.caller_key
    ));
    let after = invariants::count(world, "SELECT count(*) FROM intents");
    if (200..300).contains(&status) || after != before {
        world.violate(
            "a_changed_order_needs_a_new_key",
            format!("answered {status} ({answer}); intents {before} → {after}"),
        );
    }
}

pub(super) fn repeat(world: &mut World, dice: &mut Dice) {
    let Some(i) = pick_order(world, dice, |o| o.id.is_some()) else {
        return;
    };
    let mut again = world.orders[i].clone();
    again.caller_key = format!("order-{}", world.step);
    again.id = None;
    again.action_key = None;
    again.stage = 0;
    let (status, answer, replayed) = send_order(world, &again, dice.chance(0.5));
    world.history.note(format!(
        "{} repeats the order of {} on purpose as {}: {status}",
        again.agent, world.orders[i].caller_key, again.caller_key
    ));
    let first = world.orders[i].id.clone();
    world.orders.push(again);
    let index = world.orders.len() - 1;
    let same = first.is_some_and(|f| answer["id"].as_str() == Some(f.as_str()));
    if status != 201 || replayed || same {
        world.violate(
            "a_new_key_is_a_new_intent",
            format!("answered {status} (replayed: {replayed}): {answer}"),
        );
    } else {
        learn(world, index, &answer);
    }
}

/// The world's approver token.
const APPROVER: &str = "approver";

pub(super) fn authorize(world: &mut World, dice: &mut Dice) {
    // Mostly the next order waiting for its approval; now and then any order again.
    let waiting = |o: &Order| o.id.is_some() && o.stage == 0;
    let Some(i) = (if dice.chance(0.8) {
        pick_order(world, dice, waiting)
    } else {
        None
    })
    .or_else(|| pick_order(world, dice, |o| o.id.is_some())) else {
        return;
    };
    let order = world.orders[i].clone();
    let id = order.id.clone().map(|i| i.to_string()).unwrap_or_default();
    // The approver, a principal of its own, approves what the agents create.
    let body = json!({"authorization_version": "policy-v7"});
    let (status, _, _) = world.call(
        Method::POST,
        &format!("/v1/intents/{id}/authorize"),
        APPROVER,
        &[],
        Some(&body),
    );
    world
        .history
        .note(format!("the approver authorises {id}: {status}"));
    if status == 200 {
        world.orders[i].stage = world.orders[i].stage.max(1);
    }
}

pub(super) fn agent_dispatch(world: &mut World, dice: &mut Dice) {
    let ready = |o: &Order| o.id.is_some() && o.consequence.is_mutating() && o.stage == 1;
    let Some(i) = (if dice.chance(0.8) {
        pick_order(world, dice, ready)
    } else {
        None
    })
    .or_else(|| {
        pick_order(world, dice, |o| {
            o.id.is_some() && o.consequence.is_mutating()
        })
    }) else {
        return;
    };
    let order = world.orders[i].clone();
    let id = order.id.clone().map(|i| i.to_string()).unwrap_or_default();
    if order.stage == 1 {
        world.orders[i].stage = 2;
    }
    let (status, _, _) = world.call(
        Method::POST,
        &format!("/v1/intents/{id}/dispatch"),
        order.agent,
        &[],
        None,
    );
    world
        .history
        .note(format!("{} asks to dispatch {id}: {status}", order.agent));
    // The send the request claimed in its own write, if it did, leaves as the dispatcher's do.
    let claimed = world.state.send_slots.take_handed();
    if !claimed.is_empty() {
        world
            .history
            .note(format!("the request claimed the send of {id} itself"));
        super::coordinator::send_rows(world, claimed);
    }
}

pub(super) fn report(world: &mut World, dice: &mut Dice) {
    let Some(i) = pick_order(world, dice, |o| {
        o.id.is_some() && !o.consequence.is_mutating()
    }) else {
        return;
    };
    let order = world.orders[i].clone();
    let id = order.id.clone().map(|i| i.to_string()).unwrap_or_default();
    let kind = *dice
        .pick(&["retrieval", "inference", "inference"])
        .unwrap_or(&"inference");
    let mut body = json!({"kind": kind, "provider": *dice.pick(&["openai", "anthropic"]).unwrap_or(&"openai")});
    if dice.chance(0.3) {
        body["hedge_group"] = json!(format!("hedge-{}", world.step));
    }
    let (status, answer, _) = world.call(
        Method::POST,
        &format!("/v1/intents/{id}/attempts"),
        order.agent,
        &[],
        Some(&body),
    );
    world.history.note(format!(
        "{} reports a {kind} on {id}: {status}",
        order.agent
    ));
    let Some(attempt) = answer["id"].as_str().map(str::to_string) else {
        return;
    };
    if dice.chance(0.2) {
        world
            .history
            .note("… and hangs up without saying how it ended".to_string());
        return;
    }
    let outcome = *dice
        .pick(&["succeeded", "failed", "timed_out"])
        .unwrap_or(&"succeeded");
    let (status, _, _) = world.call(
        Method::PATCH,
        &format!("/v1/intents/{id}/attempts/{attempt}"),
        order.agent,
        &[],
        Some(&json!({"outcome": outcome})),
    );
    world
        .history
        .note(format!("… it ended {outcome}: {status}"));
}
