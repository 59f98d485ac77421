//! Everything the console does off the UI thread: requests to the coordinator, the live
//! event stream with reconnect and backoff, and the local cache. The UI sends [`Request`]s
//! without waiting and polls [`Reply`]s once per frame; each reply asks for a repaint.
//! Events are coalesced: changed intents are sent at most a few times per second.

mod events;
mod in_flight;
mod messages;
mod serve;

use tokio::sync::mpsc;

pub use in_flight::OneInFlight;
pub use messages::{DashboardAnswer, DashboardRead, MetricsError, Query, Reply, Request};
pub use serve::cache_key;

use crate::client::Client;
use crate::console::cache::Cache;

/// The UI's handle on the worker.
pub struct Worker {
    requests: mpsc::Sender<Request>,
    replies: mpsc::Receiver<Reply>,
}

impl Worker {
    /// Start the worker on `runtime`; `repaint` is called after every reply.
    pub fn start(
        runtime: &tokio::runtime::Handle,
        client: Option<Client>,
        cache: Option<Cache>,
        repaint: impl Fn() + Send + Sync + Clone + 'static,
    ) -> Worker {
        let (requests, mut inbox) = mpsc::channel::<Request>(256);
        let (outbox, replies) = mpsc::channel::<Reply>(1024);
        let events_out = outbox.clone();
        let events_repaint = repaint.clone();
        if let Some(client) = client.clone() {
            runtime.spawn(events::stream_events(client, events_out, events_repaint));
        }
        runtime.spawn(async move {
            while let Some(request) = inbox.recv().await {
                let client = client.clone();
                let cache = cache.clone();
                let outbox = outbox.clone();
                let repaint = repaint.clone();
                tokio::spawn(async move {
                    for reply in serve::serve(client.as_ref(), cache.as_ref(), request).await {
                        if outbox.send(reply).await.is_err() {
                            return;
                        }
                        repaint();
                    }
                });
            }
        });
        Worker { requests, replies }
    }

    /// Send without waiting; false when the queue is full (the UI then tries next frame).
    pub fn send(&self, request: Request) -> bool {
        self.requests.try_send(request).is_ok()
    }

    /// Every reply that arrived since the last frame.
    pub fn poll(&mut self) -> Vec<Reply> {
        let mut out = Vec::new();
        while let Ok(reply) = self.replies.try_recv() {
            out.push(reply);
        }
        out
    }
}
