//! The compact in-memory copy of what the dashboard aggregates: per intent its dimensions,
//! state, times and attempt count; per attempt its start, end, provider, release and the
//! late flag; the intervals each intent spent indeterminate; its duplicate effects.
//!
//! It is loaded once from the tables (inside one read transaction, so it matches one
//! snapshot), then kept current by reading the change feed: every write that changes an
//! intent or an attempt appends an `events` row in the same transaction, so the intents
//! named by events after the last one seen are reloaded, whole, before each query. Extra
//! receipts (which add no event) are caught by the receipts' own sequence. If the feed was
//! pruned past what was seen, everything is loaded again.
//!
//! About 72 bytes per intent and 16 per attempt: a million intents with five million
//! attempts take roughly 160 MB, and a scan of all of them takes tens of milliseconds.

use crate::store::sql::{Conn, ConnExt, Optional, Row, params};
use std::collections::HashMap;

pub(crate) use super::records::{AttemptRec, Dict, Dicts, IntentRec, Interval, provider_bit};
use crate::store::{StoreError, to_u64};

/// The whole index.
#[derive(Debug, Default)]
pub struct MetricIndex {
    pub(crate) dicts: Dicts,
    pub(crate) intents: Vec<IntentRec>,
    pub(crate) attempts: Vec<AttemptRec>,
    /// Position in `intents` by intent sequence number (`u32::MAX` for none).
    by_seq: Vec<u32>,
    /// Indeterminate spans, by position in `intents`.
    pub(crate) indeterminate: HashMap<u32, Vec<Interval>>,
    /// When each duplicate effect was first seen, by position in `intents`.
    pub(crate) duplicates: HashMap<u32, Vec<u64>>,
    dead_attempts: usize,
    dead_intents: usize,
    last_event: i64,
    /// When the last event seen was written, and for which intent: how a rewritten feed is
    /// told from the one read.
    last_mark: Option<(i64, Option<String>)>,
    last_receipt: i64,
    loaded: bool,
}

/// One intent's rows as read from the tables.
struct Loaded {
    rec: IntentRec,
    attempts: Vec<AttemptRec>,
    intervals: Vec<Interval>,
    duplicates: Vec<u64>,
}

const INTENT_SQL: &str = "SELECT i.seq, i.created_at_ms, i.committed_at_ms, i.attempts, i.max_attempts, i.tenant, \
     i.operation, i.tool, i.release_id, i.locale, i.tier, i.state, i.indeterminate_since_ms FROM intents i";
const ATTEMPT_SQL: &str = "SELECT a.intent_seq, a.started_at_ms, a.ended_at_ms, a.provider, \
     coalesce(a.release_id, i.release_id), a.late, a.proposal_hash FROM attempts a JOIN intents i ON i.seq = a.intent_seq";
const SPAN_SQL: &str = "SELECT t.intent_seq, t.from_state, t.to_state, t.at_ms FROM transitions t";
const DUPLICATE_SQL: &str = "SELECT r.intent_seq, min(r.received_at_ms) FROM receipts r JOIN intents i ON i.seq = r.intent_seq \
     WHERE r.authoritative = 0 AND r.downstream_id IS NOT i.downstream_ref";

type IntentRow = (
    i64,
    i64,
    Option<i64>,
    i64,
    i64,
    String,
    String,
    String,
    String,
    String,
    String,
    String,
    Option<i64>,
);

fn read_intent(r: &Row<'_>) -> Result<IntentRow, StoreError> {
    Ok((
        r.get(0)?,
        r.get(1)?,
        r.get(2)?,
        r.get(3)?,
        r.get(4)?,
        r.get(5)?,
        r.get(6)?,
        r.get(7)?,
        r.get(8)?,
        r.get(9)?,
        r.get(10)?,
        r.get(11)?,
        r.get(12)?,
    ))
}

type AttemptRow = (i64, i64, Option<i64>, String, String, bool, Option<String>);

fn read_attempt(r: &Row<'_>) -> Result<AttemptRow, StoreError> {
    Ok((
        r.get(0)?,
        r.get(1)?,
        r.get(2)?,
        r.get(3)?,
        r.get(4)?,
        r.get(5)?,
        r.get(6)?,
    ))
}

impl MetricIndex {
    /// Bring the index up to the database's present state: load it whole the first time,
    /// then apply what changed since.
    pub fn refresh(&mut self, conn: &dyn Conn) -> Result<(), StoreError> {
        conn.batch("BEGIN")?;
        let result = self.refresh_in(conn);
        let _ = conn.batch("COMMIT");
        result
    }

