//! The `commands` and `command_targets` tables: operator commands recorded idempotently by
//! their client-generated `command_id`, executed in the same transaction as their record,
//! and the audit trail (who, what, when, why, result) read back from them.
//!
//! A replay of a command id with the same body returns the first result and does nothing;
//! the same id with another body is a mismatch. A command the state machine refuses is
//! recorded as `refused` with the reason, so the audit trail shows attempts too.

use super::apply::apply_in;
use super::pauses::{self};
use super::sql::{Conn, ConnExt, Dialect, Optional, Row, params, params_of};
use super::{ApplyContext, Store, StoreError, to_i64};
use crate::domain::{CommandId, CommandKind, Disposition, Event, Evidence, IntentId, Role};
use crate::wire::CommandRecord;
use crate::wire::PauseScope;

/// A command as confirmed by an operator.
#[derive(Debug, Clone)]
pub struct NewCommand {
    pub id: CommandId,
    pub kind: CommandKind,
    pub actor: String,
    pub role: Role,
    /// SHA-256 of the canonical request body, to tell a replay from a mismatch.
    pub body_hash: String,
    pub body_json: String,
    pub reason: Option<String>,
    pub dry_run: bool,
    pub now_ms: u64,
}

/// What the command does, resolved by the coordinator from the request.
#[derive(Debug, Clone)]
pub enum CommandAction {
    Pause {
        scope: PauseScope,
    },
    Resume {
        scope: PauseScope,
    },
    /// Reconciliation itself needs the network; the store records which intents it covers.
    Reconcile {
        scope: PauseScope,
    },
    Close {
        intent: IntentId,
        disposition: Disposition,
        evidence: Evidence,
    },
    /// The owner's or an operator's cancellation of one intent.
    Cancel {
        intent: IntentId,
    },
}

impl CommandAction {
    fn scope(&self) -> PauseScope {
        match self {
            CommandAction::Pause { scope }
            | CommandAction::Resume { scope }
            | CommandAction::Reconcile { scope } => scope.clone(),
            CommandAction::Close { intent, .. } | CommandAction::Cancel { intent } => PauseScope {
                intent_id: Some(intent.to_string()),
                ..PauseScope::default()
            },
        }
    }
}

/// What recording a command did.
#[derive(Debug, Clone)]
pub enum RecordedCommand {
    Fresh(CommandRecord),
    Replayed(CommandRecord),
    Mismatch(CommandRecord),
    /// Another principal already used this command id; nothing of its record is told.
    InUse,
}

const RECORD_COLUMNS: &str = "c.id, c.kind, c.actor, c.role, c.reason, c.dry_run, c.status, c.result_json, c.body_json, c.created_at_ms";

fn record_from_row(r: &Row<'_>) -> Result<CommandRecord, StoreError> {
    Ok(CommandRecord {
        command_id: r.get(0)?,
        kind: r.get::<String>(1)?.parse()?,
        actor: r.get(2)?,
        role: r.get::<String>(3)?.parse()?,
        reason: r.get(4)?,
        dry_run: r.get(5)?,
        status: r.get(6)?,
        result: serde_json::from_str(&r.get::<String>(7)?)?,
        body: serde_json::from_str(&r.get::<String>(8)?)?,
        created_at_ms: r.get(9)?,
    })
}

fn load_record(tx: &dyn Conn, id: &str) -> Result<Option<(CommandRecord, String)>, StoreError> {
    let sql = format!("SELECT {RECORD_COLUMNS}, c.body_hash FROM commands c WHERE c.id = ?1");
    let found = tx
        .one(&sql, params![id], |r| {
            Ok((record_from_row(r)?, r.get::<String>(10)?))
        })
        .optional()?;
    Ok(found)
}

