//! The compact in-memory copy of what the dashboard aggregates: per intent its dimensions,
//! state, times and attempt count; per attempt its start, end, provider, release and the
//! late flag; the intervals each intent spent indeterminate; its duplicate effects.
//!
//! It is loaded once from the tables (inside one read transaction, so it matches one
//! snapshot), then kept current by reading the change feed: every write that changes an
//! intent or an attempt appends an `events` row in the same transaction, so the intents
//! named by events after the last one seen are reloaded, whole, before each query (an extra
//! receipt announces its intent too): one statement a table for each stretch of the feed, so
//! catching up after a burst costs about what reading those intents in a scan would. If the
//! feed was pruned past what was seen, everything is loaded again. Every coordinator on a
//! shared database follows the same feed, so each one's dashboard shows what all of them
//! wrote.
//!
//! About 72 bytes per intent and 16 per attempt: a million intents with five million
//! attempts take roughly 160 MB, and a scan of all of them takes tens of milliseconds.

use std::collections::HashMap;

pub(crate) use super::records::{AttemptRec, Dict, Dicts, IntentRec, Interval, provider_bit};
use crate::domain::ReleaseRegistry;
use crate::store::StoreError;
use crate::store::metric_source::{
    Changed, EventMark, IndexAttempt, IndexIntent, IndexSpan, MetricSource,
};

/// How many events of the change feed the index reads at a time when it catches up.
const RELOAD_STRETCH: i64 = 20_000;

/// The leading rows of `rows` that belong to intent `seq` (rows sorted by intent), passing
/// over any of an earlier one.
fn rows_of<T>(
    rows: &mut std::iter::Peekable<std::vec::Drain<'_, T>>,
    seq: i64,
    intent_of: impl Fn(&T) -> i64,
) -> Vec<T> {
    while rows.next_if(|r| intent_of(r) < seq).is_some() {}
    let mut out = Vec::new();
    while let Some(r) = rows.next_if(|r| intent_of(r) == seq) {
        out.push(r);
    }
    out
}

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
    last_mark: EventMark,
    loaded: bool,
    /// Which releases may act for each operation: only their proposals are compared for
    /// failover divergence.
    releases: ReleaseRegistry,
    /// The rows of the last stretch read, emptied and kept for the next one.
    scratch: Changed,
}

/// One intent's rows as read from the tables.
struct Loaded {
    rec: IntentRec,
    attempts: Vec<AttemptRec>,
    intervals: Vec<Interval>,
    duplicates: Vec<u64>,
}

impl MetricIndex {
    /// An empty index whose failover divergence counts only the proposals of releases
    /// `releases` lets act for their operation.
    pub fn with_releases(releases: ReleaseRegistry) -> MetricIndex {
        MetricIndex {
            releases,
            ..MetricIndex::default()
        }
    }

    /// The registry this index counts divergence by.
    pub fn releases(&self) -> &ReleaseRegistry {
        &self.releases
    }

    /// Bring the index up to the source's present state: load it whole the first time,
    /// then apply what the change feed says changed since, all from one snapshot.
    pub fn refresh(&mut self, source: &mut dyn MetricSource) -> Result<(), StoreError> {
        source.snapshot(&mut |s| self.refresh_in(s, RELOAD_STRETCH))
    }

    /// [`MetricIndex::refresh`], reading the feed `stretch` events at a time.
    #[cfg(test)]
    pub(crate) fn refresh_by(
        &mut self,
        source: &mut dyn MetricSource,
        stretch: i64,
    ) -> Result<(), StoreError> {
        source.snapshot(&mut |s| self.refresh_in(s, stretch))
    }

    fn refresh_in(
        &mut self,
        source: &mut dyn MetricSource,
        stretch: i64,
    ) -> Result<(), StoreError> {
        let last_event = source.last_event()?;
        // The last event seen must still be there as it was; if the feed was pruned past it,
        // or emptied and numbered again, what changed meanwhile is unknown: read everything.
        if !self.loaded || source.event_mark(self.last_event)? != self.last_mark {
            return self.load_all(source, last_event);
        }
        // Loaded from an empty feed, the index has no event to hold its place by: the first
        // event after it must still be there, or some it never read were pruned.
        if self.last_mark.is_none()
            && last_event > self.last_event
            && source.first_event()? > self.last_event.saturating_add(1)
        {
            return self.load_all(source, last_event);
        }
        if last_event > self.last_event {
            // A stretch of the feed at a time, so that the rows read at once stay few however
            // far behind the index is, and the copies they replace are dropped as it goes; an
            // intent named in two stretches is read twice.
            let mut after = self.last_event;
            while after < last_event {
                let upto = last_event.min(after.saturating_add(stretch.max(1)));
                let mut changed = std::mem::take(&mut self.scratch);
                source.changed(after, upto, &mut changed)?;
                self.reload(&mut changed);
                self.scratch = changed;
                self.compact_if_worth_it();
                after = upto;
            }
            self.last_event = last_event;
            self.last_mark = source.event_mark(last_event)?;
        }
        Ok(())
    }