    fn refresh_in(&mut self, conn: &dyn Conn) -> Result<(), StoreError> {
        let last_event: i64 =
            conn.one("SELECT coalesce(max(seq), 0) FROM events", params![], |r| {
                r.get(0)
            })?;
        // The last event seen must still be there as it was; if the feed was pruned past it,
        // or emptied and numbered again, what changed meanwhile is unknown: read everything.
        if !self.loaded || event_mark(conn, self.last_event)? != self.last_mark {
            return self.load_all(conn, last_event);
        }
        if last_event > self.last_event {
            let seqs = conn.rows(
                "SELECT DISTINCT i.seq FROM events e JOIN intents i ON i.id = e.intent_id WHERE e.seq > ?1 AND e.seq <= ?2",
                params![self.last_event, last_event],
                |r| r.get::<i64>(0),
            )?;
            for seq in seqs {
                self.reload(conn, seq)?;
            }
            self.last_event = last_event;
            self.last_mark = event_mark(conn, last_event)?;
        }
        let last_receipt: i64 = conn.one(
            "SELECT coalesce(max(seq), 0) FROM receipts",
            params![],
            |r| r.get(0),
        )?;
        if last_receipt > self.last_receipt {
            let seqs = conn.rows(
                "SELECT DISTINCT intent_seq FROM receipts WHERE seq > ?1 AND seq <= ?2",
                params![self.last_receipt, last_receipt],
                |r| r.get::<i64>(0),
            )?;
            for seq in seqs {
                self.reload(conn, seq)?;
            }
            self.last_receipt = last_receipt;
        }
        if self.dead_attempts > self.attempts.len() / 4 + 1024 || self.dead_intents > 1024 {
            self.compact();
        }
        Ok(())
    }

    /// Load everything, as of `last_event`.
    fn load_all(&mut self, conn: &dyn Conn, last_event: i64) -> Result<(), StoreError> {
        *self = MetricIndex {
            dicts: std::mem::take(&mut self.dicts),
            ..MetricIndex::default()
        };
        self.last_receipt = conn.one(
            "SELECT coalesce(max(seq), 0) FROM receipts",
            params![],
            |r| r.get(0),
        )?;
        // Intents indeterminate now, with the time they became so.
        let mut current: Vec<(u32, u64)> = Vec::new();
        conn.each(
            &format!("{INTENT_SQL} ORDER BY i.seq"),
            params![],
            &mut |r| {
                let row = read_intent(r)?;
                let since = row.12;
                let rec = self.intent_rec(row);
                let pos = self.place(rec);
                if self.dicts.state.name(rec.state) == "indeterminate" {
                    current.push((pos, since.map_or(rec.created_ms, to_u64)));
                }
                Ok(())
            },
        )?;
        // Attempts in table order, then grouped by intent (a stable sort keeps their order).
        let mut pending: Vec<(u32, AttemptRec, Option<u32>)> = Vec::new();
        let mut hashes = Dict::default();
        conn.each(
            &format!("{ATTEMPT_SQL} ORDER BY a.seq"),
            params![],
            &mut |r| {
                let row = read_attempt(r)?;
                let Some(pos) = self.position(row.0) else {
                    return Ok(());
                };
                let hash = row.6.as_deref().map(|h| u32::from(hashes.id(h)));
                let rec = self.attempt_rec(&row);
                pending.push((pos, rec, hash));
                Ok(())
            },
        )?;
        pending.sort_by_key(|(pos, _, _)| *pos);
        self.attempts.reserve(pending.len());
        let mut i = 0;
        while i < pending.len() {
            let pos = pending[i].0;
            let start = self.attempts.len();
            let mut first_hash = None;
            let mut proposals = 0;
            let mut diverged = false;
            let mut providers = 0;
            let mut late = 0;
            while i < pending.len() && pending[i].0 == pos {
                let (_, rec, hash) = pending[i];
                providers |= provider_bit(rec.provider);
                late += u32::from(rec.late());
                if let Some(h) = hash {
                    proposals += 1;
                    match first_hash {
                        None => first_hash = Some(h),
                        Some(f) if f != h => diverged = true,
                        Some(_) => {}
                    }
                }
                self.attempts.push(rec);
                i += 1;
            }
            let intent = &mut self.intents[pos as usize];
            intent.first_attempt = start as u32;
            intent.n_attempts = (self.attempts.len() - start) as u32;
            intent.providers = providers;
            intent.proposals = proposals;
            intent.diverged = diverged && proposals >= 2;
            intent.late = late;
        }
        drop(pending);
        let spans = conn.rows(
            &format!(
                "{SPAN_SQL} WHERE t.to_state = 'indeterminate' OR t.from_state = 'indeterminate' ORDER BY t.seq"
            ),
            params![],
            |r| {
                Ok((
                    r.get::<i64>(0)?,
                    r.get::<Option<String>>(1)?,
                    r.get::<String>(2)?,
                    r.get::<u64>(3)?,
                ))
            },
        )?;
        for (seq, from, to, at) in spans {
            if let Some(pos) = self.position(seq) {
                let spans = self.indeterminate.entry(pos).or_default();
                push_span(spans, from.as_deref(), &to, at);
            }
        }
        for (pos, since) in current {
            let spans = self.indeterminate.entry(pos).or_default();
            if spans.last().is_none_or(|s| s.left_ms != u64::MAX) {
                spans.push(Interval {
                    entered_ms: since,
                    left_ms: u64::MAX,
                });
            }
        }
        self.indeterminate.retain(|_, spans| !spans.is_empty());
        let duplicates = conn.rows(
            &format!("{DUPLICATE_SQL} GROUP BY r.intent_seq, r.downstream_id"),
            params![],
            |r| Ok((r.get::<i64>(0)?, r.get::<u64>(1)?)),
        )?;
        for (seq, at) in duplicates {
            if let Some(pos) = self.position(seq) {
                self.duplicates.entry(pos).or_default().push(at);
            }
        }
        self.last_event = last_event;
        self.last_mark = event_mark(conn, last_event)?;
        self.loaded = true;
        Ok(())
    }

