//! The console's reads: filtered, sorted, cursor-paged intent lists; one intent with
//! everything attached; the action-key ledger.
//!
//! Paging is by keyset (`ORDER BY <column>, seq` and a cursor holding the last row's values),
//! so every page costs the same however deep the operator scrolls. `total` is counted up to
//! [`TOTAL_CAP`] rows and reported as a lower bound beyond that, which keeps the first page
//! fast on a million intents.

use super::ops::*;
use super::sql::{ConnExt, Dialect, Optional, Value, params, params_of};
use serde::{Deserialize, Serialize};

use super::paging::{Order, indexed_filter};
use super::pauses::pause_from_row;
use super::search::TextMatches;
use super::{Store, StoreError, to_u64};
use crate::domain::{ActionKey, ConsequenceTier, IntentId, IntentState, Locale};
use crate::wire::{
    Attempt, Intent, IntentDetail, IntentPage, KeyLedger, LinkedIntent, MAX_LINKED, PauseScope,
    Transition,
};

/// Counting stops here; beyond it `total_exact` is false.
pub const TOTAL_CAP: u64 = 1_000;
/// The largest page a caller may ask for.
pub const MAX_PAGE: u32 = 500;
/// At most how many intents a list's providers, or its pauses in force, hold for the list
/// to read those intents first ([`provider_match`], [`few_paused_intents`]).
pub const FEW_READ_FIRST: u32 = 10_000;

/// Which intents to list. Empty lists match everything. `allowed_tenants` is the caller's
/// tenant scope and is always applied on top of `tenants`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IntentFilter {
    pub tenants: Vec<String>,
    pub providers: Vec<String>,
    pub states: Vec<IntentState>,
    pub operations: Vec<String>,
    pub tools: Vec<String>,
    pub releases: Vec<String>,
    pub locales: Vec<Locale>,
    pub tiers: Vec<ConsequenceTier>,
    pub paused: Option<bool>,
    pub since_ms: Option<u64>,
    pub until_ms: Option<u64>,
    pub min_attempts: Option<u32>,
    pub q: Option<String>,
    /// Workflow ids (`GET /v1/intents?workflow=`; the list only, not the metrics).
    #[serde(default)]
    pub workflows: Vec<String>,
    #[serde(skip)]
    pub allowed_tenants: Option<Vec<String>>,
}

/// The column a list is ordered by; descending unless `ascending`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SortKey {
    #[default]
    Created,
    Attempts,
    Deadline,
    Updated,
    IndeterminateSince,
}

impl SortKey {
    pub(crate) fn column(self) -> &'static str {
        match self {
            SortKey::Created => "i.seq",
            SortKey::Attempts => "i.attempts",
            SortKey::Deadline => "i.deadline_at_ms",
            SortKey::Updated => "i.updated_at_ms",
            SortKey::IndeterminateSince => {
                "coalesce(i.indeterminate_since_ms, 9223372036854775807)"
            }
        }
    }

    pub fn parse(s: &str) -> Option<(SortKey, bool)> {
        let (ascending, name) = match s.strip_prefix('-') {
            Some(rest) => (false, rest),
            None => (true, s),
        };
        let key = match name {
            "created" => SortKey::Created,
            "attempts" => SortKey::Attempts,
            "deadline" => SortKey::Deadline,
            "updated" => SortKey::Updated,
            "indeterminate_since" => SortKey::IndeterminateSince,
            _ => return None,
        };
        Some((key, ascending))
    }

    fn name(self) -> &'static str {
        match self {
            SortKey::Created => "created",
            SortKey::Attempts => "attempts",
            SortKey::Deadline => "deadline",
            SortKey::Updated => "updated",
            SortKey::IndeterminateSince => "indeterminate_since",
        }
    }
}

/// Where the next page starts: the last row's sort value and sequence number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cursor {
    pub sort: SortKey,
    pub ascending: bool,
    pub value: i64,
    pub seq: i64,
}

impl Cursor {
    pub fn encode(&self) -> String {
        format!(
            "v1.{}.{}.{}.{}",
            self.sort.name(),
            if self.ascending { "a" } else { "d" },
            self.value,
            self.seq
        )
    }