/// Open intents in `scope` (optionally within `tenants`), oldest first.
fn targets(
    tx: &dyn Conn,
    scope: &PauseScope,
    tenants: Option<&[String]>,
) -> Result<Vec<(i64, String)>, StoreError> {
    let (cond, mut values) = super::pauses::scope_condition(scope, 1);
    let mut sql = format!(
        "SELECT i.seq, i.id FROM intents i WHERE {cond} AND i.state IN ('prepared', 'authorized', 'executing', 'indeterminate')"
    );
    if let Some(list) = tenants {
        let start = values.len() + 1;
        let marks: Vec<String> = (0..list.len()).map(|k| format!("?{}", start + k)).collect();
        sql.push_str(&format!(
            " AND i.tenant IN ({})",
            if marks.is_empty() {
                "NULL".to_string()
            } else {
                marks.join(", ")
            }
        ));
        values.extend(list.iter().cloned());
    }
    sql.push_str(" ORDER BY i.seq");
    tx.rows(&sql, &params_of(&values), |r| Ok((r.get(0)?, r.get(1)?)))
}

/// The commands that touched intent `?1` (applied with it among their frozen targets) or
/// named it as their target (a dry run, a refusal), newest first, at most `?2`.
pub(crate) fn audit_of_intent_sql(dialect: Dialect) -> String {
    format!(
        "SELECT {RECORD_COLUMNS} FROM commands c WHERE c.seq IN ({}) ORDER BY c.seq DESC LIMIT ?2",
        commands_of_intent_sql(dialect, "?1")
    )
}

/// The rows of the commands that touched the intent whose id is `id` (a placeholder) or named
/// it as their target: each half read along an index, the second along migration 19's over
/// the target a body names. Written as one list at the top of the condition, the only form
/// in which PostgreSQL reads both halves by their indexes; a match on the body's text, or the
/// two halves joined by `OR`, read every command ever recorded, at each intent's detail.
pub(crate) fn commands_of_intent_sql(dialect: Dialect, id: &str) -> String {
    format!(
        "SELECT t.command_seq FROM command_targets t JOIN intents i ON i.seq = t.intent_seq \
         JOIN commands d ON d.seq = t.command_seq WHERE i.id = {id} AND d.dry_run = 0 \
         UNION SELECT seq FROM commands WHERE {} = {id}",
        dialect.json_text("body_json", &["target", "intent_id"])
    )
}

/// Record a command's frozen targets, many rows to a statement.
fn insert_targets(
    tx: &dyn Conn,
    command_seq: i64,
    covered: &[(i64, String)],
) -> Result<(), StoreError> {
    const ROWS: usize = 400;
    for chunk in covered.chunks(ROWS) {
        let marks: Vec<String> = (0..chunk.len())
            .map(|k| format!("(?1, ?{})", k + 2))
            .collect();
        let mut values = vec![super::sql::Value::Int(command_seq)];
        values.extend(chunk.iter().map(|(seq, _)| super::sql::Value::Int(*seq)));
        tx.run_held(
            &format!(
                "INSERT INTO command_targets (command_seq, intent_seq) VALUES {} ON CONFLICT DO NOTHING",
                marks.join(", ")
            ),
            &params_of(&values),
        )?;
    }
    Ok(())
}

/// One page of a command's frozen targets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetPage {
    /// Intent id and tenant, in the order the intents were created.
    pub items: Vec<(String, String)>,
    /// The position after the last item, when more follow.
    pub next: Option<i64>,
}

/// Operator commands, applied once, and the audit trail.
pub trait Commands {
    /// Record and execute a command in one transaction, or answer a replay or mismatch.
    /// `tenants` limits the affected intents to the caller's tenants (`None` = all).
    fn run_command(
        &mut self,
        new: &NewCommand,
        action: &CommandAction,
        tenants: Option<&[String]>,
    ) -> Result<RecordedCommand, StoreError>;

    /// Replace a command's result once asynchronous work (reconcile lookups) is done.
    fn finish_command(
        &mut self,
        id: &CommandId,
        status: &str,
        result: &serde_json::Value,
    ) -> Result<(), StoreError>;

    /// One recorded command.
    fn command(&mut self, id: &CommandId) -> Result<CommandRecord, StoreError>;

    /// A page of command `id`'s frozen targets after position `after`, within `tenants`
    /// (`None` = all).
    fn command_targets(
        &mut self,
        id: &CommandId,
        tenants: Option<&[String]>,
        after: i64,
        limit: u32,
    ) -> Result<TargetPage, StoreError>;

    /// The audit trail, newest first: all commands, or those touching one intent.
    fn audit(
        &mut self,
        intent: Option<&IntentId>,
        limit: u32,
    ) -> Result<Vec<CommandRecord>, StoreError>;
}

