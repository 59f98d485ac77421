//! The timeline of one intent, painted by hand (a trace viewer, not a chart): the time axis
//! from creation to the deadline and beyond, the intent's state row, the events row
//! (receipts, webhooks, operator commands), an overview strip that counts every attempt per
//! pixel column, and one lane per attempt with hedges grouped.
//!
//! Pan and zoom: Ctrl+wheel (or pinch) zooms around the pointer, the wheel scrolls lanes,
//! Shift+wheel and dragging pan; with the timeline focused or hovered, `+`/`-` (or W/S) zoom,
//! arrows (or A/D) pan, Page Up/Down page through lanes, Home fits everything. Hover shows
//! details; a click selects an attempt.
//!
//! A frame paints only what is visible: the lanes on screen, and marks merged per kind
//! where they fall within a few pixels ([`cull::clusters`]); the overview strip is one pass
//! over the lanes ([`cull::density`]). 10,000 attempts stay fluid. The time axis runs left
//! to right in both locales, as clocks and trace viewers do.
//!
//! The data is [`model`] (built by [`build`]); [`view`] is what the timeline keeps between
//! frames; [`widget`] reads input and calls the painters (`paint`, [`axis`], `lines`,
//! [`marks`]) and `hover`; [`legend`] explains the marks.

pub mod axis;
pub mod build;
mod colors;
pub mod cull;
mod geometry;
mod hover;
mod labels;
pub mod legend;
mod lines;
pub mod marks;
pub mod model;
mod paint;
pub mod view;
pub mod widget;

pub use geometry::LANE_H;
pub use legend::legend_ui;
pub use model::TimelineModel;
pub use view::TimelineView;
pub use widget::timeline_ui;
