//! The shell around the gate's revisit decisions (`core::revisit`): the comparison of the
//! connectors' contracts at start, and the providers, releases and tools seen while serving,
//! remembered so that only a name not seen before costs a write.

use std::collections::HashSet;
use std::sync::Mutex;

use super::AppState;
use super::core::revisit::{compare_at_start, first_sighting};
use crate::store::ops::*;
use crate::store::{Sighting, StoreError};

/// The names this coordinator knows were seen. Bounded: past the bound a name is checked
/// against the store every time, never forgotten there.
#[derive(Debug, Default)]
pub struct Sighted {
    seen: Mutex<HashSet<Sighting>>,
}

/// How many names are remembered in memory.
const REMEMBERED: usize = 10_000;

impl Sighted {
    /// Those of `sightings` not known to be seen, now taken as seen.
    fn unseen(&self, sightings: Vec<Sighting>) -> Vec<Sighting> {
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        sightings
            .into_iter()
            .filter(|s| {
                if seen.contains(s) {
                    return false;
                }
                if seen.len() < REMEMBERED {
                    seen.insert(s.clone());
                }
                true
            })
            .collect()
    }

    fn forget(&self, sightings: &[Sighting]) {
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        for s in sightings {
            seen.remove(s);
        }
    }

    fn remember(&self, sightings: Vec<Sighting>) {
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        for s in sightings {
            if seen.len() >= REMEMBERED {
                break;
            }
            seen.insert(s);
        }
    }
}

/// At start: compare the connectors' contracts with the stored ones (each change a revisit
/// event), and remember the names seen so far.
pub async fn at_start(state: &AppState) -> Result<(), StoreError> {
    let (config, now) = (state.config.clone(), state.clock.now_ms());
    let recorded = state
        .db
        .write(move |s| compare_at_start(s, &config, now))
        .await?;
    if recorded > 0 {
        tracing::warn!(
            changes = recorded,
            "connector contracts changed since the last start: revisit the retry/failover gate"
        );
    }
    let known = state.db.read(|s| s.sightings()).await?;
    state.sighted.remember(known);
    Ok(())
}

/// Note that an intent or attempt of `tenant` named `sightings`; the first sighting of each
/// becomes a revisit event. A failure is logged, never the caller's: the name is tried again
/// the next time it is seen.
pub async fn sighted(state: &AppState, tenant: &str, sightings: Vec<Sighting>) {
    let unseen = state.sighted.unseen(sightings);
    if unseen.is_empty() {
        return;
    }
    let (tenant, now, asked) = (tenant.to_string(), state.clock.now_ms(), unseen.clone());
    let written = state
        .db
        .write(move |s| s.sight(&asked, Some(&tenant), Some(&first_sighting), now))
        .await;
    match written {
        Ok(first) if !first.is_empty() => {
            // Each is a revisit event in the audit and a notice in the console. In the log it
            // is information: a new deployment sees every name for the first time, and that
            // must not flood the terminal a coordinator was started from.
            let names: Vec<String> = first
                .iter()
                .map(|s| format!("{} {}", s.kind, s.name))
                .collect();
            tracing::info!(
                first_seen = %names.join(", "),
                "new names since the gate was decided: revisit the retry/failover gate"
            );
        }
        Ok(_) => {}
        Err(e) => {
            tracing::warn!(error = %e, "a first sighting could not be recorded");
            state.sighted.forget(&unseen);
        }
    }
}
