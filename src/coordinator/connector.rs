//! Calls to a downstream connector: create with the action key, and look a key up. Every
//! failure is turned into the domain's [`Observation`] so the decision table classifies it;
//! whether a request may have been sent is decided here, from how it failed. What the core
//! reads of it is the data in [`super::core::call`].

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
use std::time::Duration;

use serde_json::Value;

use super::config::ConnectorConfig;
pub use super::core::call::{Call, CallFuture, Downstream, Reply};
use crate::domain::ActionKey;
use crate::domain::decision::Observation;

fn url(connector: &ConnectorConfig, resource: &str) -> String {
    format!("{}/{}", connector.base_url.trim_end_matches('/'), resource)
}

fn failed(e: &reqwest::Error) -> Call {
    let observation = if e.is_connect() {
        Observation::ConnectFailed
    } else if e.is_timeout() {
        Observation::TimeoutAfterSend
    } else {
        Observation::ConnectionLostAfterSend
    };
    // Only the kind of failure is kept: a URL or body never reaches logs or the store.
    let detail = if e.is_connect() {
        "connection could not be opened"
    } else if e.is_timeout() {
        "no answer before the connector timeout"
    } else {
        "connection lost before a complete answer"
    };
    Call::Failed {
        observation,
        detail: detail.to_string(),
    }
}

/// The most of an answer's body that is read. A create's or a lookup's answer is a record or
/// two; a downstream that sends more, broken or hostile, must not fill the coordinator's
/// memory. A longer body is read as no body: its status still counts, and a success without
/// a downstream id is looked up rather than taken as a receipt.
pub const MAX_ANSWER_BYTES: usize = 1 << 20;

async fn reply(mut response: reqwest::Response) -> Call {
    let status = response.status().as_u16();
    let retry_after_ms = response
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(|secs| secs.saturating_mul(1000));
    let body = match body_within_limit(&mut response).await {
        Ok(Some(bytes)) => serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        Ok(None) => {
            tracing::warn!(
                status,
                limit = MAX_ANSWER_BYTES,
                "a downstream's answer is longer than the limit; its body is not read"
            );
            Value::Null
        }
        Err(e) => return failed(&e),
    };
    Call::Replied(Reply {
        status,
        retry_after_ms,
        body,
    })
}

