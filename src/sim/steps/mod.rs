//! What can happen in one step of a world: agents order, replay, change and repeat orders
//! and report their own work; the coordinator's dispatcher claims, sends and records; its
//! reconciler sweeps and looks keys up; the downstream delivers webhooks; the engineer
//! pauses, resumes, reconciles and closes; a forger tries what no token allows; time passes;
//! the coordinator crashes.

mod agents;
mod coordinator;
mod people;

use self::agents::*;
use self::coordinator::claim;
pub use self::coordinator::{deliver_webhook, look_up, record, send_rows, sweep_once};
use self::people::*;
use super::dice::Dice;
use super::invariants;
use super::world::{Order, World};
use crate::domain::ConsequenceTier;

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
pub(super) const OPERATIONS: &[(&str, ConsequenceTier)] = &[
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

pub(super) fn pick_order(
    world: &World,
    dice: &mut Dice,
    want: impl Fn(&Order) -> bool,
) -> Option<usize> {
    let candidates: Vec<usize> = (0..world.orders.len())
        .filter(|i| want(&world.orders[*i]))
        .collect();
    dice.pick(&candidates).copied()
}
