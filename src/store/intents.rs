//! The `intents` and `ingest_keys` tables: creating an intent by the caller's key (or
//! replaying it), reading one intent, and the row mapping every intent query shares.

use super::sql::{Conn, ConnExt, Dialect, Optional, Row, ToValue, params};
use super::{Store, StoreError, events, to_i64, to_u64};
use crate::domain::{
    ActionKey, ConsequenceTier, IntentId, IntentState, Locale, RetryOwner, Tenant,
};
use crate::wire::Intent;

/// A validated intent as the ingest API hands it to the store.
#[derive(Debug, Clone)]
pub struct NewIntent {
    pub id: IntentId,
    pub tenant: Tenant,
    pub caller_key: String,
    /// The principal (token name) that sent the key.
    pub principal: String,
    pub actor: String,
    pub purpose: String,
    pub operation: String,
    pub tool: String,
    pub tier: ConsequenceTier,
    pub args_json: String,
    pub canonical_json: String,
    pub args_hash: String,
    pub search_text: String,
    pub release_id: String,
    pub locale: Locale,
    pub connector: String,
    pub max_attempts: u32,
    pub created_at_ms: u64,
    pub deadline_at_ms: u64,
    /// The connector's key retention when the intent was created; replaced by the one its
    /// key is first sent under, when it is.
    pub key_retention_secs: Option<u64>,
    /// Why the tenant's policy refuses a new intent of this request: a key that already
    /// names an intent still replays it (the same key, the same answer), and a new one
    /// stores nothing.
    pub refused: Option<String>,
    /// The links the caller named: its workflow, the parent intent, the intent replaced.
    pub links: Links,
}

/// How a new intent is linked to others of its tenant.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Links {
    pub workflow_id: Option<String>,
    pub parent_intent_id: Option<IntentId>,
    pub supersedes: Option<IntentId>,
}

/// Why a link of a new intent is refused. Nothing is stored.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LinkRefusal {
    /// The named intent is not one of the tenant's (whether it exists elsewhere is not said).
    #[error("no intent `{id}` in this tenant")]
    Unknown { field: &'static str, id: String },
    /// The intent to replace is already replaced by another.
    #[error("intent `{id}` is already superseded by `{by}`; supersede the latest revision instead")]
    AlreadySuperseded { id: String, by: String },
    /// The intent to replace may have crossed the action boundary and is still open.
    #[error(
        "intent `{id}` is {state} and may have crossed the action boundary; cancel it and wait \
         until it is settled, or close it, before superseding it"
    )]
    StillOpen { id: String, state: String },
    /// The intent to replace was created by another principal: a correction is its own
    /// creator's, as a cancellation is.
    #[error("intent `{id}` was created by another principal; only its creator supersedes it")]
    NotOwner { id: String },
}

/// What creating an intent by a caller key did.
#[derive(Debug, Clone, PartialEq)]
pub enum CreateOutcome {
    /// A new intent.
    Created(Intent),
    /// The same key with the same canonical arguments: the first intent, unchanged.
    Replayed(Intent),
    /// The same key naming another outcome: refused, nothing stored. `differs` names what
    /// differs: `arguments`, `operation`, `consequence`, `connector`, or `tenant` (the same
    /// principal used the key for an intent of another tenant).
    Mismatch {
        intent_id: IntentId,
        differs: &'static str,
    },
    /// A new intent the tenant's policy refuses ([`NewIntent::refused`]): nothing stored.
    Refused(String),
    /// A link names an intent that cannot be linked: nothing stored.
    Link(LinkRefusal),
}

/// Whether a pause holds the intent `i`: one of its tenant, tool, operation, the intent
/// itself, or a provider it was sent to (its connector, or one an attempt named).
macro_rules! paused_condition {
    () => {
        "EXISTS (SELECT 1 FROM pauses z WHERE z.resumed_at_ms IS NULL \
        AND (z.tenant IS NULL OR z.tenant = i.tenant) AND (z.tool IS NULL OR z.tool = i.tool) \
        AND (z.operation IS NULL OR z.operation = i.operation) AND (z.intent_id IS NULL OR z.intent_id = i.id) \
        AND (z.provider IS NULL OR z.provider = i.connector \
             OR EXISTS (SELECT 1 FROM intent_providers q WHERE q.intent_seq = i.seq AND q.provider = z.provider)))"
    };
}

