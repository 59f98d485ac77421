//! The promises a world is held to, each with a name, checked after every step (and some
//! at the moment a send leaves). Every check reads the coordinator's database through a
//! connection of its own and compares it with the downstream's ground truth and with what
//! the participants were told.

use crate::domain::IntentState;
use crate::domain::canonical::canonicalize;
use crate::store::ClaimedRow;
use crate::store::ops::*;
use crate::store::sql::{ConnExt, params};

use super::world::World;

/// One number from `sql`.
pub fn count(world: &World, sql: &str) -> i64 {
    world
        .reader
        .conn()
        .one(sql, params![], |r| r.get(0))
        .unwrap_or(-1)
}

/// The intent holding `action_key`.
pub fn intent_of_key(world: &World, action_key: &str) -> Option<String> {
    world
        .reader
        .conn()
        .one(
            "SELECT id FROM intents WHERE action_key = ?1",
            params![action_key],
            |r| r.get(0),
        )
        .ok()
}

/// Some attempt of intent `id`.
pub fn some_attempt(world: &World, id: &str) -> Option<String> {
    world
        .reader
        .conn()
        .one(
            "SELECT a.id FROM attempts a JOIN intents i ON i.seq = a.intent_seq WHERE i.id = ?1 \
             ORDER BY a.seq LIMIT 1",
            params![id],
            |r| r.get(0),
        )
        .ok()
}

/// Everything of intent `id` a forgery could change, as one text.
pub fn fingerprint(world: &World, id: &str) -> String {
    world
        .reader
        .conn()
        .one(
            "SELECT i.state || '|' || i.attempts || '|' || coalesce(i.downstream_ref, '') || '|' || \
             coalesce(i.authorization_version, '') || '|' || \
             (SELECT count(*) FROM receipts r WHERE r.intent_seq = i.seq) || '|' || \
             (SELECT count(*) FROM transitions t WHERE t.intent_seq = i.seq) || '|' || \
             (SELECT coalesce(group_concat(a.outcome || ':' || a.sent, ','), '') FROM attempts a \
              WHERE a.intent_seq = i.seq) \
             FROM intents i WHERE i.id = ?1",
            params![id],
            |r| r.get(0),
        )
        .unwrap_or_default()
}

/// Checks at the moment the dispatcher is about to send `row`.
pub fn before_send(world: &mut World, row: &ClaimedRow) {
    let id = row.intent_id.clone();
    let Ok(intent) = world.reader.intent(&id) else {
        world.violate(
            "sends_only_for_stored_intents",
            format!("{id} is about to be sent and is not stored"),
        );
        return;
    };
    // What leaves is what the agent ordered, in canonical form: not another order's
    // arguments, and not an empty body. Compared as values with the order itself, so that a
    // fault of the canonical form that the coordinator and this check would share still
    // shows, and as text with its canonical form.
    let ordered = world
        .orders
        .iter()
        .find(|o| o.tenant == intent.tenant.as_str() && o.caller_key == intent.caller_key)
        .map(|o| o.args(false));
    let sent = serde_json::from_str::<serde_json::Value>(&row.payload_json).ok();
    match ordered {
        Some(args)
            if sent.as_ref() == Some(&args)
                && canonicalize(&args).is_ok_and(|c| c.json == row.payload_json) => {}
        Some(args) => world.violate(
            "sends_what_was_ordered",
            format!(
                "{id} is about to be sent with {:?}; its order's arguments are {args}",
                row.payload_json
            ),
        ),
        None => world.violate(
            "sends_what_was_ordered",
            format!("{id} is about to be sent and no agent ordered it"),
        ),
    }
    let now = world.now();
    if intent.state != IntentState::Executing {
        world.violate(
            "sent_only_while_executing",
            format!("{id} is sent while {}", intent.state),
        );
    }
    if now > intent.deadline_at_ms {
        world.violate(
            "nothing_sent_after_the_deadline",
            format!(
                "{id} is sent {} ms after its deadline",
                now - intent.deadline_at_ms
            ),
        );
    }
    if paused(world, intent.tenant.as_str(), &intent.operation) {
        world.violate(
            "nothing_sent_while_paused",
            format!("{id} is sent while a pause covers it"),
        );
    }
    if world
        .downstream
        .lock()
        .unproven
        .contains(row.action_key.as_str())
    {
        world.violate(
            "no_resend_without_proof",
            format!(
                "{} is sent again while its last send's outcome is unproven (no answer that \
                 proves it, no lookup since)",
                row.action_key
            ),
        );
    }
    let retention_ms = world.setup.declared_retention_secs * 1000;
    let first = world
        .downstream
        .lock()
        .landings
        .get(row.action_key.as_str())
        .and_then(|l| l.first().copied());
    if let Some(first) = first
        && !world.setup.trusts_a_lying_overload()
        && now + world.setup.timeout_ms >= first + retention_ms
    {
        world.violate(
            "nothing_sent_past_the_keys_retention",
            format!(
                "{} is sent {} ms after it first landed; the key is kept {} ms",
                row.action_key,
                now - first,
                retention_ms
            ),
        );
    }
}