    /// Replace one intent with its present rows.
    fn reload(&mut self, conn: &dyn Conn, seq: i64) -> Result<(), StoreError> {
        let loaded = self.read_one(conn, seq)?;
        let old = self.position(seq);
        if let Some(pos) = old {
            let rec = &mut self.intents[pos as usize];
            rec.live = false;
            self.dead_attempts += rec.n_attempts as usize;
            self.dead_intents += 1;
            self.indeterminate.remove(&pos);
            self.duplicates.remove(&pos);
        }
        let Some(loaded) = loaded else {
            if let Some(slot) = usize::try_from(seq)
                .ok()
                .and_then(|s| self.by_seq.get_mut(s))
            {
                *slot = u32::MAX;
            }
            return Ok(());
        };
        let mut rec = loaded.rec;
        rec.first_attempt = self.attempts.len() as u32;
        rec.n_attempts = loaded.attempts.len() as u32;
        self.attempts.extend(loaded.attempts);
        let pos = self.place(rec);
        if !loaded.intervals.is_empty() {
            self.indeterminate.insert(pos, loaded.intervals);
        }
        if !loaded.duplicates.is_empty() {
            self.duplicates.insert(pos, loaded.duplicates);
        }
        Ok(())
    }

    fn read_one(&mut self, conn: &dyn Conn, seq: i64) -> Result<Option<Loaded>, StoreError> {
        let row = conn
            .one(
                &format!("{INTENT_SQL} WHERE i.seq = ?1"),
                params![seq],
                read_intent,
            )
            .optional()?;
        let Some(row) = row else {
            return Ok(None);
        };
        let since = row.12;
        let mut rec = self.intent_rec(row);
        let mut attempts = Vec::new();
        let mut hashes: Vec<String> = Vec::new();
        for row in conn.rows(
            &format!("{ATTEMPT_SQL} WHERE a.intent_seq = ?1 ORDER BY a.seq"),
            params![seq],
            read_attempt,
        )? {
            {
                let a = self.attempt_rec(&row);
                rec.providers |= provider_bit(a.provider);
                rec.late += u32::from(a.late());
                if let Some(h) = row.6 {
                    hashes.push(h);
                }
                attempts.push(a);
            }
        }
        rec.proposals = hashes.len() as u32;
        rec.diverged = hashes.len() >= 2 && hashes.iter().any(|h| h != &hashes[0]);
        let mut intervals = Vec::new();
        let spans = conn.rows(
            &format!("{SPAN_SQL} WHERE t.intent_seq = ?1 ORDER BY t.seq"),
            params![seq],
            |r| {
                Ok((
                    r.get::<Option<String>>(1)?,
                    r.get::<String>(2)?,
                    r.get::<u64>(3)?,
                ))
            },
        )?;
        for (from, to, at) in spans {
            push_span(&mut intervals, from.as_deref(), &to, at);
        }
        if self.dicts.state.name(rec.state) == "indeterminate"
            && intervals
                .last()
                .is_none_or(|s: &Interval| s.left_ms != u64::MAX)
        {
            intervals.push(Interval {
                entered_ms: since.map_or(rec.created_ms, to_u64),
                left_ms: u64::MAX,
            });
        }
        let duplicates = conn.rows(
            &format!("{DUPLICATE_SQL} AND r.intent_seq = ?1 GROUP BY r.downstream_id"),
            params![seq],
            |r| r.get::<u64>(1),
        )?;
        Ok(Some(Loaded {
            rec,
            attempts,
            intervals,
            duplicates,
        }))
    }

