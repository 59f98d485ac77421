//! PostgreSQL's migrations: the shared list ([`crate::store::migrations`]) as PostgreSQL
//! reads it, its version in a one-row table; a schema newer than this build knows is
//! refused.
//!
//! Coordinators starting together migrate one at a time: a session-level advisory lock,
//! asked for without waiting in the server (see [`hold_migration_lock`]). Each migration
//! commits with its version, as on SQLite. A new database gets its whole schema in one
//! transaction; on a database that has one, a migration that only adds indexes builds them
//! concurrently (`CREATE INDEX CONCURRENTLY`), so the coordinators still running write on
//! while a new one migrates: a plain build holds every write to the table until it ends
//! (seconds at a million intents).

use std::time::Duration;

use super::PgConn;
use crate::store::StoreError;
use crate::store::migrations::{MIGRATIONS, for_postgres};
use crate::store::sql::{Conn, ConnExt, params};

/// The advisory lock migrations hold (any number, the same for every coordinator).
const MIGRATION_LOCK: i64 = 0x1D_E5C0;

/// The name a session waiting for another's migration takes in `pg_stat_activity`, so an
/// operator who finds coordinators slow to start sees why.
pub const WAITING_FOR_A_MIGRATION: &str = "intentdesk waiting for a migration";

/// Bring the database up to the newest schema.
pub fn migrate(conn: &PgConn) -> Result<(), StoreError> {
    hold_migration_lock(conn)?;
    let outcome = migrate_held(conn);
    let unlocked = conn.one(
        "SELECT pg_advisory_unlock(?1)::text",
        params![MIGRATION_LOCK],
        |r| r.get::<String>(0),
    );
    outcome?;
    unlocked.map(drop)
}

/// Take the migrations' lock for this session. The lock is asked for, not waited for in the
/// server: a session waiting in a statement holds a snapshot, and a concurrent index build
/// waits for every older snapshot to end, so the migrating session and a waiting one would
/// wait for each other until the server ended one of them. Between asks the session holds
/// nothing.
fn hold_migration_lock(conn: &PgConn) -> Result<(), StoreError> {
    let mut pause = Duration::from_millis(10);
    let mut named = false;
    loop {
        let held: bool = conn.one(
            "SELECT pg_try_advisory_lock(?1)",
            params![MIGRATION_LOCK],
            |r| r.get(0),
        )?;
        if held {
            if named {
                conn.batch("SET application_name = 'intentdesk'")?;
            }
            return Ok(());
        }
        if !named {
            conn.batch(&format!(
                "SET application_name = '{WAITING_FOR_A_MIGRATION}'"
            ))?;
            named = true;
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(200));
    }
}

/// The migrations, with the lock held.
fn migrate_held(conn: &PgConn) -> Result<(), StoreError> {
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
    if current == known {
        return Ok(());
    }
    if current == 0 {
        // A new database: nobody writes to it yet, and its whole schema is one step.
        return in_transaction(conn, |conn| {
            for sql in MIGRATIONS {
                conn.batch(&for_postgres(sql))?;
            }
            set_version(conn, known)
        });
    }
    for (index, sql) in MIGRATIONS.iter().enumerate().skip(current as usize) {
        let version = index as i64 + 1;
        match index_builds(sql) {
            Some(builds) => {
                for build in builds {
                    build_concurrently(conn, &build)?;
                }
                in_transaction(conn, |conn| set_version(conn, version))?;
            }
            None => in_transaction(conn, |conn| {
                conn.batch(&for_postgres(sql))?;
                set_version(conn, version)
            })?,
        }
    }
    // A database with data gets figures for its new indexes. A new one is left never
    // analysed: figures of empty tables would make plans that read whole tables once they
    // fill, until the first automatic analyse.
    conn.batch("ANALYZE")
}

fn set_version(conn: &PgConn, version: i64) -> Result<(), StoreError> {
    conn.run("DELETE FROM intentdesk_schema", params![])?;
    conn.run(
        "INSERT INTO intentdesk_schema (version) VALUES (?1)",
        params![version],
    )?;
    Ok(())
}

