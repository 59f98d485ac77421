//! The one interface the store's operations are written against: a connection that runs
//! SQL with numbered parameters (`?1`, `?2`, …) and hands rows back as values. Each backend
//! (`sqlite`, and PostgreSQL beside it) implements [`Conn`]; every table module is written
//! once, in the SQL both speak, with the few differences asked of the [`Dialect`].
//!
//! A statement either runs ([`Conn::run`]) or reads rows ([`Conn::each`]); the helpers on
//! `dyn Conn` (`one`, `rows`, `savepoint`) are built on those two.

use std::fmt;

use super::StoreError;

/// A parameter as the backend is given it, borrowed from the caller.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ValueRef<'a> {
    Null,
    Int(i64),
    Real(f64),
    Text(&'a str),
}

/// A parameter value owned by a query under construction (a dynamic `WHERE`).
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
}

impl From<ValueRef<'_>> for Value {
    fn from(value: ValueRef<'_>) -> Value {
        match value {
            ValueRef::Null => Value::Null,
            ValueRef::Int(v) => Value::Int(v),
            ValueRef::Real(v) => Value::Real(v),
            ValueRef::Text(v) => Value::Text(v.to_string()),
        }
    }
}

/// Something that can be bound as a parameter.
pub trait ToValue {
    fn to_value(&self) -> ValueRef<'_>;
}

impl ToValue for Value {
    fn to_value(&self) -> ValueRef<'_> {
        match self {
            Value::Null => ValueRef::Null,
            Value::Int(v) => ValueRef::Int(*v),
            Value::Real(v) => ValueRef::Real(*v),
            Value::Text(v) => ValueRef::Text(v),
        }
    }
}

impl From<String> for Value {
    fn from(v: String) -> Self {
        Value::Text(v)
    }
}

impl From<&str> for Value {
    fn from(v: &str) -> Self {
        Value::Text(v.to_string())
    }
}

impl From<i64> for Value {
    fn from(v: i64) -> Self {
        Value::Int(v)
    }
}

impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Self {
        v.map_or(Value::Null, Into::into)
    }
}

macro_rules! int_value {
    ($($t:ty),*) => {$(
        impl ToValue for $t {
            fn to_value(&self) -> ValueRef<'_> {
                ValueRef::Int(i64::from(*self))
            }
        }
    )*};
}
int_value!(i64, i32, u32, u16, u8, bool);

impl ToValue for f64 {
    fn to_value(&self) -> ValueRef<'_> {
        ValueRef::Real(*self)
    }
}

impl ToValue for str {
    fn to_value(&self) -> ValueRef<'_> {
        ValueRef::Text(self)
    }
}

impl ToValue for String {
    fn to_value(&self) -> ValueRef<'_> {
        ValueRef::Text(self)
    }
}

impl<T: ToValue + ?Sized> ToValue for &T {
    fn to_value(&self) -> ValueRef<'_> {
        (**self).to_value()
    }
}

impl<T: ToValue> ToValue for Option<T> {
    fn to_value(&self) -> ValueRef<'_> {
        self.as_ref().map_or(ValueRef::Null, ToValue::to_value)
    }
}

/// Parameters for one statement, in order: `params![a, b]`.
#[macro_export]
#[doc(hidden)]
macro_rules! sql_params {
    ($($p:expr),* $(,)?) => {
        &[$(&$p as &dyn $crate::store::sql::ToValue),*] as &[&dyn $crate::store::sql::ToValue]
    };
}
pub use crate::sql_params as params;

/// The parameters of a dynamic query, as a statement takes them.
pub fn params_of<T: ToValue>(values: &[T]) -> Vec<&dyn ToValue> {
    values.iter().map(|v| v as &dyn ToValue).collect()
}

/// One column of a row as the backend read it.
pub trait RowSource {
    fn value(&self, index: usize) -> Result<ValueRef<'_>, StoreError>;
}

/// One row of a result.
pub struct Row<'a> {
    source: &'a dyn RowSource,
}

impl<'a> Row<'a> {
    pub fn new(source: &'a dyn RowSource) -> Self {
        Row { source }
    }

    /// Column `index` as `T`; a type that does not fit is a corrupt-data error.
    pub fn get<T: FromValue>(&self, index: usize) -> Result<T, StoreError> {
        T::from_value(self.source.value(index)?)
            .ok_or_else(|| StoreError::Corrupt(format!("column {index} has an unexpected type")))
    }
}

