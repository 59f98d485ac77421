//! The filter bar: tenant and provider first (users filter by them first), then state,
//! tier, locale, operation, tool, release, paused, time range and minimum attempts; every
//! active filter shows as a removable chip.

use super::format::{self, BidiHover, wt};
use crate::console::actions::Actions;
use crate::console::app::state::Seen;
use crate::console::commands::ConsoleCommand;
use crate::console::filters::Filters;
use crate::domain::{ConsequenceTier, IntentState, Locale};
use crate::i18n::Localizer;
use crate::wire::FilterParam;

/// The bar over `current` filters, offering the values `seen` in data; a change asks for
/// the new filters.
pub fn filters_bar_ui(
    ui: &mut egui::Ui,
    i18n: &Localizer,
    current: &Filters,
    seen: &Seen,
    now_ms: u64,
    actions: &mut Actions,
) {
    let mut filters = current.clone();
    let rtl = i18n.is_rtl();
    super::format::row(rtl, ui, |ui| {
        multi_ui(
            i18n,
            ui,
            &i18n.tr("topbar-tenant"),
            &seen.tenants.iter().cloned().collect::<Vec<_>>(),
            &mut filters.tenants,
        );
        multi_ui(
            i18n,
            ui,
            &i18n.tr("topbar-provider"),
            &seen.providers.iter().cloned().collect::<Vec<_>>(),
            &mut filters.providers,
        );
        let states: Vec<(String, String)> = IntentState::ALL
            .iter()
            .map(|s| {
                (
                    s.as_str().to_string(),
                    i18n.tr(&format!("state-{}", s.as_str())),
                )
            })
            .collect();
        labelled_multi_ui(
            i18n,
            ui,
            &i18n.tr("filter-state"),
            &states,
            &mut filters.states,
        );
        let tiers: Vec<(String, String)> = ConsequenceTier::ALL
            .iter()
            .map(|t| {
                (
                    t.as_str().to_string(),
                    i18n.tr(&format!("tier-{}", t.as_str())),
                )
            })
            .collect();
        labelled_multi_ui(
            i18n,
            ui,
            &i18n.tr("filter-tier"),
            &tiers,
            &mut filters.tiers,
        );
        let locales: Vec<(String, String)> = Locale::ALL
            .iter()
            .map(|l| (l.as_str().to_string(), l.as_str().to_string()))
            .collect();
        labelled_multi_ui(
            i18n,
            ui,
            &i18n.tr("filter-locale"),
            &locales,
            &mut filters.locales,
        );
        multi_ui(
            i18n,
            ui,
            &i18n.tr("filter-operation"),
            &seen.operations.iter().cloned().collect::<Vec<_>>(),
            &mut filters.operations,
        );
        multi_ui(
            i18n,
            ui,
            &i18n.tr("filter-tool"),
            &seen.tools.iter().cloned().collect::<Vec<_>>(),
            &mut filters.tools,
        );
        multi_ui(
            i18n,
            ui,
            &i18n.tr("filter-release"),
            &seen.releases.iter().cloned().collect::<Vec<_>>(),
            &mut filters.releases,
        );
        let more = i18n.tr("filter-more");
        let shown = ui.menu_button(wt(i18n, ui, &more), |ui| {
            more_ui(i18n, now_ms, ui, &mut filters)
        });
        format::said(i18n, &more, shown.response);
        ui.separator();
        for chip in current.chips() {
            let label = format!("{}: {} x", i18n.tr(chip_key(chip.field)), chip.value);
            if format::button(ui, i18n, &label)
                .bidi_hover(i18n, &i18n.tr("filter-remove"))
                .clicked()
            {
                filters.remove(&chip);
            }
        }
        if !current.chips().is_empty() && link(ui, i18n, &i18n.tr("filter-clear")).clicked() {
            actions.command(ConsoleCommand::ClearFilters);
        }
    });
    if &filters != current {
        actions.command(ConsoleCommand::SetFilters(filters));
    }
}

fn multi_ui(
    i18n: &Localizer,
    ui: &mut egui::Ui,
    title: &str,
    values: &[String],
    selected: &mut Vec<String>,
) {
    let pairs: Vec<(String, String)> = values.iter().map(|v| (v.clone(), v.clone())).collect();
    labelled_multi_ui(i18n, ui, title, &pairs, selected);
}

