//! The `connector_contracts`, `gate_sightings` and `revisits` tables: each connector's
//! contract as last seen, the providers, releases and tools seen so far, and the revisit
//! events (the gate's part of the audit) that changes and first sightings make.
//!
//! Several coordinators may start on one database at once: a contract is replaced only if
//! it is still the one the comparison read, and a sighting is inserted only once, so one
//! change makes one event whoever notices it.

use super::sql::{ConnExt, Row, Value, params, params_of};
use super::{Store, StoreError, to_i64};
use crate::domain::revisit::Change;
use crate::wire::Revisit;

/// The longest page of revisit events.
pub const MAX_REVISITS: u32 = 500;

/// One name seen by the coordinator: a provider, a release, or a tool at a tier.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Sighting {
    /// `provider`, `release` or `tool`.
    pub kind: &'static str,
    pub name: String,
    /// What the name was seen with (a tool's consequence tier); empty otherwise.
    pub variant: String,
}

/// Turns a first sighting, given the variants of its name seen before, into the change a
/// revisit event records.
pub type Signal<'a> = &'a dyn Fn(&Sighting, &[String]) -> Change;

/// The gate's revisit signals.
pub trait Revisits {
    /// Every stored contract, by connector: the JSON the coordinator stored.
    fn contracts(&mut self) -> Result<Vec<(String, String)>, StoreError>;

    /// Store `connector`'s contract as `json` in place of `old` (`None`: there was none),
    /// and record `changes` as revisit events, in one transaction. When the stored contract
    /// is no longer `old` (another coordinator replaced it meanwhile) nothing is written and
    /// the answer is false.
    fn replace_contract(
        &mut self,
        connector: &str,
        old: Option<&str>,
        json: &str,
        changes: &[Change],
        now_ms: u64,
    ) -> Result<bool, StoreError>;

    /// Record `sightings` as seen. Those seen for the first time are answered, with the
    /// `signal` turns each first sighting, given the variants seen before under the same
    /// kind and name, into the change recorded as a revisit event of `tenant`; without it
    /// nothing else is written (the baseline of a first start).
    fn sight(
        &mut self,
        sightings: &[Sighting],
        tenant: Option<&str>,
        signal: Option<Signal<'_>>,
        now_ms: u64,
    ) -> Result<Vec<Sighting>, StoreError>;

    /// Every sighting stored, to warm a coordinator's memory of them.
    fn sightings(&mut self) -> Result<Vec<Sighting>, StoreError>;

    /// Revisit events newest first, those after `after_seq` only; within `tenants` (the
    /// coordinator's own events, of no tenant, are everyone's), or all with `None`.
    fn revisits(
        &mut self,
        after_seq: u64,
        tenants: Option<&[String]>,
        limit: u32,
    ) -> Result<Vec<Revisit>, StoreError>;
}

fn insert_change(
    tx: &dyn super::sql::Conn,
    subject: &str,
    change: &Change,
    tenant: Option<&str>,
    now_ms: u64,
) -> Result<(), StoreError> {
    tx.run_held(
        "INSERT INTO revisits (kind, subject, field, old_value, new_value, tenant, at_ms) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![
            change.kind.as_str(),
            subject,
            change.field,
            change.old,
            change.new,
            tenant,
            to_i64(now_ms)
        ],
    )?;
    Ok(())
}

fn kind_name(kind: &str) -> Result<&'static str, StoreError> {
    ["provider", "release", "tool"]
        .into_iter()
        .find(|k| *k == kind)
        .ok_or_else(|| StoreError::Corrupt(format!("unknown sighting kind `{kind}`")))
}

fn revisit_from_row(r: &Row<'_>) -> Result<Revisit, StoreError> {
    Ok(Revisit {
        seq: r.get(0)?,
        kind: r.get::<String>(1)?.parse()?,
        subject: r.get(2)?,
        field: r.get(3)?,
        old: r.get(4)?,
        new: r.get(5)?,
        tenant: r.get(6)?,
        at_ms: r.get(7)?,
    })
}

