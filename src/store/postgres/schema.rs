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
use crate::store::sql::{Conn, ConnExt, Optional, params};

/// The advisory lock migrations hold (any number, the same for every coordinator).
const MIGRATION_LOCK: i64 = 0x1D_E5C0;

/// The name a session waiting for another's migration takes in `pg_stat_activity`, so an
/// operator who finds coordinators slow to start sees why.
pub const WAITING_FOR_A_MIGRATION: &str = "intentdesk waiting for a migration";

/// Bring the database up to the newest schema. Its statements run without the statement
/// limit the URL may set (an index build on a big table takes as long as it takes); the
/// limit stands again after.
pub fn migrate(conn: &PgConn) -> Result<(), StoreError> {
    conn.batch("SET statement_timeout = 0")?;
    let outcome = migrate_unlimited(conn);
    let reset = conn.batch("RESET statement_timeout");
    outcome?;
    reset
}

fn migrate_unlimited(conn: &PgConn) -> Result<(), StoreError> {
    let mut ended = 0;
    loop {
        hold_migration_lock(conn)?;
        let outcome = migrate_held(conn);
        // Ending the session lets the lock go too: a failed unlock fails nothing.
        if let Err(e) = conn.one(
            "SELECT pg_advisory_unlock(?1)::text",
            params![MIGRATION_LOCK],
            |r| r.get::<String>(0),
        ) {
            tracing::warn!(error = %e, "the migrations' lock was not let go; it goes with the connection");
        }
        match outcome {
            // A coordinator of an earlier build waits for the migrations' lock inside a
            // statement, and a concurrent build waits for its snapshot: the server ends
            // one of the two, often the build. Letting the lock go lets the other through;
            // the build runs again after it.
            Err(e) if ended_for_a_deadlock(&e) && ended < DEADLOCK_TRIES => {
                ended += 1;
                tracing::warn!(error = %e, "a migration was ended to break a deadlock; running it again");
                std::thread::sleep(Duration::from_millis(100) * ended);
            }
            other => return other,
        }
    }
}

/// How many times a migration ended to break a deadlock is run again.
const DEADLOCK_TRIES: u32 = 5;

fn ended_for_a_deadlock(e: &StoreError) -> bool {
    matches!(e, StoreError::Unavailable(why) if why.ends_with("(40P01)"))
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
                tracing::info!("another session's migration is done");
            }
            return Ok(());
        }
        if !named {
            conn.batch(&format!(
                "SET application_name = '{WAITING_FOR_A_MIGRATION}'"
            ))?;
            tracing::info!(
                "waiting for another session's migration of the schema (it holds the migrations' lock)"
            );
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
                for (done, build) in builds.iter().enumerate() {
                    let started = std::time::Instant::now();
                    tracing::info!(migration = version, index = %build.name, "building an index beside the running coordinators' writes");
                    if let Err(e) = build_concurrently(conn, build) {
                        // A migration is there whole or not at all: a coordinator of an
                        // earlier build that knows it builds its indexes in a transaction,
                        // and would meet those already built by name.
                        for built in &builds[..done] {
                            drop_index(conn, &built.name);
                        }
                        return Err(e);
                    }
                    tracing::info!(migration = version, index = %build.name, ms = started.elapsed().as_millis() as u64, "index built");
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
    // fill, until the first automatic analyse. The schema is whole without them.
    if let Err(e) = conn.batch("ANALYZE") {
        tracing::warn!(error = %e, "the database was not analysed after its migrations; the server's own analyse will give the new indexes their figures");
    }
    Ok(())
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
        // A plain name, as the catalogue spells it (checked there by that spelling).
        let name = rest.split_whitespace().next()?;
        let plain = name.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if !plain || ["if", "on", "concurrently"].contains(&name) {
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
/// no query uses it and every write may still keep it, so it is dropped and built again. A
/// build that fails drops what it left, and one that ends with the index invalid fails.
fn build_concurrently(conn: &PgConn, build: &IndexBuild) -> Result<(), StoreError> {
    if index_valid(conn, &build.name)? == Some(false) {
        conn.batch(&format!("DROP INDEX CONCURRENTLY IF EXISTS {}", build.name))?;
    }
    if let Err(e) = conn.batch(&build.sql) {
        drop_index(conn, &build.name);
        return Err(e);
    }
    match index_valid(conn, &build.name)? {
        Some(true) => Ok(()),
        _ => Err(StoreError::Database(format!(
            "the index {} is not there and valid after its build: is its name taken by \
             another table or index?",
            build.name
        ))),
    }
}

/// Drop the index `name` without holding writes to its table, if it is there; a failure is
/// only logged (the next start drops an invalid index, and builds one left valid again
/// only if it is missing).
fn drop_index(conn: &PgConn, name: &str) {
    if let Err(e) = conn.batch(&format!("DROP INDEX CONCURRENTLY IF EXISTS {name}")) {
        tracing::warn!(index = %name, error = %e, "an index of an unfinished migration was not dropped");
    }
}

/// Whether the index `name` of the current schema is valid; `None` when there is none.
fn index_valid(conn: &PgConn, name: &str) -> Result<Option<bool>, StoreError> {
    conn.one(
        "SELECT x.indisvalid FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid \
         JOIN pg_namespace n ON n.oid = c.relnamespace \
         WHERE c.relname = ?1 AND n.nspname = current_schema()",
        params![name],
        |r| r.get::<bool>(0),
    )
    .optional()
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
        assert_eq!(index_builds("CREATE INDEX ON t (x);"), None);
        assert_eq!(index_builds("CREATE INDEX \"Mixed\" ON t (x);"), None);
        assert_eq!(index_builds("CREATE INDEX IF NOT EXISTS a ON t (x);"), None);
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
