//! Reads the operator API needs beyond the console's own: the audit trail as a tenant-limited
//! operator may see it, intent counts per tenant for the Prometheus endpoint, and announcing
//! a command's final result on the change feed.
//!
//! Audit visibility for a tenant-limited caller: a command is shown when its request body
//! names a target inside the caller's tenants, either `target.scope.tenant` or a
//! `target.intent_id` whose intent belongs to one of them. Fleet-wide commands (a scope
//! without a tenant) are shown only to unrestricted callers, because their results list
//! intents of every tenant.

use super::ops::*;
use super::sql::{Conn, ConnExt, Value, params_of};
use std::collections::BTreeMap;

use serde::Serialize;

use super::query::{IntentFilter, filter_where};
use super::{Store, StoreError, to_u64};
use crate::domain::{CommandId, IntentId};
use crate::wire::CommandRecord;

/// Intent counts of one tenant.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TenantCounts {
    pub tenant: String,
    pub states: BTreeMap<String, u64>,
    pub indeterminate: u64,
    pub indeterminate_oldest_age_secs: u64,
}

/// What tenant-limited operators and the health page read.
pub trait OperatorQueries {
    /// The audit trail, newest first, limited to commands whose target lies within `tenants`;
    /// with `intent`, only commands that covered or named that intent.
    fn audit_within(
        &mut self,
        intent: Option<&IntentId>,
        tenants: &[String],
        limit: u32,
    ) -> Result<Vec<CommandRecord>, StoreError>;

    /// Whether a principal limited to `tenants` may see command `id` (as [`Self::audit_within`]
    /// would list it).
    fn command_visible_within(
        &mut self,
        id: &CommandId,
        tenants: &[String],
    ) -> Result<bool, StoreError>;

    /// Intent counts per tenant and state, and each tenant's indeterminate count and oldest
    /// age, over the intents `filter` selects (its `allowed_tenants` included).
    fn tenant_counts(
        &mut self,
        filter: &IntentFilter,
        now_ms: u64,
    ) -> Result<Vec<TenantCounts>, StoreError>;

    /// Append a `command` event carrying the command's current record, after its result was
    /// replaced (a reconcile whose lookups finished).
    ///
    /// One statement, so it is atomic without a transaction of its own and may run inside
    /// the caller's (a group commit); it writes the same row `events::append` does.
    fn announce_command(
        &mut self,
        id: &CommandId,
        now_ms: u64,
    ) -> Result<CommandRecord, StoreError>;
}

/// The condition under which a principal limited to the tenants bound at `marks` sees a
/// command `c`: it was scoped to one of them, or it named an intent of one of them.
fn visible_within(dialect: super::sql::Dialect, marks: &str) -> String {
    let scope_tenant = dialect.json_text("c.body_json", &["target", "scope", "tenant"]);
    let target_intent = dialect.json_text("c.body_json", &["target", "intent_id"]);
    format!(
        "({scope_tenant} IN ({marks}) OR EXISTS (SELECT 1 FROM intents i WHERE i.id = {target_intent} \
         AND i.tenant IN ({marks})))"
    )
}

impl OperatorQueries for Store {
    fn audit_within(
        &mut self,
        intent: Option<&IntentId>,
        tenants: &[String],
        limit: u32,
    ) -> Result<Vec<CommandRecord>, StoreError> {
        if tenants.is_empty() {
            return Ok(Vec::new());
        }
        let mut values: Vec<Value> = Vec::new();
        let mut bind = |v: Value| {
            values.push(v);
            format!("?{}", values.len())
        };
        let marks: Vec<String> = tenants
            .iter()
            .map(|t| bind(Value::Text(t.clone())))
            .collect();
        let marks = marks.join(", ");
        let dialect = self.conn.dialect();
        let mut sql = format!(
            "SELECT c.id FROM commands c WHERE {}",
            visible_within(dialect, &marks)
        );
        if let Some(id) = intent {
            let m = bind(Value::Text(id.to_string()));
            sql.push_str(&format!(
                " AND c.seq IN ({})",
                super::commands::commands_of_intent_sql(dialect, &m)
            ));
        }
        let l = bind(Value::Int(i64::from(limit)));
        sql.push_str(&format!(" ORDER BY c.seq DESC LIMIT {l}"));
        let ids: Vec<String> = { self.conn.rows(&sql, &params_of(&values), |r| r.get(0))? };
        ids.iter()
            .map(|id| self.command(&id.parse::<CommandId>()?))
            .collect()
    }

    fn command_visible_within(
        &mut self,
        id: &CommandId,
        tenants: &[String],
    ) -> Result<bool, StoreError> {
        if tenants.is_empty() {
            return Ok(false);
        }
        let marks: Vec<String> = (0..tenants.len()).map(|k| format!("?{}", k + 2)).collect();
        let sql = format!(
            "SELECT count(*) FROM commands c WHERE c.id = ?1 AND {}",
            visible_within(self.conn.dialect(), &marks.join(", "))
        );
        let mut values = vec![Value::Text(id.to_string())];
        values.extend(tenants.iter().cloned().map(Value::Text));
        let n: i64 = self.conn.one(&sql, &params_of(&values), |r| r.get(0))?;
        Ok(n > 0)
    }

    fn tenant_counts(
        &mut self,
        filter: &IntentFilter,
        now_ms: u64,
    ) -> Result<Vec<TenantCounts>, StoreError> {
        let w = filter_where(filter, self.conn.dialect());
        let sql = format!(
            "SELECT i.tenant, i.state, count(*), min(i.indeterminate_since_ms) FROM intents i{} WHERE {} \
             GROUP BY 1, 2 ORDER BY 1, 2",
            w.joins(),
            w.sql()
        );
        let rows = self.conn.rows(&sql, &params_of(&w.values), |r| {
            Ok((
                r.get::<String>(0)?,
                r.get::<String>(1)?,
                r.get::<i64>(2)?,
                r.get::<Option<i64>>(3)?,
            ))
        })?;
        let mut out: Vec<TenantCounts> = Vec::new();
        for (tenant, state, n, oldest) in rows {
            if out.last().is_none_or(|t| t.tenant != tenant) {
                out.push(TenantCounts {
                    tenant: tenant.clone(),
                    states: BTreeMap::new(),
                    indeterminate: 0,
                    indeterminate_oldest_age_secs: 0,
                });
            }
            let Some(entry) = out.last_mut() else {
                continue;
            };
            if state == "indeterminate" {
                entry.indeterminate = to_u64(n);
                let since = oldest.map(to_u64).unwrap_or(now_ms);
                entry.indeterminate_oldest_age_secs = now_ms.saturating_sub(since) / 1000;
            }
            entry.states.insert(state, to_u64(n));
        }
        Ok(out)
    }

    fn announce_command(
        &mut self,
        id: &CommandId,
        now_ms: u64,
    ) -> Result<CommandRecord, StoreError> {
        let record = self.command(id)?;
        // Through the feed's own door: on PostgreSQL an event is numbered only once its
        // write has committed, so a reader never passes a number a later commit fills.
        super::events::append(self.conn.as_conn(), "command", None, None, &record, now_ms)?;
        Ok(record)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_tenant_scope_sees_no_commands() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let mut store = Store::open(&dir.path().join("db.sqlite")).expect("store opens");
        let seen = store.audit_within(None, &[], 10).expect("audit reads");
        assert!(seen.is_empty());
    }
}
