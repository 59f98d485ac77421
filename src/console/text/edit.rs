//! A single-line text input that shows Persian, English and mixed text in the right order.
//!
//! The text is always stored in logical order. The caret is a logical position: typing,
//! Backspace and Delete act at it, and the arrow keys move it one grapheme at a time in
//! logical order, mapped to the base direction (with a right-to-left base, Right moves
//! toward the logical start, which lies on the right). The text is drawn through
//! [`layout_job`] and the caret at the visual position of its logical position: the
//! trailing edge of the grapheme before it, so it follows what was just typed in either
//! direction. Inside an embedded left-to-right run (an id in a Persian search) the caret
//! therefore moves against the arrow, as in editors that move logically; it never jumps to
//! a place that is not next in the text. IME composition (preedit) text is not shown; the
//! committed text is inserted.

use std::ops::Range;

use egui::output::IMEOutput;
use egui::{
    AsIdSalt, Color32, CursorIcon, Event, EventFilter, FontId, IdSalt, ImeEvent, Key, Modifiers,
    Rect, Response, Sense, Stroke, StrokeKind, TextStyle, Ui, WidgetInfo, pos2, vec2,
};
use unicode_segmentation::UnicodeSegmentation;

use super::layout::layout_job;
use crate::i18n::bidi::{self, Direction, Piece};

/// Caret, selection and scroll of one [`BidiTextEdit`]; kept by the view that owns the text.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BidiEditState {
    /// Byte offset of the caret in the logical text, on a grapheme boundary.
    cursor: usize,
    /// The other end of the selection, if any.
    anchor: Option<usize>,
    /// How far the text is scrolled inside the field, in points.
    scroll: f32,
    /// Enter ended the edit (the field gives up focus on Enter, so the owner cannot tell
    /// from the focus afterwards); see [`BidiEditState::take_submitted`].
    submitted: bool,
}

impl BidiEditState {
    /// The caret's byte offset in the logical text.
    pub fn cursor(&self) -> usize {
        self.cursor
    }

    /// Puts the caret at byte offset `at` (moved back to a grapheme boundary of `text`).
    pub fn set_cursor(&mut self, text: &str, at: usize) {
        self.cursor = at;
        self.anchor = None;
        self.clamp(text);
    }

    /// The selected logical byte range, if anything is selected.
    pub fn selection(&self) -> Option<Range<usize>> {
        let anchor = self.anchor?;
        (anchor != self.cursor).then(|| anchor.min(self.cursor)..anchor.max(self.cursor))
    }

    /// Whether Enter ended the edit since the last call.
    pub fn take_submitted(&mut self) -> bool {
        std::mem::take(&mut self.submitted)
    }

    /// Selects the whole text.
    pub fn select_all(&mut self, text: &str) {
        self.anchor = Some(0);
        self.cursor = text.len();
    }

    /// Keeps the caret and anchor inside `text` and on grapheme boundaries, for when the
    /// text was changed by someone else.
    fn clamp(&mut self, text: &str) {
        self.cursor = boundary_at_or_before(text, self.cursor);
        self.anchor = self.anchor.map(|a| boundary_at_or_before(text, a));
    }

    /// Types `input` at the caret, replacing the selection. This is a single-line field:
    /// line breaks and tabs become spaces, other control characters are dropped.
    pub fn insert(&mut self, text: &mut String, input: &str) {
        let clean: String = input
            .chars()
            .filter_map(|c| match c {
                '\n' | '\r' | '\t' => Some(' '),
                c if c.is_control() => None,
                c => Some(c),
            })
            .collect();
        self.delete_selection(text);
        text.insert_str(self.cursor, &clean);
        self.cursor += clean.len();
    }

    /// Deletes the selection, or the grapheme before the caret.
    pub fn backspace(&mut self, text: &mut String) {
        if !self.delete_selection(text) {
            let start = previous_boundary(text, self.cursor);
            text.replace_range(start..self.cursor, "");
            self.cursor = start;
        }
    }

    /// Deletes the selection, or the grapheme after the caret.
    pub fn delete(&mut self, text: &mut String) {
        if !self.delete_selection(text) {
            let end = next_boundary(text, self.cursor);
            text.replace_range(self.cursor..end, "");
        }
    }