    pub fn decode(s: &str) -> Result<Cursor, StoreError> {
        let bad = || {
            StoreError::BadCursor(format!(
                "`{}` is not a cursor this server issued",
                s.chars().take(60).collect::<String>()
            ))
        };
        let parts: Vec<&str> = s.split('.').collect();
        let [version, sort, dir, value, seq] = parts.as_slice() else {
            return Err(bad());
        };
        if *version != "v1" {
            return Err(bad());
        }
        let (sort, _) = SortKey::parse(sort).ok_or_else(bad)?;
        let ascending = match *dir {
            "a" => true,
            "d" => false,
            _ => return Err(bad()),
        };
        Ok(Cursor {
            sort,
            ascending,
            value: value.parse().map_err(|_| bad())?,
            seq: seq.parse().map_err(|_| bad())?,
        })
    }
}

/// A SQL `WHERE` clause under construction, with numbered parameters, and the joins its
/// conditions read (after the intents `i` in the query's `FROM`: [`Where::joins`]).
#[derive(Default, Clone)]
pub(crate) struct Where {
    parts: Vec<String>,
    pub(crate) values: Vec<Value>,
    joins: &'static str,
}

impl Where {
    /// What the query's `FROM` joins to the intents `i` for these conditions: the
    /// arguments' rows (`ip`) for a text search where they are kept apart
    /// ([`Dialect::search_text`]).
    pub(crate) fn joins(&self) -> &'static str {
        self.joins
    }

    pub(crate) fn push(&mut self, sql: &str) {
        self.parts.push(sql.to_string());
    }

    pub(crate) fn bind(&mut self, v: impl Into<Value>) -> String {
        self.values.push(v.into());
        format!("?{}", self.values.len())
    }

    pub(crate) fn any_of(&mut self, column: &str, list: &[String]) {
        if list.is_empty() {
            return;
        }
        let marks: Vec<String> = list.iter().map(|v| self.bind(v.clone())).collect();
        self.parts
            .push(format!("{column} IN ({})", marks.join(", ")));
    }

    pub(crate) fn sql(&self) -> String {
        if self.parts.is_empty() {
            "1 = 1".to_string()
        } else {
            self.parts.join(" AND ")
        }
    }
}

fn names<T: Copy>(list: &[T], f: impl Fn(T) -> &'static str) -> Vec<String> {
    list.iter().map(|v| f(*v).to_string()).collect()
}

/// What a list learned of the store before it writes its filter ([`filter_where_knowing`]).
/// At the least its dialect ([`Known::nothing`]): each condition is then asked of each
/// intent.
#[derive(Debug, Clone)]
pub(crate) struct Known {
    /// Where the store keeps what a text search reads ([`Dialect::search_text`]).
    pub(crate) dialect: Dialect,
    pub(crate) providers: ProviderMatch,
    /// The scopes of the pauses in force, when there are at most a few
    /// ([`FEW_PAUSES`]): a filter on pauses is then written as those scopes, which the
    /// intents' indexes find, and with none it matches nothing or everything. `None`: each
    /// intent is asked whether a pause in force covers it.
    pub(crate) pauses: Option<Vec<PauseScope>>,
    /// Whether the planner has no statistics to choose an index by (SQLite, on a
    /// coordinator's own store; PostgreSQL has them, and plans each list for its values).
    /// The filter then tells it: each pause's scope is searched through one index only
    /// ([`super::pauses::scope_condition_with`]), and when the intents of the providers, of
    /// the pauses or of a term's text are read first, the filter's columns most intents
    /// share (tenant, state, operation, tool, release, locale, tier) are written so that no
    /// index is taken for them.
    pub(crate) no_statistics: bool,
    /// The intents the pauses hold are few ([`few_paused_intents`]): they are read first,
    /// through their scopes' indexes, and each intent by its key (on SQLite only, whose
    /// planner would otherwise walk the index of a tenant-scoped caller's tenant, asking
    /// each of its intents).
    pub(crate) paused_first: bool,
    /// The few intents a text search matches by their search text, read first
    /// ([`super::search::text_matches`]): the search is written as their keys, which the
    /// planner reaches with the keys the term may be (id, action key, receipt, downstream
    /// record) through their indexes. `None`: each intent's text is asked.
    pub(crate) text_matches: Option<Vec<i64>>,
}