/// The columns every intent query selects, in the order [`intent_from_row`] reads them.
pub(crate) const INTENT_COLUMNS: &str = concat!(
    "i.seq, i.id, i.tenant, i.caller_key, i.actor, i.purpose, i.operation, \
     i.tool, i.tier, i.args_hash, i.release_id, i.locale, i.connector, i.action_key, i.state, i.state_reason, \
     i.authorization_version, i.approver, i.authorized_at_ms, i.authorization_expires_at_ms, i.attempts, \
     i.max_attempts, i.created_at_ms, i.updated_at_ms, i.deadline_at_ms, i.indeterminate_since_ms, \
     i.committed_at_ms, i.first_dispatch_at_ms, i.key_retention_secs, i.receipt_id, i.downstream_ref, \
     i.retry_owner, \
     (SELECT string_agg(provider, ',') FROM intent_providers p WHERE p.intent_seq = i.seq), ",
    paused_condition!(),
    ", i.crossed, i.lookups, i.last_lookup_at_ms, i.next_lookup_at_ms, i.lookups_exhausted_at_ms, \
     i.created_by, i.policy_version, i.cancel_requested_at_ms, i.cancel_requested_by, i.cancel_reason, \
     i.workflow_id, i.parent_intent_id, i.supersedes, i.superseded_by"
);

/// How many columns [`INTENT_COLUMNS`] selects: a query selecting more after them reads
/// its own from this index on.
pub(crate) const INTENT_COLUMN_COUNT: usize = 48;

/// Map a row selected with [`INTENT_COLUMNS`]; returns the row's sequence number too.
pub(crate) fn intent_from_row(row: &Row<'_>) -> Result<(i64, Intent), StoreError> {
    let text = |i: usize| row.get::<String>(i);
    let mut providers: Vec<String> = row
        .get::<Option<String>>(32)?
        .unwrap_or_default()
        .split(',')
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect();
    providers.sort();
    let intent = Intent {
        id: text(1)?.parse()?,
        tenant: text(2)?.parse()?,
        caller_key: row.get(3)?,
        actor: row.get(4)?,
        purpose: row.get(5)?,
        operation: row.get(6)?,
        tool: row.get(7)?,
        consequence: text(8)?.parse()?,
        args: None,
        canonical_args: None,
        canonical_args_hash: row.get(9)?,
        release_id: row.get(10)?,
        locale: text(11)?.parse()?,
        connector: row.get(12)?,
        action_key: text(13)?.parse()?,
        state: text(14)?.parse()?,
        state_reason: row.get(15)?,
        authorization_version: row.get(16)?,
        approver: row.get(17)?,
        authorized_at_ms: row.get(18)?,
        authorization_expires_at_ms: row.get(19)?,
        attempts: row.get(20)?,
        max_attempts: row.get(21)?,
        created_at_ms: row.get(22)?,
        updated_at_ms: row.get(23)?,
        deadline_at_ms: row.get(24)?,
        indeterminate_since_ms: row.get(25)?,
        committed_at_ms: row.get(26)?,
        first_dispatch_at_ms: row.get(27)?,
        key_retention_secs: row.get(28)?,
        receipt_id: row.get(29)?,
        downstream_ref: row.get(30)?,
        retry_owner: text(31)?.parse()?,
        providers,
        paused: row.get(33)?,
        may_have_crossed_boundary: row.get(34)?,
        lookups: row.get(35)?,
        last_lookup_at_ms: row.get(36)?,
        next_lookup_at_ms: row.get(37)?,
        lookups_exhausted_at_ms: row.get(38)?,
        created_by: row.get(39)?,
        policy_version: row.get(40)?,
        cancel_requested_at_ms: row.get(41)?,
        cancel_requested_by: row.get(42)?,
        cancel_reason: row.get(43)?,
        workflow_id: row.get(44)?,
        parent_intent_id: parse_opt(row.get(45)?)?,
        supersedes: parse_opt(row.get(46)?)?,
        superseded_by: parse_opt(row.get(47)?)?,
    };
    Ok((row.get(0)?, intent))
}