/// A type a column can be read as.
pub trait FromValue: Sized {
    fn from_value(v: ValueRef<'_>) -> Option<Self>;
}

impl FromValue for i64 {
    fn from_value(v: ValueRef<'_>) -> Option<Self> {
        match v {
            ValueRef::Int(i) => Some(i),
            _ => None,
        }
    }
}

macro_rules! narrow_int {
    ($($t:ty),*) => {$(
        impl FromValue for $t {
            fn from_value(v: ValueRef<'_>) -> Option<Self> {
                match v {
                    ValueRef::Int(i) => <$t>::try_from(i).ok(),
                    _ => None,
                }
            }
        }
    )*};
}
narrow_int!(u64, u32, u16, i32);

impl FromValue for bool {
    fn from_value(v: ValueRef<'_>) -> Option<Self> {
        match v {
            ValueRef::Int(i) => Some(i != 0),
            _ => None,
        }
    }
}

impl FromValue for f64 {
    fn from_value(v: ValueRef<'_>) -> Option<Self> {
        match v {
            ValueRef::Real(r) => Some(r),
            ValueRef::Int(i) => Some(i as f64),
            _ => None,
        }
    }
}

impl FromValue for String {
    fn from_value(v: ValueRef<'_>) -> Option<Self> {
        match v {
            ValueRef::Text(t) => Some(t.to_string()),
            _ => None,
        }
    }
}

impl<T: FromValue> FromValue for Option<T> {
    fn from_value(v: ValueRef<'_>) -> Option<Self> {
        match v {
            ValueRef::Null => Some(None),
            other => T::from_value(other).map(Some),
        }
    }
}

/// What differs between the backends' SQL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    Postgres,
}

impl Dialect {
    /// The values of `expr` over a group, joined by `sep`.
    pub fn group_concat(self, expr: &str, sep: &str) -> String {
        match self {
            Dialect::Sqlite => format!("group_concat({expr}, '{sep}')"),
            Dialect::Postgres => format!("string_agg({expr}, '{sep}')"),
        }
    }

    /// The text at `path` (dotted keys) in the JSON text `column`.
    pub fn json_text(self, column: &str, path: &[&str]) -> String {
        match self {
            Dialect::Sqlite => format!("json_extract({column}, '$.{}')", path.join(".")),
            Dialect::Postgres => format!("(({column})::jsonb #>> '{{{}}}')", path.join(",")),
        }
    }

    /// A read-only transaction whose statements all see one snapshot (PostgreSQL's default,
    /// read committed, gives each statement its own).
    pub fn begin_snapshot(self) -> &'static str {
        match self {
            Dialect::Sqlite => "BEGIN",
            Dialect::Postgres => "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
        }
    }

    /// The end of a `SELECT` that locks the rows it reads of `alias` until the transaction
    /// ends. SQLite's single writer holds the whole database already.
    pub fn for_update(self, alias: &str) -> String {
        match self {
            Dialect::Sqlite => String::new(),
            Dialect::Postgres => format!(" FOR UPDATE OF {alias}"),
        }
    }

    /// The end of a `SELECT` that locks the rows it reads of `aliases`, passing over rows
    /// another transaction holds.
    pub fn for_update_skip_locked(self, aliases: &str) -> String {
        match self {
            Dialect::Sqlite => String::new(),
            Dialect::Postgres => format!(" FOR UPDATE OF {aliases} SKIP LOCKED"),
        }
    }

    /// Whether a new intent's arguments (as given, canonical, folded for search) go in a row
    /// of their own, `intent_payloads` (migration 21), and the intent's own columns stay
    /// empty. SQLite writes a row whole at every update, and an intent's row is updated at
    /// each step of an order; PostgreSQL stores large values apart from the row already.
    pub fn payload_apart(self) -> bool {
        matches!(self, Dialect::Sqlite)
    }

    /// One of an intent's argument columns (`args_json`, `canonical_json`, `search_text`)
    /// in a query over `intents i`: from its own row where [`Dialect::payload_apart`] put it
    /// there, else (an intent made before migration 21, or on PostgreSQL) from the intent's.
    pub fn payload_column(self, column: &str) -> String {
        match self {
            Dialect::Sqlite => format!(
                "coalesce((SELECT p.{column} FROM intent_payloads p WHERE p.intent_seq = i.seq), i.{column})"
            ),
            Dialect::Postgres => format!("i.{column}"),
        }
    }

    /// How a query over many `intents i` reads their search text: the join it adds after
    /// `intents i` in its `FROM`, and the expression. Where the arguments are apart, their
    /// rows are joined rather than asked for by a subquery for each intent: a search of a
    /// million intents that finds nothing took 1.16 s joined, 1.47 s asked
    /// (docs/throughput-log.md).
    pub fn search_text(self) -> (&'static str, &'static str) {
        match self {
            Dialect::Sqlite => (
                " LEFT JOIN intent_payloads ip ON ip.intent_seq = i.seq",
                "coalesce(ip.search_text, i.search_text)",
            ),
            Dialect::Postgres => ("", "i.search_text"),
        }
    }

    /// A subquery whose rows are the integers of the JSON array bound at `param` (its text),
    /// for `x IN (...)` over a list read once and asked of several times.
    pub fn integers_of(self, param: &str) -> String {
        match self {
            Dialect::Sqlite => format!("SELECT value FROM json_each({param})"),
            Dialect::Postgres => {
                format!("SELECT value::bigint FROM json_array_elements_text(({param}::text)::json)")
            }
        }
    }

    /// An index hint after a table name; only SQLite takes one.
    pub fn index_hint(self, hint: &str) -> &str {
        match self {
            Dialect::Sqlite => hint,
            Dialect::Postgres => "",
        }
    }
}

