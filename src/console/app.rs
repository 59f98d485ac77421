//! The console app: its state, the `eframe::App` impl, the background replies it takes in
//! each frame, and the one place where [`ConsoleCommand`]s are applied.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::cache::Cache;
use super::commands::ConsoleCommand;
use super::filters::{Filters, SavedView, default_views};
use super::model::IntentDetail;
use super::table::TableData;
use super::views;
use super::worker::{OneInFlight, Reply, Request, Worker};
use crate::client::{Client, ClientError};
use crate::clock::{ManualClock, SharedClock, SharedEntropy, os_entropy, system_clock};
use crate::domain::Locale;
use crate::i18n::Localizer;

const APP_KEY: &str = "intentdesk-console";
/// The rows fetched per page.
pub const PAGE_SIZE: u32 = 200;
/// New intents announced by events refresh the first page at most this often.
const HEAD_REFRESH: Duration = Duration::from_secs(1);

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
    pub dashboard: views::dashboard::DashboardSettings,
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

pub struct ConsoleApp {
    pub state: Persisted,
    pub i18n: Localizer,
    pub options: ConsoleOptions,
    pub worker: Worker,
    pub live: Live,
    pub table: TableData,
    pub open: Option<OpenIntent>,
    /// Requests for the open intent's detail, one at a time.
    pub detail_refresh: OneInFlight,
    pub seen: Seen,
    /// Where the console reads the time (fixed for reproducible pictures).
    pub clock: SharedClock,
    /// Where command ids come from.
    pub entropy: SharedEntropy,
    pub palette: views::palette::PaletteState,
    /// The intent view's own state (timeline, commands); see `views/intent_view.rs`.
    pub intent_view: views::intent_view::IntentViewState,
    /// The dashboard's own state; see `views/dashboard.rs`.
    pub dashboard: views::dashboard::DashboardState,
    pub search_text: String,
    /// The search box's caret and selection (it is a right-to-left-capable editor).
    pub search_edit: crate::console::text::BidiEditState,
    pub focus_search: bool,
    pub notice: Option<String>,
    queue: Vec<ConsoleCommand>,
    last_query: Option<Vec<(String, String)>>,
    head_refresh_due: Option<Instant>,
    title: String,
}

/// Run the console in a native window until it is closed; background work runs on
/// `runtime`.
pub fn run_native(options: ConsoleOptions, runtime: tokio::runtime::Handle) -> anyhow::Result<()> {
    let native = eframe::NativeOptions {
        viewport: egui::ViewportBuilder::default()
            .with_title(format!("intentdesk — {}", options.label))
            .with_inner_size([1280.0, 800.0])
            .with_min_inner_size([720.0, 480.0]),
        ..Default::default()
    };
    eframe::run_native(
        "intentdesk",
        native,
        Box::new(move |cc| {
            Ok(Box::new(ConsoleApp::new(
                &cc.egui_ctx,
                cc.storage,
                options,
                &runtime,
            )))
        }),
    )
    .map_err(|e| anyhow::anyhow!("the console window could not open: {e}"))
}