/// The intent a create wrote, as [`intent_from_row`] would read its row back.
fn created(new: &NewIntent, action_key: ActionKey, paused: bool) -> Intent {
    Intent {
        id: new.id.clone(),
        tenant: new.tenant.clone(),
        caller_key: new.caller_key.clone(),
        actor: new.actor.clone(),
        purpose: new.purpose.clone(),
        operation: new.operation.clone(),
        tool: new.tool.clone(),
        consequence: new.tier,
        args: None,
        canonical_args: None,
        canonical_args_hash: new.args_hash.clone(),
        release_id: new.release_id.clone(),
        locale: new.locale,
        connector: new.connector.clone(),
        action_key,
        state: IntentState::Prepared,
        state_reason: None,
        authorization_version: None,
        approver: None,
        authorized_at_ms: None,
        authorization_expires_at_ms: None,
        attempts: 0,
        max_attempts: new.max_attempts,
        created_at_ms: new.created_at_ms,
        updated_at_ms: new.created_at_ms,
        deadline_at_ms: new.deadline_at_ms,
        indeterminate_since_ms: None,
        committed_at_ms: None,
        first_dispatch_at_ms: None,
        // As stored: a column holds at most `i64::MAX`.
        key_retention_secs: new.key_retention_secs.map(|s| to_u64(to_i64(s))),
        receipt_id: None,
        downstream_ref: None,
        retry_owner: RetryOwner::of(new.tier),
        providers: Vec::new(),
        paused,
        may_have_crossed_boundary: false,
        lookups: 0,
        last_lookup_at_ms: None,
        next_lookup_at_ms: None,
        lookups_exhausted_at_ms: None,
        created_by: Some(new.principal.clone()),
        policy_version: None,
        cancel_requested_at_ms: None,
        cancel_requested_by: None,
        cancel_reason: None,
        workflow_id: new.links.workflow_id.clone(),
        parent_intent_id: new.links.parent_intent_id.clone(),
        supersedes: new.links.supersedes.clone(),
        superseded_by: None,
    }
}

fn parse_opt(raw: Option<String>) -> Result<Option<IntentId>, StoreError> {
    Ok(raw.map(|r| r.parse()).transpose()?)
}

/// Load one intent (without args) and its sequence number inside a transaction.
pub(crate) fn load(tx: &dyn Conn, id: &IntentId) -> Result<(i64, Intent), StoreError> {
    load_with(tx, id, "")
}

/// [`load`] for a write that changes the intent: its row stays locked until the write's
/// transaction ends, so writes to one intent from several coordinators take turns. Every
/// write locks the intent before its outbox rows.
pub(crate) fn load_for_update(tx: &dyn Conn, id: &IntentId) -> Result<(i64, Intent), StoreError> {
    load_with(tx, id, &tx.dialect().for_update("i"))
}

/// [`load_for_update`] of an intent only when it is of one of `tenants` (any, when `None`):
/// another tenant's is `NotFound` alike with none. The tenant is part of the statement's
/// condition, so on PostgreSQL another tenant's row is neither locked nor waited for, and
/// naming it holds up nothing of that tenant's.
pub(crate) fn load_for_update_of(
    tx: &dyn Conn,
    id: &IntentId,
    tenants: Option<&[String]>,
) -> Result<(i64, Intent), StoreError> {
    let (condition, values) = of_tenants(tenants, 2);
    let lock = tx.dialect().for_update("i");
    let id_text = id.as_str();
    let mut params: Vec<&dyn ToValue> = vec![&id_text];
    params.extend(values);
    found(
        tx.one(
            &format!("SELECT {INTENT_COLUMNS} FROM intents i WHERE i.id = ?1{condition}{lock}"),
            &params,
            intent_from_row,
        )
        .optional()?,
        id,
    )
}

/// The condition that keeps an intent `i` to `tenants` (none when `None`; never true when
/// empty), with its parameters numbered from `first`.
pub(crate) fn of_tenants(tenants: Option<&[String]>, first: usize) -> (String, Vec<&dyn ToValue>) {
    match tenants {
        None => (String::new(), Vec::new()),
        Some([]) => (" AND 1 = 0".to_string(), Vec::new()),
        Some(list) => {
            let places: Vec<String> = (first..first + list.len())
                .map(|n| format!("?{n}"))
                .collect();
            (
                format!(" AND i.tenant IN ({})", places.join(", ")),
                list.iter().map(|t| t as &dyn ToValue).collect(),
            )
        }
    }
}

