//! The `receipts` and `webhook_arrivals` tables. An intent accepts one authoritative receipt;
//! a receipt for an already committed intent with another downstream id is kept as evidence
//! of a duplicate effect, never as a second result. Webhooks are deduplicated by the intent
//! they receipt (whose connector and action key they named) and their event id.

use super::apply::apply_loaded;
use super::intents::{INTENT_COLUMNS, intent_from_row, load_for_update, of_tenants};
use super::sql::{Conn, ConnExt, Dialect, Optional, ToValue, params};
use super::{Applied, ApplyContext, Locked, ReceiptSource, Store, StoreError, to_i64, to_u64};
use crate::domain::{ActionKey, Event, IntentId, IntentState};
use crate::wire::{Intent, Receipt, WebhookOutcome};

/// What observing a receipt did.
#[derive(Debug, Clone)]
pub enum ReceiptObservation {
    /// The intent was open and is now committed.
    Committed(Box<Applied>),
    /// The intent already holds this receipt.
    AlreadyCommitted,
    /// The intent holds another downstream id: a duplicate effect, kept as evidence.
    DuplicateEffect { stored: String, observed: String },
    /// The intent is in a state a receipt cannot move (e.g. closed as cancelled, which the
    /// receipt contradicts; it is kept as evidence for an operator).
    Contradicts { state: IntentState },
}

/// The detail of a send's attempt whose answer named no key and a record another intent's
/// receipt already names (an attempt with it is counted by [`Receipts::refused_answers`]).
pub const HELD_BY_ANOTHER: &str = "a success answer naming a record another intent holds";

/// Why a lookup whose record already commits another intent proves nothing (as
/// [`HELD_BY_ANOTHER`], for a lookup's attempt).
pub const LOOKUP_HELD_BY_ANOTHER: &str = "a lookup answer naming a record another intent holds";

/// The attempts [`Receipts::refused_answers`] counts, as the predicate of their partial
/// index (migration 16; the query must say it in the same words for the index to serve it).
macro_rules! refused_answers_sql {
    () => {
        "a.detail IN ('a success answer naming a record another intent holds', \
         'a lookup answer naming a record another intent holds')"
    };
}

/// [`Receipts::refused_answers`]'s count, by connector.
const REFUSED_ANSWERS_SQL: &str = concat!(
    "SELECT i.connector, count(*) FROM attempts a JOIN intents i ON i.seq = a.intent_seq WHERE ",
    refused_answers_sql!(),
    " GROUP BY i.connector ORDER BY i.connector"
);

/// Receipts from every source and webhook deliveries.
pub trait Receipts {
    /// Observe a receipt for `intent_id` from any source.
    fn observe_receipt(
        &mut self,
        intent_id: &IntentId,
        source: &ReceiptSource,
        now_ms: u64,
    ) -> Result<ReceiptObservation, StoreError>;

    /// Record a webhook delivery from `connector` and, on its first delivery, observe the
    /// receipt it carries. The key must be the stored action key of an intent of that
    /// connector in one of `tenants` (`None`: every tenant), dispatched to it at least once;
    /// anything else is `NotFound`,
    /// alike whether or not such an intent exists elsewhere, and stores nothing.
    ///
    /// Deliveries are deduplicated by `(connector, action key, event id)`: an event id is
    /// the sender's, and one already stored for another key (a mistake or a squatter with
    /// a token of the same connector) never makes a real receipt for this key look like a
    /// duplicate.
    fn record_webhook(
        &mut self,
        connector: &str,
        action_key: &ActionKey,
        tenants: Option<&[String]>,
        source: &ReceiptSource,
        now_ms: u64,
    ) -> Result<WebhookOutcome, StoreError>;

    /// [`Receipts::observe_receipt`] for an intent this write locked.
    fn observe_locked_receipt(
        &mut self,
        locked: &Locked,
        source: &ReceiptSource,
        now_ms: u64,
    ) -> Result<ReceiptObservation, StoreError>;