impl Revisits for Store {
    fn contracts(&mut self) -> Result<Vec<(String, String)>, StoreError> {
        self.conn.rows(
            "SELECT connector, contract_json FROM connector_contracts ORDER BY connector",
            params![],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
    }

    fn replace_contract(
        &mut self,
        connector: &str,
        old: Option<&str>,
        json: &str,
        changes: &[Change],
        now_ms: u64,
    ) -> Result<bool, StoreError> {
        let tx = self.conn.savepoint()?;
        let now = to_i64(now_ms);
        let replaced = match old {
            None => tx.run(
                "INSERT INTO connector_contracts (connector, contract_json, updated_at_ms) \
                 VALUES (?1, ?2, ?3) ON CONFLICT (connector) DO NOTHING",
                params![connector, json, now],
            )?,
            Some(old) => tx.run(
                "UPDATE connector_contracts SET contract_json = ?2, updated_at_ms = ?3 \
                 WHERE connector = ?1 AND contract_json = ?4",
                params![connector, json, now, old],
            )?,
        };
        if replaced != 1 {
            return Ok(false);
        }
        for change in changes {
            insert_change(&tx, connector, change, None, now_ms)?;
        }
        tx.commit()?;
        Ok(true)
    }

    fn sight(
        &mut self,
        sightings: &[Sighting],
        tenant: Option<&str>,
        signal: Option<Signal<'_>>,
        now_ms: u64,
    ) -> Result<Vec<Sighting>, StoreError> {
        let tx = self.conn.savepoint()?;
        let mut first = Vec::new();
        for s in sightings {
            let before: Vec<String> = tx.rows(
                "SELECT variant FROM gate_sightings WHERE kind = ?1 AND name = ?2 ORDER BY variant",
                params![s.kind, s.name],
                |r| r.get(0),
            )?;
            let inserted = tx.run(
                "INSERT INTO gate_sightings (kind, name, variant, first_seen_at_ms) VALUES (?1, ?2, ?3, ?4) \
                 ON CONFLICT (kind, name, variant) DO NOTHING",
                params![s.kind, s.name, s.variant, to_i64(now_ms)],
            )?;
            if inserted == 1 {
                if let Some(signal) = signal {
                    insert_change(&tx, &s.name, &signal(s, &before), tenant, now_ms)?;
                }
                first.push(s.clone());
            }
        }
        tx.commit()?;
        Ok(first)
    }

    fn sightings(&mut self) -> Result<Vec<Sighting>, StoreError> {
        let rows: Vec<(String, String, String)> = self.conn.rows(
            "SELECT kind, name, variant FROM gate_sightings",
            params![],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )?;
        rows.into_iter()
            .map(|(kind, name, variant)| {
                Ok(Sighting {
                    kind: kind_name(&kind)?,
                    name,
                    variant,
                })
            })
            .collect()
    }

    fn revisits(
        &mut self,
        after_seq: u64,
        tenants: Option<&[String]>,
        limit: u32,
    ) -> Result<Vec<Revisit>, StoreError> {
        let mut values = vec![
            Value::Int(to_i64(after_seq)),
            Value::Int(i64::from(limit.min(MAX_REVISITS))),
        ];
        let mut sql = "SELECT seq, kind, subject, field, old_value, new_value, tenant, at_ms \
                       FROM revisits WHERE seq > ?1"
            .to_string();
        if let Some(list) = tenants {
            let marks: Vec<String> = (0..list.len()).map(|k| format!("?{}", k + 3)).collect();
            sql.push_str(" AND (tenant IS NULL");
            if !marks.is_empty() {
                sql.push_str(&format!(" OR tenant IN ({})", marks.join(", ")));
            }
            sql.push(')');
            values.extend(list.iter().cloned().map(Value::Text));
        }
        sql.push_str(" ORDER BY seq DESC LIMIT ?2");
        self.conn.rows(&sql, &params_of(&values), revisit_from_row)
    }
}
