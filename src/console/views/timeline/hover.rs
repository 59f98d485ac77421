//! What the timeline says on hover (an attempt, a mark or a cluster of marks, the state at
//! a moment, the attempts running in a pixel column).

use egui::Ui;

use super::cull::Cluster;
use super::geometry::Hit;
use super::model::{Mark, MarkKind, TimelineModel};
use crate::console::model::{IntentDetail, StateName};
use crate::console::theme;
use crate::console::views::format;
use crate::console::views::intent_widgets::{self, instant};
use crate::i18n::Localizer;

pub(super) fn hover_ui(
    ui: &mut Ui,
    i18n: &Localizer,
    detail: &IntentDetail,
    model: &TimelineModel,
    hit: Hit,
    t: f64,
) {
    let at = |ms: i64| instant(i18n, (model.origin_ms as i64 + ms).max(0) as u64);
    let strong = ui.visuals().strong_text_color();
    let say = |ui: &mut Ui, text: &str| {
        intent_widgets::say(ui, i18n, text);
    };
    match hit {
        Hit::Lane { lane, mark } => {
            let lane = &model.lanes[lane];
            let a = &detail.attempts[lane.attempt];
            ui.label(egui::RichText::new(&lane.label).monospace().color(strong));
            if let Some(m) = mark {
                say(ui, &i18n.tr(m.kind.label_key()));
            }
            let outcome = intent_widgets::tr_named(i18n, "timeline-outcome", a.outcome.as_str());
            let duration = format::duration_ms(i18n, lane.end_ms - lane.start_ms);
            say(ui, &format!("{outcome} · {duration}"));
            say(ui, &at(lane.start_ms));
            ui.label(egui::RichText::new(a.id.as_str()).monospace());
            if let Some(status) = a.http_status {
                ui.label(format!("HTTP {status}"));
            }
            for text in [&a.error_class, &a.detail].into_iter().flatten() {
                intent_widgets::user_say(ui, text);
            }
            if let Some(g) = lane.group.and_then(|g| model.groups.get(g)) {
                say(
                    ui,
                    &i18n.tr_args(
                        "timeline-hedge-group",
                        &[("group", format::isolate(i18n, &g.name).into())],
                    ),
                );
            }
            say(ui, &i18n.tr("timeline-click-to-select"));
        }
        Hit::State { band, mark } => {
            if let Some(b) = model.states.get(band) {
                let state = match &b.state {
                    StateName::Known(s) => i18n.tr(&format!("state-{}", s.as_str())),
                    StateName::Unknown(raw) => raw.clone(),
                };
                format::label_colored(ui, i18n, &state, theme::state_color(&b.state));
                say(ui, &at(b.from_ms));
            }
            if let Some(c) = mark {
                cluster_ui(ui, i18n, detail, model, c, &model.state_marks);
            }
        }
        Hit::Event(c) => cluster_ui(ui, i18n, detail, model, c, &model.event_marks),
        Hit::Overview { counts } => {
            say(ui, &at(t.round() as i64));
            let total: u32 = counts.iter().sum();
            say(
                ui,
                &i18n.tr_args("timeline-overview-count", &[("count", total.into())]),
            );
            for (k, key) in [
                "timeline-overview-succeeded",
                "timeline-overview-unknown",
                "timeline-overview-failed",
                "timeline-overview-other",
            ]
            .iter()
            .enumerate()
            {
                if counts[k] > 0 {
                    say(
                        ui,
                        &format!("{}: {}", i18n.tr(key), i18n.int(i64::from(counts[k]))),
                    );
                }
            }
        }
    }
}

fn cluster_ui(
    ui: &mut Ui,
    i18n: &Localizer,
    detail: &IntentDetail,
    model: &TimelineModel,
    c: Cluster,
    marks: &[Mark],
) {
    let Some(m) = marks.get(c.first) else { return };
    let say = |ui: &mut Ui, text: &str| {
        intent_widgets::say(ui, i18n, text);
    };
    say(ui, &i18n.tr(m.kind.label_key()));
    if c.count > 1 {
        say(
            ui,
            &i18n.tr_args("timeline-cluster", &[("count", c.count.into())]),
        );
    }
    say(
        ui,
        &instant(i18n, (model.origin_ms as i64 + m.at_ms).max(0) as u64),
    );
    match m.kind {
        MarkKind::Transition => {
            if let Some(t) = detail.transitions.get(m.source) {
                // A cancellation after a crossing leaves the state as it was: said in words.
                if t.event == "cancel" && t.from.as_deref() == Some(t.to.as_str()) {
                    say(ui, &i18n.tr("timeline-cancel-requested"));
                }
                ui.label(format!(
                    "{} -> {} ({})",
                    t.from.as_deref().unwrap_or("-"),
                    t.to,
                    t.event
                ));
                if let Some(reason) = &t.reason {
                    intent_widgets::user_say(ui, reason);
                }
                if let Some(cmd) = &t.command_id {
                    ui.label(egui::RichText::new(cmd).monospace());
                }
            }
        }
        MarkKind::Receipt | MarkKind::Webhook => {
            if let Some(r) = detail.receipts.get(m.source) {
                ui.label(egui::RichText::new(&r.downstream_id).monospace());
                ui.label(format!("{} · {}", r.source, r.id));
                if let Some(e) = &r.event_id {
                    ui.label(egui::RichText::new(e).monospace());
                }
            }
        }
        MarkKind::Command => {
            if let Some(cmd) = detail.commands.get(m.source) {
                let actor = format::isolate(i18n, &cmd.actor);
                say(
                    ui,
                    &format!("{} · {actor} ({}) · {}", cmd.kind, cmd.role, cmd.status),
                );
                if let Some(reason) = &cmd.reason {
                    intent_widgets::user_say(ui, reason);
                }
                ui.label(egui::RichText::new(&cmd.command_id).monospace());
            }
        }
        _ => {}
    }
}
