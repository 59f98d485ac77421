//! The coordinator's event stream, followed for as long as the console runs: reconnects
//! with backoff, and changed intents coalesced into a few batches a second.

use std::collections::BTreeMap;
use std::time::Duration;

use tokio::sync::mpsc;

use super::messages::Reply;
use crate::client::Client;
use crate::client::events::SseParser;
use crate::console::model::IntentRow;

/// How often coalesced event batches reach the UI at most.
const EVENT_FLUSH: Duration = Duration::from_millis(300);
/// Reconnect backoff bounds for the event stream.
const RECONNECT_MIN: Duration = Duration::from_millis(500);
const RECONNECT_MAX: Duration = Duration::from_secs(10);

/// Follow the coordinator's event stream for as long as the console runs.
pub(super) async fn stream_events(
    client: Client,
    outbox: mpsc::Sender<Reply>,
    repaint: impl Fn() + Send + Sync + 'static,
) {
    let mut last_event_id: Option<i64> = None;
    let mut backoff = RECONNECT_MIN;
    loop {
        match client.events(last_event_id).await {
            Ok(response) => {
                backoff = RECONNECT_MIN;
                if outbox
                    .send(Reply::Live {
                        connected: true,
                        error: None,
                    })
                    .await
                    .is_err()
                {
                    return;
                }
                repaint();
                let error = follow(response, &mut last_event_id, &outbox, &repaint).await;
                if outbox.is_closed() {
                    return;
                }
                let _ = outbox
                    .send(Reply::Live {
                        connected: false,
                        error: Some(error),
                    })
                    .await;
                repaint();
            }
            Err(e) => {
                if outbox
                    .send(Reply::Live {
                        connected: false,
                        error: Some(e.to_string()),
                    })
                    .await
                    .is_err()
                {
                    return;
                }
                repaint();
            }
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(RECONNECT_MAX);
    }
}

/// Read one connection of the stream until it ends; returns why it ended.
async fn follow(
    mut response: reqwest::Response,
    last_event_id: &mut Option<i64>,
    outbox: &mpsc::Sender<Reply>,
    repaint: &(impl Fn() + Send + Sync),
) -> String {
    let mut parser = SseParser::default();
    let mut pending: BTreeMap<String, IntentRow> = BTreeMap::new();
    let mut other_events = 0usize;
    let mut flush_at = tokio::time::Instant::now() + EVENT_FLUSH;
    loop {
        let chunk = tokio::select! {
            chunk = response.chunk() => chunk,
            _ = tokio::time::sleep_until(flush_at) => {
                if !pending.is_empty() || other_events > 0 {
                    let rows = std::mem::take(&mut pending).into_values().collect();
                    if outbox.send(Reply::Changed { rows, other_events }).await.is_err() {
                        return "the console closed".into();
                    }
                    other_events = 0;
                    repaint();
                }
                flush_at = tokio::time::Instant::now() + EVENT_FLUSH;
                continue;
            }
        };
        let chunk = match chunk {
            Ok(Some(c)) => c,
            Ok(None) => return "the coordinator closed the event stream".into(),
            Err(_) => return "the event stream broke".into(),
        };
        for frame in parser.push(&chunk) {
            if let Some(id) = frame.id {
                *last_event_id = Some(id);
            }
            if frame.event == "reset" {
                // What is pending is older than the gap; the whole view is read again.
                pending.clear();
                other_events = 0;
                if outbox.send(Reply::Resync).await.is_err() {
                    return "the console closed".into();
                }
                repaint();
                continue;
            }
            match (
                frame.event.as_str(),
                serde_json::from_str::<IntentRow>(&frame.data),
            ) {
                ("intent", Ok(row)) => {
                    pending.insert(row.id.to_string(), row);
                }
                ("", _) => {}
                _ => other_events += 1,
            }
        }
        if parser.buffered() > 4 * 1024 * 1024 {
            return "an event was larger than the console accepts".into();
        }
    }
}
