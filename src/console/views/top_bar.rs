//! The top bar: where the console is connected, whether the data is live, the search box,
//! the saved views, the locale switch and the command palette.

use egui::RichText;

use super::dashboard::state::DashboardSettings;
use super::dashboard::threshold_badge_ui;
use super::format::{self, BidiHover, wt};
use crate::console::actions::{Actions, UiAction};
use crate::console::app::state::{ConsoleOptions, Live, Persisted, Tab};
use crate::console::commands::ConsoleCommand;
use crate::console::text::{BidiEditState, BidiTextEdit, Direction};
use crate::console::theme;
use crate::domain::Locale;
use crate::i18n::Localizer;
use crate::wire::Overview;

/// The search box's text, its caret and selection (it is a right-to-left-capable editor),
/// and whether it is to take the focus.
#[derive(Debug, Default)]
pub struct SearchBox {
    pub text: String,
    pub edit: BidiEditState,
    pub focus: bool,
}

/// What the top bar reads, and the search box it edits.
pub struct TopBarContext<'a> {
    pub i18n: &'a Localizer,
    pub options: &'a ConsoleOptions,
    /// The tab, the saved views, the locale and the filters.
    pub state: &'a Persisted,
    pub live: &'a Live,
    pub now_ms: u64,
    /// What the threshold badge watches.
    pub overview: Option<&'a Overview>,
    pub dashboard: &'a DashboardSettings,
    pub notice: Option<&'a str>,
    pub search: &'a mut SearchBox,
}

pub fn top_bar_ui(ui: &mut egui::Ui, mut cx: TopBarContext<'_>, actions: &mut Actions) {
    let rtl = cx.i18n.is_rtl();
    super::format::row(rtl, ui, |ui| {
        ui.strong("intentdesk");
        ui.label(RichText::new(&cx.options.label).monospace())
            .on_hover_text(&cx.options.coordinator_url);
        status_ui(&cx, ui);
        threshold_badge_ui(ui, cx.i18n, cx.overview, cx.dashboard, actions);
        ui.separator();
        for (tab, key, command) in [
            (Tab::Intents, "view-intents", ConsoleCommand::ShowIntents),
            (
                Tab::Dashboard,
                "view-dashboard",
                ConsoleCommand::ShowDashboard,
            ),
        ] {
            let text = cx.i18n.tr(key);
            let shown = wt(cx.i18n, ui, &text);
            let selected = cx.state.tab == tab;
            if format::said(cx.i18n, &text, ui.selectable_label(selected, shown)).clicked() {
                actions.command(command);
            }
        }
        ui.separator();
        search_ui(&mut cx, ui, actions);
        ui.separator();
        let views = cx.state.views.clone();
        let views_title = cx.i18n.tr("views-menu");
        let menu = ui.menu_button(wt(cx.i18n, ui, &views_title), |ui| {
            for view in views {
                if format::button(ui, cx.i18n, &view.name).clicked() {
                    actions.command(ConsoleCommand::ApplyView(view.filters.clone()));
                    ui.close();
                }
            }
            ui.separator();
            if format::button(ui, cx.i18n, &cx.i18n.tr("command-save-view")).clicked() {
                actions.command(ConsoleCommand::SaveCurrentView);
                ui.close();
            }
        });
        format::said(cx.i18n, &views_title, menu.response);
        let other = match cx.state.locale {
            Locale::EnUs => "فارسی",
            Locale::FaIr => "English",
        };
        let switch = format::button(ui, cx.i18n, other);
        if switch
            .bidi_hover(cx.i18n, &cx.i18n.tr("command-switch-locale"))
            .clicked()
        {
            actions.command(ConsoleCommand::SwitchLocale);
        }
        if ui
            .button("Ctrl+K")
            .bidi_hover(cx.i18n, &cx.i18n.tr("command-palette"))
            .clicked()
        {
            actions.command(ConsoleCommand::TogglePalette);
        }
    });
    if !cx.options.offline && !cx.live.connected && cx.live.ever_connected {
        stale_banner_ui(&cx, ui);
    }
    if let Some(notice) = cx.notice {
        ui.horizontal(|ui| {
            format::label_colored(ui, cx.i18n, notice, theme::REJECTED);
            if ui.small_button("x").clicked() {
                actions.push(UiAction::DismissNotice);
            }
        });
    }
}

fn status_ui(cx: &TopBarContext<'_>, ui: &mut egui::Ui) {
    let since = super::format::duration_ms(cx.i18n, (cx.now_ms as i64) - cx.live.since_ms as i64);
    let (color, text) = if cx.options.offline {
        (theme::QUIET, cx.i18n.tr("topbar-status-offline"))
    } else if cx.live.connected {
        (theme::COMMITTED, cx.i18n.tr("topbar-status-live"))
    } else if cx.live.ever_connected {
        (theme::INDETERMINATE, cx.i18n.tr("topbar-status-stale"))
    } else {
        (theme::QUIET, cx.i18n.tr("topbar-status-connecting"))
    };
    format::label_colored(ui, cx.i18n, &text, color).bidi_hover(
        cx.i18n,
        &format!("{} {since}", cx.i18n.tr("topbar-status-since")),
    );
}

fn stale_banner_ui(cx: &TopBarContext<'_>, ui: &mut egui::Ui) {
    let since = super::format::duration_ms(cx.i18n, (cx.now_ms as i64) - cx.live.since_ms as i64);
    egui::Frame::new()
        .fill(theme::STALE_BANNER)
        .inner_margin(6.0)
        .show(ui, |ui| {
            ui.horizontal(|ui| {
                format::label_colored(
                    ui,
                    cx.i18n,
                    &format!("{} ({since})", cx.i18n.tr("stale-banner")),
                    egui::Color32::WHITE,
                );
                if let Some(error) = &cx.live.error {
                    format::label_colored(ui, cx.i18n, error, egui::Color32::LIGHT_GRAY);
                }
            });
        });
}

fn search_ui(cx: &mut TopBarContext<'_>, ui: &mut egui::Ui, actions: &mut Actions) {
    // The bidi editor: a Persian search reads joined and right to left while it is typed.
    let hint = cx.i18n.tr("topbar-search-hint");
    let response = BidiTextEdit::new(&mut cx.search.edit, &mut cx.search.text, Direction::Auto)
        .hint(&hint)
        .desired_width(320.0)
        .id_salt("search")
        .show(ui);
    if cx.search.focus {
        response.request_focus();
        cx.search.edit.select_all(&cx.search.text);
        cx.search.focus = false;
    }
    let submitted = cx.search.edit.take_submitted();
    if submitted || format::button(ui, cx.i18n, &cx.i18n.tr("topbar-search")).clicked() {
        let text = cx.search.text.trim().to_string();
        let mut filters = cx.state.filters.clone();
        filters.q = text.clone();
        actions.command(ConsoleCommand::SetFilters(filters));
        // An intent id or action key opens that intent as well.
        if text.starts_with("int_") || text.split(':').count() == 3 {
            actions.command(ConsoleCommand::OpenIntent(text));
        }
    }
}
