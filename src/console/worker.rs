//! Everything the console does off the UI thread: requests to the coordinator, the live
//! event stream with reconnect and backoff, and the local cache. The UI sends [`Request`]s
//! without waiting and polls [`Reply`]s once per frame; each reply asks for a repaint.
//! Events are coalesced: changed intents are sent at most a few times per second.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::mpsc;

use super::cache::Cache;
use super::model::{IntentDetail, IntentPage, IntentRow};
use crate::client::events::SseParser;
use crate::client::{Client, ClientError};

/// How often coalesced event batches reach the UI at most.
const EVENT_FLUSH: Duration = Duration::from_millis(300);
/// Reconnect backoff bounds for the event stream.
const RECONNECT_MIN: Duration = Duration::from_millis(500);
const RECONNECT_MAX: Duration = Duration::from_secs(10);

/// What the UI asks for.
#[derive(Debug, Clone)]
pub enum Request {
    /// A page of intents; `generation` tells a stale answer from a current one.
    Page {
        generation: u64,
        query: Vec<(String, String)>,
        cursor: Option<String>,
    },
    /// One intent with everything attached; `ticket` comes back with the answer.
    Detail { id: String, ticket: u64 },
    /// Open an intent by id or action key.
    Resolve { needle: String },
    /// A JSON read (metrics, pauses, audit); `tag` routes the answer.
    Json {
        tag: String,
        path: String,
        query: Vec<(String, String)>,
    },
    /// An operator command; the body holds its command id.
    Command { body: Value },
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
    Json {
        tag: String,
        result: Result<Value, ClientError>,
    },
    Command {
        body: Value,
        result: Result<Value, ClientError>,
    },
    /// Intents changed, with their new rows where the event carried them.
    Changed {
        rows: Vec<IntentRow>,
        other_events: usize,
    },
    /// The event stream connected or lost its connection.
    Live {
        connected: bool,
        error: Option<String>,
    },
}

/// Asking for the same thing again and again with at most one request on its way: the
/// worker answers requests concurrently, so answers to overlapping requests could land out
/// of order and leave an older answer on screen. Each request carries a ticket; only the
/// answer to the ticket on its way is taken, so an answer to a request made before the
/// tracker was restarted (the intent opened again) is recognised as stale.
#[derive(Debug, Clone, Default)]
pub struct OneInFlight {
    /// The ticket on its way, and when it left.
    on_its_way: Option<(u64, Instant)>,
    again: bool,
    last_ticket: u64,
}

/// A request unanswered this long is taken as lost (the client gives up after 15 s, so only
/// a failed worker task leaves one unanswered); the next ask sends again.
const LOST_AFTER: Duration = Duration::from_secs(30);

impl OneInFlight {
    /// The ticket for a request to send now, or `None` while one is on its way: another is
    /// then owed once its answer lands.
    pub fn ask(&mut self) -> Option<u64> {
        self.ask_at(Instant::now())
    }

    fn ask_at(&mut self, now: Instant) -> Option<u64> {
        if self
            .on_its_way
            .is_some_and(|(_, left)| now.duration_since(left) < LOST_AFTER)
        {
            self.again = true;
            return None;
        }
        self.last_ticket += 1;
        Some(self.last_ticket)
    }

    /// Whether the worker took the request with `ticket` ([`Worker::send`]); if its queue
    /// was full, the request stays owed.
    pub fn sent(&mut self, ticket: u64, taken: bool) {
        self.on_its_way = taken.then_some((ticket, Instant::now()));
        self.again = !taken;
    }

    /// The answer to `ticket` landed: whether it answers the request on its way (if not,
    /// it is stale and must not be shown).
    pub fn landed(&mut self, ticket: u64) -> bool {
        let current = self.on_its_way.is_some_and(|(t, _)| t == ticket);
        if current {
            self.on_its_way = None;
        }
        current
    }

    /// Forget what is on its way and owed (another subject); tickets keep counting, so
    /// answers to earlier requests stay stale.
    pub fn restart(&mut self) {
        self.on_its_way = None;
        self.again = false;
    }

    /// A request is owed (asked for meanwhile, or not taken) and none is on its way.
    pub fn owed(&self) -> bool {
        self.again && self.on_its_way.is_none()
    }

