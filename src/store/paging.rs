//! How a page of intents is read: along the index of its sort order first, then, for a
//! selective filter, by the filter's own index (see [`Order`] and
//! [`Store::list_intents`](super::Store::list_intents)).

use super::StoreError;
use super::intents::{INTENT_COLUMN_COUNT, INTENT_COLUMNS, intent_from_row};
use super::query::{IntentFilter, SortKey, Where};
use super::sql::{Conn, ConnExt, Dialect, Optional, params, params_of};
use crate::wire::Intent;

/// How many rows in sort order the first pass of a page walks before the planner takes over.
pub(crate) const DEFAULT_WINDOW: i64 = 10_000;

/// How a list is ordered, and how SQLite is told to walk it.
///
/// Left to itself, SQLite answers `tenant = ? ORDER BY seq` by reading every row of the
/// tenant through its index and sorting them (200,000 rows on the benchmark set, 300 ms);
/// walking the order and filtering stops after a few hundred rows. `hint` forces that walk
/// for the first pass of a page; the window bounds what a selective filter can cost it.
#[derive(Clone, Copy)]
pub(crate) struct Order {
    pub(crate) column: &'static str,
    pub(crate) hint: &'static str,
    pub(crate) ascending: bool,
    /// Sort without the order's index (`+column` hides it from the planner).
    pub(crate) by_filter: bool,
}

/// Whether the filter names a column SQLite can look rows up by.
pub(crate) fn indexed_filter(f: &IntentFilter) -> bool {
    !(f.tenants.is_empty()
        && f.states.is_empty()
        && f.operations.is_empty()
        && f.tools.is_empty()
        && f.releases.is_empty()
        && f.tiers.is_empty()
        && f.locales.is_empty()
        && f.min_attempts.is_none())
}

impl Order {
    pub(crate) fn new(sort: SortKey, ascending: bool, only_indeterminate: bool) -> Order {
        let (column, hint) = match sort {
            SortKey::Created => ("i.seq", "NOT INDEXED"),
            SortKey::Attempts => ("i.attempts", "INDEXED BY intents_attempts"),
            SortKey::Deadline => ("i.deadline_at_ms", "INDEXED BY intents_deadline"),
            SortKey::Updated => ("i.updated_at_ms", "INDEXED BY intents_updated"),
            // Every indeterminate intent has the time it became so: when the list holds only
            // those, the (state, since) index serves filter and order together.
            SortKey::IndeterminateSince if only_indeterminate => ("i.indeterminate_since_ms", ""),
            SortKey::IndeterminateSince => (
                SortKey::IndeterminateSince.column(),
                "INDEXED BY intents_indeterminate_order",
            ),
        };
        Order {
            column,
            hint,
            ascending,
            by_filter: false,
        }
    }

    /// The sort expression as the page query writes it.
    fn expr(&self) -> String {
        if self.by_filter {
            format!("+{}", self.column)
        } else {
            self.column.to_string()
        }
    }

    fn dir(&self) -> &'static str {
        if self.ascending { "ASC" } else { "DESC" }
    }

    /// `(column, seq)` strictly after `at` in this order.
    fn after(&self, w: &mut Where, at: (i64, i64), dialect: Dialect) {
        let op = if self.ascending { ">" } else { "<" };
        self.compare(w, at, op, dialect);
    }

    /// `(column, seq)` at or before `at` in this order.
    fn up_to(&self, w: &mut Where, at: (i64, i64), dialect: Dialect) {
        let op = if self.ascending { "<=" } else { ">=" };
        self.compare(w, at, op, dialect);
    }

    /// PostgreSQL is given a row comparison, which it reads as one range of the order's
    /// index; spelt out as `column > v OR (column = v AND seq > s)` it combined other
    /// indexes into a bitmap instead (57 ms against 7 ms for one page on a million
    /// intents). SQLite keeps the spelt-out form its plans were measured with.
    fn compare(&self, w: &mut Where, (value, seq): (i64, i64), op: &str, dialect: Dialect) {
        let column = self.expr();
        let v = w.bind(value);
        let s = w.bind(seq);
        w.push(&match dialect {
            Dialect::Postgres => format!("({column}, i.seq) {op} ({v}, {s})"),
            Dialect::Sqlite => {
                let strict = op.trim_end_matches('=');
                format!("({column} {strict} {v} OR ({column} = {v} AND i.seq {op} {s}))")
            }
        });
    }

    /// The last row of the window that starts after `after`, or `None` when fewer rows
    /// than the window remain (or the order needs no window). Reads the order's index only.
    pub(crate) fn window_boundary(
        &self,
        conn: &dyn Conn,
        after: Option<(i64, i64)>,
        window: i64,
    ) -> Result<Option<(i64, i64)>, StoreError> {
        if self.hint.is_empty() {
            return Ok(None);
        }
        if self.column == "i.seq" {
            // Sequence numbers are the rowids, so the window is a range of them.
            let last: Option<i64> =
                conn.one("SELECT max(seq) FROM intents", params![], |r| r.get(0))?;
            let last = last.unwrap_or(0);
            let boundary = match (self.ascending, after) {
                (true, at) => at.map_or(0, |a| a.1) + window,
                (false, at) => at.map_or(last + 1, |a| a.1) - window,
            };
            return Ok((1..=last)
                .contains(&boundary)
                .then_some((boundary, boundary)));
        }
        let mut w = Where::default();
        if let Some(at) = after {
            self.after(&mut w, at, conn.dialect());
        }
        let (column, dir, hint) = (
            self.column,
            self.dir(),
            conn.dialect().index_hint(self.hint),
        );
        let sql = format!(
            "SELECT {column}, i.seq FROM intents i {hint} WHERE {} ORDER BY {column} {dir}, i.seq {dir} \
             LIMIT 1 OFFSET {}",
            w.sql(),
            window - 1
        );
        conn.one(&sql, &params_of(&w.values), |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()
    }

    /// Up to `n` rows matching `filter` after `after` and up to `until`, as
    /// `(sort value, seq, intent)`.
    pub(crate) fn rows(
        &self,
        conn: &dyn Conn,
        filter: &Where,
        after: Option<(i64, i64)>,
        until: Option<(i64, i64)>,
        n: usize,
    ) -> Result<Vec<(i64, i64, Intent)>, StoreError> {
        let mut w = filter.clone();
        if let Some(at) = after {
            self.after(&mut w, at, conn.dialect());
        }
        if let Some(at) = until {
            self.up_to(&mut w, at, conn.dialect());
        }
        let (column, dir, hint) = (
            self.expr(),
            self.dir(),
            conn.dialect().index_hint(self.hint),
        );
        let sql = format!(
            "SELECT {INTENT_COLUMNS}, {column} FROM intents i {hint}{} WHERE {} \
             ORDER BY {column} {dir}, i.seq {dir} LIMIT {n}",
            w.joins(),
            w.sql()
        );
        let rows = conn.rows(&sql, &params_of(&w.values), |r| {
            let (seq, intent) = intent_from_row(r)?;
            Ok((seq, intent, r.get::<i64>(INTENT_COLUMN_COUNT)?))
        })?;
        Ok(rows
            .into_iter()
            .map(|(seq, intent, value)| (value, seq, intent))
            .collect())
    }
}