fn load_with(tx: &dyn Conn, id: &IntentId, lock: &str) -> Result<(i64, Intent), StoreError> {
    let sql = format!("SELECT {INTENT_COLUMNS} FROM intents i WHERE i.id = ?1{lock}");
    found(
        tx.one(&sql, params![id.as_str()], intent_from_row)
            .optional()?,
        id,
    )
}

/// The intent a read found, or `NotFound` naming `id`.
fn found(found: Option<(i64, Intent)>, id: &IntentId) -> Result<(i64, Intent), StoreError> {
    match found {
        Some(found) => Ok(found),
        None => Err(StoreError::NotFound {
            what: "intent",
            id: id.to_string(),
        }),
    }
}

/// Creating intents by the caller's key and reading one back.
pub trait Intents {
    /// Create an intent under the caller's key, or answer with the intent that key already
    /// names: a replay when it names the same outcome (tenant, operation, consequence tier,
    /// connector and canonical arguments), a mismatch otherwise. What is only presentation
    /// (purpose text, locale) or the first request's own limits (deadline, budget) does not
    /// make a mismatch: the first request's values stand. One transaction: either the
    /// intent, its key, its first transitions and its event all exist afterwards, or none
    /// of them do.
    fn create_or_replay(&mut self, new: &NewIntent) -> Result<CreateOutcome, StoreError>;

    /// Before a write creates intents ([`Intents::create_or_replay`] for each of `news`):
    /// hold the intents they correct until it ends, each only if it is of its correction's
    /// tenant (another tenant's is neither locked nor waited for), in the order of their
    /// sequence, and before the write names any key. On PostgreSQL two such writes run side
    /// by side, and two batches correcting the same intents in different orders would
    /// otherwise each lock one and wait for the other's, until the server ends one of them.
    /// And one correcting a single intent would lock it only when its turn came, perhaps
    /// after it wrote keys another write waits at while holding that intent. SQLite runs
    /// one write at a time, and a single create locks the intent it corrects before it
    /// writes its key, as this does: neither needs it.
    fn hold_corrected(&mut self, news: &[NewIntent]) -> Result<(), StoreError>;

    /// One intent with its arguments, or `NotFound`.
    fn intent(&mut self, id: &IntentId) -> Result<Intent, StoreError>;

    /// [`Intents::intent`] for a write that decides from what it reads: the intent stays
    /// locked against other writers (another coordinator's too) until the write ends.
    fn intent_for_update(&mut self, id: &IntentId) -> Result<Intent, StoreError>;

    /// The canonical arguments the intent was frozen with, as stored.
    fn canonical_args(&mut self, id: &IntentId) -> Result<String, StoreError>;

    /// Whether cancellation of the intent was requested (false for an unknown id).
    fn cancel_requested(&mut self, id: &IntentId) -> Result<bool, StoreError>;

    /// The intents of one workflow of `tenant`, oldest first, at most `limit`.
    fn workflow_intents(
        &mut self,
        tenant: &Tenant,
        workflow_id: &str,
        limit: u32,
    ) -> Result<Vec<Intent>, StoreError>;
}

impl Intents for Store {
    fn hold_corrected(&mut self, news: &[NewIntent]) -> Result<(), StoreError> {
        let corrected: Vec<(&str, &str)> = news
            .iter()
            .filter_map(|new| {
                let old = new.links.supersedes.as_ref()?;
                Some((old.as_str(), new.tenant.as_str()))
            })
            .collect();
        if corrected.is_empty() || news.len() < 2 || self.conn.dialect() != Dialect::Postgres {
            return Ok(());
        }
        // PostgreSQL locks the rows of an ordered query in that order. Each correction
        // locks its intent again as it is created, which this write then already holds.
        // The ids and tenants go as one text each (an id is printable ASCII, a tenant a
        // name), so the statement is one whatever the batch's size.
        let (ids, tenants): (Vec<&str>, Vec<&str>) = corrected.into_iter().unzip();
        self.conn.rows(
            "SELECT i.seq FROM unnest(string_to_array(?1, chr(30)), string_to_array(?2, chr(30))) \
             AS t(id, tenant) JOIN intents i ON i.id = t.id AND i.tenant = t.tenant \
             ORDER BY i.seq FOR UPDATE OF i",
            params![ids.join("\u{1e}"), tenants.join("\u{1e}")],
            |r| r.get::<i64>(0),
        )?;
        Ok(())
    }

