//! [`Conn`] over a PostgreSQL connection. The store's SQL numbers its parameters `?1`, `?2`,
//! …; PostgreSQL's are `$1`, `$2`, … and are rewritten once per statement, which is then
//! prepared once per connection and kept. A parameter takes the type PostgreSQL inferred
//! for its place (an integer bound where a `boolean` or `integer` column is compared is
//! written as one), so the table modules bind the same values for both backends.
//!
//! Each statement is a round trip to the server, and on PostgreSQL a round trip (two
//! wake-ups on each side) costs more than most of the store's statements themselves. So
//! what needs no answer of its own goes with the next statement that does, in one round
//! trip: a `BEGIN` always, and a writer's [`Conn::run_held`] writes while it leaves its
//! savepoints out. The driver sends a request when its future is first polled; the
//! connection polls the held requests' futures and the answered one's in order, so they
//! leave in one write, and the server answers them in order.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::error::Error;
use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::task::Poll;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use tokio::runtime::Runtime;
use tokio_postgres::types::{IsNull, ToSql, Type};
use tokio_postgres::{Client, Statement};

use crate::store::StoreError;
use crate::store::sql::{Conn, Dialect, Elision, Row, RowSource, ToValue, Value, ValueRef};

/// One level of an open transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Level {
    /// `BEGIN` by the caller.
    Explicit,
    /// A savepoint that began the transaction: its release commits.
    Began,
    /// A savepoint that began the transaction, already rolled back.
    Ended,
    /// A savepoint inside the transaction.
    Savepoint,
}

/// The most prepared statements a connection keeps.
const MAX_STATEMENTS: usize = 512;

/// One PostgreSQL connection and its prepared statements.
pub struct PgConn {
    /// Drives the connection while a statement waits for its answer; a runtime of the
    /// thread's own, as the store's threads run outside the coordinator's.
    runtime: Runtime,
    /// Kept until the connection is dropped ([`PgConn::client`]).
    client: Option<Client>,
    /// The task that drives the connection: given a moment to say goodbye on drop.
    driver: Option<tokio::task::JoinHandle<()>>,
    statements: RefCell<HashMap<String, Statement>>,
    /// The open levels of the transaction, innermost last.
    savepoints: RefCell<Vec<Level>>,
    /// When the connection was last asked whether it is broken (before each job).
    checked: Cell<Instant>,
    /// Savepoints left out by a writer (see `postgres::write_one`).
    elision: Elision,
    /// Rows changed since the connection opened, as far as can be told ([`Conn::total_changes`]).
    changes: Cell<u64>,
    /// Statements held back, oldest first, to go with the next that waits for an answer.
    held: RefCell<Vec<Held>>,
    /// Round trips to the server since the connection opened ([`PgConn::round_trips`]).
    round_trips: Cell<u64>,
}

/// A statement held back until one that waits for an answer goes.
enum Held {
    /// A `BEGIN`: the transaction starts with the statement sent after it.
    Begin(String),
    /// A write whose count nobody reads ([`Conn::run_held`]).
    Write(Statement, Vec<Value>),
}

/// The most statements held back at once: one more sends them.
const MAX_HELD: usize = 32;

/// A connection idle longer than this is asked whether it is still there before a job.
const IDLE_CHECK: Duration = Duration::from_secs(1);

/// The answer of one held statement.
type Sent<'a> = Pin<Box<dyn Future<Output = Result<(), tokio_postgres::Error>> + 'a>>;

impl PgConn {
    /// A connection whose driver `driver` runs on `runtime`.
    pub fn new(runtime: Runtime, client: Client, driver: tokio::task::JoinHandle<()>) -> PgConn {
        PgConn {
            runtime,
            client: Some(client),
            driver: Some(driver),
            statements: RefCell::new(HashMap::new()),
            savepoints: RefCell::new(Vec::new()),
            checked: Cell::new(Instant::now()),
            elision: Elision::default(),
            changes: Cell::new(0),
            held: RefCell::new(Vec::new()),
            round_trips: Cell::new(0),
        }
    }

    fn client(&self) -> &Client {
        self.client
            .as_ref()
            .expect("the client is kept until the connection is dropped")
    }

    /// How many times the connection has waited for the server since it opened: one for
    /// each statement sent, with those held back before it.
    pub fn round_trips(&self) -> u64 {
        self.round_trips.get()
    }