    /// Moves the caret one grapheme forward (`forward`) or back in logical order; with
    /// `extend`, the selection grows instead of collapsing.
    pub fn step(&mut self, text: &str, forward: bool, extend: bool) {
        if !extend && let Some(selection) = self.selection() {
            self.cursor = if forward {
                selection.end
            } else {
                selection.start
            };
            self.anchor = None;
            return;
        }
        let to = if forward {
            next_boundary(text, self.cursor)
        } else {
            previous_boundary(text, self.cursor)
        };
        self.move_to(to, extend);
    }

    /// Moves the caret to byte offset `to`, extending the selection or dropping it.
    pub fn move_to(&mut self, to: usize, extend: bool) {
        if extend {
            self.anchor.get_or_insert(self.cursor);
        } else {
            self.anchor = None;
        }
        self.cursor = to;
    }

    fn delete_selection(&mut self, text: &mut String) -> bool {
        let Some(selection) = self.selection() else {
            self.anchor = None;
            return false;
        };
        text.replace_range(selection.clone(), "");
        self.cursor = selection.start;
        self.anchor = None;
        true
    }
}

fn boundary_at_or_before(text: &str, at: usize) -> usize {
    let at = at.min(text.len());
    grapheme_boundaries(text)
        .take_while(|&b| b <= at)
        .last()
        .unwrap_or(0)
}

fn next_boundary(text: &str, at: usize) -> usize {
    grapheme_boundaries(text)
        .find(|&b| b > at)
        .unwrap_or(text.len())
}

fn previous_boundary(text: &str, at: usize) -> usize {
    grapheme_boundaries(text)
        .take_while(|&b| b < at)
        .last()
        .unwrap_or(0)
}

/// Every grapheme boundary of `text`, 0 and `text.len()` included.
fn grapheme_boundaries(text: &str) -> impl Iterator<Item = usize> + '_ {
    text.grapheme_indices(true)
        .map(|(i, _)| i)
        .chain(std::iter::once(text.len()))
}

/// Shorthand for [`BidiTextEdit::new`]`(state, text, base).show(ui)`.
pub fn bidi_text_edit(
    ui: &mut Ui,
    state: &mut BidiEditState,
    text: &mut String,
    base: Direction,
) -> Response {
    BidiTextEdit::new(state, text, base).show(ui)
}

/// A single-line editor for logical-order text; see the module documentation.
#[must_use = "show it with `.show(ui)`"]
pub struct BidiTextEdit<'a> {
    state: &'a mut BidiEditState,
    text: &'a mut String,
    base: Direction,
    hint: &'a str,
    desired_width: Option<f32>,
    id_salt: Option<IdSalt>,
}

impl<'a> BidiTextEdit<'a> {
    /// An editor of `text` with caret state `state` and paragraph direction `base`.
    pub fn new(state: &'a mut BidiEditState, text: &'a mut String, base: Direction) -> Self {
        Self {
            state,
            text,
            base,
            hint: "",
            desired_width: None,
            id_salt: None,
        }
    }

    /// Text shown, dimmed, while the field is empty.
    pub fn hint(mut self, hint: &'a str) -> Self {
        self.hint = hint;
        self
    }

    /// The field's width; the available width by default.
    pub fn desired_width(mut self, width: f32) -> Self {
        self.desired_width = Some(width);
        self
    }

    /// A stable id, for fields whose position in the layout may change.
    pub fn id_salt(mut self, salt: impl AsIdSalt) -> Self {
        self.id_salt = Some(IdSalt::new(salt));
        self
    }

