//! The dashboard: logical-outcome metrics plotted and sliced. (Being built.)

use serde_json::Value;

use crate::console::app::ConsoleApp;
use crate::console::client::ClientError;

/// What the dashboard keeps between frames.
#[derive(Debug, Default)]
pub struct DashboardState {}

impl DashboardState {
    /// An answer to a request tagged `dashboard:<tag>`.
    pub fn on_json(&mut self, _tag: &str, _result: Result<Value, ClientError>) {}
}

pub fn dashboard_ui(app: &mut ConsoleApp, ui: &mut egui::Ui) {
    ui.label(app.i18n.tr("view-dashboard"));
}
