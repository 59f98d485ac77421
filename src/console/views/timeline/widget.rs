//! The timeline widget: one canvas that reads the pointer and keys (pan, zoom, lanes,
//! selection), paints what is visible and says on hover what is under the pointer.

use egui::{EventFilter, Key, Modifiers, Rect, Response, Sense, Stroke, Ui, Vec2, vec2};

use super::geometry::{Geometry, HEADER_H, Hit, LANE_H, hit};
use super::model::TimelineModel;
use super::view::TimelineView;
use super::{hover, paint};
use crate::console::model::IntentDetail;
use crate::i18n::Localizer;

/// One key press zooms by this factor.
const KEY_ZOOM: f64 = 1.25;

/// Draw the timeline in the next `height` points of `ui`, full width.
pub fn timeline_ui(
    ui: &mut Ui,
    i18n: &Localizer,
    detail: &IntentDetail,
    model: &TimelineModel,
    view: &mut TimelineView,
    height: f32,
) -> Response {
    view.rtl = i18n.is_rtl();
    view.sync(model);
    let size = vec2(
        ui.available_width().max(240.0),
        height.max(HEADER_H + LANE_H * 2.0),
    );
    let (rect, response) = ui.allocate_exact_size(size, Sense::click_and_drag());
    response.widget_info(|| {
        egui::WidgetInfo::labeled(egui::Role::Canvas, true, i18n.tr("timeline-title"))
    });
    view.lanes_shown = Geometry::new(rect, view, model.label_chars).lanes_shown();
    read_input(ui, &response, model, view, rect);
    let geo = Geometry::new(rect, view, model.label_chars);
    if ui.is_rect_visible(rect) {
        paint::paint(ui, i18n, model, view, &geo, response.has_focus());
    }
    let hover = response.hover_pos().and_then(|pos| hit(model, &geo, pos));
    if let Some(pos) = response.hover_pos().filter(|p| geo.plot.contains(*p)) {
        // A hairline under the pointer, to read times off the axis.
        ui.painter().with_clip_rect(geo.plot).vline(
            pos.x,
            geo.rect.y_range(),
            Stroke::new(1.0, ui.visuals().weak_text_color().gamma_multiply(0.6)),
        );
    }
    if response.clicked()
        && let Some(Hit::Lane { lane, .. }) = hover
    {
        view.selected = Some(model.lanes[lane].attempt);
    }
    match hover {
        Some(hit) => {
            let t = response.hover_pos().map(|p| geo.t(p.x)).unwrap_or_default();
            response.on_hover_ui_at_pointer(|ui| hover::hover_ui(ui, i18n, detail, model, hit, t))
        }
        None => response,
    }
}

fn read_input(
    ui: &Ui,
    response: &Response,
    model: &TimelineModel,
    view: &mut TimelineView,
    rect: Rect,
) {
    let geo = Geometry::new(rect, view, model.label_chars);
    if response.clicked() || response.drag_started() {
        response.request_focus();
    }
    let focused = response.has_focus();
    if focused {
        ui.memory_mut(|m| {
            m.set_focus_lock_filter(
                response.id,
                EventFilter {
                    horizontal_arrows: true,
                    vertical_arrows: true,
                    tab: false,
                    escape: false,
                },
            )
        });
    }
    if response.hovered() {
        let (zoom, scroll, pointer) =
            ui.input(|i| (i.zoom_delta(), i.smooth_scroll_delta, i.pointer.hover_pos()));
        let around = pointer.map_or((view.t0 + view.t1) / 2.0, |p| geo.t(p.x));
        if zoom != 1.0 {
            view.zoom(model, f64::from(zoom), around);
        } else {
            if scroll.x != 0.0 {
                view.pan(model, -f64::from(scroll.x) / geo.px_per_ms);
            }
            if scroll.y != 0.0 {
                view.scroll_lanes(model, -scroll.y / LANE_H);
            }
        }
        // The timeline took the wheel: nothing around it scrolls too.
        ui.ctx().input_mut(|i| i.smooth_scroll_delta = Vec2::ZERO);
    }
    if response.dragged() {
        let d = response.drag_delta();
        view.pan(model, -f64::from(d.x) / geo.px_per_ms);
        view.scroll_lanes(model, -d.y / LANE_H);
    }
    let nothing_else_focused = ui.memory(|m| m.focused().is_none());
    if focused || (response.hovered() && nothing_else_focused) {
        let width = view.t1 - view.t0;
        let center = (view.t0 + view.t1) / 2.0;
        let page = geo.lanes_shown().floor().max(1.0);
        let pressed = |keys: &[Key]| {
            // Every alias is consumed, so none of them reaches another widget.
            ui.ctx().input_mut(|i| {
                let mut any = false;
                for key in keys {
                    any |= i.consume_key(Modifiers::NONE, *key);
                }
                any
            })
        };
        if pressed(&[Key::Plus, Key::Equals, Key::W]) {
            view.zoom(model, KEY_ZOOM, center);
        }
        if pressed(&[Key::Minus, Key::S]) {
            view.zoom(model, 1.0 / KEY_ZOOM, center);
        }
        if pressed(&[Key::ArrowLeft, Key::A]) {
            view.pan(model, -width * 0.1);
        }
        if pressed(&[Key::ArrowRight, Key::D]) {
            view.pan(model, width * 0.1);
        }
        if pressed(&[Key::ArrowUp]) {
            view.scroll_lanes(model, -1.0);
        }
        if pressed(&[Key::ArrowDown]) {
            view.scroll_lanes(model, 1.0);
        }
        if pressed(&[Key::PageUp]) {
            view.scroll_lanes(model, -page);
        }
        if pressed(&[Key::PageDown]) {
            view.scroll_lanes(model, page);
        }
        if pressed(&[Key::Home]) {
            view.fit(model);
        }
        if pressed(&[Key::End]) {
            view.fit_span(model);
        }
    }
}