    fn create_or_replay(&mut self, new: &NewIntent) -> Result<CreateOutcome, StoreError> {
        let tx = self.conn.savepoint()?;
        let existing: Option<(i64, String, String, String, String, String)> = tx
            .one(
                "SELECT k.intent_seq, k.args_hash, i.id, i.operation, i.tier, i.connector \
                 FROM ingest_keys k JOIN intents i ON i.seq = k.intent_seq \
                 WHERE k.tenant = ?1 AND k.caller_key = ?2",
                params![new.tenant.as_str(), new.caller_key],
                |r| {
                    Ok((
                        r.get(0)?,
                        r.get(1)?,
                        r.get(2)?,
                        r.get(3)?,
                        r.get(4)?,
                        r.get(5)?,
                    ))
                },
            )
            .optional()?;
        if let Some((_, stored_hash, id, operation, tier, connector)) = existing {
            let id: IntentId = id.parse()?;
            let differs = [
                ("operation", operation == new.operation),
                ("consequence", tier == new.tier.as_str()),
                ("connector", connector == new.connector),
                ("arguments", stored_hash == new.args_hash),
            ]
            .into_iter()
            .find_map(|(name, same)| (!same).then_some(name));
            let Some(differs) = differs else {
                tx.run_held(
                    "UPDATE ingest_keys SET replays = replays + 1 WHERE tenant = ?1 AND caller_key = ?2",
                    params![new.tenant.as_str(), new.caller_key],
                )?;
                let (_, intent) = load(&tx, &id)?;
                tx.commit()?;
                return Ok(CreateOutcome::Replayed(intent));
            };
            tx.run_held(
                "UPDATE ingest_keys SET mismatches = mismatches + 1 WHERE tenant = ?1 AND caller_key = ?2",
                params![new.tenant.as_str(), new.caller_key],
            )?;
            tx.commit()?;
            return Ok(CreateOutcome::Mismatch {
                intent_id: id,
                differs,
            });
        }
        // The same principal reusing its key for another tenant names another outcome too.
        let elsewhere: Option<String> = tx
            .one(
                "SELECT i.id FROM ingest_keys k JOIN intents i ON i.seq = k.intent_seq \
                 WHERE k.principal = ?1 AND k.caller_key = ?2 AND k.tenant <> ?3 LIMIT 1",
                params![new.principal, new.caller_key, new.tenant.as_str()],
                |r| r.get(0),
            )
            .optional()?;
        if let Some(id) = elsewhere {
            tx.commit()?;
            return Ok(CreateOutcome::Mismatch {
                intent_id: id.parse()?,
                differs: "tenant",
            });
        }
        if let Some(why) = &new.refused {
            return Ok(CreateOutcome::Refused(why.clone()));
        }

        if let Err(refusal) = check_links(&tx, new)? {
            return Ok(CreateOutcome::Link(refusal));
        }
        let action_key = ActionKey::new(&new.operation, &new.tenant, &new.id);
        let now = to_i64(new.created_at_ms);
        // Where the arguments go: the intent's row, or one of their own (migration 21).
        let apart = tx.dialect().payload_apart();
        let (args_json, canonical_json, search_text) = if apart {
            ("", "", "")
        } else {
            (&*new.args_json, &*new.canonical_json, &*new.search_text)
        };
        let seq: i64 = tx.insert_seq(
            "INSERT INTO intents (id, tenant, caller_key, actor, purpose, operation, tool, tier, args_json, \
             canonical_json, args_hash, search_text, release_id, locale, connector, action_key, state, \
             max_attempts, created_at_ms, updated_at_ms, deadline_at_ms, key_retention_secs, retry_owner, \
             created_by, workflow_id, parent_intent_id, supersedes) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, 'prepared', ?17, ?18, ?18, ?19, ?20, ?21, \
             ?22, ?23, ?24, ?25)",
            params![
                new.id.as_str(),
                new.tenant.as_str(),
                new.caller_key,
                new.actor,
                new.purpose,
                new.operation,
                new.tool,
                new.tier.as_str(),
                args_json,
                canonical_json,
                new.args_hash,
                search_text,
                new.release_id,
                new.locale.as_str(),
                new.connector,
                action_key.as_str(),
                new.max_attempts,
                now,
                to_i64(new.deadline_at_ms),
                new.key_retention_secs.map(to_i64),
                RetryOwner::of(new.tier).as_str(),
                new.principal,
                new.links.workflow_id,
                new.links.parent_intent_id.as_ref().map(IntentId::as_str),
                new.links.supersedes.as_ref().map(IntentId::as_str),
            ],
        )?;
        // The key's unique index decides a race between coordinators: one that finds the key
        // taken meanwhile (it waited for the other's commit) drops its intent and answers
        // as a replay of the other's.
        let claimed_key = tx.run(
            "INSERT INTO ingest_keys (tenant, caller_key, intent_seq, args_hash, created_at_ms, principal) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (tenant, caller_key) DO NOTHING",
            params![new.tenant.as_str(), new.caller_key, seq, new.args_hash, now, new.principal],
        )?;
        if claimed_key == 0 {
            drop(tx);
            return self.create_or_replay(new);
        }
        if apart {
            tx.run_held(
                "INSERT INTO intent_payloads (intent_seq, args_json, canonical_json, search_text) \
                 VALUES (?1, ?2, ?3, ?4)",
                params![seq, new.args_json, new.canonical_json, new.search_text],
            )?;
        }
        tx.run_held(
            "INSERT INTO transitions (intent_seq, from_state, to_state, event, at_ms) VALUES \
             (?1, NULL, 'new', 'created', ?2), (?1, 'new', 'prepared', 'validated', ?2)",
            params![seq, now],
        )?;
        if let Some(old) = &new.links.supersedes {
            supersede(&tx, old, new)?;
        }
        // The new intent is answered as it was written, not read back: only whether a pause
        // holds it is asked of the database.
        let paused: bool = tx.one(
            concat!(
                "SELECT ",
                paused_condition!(),
                " FROM intents i WHERE i.seq = ?1"
            ),
            params![seq],
            |r| r.get(0),
        )?;
        let intent = created(new, action_key, paused);
        #[cfg(debug_assertions)]
        {
            let (_, stored) = load(&tx, &new.id)?;
            debug_assert_eq!(intent, stored, "the intent as created differs from its row");
        }
        events::append_ref(&tx, "intent", &new.tenant, &new.id, "", new.created_at_ms)?;
        tx.commit()?;
        Ok(CreateOutcome::Created(intent))
    }

