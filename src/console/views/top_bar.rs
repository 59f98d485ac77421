//! The top bar: where the console is connected, whether the data is live, the search box,
//! the saved views, the locale switch and the command palette.

use egui::RichText;

use super::format::{self, BidiHover, wt};
use crate::console::app::{ConsoleApp, Tab};
use crate::console::commands::ConsoleCommand;
use crate::console::text::{BidiTextEdit, Direction};
use crate::console::theme;
use crate::domain::Locale;

pub fn top_bar_ui(app: &mut ConsoleApp, ui: &mut egui::Ui) {
    let rtl = app.i18n.is_rtl();
    super::format::row(rtl, ui, |ui| {
        ui.strong("intentdesk");
        ui.label(RichText::new(&app.options.label).monospace())
            .on_hover_text(&app.options.coordinator_url);
        status_ui(app, ui);
        super::dashboard::threshold_badge_ui(app, ui);
        ui.separator();
        for (tab, key, command) in [
            (Tab::Intents, "view-intents", ConsoleCommand::ShowIntents),
            (
                Tab::Dashboard,
                "view-dashboard",
                ConsoleCommand::ShowDashboard,
            ),
        ] {
            let text = app.i18n.tr(key);
            let shown = wt(&app.i18n, ui, &text);
            let selected = app.state.tab == tab;
            if format::said(&app.i18n, &text, ui.selectable_label(selected, shown)).clicked() {
                app.queue(command);
            }
        }
        ui.separator();
        search_ui(app, ui);
        ui.separator();
        let views = app.state.views.clone();
        let views_title = app.i18n.tr("views-menu");
        let menu = ui.menu_button(wt(&app.i18n, ui, &views_title), |ui| {
            for view in views {
                if format::button(ui, &app.i18n, &view.name).clicked() {
                    app.queue(ConsoleCommand::ApplyView(view.filters.clone()));
                    ui.close();
                }
            }
            ui.separator();
            if format::button(ui, &app.i18n, &app.i18n.tr("command-save-view")).clicked() {
                app.queue(ConsoleCommand::SaveCurrentView);
                ui.close();
            }
        });
        format::said(&app.i18n, &views_title, menu.response);
        let other = match app.state.locale {
            Locale::EnUs => "فارسی",
            Locale::FaIr => "English",
        };
        let switch = format::button(ui, &app.i18n, other);
        if switch
            .bidi_hover(&app.i18n, &app.i18n.tr("command-switch-locale"))
            .clicked()
        {
            app.queue(ConsoleCommand::SwitchLocale);
        }
        if ui
            .button("Ctrl+K")
            .bidi_hover(&app.i18n, &app.i18n.tr("command-palette"))
            .clicked()
        {
            app.queue(ConsoleCommand::TogglePalette);
        }
    });
    if !app.options.offline && !app.live.connected && app.live.ever_connected {
        stale_banner_ui(app, ui);
    }
    if let Some(notice) = app.notice.clone() {
        ui.horizontal(|ui| {
            format::label_colored(ui, &app.i18n, &notice, theme::REJECTED);
            if ui.small_button("x").clicked() {
                app.notice = None;
            }
        });
    }
}

fn status_ui(app: &ConsoleApp, ui: &mut egui::Ui) {
    let since =
        super::format::duration_ms(&app.i18n, (app.now_ms() as i64) - app.live.since_ms as i64);
    let (color, text) = if app.options.offline {
        (theme::QUIET, app.i18n.tr("topbar-status-offline"))
    } else if app.live.connected {
        (theme::COMMITTED, app.i18n.tr("topbar-status-live"))
    } else if app.live.ever_connected {
        (theme::INDETERMINATE, app.i18n.tr("topbar-status-stale"))
    } else {
        (theme::QUIET, app.i18n.tr("topbar-status-connecting"))
    };
    format::label_colored(ui, &app.i18n, &text, color).bidi_hover(
        &app.i18n,
        &format!("{} {since}", app.i18n.tr("topbar-status-since")),
    );
}

fn stale_banner_ui(app: &ConsoleApp, ui: &mut egui::Ui) {
    let since =
        super::format::duration_ms(&app.i18n, (app.now_ms() as i64) - app.live.since_ms as i64);
    egui::Frame::new()
        .fill(theme::STALE_BANNER)
        .inner_margin(6.0)
        .show(ui, |ui| {
            ui.horizontal(|ui| {
                format::label_colored(
                    ui,
                    &app.i18n,
                    &format!("{} ({since})", app.i18n.tr("stale-banner")),
                    egui::Color32::WHITE,
                );
                if let Some(error) = &app.live.error {
                    format::label_colored(ui, &app.i18n, error, egui::Color32::LIGHT_GRAY);
                }
            });
        });
}

fn search_ui(app: &mut ConsoleApp, ui: &mut egui::Ui) {
    // The bidi editor: a Persian search reads joined and right to left while it is typed.
    let hint = app.i18n.tr("topbar-search-hint");
    let response = BidiTextEdit::new(&mut app.search_edit, &mut app.search_text, Direction::Auto)
        .hint(&hint)
        .desired_width(320.0)
        .id_salt("search")
        .show(ui);
    if app.focus_search {
        response.request_focus();
        app.search_edit.select_all(&app.search_text);
        app.focus_search = false;
    }
    let submitted = app.search_edit.take_submitted();
    if submitted || format::button(ui, &app.i18n, &app.i18n.tr("topbar-search")).clicked() {
        let text = app.search_text.trim().to_string();
        let mut filters = app.state.filters.clone();
        filters.q = text.clone();
        app.queue(ConsoleCommand::SetFilters(filters));
        // An intent id or action key opens that intent as well.
        if text.starts_with("int_") || text.split(':').count() == 3 {
            app.queue(ConsoleCommand::OpenIntent(text));
        }
    }
}
