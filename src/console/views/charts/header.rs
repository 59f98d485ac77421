//! The dashboard's header: the slicing, the threshold fields (each refusing what it cannot
//! take, in place, with the reason), and the tiles with the headline figures
//! (amplification, indeterminate count and ages, goodput by the hour, and the rest), red
//! where a threshold fired.

use super::cells::{percent, percent_to};
use crate::console::views::dashboard::state::{DashboardSettings, DashboardState, ThresholdField};
use crate::console::views::dashboard::thresholds::{Threshold, goodput_drop_pct};
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
    let layout = || {
        if i18n.is_rtl() {
            egui::Layout::right_to_left(egui::Align::Min)
        } else {
            egui::Layout::left_to_right(egui::Align::Min).with_main_wrap(true)
        }
    };
    let size = egui::vec2(ui.available_width(), ui.spacing().interact_size.y);
    ui.allocate_ui_with_layout(size, layout(), |ui| {
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
    ui.allocate_ui_with_layout(size, layout(), |ui| {
        let heading = ui.visuals().strong_text_color();
        ui.add(text::BidiLabel::new(&i18n.tr("dashboard-threshold-heading"), dir).color(heading));
        for t in Threshold::ALL {
            let field = dashboard.fields.entry(t).or_default();
            threshold_field_ui(ui, i18n, t, field, &mut settings);
        }
    });
    if settings != *current {
        *current = settings;
    }
}

/// The width of one threshold's label, field and reason.
const THRESHOLD_WIDTH: f32 = 215.0;

/// One threshold: its label, the field and, under it, the reason a typed value was
/// refused. A value the threshold accepts is in force as soon as it is typed; one it
/// refuses leaves the previous value in force. Off focus, a field that holds an accepted
/// value shows it again in the locale's digits.
fn threshold_field_ui(
    ui: &mut egui::Ui,
    i18n: &Localizer,
    t: Threshold,
    field: &mut ThresholdField,
    settings: &mut DashboardSettings,
) {
    let dir = i18n.direction();
    let align = if i18n.is_rtl() {
        egui::Align::Max
    } else {
        egui::Align::Min
    };
    let size = egui::vec2(THRESHOLD_WIDTH, ui.spacing().interact_size.y);
    ui.allocate_ui_with_layout(size, egui::Layout::top_down(align), |ui| {
        let label = ui.add(text::BidiLabel::new(&i18n.tr(t.label_key()), dir).wrap());
        let in_force = t.value(settings);
        let mut typed = field
            .text
            .clone()
            .unwrap_or_else(|| t.format(in_force, i18n));
        let response = text::BidiTextEdit::new(&mut field.edit, &mut typed, dir)
            .desired_width(90.0)
            .id_salt(("dashboard-threshold", t.id()))
            .show(ui)
            .labelled_by(label.id);
        if response.changed() {
            match t.parse(&typed) {
                Ok(v) => {
                    t.set(settings, v);
                    field.error = None;
                }
                Err(e) => field.error = Some(e),
            }
            field.text = Some(typed);
        }
        if !response.has_focus() && field.error.is_none() {
            field.text = None;
        }
        if let Some(e) = &field.error {
            let reason = e.message(t, t.value(settings), i18n);
            let shown = text::BidiLabel::new(&reason, dir)
                .color(theme::REJECTED)
                .wrap();
            format::said(i18n, &reason, ui.add(shown));
        }
    });
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
    let fires = |t: Threshold| settings.fires(o, t);
    let age = |s: u64| duration_ms(i18n, (s * 1000) as i64);
    let drop = goodput_drop_pct(o)
        .filter(|d| *d > 0.0)
        .map_or(String::new(), |d| {
            format!(" ({})", percent(i18n, -d / 100.0))
        });
    let mut tiles: Vec<(&str, String, bool)> = vec![
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
            fires(Threshold::AmplificationP99),
        ),
        // Lookups per intent, the reconciler's own amplification: shown once there are any.
        (
            "dashboard-tile-lookup-amplification",
            format!(
                "{} / {}",
                i18n.decimal(o.lookup_amplification_mean, 2),
                i18n.int(o.lookup_amplification_max as i64)
            ),
            false,
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
            fires(Threshold::OldestIndeterminate),
        ),
        (
            "dashboard-tile-committed",
            i18n.int(o.committed as i64),
            false,
        ),
        (
            "dashboard-tile-goodput-hour",
            format!(
                "{} / {}{drop}",
                i18n.int(o.committed_last_hour as i64),
                i18n.int(o.committed_previous_hour as i64)
            ),
            fires(Threshold::GoodputDrop),
        ),
        (
            "dashboard-tile-duplicates",
            i18n.int(o.duplicate_effects as i64),
            // Red on any duplicate, whatever the badge's threshold.
            o.duplicate_effects > 0 || fires(Threshold::Duplicates),
        ),
        (
            "dashboard-tile-late",
            format!(
                "{} ({})",
                i18n.int(o.late_results as i64),
                percent_to(i18n, o.late_result_rate, 1)
            ),
            fires(Threshold::LateResults),
        ),
        (
            "dashboard-tile-divergence",
            percent(i18n, o.failover_divergence),
            false,
        ),
    ];
    if o.lookups == 0 {
        tiles.retain(|(key, _, _)| *key != "dashboard-tile-lookup-amplification");
    }
    let dir = i18n.direction();
    // Frames do not wrap by themselves: measure each tile and break the row by hand, so in
    // a narrow window (or in Persian, whose words are wider) the tiles go on a second line
    // instead of past the edge.
    let value_font = egui::FontId::proportional(16.0);
    let body = egui::TextStyle::Body.resolve(ui.style());
    let frame = egui::Frame::group(ui.style());
    let chrome = frame.total_margin().sum().x;
    let gap = ui.spacing().item_spacing.x;
    let widths: Vec<f32> = tiles
        .iter()
        .map(|(key, value, _)| {
            let label = text::measure(ui, &i18n.tr(key), dir, &body);
            let value = text::measure(ui, value, dir, &value_font);
            label.max(value) + chrome
        })
        .collect();
    let available = ui.available_width();
    let mut lines: Vec<Vec<usize>> = vec![Vec::new()];
    let mut used = 0.0;
    for (k, w) in widths.iter().enumerate() {
        let line = lines.last_mut().expect("a line");
        if !line.is_empty() && used + gap + w > available {
            lines.push(vec![k]);
            used = *w;
        } else {
            used += if line.is_empty() { *w } else { gap + w };
            line.push(k);
        }
    }
    // In Persian each line runs from the right, first tile rightmost: laid out left to
    // right (frames inside a right-to-left layout take the whole width), reversed and
    // pushed to the right edge.
    let layout = egui::Layout::left_to_right(egui::Align::Min);
    for mut line in lines {
        let size = egui::vec2(available, ui.spacing().interact_size.y);
        let width: f32 = line.iter().map(|&k| widths[k]).sum::<f32>()
            + gap * line.len().saturating_sub(1) as f32;
        let rtl = i18n.is_rtl();
        if rtl {
            line.reverse();
        }
        ui.allocate_ui_with_layout(size, layout, |ui| {
            if rtl {
                ui.add_space((available - width - gap).max(0.0));
            }
            for k in line {
                let (key, value, alarm) = &tiles[k];
                frame.show(ui, |ui| {
                    ui.vertical(|ui| {
                        text::rtl_label(ui, &i18n.tr(key), dir);
                        let color = if *alarm {
                            theme::THRESHOLD
                        } else {
                            ui.visuals().strong_text_color()
                        };
                        ui.add(
                            text::BidiLabel::new(value, dir)
                                .font(value_font.clone())
                                .color(color),
                        );
                    });
                });
            }
        });
    }
}
