//! What the timeline says on hover (an attempt, a mark or a cluster of marks, the state at
//! a moment, the attempts running in a pixel column) and its legend.

use egui::{CornerRadius, Rect, Sense, Ui, vec2};

use super::format;
use super::intent_widgets::instant;
use super::timeline::Hit;
use super::timeline_model::{Cluster, Mark, MarkKind, Outcome, TimelineModel};
use super::timeline_paint::{paint_hatch, paint_mark};
use crate::console::model::{IntentDetail, StateName};
use crate::console::theme;
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
        super::intent_widgets::say(ui, i18n, text);
    };
    match hit {
        Hit::Lane { lane, mark } => {
            let lane = &model.lanes[lane];
            let a = &detail.attempts[lane.attempt];
            ui.label(egui::RichText::new(&lane.label).monospace().color(strong));
            if let Some(m) = mark {
                say(ui, &i18n.tr(m.kind.label_key()));
            }
            let outcome =
                super::intent_widgets::tr_named(i18n, "timeline-outcome", a.outcome.as_str());
            let duration = super::format::duration_ms(i18n, lane.end_ms - lane.start_ms);
            say(ui, &format!("{outcome} · {duration}"));
            say(ui, &at(lane.start_ms));
            ui.label(egui::RichText::new(a.id.as_str()).monospace());
            if let Some(status) = a.http_status {
                ui.label(format!("HTTP {status}"));
            }
            for text in [&a.error_class, &a.detail].into_iter().flatten() {
                say(ui, text);
            }
            if let Some(g) = lane.group.and_then(|g| model.groups.get(g)) {
                say(
                    ui,
                    &i18n.tr_args("timeline-hedge-group", &[("group", g.name.as_str().into())]),
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
        super::intent_widgets::say(ui, i18n, text);
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
                ui.label(format!(
                    "{} -> {} ({})",
                    t.from.as_deref().unwrap_or("-"),
                    t.to,
                    t.event
                ));
                if let Some(reason) = &t.reason {
                    say(ui, reason);
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
                ui.label(format!(
                    "{} · {} ({}) · {}",
                    cmd.kind, cmd.actor, cmd.role, cmd.status
                ));
                if let Some(reason) = &cmd.reason {
                    say(ui, reason);
                }
                ui.label(egui::RichText::new(&cmd.command_id).monospace());
            }
        }
        _ => {}
    }
}

/// The legend: every mark shape with its name, and the outcome colours.
pub fn legend_ui(ui: &mut Ui, i18n: &Localizer) {
    let halo = ui.visuals().extreme_bg_color;
    let swatch = |ui: &mut Ui, key: &str, paint: &dyn Fn(&egui::Painter, Rect)| {
        let text = super::intent_widgets::wt(i18n, ui, &i18n.tr(key));
        let galley = text.clone().into_galley(
            ui,
            Some(egui::TextWrapMode::Extend),
            f32::INFINITY,
            egui::TextStyle::Body,
        );
        // A swatch and its name stay on one line.
        let left = ui.max_rect().right() - ui.cursor().min.x;
        if left < galley.size().x + 24.0 {
            ui.end_row();
        }
        let (rect, _) = ui.allocate_exact_size(vec2(14.0, 12.0), Sense::hover());
        paint(ui.painter(), rect);
        ui.label(text);
        ui.add_space(6.0);
    };
    ui.horizontal_wrapped(|ui| {
        ui.spacing_mut().item_spacing.x = 4.0;
        for kind in MarkKind::ALL {
            swatch(ui, kind.label_key(), &|p, r| {
                paint_mark(p, r.center(), kind, halo)
            });
        }
        for (outcome, key) in [
            (Outcome::Succeeded, "timeline-outcome-succeeded"),
            (Outcome::Lost, "timeline-overview-unknown"),
            (Outcome::Failed, "timeline-outcome-failed"),
            (Outcome::Pending, "timeline-outcome-pending"),
        ] {
            swatch(ui, key, &|p, r| {
                p.rect_filled(
                    r.shrink2(vec2(0.0, 2.0)),
                    CornerRadius::same(2),
                    theme::outcome_color(outcome),
                );
            });
        }
        let hatch = ui.visuals().strong_text_color();
        swatch(ui, "state-paused", &|p, r| paint_hatch(p, r, hatch));
    });
    super::intent_widgets::say_colored(
        ui,
        i18n,
        &i18n.tr("timeline-help"),
        ui.visuals().weak_text_color(),
    );
}