    /// Handles this frame's input and draws the field.
    pub fn show(self, ui: &mut Ui) -> Response {
        let font = TextStyle::Body.resolve(ui.style());
        let margin = ui.spacing().button_padding;
        let row_height = ui.painter().fonts_mut(|f| f.row_height(&font));
        let width = self.desired_width.unwrap_or_else(|| ui.available_width());
        let size = vec2(width, row_height + 2.0 * margin.y);
        let (auto_id, rect) = ui.allocate_space(size);
        let id = self
            .id_salt
            .map_or(auto_id, |salt| ui.make_persistent_id(salt));
        let mut response = ui.interact(rect, id, Sense::click_and_drag());
        let inner = rect.shrink2(margin);

        let state = self.state;
        let text = self.text;
        state.clamp(text);
        let before = text.clone();
        // An empty field takes its direction from the hint, so the caret starts where
        // typing will.
        let base = self
            .base
            .resolve(if text.is_empty() { self.hint } else { text });

        if response.clicked() || response.drag_started() {
            response.request_focus();
        }
        if response.has_focus() {
            ui.memory_mut(|m| {
                m.set_focus_lock_filter(
                    id,
                    EventFilter {
                        horizontal_arrows: true,
                        vertical_arrows: false,
                        tab: false,
                        escape: false,
                    },
                );
            });
            handle_events(ui, &response, state, text, base);
        }
        let base = self
            .base
            .resolve(if text.is_empty() { self.hint } else { text });

        let geometry = Geometry::new(ui, text, base, &font);
        let text_left = inner.left() + geometry.origin(inner, state.scroll);
        let hit = |x: f32| geometry.nearest_position(ui, text, &font, x - text_left);
        if let Some(pointer) = response.interact_pointer_pos() {
            if response.drag_started() {
                let press = ui.input(|i| i.pointer.press_origin()).unwrap_or(pointer);
                state.move_to(hit(press.x), false);
                state.move_to(hit(pointer.x), true);
            } else if response.dragged() {
                state.move_to(hit(pointer.x), true);
            } else if response.clicked() {
                state.move_to(hit(pointer.x), ui.input(|i| i.modifiers.shift));
            }
        }
        let caret_x = geometry.x_of(ui, text, &font, state.cursor);
        state.scroll = geometry.scroll_to_show(caret_x, inner.width(), state.scroll);

        if *text != before {
            response.mark_changed();
        }
        if ui.is_rect_visible(rect) {
            paint(
                ui, &response, rect, inner, &geometry, state, text, self.hint, &font, caret_x,
            );
        }
        if response.has_focus() {
            let origin = geometry.origin(inner, state.scroll);
            let x = inner.left() + origin + caret_x;
            let cursor_rect =
                Rect::from_min_max(pos2(x, inner.top()), pos2(x + 1.0, inner.bottom()));
            ui.output_mut(|o| {
                o.ime = Some(IMEOutput {
                    purpose: Default::default(),
                    rect,
                    cursor_rect,
                    should_interrupt_composition: false,
                });
            });
        }
        let hint = self.hint;
        response.widget_info(|| WidgetInfo::text_edit(ui.is_enabled(), &before, &*text, hint));
        response.on_hover_cursor(CursorIcon::Text)
    }
}

fn handle_events(
    ui: &Ui,
    response: &Response,
    state: &mut BidiEditState,
    text: &mut String,
    base: Direction,
) {
    let events = ui.input(|i| i.events.clone());
    for event in events {
        match event {
            Event::Text(input) | Event::Ime(ImeEvent::Commit(input)) | Event::Paste(input) => {
                state.insert(text, &input);
            }
            Event::Copy => copy_selection(ui, state, text),
            Event::Cut => {
                copy_selection(ui, state, text);
                if state.selection().is_some() {
                    state.backspace(text);
                }
            }
            Event::Key {
                key,
                pressed: true,
                modifiers,
                ..
            } => handle_key(ui, response, state, text, base, key, modifiers),
            _ => {}
        }
    }
}

fn handle_key(
    ui: &Ui,
    response: &Response,
    state: &mut BidiEditState,
    text: &mut String,
    base: Direction,
    key: Key,
    modifiers: Modifiers,
) {
    let rtl = base == Direction::Rtl;
    let extend = modifiers.shift;
    match key {
        Key::ArrowRight => state.step(text, !rtl, extend),
        Key::ArrowLeft => state.step(text, rtl, extend),
        Key::Home => state.move_to(0, extend),
        Key::End => state.move_to(text.len(), extend),
        Key::Backspace => state.backspace(text),
        Key::Delete => state.delete(text),
        Key::A if modifiers.command => state.select_all(text),
        Key::Enter => {
            state.submitted = true;
            ui.memory_mut(|m| m.surrender_focus(response.id));
        }
        Key::Escape => ui.memory_mut(|m| m.surrender_focus(response.id)),
        _ => {}
    }
}

fn copy_selection(ui: &Ui, state: &BidiEditState, text: &str) {
    if let Some(selection) = state.selection() {
        ui.ctx().copy_text(text[selection].to_owned());
    }
}

/// Where the pieces of the text lie, in points from the left end of the laid-out text.
struct Geometry {
    pieces: Vec<Piece>,
    /// Left edge of each piece.
    lefts: Vec<f32>,
    widths: Vec<f32>,
    total: f32,
    /// The resolved paragraph direction, `Ltr` or `Rtl`.
    base: Direction,
}

