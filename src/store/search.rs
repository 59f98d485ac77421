//! Text search over intents: the form a term and an intent's text are compared in, the
//! patterns a term is looked for by, and, on SQLite, the few intents whose text matches a
//! term, read before the list that shows them.
//!
//! A list filtered by a term matches an intent by its id, action key, receipt or
//! downstream record (each an index), or by a pattern in its search text. Where the
//! arguments are kept apart (`Dialect::payload_apart`), that text is in the intent's
//! payload row; asked of each intent, a term that matches nothing read every intent and
//! its payload row twice, once for the count and once for the page (1.2 s on a million
//! intents). Read first from the payload rows alone, a term that matches few intents names
//! them, and the list finds them by their keys.

use super::StoreError;
use super::query::{IntentFilter, Where, filter_where};
use super::sql::{Conn, ConnExt, Optional, params, params_of};
use crate::domain::canonical::{fold_digits, normalize_text};

/// Text as search compares it: normalised like canonical args, digits folded, lower case.
pub fn search_form(s: &str) -> String {
    // ASCII has no digit to fold and lowercases byte by byte (held to the full form by a
    // test).
    if s.is_ascii() {
        return s.trim().to_ascii_lowercase();
    }
    fold_digits(&normalize_text(s)).to_lowercase()
}

/// The canonical number a search term stands for, by the canonical rules for numeric
/// strings (`1,200`, `۱٬۲۰۰` and `1200.0` all stand for `1200`); `None` for other text.
fn canonical_number(q: &str) -> Option<String> {
    let args = serde_json::json!({ "q": q });
    let json = crate::domain::canonical::canonicalize(&args).ok()?.json;
    let value = json.strip_prefix("{\"q\":")?.strip_suffix('}')?;
    (!value.starts_with('"')).then(|| value.to_string())
}

/// The `LIKE` patterns (escaped with `\`) an intent's search text is matched by for the
/// term `q`: the term in search form, and, for an amount typed as the console shows it
/// (`35,500,000`, `۳۵٬۵۰۰٬۰۰۰`), the canonical number the arguments were indexed under.
pub(crate) fn patterns(q: &str) -> Vec<String> {
    let folded = search_form(q);
    let escaped = folded
        .replace('\\', "\\\\")
        .replace('%', "\\%")
        .replace('_', "\\_");
    let mut patterns = vec![format!("%{escaped}%")];
    if let Some(number) = canonical_number(q).filter(|n| *n != folded) {
        patterns.push(format!("%{number}%"));
    }
    patterns
}

/// What the payload rows alone say of the intents a term's text matches.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum TextMatches {
    /// At most the few asked for: their sequence numbers.
    Few(Vec<i64>),
    /// More than the few asked for.
    Many,
    /// Not read, and each intent is asked: on PostgreSQL; on a SQLite file with no payload
    /// row yet, or with intents made before migration 21, whose text is in their own rows;
    /// for a filter of more than a term and tenants; for tenants with few intents.
    Unread,
}

/// A list's tenants with at most the store's one in [`SMALL_SCOPE`] of its intents are asked
/// intent by intent, as before: reading them along the tenant's index costs less than every
/// payload row of the store (about 5 µs an intent against 0.15 µs a payload row, on a
/// million intents).
const SMALL_SCOPE: i64 = 32;

/// Whether the filter names nothing but a term and tenants: any other condition has its own
/// way to its intents, often a narrower one, which the list takes as before. Every field is
/// named, so a new one is weighed here.
pub(crate) fn only_searched(f: &IntentFilter) -> bool {
    let IntentFilter {
        tenants: _,
        allowed_tenants: _,
        q: _,
        providers,
        states,
        operations,
        tools,
        releases,
        locales,
        tiers,
        paused,
        since_ms,
        until_ms,
        min_attempts,
        workflows,
    } = f;
    providers.is_empty()
        && states.is_empty()
        && operations.is_empty()
        && tools.is_empty()
        && releases.is_empty()
        && locales.is_empty()
        && tiers.is_empty()
        && workflows.is_empty()
        && paused.is_none()
        && since_ms.is_none()
        && until_ms.is_none()
        && min_attempts.is_none()
}