    /// Send what is held back and then `last`, in one round trip, and wait for all their
    /// answers. The first held statement's error, if one failed, is the answer (the server
    /// refuses whatever follows it in the transaction).
    fn exchange<'a, T>(
        &'a self,
        last: impl Future<Output = Result<T, tokio_postgres::Error>> + 'a,
    ) -> Result<T, StoreError> {
        let held = self.held.take();
        self.round_trips.set(self.round_trips.get() + 1);
        let client = self.client();
        let (first_error, answer) = self.runtime.block_on(async {
            let mut sends: Vec<Option<Sent<'_>>> = held
                .iter()
                .map(|h| -> Option<Sent<'_>> {
                    Some(match h {
                        Held::Begin(sql) => Box::pin(client.batch_execute(sql)),
                        Held::Write(statement, values) => Box::pin(async move {
                            let bound: Vec<Param<'_>> =
                                values.iter().map(|v| Param(v.to_value())).collect();
                            client.execute(statement, &refs(&bound)).await.map(|_| ())
                        }),
                    })
                })
                .collect();
            let mut last = std::pin::pin!(last);
            let mut answer = None;
            let mut first_error = None;
            // Polled in order, every time: each sends its request at its first poll.
            poll_fn(|cx| {
                for send in sends.iter_mut() {
                    if let Some(future) = send
                        && let Poll::Ready(done) = future.as_mut().poll(cx)
                    {
                        *send = None;
                        if let (Err(e), None) = (done, &first_error) {
                            first_error = Some(e);
                        }
                    }
                }
                if answer.is_none()
                    && let Poll::Ready(done) = last.as_mut().poll(cx)
                {
                    answer = Some(done);
                }
                if answer.is_some() && sends.iter().all(Option::is_none) {
                    Poll::Ready(())
                } else {
                    Poll::Pending
                }
            })
            .await;
            (first_error, answer)
        });
        if let Some(e) = first_error {
            return Err(self.failed(e));
        }
        match answer {
            Some(Ok(answer)) => Ok(answer),
            Some(Err(e)) => Err(self.failed(e)),
            None => Err(StoreError::Unavailable(
                "PostgreSQL: a statement was left without an answer".into(),
            )),
        }
    }

    /// Count the rows a statement that ran changed: `affected` where the server said how
    /// many an `INSERT`, `UPDATE` or `DELETE` affected (its count, or its `RETURNING` rows).
    /// A lone `SELECT` changes none: the store's selects read, and call no function that
    /// writes (one that did would have to be counted here). Anything else (a statement led
    /// by `WITH`, text of several statements, one whose count is not known) counts as one
    /// at the least, so a refusal after it is never taken for one before any change.
    fn count(&self, sql: &str, affected: Option<u64>) {
        let head = sql.trim();
        let word = |w: &str| {
            head.get(..w.len())
                .is_some_and(|h| h.eq_ignore_ascii_case(w))
        };
        let several = head.trim_end_matches(';').contains(';');
        let changed = match affected {
            _ if several => affected.unwrap_or(0).max(1),
            _ if word("SELECT") => 0,
            Some(rows) if word("INSERT") || word("UPDATE") || word("DELETE") => rows,
            rows => rows.unwrap_or(0).max(1),
        };
        self.changes.set(self.changes.get() + changed);
    }

    /// Transaction control as SQLite has it: a savepoint outside a transaction begins one
    /// (and its release commits it), which PostgreSQL only does inside `BEGIN`. A `BEGIN` is
    /// held back for the statement after it; a transaction that ends before one was sent
    /// never reaches the server.
    fn control(&self, statement: &str) -> Result<(), StoreError> {
        let mut open = self.savepoints.borrow_mut();
        if statement.starts_with("SAVEPOINT ") {
            if open.is_empty() {
                self.begin("BEGIN")?;
                open.push(Level::Began);
            } else {
                self.send(statement)?;
                open.push(Level::Savepoint);
            }
        } else if statement.starts_with("ROLLBACK TO ") {
            match open.last_mut() {
                Some(top @ Level::Began) => {
                    self.end("ROLLBACK")?;
                    *top = Level::Ended;
                }
                Some(Level::Ended) => {}
                _ => self.send(statement)?,
            }
        } else if statement.starts_with("RELEASE ") {
            match open.pop() {
                Some(Level::Began) => self.end("COMMIT")?,
                Some(Level::Ended) => {}
                _ => self.send(statement)?,
            }
        } else if statement.starts_with("BEGIN") {
            open.clear();
            self.begin(statement)?;
            open.push(Level::Explicit);
        } else {
            // COMMIT, ROLLBACK: the transaction is the outermost level.
            open.clear();
            self.end(statement)?;
        }
        Ok(())
    }

    /// Hold `BEGIN` back for the statement after it. Held writes never wait behind one: it
    /// then goes at once, after them, as it would have without holding anything back.
    fn begin(&self, statement: &str) -> Result<(), StoreError> {
        if !self.held.borrow().is_empty() {
            return self.send(statement);
        }
        self.held
            .borrow_mut()
            .push(Held::Begin(statement.to_string()));
        Ok(())
    }

    /// End the transaction with `COMMIT` or `ROLLBACK`. Held writes go before a commit, in
    /// a round trip of their own, so one that fails is not taken for committed (PostgreSQL
    /// answers a `COMMIT` after a failed statement with a rollback, not an error); a
    /// rollback throws them away. A transaction whose `BEGIN` was never sent ends here.
    fn end(&self, statement: &str) -> Result<(), StoreError> {
        let commit = statement.starts_with("COMMIT");
        if commit {
            self.flush()?;
        }
        let never_sent = matches!(self.held.borrow().first(), Some(Held::Begin(_)));
        if never_sent {
            // Nothing of the transaction reached the server: nothing to end.
            self.held.borrow_mut().clear();
            return Ok(());
        }
        if !commit {
            self.held.borrow_mut().clear();
        }
        self.send(statement)
    }

    /// Send plain SQL text, with what is held back before it.
    fn send(&self, sql: &str) -> Result<(), StoreError> {
        self.exchange(self.client().batch_execute(sql))
    }

    /// A statement failed: PostgreSQL now refuses every statement of the transaction but a
    /// rollback. Where savepoints are left out, none will undo it, so the transaction is
    /// marked to be rolled back whole (even if the caller carries on as if nothing failed),
    /// and its `COMMIT` never answers as stored what was thrown away.
    /// A failure that says "send it again later" (a lock waited for too long, a cancel, a
    /// server out of resources or lost: [`StoreError::Unavailable`]) gives the transaction
    /// up instead: a second run would wait as long again before failing the same way.
    fn failed(&self, e: tokio_postgres::Error) -> StoreError {
        let error = StoreError::from(e);
        if self.elision.is_on() {
            match &error {
                StoreError::Unavailable(why) => self.elision.give_up(why.clone()),
                _ => self.elision.undo_since(None, None),
            }
        }
        error
    }

    fn statement(&self, sql: &str) -> Result<Statement, StoreError> {
        if let Some(found) = self.statements.borrow().get(sql) {
            return Ok(found.clone());
        }
        let text = numbered(sql);
        let prepared = self.exchange(self.client().prepare(&text))?;
        let mut statements = self.statements.borrow_mut();
        // Dynamic filters make many texts; keep the cache bounded.
        if statements.len() >= MAX_STATEMENTS {
            statements.clear();
        }
        statements.insert(sql.to_string(), prepared.clone());
        Ok(prepared)
    }
}

