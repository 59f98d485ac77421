//! The `pauses` table. A pause stops new attempts and automatic retries in its scope; it
//! does not cancel in-flight work and does not stop read-only lookups.

use super::sql::{Conn, ConnExt, Row, params};
use super::{Store, StoreError, to_i64};
use crate::wire::{Pause, PauseScope};

/// A SQL condition on intents aliased `i` matching `scope`, with its parameters numbered
/// from `first`.
pub(crate) fn scope_condition(scope: &PauseScope, first: usize) -> (String, Vec<String>) {
    let mut parts = Vec::new();
    let mut values = Vec::new();
    let mut n = first;
    let mut push = |sql: String, v: &str| {
        parts.push(sql);
        values.push(v.to_string());
    };
    if let Some(t) = &scope.tenant {
        push(format!("i.tenant = ?{n}"), t);
        n += 1;
    }
    if let Some(p) = &scope.provider {
        push(
            format!(
                "(i.connector = ?{n} OR EXISTS (SELECT 1 FROM intent_providers q WHERE q.intent_seq = i.seq AND q.provider = ?{n}))"
            ),
            p,
        );
        n += 1;
    }
    if let Some(t) = &scope.tool {
        push(format!("i.tool = ?{n}"), t);
        n += 1;
    }
    if let Some(o) = &scope.operation {
        push(format!("i.operation = ?{n}"), o);
        n += 1;
    }
    if let Some(id) = &scope.intent_id {
        push(format!("i.id = ?{n}"), id);
    }
    if parts.is_empty() {
        ("1 = 1".to_string(), values)
    } else {
        (parts.join(" AND "), values)
    }
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
        scope: PauseScope {
            tenant: r.get(2)?,
            provider: r.get(3)?,
            tool: r.get(4)?,
            operation: r.get(5)?,
            intent_id: r.get(6)?,
        },
        reason: r.get(7)?,
        created_by: r.get(8)?,
        created_at_ms: r.get(9)?,
        resumed_at_ms: r.get(10)?,
    })
}