impl ConsoleApp {
    /// Build the app; `storage` restores what the last run remembered.
    pub fn new(
        ctx: &egui::Context,
        storage: Option<&dyn eframe::Storage>,
        options: ConsoleOptions,
        runtime: &tokio::runtime::Handle,
    ) -> ConsoleApp {
        super::text::install_fonts(ctx);
        let mut state: Persisted = storage
            .and_then(|s| eframe::get_value(s, APP_KEY))
            .unwrap_or_default();
        state.last_coordinator_url = Some(options.coordinator_url.clone());
        let client = if options.offline {
            None
        } else {
            Client::new(&options.coordinator_url, &options.token).ok()
        };
        let cache = options
            .cache_path
            .as_ref()
            .and_then(|p| Cache::open(p, &options.coordinator_url).ok());
        // A fixed "now" (reproducible pictures) or the system's clock; ids from this process.
        let clock: SharedClock = match options.fixed_now_ms {
            Some(at) => Arc::new(ManualClock::new(at)),
            None => system_clock(),
        };
        let cache = cache.map(|c| c.with_clock(clock.clone()));
        let repaint_ctx = ctx.clone();
        let worker = Worker::start(runtime, client, cache, move || {
            repaint_ctx.request_repaint()
        });
        let i18n = Localizer::new(state.locale);
        views::charts::time_axis::show_times_in_utc(options.utc);
        let mut app = ConsoleApp {
            search_text: state.filters.q.clone(),
            i18n,
            worker,
            live: Live {
                since_ms: clock.now_ms(),
                ..Live::default()
            },
            clock,
            entropy: os_entropy(),
            table: TableData::default(),
            open: None,
            detail_refresh: OneInFlight::default(),
            seen: Seen::default(),
            palette: Default::default(),
            intent_view: Default::default(),
            dashboard: Default::default(),
            search_edit: Default::default(),
            focus_search: false,
            notice: None,
            queue: Vec::new(),
            last_query: None,
            head_refresh_due: None,
            title: String::new(),
            state,
            options,
        };
        if let Some(needle) = app.options.open.clone() {
            app.queue(ConsoleCommand::OpenIntent(needle));
        } else if let Some(id) = app.state.open_intent.clone() {
            app.queue(ConsoleCommand::OpenIntent(id));
        }
        app
    }

    /// Unix milliseconds now, as the views show ages and deadlines.
    pub fn now_ms(&self) -> u64 {
        self.clock.now_ms()
    }

    /// Queue a command; it is applied at the start of the next frame.
    pub fn queue(&mut self, command: ConsoleCommand) {
        self.queue.push(command);
    }

    /// Apply every queued command, once.
    fn apply_commands(&mut self, ctx: &egui::Context) {
        for command in std::mem::take(&mut self.queue) {
            match command {
                ConsoleCommand::Refresh => {
                    self.last_query = None;
                    self.request_detail();
                }
                ConsoleCommand::TogglePalette => self.palette.toggle(),
                ConsoleCommand::FocusSearch => self.focus_search = true,
                ConsoleCommand::ClearFilters => {
                    self.state.filters = Filters {
                        sort: self.state.filters.sort.clone(),
                        ..Filters::default()
                    };
                    self.search_text.clear();
                }
                ConsoleCommand::ShowIntents => self.state.tab = Tab::Intents,
                ConsoleCommand::ShowDashboard => self.state.tab = Tab::Dashboard,
                ConsoleCommand::SwitchLocale => {
                    self.state.locale = match self.state.locale {
                        Locale::EnUs => Locale::FaIr,
                        Locale::FaIr => Locale::EnUs,
                    };
                    self.i18n = Localizer::new(self.state.locale);
                    ctx.request_repaint();
                }
                ConsoleCommand::OpenIntent(needle) => {
                    let needle = needle.trim().to_string();
                    if needle.starts_with("int_") {
                        self.open_intent(&needle);
                    } else if !needle.is_empty() {
                        self.worker.send(Request::Resolve { needle });
                    }
                }
                ConsoleCommand::CloseIntent => {
                    self.open = None;
                    self.state.open_intent = None;
                }
                ConsoleCommand::ApplyView(filters) | ConsoleCommand::SetFilters(filters) => {
                    self.search_text = filters.q.clone();
                    self.state.filters = filters;
                }
                ConsoleCommand::SaveCurrentView => {
                    let name = format!(
                        "{} {}",
                        self.i18n.tr("views-saved-name"),
                        self.state.views.len() + 1
                    );
                    self.state.views.push(SavedView {
                        name,
                        filters: self.state.filters.clone(),
                    });
                }
                ConsoleCommand::LoadMore => self.load_more(),
                ConsoleCommand::ExportIntent | ConsoleCommand::ExportTable => {
                    let (kind, id) = match command {
                        ConsoleCommand::ExportIntent => (
                            views::export::ExportKind::Intent,
                            self.open.as_ref().map(|o| o.id.clone()),
                        ),
                        _ => (views::export::ExportKind::Table, None),
                    };
                    let now = self.now_ms();
                    self.intent_view.export.open(kind, id.as_deref(), now);
                }
                ConsoleCommand::StartCommand(kind) => self.start_command(kind),
            }
        }
    }

