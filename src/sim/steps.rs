//! What can happen in one step of a world: agents order, replay, change and repeat orders
//! and report their own work; the coordinator's dispatcher claims, sends and records; its
//! reconciler sweeps and looks keys up; the downstream delivers webhooks; the engineer
//! pauses, resumes, reconciles and closes; a forger tries what no token allows; time passes;
//! the coordinator crashes.

use axum::http::Method;
use serde_json::{Value, json};

use super::dice::Dice;
use super::invariants;
use super::world::{InTransit, Order, TENANTS, World};
use crate::coordinator::core::dispatch;
use crate::coordinator::core::reconcile::{self, Begin, LookupResult};
use crate::coordinator::core::sweep;
use crate::domain::{ConsequenceTier, IntentId};
use crate::store::StoreError;
use crate::store::ops::*;
use crate::wire::ScopeBody;

/// Every kind of step, with how often it is drawn.
const KINDS: &[(Kind, u64)] = &[
    (Kind::Create, 6),
    (Kind::Replay, 4),
    (Kind::Change, 2),
    (Kind::Repeat, 2),
    (Kind::Authorize, 8),
    (Kind::Dispatch, 8),
    (Kind::Report, 3),
    (Kind::Read, 2),
    (Kind::Claim, 14),
    (Kind::Record, 12),
    (Kind::Sweep, 6),
    (Kind::Webhook, 5),
    (Kind::Tick, 10),
    (Kind::Jump, 2),
    (Kind::Pause, 2),
    (Kind::Reconcile, 2),
    (Kind::Close, 2),
    (Kind::Forge, 3),
    (Kind::Crash, 1),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Create,
    Replay,
    Change,
    Repeat,
    Authorize,
    Dispatch,
    Report,
    Read,
    Claim,
    Record,
    Sweep,
    Webhook,
    Tick,
    Jump,
    Pause,
    Reconcile,
    Close,
    Forge,
    Crash,
}

/// What an order may be.
const OPERATIONS: &[(&str, ConsequenceTier)] = &[
    ("purchase_order.create", ConsequenceTier::Write),
    ("inventory.reserve", ConsequenceTier::Write),
    ("payment.initiate", ConsequenceTier::Financial),
    ("quote.compare", ConsequenceTier::Compute),
    ("catalog.search", ConsequenceTier::Read),
];

/// Run step number `world.step`: draw what happens, do it, check every invariant.
pub fn run_step(world: &mut World) -> anyhow::Result<()> {
    let mut dice = world.dice(0);
    world.downstream.lock().dice = world.dice(1);
    world.history.begin(world.step);
    let weights: Vec<u64> = KINDS.iter().map(|(_, w)| *w).collect();
    let kind = KINDS[dice.weighted(&weights)].0;
    match kind {
        Kind::Create => create(world, &mut dice),
        Kind::Replay => replay(world, &mut dice),
        Kind::Change => change(world, &mut dice),
        Kind::Repeat => repeat(world, &mut dice),
        Kind::Authorize => authorize(world, &mut dice),
        Kind::Dispatch => agent_dispatch(world, &mut dice),
        Kind::Report => report(world, &mut dice),
        Kind::Read => read_across(world, &mut dice),
        Kind::Claim => claim(world, &mut dice)?,
        Kind::Record => {
            if !world.in_transit.is_empty() {
                let i = dice.below(world.in_transit.len() as u64) as usize;
                record(world, i)?;
            }
        }
        Kind::Sweep => sweep_once(world, &mut dice)?,
        Kind::Webhook => deliver_webhook(world, &mut dice),
        Kind::Tick => advance(world, dice.between(10, 1_500)),
        Kind::Jump => {
            let far = dice.between(world.setup.lease_ms + 1, 150_000);
            advance(world, far);
        }
        Kind::Pause => pause(world, &mut dice),
        Kind::Reconcile => operator_reconcile(world, &mut dice),
        Kind::Close => close(world, &mut dice),
        Kind::Forge => forge(world, &mut dice),
        Kind::Crash => {
            let frozen = dice.chance(0.3);
            world.history.note(format!(
                "the coordinator {}; {} sends in transit {}",
                if frozen {
                    "freezes and a new one starts"
                } else {
                    "crashes and restarts"
                },
                world.in_transit.len(),
                if frozen { "wait" } else { "are lost" }
            ));
            world.crash(frozen)?;
        }
    }
    invariants::after_step(world)?;
    Ok(())
}

pub fn advance(world: &mut World, ms: u64) {
    world.clock.advance_ms(ms);
    world.history.note(format!("{ms} ms pass"));
}

fn amount_text(amount: u64, persian: bool) -> Value {
    if persian {
        let digits: String = amount
            .to_string()
            .chars()
            .map(|c| char::from_u32(0x06F0 + c.to_digit(10).unwrap_or(0)).unwrap_or(c))
            .collect();
        Value::String(digits)
    } else {
        json!(amount)
    }
}

fn order_body(order: &Order, persian: bool) -> Value {
    json!({
        "tenant": order.tenant,
        "actor": "agent:kharid-bot",
        "purpose": "restock paper",
        "operation": order.operation,
        "tool": if order.consequence.is_mutating() { "erp" } else { "llm" },
        "consequence": order.consequence,
        "args": {"item": "A4 paper", "qty": 12, "amount": amount_text(order.amount, persian)},
        "deadline_secs": 30 + (order.amount % 300),
        "max_attempts": 1 + (order.amount % 5),
        "release_id": "procure-agent@2.4.0",
        "locale": if persian { "fa-IR" } else { "en-US" },
        "connector": "erp",
    })
}