/// Whether a pause the engineer applied covers an intent of `tenant` and `operation`.
fn paused(world: &World, tenant: &str, operation: &str) -> bool {
    world.pauses.iter().any(|(_, scope)| {
        scope.tenant.as_deref() == Some(tenant) || scope.operation.as_deref() == Some(operation)
    })
}

/// Where the last check stopped reading transitions and evidence.
#[derive(Debug, Default, Clone, Copy)]
pub struct Checked {
    pub transition_seq: i64,
    pub evidence: usize,
}

/// One intent as the checks read it.
struct Row {
    id: String,
    tenant: String,
    operation: String,
    tier: String,
    action_key: String,
    state: String,
    attempts: i64,
    max_attempts: i64,
    downstream_ref: Option<String>,
}

fn intents(world: &World) -> Vec<Row> {
    world
        .reader
        .conn()
        .rows(
            "SELECT id, tier, action_key, state, attempts, max_attempts, downstream_ref, tenant, \
             operation FROM intents",
            params![],
            |r| {
                Ok(Row {
                    id: r.get(0)?,
                    tier: r.get(1)?,
                    action_key: r.get(2)?,
                    state: r.get(3)?,
                    attempts: r.get(4)?,
                    max_attempts: r.get(5)?,
                    downstream_ref: r.get(6)?,
                    tenant: r.get(7)?,
                    operation: r.get(8)?,
                })
            },
        )
        .unwrap_or_default()
}

