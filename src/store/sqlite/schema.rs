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

#[cfg(test)]
mod tests {
    use super::*;

    /// SQLite tests a partial index's condition on a row's old and new values whenever a
    /// column it names changes, and an `IN` list of more than two values in it builds and
    /// drops a temporary b-tree each time (migration 13 removed two per state change). No
    /// change of any column of any table may build one.
    #[test]
    fn no_change_of_a_column_builds_a_temporary_btree() {
        let mut conn = Connection::open_in_memory().expect("in-memory database");
        migrate(&mut conn).expect("migrations");
        let columns: Vec<(String, String)> = conn
            .prepare(
                "SELECT t.name, c.name FROM sqlite_master t, pragma_table_info(t.name) c \
                 WHERE t.type = 'table' AND t.name NOT LIKE 'sqlite_%' \
                 AND t.sql NOT LIKE 'CREATE VIRTUAL%' AND c.pk = 0",
            )
            .expect("columns")
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .expect("columns")
            .collect::<Result<_, _>>()
            .expect("columns");
        let mut checked = 0;
        let mut tables = std::collections::BTreeSet::new();
        for (table, column) in &columns {
            // A table that is its own key (no rowid) is found by its key's first column; the
            // tables of a full-text index's own are SQLite's, and prepare neither way.
            let first_key: Option<String> = conn
                .query_row(
                    "SELECT name FROM pragma_table_info(?1) WHERE pk = 1",
                    [table],
                    |r| r.get(0),
                )
                .ok();
            let explain = |found_by: &str| {
                format!(
                    "EXPLAIN UPDATE \"{table}\" SET \"{column}\" = \"{column}\" WHERE {found_by} = ?1"
                )
            };
            let Ok(mut explain) = conn
                .prepare(&explain("rowid"))
                .or_else(|e| match &first_key {
                    Some(key) => conn.prepare(&explain(&format!("\"{key}\""))),
                    None => Err(e),
                })
            else {
                continue;
            };
            let opcodes: Vec<String> = explain
                .query_map([0], |r| r.get(1))
                .expect("explain")
                .collect::<Result<_, _>>()
                .expect("explain");
            assert!(
                !opcodes.iter().any(|op| op == "OpenEphemeral"),
                "changing {table}.{column} builds a temporary b-tree"
            );
            checked += 1;
            tables.insert(table.as_str());
        }
        assert!(checked > 100, "only {checked} columns checked");
        assert!(
            tables.contains("webhook_arrivals"),
            "a table that is its own key is checked too: {tables:?}"
        );
    }
}