    fn intent(&mut self, id: &IntentId) -> Result<Intent, StoreError> {
        with_args(self, id, load)
    }

    fn intent_for_update(&mut self, id: &IntentId) -> Result<Intent, StoreError> {
        with_args(self, id, load_for_update)
    }

    fn canonical_args(&mut self, id: &IntentId) -> Result<String, StoreError> {
        let canonical = self.conn.dialect().payload_column("canonical_json");
        self.conn
            .one(
                &format!("SELECT {canonical} FROM intents i WHERE i.id = ?1"),
                params![id.as_str()],
                |r| r.get(0),
            )
            .optional()?
            .ok_or_else(|| StoreError::NotFound {
                what: "intent",
                id: id.to_string(),
            })
    }

    fn cancel_requested(&mut self, id: &IntentId) -> Result<bool, StoreError> {
        let found: Option<bool> = self
            .conn
            .one(
                "SELECT cancel_requested_at_ms IS NOT NULL FROM intents WHERE id = ?1",
                params![id.as_str()],
                |r| r.get(0),
            )
            .optional()?;
        Ok(found.unwrap_or(false))
    }

    fn workflow_intents(
        &mut self,
        tenant: &Tenant,
        workflow_id: &str,
        limit: u32,
    ) -> Result<Vec<Intent>, StoreError> {
        let sql = format!(
            "SELECT {INTENT_COLUMNS} FROM intents i WHERE i.tenant = ?1 AND i.workflow_id = ?2 \
             ORDER BY i.seq LIMIT ?3"
        );
        let rows = self.conn.rows(
            &sql,
            params![tenant.as_str(), workflow_id, limit],
            intent_from_row,
        )?;
        Ok(rows.into_iter().map(|(_, intent)| intent).collect())
    }
}