/// Which intents of the list's tenants (`f`'s, and those its caller may see) hold `q` in
/// their search text: their sequence numbers when at most `few`, read from the payload rows
/// alone ([`TextMatches`]). Read only for a filter of a term and tenants
/// ([`only_searched`]), and not for tenants with few intents ([`SMALL_SCOPE`]).
///
/// Intents made before migration 21 come before every payload row: intents are never
/// deleted, on SQLite, which serves one coordinator, every intent made since has one, and
/// the coordinator moves the older ones' arguments into rows of their own newest first
/// (`super::payloads`). So one look at the intents before the first payload row tells
/// whether any is left; with any, the text is not read here. A term most intents hold
/// stops after `few` + 1 rows. Only a match's intent is looked up, for its tenant: what
/// other tenants' intents hold never changes the answer, though how long the read takes
/// grows with how many of them hold the term.
pub(crate) fn text_matches(
    conn: &dyn Conn,
    f: &IntentFilter,
    q: &str,
    few: u64,
) -> Result<TextMatches, StoreError> {
    if !conn.dialect().payload_apart() || !only_searched(f) {
        return Ok(TextMatches::Unread);
    }
    let first: Option<i64> = conn.one(
        "SELECT min(intent_seq) FROM intent_payloads",
        params![],
        |r| r.get(0),
    )?;
    let Some(first) = first else {
        return Ok(TextMatches::Unread);
    };
    let older: Option<i64> = conn
        .one(
            "SELECT seq FROM intents WHERE seq < ?1 LIMIT 1",
            params![first],
            |r| r.get(0),
        )
        .optional()?;
    if older.is_some() {
        return Ok(TextMatches::Unread);
    }
    if f.allowed_tenants.as_ref().is_some_and(Vec::is_empty) {
        // A caller who may see no tenant's intents finds none.
        return Ok(TextMatches::Few(Vec::new()));
    }
    // The list's tenants as the list writes them, and nothing else of its filter.
    let tenants = IntentFilter {
        tenants: f.tenants.clone(),
        allowed_tenants: f.allowed_tenants.clone(),
        ..IntentFilter::default()
    };
    let mut w = filter_where(&tenants, conn.dialect());
    let scoped = !w.values.is_empty();
    if scoped && few_of_theirs(conn, &w)? {
        return Ok(TextMatches::Unread);
    }
    let matched = patterns(q)
        .into_iter()
        .map(|p| format!("p.search_text LIKE {} ESCAPE '\\'", w.bind(p)))
        .collect::<Vec<_>>()
        .join(" OR ");
    w.push(&format!("({matched})"));
    // `CROSS JOIN` keeps SQLite's loops in this order: the payload rows, then a match's
    // intent by its key.
    let intents = if scoped {
        " CROSS JOIN intents i ON i.seq = p.intent_seq"
    } else {
        ""
    };
    let seqs: Vec<i64> = conn.rows(
        &format!(
            "SELECT p.intent_seq FROM intent_payloads p{intents} WHERE {} LIMIT {}",
            w.sql(),
            few + 1
        ),
        &params_of(&w.values),
        |r| r.get(0),
    )?;
    Ok(if u64::try_from(seqs.len()).unwrap_or(u64::MAX) <= few {
        TextMatches::Few(seqs)
    } else {
        TextMatches::Many
    })
}

