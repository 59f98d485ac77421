//! What happened in a world, step by step, for a failing seed's report.

use std::fmt::Write;

/// The lines of a world's history, each with its step.
#[derive(Debug, Clone, Default)]
pub struct History {
    step: u64,
    lines: Vec<(u64, String)>,
}

impl History {
    /// Lines noted from now on belong to `step`.
    pub fn begin(&mut self, step: u64) {
        self.step = step;
    }

    pub fn note(&mut self, line: String) {
        self.lines.push((self.step, line));
    }

    pub fn lines(&self) -> &[(u64, String)] {
        &self.lines
    }

    /// The history as text, one line per event.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for (step, line) in &self.lines {
            let _ = writeln!(out, "{step:>5}  {line}");
        }
        out
    }
}