/// A connection to the database, open on one thread (or one pooled session).
pub trait Conn {
    /// Run a statement; the number of rows it changed.
    fn run(&self, sql: &str, params: &[&dyn ToValue]) -> Result<usize, StoreError>;
    /// Run a statement and hand each row it returns to `f`, in order.
    fn each(
        &self,
        sql: &str,
        params: &[&dyn ToValue],
        f: &mut dyn FnMut(&Row<'_>) -> Result<(), StoreError>,
    ) -> Result<(), StoreError>;
    /// Run several statements without parameters (migrations, transaction control).
    fn batch(&self, sql: &str) -> Result<(), StoreError>;
    /// [`Conn::run`] for a write whose count the caller does not read. A connection may hold
    /// it back and send it with the next statement that waits for an answer (PostgreSQL's
    /// writers do while they leave savepoints out: a round trip saved each); its error is
    /// then that statement's, and the writer runs the write again with savepoints. It
    /// counts as a change at once ([`Conn::total_changes`]).
    fn run_held(&self, sql: &str, params: &[&dyn ToValue]) -> Result<(), StoreError> {
        self.run(sql, params).map(|_| ())
    }
    /// Send what [`Conn::run_held`] held back and wait for its answers.
    fn flush(&self) -> Result<(), StoreError> {
        Ok(())
    }
    fn dialect(&self) -> Dialect;
    /// This connection as a trait object (for a [`Savepoint`] to hold).
    fn as_conn(&self) -> &dyn Conn;
    /// Whether the connection was lost and must be opened again (a server's; a file's
    /// never is).
    fn is_broken(&self) -> bool {
        false
    }
    /// The rowid of the last row this connection inserted, where the connection keeps it
    /// at hand (SQLite's does: no statement needed to read it).
    fn last_insert_rowid(&self) -> Option<i64> {
        None
    }
    /// Whether and how this connection leaves its savepoints out ([`Elision`]); None where
    /// it never does.
    fn elision(&self) -> Option<&Elision> {
        None
    }
    /// How many rows this connection has inserted, changed or deleted since it opened,
    /// where it counts them (SQLite's `total_changes`, triggers' rows included): a savepoint
    /// left out whose writes changed no row has nothing to undo.
    fn total_changes(&self) -> Option<u64> {
        None
    }
    /// Whether a transaction is open, where the connection can tell (SQLite rolls one back
    /// by itself on some errors: a full disk, an I/O error).
    fn in_transaction(&self) -> Option<bool> {
        None
    }
}

/// Savepoints left out, for a writer that can roll back its whole transaction and run its
/// writes again (SQLite's, between its group commits): a savepoint copies every page a
/// write touches before it changes it, and opening and releasing one are statements of
/// their own. While it is on, [`ConnExt::savepoint`] and
/// [`Store::atomically`](super::Store::atomically) open none; one that would have been
/// rolled back after rows were changed marks the connection instead, and the writer must
/// then roll back the whole transaction (savepoints named in SQL text stay real).
#[derive(Debug, Default)]
pub struct Elision {
    on: std::cell::Cell<bool>,
    unrolled: std::cell::Cell<bool>,
    /// Why the transaction cannot go on in a way a second run would meet again (a lock
    /// waited for too long, a server out of resources), if it is so.
    given_up: std::cell::RefCell<Option<String>>,
}

impl Elision {
    /// Leave savepoints out from now on, or stop.
    pub fn set(&self, on: bool) {
        self.on.set(on);
    }