impl Geometry {
    fn new(ui: &Ui, text: &str, base: Direction, font: &FontId) -> Self {
        let pieces = bidi::visual_runs(text, base);
        let widths: Vec<f32> = pieces
            .iter()
            .map(|p| measure_plain(ui, &p.text, font))
            .collect();
        let mut lefts = Vec::with_capacity(widths.len());
        let mut x = 0.0;
        for w in &widths {
            lefts.push(x);
            x += w;
        }
        Self {
            pieces,
            lefts,
            widths,
            total: x,
            base,
        }
    }

    /// The x of the caret at logical byte offset `at`: the trailing edge of the grapheme
    /// before it (so the caret follows what was just typed), or at the start of the text the
    /// leading edge of the first grapheme.
    fn x_of(&self, ui: &Ui, text: &str, font: &FontId, at: usize) -> f32 {
        let found = self
            .pieces
            .iter()
            .position(|p| p.logical.start < at && at <= p.logical.end)
            .or_else(|| self.pieces.iter().position(|p| p.logical.start == at))
            .or_else(|| self.pieces.iter().position(|p| p.logical.start > at));
        match found {
            Some(i) => self.x_in_piece(ui, text, font, i, at),
            None if self.base == Direction::Rtl => self.total,
            None => 0.0,
        }
    }

    /// The x of logical offset `at`, clamped into piece `i`. A piece in a right-to-left run
    /// reads from its right edge.
    fn x_in_piece(&self, ui: &Ui, text: &str, font: &FontId, i: usize, at: usize) -> f32 {
        let piece = &self.pieces[i];
        let at = at.clamp(piece.logical.start, piece.logical.end);
        let prefix = measure_plain(ui, &text[piece.logical.start..at], font);
        if piece.rtl {
            self.lefts[i] + self.widths[i] - prefix
        } else {
            self.lefts[i] + prefix
        }
    }

    /// The logical position whose caret lies nearest to `x`.
    fn nearest_position(&self, ui: &Ui, text: &str, font: &FontId, x: f32) -> usize {
        grapheme_boundaries(text)
            .map(|b| (b, (self.x_of(ui, text, font, b) - x).abs()))
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .map_or(0, |(b, _)| b)
    }

    /// Where the text starts relative to the inner rect's left edge.
    fn origin(&self, inner: Rect, scroll: f32) -> f32 {
        if self.total <= inner.width() {
            if self.base == Direction::Rtl {
                inner.width() - self.total
            } else {
                0.0
            }
        } else {
            -scroll
        }
    }

    /// The scroll that keeps the caret visible, changing `scroll` as little as possible.
    fn scroll_to_show(&self, caret_x: f32, visible: f32, scroll: f32) -> f32 {
        let max = (self.total - visible).max(0.0);
        let scroll = if caret_x < scroll {
            caret_x
        } else if caret_x > scroll + visible {
            caret_x - visible
        } else {
            scroll
        };
        scroll.clamp(0.0, max)
    }
}

/// The width of a string laid out as one piece (one shaping call).
fn measure_plain(ui: &Ui, text: &str, font: &FontId) -> f32 {
    let clean: String = text
        .chars()
        .filter(|&c| !bidi::is_bidi_control(c))
        .collect();
    if clean.is_empty() {
        return 0.0;
    }
    ui.painter()
        .layout_no_wrap(clean, font.clone(), Color32::PLACEHOLDER)
        .size()
        .x
}