impl Commands for Store {
    fn run_command(
        &mut self,
        new: &NewCommand,
        action: &CommandAction,
        tenants: Option<&[String]>,
    ) -> Result<RecordedCommand, StoreError> {
        let tx = self.conn.savepoint()?;
        if let Some((record, hash)) = load_record(&tx, new.id.as_str())? {
            tx.commit()?;
            // Ids are the clients' own: one another principal already used says nothing of
            // that principal's command.
            if record.actor != new.actor {
                return Ok(RecordedCommand::InUse);
            }
            return Ok(if hash == new.body_hash {
                RecordedCommand::Replayed(record)
            } else {
                RecordedCommand::Mismatch(record)
            });
        }
        // The id's unique index decides between two coordinators taking the same command at
        // once: the second waits for the first and then answers its record.
        let inserted: Option<i64> = tx.one(
            "INSERT INTO commands (id, kind, actor, role, body_hash, body_json, reason, dry_run, status, result_json, created_at_ms) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'accepted', '{}', ?9) ON CONFLICT (id) DO NOTHING RETURNING seq",
            params![
                new.id.as_str(),
                new.kind.as_str(),
                new.actor,
                new.role.as_str(),
                new.body_hash,
                new.body_json,
                new.reason,
                new.dry_run,
                to_i64(new.now_ms)
            ],
            |r| r.get(0),
        )
        .optional()?;
        let Some(command_seq) = inserted else {
            drop(tx);
            return self.run_command(new, action, tenants);
        };
        let covered = targets(&tx, &action.scope(), tenants)?;
        // The record carries the count; the frozen set itself is in `command_targets`,
        // paged, so a command over a million intents keeps a small record and event.
        let (status, result) = if new.dry_run {
            (
                "dry_run",
                serde_json::json!({ "target_count": covered.len() }),
            )
        } else {
            tx.batch("SAVEPOINT act")?;
            match execute(&tx, command_seq, new, action, covered.len()) {
                Ok(mut result) => {
                    tx.batch("RELEASE act")?;
                    result["target_count"] = serde_json::json!(covered.len());
                    let status = if matches!(action, CommandAction::Reconcile { .. }) {
                        "accepted"
                    } else {
                        "applied"
                    };
                    (status, result)
                }
                Err(StoreError::Refused(refusal)) => {
                    tx.batch("ROLLBACK TO act; RELEASE act")?;
                    let code = match refusal {
                        crate::domain::Refusal::MissingEvidence(_) => "missing_evidence",
                        _ => "invalid_state",
                    };
                    (
                        "refused",
                        serde_json::json!({ "error": refusal.to_string(), "code": code }),
                    )
                }
                Err(other) => return Err(other),
            }
        };
        if status != "refused" {
            insert_targets(&tx, command_seq, &covered)?;
        }
        tx.run_held(
            "UPDATE commands SET status = ?2, result_json = ?3 WHERE seq = ?1",
            params![command_seq, status, result.to_string()],
        )?;
        let (record, _) = load_record(&tx, new.id.as_str())?.ok_or_else(|| {
            StoreError::Corrupt("a command vanished inside its transaction".to_string())
        })?;
        super::events::append(&tx, "command", None, None, &record, new.now_ms)?;
        tx.commit()?;
        Ok(RecordedCommand::Fresh(record))
    }

    fn finish_command(
        &mut self,
        id: &CommandId,
        status: &str,
        result: &serde_json::Value,
    ) -> Result<(), StoreError> {
        self.conn.run_held(
            "UPDATE commands SET status = ?2, result_json = ?3 WHERE id = ?1",
            params![id.as_str(), status, result.to_string()],
        )?;
        Ok(())
    }

    fn command(&mut self, id: &CommandId) -> Result<CommandRecord, StoreError> {
        let tx = self.conn.savepoint()?;
        let found = load_record(&tx, id.as_str())?;
        found.map(|(r, _)| r).ok_or_else(|| StoreError::NotFound {
            what: "command",
            id: id.to_string(),
        })
    }