/// `?N` parameters as `$N`, outside quoted text.
pub fn numbered(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut quoted = false;
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                quoted = !quoted;
                out.push(c);
            }
            '?' if !quoted && chars.peek().is_some_and(char::is_ascii_digit) => out.push('$'),
            _ => out.push(c),
        }
    }
    out
}

/// A parameter as PostgreSQL binds it, in the type of its place.
#[derive(Debug)]
struct Param<'a>(ValueRef<'a>);

type BoxError = Box<dyn Error + Sync + Send>;

impl ToSql for Param<'_> {
    fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, BoxError> {
        match self.0 {
            ValueRef::Null => Ok(IsNull::Yes),
            ValueRef::Int(i) => match *ty {
                Type::INT8 => i.to_sql(ty, out),
                Type::INT4 => i32::try_from(i)?.to_sql(ty, out),
                Type::INT2 => i16::try_from(i)?.to_sql(ty, out),
                Type::BOOL => (i != 0).to_sql(ty, out),
                Type::FLOAT8 => (i as f64).to_sql(ty, out),
                Type::TEXT | Type::VARCHAR => i.to_string().to_sql(ty, out),
                _ => Err(format!("an integer cannot be bound as {ty}").into()),
            },
            ValueRef::Real(r) => match *ty {
                Type::FLOAT8 => r.to_sql(ty, out),
                Type::FLOAT4 => (r as f32).to_sql(ty, out),
                _ => Err(format!("a real number cannot be bound as {ty}").into()),
            },
            ValueRef::Text(t) => match *ty {
                Type::INT8 => t.parse::<i64>()?.to_sql(ty, out),
                _ => t.to_sql(ty, out),
            },
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    tokio_postgres::types::to_sql_checked!();
}

struct PgRow<'a>(&'a tokio_postgres::Row);