    /// Every receipt of one intent, oldest first.
    fn receipts_of(&mut self, intent_id: &IntentId) -> Result<Vec<Receipt>, StoreError>;

    /// How many answers, a create's or a lookup's, each connector gave that named no key
    /// and a record another intent held ([`HELD_BY_ANOTHER`], [`LOOKUP_HELD_BY_ANOTHER`]):
    /// a downstream answering from the wrong record. Every connector with one at least,
    /// by name. Read through a partial index that holds only those attempts.
    fn refused_answers(&mut self) -> Result<Vec<(String, u64)>, StoreError>;

    /// Whether `downstream_id` is a record the coordinator's own calls (a create's answer or
    /// a lookup) already proved to be another intent's, of the same connector and operation,
    /// within `intent_id`'s key retention (a day when it has none or it is 0) before
    /// `now_ms`. One record is one order's outcome: asked of an answer that named no key, a
    /// yes means the downstream answered from the wrong record, and the answer proves
    /// nothing. A receipt a webhook brought counts only once such a call named its record
    /// too (a connector's token could name any id); older proofs do not count (a downstream
    /// whose ids start over after a reset). On PostgreSQL the record stays locked until
    /// the transaction ends, so a yes or no holds while this transaction commits.
    fn held_by_another(
        &mut self,
        intent_id: &IntentId,
        downstream_id: &str,
        now_ms: u64,
    ) -> Result<bool, StoreError>;

    /// [`Receipts::held_by_another`] for an intent this write locked.
    fn held_by_another_than(
        &mut self,
        locked: &Locked,
        downstream_id: &str,
        now_ms: u64,
    ) -> Result<bool, StoreError>;
}

impl Receipts for Store {
    fn observe_receipt(
        &mut self,
        intent_id: &IntentId,
        source: &ReceiptSource,
        now_ms: u64,
    ) -> Result<ReceiptObservation, StoreError> {
        let tx = self.conn.savepoint()?;
        let out = observe_in(&tx, intent_id, source, now_ms)?;
        tx.commit()?;
        Ok(out)
    }

    fn observe_locked_receipt(
        &mut self,
        locked: &Locked,
        source: &ReceiptSource,
        now_ms: u64,
    ) -> Result<ReceiptObservation, StoreError> {
        let tx = self.conn.savepoint()?;
        let out = observe_loaded(&tx, locked.seq(), &locked.intent, source, now_ms)?;
        tx.commit()?;
        Ok(out)
    }

    fn record_webhook(
        &mut self,
        connector: &str,
        action_key: &ActionKey,
        tenants: Option<&[String]>,
        source: &ReceiptSource,
        now_ms: u64,
    ) -> Result<WebhookOutcome, StoreError> {
        let event_id = source.event_id.clone().unwrap_or_default();
        let tx = self.conn.savepoint()?;
        // Only an intent whose command was handed to this connector (a dispatch claimed at
        // least once) can have an effect there to receipt. The intent is read whole and
        // locked here, once: the receipt is observed on it as read. Its connector and
        // tenant are in the condition, so another connector's or tenant's intent is
        // neither locked nor waited for.
        let (of_tenants, tenant_values) = of_tenants(tenants, 3);
        let key = action_key.as_str();
        let mut values: Vec<&dyn ToValue> = vec![&key, &connector];
        values.extend(tenant_values);
        let target: Option<(i64, Intent)> = tx
            .one(
                &format!(
                    "SELECT {INTENT_COLUMNS} FROM intents i WHERE i.action_key = ?1 \
                     AND i.connector = ?2{of_tenants} AND i.tier IN ('write', 'financial') \
                     AND i.first_dispatch_at_ms IS NOT NULL{}",
                    tx.dialect().for_update("i")
                ),
                &values,
                intent_from_row,
            )
            .optional()?;
        let Some((seq, intent)) = target else {
            return Err(StoreError::NotFound {
                what: "action key",
                id: action_key.to_string(),
            });
        };
        // Most deliveries are the first: the update finds nothing and nothing is read back
        // (not `RETURNING`, which makes SQLite build a temporary b-tree at every run).
        let again = tx.run(
            "UPDATE webhook_arrivals SET deliveries = deliveries + 1 \
             WHERE intent_seq = ?1 AND event_id = ?2",
            params![seq, event_id],
        )?;
        let seen: Option<u32> = if again == 0 {
            None
        } else {
            Some(tx.one(
                "SELECT deliveries FROM webhook_arrivals WHERE intent_seq = ?1 AND event_id = ?2",
                params![seq, event_id],
                |r| r.get(0),
            )?)
        };
        if let Some(deliveries) = seen {
            tx.commit()?;
            return Ok(WebhookOutcome::Duplicate { deliveries });
        }
        let observation = observe_loaded(&tx, seq, &intent, source, now_ms)?;
        tx.run_held(
            "INSERT INTO webhook_arrivals (intent_seq, event_id, received_at_ms) VALUES (?1, ?2, ?3)",
            params![seq, event_id, to_i64(now_ms)],
        )?;
        tx.commit()?;
        Ok(WebhookOutcome::Recorded {
            committed: matches!(observation, ReceiptObservation::Committed(_)),
        })
    }

