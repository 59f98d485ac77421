//! The dashboard's header: the slicing and threshold controls, and the tiles with the
//! headline figures (amplification, indeterminate count and ages, and the rest).

use super::cells::percent;
use crate::console::views::dashboard::state::{DashboardSettings, DashboardState};
use crate::console::views::format::{self, duration_ms};
use crate::console::{text, theme};
use crate::i18n::Localizer;
use crate::wire::{GroupBy, Overview};

pub(crate) fn controls_ui(
    ui: &mut egui::Ui,
    i18n: &Localizer,
    current: &mut DashboardSettings,
    dashboard: &mut DashboardState,
) {
    let mut settings = current.clone();
    let dir = i18n.direction();
    // In Persian the controls run from the right; they fit one line, so no wrapping is needed.
    let layout = if i18n.is_rtl() {
        egui::Layout::right_to_left(egui::Align::Center)
    } else {
        egui::Layout::left_to_right(egui::Align::Center).with_main_wrap(true)
    };
    let size = egui::vec2(ui.available_width(), ui.spacing().interact_size.y);
    ui.allocate_ui_with_layout(size, layout, |ui| {
        let label = text::rtl_label(ui, &i18n.tr("dashboard-slice"), dir);
        let chosen = group_label(i18n, settings.group_by);
        egui::ComboBox::from_id_salt("dashboard-group-by")
            .selected_text(format::wt(i18n, ui, &chosen))
            .show_ui(ui, |ui| {
                for g in GroupBy::ALL {
                    let name = group_label(i18n, *g);
                    let shown = format::wt(i18n, ui, &name);
                    let choice = ui.selectable_value(&mut settings.group_by, *g, shown);
                    format::said(i18n, &name, choice);
                }
            })
            .response
            .labelled_by(label.id);
        ui.separator();
        let label = text::rtl_label(ui, &i18n.tr("dashboard-threshold-p99"), dir);
        ui.add(
            egui::DragValue::new(&mut settings.amplification_p99_max)
                .range(1.0..=50.0)
                .speed(0.1),
        )
        .labelled_by(label.id);
        let label = text::rtl_label(ui, &i18n.tr("dashboard-threshold-oldest"), dir);
        ui.add(egui::DragValue::new(&mut settings.oldest_indeterminate_max_mins).range(1..=10_000))
            .labelled_by(label.id);
        ui.separator();
        if format::button(ui, i18n, &i18n.tr("command-refresh")).clicked() {
            dashboard.refresh_now();
        }
        if dashboard.loading() {
            ui.spinner();
        }
        if let Some(e) = &dashboard.error {
            format::label_colored(ui, i18n, e, theme::REJECTED);
        }
    });
    if settings != *current {
        *current = settings;
    }
}

/// A wrapping row laid out left to right whatever the locale (callers order the items).
fn row_ui(ui: &mut egui::Ui, add: impl FnOnce(&mut egui::Ui)) {
    let layout = egui::Layout::left_to_right(egui::Align::Center).with_main_wrap(true);
    let size = egui::vec2(ui.available_width(), ui.spacing().interact_size.y);
    ui.allocate_ui_with_layout(size, layout, add);
}

fn group_label(i18n: &Localizer, g: GroupBy) -> String {
    i18n.tr(match g {
        GroupBy::None => "dashboard-slice-none",
        GroupBy::Tenant => "topbar-tenant",
        GroupBy::Provider => "topbar-provider",
        GroupBy::Release => "filter-release",
        GroupBy::Tool => "filter-tool",
        GroupBy::Operation => "filter-operation",
        GroupBy::Locale => "filter-locale",
        GroupBy::Tier => "filter-tier",
    })
}

pub(crate) fn tiles_ui(
    ui: &mut egui::Ui,
    i18n: &Localizer,
    overview: Option<&Overview>,
    settings: &DashboardSettings,
) {
    let Some(o) = overview else {
        return;
    };
    let (amp, old) = settings.crossed(o);
    let age = |s: u64| duration_ms(i18n, (s * 1000) as i64);
    let tiles: Vec<(&str, String, bool)> = vec![
        ("dashboard-tile-intents", i18n.int(o.intents as i64), false),
        (
            "dashboard-tile-attempts",
            i18n.int(o.attempts as i64),
            false,
        ),
        (
            "dashboard-tile-amplification",
            format!(
                "{} / {}",
                i18n.decimal(o.amplification_mean, 2),
                i18n.int(o.amplification_p99 as i64)
            ),
            amp,
        ),
        (
            "dashboard-tile-indeterminate",
            i18n.int(o.indeterminate as i64),
            false,
        ),
        (
            "dashboard-tile-age",
            format!(
                "{} / {} / {}",
                age(o.indeterminate_oldest_age_secs),
                age(o.indeterminate_p95_age_secs),
                age(o.indeterminate_p50_age_secs)
            ),
            old,
        ),
        (
            "dashboard-tile-committed",
            i18n.int(o.committed as i64),
            false,
        ),
        (
            "dashboard-tile-duplicates",
            i18n.int(o.duplicate_effects as i64),
            o.duplicate_effects > 0,
        ),
        (
            "dashboard-tile-late",
            i18n.int(o.late_results as i64),
            false,
        ),
        (
            "dashboard-tile-divergence",
            percent(i18n, o.failover_divergence),
            false,
        ),
    ];
    let dir = i18n.direction();
    let mut tiles = tiles;
    if i18n.is_rtl() {
        tiles.reverse();
    }
    row_ui(ui, |ui| {
        for (key, value, alarm) in tiles {
            egui::Frame::group(ui.style()).show(ui, |ui| {
                ui.vertical(|ui| {
                    text::rtl_label(ui, &i18n.tr(key), dir);
                    let color = if alarm {
                        theme::THRESHOLD
                    } else {
                        ui.visuals().strong_text_color()
                    };
                    ui.add(
                        text::BidiLabel::new(&value, dir)
                            .font(egui::FontId::proportional(16.0))
                            .color(color),
                    );
                });
            });
        }
    });
}