/// Every invariant, after a step.
pub fn after_step(world: &mut World) -> anyhow::Result<()> {
    lookups_paced(world);
    let honest = world.setup.downstream_is_honest();
    let rows = intents(world);
    let mut found = Vec::new();
    {
        let downstream = world.downstream.lock();
        for row in &rows {
            let mutating = row.tier == "write" || row.tier == "financial";
            if row.attempts > row.max_attempts {
                found.push((
                    "attempts_within_budget",
                    format!(
                        "{} used {} of {} attempts",
                        row.id, row.attempts, row.max_attempts
                    ),
                ));
            }
            if !mutating {
                continue;
            }
            let records = downstream.records_for(&row.action_key);
            // A key some answer named another key's record for, naming no key: the
            // coordinator cannot tell a record it has not seen before from the right one,
            // so it may commit to any record the downstream made (and refuses one another
            // intent holds: `one_record_one_intent`).
            let lied_about = downstream.lied_about.contains(&row.action_key);
            let evidenced = |r: &String| {
                if lied_about {
                    downstream.holds_record(r)
                } else {
                    records.contains(r)
                }
            };
            if row.state == "committed" && !row.downstream_ref.as_ref().is_some_and(evidenced) {
                found.push((
                    "committed_only_with_evidence",
                    format!(
                        "{} is committed as {:?}; the downstream holds {records:?}",
                        row.id, row.downstream_ref
                    ),
                ));
            }
            // Rejected means nothing was applied, unless the connector's owner vouched for
            // answers the downstream then broke (an honest world's downstream never does).
            if honest && row.state == "rejected" && !records.is_empty() {
                found.push((
                    "a_rejected_intent_has_no_effect",
                    format!("{} is rejected; the downstream holds {records:?}", row.id),
                ));
            }
            if row.state == "cancelled" && !records.is_empty() {
                found.push((
                    "a_cancelled_intent_has_no_effect",
                    format!("{} is cancelled; the downstream holds {records:?}", row.id),
                ));
            }
            if honest && records.len() > 1 {
                found.push((
                    "at_most_one_effect_per_key",
                    format!(
                        "{} has {} effects: {records:?}",
                        row.action_key,
                        records.len()
                    ),
                ));
            }
        }
    }
    let missing = world
        .answered
        .iter()
        .filter(|id| !rows.iter().any(|r| &r.id == *id))
        .cloned()
        .collect::<Vec<_>>();
    for id in missing {
        found.push((
            "every_answered_write_survives",
            format!("{id} was answered to its agent and is not stored"),
        ));
    }

    let since = world.checked.transition_seq;
    let left: Vec<(i64, String, String, String)> = world
        .reader
        .conn()
        .rows(
            "SELECT t.seq, i.id, t.to_state, t.event FROM transitions t JOIN intents i ON i.seq = t.intent_seq \
             WHERE t.seq > ?1 AND t.from_state = 'indeterminate' AND t.to_state <> 'indeterminate' ORDER BY t.seq",
            params![since],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .unwrap_or_default();
    for (_, id, to, event) in &left {
        if !matches!(
            event.as_str(),
            "receipt_found" | "proved_absent_retry" | "operator_close"
        ) {
            found.push((
                "indeterminate_left_only_by_evidence",
                format!("{id} left indeterminate for {to} on {event}"),
            ));
        }
    }
    world.checked.transition_seq = count(world, "SELECT coalesce(max(seq), 0) FROM transitions");

    let fresh: Vec<(String, String)> = world.evidence[world.checked.evidence..].to_vec();
    for (id, downstream_id) in fresh {
        let kept = world
            .reader
            .conn()
            .one(
                "SELECT EXISTS (SELECT 1 FROM receipts r JOIN intents i ON i.seq = r.intent_seq \
                 WHERE i.id = ?1 AND r.downstream_id = ?2) \
                 OR EXISTS (SELECT 1 FROM intents WHERE id = ?1 AND downstream_ref = ?2)",
                params![id.as_str(), downstream_id.as_str()],
                |r| r.get::<bool>(0),
            )
            .unwrap_or(false);
        if !kept {
            found.push((
                "evidence_is_kept",
                format!("{downstream_id} was acknowledged for {id} and is not stored"),
            ));
        }
    }
    world.checked.evidence = world.evidence.len();
    found.extend(
        records_held_twice(world)?
            .into_iter()
            .map(|detail| ("one_record_one_intent", detail)),
    );
    for (name, detail) in found {
        world.violate(name, detail);
    }
    Ok(())
}

/// Records two intents of one connector and operation were committed to by the
/// coordinator's own calls (a create's answer or a lookup), the second within the first's
/// hold (the second intent's key retention, or a day when it has none): each a record
/// another intent held when it was taken.
fn records_held_twice(world: &World) -> anyhow::Result<Vec<String>> {
    Ok(world
        .reader
        .conn()
        .rows(
            "SELECT r2.downstream_id, i1.id, i2.id FROM receipts r1 \
             JOIN intents i1 ON i1.seq = r1.intent_seq \
             JOIN receipts r2 ON r2.downstream_id = r1.downstream_id AND r2.intent_seq <> r1.intent_seq \
             JOIN intents i2 ON i2.seq = r2.intent_seq \
             WHERE r1.authoritative = 1 AND r2.authoritative = 1 \
             AND r1.source IN ('dispatch', 'lookup') AND r2.source IN ('dispatch', 'lookup') \
             AND i1.connector = i2.connector AND i1.operation = i2.operation \
             AND (r1.received_at_ms < r2.received_at_ms \
                  OR r1.received_at_ms = r2.received_at_ms AND r1.seq < r2.seq) \
             AND r2.received_at_ms - r1.received_at_ms \
                 < coalesce(nullif(i2.key_retention_secs, 0), 86400) * 1000",
            params![],
            |r| Ok((r.get::<String>(0)?, r.get::<String>(1)?, r.get::<String>(2)?)),
        )?
        .into_iter()
        .map(|(record, first, second)| {
            format!("{record} commits {first} and then {second}, which it was held against")
        })
        .collect())
}

/// The checks once the world has settled: every effect's intent is committed or visibly
/// indeterminate.
pub fn at_rest(world: &mut World) {
    // A connector configured to trust bare overload answers, in front of a downstream that
    // applies and then answers so, is told to believe nothing happened: that world can
    // hide an effect, by its operator's choice.
    if world.setup.trusts_a_lying_overload() {
        return;
    }
    let rows = intents(world);
    let mut found = Vec::new();
    {
        let downstream = world.downstream.lock();
        for (key, records) in downstream.keys_with_effects() {
            let Some(row) = rows.iter().find(|r| &r.action_key == key) else {
                found.push((
                    "every_effect_has_its_intent",
                    format!("{key} has effects {records:?} and no intent"),
                ));
                continue;
            };
            // A downstream that forgets keys sooner than its connector says answers a
            // lookup past that time "not found" for a record it made. Held to its word, the
            // coordinator plans the send again, and a pause still in force holds that send:
            // the intent rests executing until the pause ends, when the send goes out and the
            // duplicate the forgotten key lets through is shown, as such a world allows.
            let held_by_pause = row.state == "executing"
                && !world.setup.downstream_is_honest()
                && paused(world, &row.tenant, &row.operation);
            if row.state != "committed" && row.state != "indeterminate" && !held_by_pause {
                found.push((
                    "every_effect_ends_committed_or_indeterminate",
                    format!(
                        "{} holds effects {records:?} and rests {}",
                        row.id, row.state
                    ),
                ));
            }
        }
    }
    for (name, detail) in found {
        world.violate(name, detail);
    }
}

/// Automatic lookups stay within their budget, and every lookup made is counted on its
/// intent.
fn lookups_paced(world: &mut World) {
    let budget = world.state.config.lookups.budget;
    let over = count(
        world,
        &format!("SELECT count(*) FROM intents WHERE automatic_lookups > {budget}"),
    );
    if over != 0 {
        world.violate(
            "automatic_lookups_within_budget",
            format!("{over} intents were looked up automatically more than {budget} times"),
        );
    }
    let uncounted = count(
        world,
        "SELECT count(*) FROM intents i WHERE i.lookups <> (SELECT count(*) FROM attempts a \
         WHERE a.intent_seq = i.seq AND a.kind = 'lookup')",
    );
    if uncounted != 0 {
        world.violate(
            "every_lookup_counted",
            format!("{uncounted} intents count other lookups than their attempts show"),
        );
    }
}