impl Known {
    /// Nothing learned of a store of this `dialect`: each condition is asked of each intent.
    pub(crate) fn nothing(dialect: Dialect) -> Known {
        Known {
            dialect,
            providers: ProviderMatch::OfEachIntent,
            pauses: None,
            no_statistics: false,
            paused_first: false,
            text_matches: None,
        }
    }
}

/// At most how many pauses in force a list filtered by pauses writes as their scopes
/// ([`Known::pauses`]); with more, each intent is asked. Pauses are an operator's, made
/// in an incident and resumed after it: a handful at a time.
pub const FEW_PAUSES: u32 = 32;

/// How a filter's providers are matched ([`Known::providers`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ProviderMatch {
    /// Asked of each intent in turn: an intent of a provider most intents have is found
    /// soon, whatever the order it is read in.
    OfEachIntent,
    /// The providers' intents read first, through the providers' own index: a provider
    /// few intents have is not looked for in every intent ever made.
    FromTheProviders,
}

/// How many intents the providers of `f` have at most for [`ProviderMatch::FromTheProviders`]
/// to be the cheaper (counted up to `few` + 1 along the providers' index). Asking each
/// intent costs a read of that index for every intent walked, and a provider few intents
/// have is found only after walking most of them: on a million intents, a provider with 20
/// took 0.3 s to count and 0.6-0.8 s for a page that way, and 4 ms read first. Reading a
/// provider's intents first costs them all before the first is shown: a provider on every
/// intent took 0.2 s that way, and 5 ms asked of each.
pub(crate) fn provider_match(
    conn: &dyn super::sql::Conn,
    f: &IntentFilter,
    few: u32,
) -> Result<ProviderMatch, StoreError> {
    if f.providers.is_empty() {
        return Ok(ProviderMatch::OfEachIntent);
    }
    let mut w = Where::default();
    let marks: Vec<String> = f.providers.iter().map(|p| w.bind(p.clone())).collect();
    let found: i64 = conn.one(
        &format!(
            "SELECT count(*) FROM (SELECT 1 FROM intent_providers p WHERE p.provider IN ({}) \
             LIMIT {}) AS capped",
            marks.join(", "),
            u64::from(few) + 1
        ),
        &params_of(&w.values),
        |r| r.get(0),
    )?;
    Ok(if to_u64(found) <= u64::from(few) {
        ProviderMatch::FromTheProviders
    } else {
        ProviderMatch::OfEachIntent
    })
}

/// Whether the pauses of `scopes` hold at most `few` intents (counted up to `few` + 1
/// through their scopes' indexes); read first, they cost all of them before the first is
/// shown.
pub(crate) fn few_paused_intents(
    conn: &dyn super::sql::Conn,
    scopes: &[PauseScope],
    no_statistics: bool,
    few: u32,
) -> Result<bool, StoreError> {
    let mut w = Where::default();
    let any = any_scope(&mut w, scopes, no_statistics);
    let found: i64 = conn.one(
        &format!(
            "SELECT count(*) FROM (SELECT 1 FROM intents i WHERE {any} LIMIT {}) AS capped",
            u64::from(few) + 1
        ),
        &params_of(&w.values),
        |r| r.get(0),
    )?;
    Ok(to_u64(found) <= u64::from(few))
}

/// The intents any of `scopes` holds, as a condition on intents aliased `i` (empty for no
/// scope).
fn any_scope(w: &mut Where, scopes: &[PauseScope], no_statistics: bool) -> String {
    scopes
        .iter()
        .map(|scope| {
            let cond = super::pauses::scope_condition_with(scope, no_statistics, &mut |v| {
                w.bind(v.to_string())
            });
            format!("({cond})")
        })
        .collect::<Vec<_>>()
        .join(" OR ")
}

