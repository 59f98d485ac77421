//! The `pauses` table. A pause stops new attempts and automatic retries in its scope; it
//! does not cancel in-flight work and does not stop read-only lookups.

use super::sql::{Conn, ConnExt, Row, params};
use super::{Store, StoreError, to_i64};
use crate::wire::{Pause, PauseScope};

/// A SQL condition on intents aliased `i` matching `scope`, with its parameters numbered
/// from `first`.
pub(crate) fn scope_condition(scope: &PauseScope, first: usize) -> (String, Vec<String>) {
    let mut values = Vec::new();
    let cond = scope_condition_with(scope, false, &mut |v| {
        values.push(v.to_string());
        format!("?{}", first + values.len() - 1)
    });
    (cond, values)
}

/// [`scope_condition`], each value bound by `bind`, which gives the mark to write for it.
/// With `by_one`, the intents are searched through one index only, that of the narrowest
/// column the scope names (an intent, then a tenant, an operation, a tool); the others are
/// written so that no index is taken for them. Without statistics (a coordinator's own
/// store has none) SQLite may take the index of a tool every intent has over that of a
/// tenant none has.
pub(crate) fn scope_condition_with(
    scope: &PauseScope,
    by_one: bool,
    bind: &mut dyn FnMut(&str) -> String,
) -> String {
    let searched = [
        ("id", &scope.intent_id),
        ("tenant", &scope.tenant),
        ("operation", &scope.operation),
        ("tool", &scope.tool),
    ]
    .into_iter()
    .find(|(_, value)| value.is_some())
    .map(|(column, _)| column);
    let equal = |column: &str, mark: String| {
        if by_one && searched != Some(column) {
            format!("(i.{column} || '') = {mark}")
        } else {
            format!("i.{column} = {mark}")
        }
    };
    let mut parts = Vec::new();
    if let Some(t) = &scope.tenant {
        parts.push(equal("tenant", bind(t)));
    }
    if let Some(p) = &scope.provider {
        let m = bind(p);
        parts.push(format!(
            "(i.connector = {m} OR EXISTS (SELECT 1 FROM intent_providers q WHERE q.intent_seq = i.seq AND q.provider = {m}))"
        ));
    }
    if let Some(t) = &scope.tool {
        parts.push(equal("tool", bind(t)));
    }
    if let Some(o) = &scope.operation {
        parts.push(equal("operation", bind(o)));
    }
    if let Some(id) = &scope.intent_id {
        parts.push(equal("id", bind(id)));
    }
    if parts.is_empty() {
        "1 = 1".to_string()
    } else {
        parts.join(" AND ")
    }
}

/// Whether `scope` names something an index of the intents finds them by (a tenant, a
/// tool, an operation or an intent): its intents are then read through that index, not
/// looked for among all of them. A provider alone is the intent's connector or one of its
/// attempts' providers, which no one index holds.
pub(crate) fn narrow(scope: &PauseScope) -> bool {
    scope.tenant.is_some()
        || scope.tool.is_some()
        || scope.operation.is_some()
        || scope.intent_id.is_some()
}

pub(crate) fn insert(
    tx: &dyn Conn,
    command_seq: i64,
    scope: &PauseScope,
    reason: &str,
    actor: &str,
    now_ms: u64,
) -> Result<i64, StoreError> {
    tx.one(
        "INSERT INTO pauses (command_seq, tenant, provider, tool, operation, intent_id, reason, created_by, created_at_ms) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) RETURNING seq",
        params![
            command_seq,
            scope.tenant,
            scope.provider,
            scope.tool,
            scope.operation,
            scope.intent_id,
            reason,
            actor,
            to_i64(now_ms)
        ],
        |r| r.get(0),
    )
}

/// End the active pauses whose scope is exactly `scope`; returns how many ended.
pub(crate) fn resume(
    tx: &dyn Conn,
    command_seq: i64,
    scope: &PauseScope,
    now_ms: u64,
) -> Result<usize, StoreError> {
    tx.run(
        "UPDATE pauses SET resumed_at_ms = ?1, resumed_by_command = ?2 WHERE resumed_at_ms IS NULL \
         AND tenant IS NOT DISTINCT FROM ?3 AND provider IS NOT DISTINCT FROM ?4 \
         AND tool IS NOT DISTINCT FROM ?5 AND operation IS NOT DISTINCT FROM ?6 \
         AND intent_id IS NOT DISTINCT FROM ?7",
        params![
            to_i64(now_ms),
            command_seq,
            scope.tenant,
            scope.provider,
            scope.tool,
            scope.operation,
            scope.intent_id
        ],
    )
}

/// Active pauses.
pub trait Pauses {
    /// Active pauses, newest first; only those within `tenants` when given (a pause with no
    /// tenant covers every tenant and is shown to all).
    fn active_pauses(&mut self, tenants: Option<&[String]>) -> Result<Vec<Pause>, StoreError>;
}

impl Pauses for Store {
    fn active_pauses(&mut self, tenants: Option<&[String]>) -> Result<Vec<Pause>, StoreError> {
        let rows = self.conn.rows(
            "SELECT p.seq, c.id, p.tenant, p.provider, p.tool, p.operation, p.intent_id, p.reason, p.created_by, \
             p.created_at_ms, p.resumed_at_ms FROM pauses p JOIN commands c ON c.seq = p.command_seq \
             WHERE p.resumed_at_ms IS NULL ORDER BY p.seq DESC",
            params![],
            pause_from_row,
        )?;
        let mut out = Vec::new();
        for pause in rows {
            let visible = match (tenants, &pause.scope.tenant) {
                (None, _) | (Some(_), None) => true,
                (Some(list), Some(t)) => list.contains(t),
            };
            if visible {
                out.push(pause);
            }
        }
        Ok(out)
    }
}

pub(crate) fn pause_from_row(r: &Row<'_>) -> Result<Pause, StoreError> {
    Ok(Pause {
        seq: r.get(0)?,
        command_id: r.get(1)?,
        scope: scope_from_row(r, 2)?,
        reason: r.get(7)?,
        created_by: r.get(8)?,
        created_at_ms: r.get(9)?,
        resumed_at_ms: r.get(10)?,
    })
}

/// A pause's scope from the row's columns `first..first + 5`: tenant, provider, tool,
/// operation, intent.
pub(crate) fn scope_from_row(r: &Row<'_>, first: usize) -> Result<PauseScope, StoreError> {
    Ok(PauseScope {
        tenant: r.get(first)?,
        provider: r.get(first + 1)?,
        tool: r.get(first + 2)?,
        operation: r.get(first + 3)?,
        intent_id: r.get(first + 4)?,
    })
}