/// The answer's body, or `None` once it is longer than [`MAX_ANSWER_BYTES`] (then the rest is
/// not read, and the connection is not used again).
async fn body_within_limit(
    response: &mut reqwest::Response,
) -> Result<Option<Vec<u8>>, reqwest::Error> {
    let limit = MAX_ANSWER_BYTES;
    if response.content_length().is_some_and(|n| n > limit as u64) {
        return Ok(None);
    }
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        if bytes.len() + chunk.len() > limit {
            return Ok(None);
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(Some(bytes))
}

/// `POST {base}/{resource}` with the action key as `Idempotency-Key`.
async fn create(
    http: &reqwest::Client,
    connector: &ConnectorConfig,
    resource: &str,
    key: &ActionKey,
    payload_json: &str,
) -> Call {
    let sent = http
        .post(url(connector, resource))
        .timeout(Duration::from_millis(connector.timeout_ms))
        .header("Idempotency-Key", key.as_str())
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(payload_json.to_string())
        .send()
        .await;
    match sent {
        Ok(response) => reply(response).await,
        Err(e) => failed(&e),
    }
}

/// `GET {base}/{resource}?external_ref={key}`.
async fn lookup(
    http: &reqwest::Client,
    connector: &ConnectorConfig,
    resource: &str,
    key: &ActionKey,
) -> Call {
    let sent = http
        .get(url(connector, resource))
        .timeout(Duration::from_millis(connector.timeout_ms))
        .query(&[("external_ref", key.as_str())])
        .send()
        .await;
    match sent {
        Ok(response) => reply(response).await,
        Err(e) => failed(&e),
    }
}

/// The downstream over HTTP.
#[derive(Clone)]
pub struct HttpDownstream {
    /// Each connector's client by its name; connectors that name the same
    /// `idle_connection_ms` share one client and its connections.
    clients: BTreeMap<String, reqwest::Client>,
}

impl HttpDownstream {
    /// The clients of `connectors`, trusting the system's roots and `ca_file`'s. Every client
    /// is built here, at the start, so a bad `ca_file` is refused before anything is served,
    /// with or without connectors.
    pub fn new(
        ca_file: Option<&std::path::Path>,
        connectors: &[ConnectorConfig],
    ) -> Result<HttpDownstream, String> {
        let mut by_idle: BTreeMap<u64, reqwest::Client> = BTreeMap::new();
        let mut clients = BTreeMap::new();
        for c in connectors {
            let http = match by_idle.entry(c.idle_connection_ms) {
                Entry::Occupied(built) => built.get().clone(),
                Entry::Vacant(slot) => slot.insert(client(ca_file, c.idle_connection_ms)?).clone(),
            };
            clients.insert(c.name.clone(), http);
        }
        if connectors.is_empty() {
            client(
                ca_file,
                crate::coordinator::config::default_idle_connection_ms(),
            )?;
        }
        Ok(HttpDownstream { clients })
    }

    /// The client built at the start for `connector`.
    fn http(&self, connector: &ConnectorConfig) -> Result<reqwest::Client, String> {
        self.clients
            .get(&connector.name)
            .cloned()
            .ok_or_else(|| format!("connector {:?} was not known at the start", connector.name))
    }
}

/// Nothing was sent: no client was built for the connector at the start.
fn no_client(e: &str) -> Call {
    tracing::error!(error = %e, "no HTTP client for a connector");
    Call::Failed {
        observation: Observation::ConnectFailed,
        detail: "connection could not be opened".to_string(),
    }
}

fn client(ca_file: Option<&std::path::Path>, idle_ms: u64) -> Result<reqwest::Client, String> {
    // Redirects come back as answers (a create's is unproven and looked up), never followed.
    let builder = crate::tls::client(ca_file).map_err(|e| e.to_string())?;
    let builder = if idle_ms == 0 {
        builder.pool_max_idle_per_host(0)
    } else {
        builder
            .pool_max_idle_per_host(64)
            .pool_idle_timeout(Duration::from_millis(idle_ms))
    };
    builder.build().map_err(|e| e.to_string())
}

impl Downstream for HttpDownstream {
    fn create<'a>(
        &'a self,
        connector: &'a ConnectorConfig,
        resource: &'a str,
        key: &'a ActionKey,
        payload_json: &'a str,
    ) -> CallFuture<'a> {
        let http = self.http(connector);
        Box::pin(async move {
            match http {
                Ok(http) => create(&http, connector, resource, key, payload_json).await,
                Err(e) => no_client(&e),
            }
        })
    }

    fn lookup<'a>(
        &'a self,
        connector: &'a ConnectorConfig,
        resource: &'a str,
        key: &'a ActionKey,
    ) -> CallFuture<'a> {
        let http = self.http(connector);
        Box::pin(async move {
            match http {
                Ok(http) => lookup(&http, connector, resource, key).await,
                Err(e) => no_client(&e),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    /// A downstream whose keep-alive ran out just as a request came: it answers the first
    /// request on each connection and closes the connection, unanswered, on the second, after
    /// reading it. Counts the connections it accepted.
    async fn closing_downstream() -> (String, Arc<AtomicUsize>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let accepted = Arc::new(AtomicUsize::new(0));
        let counted = accepted.clone();
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                counted.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(async move {
                    for n in 0.. {
                        if !read_request(&mut socket).await {
                            return;
                        }
                        if n > 0 {
                            return;
                        }
                        let body = r#"{"id":"po_1"}"#;
                        let answer = format!(
                            "HTTP/1.1 201 Created\r\ncontent-type: application/json\r\n\
                             content-length: {}\r\n\r\n{body}",
                            body.len()
                        );
                        if socket.write_all(answer.as_bytes()).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        (url, accepted)
    }

    /// A downstream that gives every request `answer` (a whole HTTP response, `{url}` in it
    /// replaced by its own address) and counts the requests it read.
    async fn answering_downstream(answer: &str) -> (String, Arc<AtomicUsize>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let answer = answer.replace("{url}", &url);
        let requests = Arc::new(AtomicUsize::new(0));
        let counted = requests.clone();
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let counted = counted.clone();
                let answer = answer.clone();
                tokio::spawn(async move {
                    while read_request(&mut socket).await {
                        counted.fetch_add(1, Ordering::SeqCst);
                        if socket.write_all(answer.as_bytes()).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        (url, requests)
    }

    /// Read one request's head and body; false when the connection ended first.
    async fn read_request(socket: &mut tokio::net::TcpStream) -> bool {
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            if let Some(end) = seen.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&seen[..end]).to_ascii_lowercase();
                let length = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .and_then(|v| v.trim().parse::<usize>().ok())
                    .unwrap_or(0);
                if seen.len() >= end + 4 + length {
                    return true;
                }
            }
            match socket.read(&mut buf).await {
                Ok(0) | Err(_) => return false,
                Ok(n) => seen.extend_from_slice(&buf[..n]),
            }
        }
    }

    fn connector(url: &str, idle_connection_ms: u64) -> ConnectorConfig {
        let text = format!(
            "name = \"erp\"\nbase_url = \"{url}\"\ntimeout_ms = 2000\n\
             idle_connection_ms = {idle_connection_ms}\n"
        );
        toml::from_str(&text).expect("a connector")
    }

    fn created(call: &Call) -> bool {
        matches!(call, Call::Replied(reply) if reply.status == 201)
    }

    /// A create, then 300 ms later a create or a lookup, to a downstream that closes the
    /// connection of the second call: with connections kept longer than that, the second
    /// call is sent on the old one and is lost, unproven; kept 100 ms or not kept, it goes
    /// on a new connection and is answered.
    #[tokio::test]
    async fn a_connection_idle_past_the_connectors_setting_is_not_used_again() {
        let key: ActionKey = "po:acme:int_01m91z8h05n91he8sex76r3432"
            .parse()
            .expect("a key");
        // How long the test stays idle between the two calls: the scenario, not a wait
        // for something to happen.
        let idle = Duration::from_millis(300);
        for second_is_lookup in [false, true] {
            for (idle_ms, fresh) in [(4000, false), (100, true), (0, true)] {
                let case = format!("idle {idle_ms} ms, lookup second: {second_is_lookup}");
                let (url, accepted) = closing_downstream().await;
                let erp = connector(&url, idle_ms);
                let downstream =
                    HttpDownstream::new(None, std::slice::from_ref(&erp)).expect("a client");
                let first = downstream.create(&erp, "purchase-orders", &key, "{}").await;
                assert!(created(&first), "{case}: {first:?}");
                tokio::time::sleep(idle).await;
                let second = if second_is_lookup {
                    downstream.lookup(&erp, "purchase-orders", &key).await
                } else {
                    downstream.create(&erp, "purchase-orders", &key, "{}").await
                };
                if fresh {
                    assert!(created(&second), "{case}: {second:?}");
                    assert_eq!(accepted.load(Ordering::SeqCst), 2, "{case}");
                } else {
                    assert!(
                        matches!(
                            second,
                            Call::Failed {
                                observation: Observation::ConnectionLostAfterSend,
                                ..
                            }
                        ),
                        "{case}: {second:?}"
                    );
                    assert_eq!(accepted.load(Ordering::SeqCst), 1, "{case}");
                }
            }
        }
    }

    /// A connector the downstream was not built with is refused before anything is sent,
    /// and connectors with the same setting share one client's connections.
    #[tokio::test]
    async fn a_connector_unknown_at_the_start_sends_nothing() {
        let key: ActionKey = "po:acme:int_01m91z8h05n91he8sex76r3432"
            .parse()
            .expect("a key");
        let (url, accepted) = closing_downstream().await;
        let erp = connector(&url, 4000);
        let mut twin = erp.clone();
        twin.name = "erp-twin".to_string();
        let downstream = HttpDownstream::new(None, &[erp.clone(), twin.clone()]).expect("clients");
        let mut stranger = erp.clone();
        stranger.name = "stranger".to_string();
        let refused = downstream
            .create(&stranger, "purchase-orders", &key, "{}")
            .await;
        assert!(
            matches!(
                refused,
                Call::Failed {
                    observation: Observation::ConnectFailed,
                    ..
                }
            ),
            "{refused:?}"
        );
        assert_eq!(
            accepted.load(Ordering::SeqCst),
            0,
            "nothing sent for an unknown connector"
        );
        let first = downstream.create(&erp, "purchase-orders", &key, "{}").await;
        assert!(created(&first), "{first:?}");
        // The twin's call goes on the connection the first call left idle, which the
        // downstream closes on its second request: one connection in all.
        let second = downstream
            .create(&twin, "purchase-orders", &key, "{}")
            .await;
        assert!(matches!(second, Call::Failed { .. }), "{second:?}");
        assert_eq!(accepted.load(Ordering::SeqCst), 1);
    }

    /// A `ca_file` that cannot be read is refused at the start, with or without connectors.
    #[test]
    fn a_bad_ca_file_is_refused_at_the_start_without_connectors() {
        let missing = std::path::Path::new("no-such-ca-file.pem");
        assert!(HttpDownstream::new(Some(missing), &[]).is_err());
        let erp = connector("http://127.0.0.1:9", 4000);
        assert!(HttpDownstream::new(Some(missing), std::slice::from_ref(&erp)).is_err());
    }

    /// A redirect is the downstream's answer, not an order to send the command elsewhere:
    /// a create answered 307 (or 303) is not sent again to the `Location`, neither as the
    /// same POST, key and body, nor turned into a GET whose 200 would read as a receipt.
    #[tokio::test]
    async fn a_redirect_is_answered_and_never_followed() {
        let key: ActionKey = "po:acme:int_01m91z8h05n91he8sex76r3432"
            .parse()
            .expect("a key");
        let found = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\
                     content-length: 13\r\n\r\n{\"id\":\"po_9\"}";
        for status in [
            "307 Temporary Redirect",
            "308 Permanent Redirect",
            "303 See Other",
        ] {
            let (elsewhere, followed) = answering_downstream(found).await;
            let moved = format!(
                "HTTP/1.1 {status}\r\nlocation: {elsewhere}/purchase-orders\r\n\
                 content-length: 0\r\n\r\n"
            );
            let (url, asked) = answering_downstream(&moved).await;
            let erp = connector(&url, 4000);
            let downstream =
                HttpDownstream::new(None, std::slice::from_ref(&erp)).expect("a client");
            let call = downstream.create(&erp, "purchase-orders", &key, "{}").await;
            let code: u16 = status[..3].parse().expect("a status");
            assert!(
                matches!(&call, Call::Replied(reply) if reply.status == code),
                "{status}: {call:?}"
            );
            assert_eq!(asked.load(Ordering::SeqCst), 1, "{status}");
            assert_eq!(followed.load(Ordering::SeqCst), 0, "{status}: followed");
        }
    }

    /// An answer one byte longer than the limit, announced or streamed without a length, is
    /// read as no body: the status stands and the id in it is not taken. One of just the
    /// limit is read either way, and its id taken.
    #[tokio::test]
    async fn an_answer_longer_than_the_limit_is_not_read() {
        let key: ActionKey = "po:acme:int_01m91z8h05n91he8sex76r3432"
            .parse()
            .expect("a key");
        // A record with the id `id`, exactly `len` bytes long.
        let padded = |id: &str, len: usize| {
            let frame = format!("{{\"id\":\"{id}\",\"pad\":\"\"}}");
            let body = format!(
                "{{\"id\":\"{id}\",\"pad\":\"{}\"}}",
                "x".repeat(len - frame.len())
            );
            assert_eq!(body.len(), len);
            body
        };
        let head = "HTTP/1.1 201 Created\r\ncontent-type: application/json\r\n";
        for (len, read) in [(MAX_ANSWER_BYTES + 1, false), (MAX_ANSWER_BYTES, true)] {
            let body = padded("po_1", len);
            let chunked: String = body
                .as_bytes()
                .chunks(64 * 1024)
                .map(|c| format!("{:x}\r\n{}\r\n", c.len(), String::from_utf8_lossy(c)))
                .collect();
            let answers = [
                format!("{head}content-length: {}\r\n\r\n{body}", body.len()),
                format!("{head}transfer-encoding: chunked\r\n\r\n{chunked}0\r\n\r\n"),
            ];
            for (n, answer) in answers.iter().enumerate() {
                let (url, _) = answering_downstream(answer).await;
                let erp = connector(&url, 4000);
                let downstream =
                    HttpDownstream::new(None, std::slice::from_ref(&erp)).expect("a client");
                let call = downstream.create(&erp, "purchase-orders", &key, "{}").await;
                let Call::Replied(reply) = &call else {
                    panic!("{len} bytes, answer {n}: {call:?}");
                };
                assert_eq!(reply.status, 201);
                let expected = read.then(|| "po_1".to_string());
                assert_eq!(reply.downstream_id(), expected, "{len} bytes, answer {n}");
                assert_eq!(reply.body.is_null(), !read, "{len} bytes, answer {n}");
            }
        }
    }
}