/// Check that the intents `new` links to are its tenant's and may be linked. The intent a
/// correction replaces is locked until the creation ends, if it is the tenant's
/// ([`load_for_update_of`]: another tenant's is neither locked nor waited for).
fn check_links(tx: &dyn Conn, new: &NewIntent) -> Result<Result<(), LinkRefusal>, StoreError> {
    let tenant = [new.tenant.as_str().to_string()];
    let of_tenant = |field: &'static str, id: &IntentId, lock: bool| {
        let found = if lock {
            load_for_update_of(tx, id, Some(&tenant))
        } else {
            load(tx, id)
        };
        match found {
            Ok((_, intent)) if intent.tenant == new.tenant => Ok(Ok(intent)),
            Ok(_) | Err(StoreError::NotFound { .. }) => Ok(Err(LinkRefusal::Unknown {
                field,
                id: id.to_string(),
            })),
            Err(e) => Err(e),
        }
    };
    if let Some(parent) = &new.links.parent_intent_id
        && let Err(refusal) = of_tenant("parent_intent_id", parent, false)?
    {
        return Ok(Err(refusal));
    }
    let Some(old) = &new.links.supersedes else {
        return Ok(Ok(()));
    };
    let intent = match of_tenant("supersedes", old, true)? {
        Ok(intent) => intent,
        Err(refusal) => return Ok(Err(refusal)),
    };
    if intent.created_by.as_deref() != Some(new.principal.as_str()) {
        return Ok(Err(LinkRefusal::NotOwner {
            id: old.to_string(),
        }));
    }
    if let Some(by) = intent.superseded_by {
        return Ok(Err(LinkRefusal::AlreadySuperseded {
            id: old.to_string(),
            by: by.to_string(),
        }));
    }
    let in_flight = super::apply::dispatch_in_flight_of(tx, &intent.id)?;
    if !intent.state.is_terminal() && (intent.may_have_crossed_boundary || in_flight) {
        return Ok(Err(LinkRefusal::StillOpen {
            id: old.to_string(),
            state: intent.state.to_string(),
        }));
    }
    Ok(Ok(()))
}

/// Mark `old` replaced by `new`, cancelling it first when it is still open (nothing of it
/// crossed: [`check_links`] made sure).
fn supersede(tx: &dyn Conn, old: &IntentId, new: &NewIntent) -> Result<(), StoreError> {
    let (_, intent) = load_for_update(tx, old)?;
    if !intent.state.is_terminal() {
        let ctx = super::ApplyContext {
            now_ms: new.created_at_ms,
            cancel_by: Some(new.principal.clone()),
            ..super::ApplyContext::default()
        };
        let event = crate::domain::Event::Cancel {
            reason: format!("superseded by {}", new.id),
        };
        super::apply::apply_in(tx, old, &event, &ctx)?;
    }
    tx.run_held(
        "UPDATE intents SET superseded_by = ?2 WHERE id = ?1",
        params![old.as_str(), new.id.as_str()],
    )?;
    events::announce_intent(tx, old, new.created_at_ms)?;
    Ok(())
}

/// How an intent is read inside a write: [`load`] or [`load_for_update`].
type Loader = fn(&dyn Conn, &IntentId) -> Result<(i64, Intent), StoreError>;

/// The intent as `load` reads it, with its arguments, in one savepoint that is kept (on
/// PostgreSQL a savepoint rolled back would give up a lock taken inside it).
fn with_args(store: &mut Store, id: &IntentId, load: Loader) -> Result<Intent, StoreError> {
    let tx = store.conn.savepoint()?;
    let (seq, mut intent) = load(&tx, id)?;
    let dialect = tx.dialect();
    let (args, canonical): (String, String) = tx.one(
        &format!(
            "SELECT {}, {} FROM intents i WHERE i.seq = ?1",
            dialect.payload_column("args_json"),
            dialect.payload_column("canonical_json")
        ),
        params![seq],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    intent.args = Some(serde_json::from_str(&args)?);
    intent.canonical_args = Some(canonical);
    tx.commit()?;
    Ok(intent)
}
