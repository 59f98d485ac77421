//! The app's plain data: how the console was started, what it remembers between runs,
//! which main view shows, whether the data is live, the open intent and the values seen.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::console::filters::{Filters, SavedView, default_views};
use crate::console::model::IntentDetail;
use crate::console::views::dashboard::state::DashboardSettings;
use crate::domain::Locale;

/// The rows fetched per page.
pub const PAGE_SIZE: u32 = 200;

/// How the console was started.
#[derive(Debug, Clone)]
pub struct ConsoleOptions {
    /// What the title bar says it is connected to ("embedded demo" or the URL).
    pub label: String,
    pub coordinator_url: String,
    pub token: String,
    pub offline: bool,
    /// Open this intent id or action key at start.
    pub open: Option<String>,
    /// Where the local cache lives; `None` for no cache.
    pub cache_path: Option<PathBuf>,
    /// A fixed "now" for reproducible pictures (snapshot tests); `None` reads the clock.
    pub fixed_now_ms: Option<u64>,
    /// Show every time in UTC rather than the machine's zone (`--utc`).
    pub utc: bool,
    /// CA certificates (PEM) to trust beside the system's for an `https://` coordinator.
    pub ca_file: Option<PathBuf>,
}

/// What the console remembers between runs (never a token).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct Persisted {
    pub locale: Locale,
    pub filters: Filters,
    pub views: Vec<SavedView>,
    pub last_coordinator_url: Option<String>,
    pub open_intent: Option<String>,
    pub tab: Tab,
    pub dashboard: DashboardSettings,
    /// Per coordinator URL, the newest gate-revisit event acknowledged at this desk.
    pub revisits_acknowledged: BTreeMap<String, u64>,
}

impl Default for Persisted {
    fn default() -> Self {
        Persisted {
            locale: Locale::EnUs,
            filters: Filters::default(),
            views: default_views(),
            last_coordinator_url: None,
            open_intent: None,
            tab: Tab::Intents,
            dashboard: Default::default(),
            revisits_acknowledged: BTreeMap::new(),
        }
    }
}

/// The main views.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Tab {
    #[default]
    Intents,
    Dashboard,
}

/// Whether the data on screen is live.
#[derive(Debug, Clone, Default)]
pub struct Live {
    pub connected: bool,
    /// When the stream last connected or was lost (unix ms).
    pub since_ms: u64,
    pub error: Option<String>,
    pub ever_connected: bool,
}

/// The open intent.
#[derive(Debug, Clone)]
pub struct OpenIntent {
    pub id: String,
    pub detail: Option<IntentDetail>,
    pub error: Option<String>,
    pub loading: bool,
    pub from_cache: bool,
}

/// Values seen in data, offered as filter choices.
#[derive(Debug, Clone, Default)]
pub struct Seen {
    pub tenants: BTreeSet<String>,
    pub providers: BTreeSet<String>,
    pub operations: BTreeSet<String>,
    pub tools: BTreeSet<String>,
    pub releases: BTreeSet<String>,
}