/// How many intents a list's filter matches, up to [`TOTAL_CAP`] + 1.
pub(crate) fn count_sql(filter: &Where) -> String {
    format!(
        "SELECT count(*) FROM (SELECT 1 FROM intents i{} WHERE {} LIMIT {}) AS capped",
        filter.joins(),
        filter.sql(),
        TOTAL_CAP + 1
    )
}

/// Build the `WHERE` for an intent filter over intents aliased `i`.
pub(crate) fn filter_where(f: &IntentFilter, dialect: Dialect) -> Where {
    filter_where_knowing(f, Known::nothing(dialect))
}

/// The term a list is searched for, when it names one.
pub(crate) fn search_term(f: &IntentFilter) -> Option<&str> {
    f.q.as_deref().map(str::trim).filter(|q| !q.is_empty())
}

/// [`filter_where`], written with what is `known` of the store.
pub(crate) fn filter_where_knowing(f: &IntentFilter, known: Known) -> Where {
    let mut w = Where::default();
    // Read first, the providers' or the pauses' few intents are each found by its key; an
    // index of the filter's other columns (a tenant-scoped caller's tenant) would be walked
    // instead, asking each of its intents, were the planner left to guess. A workflow, a
    // time range and many attempts, which may name fewer intents still, keep theirs.
    let read_first = known.no_statistics
        && (known.paused_first
            || known.providers == ProviderMatch::FromTheProviders
            || known.text_matches.is_some());
    let text = |column: &str| {
        if read_first {
            format!("(i.{column} || '')")
        } else {
            format!("i.{column}")
        }
    };
    w.any_of(&text("tenant"), &f.tenants);
    if let Some(allowed) = &f.allowed_tenants {
        if allowed.is_empty() {
            w.push("1 = 0");
        } else {
            w.any_of(&text("tenant"), allowed);
        }
    }
    w.any_of(&text("state"), &names(&f.states, IntentState::as_str));
    w.any_of(&text("operation"), &f.operations);
    w.any_of(&text("tool"), &f.tools);
    w.any_of(&text("release_id"), &f.releases);
    w.any_of("i.workflow_id", &f.workflows);
    w.any_of(&text("locale"), &names(&f.locales, Locale::as_str));
    w.any_of(&text("tier"), &names(&f.tiers, ConsequenceTier::as_str));
    if !f.providers.is_empty() {
        let marks = f
            .providers
            .iter()
            .map(|p| w.bind(p.clone()))
            .collect::<Vec<_>>()
            .join(", ");
        w.push(&match known.providers {
            ProviderMatch::OfEachIntent => format!(
                "EXISTS (SELECT 1 FROM intent_providers p WHERE p.intent_seq = i.seq AND p.provider IN ({marks}))"
            ),
            ProviderMatch::FromTheProviders => format!(
                "i.seq IN (SELECT p.intent_seq FROM intent_providers p WHERE p.provider IN ({marks}))"
            ),
        });
    }
    if let Some(since) = f.since_ms {
        let m = w.bind(super::to_i64(since));
        w.push(&format!("i.created_at_ms >= {m}"));
    }
    if let Some(until) = f.until_ms {
        let m = w.bind(super::to_i64(until));
        w.push(&format!("i.created_at_ms < {m}"));
    }
    if let Some(min) = f.min_attempts {
        let m = w.bind(i64::from(min));
        w.push(&format!("i.attempts >= {m}"));
    }
    match (f.paused, &known.pauses) {
        (None, _) => {}
        // The few pauses in force, as their scopes: a pause of one intent, a tenant's tool or
        // an operation is read through the intents' index of it, where asking each intent
        // read every one (1 s on a million intents), and none in force matches nothing.
        (Some(paused), Some(scopes)) => {
            let any = any_scope(&mut w, scopes, known.no_statistics);
            match (paused, any.is_empty()) {
                (true, true) => w.push("1 = 0"),
                (false, true) => {}
                // The subquery's `i` is its own intents, read through the scopes' indexes.
                (true, false) if known.paused_first => w.push(&format!(
                    "i.seq IN (SELECT i.seq FROM intents i WHERE {any})"
                )),
                (true, false) => w.push(&format!("({any})")),
                (false, false) => w.push(&format!("NOT ({any})")),
            }
        }
        (Some(paused), None) => {
            let cond = "EXISTS (SELECT 1 FROM pauses z WHERE z.resumed_at_ms IS NULL \
             AND (z.tenant IS NULL OR z.tenant = i.tenant) AND (z.tool IS NULL OR z.tool = i.tool) \
             AND (z.operation IS NULL OR z.operation = i.operation) AND (z.intent_id IS NULL OR z.intent_id = i.id) \
             AND (z.provider IS NULL OR z.provider = i.connector \
                  OR EXISTS (SELECT 1 FROM intent_providers q WHERE q.intent_seq = i.seq AND q.provider = z.provider)))";
            w.push(&if paused {
                cond.to_string()
            } else {
                format!("NOT {cond}")
            });
        }
    }
    if let Some(q) = search_term(f) {
        let exact = w.bind(q.to_string());
        let matched = match &known.text_matches {
            // Read first (`search::text_matches`): found by their keys.
            Some(seqs) => {
                let list = w.bind(serde_json::to_string(seqs).unwrap_or_else(|_| "[]".into()));
                format!("i.seq IN (SELECT value FROM json_each({list}))")
            }
            None => {
                let (joins, searched) = known.dialect.search_text();
                w.joins = joins;
                super::search::patterns(q)
                    .into_iter()
                    .map(|p| format!("{searched} LIKE {} ESCAPE '\\'", w.bind(p)))
                    .collect::<Vec<_>>()
                    .join(" OR ")
            }
        };
        w.push(&format!(
            "(i.id = {exact} OR i.action_key = {exact} OR i.receipt_id = {exact} OR i.downstream_ref = {exact} \
             OR {matched})"
        ));
    }
    w
}