    /// Whether savepoints are left out now.
    pub fn is_on(&self) -> bool {
        self.on.get()
    }

    /// A savepoint left out would have been rolled back: what was written since it began
    /// must be undone by rolling back the whole transaction, unless the connection's count
    /// of changed rows shows nothing was (a refusal before any write).
    pub fn undo_since(&self, changes_then: Option<u64>, changes_now: Option<u64>) {
        let unchanged = changes_then.is_some() && changes_then == changes_now;
        if !unchanged {
            self.unrolled.set(true);
        }
    }

    /// Whether one would have been rolled back since the last call; clears the mark.
    pub fn take_unrolled(&self) -> bool {
        self.unrolled.replace(false)
    }

    /// The transaction failed for a reason a second run would meet again at once: it is
    /// rolled back whole and answered with `why`, not run again.
    pub fn give_up(&self, why: String) {
        self.unrolled.set(true);
        self.given_up.replace(Some(why));
    }

    /// Why the transaction was given up since the last call, if it was; clears it.
    pub fn take_given_up(&self) -> Option<String> {
        self.given_up.take()
    }
}

/// What every connection can do, built on [`Conn`].
pub trait ConnExt: Conn {
    /// The first row of a statement, read by `f`; `NoRow` when there is none.
    fn one<T>(
        &self,
        sql: &str,
        params: &[&dyn ToValue],
        f: impl FnOnce(&Row<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut f = Some(f);
        let mut out = None;
        self.each(sql, params, &mut |row| {
            if let Some(f) = f.take() {
                out = Some(f(row)?);
            }
            Ok(())
        })?;
        out.ok_or(StoreError::NoRow)
    }

    /// Every row of a statement, each read by `f`.
    fn rows<T>(
        &self,
        sql: &str,
        params: &[&dyn ToValue],
        f: impl FnMut(&Row<'_>) -> Result<T, StoreError>,
    ) -> Result<Vec<T>, StoreError> {
        let mut out = Vec::new();
        self.rows_into(sql, params, &mut out, f)?;
        Ok(out)
    }

    /// [`ConnExt::rows`] added to the end of `out`, whose room a caller that reads again
    /// and again may keep.
    fn rows_into<T>(
        &self,
        sql: &str,
        params: &[&dyn ToValue],
        out: &mut Vec<T>,
        mut f: impl FnMut(&Row<'_>) -> Result<T, StoreError>,
    ) -> Result<(), StoreError> {
        self.each(sql, params, &mut |row| {
            out.push(f(row)?);
            Ok(())
        })
    }

    /// Run an `INSERT` of one row into a table keyed by `seq` and give the row's `seq`.
    /// SQLite's connection says the rowid it just made: a `RETURNING` there builds and
    /// drops a temporary b-tree at every run, which cost the order path more than the
    /// insert's own row. PostgreSQL returns it.
    fn insert_seq(&self, sql: &str, params: &[&dyn ToValue]) -> Result<i64, StoreError> {
        match self.dialect() {
            Dialect::Sqlite => {
                // A statement that inserted nothing (a conflict it was told to ignore) would
                // leave an older row's number to be read.
                let inserted = self.run(sql, params)?;
                if inserted != 1 {
                    return Err(StoreError::Corrupt(format!(
                        "an insert that should make one row made {inserted}"
                    )));
                }
                match self.last_insert_rowid() {
                    Some(seq) => Ok(seq),
                    None => self.one("SELECT last_insert_rowid()", &[], |r| r.get(0)),
                }
            }
            Dialect::Postgres => self.one(&format!("{sql} RETURNING seq"), params, |r| r.get(0)),
        }
    }

    /// Begin a savepoint: everything until its [`Savepoint::commit`] is undone if it is
    /// dropped first.
    fn savepoint(&self) -> Result<Savepoint<'_>, StoreError> {
        let real = !self.elision().is_some_and(Elision::is_on);
        if real {
            self.batch("SAVEPOINT sp")?;
        }
        Ok(Savepoint {
            conn: self.as_conn(),
            done: false,
            real,
            changes: if real { None } else { self.total_changes() },
        })
    }
}

impl<C: Conn + ?Sized> ConnExt for C {}

/// A savepoint on a connection; it derefs to the connection.
pub struct Savepoint<'a> {
    conn: &'a dyn Conn,
    done: bool,
    /// False where the connection leaves savepoints out ([`Elision`]).
    real: bool,
    /// Left out: the connection's count of changed rows when it began.
    changes: Option<u64>,
}

impl Savepoint<'_> {
    /// Keep what was done since the savepoint began.
    pub fn commit(mut self) -> Result<(), StoreError> {
        self.done = true;
        if self.real {
            self.conn.batch("RELEASE sp")
        } else {
            Ok(())
        }
    }
}

impl<'a> std::ops::Deref for Savepoint<'a> {
    type Target = dyn Conn + 'a;
    fn deref(&self) -> &Self::Target {
        self.conn
    }
}

impl Drop for Savepoint<'_> {
    fn drop(&mut self) {
        if !self.done {
            if self.real {
                // The error, if any, is the one the caller is already returning.
                let _ = self.conn.batch("ROLLBACK TO sp; RELEASE sp");
            } else if let Some(elision) = self.conn.elision() {
                elision.undo_since(self.changes, self.conn.total_changes());
            }
        }
    }
}

