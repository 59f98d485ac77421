//! Why an agent's call (or a report's read) did not give a usable answer, after the
//! repeats that were safe to make.

/// Why a call could not be completed.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// The peer could not be reached, or kept failing, for longer than the patience allows.
    #[error("{what}: no answer from {peer} within {patience_secs} s ({detail})")]
    Unavailable {
        what: &'static str,
        peer: &'static str,
        patience_secs: u64,
        detail: String,
    },
    /// The request may have been sent but its answer was lost; it is not resent.
    #[error("{what}: the answer was lost after the request was sent ({detail})")]
    Lost { what: &'static str, detail: String },
    /// An answer the workload does not understand.
    #[error("{what}: unexpected answer {status}: {body}")]
    Unexpected {
        what: &'static str,
        status: u16,
        body: String,
    },
    /// The token may not do what the workload needs.
    #[error("{what}: the token was refused ({status}); {hint}")]
    Forbidden {
        what: &'static str,
        status: u16,
        hint: &'static str,
    },
    /// A URL could not be built.
    #[error("bad URL {url}: {detail}")]
    BadUrl { url: String, detail: String },
    /// A setting is not usable.
    #[error("{0}")]
    Invalid(String),
}

impl CallError {
    /// A short answer body for an error message: at most 300 characters.
    pub fn clip(body: &str) -> String {
        let mut out: String = body.chars().take(300).collect();
        if body.chars().count() > 300 {
            out.push('…');
        }
        out
    }
}