/// The console's reads: lists, one intent whole, the action-key ledger.
pub trait Queries {
    /// One page of intents matching `filter`, ordered by `sort`.
    ///
    /// Two passes keep every page cheap whatever the filter (see [`Order`]): first the next
    /// [`DEFAULT_WINDOW`](super::paging::DEFAULT_WINDOW) rows in sort order are walked along the order's own index and filtered,
    /// which fills the page at once when the filter matches more than about one row in a
    /// hundred; only if it does not — a selective filter — is the rest left to SQLite's
    /// planner, which then reaches the few matching rows through the filter's index.
    fn list_intents(
        &mut self,
        filter: &IntentFilter,
        sort: SortKey,
        ascending: bool,
        cursor: Option<&Cursor>,
        limit: u32,
    ) -> Result<IntentPage, StoreError>;

    /// One intent with attempts, receipts, transitions, commands and covering pauses.
    fn intent_detail(&mut self, id: &IntentId) -> Result<IntentDetail, StoreError>;

    /// The ledger of one action key.
    fn key_ledger(&mut self, key: &ActionKey) -> Result<KeyLedger, StoreError>;
}

impl Store {
    /// The scopes of the pauses in force, when there are at most `few` (read along the
    /// index of those in force); `None` when there are more.
    fn pauses_in_force(&self, few: u32) -> Result<Option<Vec<PauseScope>>, StoreError> {
        let scopes = self.conn.rows(
            &format!(
                "SELECT tenant, provider, tool, operation, intent_id FROM pauses \
                 WHERE resumed_at_ms IS NULL LIMIT {}",
                u64::from(few) + 1
            ),
            params![],
            |r| super::pauses::scope_from_row(r, 0),
        )?;
        Ok((scopes.len() as u64 <= u64::from(few)).then_some(scopes))
    }
}