impl RowSource for PgRow<'_> {
    fn value(&self, index: usize) -> Result<ValueRef<'_>, StoreError> {
        let column = self
            .0
            .columns()
            .get(index)
            .ok_or_else(|| StoreError::Corrupt(format!("there is no column {index}")))?;
        let ty = column.type_().clone();
        let value = match ty {
            Type::INT8 => self.0.try_get::<_, Option<i64>>(index)?.map(ValueRef::Int),
            Type::INT4 => self
                .0
                .try_get::<_, Option<i32>>(index)?
                .map(|v| ValueRef::Int(v.into())),
            Type::INT2 => self
                .0
                .try_get::<_, Option<i16>>(index)?
                .map(|v| ValueRef::Int(v.into())),
            Type::BOOL => self
                .0
                .try_get::<_, Option<bool>>(index)?
                .map(|v| ValueRef::Int(v.into())),
            Type::FLOAT8 => self.0.try_get::<_, Option<f64>>(index)?.map(ValueRef::Real),
            Type::FLOAT4 => self
                .0
                .try_get::<_, Option<f32>>(index)?
                .map(|v| ValueRef::Real(v.into())),
            Type::TEXT | Type::VARCHAR | Type::NAME | Type::BPCHAR => self
                .0
                .try_get::<_, Option<&str>>(index)?
                .map(ValueRef::Text),
            other => {
                return Err(StoreError::Corrupt(format!(
                    "column {index} ({}) is of type {other}, which the store does not read",
                    column.name()
                )));
            }
        };
        Ok(value.unwrap_or(ValueRef::Null))
    }
}

impl From<tokio_postgres::Error> for StoreError {
    fn from(e: tokio_postgres::Error) -> Self {
        if e.is_closed() {
            return StoreError::Unavailable(format!("the connection to PostgreSQL was lost: {e}"));
        }
        match e.as_db_error() {
            // Lost connections (08), a server shutting down or out of resources (57P, 53),
            // a transaction chosen to end a deadlock or a serialisation race (40001,
            // 40P01), and a statement that waited too long for a lock or was cancelled
            // (55P03, 57014): nothing was written, and the same request may be sent again.
            Some(db)
                if ["08", "53", "57P", "57014", "40001", "40P01", "55P03"]
                    .iter()
                    .any(|class| db.code().code().starts_with(class)) =>
            {
                StoreError::Unavailable(format!(
                    "PostgreSQL: {} ({})",
                    db.message(),
                    db.code().code()
                ))
            }
            Some(db) => StoreError::Database(format!(
                "{} ({}){}",
                db.message(),
                db.code().code(),
                db.detail().map(|d| format!(": {d}")).unwrap_or_default()
            )),
            None => StoreError::Unavailable(format!("PostgreSQL: {e}")),
        }
    }
}

