//! The intents table's data: the rows loaded so far, page by page with the server's cursor,
//! and which rows changed recently. Only the rows on screen are ever built (see
//! `views/intents_table.rs`), so a million intents scroll as smoothly as a hundred.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::model::{IntentPage, IntentRow};

/// How long a changed row stays marked.
pub const CHANGE_MARK: Duration = Duration::from_secs(2);

#[derive(Default)]
pub struct TableData {
    pub rows: Vec<IntentRow>,
    index: HashMap<String, usize>,
    pub next_cursor: Option<String>,
    pub total: u64,
    pub total_exact: bool,
    /// Bumped on every filter change; answers for older generations are dropped.
    pub generation: u64,
    pub loading: bool,
    pub error: Option<String>,
    pub changed: HashMap<String, Instant>,
    /// When the filters changed, to measure time to the first rows.
    pub requested_at: Option<Instant>,
    pub first_rows_after: Option<Duration>,
    /// True while the rows shown come from the local cache.
    pub from_cache: bool,
    /// The first row drawn last frame: where the operator has scrolled to.
    pub first_row_shown: usize,
    /// Whether the columns were last drawn right to left.
    pub drawn_rtl: Option<bool>,
    /// The sideways scroll is to start again from the first column.
    pub start_sideways: bool,
    /// How far the table scrolls sideways, as last measured.
    pub sideways_end: f32,
    /// Right to left: how far the view stood from the table's right end, and the table's
    /// width, last frame — so the view keeps its place from the right as the panel beside
    /// it changes width, as it keeps its place from the left in English.
    pub sideways_from_end: f32,
    pub sideways_content: f32,
}

impl TableData {
    /// Start over for new filters.
    pub fn reset(&mut self) -> u64 {
        self.generation += 1;
        self.loading = true;
        self.error = None;
        self.requested_at = Some(Instant::now());
        self.generation
    }

    /// Take a page for `generation`; returns false when it was stale.
    pub fn accept(
        &mut self,
        generation: u64,
        appended: bool,
        page: IntentPage,
        from_cache: bool,
    ) -> bool {
        if generation != self.generation {
            return false;
        }
        if !appended {
            self.rows.clear();
            self.index.clear();
            if let Some(at) = self.requested_at.take() {
                self.first_rows_after = Some(at.elapsed());
            }
        }
        for row in page.items {
            if let Some(&i) = self.index.get(row.id.as_str()) {
                self.rows[i] = row;
            } else {
                self.index.insert(row.id.to_string(), self.rows.len());
                self.rows.push(row);
            }
        }
        self.next_cursor = page.next_cursor;
        self.total = page.total;
        self.total_exact = page.total_exact;
        self.loading = from_cache;
        self.from_cache = from_cache;
        self.error = None;
        true
    }

    /// Rows the event stream says changed: replaced in place and marked. Returns how many
    /// of them were not loaded (new intents, or ones outside the loaded pages).
    pub fn apply_changes(&mut self, rows: Vec<IntentRow>) -> usize {
        let now = Instant::now();
        let mut unseen = 0;
        for row in rows {
            match self.index.get(row.id.as_str()) {
                Some(&i) => {
                    self.changed.insert(row.id.to_string(), now);
                    self.rows[i] = row;
                }
                None => unseen += 1,
            }
        }
        self.changed.retain(|_, at| at.elapsed() < CHANGE_MARK);
        unseen
    }

    /// Merge a fresh first page into what is loaded: new rows go on top, known ones are
    /// replaced, the rest stays where the operator scrolled.
    pub fn merge_head(&mut self, page: IntentPage) {
        let now = Instant::now();
        let mut fresh = Vec::new();
        for row in page.items {
            match self.index.get(row.id.as_str()) {
                Some(&i) => self.rows[i] = row,
                None => {
                    self.changed.insert(row.id.to_string(), now);
                    fresh.push(row);
                }
            }
        }
        if !fresh.is_empty() {
            fresh.append(&mut self.rows);
            self.rows = fresh;
            self.index = self
                .rows
                .iter()
                .enumerate()
                .map(|(i, r)| (r.id.to_string(), i))
                .collect();
        }
        self.total = self.total.max(page.total);
    }

    pub fn is_changed(&self, id: &str) -> bool {
        self.changed
            .get(id)
            .is_some_and(|at| at.elapsed() < CHANGE_MARK)
    }
}
