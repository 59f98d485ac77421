//! The app's background logic: the worker's replies taken in each frame, and the
//! requests for the table and the open intent they and the filters call for. Nothing here
//! waits; every answer arrives as a [`Reply`] on a later frame.

use std::time::Instant;

use super::state::PAGE_SIZE;
use super::{ConsoleApp, HEAD_REFRESH};
use crate::client::ClientError;
use crate::console::worker::{Reply, Request};

impl ConsoleApp {
    /// Ask for the open intent's detail now, or as soon as the answer on its way lands.
    pub(super) fn request_detail(&mut self) {
        let Some(open) = self.open.as_ref() else {
            return;
        };
        if let Some(ticket) = self.detail_refresh.ask() {
            let taken = self.worker.send(Request::Detail {
                id: open.id.clone(),
                ticket,
            });
            self.detail_refresh.sent(ticket, taken);
        }
    }

    pub(super) fn load_more(&mut self) {
        if self.table.loading {
            return;
        }
        if let (Some(cursor), Some(query)) =
            (self.table.next_cursor.clone(), self.last_query.clone())
        {
            self.table.loading = true;
            let generation = self.table.generation;
            self.worker.send(Request::Page {
                generation,
                query,
                cursor: Some(cursor),
            });
        }
    }

    /// The query the current filters make, with sort and page size.
    pub fn current_query(&self) -> Vec<(String, String)> {
        let mut q = self.state.filters.query();
        q.push((
            "sort".into(),
            self.state.filters.sort_or_default().to_string(),
        ));
        q.push(("limit".into(), PAGE_SIZE.to_string()));
        q
    }

    /// Re-query when the filters changed since the last request.
    pub(super) fn sync_query(&mut self) {
        let query = self.current_query();
        if self.last_query.as_ref() == Some(&query) {
            return;
        }
        let generation = self.table.reset();
        if self.worker.send(Request::Page {
            generation,
            query: query.clone(),
            cursor: None,
        }) {
            self.last_query = Some(query);
        }
    }

    /// Take in everything the worker answered since the last frame.
    pub(super) fn take_replies(&mut self) {
        for reply in self.worker.poll() {
            match reply {
                Reply::Page {
                    generation,
                    appended,
                    result,
                    from_cache,
                } => match result {
                    Ok(page) => {
                        for row in &page.items {
                            self.seen.tenants.insert(row.tenant.to_string());
                            self.seen.operations.insert(row.operation.clone());
                            self.seen.tools.insert(row.tool.clone());
                            self.seen.releases.insert(row.release_id.clone());
                            self.seen.providers.extend(row.providers.iter().cloned());
                        }
                        if generation == self.table.generation
                            && !appended
                            && self.head_refresh_due.is_some()
                        {
                            self.head_refresh_due = None;
                        }
                        self.table.accept(generation, appended, page, from_cache);
                        if self.options.offline {
                            // Offline, the cache is all there is: nothing more is coming.
                            self.table.loading = false;
                        }
                    }
                    Err(e) if generation == self.table.generation => {
                        self.table.loading = false;
                        self.table.error = Some(self.describe(&e));
                    }
                    Err(_) => {}
                },
                Reply::Detail {
                    id,
                    ticket,
                    result,
                    from_cache,
                } => {
                    // An answer to a request made before the intent was opened again (or
                    // another one was) is stale.
                    let current = self.detail_refresh.landed(ticket);
                    if let Some(open) = self.open.as_mut().filter(|o| current && o.id == id) {
                        open.loading = false;
                        open.from_cache = from_cache;
                        match result {
                            Ok(detail) => {
                                open.detail = Some(*detail);
                                open.error = None;
                            }
                            Err(e) => open.error = Some(e.to_string()),
                        }
                    }
                }
                Reply::Resolved { needle, result } => match result {
                    Ok(id) => self.open_intent(&id),
                    Err(e) => self.notice = Some(format!("{needle}: {e}")),
                },
                Reply::Dashboard {
                    generation,
                    read,
                    result,
                } => self.dashboard.on_answer(generation, read, result),
                Reply::Whoami { result } => self.intent_view.on_whoami(result),
                Reply::Revisits { result } => {
                    self.revisits.answered(result.ok().map(|page| page.items));
                }
                Reply::Command { body, result } => {
                    let refresh = self.intent_view.on_command(&body, result);
                    if refresh && self.open.is_some() {
                        self.request_detail();
                        self.last_query = None;
                    }
                }
                Reply::Changed { rows, .. } => {
                    self.dashboard.on_changed();
                    let open_changed = self
                        .open
                        .as_ref()
                        .is_some_and(|o| rows.iter().any(|r| r.id.as_str() == o.id));
                    let unseen = self.table.apply_changes(rows);
                    if unseen > 0 && self.head_refresh_due.is_none() {
                        self.head_refresh_due = Some(Instant::now() + HEAD_REFRESH);
                    }
                    if open_changed {
                        self.request_detail();
                    }
                }
                Reply::Resync => {
                    self.last_query = None;
                    self.dashboard.on_changed();
                    if self.open.is_some() {
                        self.request_detail();
                    }
                }
                Reply::Live { connected, error } => {
                    if connected != self.live.connected
                        || error.is_some() != self.live.error.is_some()
                    {
                        self.live.since_ms = self.clock.now_ms();
                    }
                    if connected && !self.live.connected && self.live.ever_connected {
                        // Back after a gap: what changed meanwhile is fetched again.
                        self.last_query = None;
                    }
                    if connected && !self.live.connected {
                        // A coordinator that (re)started may have found its contracts
                        // changed.
                        self.revisits.mark_stale();
                    }
                    self.live.connected = connected;
                    self.live.ever_connected |= connected;
                    self.live.error = error;
                }
            }
        }
        if self.open.is_some() && self.detail_refresh.owed() {
            self.request_detail();
        }
        if self
            .head_refresh_due
            .is_some_and(|due| Instant::now() >= due)
        {
            self.head_refresh_due = None;
            if let Some(query) = self.last_query.clone() {
                // A refresh of the first page merged into the rows (same generation).
                let generation = self.table.generation;
                self.worker.send(Request::Page {
                    generation,
                    query,
                    cursor: None,
                });
            }
        }
    }

    /// Words for an error, with what to do about it.
    pub fn describe(&self, e: &ClientError) -> String {
        match e {
            ClientError::Unauthorized => self.i18n.tr("error-unauthorized"),
            ClientError::Forbidden(_) => self.i18n.tr("error-forbidden"),
            other => other.to_string(),
        }
    }
}
