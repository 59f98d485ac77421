//! The arguments of intents made before migration 21, moved into rows of their own.
//!
//! Since migration 21 SQLite keeps a new intent's arguments (as given, canonical, folded for
//! search) in `intent_payloads` and leaves the intent's own columns empty; an intent made
//! before keeps them in its row, and every read takes them from wherever they are
//! (`Dialect::payload_column`). A text search reads the payload rows first only when no
//! intent is older than the first of them (`search::text_matches`); on a file upgraded from
//! before migration 21 that never held, and every search asked each intent (1.2 s for a term
//! nothing holds on a million intents, against 0.15 s). The coordinator moves those
//! intents' arguments a batch at a time while it serves, newest first, so the intents with
//! a payload row stay the newest ones at every step, which is what the search looks at.
//! PostgreSQL keeps every intent's arguments in its row: nothing moves there.

use super::sql::{ConnExt, params};
use super::{Store, StoreError};

/// Moving older intents' arguments into their own rows.
pub trait Payloads {
    /// Move the arguments of the newest intents that have no payload row yet into rows of
    /// their own, emptying the intent's columns as a new intent's are, in one transaction:
    /// at most `most` intents and `bytes` of their text, and always one. How many moved: 0
    /// once none is left, and always on PostgreSQL.
    fn move_older_arguments(&mut self, most: u32, bytes: u64) -> Result<u32, StoreError>;
}

impl Payloads for Store {
    fn move_older_arguments(&mut self, most: u32, bytes: u64) -> Result<u32, StoreError> {
        if !self.conn.dialect().payload_apart() || most == 0 {
            return Ok(0);
        }
        let tx = self.conn.savepoint()?;
        // Every intent made since migration 21 has a payload row, so the intents without
        // one are those before the first (all of them, on a file with none yet).
        let first: Option<i64> = tx.one(
            "SELECT min(intent_seq) FROM intent_payloads",
            params![],
            |r| r.get(0),
        )?;
        let before = first.unwrap_or(i64::MAX);
        // How many of them fit in `bytes`: their lengths, newest first.
        let lengths: Vec<i64> = tx.rows(
            "SELECT length(args_json) + length(canonical_json) + length(search_text) \
             FROM intents WHERE seq < ?1 ORDER BY seq DESC LIMIT ?2",
            params![before, i64::from(most)],
            |r| r.get(0),
        )?;
        let mut total: u64 = 0;
        let fit = lengths
            .iter()
            .take_while(|&&length| {
                total = total.saturating_add(u64::try_from(length).unwrap_or(0));
                total <= bytes
            })
            .count()
            .max(1)
            .min(lengths.len());
        if fit == 0 {
            return Ok(0);
        }
        // The batch is the newest `most` of them, inserted oldest first: each batch goes in
        // before every payload row, and rows put one by one at the very start of a b-tree
        // leave its pages half full (a million moved newest first took 153,451 pages at 50 %,
        // and a search that reads them all 0.22-0.32 s; in this order the million took 87,158
        // pages at 87.7 %, as bulk rows appended at the end take 77,313 at 98.7 %).
        let moved = tx.run(
            "INSERT INTO intent_payloads (intent_seq, args_json, canonical_json, search_text) \
             SELECT seq, args_json, canonical_json, search_text FROM \
             (SELECT seq, args_json, canonical_json, search_text FROM intents \
              WHERE seq < ?1 ORDER BY seq DESC LIMIT ?2) ORDER BY seq",
            params![before, i64::try_from(fit).unwrap_or(i64::MAX)],
        )?;
        if moved > 0 {
            tx.run(
                "UPDATE intents SET args_json = '', canonical_json = '', search_text = '' \
                 WHERE seq >= (SELECT min(intent_seq) FROM intent_payloads) AND seq < ?1",
                params![before],
            )?;
        }
        tx.commit()?;
        Ok(u32::try_from(moved).unwrap_or(u32::MAX))
    }
}