#[expect(
    clippy::too_many_arguments,
    reason = "one drawing step, all from `show`"
)]
fn paint(
    ui: &Ui,
    response: &Response,
    rect: Rect,
    inner: Rect,
    geometry: &Geometry,
    state: &BidiEditState,
    text: &str,
    hint: &str,
    font: &FontId,
    caret_x: f32,
) {
    let visuals = ui.visuals();
    let focused = response.has_focus();
    let stroke = if focused {
        visuals.selection.stroke
    } else {
        ui.style().interact(response).bg_stroke
    };
    ui.painter().rect(
        rect,
        visuals.widgets.inactive.corner_radius,
        visuals.text_edit_bg_color(),
        stroke,
        StrokeKind::Inside,
    );
    let painter = ui.painter_at(inner.expand(1.0));
    let left = inner.left() + geometry.origin(inner, state.scroll);
    let row_height = ui.painter().fonts_mut(|f| f.row_height(font));
    let top = inner.center().y - row_height / 2.0;

    if text.is_empty() {
        if !hint.is_empty() {
            let job = layout_job(hint, geometry.base, font.clone(), visuals.weak_text_color());
            let galley = painter.layout_job(job);
            let x = if geometry.base == Direction::Rtl {
                inner.right() - galley.size().x
            } else {
                inner.left()
            };
            painter.galley(pos2(x, top), galley, visuals.weak_text_color());
        }
    } else {
        if let Some(selection) = state.selection() {
            for (i, piece) in geometry.pieces.iter().enumerate() {
                let start = selection.start.max(piece.logical.start);
                let end = selection.end.min(piece.logical.end);
                if start >= end {
                    continue;
                }
                let a = geometry.x_in_piece(ui, text, font, i, start);
                let b = geometry.x_in_piece(ui, text, font, i, end);
                let r = Rect::from_min_max(
                    pos2(left + a.min(b), top),
                    pos2(left + a.max(b), top + row_height),
                );
                painter.rect_filled(r, 0.0, visuals.selection.bg_fill);
            }
        }
        let color = visuals.text_color();
        let job = layout_job(text, geometry.base, font.clone(), color);
        painter.galley(pos2(left, top), painter.layout_job(job), color);
    }
    if focused {
        let x = left + caret_x;
        painter.line_segment(
            [pos2(x, top), pos2(x, top + row_height)],
            Stroke::new(
                visuals.text_cursor.stroke.width,
                visuals.text_cursor.stroke.color,
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typing_and_deleting_work_on_whole_graphemes() {
        let mut state = BidiEditState::default();
        let mut text = String::new();
        state.insert(&mut text, "می\u{200c}شود");
        assert_eq!(state.cursor(), text.len());
        state.step(&text, false, false);
        state.step(&text, false, false);
        state.step(&text, false, false);
        state.backspace(&mut text);
        assert_eq!(text, "مشود", "the ی and its joiner go together");
        state.delete(&mut text);
        assert_eq!(text, "مود");
    }

    #[test]
    fn a_selection_is_replaced_by_what_is_typed() {
        let mut state = BidiEditState::default();
        let mut text = "سفارش 1200".to_owned();
        state.set_cursor(&text, 0);
        for _ in 0..5 {
            state.step(&text, true, true);
        }
        assert_eq!(state.selection(), Some(0..10));
        state.insert(&mut text, "PO");
        assert_eq!(text, "PO 1200");
        assert_eq!(state.selection(), None);
    }

    #[test]
    fn pasted_lines_become_one_line() {
        let mut state = BidiEditState::default();
        let mut text = String::new();
        state.insert(&mut text, "a\nb\u{7}c");
        assert_eq!(text, "a bc");
    }

    #[test]
    fn a_cursor_set_inside_a_grapheme_moves_to_its_start() {
        let mut state = BidiEditState::default();
        state.set_cursor("ab", 99);
        assert_eq!(state.cursor(), 2);
        state.set_cursor("س", 1);
        assert_eq!(state.cursor(), 0);
    }

    #[test]
    fn the_caret_sits_where_the_logical_position_is_drawn() {
        let ctx = egui::Context::default();
        crate::console::text::fonts::install_fonts(&ctx);
        let mut output = ctx.run_ui(egui::RawInput::default(), |ui| {
            let font = FontId::proportional(20.0);
            let text = "سلام PO";
            let geometry = Geometry::new(ui, text, Direction::Rtl, &font);
            let po = measure_plain(ui, "PO", &font);
            let near = |a: f32, b: f32| (a - b).abs() < 0.5;
            // Drawn as [PO][ ][سلام]: the logical start is the right end of the line.
            assert!(near(geometry.x_of(ui, text, &font, 0), geometry.total));
            // After "PO" the caret follows the O, at the right edge of "PO".
            assert!(near(geometry.x_of(ui, text, &font, text.len()), po));
            // After "P", inside the left-to-right id.
            let after_p = geometry.x_of(ui, text, &font, text.len() - 1);
            assert!(after_p > 0.0 && after_p < po);
            // After the space, the caret is at the right edge of "PO" too (start of the run).
            let after_space = geometry.x_of(ui, text, &font, "سلام ".len());
            assert!(near(after_space, po), "{after_space} vs {po}");
        });
        // Font textures are not uploaded anywhere in this test.
        output.textures_delta.clear();
    }
}
