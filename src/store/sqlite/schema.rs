//! SQLite's migrations: each entry of [`MIGRATIONS`] runs once, in order, inside one
//! transaction, and bumps the file's `user_version`.

use rusqlite::Connection;

use super::StoreError;
use crate::store::migrations::MIGRATIONS;

/// Bring the database up to the newest schema.
pub fn migrate(conn: &mut Connection) -> Result<(), StoreError> {
    let current: i64 = conn.query_row("PRAGMA user_version", [], |row| row.get(0))?;
    let known = MIGRATIONS.len() as i64;
    if current > known {
        return Err(StoreError::NewerSchema {
            found: current,
            known,
        });
    }
    for (index, sql) in MIGRATIONS.iter().enumerate().skip(current as usize) {
        let tx = conn.transaction()?;
        tx.execute_batch(sql)?;
        tx.pragma_update(None, "user_version", index as i64 + 1)?;
        tx.commit()?;
    }
    if current < known {
        analyze_new_indexes(conn)?;
    }
    Ok(())
}

/// A database analysed before (the generated data sets are) has figures for its old indexes
/// only, and the planner takes an index without figures for a very selective one: give the
/// new indexes theirs. A database never analysed is left so, all indexes alike.
fn analyze_new_indexes(conn: &Connection) -> Result<(), StoreError> {
    let analysed: bool = conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE name = 'sqlite_stat1')",
        [],
        |row| row.get(0),
    )?;
    if !analysed {
        return Ok(());
    }
    let missing: Vec<String> = conn
        .prepare(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL \
             AND name NOT IN (SELECT idx FROM sqlite_stat1 WHERE idx IS NOT NULL)",
        )?
        .query_map([], |row| row.get(0))?
        .collect::<Result<_, _>>()?;
    for name in missing {
        conn.execute_batch(&format!("ANALYZE \"{name}\""))?;
    }
    Ok(())
}