/// Send `order` under its key; the answer, and whether it was a replay.
fn send_order(world: &mut World, order: &Order, persian: bool) -> (u16, Value, bool) {
    let body = order_body(order, persian);
    world.call(
        Method::POST,
        "/v1/intents",
        order.agent,
        &[("idempotency-key", &order.caller_key)],
        Some(&body),
    )
}

fn learn(world: &mut World, index: usize, answer: &Value) {
    let id = answer["id"]
        .as_str()
        .and_then(|s| s.parse::<IntentId>().ok());
    if let Some(id) = id {
        world.answered.insert(id.to_string());
        world.orders[index].id = Some(id);
        world.orders[index].action_key = answer["action_key"].as_str().map(str::to_string);
    }
}

fn create(world: &mut World, dice: &mut Dice) {
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

fn pick_order(world: &World, dice: &mut Dice, want: impl Fn(&Order) -> bool) -> Option<usize> {
    let candidates: Vec<usize> = (0..world.orders.len())
        .filter(|i| want(&world.orders[*i]))
        .collect();
    dice.pick(&candidates).copied()
}

fn replay(world: &mut World, dice: &mut Dice) {
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

fn change(world: &mut World, dice: &mut Dice) {
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

fn repeat(world: &mut World, dice: &mut Dice) {
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

fn authorize(world: &mut World, dice: &mut Dice) {
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
    let body = json!({"authorization_version": "policy-v7", "approver": "s.karimi"});
    let (status, _, _) = world.call(
        Method::POST,
        &format!("/v1/intents/{id}/authorize"),
        order.agent,
        &[],
        Some(&body),
    );
    world
        .history
        .note(format!("{} authorises {id}: {status}", order.agent));
    if status == 200 {
        world.orders[i].stage = world.orders[i].stage.max(1);
    }
}

fn agent_dispatch(world: &mut World, dice: &mut Dice) {
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
}

fn report(world: &mut World, dice: &mut Dice) {
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

fn claim(world: &mut World, dice: &mut Dice) -> anyhow::Result<()> {
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
        // What the answer proves once recorded: a record's id, a refusal of the key, or
        // (by the connector's owner's word) a bare overload answer.
        let definitive = landed
            && matches!(&call, crate::coordinator::core::call::Call::Replied(r)
                if r.is_success() || r.status == 409 || (vouched && r.status == 503 && r.retry_after_ms.is_none()));
        let result = dispatch::interpret(&call, bare);
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
    let receipt = result.downstream_id().map(str::to_string);
    let outcome = world.write(move |s| dispatch::record(s, &row, result, now, &*entropy));
    world.history.note(format!(
        "records the answer for {} (fence {}, process {}): {outcome:?}",
        sent.row.intent_id, sent.row.fence, sent.incarnation
    ));
    match outcome {
        Ok(_) => {
            if sent.definitive {
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
                let (row, entropy, id) = (
                    sent.row.clone(),
                    world.entropy.clone(),
                    downstream_id.clone(),
                );
                let observed = world
                    .write(move |s| dispatch::observe_fenced_receipt(s, &row, &id, now, &*entropy));
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
    let stalled = world.write(|s| s.stalled_executing(50))?;
    for id in stalled {
        let (rid, entropy) = (id.clone(), world.entropy.clone());
        let follow = world.write(move |s| sweep::replan(s, &rid, now, &*entropy));
        world
            .history
            .note(format!("re-plans the stalled {id}: {follow:?}"));
    }
    let due = world.write(|s| s.indeterminate_batch(50))?;
    let take = dice.between(1, 6) as usize;
    for id in due.into_iter().take(take) {
        look_up(world, &id)?;
    }
    Ok(())
}

/// Look one intent up, as the reconciler does.
pub fn look_up(world: &mut World, id: &IntentId) -> anyhow::Result<()> {
    let (config, rid, now, entropy) = (
        world.state.config.clone(),
        id.clone(),
        world.now(),
        world.entropy.clone(),
    );
    let begun = world.write(move |s| reconcile::begin(s, &config, &rid, now, &*entropy))?;
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

fn command(world: &mut World, body: Value) -> (u16, Value) {
    world.commands += 1;
    let (status, answer, _) =
        world.call(Method::POST, "/v1/commands", "engineer", &[], Some(&body));
    (status, answer)
}

fn pause(world: &mut World, dice: &mut Dice) {
    if !world.pauses.is_empty() && dice.chance(0.5) {
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
        if status == 200 && answer["status"] == "applied" {
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
    if status == 200 && answer["status"] == "applied" {
        world.pauses.push((id, scope));
    }
}

fn operator_reconcile(world: &mut World, dice: &mut Dice) {
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

fn close(world: &mut World, dice: &mut Dice) {
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
        && status == 200
        && answer["status"] == "applied"
    {
        world.evidence.push((id, reference));
    }
}

fn forge(world: &mut World, dice: &mut Dice) {
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
    let (what, status, answer, hidden) = match dice.below(5) {
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
        _ => {
            let (s, a, _) = world.call(
                Method::POST,
                &format!("/v1/intents/{id}/authorize"),
                other_agent,
                &[],
                Some(&json!({"authorization_version": "v1", "approver": "mallory"})),
            );
            ("another tenant's agent authorising", s, a, key.clone())
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
fn read_across(world: &mut World, dice: &mut Dice) {
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
