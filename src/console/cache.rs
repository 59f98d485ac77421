//! The console's local cache: what was fetched, kept in a small SQLite file beside the
//! console's state, so the last view shows at once on start and an investigation can be
//! reopened with `--offline`. It holds only what the coordinator already showed this user;
//! never a token.

use crate::clock::{SharedClock, system_clock};
use std::path::Path;
use std::sync::{Arc, Mutex};

use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::model::{IntentDetail, IntentPage};

/// A handle on the cache file for one coordinator.
#[derive(Clone)]
pub struct Cache {
    conn: Arc<Mutex<Connection>>,
    /// Entries are kept per coordinator, so two coordinators never mix.
    scope: String,
    /// When entries are written, by this clock.
    clock: SharedClock,
}

impl Cache {
    /// The same cache, stamping entries by `clock`.
    pub fn with_clock(self, clock: SharedClock) -> Cache {
        Cache { clock, ..self }
    }

    pub fn open(path: &Path, coordinator: &str) -> rusqlite::Result<Cache> {
        let conn = Connection::open(path)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS pages (scope TEXT NOT NULL, key TEXT NOT NULL, json TEXT NOT NULL, \
               at_ms INTEGER NOT NULL, PRIMARY KEY (scope, key)); \
             CREATE TABLE IF NOT EXISTS details (scope TEXT NOT NULL, id TEXT NOT NULL, json TEXT NOT NULL, \
               at_ms INTEGER NOT NULL, PRIMARY KEY (scope, id));",
        )?;
        Ok(Cache {
            conn: Arc::new(Mutex::new(conn)),
            scope: coordinator.to_string(),
            clock: system_clock(),
        })
    }

    async fn get<T: DeserializeOwned + Send + 'static>(
        &self,
        table: &'static str,
        key: &str,
    ) -> Option<T> {
        let (conn, scope, key) = (self.conn.clone(), self.scope.clone(), key.to_string());
        tokio::task::spawn_blocking(move || {
            let conn = conn.lock().ok()?;
            let sql = format!(
                "SELECT json FROM {table} WHERE scope = ?1 AND {} = ?2",
                key_column(table)
            );
            let json: Option<String> = conn
                .query_row(&sql, params![scope, key], |r| r.get(0))
                .optional()
                .ok()?;
            serde_json::from_str(&json?).ok()
        })
        .await
        .ok()
        .flatten()
    }

    async fn put<T: Serialize>(&self, table: &'static str, key: &str, value: &T) {
        let Ok(json) = serde_json::to_string(value) else {
            return;
        };
        let (conn, scope, key) = (self.conn.clone(), self.scope.clone(), key.to_string());
        let at_ms = self.clock.now_ms();
        let _ = tokio::task::spawn_blocking(move || {
            let Ok(conn) = conn.lock() else { return };
            let sql = format!(
                "INSERT OR REPLACE INTO {table} (scope, {}, json, at_ms) VALUES (?1, ?2, ?3, ?4)",
                key_column(table)
            );
            if let Err(e) = conn.execute(&sql, params![scope, key, json, at_ms as i64]) {
                tracing::warn!(error = %e, "could not write the local cache");
            }
        })
        .await;
    }

    pub async fn page(&self, key: &str) -> Option<IntentPage> {
        self.get("pages", key).await
    }

    pub async fn put_page(&self, key: &str, page: &IntentPage) {
        self.put("pages", key, page).await;
    }

    pub async fn detail(&self, id: &str) -> Option<IntentDetail> {
        self.get("details", id).await
    }

    pub async fn put_detail(&self, id: &str, detail: &IntentDetail) {
        self.put("details", id, detail).await;
    }
}

fn key_column(table: &str) -> &'static str {
    if table == "details" { "id" } else { "key" }
}