impl Store {
    /// [`Queries::list_intents`], its reads in the snapshot the caller holds.
    fn list_in_one_snapshot(
        &mut self,
        filter: &IntentFilter,
        sort: SortKey,
        ascending: bool,
        cursor: Option<&Cursor>,
        limit: u32,
    ) -> Result<IntentPage, StoreError> {
        let limit = limit.clamp(1, MAX_PAGE);
        let providers = provider_match(&*self.conn, filter, self.few_read_first)?;
        let pauses = match filter.paused {
            Some(_) => self.pauses_in_force(self.few_pauses)?,
            None => None,
        };
        let dialect = self.conn.dialect();
        let no_statistics = dialect == Dialect::Sqlite;
        // Paused intents found through the indexes of their pauses' scopes, and read first
        // when they are few.
        let narrow_pauses = match (&pauses, filter.paused) {
            (Some(scopes), Some(true)) if !scopes.is_empty() => scopes
                .iter()
                .all(super::pauses::narrow)
                .then_some(scopes.as_slice()),
            _ => None,
        };
        let paused_by_index = narrow_pauses.is_some();
        // PostgreSQL plans the scopes written in place by its statistics.
        let paused_first = match narrow_pauses.filter(|_| no_statistics) {
            Some(scopes) => {
                few_paused_intents(&*self.conn, scopes, no_statistics, self.few_read_first)?
            }
            None => false,
        };
        // What the intents' text alone says of a term: the few intents it matches, read
        // first, or that it matches more than a list counts.
        let text = match search_term(filter) {
            Some(q) => super::search::text_matches(&*self.conn, filter, q, TOTAL_CAP)?,
            None => TextMatches::Unread,
        };
        // Read for the term and the tenants alone, the many are the list's count.
        let counted_already = text == TextMatches::Many;
        let text_matches = match text {
            TextMatches::Few(seqs) => Some(seqs),
            TextMatches::Many | TextMatches::Unread => None,
        };
        let text_read = text_matches.is_some();
        let base = filter_where_knowing(
            filter,
            Known {
                dialect,
                providers,
                pauses,
                no_statistics,
                paused_first,
                text_matches,
            },
        );
        let counted = if counted_already {
            TOTAL_CAP + 1
        } else {
            let counted: i64 = self
                .conn
                .one(&count_sql(&base), &params_of(&base.values), |r| r.get(0))?;
            to_u64(counted)
        };

        if let Some(c) = cursor
            && (c.sort != sort || c.ascending != ascending)
        {
            return Err(StoreError::BadCursor(
                "the cursor belongs to another sort order".to_string(),
            ));
        }
        let only_indeterminate = filter.states == [IntentState::Indeterminate];
        let order = Order::new(sort, ascending, only_indeterminate);
        let after = cursor.map(|c| (c.value, c.seq));
        let wanted = limit as usize + 1;
        // The planner's own way to the rows: through the filter's index, kept off the
        // order's (which it would walk to the end when the filter names a value it has no
        // figures for). The created order too: SQLite 3.54 walks the rowids backwards past
        // every row rather than take a filter index that ends in seq (a release no intent
        // has: 0.4 s on a million intents, 0.2 ms hidden).
        let planned = Order {
            hint: "",
            // What the pauses hold only when few: a tenant with most intents paused is
            // found soon along the order's index, and read through its own and sorted
            // would cost all of them.
            by_filter: indexed_filter(filter)
                || providers == ProviderMatch::FromTheProviders
                || paused_first
                || ((paused_by_index || text_read) && counted <= TOTAL_CAP),
            ..order
        };
        // Few matches the planner can reach through the filter's index or their keys (at most
        // the count's cap, or the few intents of the providers) are read that way and sorted:
        // a window walked along the order's index would find few of them, at a read of the
        // table for each row it walks (0.1 s on a million intents ordered by attempts). A
        // term's few intents by their text may yet be many with those its keys name (a
        // downstream record many intents share): then they are counted past the cap.
        let few = providers == ProviderMatch::FromTheProviders
            || paused_first
            || (counted <= TOTAL_CAP && (indexed_filter(filter) || paused_by_index || text_read));
        let (first, boundary) = if few {
            (planned, None)
        } else {
            (
                order,
                order.window_boundary(&self.conn, after, self.list_window)?,
            )
        };
        let mut rows = match boundary {
            Some(boundary) => {
                let mut rows = first.rows(&self.conn, &base, after, Some(boundary), wanted)?;
                if rows.len() < wanted {
                    // The filter is selective: the planner reaches the rest of its rows.
                    let rest = wanted - rows.len();
                    rows.extend(planned.rows(&self.conn, &base, Some(boundary), None, rest)?);
                }
                rows
            }
            None => first.rows(&self.conn, &base, after, None, wanted)?,
        };
        let more = rows.len() > limit as usize;
        rows.truncate(limit as usize);
        let next_cursor = match (more, rows.last()) {
            (true, Some(&(value, seq, _))) => Some(
                Cursor {
                    sort,
                    ascending,
                    value,
                    seq,
                }
                .encode(),
            ),
            _ => None,
        };
        Ok(IntentPage {
            items: rows.into_iter().map(|(_, _, intent)| intent).collect(),
            next_cursor,
            total: counted.min(TOTAL_CAP),
            total_exact: counted <= TOTAL_CAP,
        })
    }
}

