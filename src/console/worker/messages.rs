//! What the UI asks the worker for and what comes back, as types: each answer names the
//! request it answers by its variant and carries the generation or ticket the request
//! had, so the app routes it by matching, never by reading a tag.

use serde_json::Value;

use crate::client::ClientError;
use crate::console::model::{IntentDetail, IntentPage, IntentRow};
use crate::wire::{
    AttemptsHistogram, Chart, ChartMetric, CommandBody, Overview, RevisitPage, Whoami,
};

/// A query string, as pairs in the order they are sent.
pub type Query = Vec<(String, String)>;

/// What the UI asks for.
#[derive(Debug, Clone)]
pub enum Request {
    /// A page of intents; `generation` tells a stale answer from a current one.
    Page {
        generation: u64,
        query: Query,
        cursor: Option<String>,
    },
    /// One intent with everything attached; `ticket` comes back with the answer.
    Detail { id: String, ticket: u64 },
    /// Open an intent by id or action key.
    Resolve { needle: String },
    /// What the console's token is and may do.
    Whoami,
    /// One of the dashboard's figures for the question of `generation`.
    Dashboard {
        generation: u64,
        read: DashboardRead,
        query: Query,
    },
    /// An operator command; the body holds its command id.
    Command { body: CommandBody },
    /// The newest gate-revisit events.
    Revisits,
}

/// The figures the dashboard reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DashboardRead {
    /// One time-series chart.
    Chart(ChartMetric),
    /// Attempts per intent.
    Histogram,
    /// The headline figures, as of the query's `at`.
    Overview,
    /// The oldest indeterminate intents.
    Board,
}

impl DashboardRead {
    /// The endpoint that answers it.
    pub fn path(self) -> &'static str {
        match self {
            DashboardRead::Chart(_) => "/v1/metrics/chart",
            DashboardRead::Histogram => "/v1/metrics/histogram",
            DashboardRead::Overview => "/v1/metrics/overview",
            DashboardRead::Board => "/v1/intents",
        }
    }
}

/// A dashboard figure as read.
#[derive(Debug, Clone, PartialEq)]
pub enum DashboardAnswer {
    Chart(Chart),
    Histogram(AttemptsHistogram),
    Overview(Overview),
    Board(Vec<IntentRow>),
}

/// Why a dashboard figure could not be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MetricsError {
    #[error(transparent)]
    Call(#[from] ClientError),
    /// The coordinator answered with something that is not the figure asked for.
    #[error("the coordinator's metrics could not be read: {0}")]
    Unreadable(String),
}

/// What comes back.
#[derive(Debug, Clone)]
pub enum Reply {
    Page {
        generation: u64,
        appended: bool,
        result: Result<IntentPage, ClientError>,
        from_cache: bool,
    },
    Detail {
        id: String,
        ticket: u64,
        result: Result<Box<IntentDetail>, ClientError>,
        from_cache: bool,
    },
    Resolved {
        needle: String,
        result: Result<String, ClientError>,
    },
    Whoami {
        result: Result<Whoami, ClientError>,
    },
    Dashboard {
        generation: u64,
        read: DashboardRead,
        result: Result<DashboardAnswer, MetricsError>,
    },
    /// The answer to a command: the coordinator's record of it.
    Command {
        body: CommandBody,
        result: Result<Value, ClientError>,
    },
    /// The newest gate-revisit events.
    Revisits {
        result: Result<RevisitPage, ClientError>,
    },
    /// Intents changed, with their new rows where the event carried them.
    Changed {
        rows: Vec<IntentRow>,
        other_events: usize,
    },
    /// The event stream could not go on from where the console was (the coordinator no
    /// longer holds those events): everything shown is read again.
    Resync,
    /// The event stream connected or lost its connection.
    Live {
        connected: bool,
        error: Option<String>,
    },
}