fn in_transaction(
    conn: &PgConn,
    f: impl FnOnce(&PgConn) -> Result<(), StoreError>,
) -> Result<(), StoreError> {
    conn.batch("BEGIN")?;
    match f(conn) {
        Ok(()) => conn.batch("COMMIT"),
        Err(e) => {
            let _ = conn.batch("ROLLBACK");
            Err(e)
        }
    }
}

/// One index a migration adds: its name and the statement as PostgreSQL runs it.
#[derive(Debug, PartialEq)]
struct IndexBuild {
    name: String,
    sql: String,
}

/// The indexes of a migration that only adds indexes, each as a concurrent build that skips
/// an index already there; `None` for any other migration.
fn index_builds(migration: &str) -> Option<Vec<IndexBuild>> {
    let statements: Vec<String> = migration
        .split(';')
        .map(|statement| {
            statement
                .lines()
                .filter(|line| !line.trim_start().starts_with("--"))
                .collect::<Vec<_>>()
                .join("\n")
                .trim()
                .to_string()
        })
        .filter(|statement| !statement.is_empty())
        .collect();
    let mut builds = Vec::new();
    for statement in &statements {
        let (head, rest) = if let Some(rest) = statement.strip_prefix("CREATE INDEX ") {
            ("CREATE INDEX", rest)
        } else if let Some(rest) = statement.strip_prefix("CREATE UNIQUE INDEX ") {
            ("CREATE UNIQUE INDEX", rest)
        } else {
            return None;
        };
        let name = rest.split_whitespace().next()?;
        if name.eq_ignore_ascii_case("IF") || name.eq_ignore_ascii_case("CONCURRENTLY") {
            return None;
        }
        builds.push(IndexBuild {
            name: name.to_string(),
            sql: for_postgres(&format!("{head} CONCURRENTLY IF NOT EXISTS {rest}")),
        });
    }
    (!builds.is_empty()).then_some(builds)
}

/// Build one index without holding writes to its table. A build cut short (the coordinator
/// stopped, the connection lost, the build failed) leaves the index behind marked invalid:
/// no query uses it and every write still keeps it, so it is dropped and built again.
fn build_concurrently(conn: &PgConn, build: &IndexBuild) -> Result<(), StoreError> {
    let invalid: bool = conn.one(
        "SELECT EXISTS (SELECT 1 FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid \
         JOIN pg_namespace n ON n.oid = c.relnamespace \
         WHERE c.relname = ?1 AND n.nspname = current_schema() AND NOT x.indisvalid)",
        params![build.name],
        |r| r.get(0),
    )?;
    if invalid {
        conn.batch(&format!("DROP INDEX CONCURRENTLY IF EXISTS {}", build.name))?;
    }
    conn.batch(&build.sql)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_migrations_that_add_nothing_but_indexes_are_built_concurrently() {
        let builds = index_builds(
            "\nCREATE INDEX intents_tier ON intents (tier, seq);\n\
             -- a comment\nCREATE UNIQUE INDEX one_key ON keys (key) WHERE key IS NOT NULL;\n",
        )
        .expect("only indexes");
        assert_eq!(
            builds,
            vec![
                IndexBuild {
                    name: "intents_tier".into(),
                    sql: "CREATE INDEX CONCURRENTLY IF NOT EXISTS intents_tier ON intents (tier, seq)"
                        .into(),
                },
                IndexBuild {
                    name: "one_key".into(),
                    sql: "CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS one_key ON keys (key) \
                          WHERE key IS NOT NULL"
                        .into(),
                },
            ]
        );
        assert_eq!(
            index_builds("CREATE INDEX a ON t (x); ALTER TABLE t ADD COLUMN y TEXT;"),
            None
        );
        assert_eq!(index_builds("DROP INDEX a; CREATE INDEX a ON t (x);"), None);
        assert_eq!(index_builds("  "), None);
        // Of the shipped list, the index-only ones: 3, 4, 7 and 16-20.
        let concurrent: Vec<usize> = MIGRATIONS
            .iter()
            .enumerate()
            .filter(|(_, sql)| index_builds(sql).is_some())
            .map(|(index, _)| index + 1)
            .collect();
        assert_eq!(concurrent, vec![3, 4, 7, 16, 17, 18, 19, 20]);
    }
}