    fn command_targets(
        &mut self,
        id: &CommandId,
        tenants: Option<&[String]>,
        after: i64,
        limit: u32,
    ) -> Result<TargetPage, StoreError> {
        let mut values = vec![
            super::sql::Value::Text(id.to_string()),
            super::sql::Value::Int(after),
            super::sql::Value::Int(i64::from(limit) + 1),
        ];
        let mut sql = "SELECT i.seq, i.id, i.tenant FROM command_targets t JOIN commands c ON c.seq = t.command_seq \
                       JOIN intents i ON i.seq = t.intent_seq WHERE c.id = ?1 AND t.intent_seq > ?2"
            .to_string();
        if let Some(list) = tenants {
            let marks: Vec<String> = (0..list.len()).map(|k| format!("?{}", k + 4)).collect();
            sql.push_str(&format!(
                " AND i.tenant IN ({})",
                if marks.is_empty() {
                    "NULL".into()
                } else {
                    marks.join(", ")
                }
            ));
            values.extend(list.iter().cloned().map(super::sql::Value::Text));
        }
        sql.push_str(" ORDER BY t.intent_seq LIMIT ?3");
        let mut rows: Vec<(i64, String, String)> =
            self.conn.rows(&sql, &params_of(&values), |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })?;
        let next = if rows.len() > limit as usize {
            rows.truncate(limit as usize);
            rows.last().map(|(seq, _, _)| *seq)
        } else {
            None
        };
        Ok(TargetPage {
            items: rows
                .into_iter()
                .map(|(_, id, tenant)| (id, tenant))
                .collect(),
            next,
        })
    }

    fn audit(
        &mut self,
        intent: Option<&IntentId>,
        limit: u32,
    ) -> Result<Vec<CommandRecord>, StoreError> {
        let rows: Vec<CommandRecord> = match intent {
            Some(id) => {
                let sql = audit_of_intent_sql(self.conn.dialect());
                self.conn
                    .rows(&sql, params![id.as_str(), limit], record_from_row)?
            }
            None => {
                let sql =
                    format!("SELECT {RECORD_COLUMNS} FROM commands c ORDER BY c.seq DESC LIMIT ?1");
                self.conn.rows(&sql, params![limit], record_from_row)?
            }
        };
        Ok(rows)
    }
}

fn execute(
    tx: &dyn Conn,
    command_seq: i64,
    new: &NewCommand,
    action: &CommandAction,
    covered: usize,
) -> Result<serde_json::Value, StoreError> {
    let reason = new.reason.clone().unwrap_or_default();
    match action {
        CommandAction::Pause { scope } => {
            let pause = pauses::insert(tx, command_seq, scope, &reason, &new.actor, new.now_ms)?;
            Ok(serde_json::json!({ "pause_seq": pause, "covers_open_intents": covered }))
        }
        CommandAction::Resume { scope } => {
            let ended = pauses::resume(tx, command_seq, scope, new.now_ms)?;
            Ok(serde_json::json!({ "pauses_ended": ended }))
        }
        CommandAction::Reconcile { .. } => Ok(serde_json::json!({ "lookups": "scheduled" })),
        CommandAction::Close {
            intent,
            disposition,
            evidence,
        } => {
            let ctx = ApplyContext {
                now_ms: new.now_ms,
                command_seq: Some(command_seq),
                ..ApplyContext::default()
            };
            let event = Event::OperatorClose {
                disposition: *disposition,
                evidence: evidence.clone(),
            };
            let applied = apply_in(tx, intent, &event, &ctx)?;
            Ok(serde_json::json!({ "from": applied.transition.from, "to": applied.transition.to }))
        }
        CommandAction::Cancel { intent } => {
            let ctx = ApplyContext {
                now_ms: new.now_ms,
                command_seq: Some(command_seq),
                cancel_by: Some(new.actor.clone()),
                ..ApplyContext::default()
            };
            let applied = apply_in(tx, intent, &Event::Cancel { reason }, &ctx)?;
            let to = applied.transition.to;
            // `requested` when the intent waits for evidence of what its sends did.
            let outcome = if to == crate::domain::IntentState::Cancelled {
                "cancelled"
            } else {
                "requested"
            };
            Ok(serde_json::json!({
                "from": applied.transition.from, "to": to, "cancellation": outcome
            }))
        }
    }
}