impl Queries for Store {
    fn list_intents(
        &mut self,
        filter: &IntentFilter,
        sort: SortKey,
        ascending: bool,
        cursor: Option<&Cursor>,
        limit: u32,
    ) -> Result<IntentPage, StoreError> {
        // One snapshot for what the list learns of the store first (the providers' count,
        // the pauses in force), its count and its page: a pause made or resumed between
        // them never gives a page of one and a count of the other. A text search is a long
        // read: one that finds nothing asks every intent's text (150 ms on a million).
        let long = search_term(filter).is_some();
        self.held_read(long, &super::ReadBounds::LIST, |s| {
            s.list_in_one_snapshot(filter, sort, ascending, cursor, limit)
        })
    }

    fn intent_detail(&mut self, id: &IntentId) -> Result<IntentDetail, StoreError> {
        // One snapshot for the intent and all that hangs off it: a write committed between
        // two of these reads never shows half of itself (an attempt ended, its unit not yet
        // given back).
        self.conn.batch("SAVEPOINT detail")?;
        let mut read = || -> Result<IntentDetail, StoreError> {
            let intent = self.intent(id)?;
            let attempts = self.attempts_of(id)?;
            let receipts = self.receipts_of(id)?;
            let transitions = {
                self.conn.rows(
                "SELECT t.from_state, t.to_state, t.event, t.reason, c.id, t.at_ms FROM transitions t \
                 JOIN intents i ON i.seq = t.intent_seq LEFT JOIN commands c ON c.seq = t.command_seq \
                 WHERE i.id = ?1 ORDER BY t.seq",
                params![id.as_str()],
                |r| {
                Ok(Transition {
                    from: r.get(0)?,
                    to: r.get(1)?,
                    event: r.get(2)?,
                    reason: r.get(3)?,
                    command_id: r.get(4)?,
                    at_ms: to_u64(r.get(5)?),
                })
            },
            )?
            };
            let commands = self.audit(Some(id), 200)?;
            let pauses = {
                self.conn.rows(
                "SELECT z.seq, c.id, z.tenant, z.provider, z.tool, z.operation, z.intent_id, z.reason, z.created_by, \
                 z.created_at_ms, z.resumed_at_ms FROM pauses z JOIN commands c ON c.seq = z.command_seq \
                 JOIN intents i ON i.id = ?1 WHERE z.resumed_at_ms IS NULL \
                 AND (z.tenant IS NULL OR z.tenant = i.tenant) AND (z.tool IS NULL OR z.tool = i.tool) \
                 AND (z.operation IS NULL OR z.operation = i.operation) AND (z.intent_id IS NULL OR z.intent_id = i.id) \
                 AND (z.provider IS NULL OR z.provider = i.connector \
                      OR EXISTS (SELECT 1 FROM intent_providers q WHERE q.intent_seq = i.seq AND q.provider = z.provider)) \
                 ORDER BY z.seq",
                params![id.as_str()],
                pause_from_row,
            )?
            };
            let (replays, mismatches): (u32, u32) = self
                .conn
                .one(CALLER_KEY_COUNTS_SQL, params![id.as_str()], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })
                .optional()?
                .unwrap_or((0, 0));
            let key_forget_at_ms = forget_at(&intent);
            let workflow = match &intent.workflow_id {
                Some(w) => self
                    .workflow_intents(&intent.tenant, w, MAX_LINKED)?
                    .iter()
                    .map(LinkedIntent::of)
                    .collect(),
                None => Vec::new(),
            };
            let revisions = revisions(self, &intent)?;
            Ok(IntentDetail {
                intent,
                attempts,
                receipts,
                transitions,
                commands,
                pauses,
                key_forget_at_ms,
                // The configuration is the coordinator's, which fills it in.
                live_key_retention_secs: None,
                ingest_replays: replays,
                ingest_mismatches: mismatches,
                workflow,
                revisions,
            })
        };
        let detail = read();
        let released = self.conn.batch("RELEASE detail");
        let detail = detail?;
        released?;
        Ok(detail)
    }

    fn key_ledger(&mut self, key: &ActionKey) -> Result<KeyLedger, StoreError> {
        let detail = self.intent_detail(&key.intent_id())?;
        if &detail.intent.action_key != key {
            return Err(StoreError::NotFound {
                what: "action key",
                id: key.to_string(),
            });
        }
        let attempts: Vec<Attempt> = detail
            .attempts
            .into_iter()
            .filter(|a| a.presented_key.as_deref() == Some(key.as_str()))
            .collect();
        let replays = attempts.iter().filter(|a| a.replayed == Some(true)).count() as u32;
        let mismatches = attempts
            .iter()
            .filter(|a| a.http_status == Some(422))
            .count() as u32;
        Ok(KeyLedger {
            action_key: key.clone(),
            key_forget_at_ms: detail.key_forget_at_ms,
            live_key_retention_secs: None,
            intent: detail.intent,
            attempts,
            replays,
            mismatches,
            receipts: detail.receipts,
        })
    }
}

