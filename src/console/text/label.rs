//! Labels of text that may be Persian: drawn in visual order, wrapped and truncated in
//! logical order, with a context menu that copies the logical string.

use std::sync::Arc;

use egui::{
    Color32, FontId, Galley, Id, Rect, Response, Role, Sense, TextStyle, Ui, Widget, WidgetInfo,
    pos2, vec2,
};

use super::layout::{layout_job, measure, widget_text};
use crate::i18n::bidi::{self, Direction};

/// Sets the word shown in every label's context menu (the console passes its `text-copy`
/// message when the locale changes).
pub fn set_copy_label(ctx: &egui::Context, label: impl Into<String>) {
    let label: String = label.into();
    ctx.data_mut(|d| d.insert_temp(copy_label_id(), label));
}

fn copy_label(ctx: &egui::Context) -> String {
    ctx.data(|d| d.get_temp::<String>(copy_label_id()))
        .unwrap_or_else(|| "Copy".to_owned())
}

fn copy_label_id() -> Id {
    Id::unique("intentdesk.text.copy_label")
}

/// A single-line (or `\n`-separated) label.
pub fn rtl_label(ui: &mut Ui, text: &str, base: Direction) -> Response {
    BidiLabel::new(text, base).ui(ui)
}

/// A label wrapped to the available width, lines broken in logical order.
pub fn rtl_label_wrapped(ui: &mut Ui, text: &str, base: Direction) -> Response {
    BidiLabel::new(text, base).wrap().ui(ui)
}

/// A one-line label cut at its logical end to fit the available width; the whole text is
/// shown on hover.
pub fn rtl_label_truncated(ui: &mut Ui, text: &str, base: Direction) -> Response {
    BidiLabel::new(text, base).truncate().ui(ui)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fit {
    Extend,
    Wrap,
    Truncate,
}

/// A non-selectable label drawn in visual order; see the module documentation.
#[must_use = "add it with `ui.add(label)`"]
pub struct BidiLabel<'a> {
    text: &'a str,
    base: Direction,
    font: Option<FontId>,
    color: Option<Color32>,
    fit: Fit,
}

impl<'a> BidiLabel<'a> {
    /// A label of `text` (logical order) with paragraph direction `base`.
    pub fn new(text: &'a str, base: Direction) -> Self {
        Self {
            text,
            base,
            font: None,
            color: None,
            fit: Fit::Extend,
        }
    }

    /// The font; the style's body font by default.
    pub fn font(mut self, font: FontId) -> Self {
        self.font = Some(font);
        self
    }

    /// The colour; the visuals' text colour by default.
    pub fn color(mut self, color: Color32) -> Self {
        self.color = Some(color);
        self
    }

    /// Wrap to the available width.
    pub fn wrap(mut self) -> Self {
        self.fit = Fit::Wrap;
        self
    }

    /// Cut to the available width, keeping the logical start.
    pub fn truncate(mut self) -> Self {
        self.fit = Fit::Truncate;
        self
    }
}

impl Widget for BidiLabel<'_> {
    fn ui(self, ui: &mut Ui) -> Response {
        let font = self
            .font
            .unwrap_or_else(|| TextStyle::Body.resolve(ui.style()));
        let color = self.color.unwrap_or_else(|| ui.visuals().text_color());
        let max_width = ui.available_width();
        // Lines broken out of one paragraph keep that paragraph's direction.
        let base = match self.fit {
            Fit::Extend => self.base,
            Fit::Wrap | Fit::Truncate => self.base.resolve(self.text),
        };
        let width_of = |line: &str| measure(ui, line, base, &font);
        let lines: Vec<String> = match self.fit {
            Fit::Extend => self
                .text
                .split('\n')
                .map(|l| l.strip_suffix('\r').unwrap_or(l).to_owned())
                .collect(),
            Fit::Wrap => bidi::wrap_lines(self.text, max_width, width_of),
            Fit::Truncate => vec![bidi::truncate_logical(self.text, max_width, width_of)],
        };
        let truncated =
            self.fit == Fit::Truncate && lines.first().map(String::as_str) != Some(self.text);
        let galleys: Vec<(Arc<Galley>, bool)> = lines
            .iter()
            .map(|line| {
                let job = layout_job(line, base, font.clone(), color);
                let rtl = base.resolve(line) == Direction::Rtl;
                (ui.painter().layout_job(job), rtl)
            })
            .collect();
        let width = galleys.iter().map(|(g, _)| g.size().x).fold(0.0, f32::max);
        let height: f32 = galleys.iter().map(|(g, _)| g.size().y).sum();
        let (rect, response) = ui.allocate_exact_size(vec2(width, height), Sense::click());
        if ui.is_rect_visible(rect) {
            paint_lines(ui, rect, &galleys, color);
        }
        let text = self.text.to_owned();
        response.widget_info(|| WidgetInfo::labeled(Role::Label, ui.is_enabled(), &text));
        response.context_menu(|ui| {
            let label = copy_label(ui.ctx());
            if ui
                .button(widget_text(ui, &label, Direction::Auto))
                .clicked()
            {
                ui.ctx().copy_text(text.clone());
                ui.close();
            }
        });
        if truncated {
            let (full, base) = (self.text, self.base);
            return response.on_hover_ui(|ui| {
                BidiLabel::new(full, base).wrap().ui(ui);
            });
        }
        response
    }
}

/// Paints galleys top to bottom, right-aligning right-to-left lines inside `rect`.
fn paint_lines(ui: &Ui, rect: Rect, galleys: &[(Arc<Galley>, bool)], color: Color32) {
    let mut y = rect.top();
    for (galley, rtl) in galleys {
        let x = if *rtl {
            rect.right() - galley.size().x
        } else {
            rect.left()
        };
        ui.painter().galley(pos2(x, y), galley.clone(), color);
        y += galley.size().y;
    }
}