/// A savepoint is used as its connection.
impl Conn for Savepoint<'_> {
    fn run(&self, sql: &str, params: &[&dyn ToValue]) -> Result<usize, StoreError> {
        self.conn.run(sql, params)
    }
    fn each(
        &self,
        sql: &str,
        params: &[&dyn ToValue],
        f: &mut dyn FnMut(&Row<'_>) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        self.conn.each(sql, params, f)
    }
    fn batch(&self, sql: &str) -> Result<(), StoreError> {
        self.conn.batch(sql)
    }
    fn run_held(&self, sql: &str, params: &[&dyn ToValue]) -> Result<(), StoreError> {
        self.conn.run_held(sql, params)
    }
    fn flush(&self) -> Result<(), StoreError> {
        self.conn.flush()
    }
    fn dialect(&self) -> Dialect {
        self.conn.dialect()
    }
    fn as_conn(&self) -> &dyn Conn {
        self
    }
    fn last_insert_rowid(&self) -> Option<i64> {
        self.conn.last_insert_rowid()
    }
    fn elision(&self) -> Option<&Elision> {
        self.conn.elision()
    }
    fn total_changes(&self) -> Option<u64> {
        self.conn.total_changes()
    }
    fn in_transaction(&self) -> Option<bool> {
        self.conn.in_transaction()
    }
}

impl<C: Conn + ?Sized> Conn for Box<C> {
    fn run(&self, sql: &str, params: &[&dyn ToValue]) -> Result<usize, StoreError> {
        (**self).run(sql, params)
    }
    fn each(
        &self,
        sql: &str,
        params: &[&dyn ToValue],
        f: &mut dyn FnMut(&Row<'_>) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        (**self).each(sql, params, f)
    }
    fn batch(&self, sql: &str) -> Result<(), StoreError> {
        (**self).batch(sql)
    }
    fn run_held(&self, sql: &str, params: &[&dyn ToValue]) -> Result<(), StoreError> {
        (**self).run_held(sql, params)
    }
    fn flush(&self) -> Result<(), StoreError> {
        (**self).flush()
    }
    fn dialect(&self) -> Dialect {
        (**self).dialect()
    }
    fn is_broken(&self) -> bool {
        (**self).is_broken()
    }
    fn last_insert_rowid(&self) -> Option<i64> {
        (**self).last_insert_rowid()
    }
    fn elision(&self) -> Option<&Elision> {
        (**self).elision()
    }
    fn total_changes(&self) -> Option<u64> {
        (**self).total_changes()
    }
    fn in_transaction(&self) -> Option<bool> {
        (**self).in_transaction()
    }
    fn as_conn(&self) -> &dyn Conn {
        (**self).as_conn()
    }
}

/// `Ok(None)` for a statement that returned no row.
pub trait Optional<T> {
    fn optional(self) -> Result<Option<T>, StoreError>;
}

impl<T> Optional<T> for Result<T, StoreError> {
    fn optional(self) -> Result<Option<T>, StoreError> {
        match self {
            Ok(v) => Ok(Some(v)),
            Err(StoreError::NoRow) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

impl fmt::Display for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Dialect::Sqlite => "SQLite",
            Dialect::Postgres => "PostgreSQL",
        })
    }
}