    fn held_by_another(
        &mut self,
        intent_id: &IntentId,
        downstream_id: &str,
        now_ms: u64,
    ) -> Result<bool, StoreError> {
        let (seq, intent) = super::intents::load(&*self.conn, intent_id)?;
        held_elsewhere(&*self.conn, seq, &intent, downstream_id, now_ms)
    }

    fn held_by_another_than(
        &mut self,
        locked: &Locked,
        downstream_id: &str,
        now_ms: u64,
    ) -> Result<bool, StoreError> {
        held_elsewhere(
            &*self.conn,
            locked.seq(),
            &locked.intent,
            downstream_id,
            now_ms,
        )
    }

    fn refused_answers(&mut self) -> Result<Vec<(String, u64)>, StoreError> {
        let rows = self.conn.rows(REFUSED_ANSWERS_SQL, params![], |r| {
            Ok((r.get::<String>(0)?, r.get::<i64>(1)?))
        })?;
        Ok(rows.into_iter().map(|(c, n)| (c, to_u64(n))).collect())
    }

    fn receipts_of(&mut self, intent_id: &IntentId) -> Result<Vec<Receipt>, StoreError> {
        let rows = self.conn.rows(
            "SELECT r.id, i.id, r.action_key, r.downstream_id, r.source, r.event_id, r.authoritative, r.received_at_ms \
             FROM receipts r JOIN intents i ON i.seq = r.intent_seq WHERE i.id = ?1 ORDER BY r.seq",
            params![intent_id.as_str()],
            |r| {
            Ok((
                r.get::<String>(0)?,
                r.get::<String>(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
                r.get(6)?,
                r.get::<i64>(7)?,
            ))
        },
        )?;
        let mut out = Vec::new();
        for row in rows {
            out.push(Receipt {
                id: row.0,
                intent_id: Some(row.1.parse()?),
                action_key: row.2,
                downstream_id: row.3,
                source: row.4,
                event_id: row.5,
                authoritative: row.6,
                received_at_ms: to_u64(row.7),
            });
        }
        Ok(out)
    }
}

/// Keep a receipt of the intent `seq`; `authoritative` when it is the one that commits it.
pub(crate) fn insert(
    tx: &dyn Conn,
    seq: i64,
    intent: &Intent,
    source: &ReceiptSource,
    authoritative: bool,
    now_ms: u64,
) -> Result<(), StoreError> {
    if authoritative && proves_holding(source.source) {
        hold_record(tx, intent, &source.downstream_id)?;
    }
    tx.run_held(
        "INSERT INTO receipts (id, intent_seq, action_key, downstream_id, source, event_id, authoritative, received_at_ms) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![
            source.receipt_id.as_str(),
            seq,
            intent.action_key.as_str(),
            source.downstream_id,
            source.source,
            source.event_id,
            authoritative,
            to_i64(now_ms)
        ],
    )?;
    Ok(())
}

