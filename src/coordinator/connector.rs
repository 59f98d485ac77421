//! Calls to a downstream connector: create with the action key, and look a key up. Every
//! failure is turned into the domain's [`Observation`] so the decision table classifies it;
//! whether a request may have been sent is decided here, from how it failed. What the core
//! reads of it is the data in [`super::core::call`].

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

async fn reply(response: reqwest::Response) -> Call {
    let status = response.status().as_u16();
    let retry_after_ms = response
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(|secs| secs.saturating_mul(1000));
    match response.bytes().await {
        Ok(bytes) => {
            let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            Call::Replied(Reply {
                status,
                retry_after_ms,
                body,
            })
        }
        Err(e) => failed(&e),
    }
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
    http: reqwest::Client,
}

impl HttpDownstream {
    /// A client for every connector, trusting the system's roots and `ca_file`'s.
    pub fn new(ca_file: Option<&std::path::Path>) -> Result<HttpDownstream, String> {
        let http = crate::tls::client(ca_file)
            .map_err(|e| e.to_string())?
            .pool_max_idle_per_host(64)
            .build()
            .map_err(|e| e.to_string())?;
        Ok(HttpDownstream { http })
    }
}

impl Downstream for HttpDownstream {
    fn create<'a>(
        &'a self,
        connector: &'a ConnectorConfig,
        resource: &'a str,
        key: &'a ActionKey,
        payload_json: &'a str,
    ) -> CallFuture<'a> {
        Box::pin(create(&self.http, connector, resource, key, payload_json))
    }

    fn lookup<'a>(
        &'a self,
        connector: &'a ConnectorConfig,
        resource: &'a str,
        key: &'a ActionKey,
    ) -> CallFuture<'a> {
        Box::pin(lookup(&self.http, connector, resource, key))
    }
}