    fn intent_rec(&mut self, row: IntentRow) -> IntentRec {
        let d = &mut self.dicts;
        IntentRec {
            seq: row.0,
            created_ms: to_u64(row.1),
            committed_ms: row.2.map_or(0, to_u64),
            attempts: u32::try_from(row.3).unwrap_or(0),
            max_attempts: u32::try_from(row.4).unwrap_or(0),
            tenant: d.tenant.id(&row.5),
            operation: d.operation.id(&row.6),
            tool: d.tool.id(&row.7),
            release: d.release.id(&row.8),
            locale: d.locale.id(&row.9),
            tier: d.tier.id(&row.10),
            state: d.state.id(&row.11),
            live: true,
            ..IntentRec::default()
        }
    }

    fn attempt_rec(&mut self, row: &AttemptRow) -> AttemptRec {
        let started_ms = to_u64(row.1);
        let ended_after_ms = row.2.map_or(u32::MAX, |e| {
            u32::try_from(to_u64(e).saturating_sub(started_ms)).unwrap_or(u32::MAX - 1)
        });
        let release = self.dicts.release.id(&row.4);
        let provider = self.dicts.provider.id(&row.3);
        AttemptRec::new(started_ms, ended_after_ms, provider, release, row.5)
    }

    /// Append `rec` and point its sequence number at it.
    fn place(&mut self, rec: IntentRec) -> u32 {
        let pos = self.intents.len() as u32;
        let seq = usize::try_from(rec.seq).unwrap_or(0);
        if self.by_seq.len() <= seq {
            self.by_seq.resize(seq + 1, u32::MAX);
        }
        self.by_seq[seq] = pos;
        self.intents.push(rec);
        pos
    }

    fn position(&self, seq: i64) -> Option<u32> {
        let pos = *self.by_seq.get(usize::try_from(seq).ok()?)?;
        (pos != u32::MAX).then_some(pos)
    }

    /// Drop replaced copies.
    fn compact(&mut self) {
        let mut intents = Vec::with_capacity(self.intents.len() - self.dead_intents);
        let mut attempts = Vec::with_capacity(self.attempts.len() - self.dead_attempts);
        let mut indeterminate = HashMap::new();
        let mut duplicates = HashMap::new();
        for (old, rec) in self.intents.iter().enumerate() {
            if !rec.live {
                continue;
            }
            let mut rec = *rec;
            let range = rec.first_attempt as usize..(rec.first_attempt + rec.n_attempts) as usize;
            rec.first_attempt = attempts.len() as u32;
            attempts.extend_from_slice(&self.attempts[range]);
            let pos = intents.len() as u32;
            if let Some(spans) = self.indeterminate.remove(&(old as u32)) {
                indeterminate.insert(pos, spans);
            }
            if let Some(d) = self.duplicates.remove(&(old as u32)) {
                duplicates.insert(pos, d);
            }
            self.by_seq[usize::try_from(rec.seq).unwrap_or(0)] = pos;
            intents.push(rec);
        }
        self.intents = intents;
        self.attempts = attempts;
        self.indeterminate = indeterminate;
        self.duplicates = duplicates;
        self.dead_attempts = 0;
        self.dead_intents = 0;
    }

    /// The live intents with their positions.
    pub(crate) fn live(&self) -> impl Iterator<Item = (u32, &IntentRec)> {
        self.intents
            .iter()
            .enumerate()
            .filter(|(_, r)| r.live)
            .map(|(i, r)| (i as u32, r))
    }

    pub(crate) fn attempts_of(&self, rec: &IntentRec) -> &[AttemptRec] {
        let start = rec.first_attempt as usize;
        &self.attempts[start..start + rec.n_attempts as usize]
    }
}

/// What identifies event `seq`: when it was written and which intent it names (`None`
/// when there is no such event).
fn event_mark(conn: &dyn Conn, seq: i64) -> Result<Option<(i64, Option<String>)>, StoreError> {
    conn.one(
        "SELECT at_ms, intent_id FROM events WHERE seq = ?1",
        params![seq],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
    .optional()
}

/// Follow one transition: entering indeterminate opens a span, leaving it closes the last.
fn push_span(spans: &mut Vec<Interval>, from: Option<&str>, to: &str, at_ms: u64) {
    if to == "indeterminate" && from != Some("indeterminate") {
        spans.push(Interval {
            entered_ms: at_ms,
            left_ms: u64::MAX,
        });
    } else if from == Some("indeterminate") && to != "indeterminate" {
        match spans.last_mut() {
            Some(last) if last.left_ms == u64::MAX => last.left_ms = at_ms,
            // Left without a recorded entry (history written before the feed): unknown start.
            _ => {}
        }
    }
}