/// The sources of a receipt that are the coordinator's own proof of whose a record is: a
/// create's answer or a lookup. A webhook's or an agent's could name any id.
const PROVING_SOURCES: [&str; 2] = ["dispatch", "lookup"];

/// [`PROVING_SOURCES`] as an SQL list, for the statements that ask which receipts hold a
/// record (a literal, so each statement stays one cached text).
macro_rules! proving_sources_sql {
    () => {
        "('dispatch', 'lookup')"
    };
}

/// Whether a receipt from `source` is one of [`PROVING_SOURCES`].
fn proves_holding(source: &str) -> bool {
    PROVING_SOURCES.contains(&source)
}

/// How long a record proved to be one intent's is held against others: the key retention
/// the asking intent was sent under, or a day when it has none (or 0, a downstream that
/// promises none: its record ids are not forgotten any sooner for that).
const HELD_WITHOUT_RETENTION_SECS: u64 = 86_400;

/// On PostgreSQL, wait for and hold until this transaction ends the lock on the record
/// `downstream_id` of `intent`'s connector and operation; nothing on SQLite, whose single
/// writer holds everything already. Taken before a record is proved to be an intent's and
/// before asking whether another intent holds it, so that two coordinators given one record
/// for two intents at the same moment take turns: the second asks after the first
/// committed, and sees it. Sent without waiting for its answer: the statements after it run
/// after it, each reading what was committed when it starts (writers read committed).
fn hold_record(tx: &dyn Conn, intent: &Intent, downstream_id: &str) -> Result<(), StoreError> {
    if tx.dialect() != Dialect::Postgres {
        return Ok(());
    }
    tx.run_held(
        "SELECT pg_advisory_xact_lock(hashtextextended(?1, 0))::text",
        params![format!(
            "record\n{}\n{}\n{downstream_id}",
            intent.connector, intent.operation
        )],
    )
}

/// [`Receipts::held_by_another`] for `intent`, whose row is `seq`.
fn held_elsewhere(
    tx: &dyn Conn,
    seq: i64,
    intent: &Intent,
    downstream_id: &str,
    now_ms: u64,
) -> Result<bool, StoreError> {
    let retention_ms = intent
        .key_retention_secs
        .filter(|&secs| secs > 0)
        .unwrap_or(HELD_WITHOUT_RETENTION_SECS)
        .saturating_mul(1000);
    hold_record(tx, intent, downstream_id)?;
    Ok(tx
        .one(
            concat!(
                "SELECT 1 FROM receipts r JOIN intents i ON i.seq = r.intent_seq \
                 WHERE r.downstream_id = ?1 AND r.authoritative = 1 AND r.intent_seq <> ?2 \
                 AND (r.source IN ",
                proving_sources_sql!(),
                " AND r.received_at_ms >= ?3 OR r.confirmed_at_ms >= ?3) \
                 AND i.connector = ?4 AND i.operation = ?5 LIMIT 1"
            ),
            params![
                downstream_id,
                seq,
                to_i64(now_ms.saturating_sub(retention_ms)),
                intent.connector,
                intent.operation
            ],
            |r| r.get::<i64>(0),
        )
        .optional()?
        .is_some())
}

fn observe_in(
    tx: &dyn Conn,
    intent_id: &IntentId,
    source: &ReceiptSource,
    now_ms: u64,
) -> Result<ReceiptObservation, StoreError> {
    let (seq, intent) = load_for_update(tx, intent_id)?;
    observe_loaded(tx, seq, &intent, source, now_ms)
}