/// Whether the intents of the tenants `w` names are at most the store's one in
/// [`SMALL_SCOPE`]: counted along the tenant's index, up to one more than that.
fn few_of_theirs(conn: &dyn Conn, w: &Where) -> Result<bool, StoreError> {
    let last: Option<i64> = conn.one("SELECT max(seq) FROM intents", params![], |r| r.get(0))?;
    let bound = last.unwrap_or(0) / SMALL_SCOPE;
    let theirs: i64 = conn.one(
        &format!(
            "SELECT count(*) FROM (SELECT 1 FROM intents i WHERE {} LIMIT {})",
            w.sql(),
            bound + 1
        ),
        &params_of(&w.values),
        |r| r.get(0),
    )?;
    Ok(theirs <= bound)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::canonical::normalize_any_text;

    #[test]
    fn ascii_search_text_takes_the_form_the_full_rules_give() {
        for byte in 0u8..=0x7f {
            let c = char::from(byte);
            for text in [c.to_string(), format!("Po{c}7"), format!("{c}AB{c}")] {
                let full = fold_digits(&normalize_any_text(&text)).to_lowercase();
                assert_eq!(search_form(&text), full, "{text:?}");
            }
        }
        assert_eq!(search_form(" PO-۱۷ "), "po-17");
    }

    /// The few intents of a term are counted among the list's tenants only: another
    /// tenant's many neither hide them nor show.
    #[test]
    fn a_terms_few_intents_are_those_of_the_lists_tenants() {
        use crate::store::ops::*;
        let dir = tempfile::tempdir().expect("temporary directory");
        let mut store = crate::store::Store::open(&dir.path().join("db.sqlite")).expect("store");
        let mut seqs = Vec::new();
        for n in 0..8u64 {
            let mut intent = crate::metrics::tests::new_intent(n);
            intent.tenant = (if n < 3 { "acme" } else { "globex" })
                .parse()
                .expect("tenant");
            intent.search_text = search_form(&format!("walnut desk {n}"));
            store.create_or_replay(&intent).expect("create");
            let seq: i64 = store
                .conn
                .one(
                    "SELECT seq FROM intents WHERE id = ?1",
                    params![intent.id.as_str()],
                    |r| r.get(0),
                )
                .expect("seq");
            seqs.push(seq);
        }
        let found = |f: IntentFilter| match text_matches(&*store.conn, &f, "Walnut", 4) {
            Ok(TextMatches::Few(mut seqs)) => {
                seqs.sort_unstable();
                TextMatches::Few(seqs)
            }
            other => other.expect("read"),
        };
        assert_eq!(
            found(IntentFilter::default()),
            TextMatches::Many,
            "eight of all tenants"
        );
        let acme = IntentFilter {
            allowed_tenants: Some(vec!["acme".into()]),
            ..IntentFilter::default()
        };
        assert_eq!(found(acme), TextMatches::Few(seqs[..3].to_vec()));
        let globex = IntentFilter {
            tenants: vec!["globex".into()],
            ..IntentFilter::default()
        };
        assert_eq!(found(globex), TextMatches::Many, "five of globex");
        let none = IntentFilter {
            allowed_tenants: Some(vec![]),
            ..IntentFilter::default()
        };
        assert_eq!(found(none), TextMatches::Few(vec![]));
        assert_eq!(
            text_matches(&*store.conn, &IntentFilter::default(), "desk 7", 4).expect("read"),
            TextMatches::Few(vec![seqs[7]])
        );
    }

    /// A tenant with few intents against the store's, or a filter of more than a term and
    /// tenants, is asked intent by intent as before: the payload rows are not read.
    #[test]
    fn a_small_tenants_search_and_a_narrower_filter_are_not_read_first() {
        use crate::store::ops::*;
        let dir = tempfile::tempdir().expect("temporary directory");
        let mut store = crate::store::Store::open(&dir.path().join("db.sqlite")).expect("store");
        // 66 intents: two of `tiny`, no more than one in 32 of the store's.
        for n in 0..66u64 {
            let mut intent = crate::metrics::tests::new_intent(n);
            intent.tenant = (if n < 2 { "tiny" } else { "big" })
                .parse()
                .expect("tenant");
            intent.search_text = search_form("walnut desk");
            store.create_or_replay(&intent).expect("create");
        }
        let read = |f: IntentFilter| text_matches(&*store.conn, &f, "walnut", 100).expect("read");
        let tiny = IntentFilter {
            allowed_tenants: Some(vec!["tiny".into()]),
            ..IntentFilter::default()
        };
        assert_eq!(read(tiny), TextMatches::Unread);
        let big = IntentFilter {
            tenants: vec!["big".into()],
            ..IntentFilter::default()
        };
        assert!(matches!(read(big), TextMatches::Few(seqs) if seqs.len() == 64));
        let prepared = IntentFilter {
            states: vec![crate::domain::IntentState::Prepared],
            ..IntentFilter::default()
        };
        assert_eq!(read(prepared), TextMatches::Unread);
        assert!(
            matches!(read(IntentFilter::default()), TextMatches::Few(seqs) if seqs.len() == 66)
        );
    }

    #[test]
    fn an_amount_is_looked_for_as_typed_and_as_its_canonical_number() {
        assert_eq!(patterns("35,500,000"), ["%35,500,000%", "%35500000%"]);
        assert_eq!(patterns("۳۵٬۵۰۰"), ["%35٬500%", "%35500%"]);
        assert_eq!(patterns("50%_off"), ["%50\\%\\_off%"]);
    }
}
