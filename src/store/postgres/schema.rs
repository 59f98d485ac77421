//! PostgreSQL's migrations: the shared list ([`crate::store::migrations`]) as PostgreSQL
//! reads it, its version in a one-row table. Coordinators starting together migrate one at
//! a time (an advisory lock held by the migrating transaction); a schema newer than this
//! build knows is refused.

use super::PgConn;
use crate::store::StoreError;
use crate::store::migrations::{MIGRATIONS, for_postgres};
use crate::store::sql::{Conn, ConnExt, params};

/// The advisory lock migrations hold (any number, the same for every coordinator).
const MIGRATION_LOCK: i64 = 0x1D_E5C0;

/// Bring the database up to the newest schema.
pub fn migrate(conn: &PgConn) -> Result<(), StoreError> {
    conn.batch("BEGIN")?;
    let outcome = migrate_in(conn);
    match outcome {
        Ok(()) => conn.batch("COMMIT"),
        Err(e) => {
            let _ = conn.batch("ROLLBACK");
            Err(e)
        }
    }
}

fn migrate_in(conn: &PgConn) -> Result<(), StoreError> {
    conn.one(
        "SELECT pg_advisory_xact_lock(?1)::text",
        params![MIGRATION_LOCK],
        |r| r.get::<String>(0),
    )?;
    conn.batch("CREATE TABLE IF NOT EXISTS intentdesk_schema (version BIGINT NOT NULL)")?;
    let current: i64 = conn.one(
        "SELECT coalesce(max(version), 0) FROM intentdesk_schema",
        params![],
        |r| r.get(0),
    )?;
    let known = MIGRATIONS.len() as i64;
    if current > known {
        return Err(StoreError::NewerSchema {
            found: current,
            known,
        });
    }
    for sql in MIGRATIONS.iter().skip(current as usize) {
        conn.batch(&for_postgres(sql))?;
    }
    if current < known {
        conn.run("DELETE FROM intentdesk_schema", params![])?;
        conn.run(
            "INSERT INTO intentdesk_schema (version) VALUES (?1)",
            params![known],
        )?;
        // A database with data gets figures for its new indexes. A new one is left never
        // analysed: figures of empty tables would make plans that read whole tables once they
        // fill, until the first automatic analyse.
        if current > 0 {
            conn.batch("ANALYZE")?;
        }
    }
    Ok(())
}