    /// Drop the replaced copies once they are a quarter of what is held: a compaction copies
    /// every live intent and attempt, so it runs about once for each quarter of the index
    /// changed, not at every refresh of a large index that follows a steady stream.
    fn compact_if_worth_it(&mut self) {
        if self.dead_attempts > self.attempts.len() / 4 + 1024
            || self.dead_intents > self.intents.len() / 4 + 1024
        {
            self.compact();
        }
    }

    /// Load everything, as of `last_event`.
    fn load_all(
        &mut self,
        source: &mut dyn MetricSource,
        last_event: i64,
    ) -> Result<(), StoreError> {
        *self = MetricIndex {
            dicts: std::mem::take(&mut self.dicts),
            releases: std::mem::take(&mut self.releases),
            ..MetricIndex::default()
        };
        // Intents indeterminate now, with the time they became so.
        let mut current: Vec<(u32, u64)> = Vec::new();
        source.each_intent(&mut |row| {
            let since = row.indeterminate_since_ms;
            let rec = self.intent_rec(&row);
            let pos = self.place(rec);
            if self.dicts.state.name(rec.state) == "indeterminate" {
                current.push((pos, since.unwrap_or(rec.created_ms)));
            }
            Ok(())
        })?;
        // Attempts in table order, then grouped by intent (a stable sort keeps their order).
        let mut pending: Vec<(u32, AttemptRec, Option<u32>)> = Vec::new();
        let mut hashes = Dict::default();
        source.each_attempt(&mut |row| {
            let Some(pos) = self.position(row.intent_seq) else {
                return Ok(());
            };
            let operation = self
                .dicts
                .operation
                .name(self.intents[pos as usize].operation);
            let hash = row
                .proposal_hash
                .as_deref()
                .filter(|_| self.releases.eligible(operation, &row.release_id))
                .map(|h| u32::from(hashes.id(h)));
            let tenant = self.intents[pos as usize].tenant;
            let rec = self.attempt_rec(&row, tenant);
            pending.push((pos, rec, hash));
            Ok(())
        })?;
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
        for span in source.indeterminate_spans()? {
            if let Some(pos) = self.position(span.intent_seq) {
                let spans = self.indeterminate.entry(pos).or_default();
                push_span(spans, span.from.as_deref(), &span.to, span.at_ms);
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
        for (seq, at) in source.duplicate_effects()? {
            if let Some(pos) = self.position(seq) {
                self.duplicates.entry(pos).or_default().push(at);
            }
        }
        self.last_event = last_event;
        self.last_mark = source.event_mark(last_event)?;
        self.loaded = true;
        Ok(())
    }

    /// Put what `changed` read of its intents in place of what the index held of them.
    fn reload(&mut self, changed: &mut Changed) {
        let mut attempts = changed.attempts.drain(..).peekable();
        let mut spans = changed.spans.drain(..).peekable();
        let mut duplicates = changed.duplicates.drain(..).peekable();
        for row in changed.intents.drain(..) {
            let seq = row.seq;
            let loaded = self.read_one(
                row,
                rows_of(&mut attempts, seq, |a| a.intent_seq),
                rows_of(&mut spans, seq, |s| s.intent_seq),
                rows_of(&mut duplicates, seq, |d| d.0),
            );
            self.replace(loaded);
        }
    }

    fn replace(&mut self, loaded: Loaded) {
        if let Some(pos) = self.position(loaded.rec.seq) {
            let rec = &mut self.intents[pos as usize];
            rec.live = false;
            self.dead_attempts += rec.n_attempts as usize;
            self.dead_intents += 1;
            self.indeterminate.remove(&pos);
            self.duplicates.remove(&pos);
        }
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
    }

    /// One intent as the index keeps it, from its row and its attempts, transitions and
    /// duplicate effects.
    fn read_one(
        &mut self,
        row: IndexIntent,
        attempt_rows: Vec<IndexAttempt>,
        spans: Vec<IndexSpan>,
        duplicates: Vec<(i64, u64)>,
    ) -> Loaded {
        let since = row.indeterminate_since_ms;
        let mut rec = self.intent_rec(&row);
        let mut attempts = Vec::with_capacity(attempt_rows.len());
        let mut hashes: Vec<String> = Vec::new();
        for attempt in attempt_rows {
            let a = self.attempt_rec(&attempt, rec.tenant);
            rec.providers |= provider_bit(a.provider);
            rec.late += u32::from(a.late());
            if let Some(h) = attempt.proposal_hash
                && self.releases.eligible(&row.operation, &attempt.release_id)
            {
                hashes.push(h);
            }
            attempts.push(a);
        }
        rec.proposals = hashes.len() as u32;
        rec.diverged = hashes.len() >= 2 && hashes.iter().any(|h| h != &hashes[0]);
        let mut intervals = Vec::new();
        for span in spans {
            push_span(&mut intervals, span.from.as_deref(), &span.to, span.at_ms);
        }
        if self.dicts.state.name(rec.state) == "indeterminate"
            && intervals
                .last()
                .is_none_or(|s: &Interval| s.left_ms != u64::MAX)
        {
            intervals.push(Interval {
                entered_ms: since.unwrap_or(rec.created_ms),
                left_ms: u64::MAX,
            });
        }
        Loaded {
            rec,
            attempts,
            intervals,
            duplicates: duplicates.into_iter().map(|(_, at)| at).collect(),
        }
    }

    fn intent_rec(&mut self, row: &IndexIntent) -> IntentRec {
        let d = &mut self.dicts;
        let tenant = d.tenant.id(&row.tenant);
        IntentRec {
            seq: row.seq,
            created_ms: row.created_at_ms,
            committed_ms: row.committed_at_ms.unwrap_or(0),
            attempts: row.attempts,
            lookups: row.lookups,
            dispatched: row.dispatched,
            lookups_exhausted: row.lookups_exhausted,
            max_attempts: row.max_attempts,
            tenant,
            operation: d.operation.id_for(Some(tenant), &row.operation),
            tool: d.tool.id_for(Some(tenant), &row.tool),
            release: d.release.id_for(Some(tenant), &row.release_id),
            locale: d.locale.id(&row.locale),
            tier: d.tier.id(&row.tier),
            state: d.state.id(&row.state),
            live: true,
            ..IntentRec::default()
        }
    }

    fn attempt_rec(&mut self, row: &IndexAttempt, tenant: u16) -> AttemptRec {
        let started_ms = row.started_at_ms;
        let ended_after_ms = row.ended_at_ms.map_or(u32::MAX, |e| {
            u32::try_from(e.saturating_sub(started_ms)).unwrap_or(u32::MAX - 1)
        });
        let release = self.dicts.release.id_for(Some(tenant), &row.release_id);
        let provider = self.dicts.provider.id_for(Some(tenant), &row.provider);
        AttemptRec::new(started_ms, ended_after_ms, provider, release, row.late)
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

    /// The newest change-feed event the index has read.
    pub fn followed_to(&self) -> i64 {
        self.last_event
    }

    /// Roughly the bytes the index holds, for `/metrics`.
    pub fn memory_bytes(&self) -> usize {
        use std::mem::size_of;
        let spans: usize = self
            .indeterminate
            .values()
            .map(|v| v.capacity() * size_of::<Interval>() + size_of::<Vec<Interval>>() + 8)
            .sum();
        let duplicates: usize = self
            .duplicates
            .values()
            .map(|v| v.capacity() * 8 + size_of::<Vec<u64>>() + 8)
            .sum();
        self.intents.capacity() * size_of::<IntentRec>()
            + self.attempts.capacity() * size_of::<AttemptRec>()
            + self.by_seq.capacity() * size_of::<u32>()
            + spans
            + duplicates
            + self.dicts.bytes()
    }

    pub(crate) fn attempts_of(&self, rec: &IntentRec) -> &[AttemptRec] {
        let start = rec.first_attempt as usize;
        &self.attempts[start..start + rec.n_attempts as usize]
    }
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