/// The revision chain of `intent` (see [`IntentDetail::revisions`]): back along `supersedes`,
/// forward along `superseded_by`, within its tenant, at most [`MAX_LINKED`] long.
fn revisions(s: &mut Store, intent: &Intent) -> Result<Vec<LinkedIntent>, StoreError> {
    if intent.supersedes.is_none() && intent.superseded_by.is_none() {
        return Ok(Vec::new());
    }
    let mut back = Vec::new();
    let mut next = intent.supersedes.clone();
    while let Some(id) = next.take() {
        if back.len() as u32 >= MAX_LINKED / 2 {
            break;
        }
        let (_, older) = super::intents::load(s.conn.as_conn(), &id)?;
        if older.tenant != intent.tenant {
            break;
        }
        next = older.supersedes.clone();
        back.push(LinkedIntent::of(&older));
    }
    back.reverse();
    back.push(LinkedIntent::of(intent));
    let mut next = intent.superseded_by.clone();
    while let Some(id) = next.take() {
        if back.len() as u32 >= MAX_LINKED {
            break;
        }
        let (_, newer) = super::intents::load(s.conn.as_conn(), &id)?;
        if newer.tenant != intent.tenant {
            break;
        }
        next = newer.superseded_by.clone();
        back.push(LinkedIntent::of(&newer));
    }
    Ok(back)
}

/// How often the intent's caller key was replayed and mismatched, read by the key's own
/// primary key: `ingest_keys` has no index on `intent_seq`, and joined on it alone the read
/// went through every key ever used, at each intent's detail.
pub(crate) const CALLER_KEY_COUNTS_SQL: &str = "SELECT k.replays, k.mismatches FROM intents i \
     JOIN ingest_keys k ON k.tenant = i.tenant AND k.caller_key = i.caller_key \
     WHERE i.id = ?1 AND k.intent_seq = i.seq";

/// When the downstream may forget an intent's key: its first send plus the retention it was
/// sent under.
pub fn forget_at(intent: &Intent) -> Option<u64> {
    Some(intent.first_dispatch_at_ms? + intent.key_retention_secs? * 1000)
}