fn bind<'a>(params: &'a [&'a dyn ToValue]) -> Vec<Param<'a>> {
    params.iter().map(|p| Param(p.to_value())).collect()
}

/// Whether `sql` has a `RETURNING` clause, as a word of its own (not a part of a name).
fn returns_its_rows(sql: &str) -> bool {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '$';
    sql.char_indices().any(|(at, _)| {
        sql.get(at..at + 9)
            .is_some_and(|w| w.eq_ignore_ascii_case("RETURNING"))
            && !sql[..at].chars().next_back().is_some_and(ident)
            && !sql[at + 9..].chars().next().is_some_and(ident)
    })
}

fn refs<'a>(params: &'a [Param<'a>]) -> Vec<&'a (dyn ToSql + Sync)> {
    params.iter().map(|p| p as &(dyn ToSql + Sync)).collect()
}

impl Conn for PgConn {
    fn run(&self, sql: &str, params: &[&dyn ToValue]) -> Result<usize, StoreError> {
        let statement = self.statement(sql)?;
        let bound = bind(params);
        let changed = self.exchange(self.client().execute(&statement, &refs(&bound)))?;
        self.count(sql, Some(changed));
        Ok(changed as usize)
    }

    fn each(
        &self,
        sql: &str,
        params: &[&dyn ToValue],
        f: &mut dyn FnMut(&Row<'_>) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        let statement = self.statement(sql)?;
        let bound = bind(params);
        let rows = self.exchange(self.client().query(&statement, &refs(&bound)))?;
        // Rows returned are rows affected only where the statement returns those.
        self.count(sql, returns_its_rows(sql).then_some(rows.len() as u64));
        for row in &rows {
            f(&Row::new(&PgRow(row)))?;
        }
        Ok(())
    }

    fn batch(&self, sql: &str) -> Result<(), StoreError> {
        let head = sql.trim_start();
        let is_control = ["SAVEPOINT ", "RELEASE ", "ROLLBACK", "BEGIN", "COMMIT"]
            .iter()
            .any(|p| head.starts_with(p));
        if !is_control {
            self.send(sql)?;
            // Plain text says nothing of the rows it changed.
            self.count(sql, None);
            return Ok(());
        }
        for statement in head.split(';').map(str::trim).filter(|s| !s.is_empty()) {
            self.control(statement)?;
        }
        Ok(())
    }

    /// Held back while the writer leaves savepoints out: then any error rolls the whole
    /// write back and runs it again with savepoints, where this runs at once. Counted as one
    /// change, so a refusal after it is never taken for one before any change.
    fn run_held(&self, sql: &str, params: &[&dyn ToValue]) -> Result<(), StoreError> {
        if !self.elision.is_on() {
            return self.run(sql, params).map(|_| ());
        }
        let statement = self.statement(sql)?;
        let values = params.iter().map(|p| Value::from(p.to_value())).collect();
        self.held.borrow_mut().push(Held::Write(statement, values));
        self.count(sql, None);
        // A write of many statements (a command's targets, 400 rows each) keeps no more
        // than this many in memory, and none waits long to be sent.
        if self.held.borrow().len() >= MAX_HELD {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&self) -> Result<(), StoreError> {
        let writes = self
            .held
            .borrow()
            .iter()
            .any(|h| matches!(h, Held::Write(..)));
        if writes {
            self.exchange(std::future::ready(Ok(())))?;
        }
        Ok(())
    }

    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    fn as_conn(&self) -> &dyn Conn {
        self
    }

    /// Where a savepoint was left out, a failed statement is undone by rolling back whole
    /// (PostgreSQL ends a transaction's use at one anyway), and so is a refusal after rows
    /// changed ([`Conn::total_changes`]); a refusal before any goes on with the transaction.
    fn elision(&self) -> Option<&Elision> {
        Some(&self.elision)
    }

    /// The rows the connection's statements changed: the server's count for a statement
    /// run, at the least one for what may have changed rows without saying ([`PgConn::count`]).
    fn total_changes(&self) -> Option<u64> {
        Some(self.changes.get())
    }

    fn is_broken(&self) -> bool {
        if self.client().is_closed() {
            return true;
        }
        // The client notices a cut connection (a restarted server, a terminated backend)
        // only when it next talks: an idle one is asked first, briefly, so the job that
        // follows does not fail for it.
        let idle = self.checked.replace(Instant::now()).elapsed();
        idle > IDLE_CHECK
            && !matches!(
                self.runtime.block_on(async {
                    tokio::time::timeout(Duration::from_secs(2), self.client().simple_query(""))
                        .await
                }),
                Ok(Ok(_))
            )
    }
}

/// Without its client the driver sends PostgreSQL's goodbye and closes, so the server does
/// not count the connection as lost; it is given half a second.
impl Drop for PgConn {
    fn drop(&mut self) {
        self.client = None;
        if let Some(driver) = self.driver.take() {
            let _ = self
                .runtime
                .block_on(async { tokio::time::timeout(Duration::from_millis(500), driver).await });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{numbered, returns_its_rows};

    #[test]
    fn a_returning_clause_is_told_from_a_name_that_holds_the_word() {
        assert!(returns_its_rows(
            "INSERT INTO t (n) VALUES (1) RETURNING seq"
        ));
        assert!(returns_its_rows("update t set n = 2 returning\nn"));
        assert!(returns_its_rows("DELETE FROM t RETURNING *"));
        assert!(!returns_its_rows("INSERT INTO t (returning_at) VALUES (1)"));
        assert!(!returns_its_rows("UPDATE t SET not_returning = 1"));
        assert!(!returns_its_rows(
            "UPDATE t SET n = 1 WHERE x$returning = 2"
        ));
        assert!(!returns_its_rows("INSERT INTO t (n) VALUES (1)"));
    }

    #[test]
    fn parameters_are_renumbered_outside_quoted_text() {
        assert_eq!(
            numbered("SELECT '?1', x FROM t WHERE a = ?1 AND b = ?12 AND c = 'it''s ?2'"),
            "SELECT '?1', x FROM t WHERE a = $1 AND b = $12 AND c = 'it''s ?2'"
        );
    }
}
