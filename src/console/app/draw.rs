//! Drawing a frame: the panels in their places, each view given what it reads, its own
//! state and the frame's [`Actions`], never the app.

use super::ConsoleApp;
use super::state::Tab;
use crate::console::actions::Actions;
use crate::console::views::dashboard::{DashboardContext, dashboard_ui};
use crate::console::views::export::export_ui;
use crate::console::views::filters_bar::filters_bar_ui;
use crate::console::views::intent_panel::{IntentPanelContext, intent_panel_ui};
use crate::console::views::intents_table::{TableContext, intents_table_ui};
use crate::console::views::palette::{PaletteContext, palette_ui};
use crate::console::views::revisit_notice::revisit_notice_ui;
use crate::console::views::top_bar::{TopBarContext, top_bar_ui};

impl ConsoleApp {
    pub(super) fn draw(&mut self, ui: &mut egui::Ui, actions: &mut Actions) {
        let rtl = self.i18n.is_rtl();
        egui::Panel::top("top_bar").show(ui, |ui| self.draw_top_bar(ui, actions));
        // The gate-revisit notice, a strip of the top bar of its own while anything waits.
        let acknowledged = self.revisits_acknowledged();
        if !self.revisits.unacknowledged(acknowledged).is_empty() {
            egui::Panel::top("revisit_notice").show(ui, |ui| {
                revisit_notice_ui(ui, &self.i18n, &self.revisits, acknowledged, actions)
            });
        }
        egui::Panel::top("filters_bar").show(ui, |ui| {
            let now_ms = self.now_ms();
            filters_bar_ui(
                ui,
                &self.i18n,
                &self.state.filters,
                &self.seen,
                now_ms,
                actions,
            )
        });
        if self.open.is_some() {
            let side = if rtl {
                egui::Panel::left("intent_panel")
            } else {
                egui::Panel::right("intent_panel")
            };
            side.resizable(true)
                .default_size(560.0)
                .show(ui, |ui| self.draw_intent_panel(ui, actions));
        }
        egui::CentralPanel::default_margins().show(ui, |ui| match self.state.tab {
            Tab::Intents => self.draw_table(ui, actions),
            Tab::Dashboard => self.draw_dashboard(ui, actions),
        });
        self.draw_palette(ui, actions);
        export_ui(
            ui,
            &self.i18n,
            &mut self.intent_view.export,
            self.table.rows.len(),
            actions,
        );
    }

    /// The dashboard alone in `ui`, kept fresh and its actions applied, as the central
    /// panel shows it.
    pub fn dashboard_ui(&mut self, ui: &mut egui::Ui) {
        self.refresh_dashboard(ui.ctx());
        let mut actions = Actions::default();
        self.draw_dashboard(ui, &mut actions);
        self.handle(actions, ui.ctx());
    }

    fn draw_top_bar(&mut self, ui: &mut egui::Ui, actions: &mut Actions) {
        let now_ms = self.now_ms();
        let cx = TopBarContext {
            i18n: &self.i18n,
            options: &self.options,
            state: &self.state,
            live: &self.live,
            now_ms,
            overview: self.dashboard.overview.as_ref(),
            dashboard: &self.state.dashboard,
            notice: self.notice.as_deref(),
            search: &mut self.search,
        };
        top_bar_ui(ui, cx, actions);
    }

    fn draw_intent_panel(&mut self, ui: &mut egui::Ui, actions: &mut Actions) {
        let now_ms = self.now_ms();
        let Some(open) = self.open.as_ref() else {
            return;
        };
        let cx = IntentPanelContext {
            i18n: &self.i18n,
            open,
            view: &mut self.intent_view,
            now_ms,
            ids: &*self.entropy,
        };
        intent_panel_ui(ui, cx, actions);
    }

    fn draw_table(&mut self, ui: &mut egui::Ui, actions: &mut Actions) {
        let now_ms = self.now_ms();
        let cx = TableContext {
            i18n: &self.i18n,
            table: &mut self.table,
            filters: &self.state.filters,
            open_id: self.open.as_ref().map(|o| o.id.as_str()),
            now_ms,
        };
        intents_table_ui(ui, cx, actions);
    }

    fn draw_dashboard(&mut self, ui: &mut egui::Ui, actions: &mut Actions) {
        let now_ms = self.now_ms();
        let cx = DashboardContext {
            i18n: &self.i18n,
            now_ms,
            filters: &self.state.filters,
            settings: &mut self.state.dashboard,
            state: &mut self.dashboard,
        };
        dashboard_ui(ui, cx, actions);
    }

    fn draw_palette(&mut self, ui: &mut egui::Ui, actions: &mut Actions) {
        let cx = PaletteContext {
            i18n: &self.i18n,
            palette: &mut self.palette,
            detail: self.open.as_ref().and_then(|o| o.detail.as_ref()),
            dialog_open: self.intent_view.dialog.is_some(),
            who: self.intent_view.whoami(),
        };
        palette_ui(ui, cx, actions);
    }
}