    /// Nothing on its way and nothing owed.
    pub fn settled(&self) -> bool {
        self.on_its_way.is_none() && !self.again
    }
}

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
            runtime.spawn(stream_events(client, events_out, events_repaint));
        }
        runtime.spawn(async move {
            while let Some(request) = inbox.recv().await {
                let client = client.clone();
                let cache = cache.clone();
                let outbox = outbox.clone();
                let repaint = repaint.clone();
                tokio::spawn(async move {
                    for reply in serve(client.as_ref(), cache.as_ref(), request).await {
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

async fn serve(client: Option<&Client>, cache: Option<&Cache>, request: Request) -> Vec<Reply> {
    let offline = || ClientError::Unreachable {
        url: "offline".into(),
        detail: "the console runs offline".into(),
    };
    match request {
        Request::Page {
            generation,
            query,
            cursor,
        } => {
            let appended = cursor.is_some();
            let cache_key = cache_key(&query, cursor.as_deref());
            let mut out = Vec::new();
            let Some(client) = client else {
                let cached = cached_page(cache, &cache_key).await;
                return vec![Reply::Page {
                    generation,
                    appended,
                    result: cached.ok_or_else(offline),
                    from_cache: true,
                }];
            };
            if !appended && let Some(page) = cached_page(cache, &cache_key).await {
                out.push(Reply::Page {
                    generation,
                    appended,
                    result: Ok(page),
                    from_cache: true,
                });
            }
            let mut full = query.clone();
            if let Some(c) = &cursor {
                full.push(("cursor".into(), c.clone()));
            }
            let result = client.intents(&full).await;
            if let (Ok(page), Some(cache)) = (&result, cache) {
                cache.put_page(&cache_key, page).await;
            }
            out.push(Reply::Page {
                generation,
                appended,
                result,
                from_cache: false,
            });
            out
        }
        Request::Detail { id, ticket } => {
            let Some(client) = client else {
                let cached = match cache {
                    Some(c) => c.detail(&id).await,
                    None => None,
                };
                return vec![Reply::Detail {
                    id,
                    ticket,
                    result: cached.map(Box::new).ok_or_else(offline),
                    from_cache: true,
                }];
            };
            let result = client.intent(&id).await;
            if let (Ok(detail), Some(cache)) = (&result, cache) {
                cache.put_detail(&id, detail).await;
            }
            vec![Reply::Detail {
                id,
                ticket,
                result: result.map(Box::new),
                from_cache: false,
            }]
        }
        Request::Resolve { needle } => {
            let Some(client) = client else {
                return vec![Reply::Resolved {
                    needle: needle.clone(),
                    result: Ok(needle),
                }];
            };
            let result = resolve(client, &needle).await;
            vec![Reply::Resolved { needle, result }]
        }
        Request::Json { tag, path, query } => {
            let result = match client {
                Some(c) => c.get_json(&path, &query).await,
                None => Err(offline()),
            };
            vec![Reply::Json { tag, result }]
        }
        Request::Command { body } => {
            let result = match client {
                Some(c) => send_command(c, &body).await,
                None => Err(offline()),
            };
            vec![Reply::Command { body, result }]
        }
    }
}

/// Send a command, retrying transport failures with the same body (and so the same command
/// id): the coordinator answers a replay with the first result, so a retry never applies a
/// command twice.
async fn send_command(client: &Client, body: &Value) -> Result<Value, ClientError> {
    let mut delay = Duration::from_millis(200);
    let mut last = None;
    for _ in 0..4 {
        match client.command(body).await {
            Err(e @ ClientError::Unreachable { .. }) => {
                last = Some(e);
                tokio::time::sleep(delay).await;
                delay *= 2;
            }
            other => return other,
        }
    }
    Err(last.unwrap_or(ClientError::BadResponse("no answer".into())))
}

/// An intent id opens directly; anything else is tried as an action key.
async fn resolve(client: &Client, needle: &str) -> Result<String, ClientError> {
    let needle = needle.trim();
    if needle.starts_with("int_") {
        return Ok(needle.to_string());
    }
    Ok(client.action_key(needle).await?.intent.id.to_string())
}

/// The cache key of a page: its query, sorted, and its cursor.
pub fn cache_key(query: &[(String, String)], cursor: Option<&str>) -> String {
    let mut key: Vec<String> = query.iter().map(|(k, v)| format!("{k}={v}")).collect();
    key.sort();
    if let Some(c) = cursor {
        key.push(format!("cursor={c}"));
    }
    key.join("&")
}

async fn cached_page(cache: Option<&Cache>, key: &str) -> Option<IntentPage> {
    match cache {
        Some(c) => c.page(key).await,
        None => None,
    }
}

/// Follow the coordinator's event stream for as long as the console runs.
async fn stream_events(
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

#[cfg(test)]
mod tests {
    use super::OneInFlight;

    #[test]
    fn one_request_at_a_time_and_one_more_for_everything_asked_meanwhile() {
        let mut r = OneInFlight::default();
        let first = r.ask().expect("nothing on its way: send");
        r.sent(first, true);
        assert_eq!(r.ask(), None, "one on its way: wait");
        assert_eq!(r.ask(), None, "asked twice meanwhile: still one owed");
        assert!(!r.owed(), "owed only once the answer lands");
        assert!(r.landed(first));
        assert!(r.owed());
        let second = r.ask().expect("the owed request");
        assert_ne!(first, second);
        r.sent(second, true);
        assert!(!r.owed());
        assert!(r.landed(second));
        assert!(r.settled());
    }

    #[test]
    fn a_request_the_full_queue_refused_stays_owed() {
        let mut r = OneInFlight::default();
        let ticket = r.ask().expect("send");
        r.sent(ticket, false);
        assert!(r.owed());
        let again = r.ask().expect("send again");
        r.sent(again, true);
        assert!(!r.owed() && !r.settled());
        assert!(r.landed(again));
        assert!(r.settled());
    }

    #[test]
    fn a_request_never_answered_is_sent_again_after_a_while() {
        let mut r = OneInFlight::default();
        let lost = r.ask().expect("send");
        r.sent(lost, true);
        let now = std::time::Instant::now();
        assert_eq!(r.ask_at(now), None, "on its way");
        let later = now + super::LOST_AFTER + std::time::Duration::from_secs(1);
        let again = r.ask_at(later).expect("taken as lost: send again");
        r.sent(again, true);
        assert!(
            !r.landed(lost),
            "a late answer to the lost request is stale"
        );
        assert!(r.landed(again));
    }

    #[test]
    fn an_answer_from_before_a_restart_is_stale() {
        let mut r = OneInFlight::default();
        let old = r.ask().expect("send");
        r.sent(old, true);
        r.restart();
        let new = r.ask().expect("a fresh request after the restart");
        r.sent(new, true);
        assert!(!r.landed(old), "the old answer is not taken");
        assert!(!r.settled(), "and the new request is still on its way");
        assert!(r.landed(new));
        assert!(r.settled());
    }
}
