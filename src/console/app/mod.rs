//! The console app: its struct and the `eframe::App` impl that runs one frame. A frame is
//! split along the same seams as the files here:
//!
//! - [`state`]: the plain data (options, what is remembered between runs, the open intent);
//! - `background.rs`: the worker's replies taken in, and the requests they call for;
//! - `refresh.rs`: what the views about to be drawn keep fresh;
//! - `draw.rs`: the panels, each view given only what it reads and an action queue;
//! - `handle.rs`: the queued [`ConsoleCommand`]s and the views' actions applied.

mod background;
mod draw;
mod handle;
mod refresh;
pub mod state;

use std::sync::Arc;
use std::time::{Duration, Instant};

pub use state::{ConsoleOptions, Live, OpenIntent, PAGE_SIZE, Persisted, Seen, Tab};

use crate::client::Client;
use crate::clock::{ManualClock, SharedClock, SharedEntropy, os_entropy, system_clock};
use crate::console::actions::Actions;
use crate::console::cache::Cache;
use crate::console::commands::ConsoleCommand;
use crate::console::table::TableData;
use crate::console::views::dashboard::DashboardState;
use crate::console::views::intent_view::IntentViewState;
use crate::console::views::palette::PaletteState;
use crate::console::views::revisit_notice::RevisitNotice;
use crate::console::views::top_bar::SearchBox;
use crate::console::worker::{OneInFlight, Worker};
use crate::console::{text, views};
use crate::i18n::Localizer;

const APP_KEY: &str = "intentdesk-console";
/// New intents announced by events refresh the first page at most this often.
const HEAD_REFRESH: Duration = Duration::from_secs(1);

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
    pub palette: PaletteState,
    /// The intent view's own state (timeline, commands); see `views/intent_view.rs`.
    pub intent_view: IntentViewState,
    /// The dashboard's own state; see `views/dashboard/state.rs`.
    pub dashboard: DashboardState,
    /// The top bar's search box.
    pub search: SearchBox,
    pub notice: Option<String>,
    /// The gate-revisit events and when they were asked for; see `views/revisit_notice.rs`.
    pub revisits: RevisitNotice,
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
        text::install_fonts(ctx);
        let mut state: Persisted = storage
            .and_then(|s| eframe::get_value(s, APP_KEY))
            .unwrap_or_default();
        state.last_coordinator_url = Some(options.coordinator_url.clone());
        let client = if options.offline {
            None
        } else {
            Client::with_ca(
                &options.coordinator_url,
                &options.token,
                options.ca_file.as_deref(),
            )
            .ok()
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
            search: SearchBox {
                text: state.filters.q.clone(),
                ..SearchBox::default()
            },
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
            notice: None,
            revisits: RevisitNotice::default(),
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

    /// The newest gate-revisit event acknowledged at this desk for this coordinator.
    pub fn revisits_acknowledged(&self) -> u64 {
        self.state
            .revisits_acknowledged
            .get(&self.options.coordinator_url)
            .copied()
            .unwrap_or(0)
    }

    /// Queue a command; it is applied at the start of the next frame.
    pub fn queue(&mut self, command: ConsoleCommand) {
        self.queue.push(command);
    }

    /// What the title bar says: where the console is connected and whether it is live.
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
        self.keep_shown_fresh(ui.ctx());
        let mut actions = Actions::default();
        self.draw(ui, &mut actions);
        self.handle(actions, ui.ctx());
    }

    fn save(&mut self, storage: &mut dyn eframe::Storage) {
        eframe::set_value(storage, APP_KEY, &self.state);
    }
}