/// [`observe_in`] of the intent `seq` as this transaction read it, locked.
fn observe_loaded(
    tx: &dyn Conn,
    seq: i64,
    intent: &Intent,
    source: &ReceiptSource,
    now_ms: u64,
) -> Result<ReceiptObservation, StoreError> {
    let intent_id = &intent.id;
    match intent.state {
        IntentState::Executing | IntentState::Indeterminate => {
            let ctx = ApplyContext {
                now_ms,
                receipt: Some(source.clone()),
                ..ApplyContext::default()
            };
            let event = Event::ReceiptFound {
                receipt_ref: source.downstream_id.clone(),
            };
            Ok(ReceiptObservation::Committed(Box::new(apply_loaded(
                tx, seq, intent, &event, &ctx,
            )?)))
        }
        IntentState::Committed
            if intent.downstream_ref.as_deref() == Some(source.downstream_id.as_str()) =>
        {
            if proves_holding(source.source) {
                // The receipt that committed it came from outside (a webhook, an agent's
                // report, an operator) and is now proved by the coordinator's own call.
                hold_record(tx, intent, &source.downstream_id)?;
                tx.run_held(
                    concat!(
                        "UPDATE receipts SET confirmed_at_ms = ?1 \
                         WHERE intent_seq = ?2 AND authoritative = 1 AND source NOT IN ",
                        proving_sources_sql!()
                    ),
                    params![to_i64(now_ms), seq],
                )?;
            }
            Ok(ReceiptObservation::AlreadyCommitted)
        }
        state => {
            insert(tx, seq, intent, source, false, now_ms)?;
            // The intent's detail now shows one more receipt (a duplicate effect, or one
            // that contradicts its state): followers of the change feed reload it.
            super::events::announce_intent(tx, intent_id, now_ms)?;
            Ok(match (state, intent.downstream_ref.clone()) {
                (IntentState::Committed, Some(stored)) => ReceiptObservation::DuplicateEffect {
                    stored,
                    observed: source.downstream_id.clone(),
                },
                (state, _) => ReceiptObservation::Contradicts { state },
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{HELD_BY_ANOTHER, LOOKUP_HELD_BY_ANOTHER, PROVING_SOURCES};
    use crate::store::migrations::MIGRATIONS;

    /// The count runs at every scrape: it must read only the refused answers' attempts,
    /// through their partial index, never the whole table.
    #[test]
    fn the_refused_answers_are_counted_through_their_index() {
        use crate::store::Store;
        use crate::store::sql::{ConnExt, params};
        let dir = tempfile::tempdir().expect("temporary directory");
        let store = Store::open(&dir.path().join("db.sqlite")).expect("store opens");
        let plan: Vec<String> = store
            .conn
            .rows(
                &format!("EXPLAIN QUERY PLAN {}", super::REFUSED_ANSWERS_SQL),
                params![],
                |r| r.get(3),
            )
            .expect("plan");
        assert!(
            plan.iter()
                .any(|step| step.contains("USING INDEX attempts_refused_answers")),
            "{plan:?}"
        );
    }

    #[test]
    fn the_refused_answers_index_and_query_name_the_details_written() {
        for detail in [HELD_BY_ANOTHER, LOOKUP_HELD_BY_ANOTHER] {
            let quoted = format!("'{detail}'");
            assert!(refused_answers_sql!().contains(&quoted), "{detail}");
            assert!(MIGRATIONS[15].contains(&quoted), "{detail}");
        }
        let predicate = refused_answers_sql!().trim_start_matches("a.");
        let squeeze = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(squeeze(MIGRATIONS[15]).contains(&squeeze(predicate)));
    }

    #[test]
    fn the_sql_list_of_proving_sources_is_the_list_the_code_checks() {
        let quoted: Vec<String> = PROVING_SOURCES.iter().map(|s| format!("'{s}'")).collect();
        assert_eq!(proving_sources_sql!(), format!("({})", quoted.join(", ")));
    }
}