/// A menu of checkboxes; `values` are (wire value, label).
fn labelled_multi_ui(
    i18n: &Localizer,
    ui: &mut egui::Ui,
    title: &str,
    values: &[(String, String)],
    selected: &mut Vec<String>,
) {
    let shown = if selected.is_empty() {
        title.to_string()
    } else {
        format!("{title} ({})", selected.len())
    };
    let title_shown = wt(i18n, ui, &shown);
    let menu = ui.menu_button(title_shown, |ui| {
        for (value, label) in values {
            let mut on = selected.contains(value);
            let text = wt(i18n, ui, label);
            if format::said(i18n, label, ui.checkbox(&mut on, text)).changed() {
                Filters::toggle(selected, value);
            }
        }
        for value in selected.clone() {
            if !values.iter().any(|(v, _)| v == &value) {
                let mut on = true;
                if ui.checkbox(&mut on, &value).changed() {
                    Filters::toggle(selected, &value);
                }
            }
        }
    });
    format::said(i18n, &shown, menu.response);
}

/// A link of text that may be Persian.
fn link(ui: &mut egui::Ui, i18n: &Localizer, text: &str) -> egui::Response {
    let shown = wt(i18n, ui, text);
    format::said(i18n, text, ui.link(shown))
}

/// A radio button of text that may be Persian.
fn radio(ui: &mut egui::Ui, i18n: &Localizer, selected: bool, text: &str) -> egui::Response {
    let shown = wt(i18n, ui, text);
    format::said(i18n, text, ui.radio(selected, shown))
}

fn more_ui(i18n: &Localizer, now_ms: u64, ui: &mut egui::Ui, filters: &mut Filters) {
    ui.horizontal(|ui| {
        format::label(ui, i18n, &i18n.tr("filter-min-attempts"));
        let mut min = filters.min_attempts.unwrap_or(0);
        if ui
            .add(egui::DragValue::new(&mut min).range(0..=50))
            .changed()
        {
            filters.min_attempts = (min > 0).then_some(min);
        }
    });
    ui.horizontal(|ui| {
        format::label(ui, i18n, &i18n.tr("filter-paused"));
        for (value, key) in [
            (None, "filter-any"),
            (Some(true), "filter-yes"),
            (Some(false), "filter-no"),
        ] {
            if radio(ui, i18n, filters.paused == value, &i18n.tr(key)).clicked() {
                filters.paused = value;
            }
        }
    });
    format::label(ui, i18n, &i18n.tr("topbar-time-range"));
    let now = now_ms;
    for (key, span_ms) in [
        ("range-15m", Some(15 * 60_000)),
        ("range-1h", Some(3_600_000)),
        ("range-24h", Some(86_400_000)),
        ("range-7d", Some(7 * 86_400_000)),
        ("range-all", None),
    ] {
        // The start is rounded to the minute so the query stays stable while it is chosen.
        let since = span_ms.map(|s: u64| (now - s) / 60_000 * 60_000);
        let selected = match (span_ms, filters.since_ms) {
            (None, None) => true,
            (Some(span), Some(start)) => now.saturating_sub(start).abs_diff(span) < 120_000,
            _ => false,
        };
        if radio(ui, i18n, selected, &i18n.tr(key)).clicked() {
            filters.since_ms = since;
            filters.until_ms = None;
        }
    }
}

/// The label id of a chip's filter.
fn chip_key(field: FilterParam) -> &'static str {
    match field {
        FilterParam::Tenant => "topbar-tenant",
        FilterParam::Provider => "topbar-provider",
        FilterParam::State => "filter-state",
        FilterParam::Tier => "filter-tier",
        FilterParam::Operation => "filter-operation",
        FilterParam::Tool => "filter-tool",
        FilterParam::Release => "filter-release",
        FilterParam::Locale => "filter-locale",
        FilterParam::Paused => "filter-paused",
        FilterParam::MinAttempts => "filter-min-attempts",
        FilterParam::Since => "filter-since",
        FilterParam::Until => "filter-until",
        FilterParam::Q => "filter-search",
    }
}
