//! `GET /healthz`: whether the coordinator serves, and the state of each of its parts.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The answer of `GET /healthz` (200 when `status` is `ok`, 503 otherwise).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Health {
    pub status: HealthStatus,
    /// By part: `store` (a read answers), `writer` (a write is taken and committed),
    /// `dispatcher`, `reconciler`, `metric_index` (the dashboard's index, loaded at start),
    /// `metric_follower` (which keeps that index within about a second of the change feed).
    #[serde(default)]
    pub parts: BTreeMap<String, HealthPart>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HealthStatus {
    Ok,
    Unavailable,
}

/// One part's state and how often it was restarted since the coordinator started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct HealthPart {
    pub status: PartStatus,
    #[serde(default)]
    pub restarts: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PartStatus {
    /// Serving.
    Running,
    /// Panicked and about to run again.
    Restarting,
    /// Did not answer within the health check's wait (a stalled disk or database).
    Stalled,
    /// The database refused or lost the connection; the coordinator keeps reconnecting.
    Unreachable,
    /// Ended while the coordinator runs: the coordinator needs a restart.
    Dead,
    /// Ended because the coordinator is stopping.
    Stopped,
    /// The metric index is loading; charts wait for it.
    Loading,
    /// The metric index is loaded and kept up to date.
    Ready,
    /// The metric index could not be loaded ahead, or its follower cannot read the change
    /// feed: each chart and scrape brings the index up to date itself.
    Failed,
}

impl PartStatus {
    /// Whether a part in this status keeps the coordinator from serving as it should.
    pub fn is_unhealthy(self) -> bool {
        matches!(
            self,
            PartStatus::Stalled | PartStatus::Unreachable | PartStatus::Dead
        )
    }
}
