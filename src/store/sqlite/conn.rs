//! [`Conn`] over a rusqlite connection: every statement through the connection's statement
//! cache, so each is parsed and planned once per connection rather than once per call.

use rusqlite::types::{ToSqlOutput, ValueRef as SqlValueRef};
use rusqlite::{Connection, ToSql};

use crate::store::StoreError;
use crate::store::sql::{Conn, Dialect, Elision, Row, RowSource, ToValue, ValueRef};

/// One SQLite connection.
pub struct SqliteConn(pub(super) Connection, Elision);

impl SqliteConn {
    pub(super) fn new(conn: Connection) -> SqliteConn {
        SqliteConn(conn, Elision::default())
    }
}

/// A parameter as rusqlite binds it, borrowed.
struct Param<'a>(ValueRef<'a>);

impl ToSql for Param<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::Borrowed(match self.0 {
            ValueRef::Null => SqlValueRef::Null,
            ValueRef::Int(i) => SqlValueRef::Integer(i),
            ValueRef::Real(r) => SqlValueRef::Real(r),
            ValueRef::Text(t) => SqlValueRef::Text(t.as_bytes()),
        }))
    }
}

fn bind<'a>(params: &'a [&'a dyn ToValue]) -> impl Iterator<Item = Param<'a>> {
    params.iter().map(|p| Param(p.to_value()))
}

struct SqliteRow<'a>(&'a rusqlite::Row<'a>);

impl RowSource for SqliteRow<'_> {
    fn value(&self, index: usize) -> Result<ValueRef<'_>, StoreError> {
        Ok(match self.0.get_ref(index)? {
            SqlValueRef::Null => ValueRef::Null,
            SqlValueRef::Integer(i) => ValueRef::Int(i),
            SqlValueRef::Real(r) => ValueRef::Real(r),
            SqlValueRef::Text(t) => ValueRef::Text(
                std::str::from_utf8(t).map_err(|e| StoreError::Corrupt(e.to_string()))?,
            ),
            SqlValueRef::Blob(_) => {
                return Err(StoreError::Corrupt(format!(
                    "column {index} holds bytes where text or a number was expected"
                )));
            }
        })
    }
}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        match e {
            rusqlite::Error::QueryReturnedNoRows => StoreError::NoRow,
            other => StoreError::Database(other.to_string()),
        }
    }
}

impl Conn for SqliteConn {
    fn run(&self, sql: &str, params: &[&dyn ToValue]) -> Result<usize, StoreError> {
        let mut stmt = self.0.prepare_cached(sql)?;
        Ok(stmt.execute(rusqlite::params_from_iter(bind(params)))?)
    }

    fn each(
        &self,
        sql: &str,
        params: &[&dyn ToValue],
        f: &mut dyn FnMut(&Row<'_>) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        let mut stmt = self.0.prepare_cached(sql)?;
        let mut rows = stmt.query(rusqlite::params_from_iter(bind(params)))?;
        while let Some(row) = rows.next()? {
            f(&Row::new(&SqliteRow(row)))?;
        }
        Ok(())
    }

    fn batch(&self, sql: &str) -> Result<(), StoreError> {
        // Transaction control runs several times per request: one statement goes through
        // the cache, several (migrations) are parsed once.
        if sql.contains(';') {
            self.0.execute_batch(sql)?;
        } else {
            self.0.prepare_cached(sql)?.execute([])?;
        }
        Ok(())
    }

    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    fn last_insert_rowid(&self) -> Option<i64> {
        Some(self.0.last_insert_rowid())
    }

    fn elision(&self) -> Option<&Elision> {
        Some(&self.1)
    }

    fn total_changes(&self) -> Option<u64> {
        Some(self.0.total_changes())
    }

    fn in_transaction(&self) -> Option<bool> {
        Some(!self.0.is_autocommit())
    }

    fn as_conn(&self) -> &dyn Conn {
        self
    }
}