    /// Open the dialog of `kind` on the open intent, if it may be started now (the same
    /// rule that enables the panel's buttons).
    fn start_command(&mut self, kind: crate::domain::CommandKind) {
        let Some(detail) = self.open.as_ref().and_then(|o| o.detail.as_ref()) else {
            return;
        };
        let allowed = views::command_dialog::availability(
            &self.i18n,
            kind,
            detail,
            self.intent_view.whoami(),
        );
        if allowed.is_ok() && self.intent_view.dialog.is_none() {
            self.intent_view.dialog = Some(views::command_dialog::CommandDialog::new(kind, detail));
        }
    }

    fn open_intent(&mut self, id: &str) {
        self.open = Some(OpenIntent {
            id: id.to_string(),
            detail: None,
            error: None,
            loading: true,
            from_cache: false,
        });
        self.detail_refresh.restart();
        self.state.open_intent = Some(id.to_string());
        self.request_detail();
    }

    /// Ask for the open intent's detail now, or as soon as the answer on its way lands.
    fn request_detail(&mut self) {
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

    fn load_more(&mut self) {
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
    fn sync_query(&mut self) {
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
    fn take_replies(&mut self) {
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

    fn update_title(&mut self, ctx: &egui::Context) {
        let live = if self.options.offline {
            self.i18n.tr("topbar-status-offline")
        } else if self.live.connected {
            self.i18n.tr("topbar-status-live")
        } else {
            self.i18n.tr("topbar-status-stale")
        };
        let title = format!("intentdesk — {} — {live}", self.options.label);
        if title != self.title {
            ctx.send_viewport_cmd(egui::ViewportCommand::Title(title.clone()));
            self.title = title;
        }
    }

    /// Shortcuts become commands.
    fn read_shortcuts(&mut self, ctx: &egui::Context) {
        for command in ConsoleCommand::with_shortcuts() {
            // Escape closes the intent view's dialog first, not the intent.
            if command == ConsoleCommand::CloseIntent && self.intent_view.captures_escape() {
                continue;
            }
            if let Some(shortcut) = command.shortcut()
                && ctx.input_mut(|i| i.consume_shortcut(&shortcut))
            {
                self.queue(command);
            }
        }
    }
}

impl eframe::App for ConsoleApp {
    fn logic(&mut self, ctx: &egui::Context, _frame: &mut eframe::Frame) {
        self.take_replies();
        self.read_shortcuts(ctx);
        self.apply_commands(ctx);
        self.sync_query();
        self.update_title(ctx);
        if self.head_refresh_due.is_some() || !self.table.changed.is_empty() {
            ctx.request_repaint_after(Duration::from_millis(250));
        }
    }

    fn ui(&mut self, ui: &mut egui::Ui, _frame: &mut eframe::Frame) {
        let rtl = self.i18n.is_rtl();
        egui::Panel::top("top_bar").show(ui, |ui| views::top_bar::top_bar_ui(self, ui));
        egui::Panel::top("filters_bar").show(ui, |ui| views::filters_bar::filters_bar_ui(self, ui));
        if self.open.is_some() {
            let side = if rtl {
                egui::Panel::left("intent_panel")
            } else {
                egui::Panel::right("intent_panel")
            };
            side.resizable(true)
                .default_size(560.0)
                .show(ui, |ui| views::intent_panel::intent_panel_ui(self, ui));
        }
        egui::CentralPanel::default_margins().show(ui, |ui| match self.state.tab {
            Tab::Intents => views::intents_table::intents_table_ui(self, ui),
            Tab::Dashboard => views::dashboard::dashboard_ui(self, ui),
        });
        views::palette::palette_ui(self, ui);
        views::export::export_ui(self, ui);
    }

    fn save(&mut self, storage: &mut dyn eframe::Storage) {
        eframe::set_value(storage, APP_KEY, &self.state);
    }
}
