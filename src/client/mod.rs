//! The one HTTP client of the coordinator's API, typed by the wire shapes (`crate::wire`):
//! [`Client`] for the operator API the console reads and commands through, and
//! [`ingest::IngestClient`] for agents, which repeats a call only when repeating it is safe.
//! Every answer is bounded in size and time and every failure says what went wrong in
//! words an operator can act on. Builds without the console.

pub mod error;
pub mod events;
pub mod ingest;

pub use error::CallError;

use std::time::Duration;

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::wire::{
    CommandTargets, ErrorBody, IntentDetail, IntentPage, KeyLedger, RevisitPage, StateName, Whoami,
};

/// The largest answer the console reads; a larger one is refused, not buffered.
pub const MAX_RESPONSE_BYTES: usize = 16 * 1024 * 1024;

/// Why a request did not give an answer the console can use.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ClientError {
    #[error("cannot reach the coordinator at {url}: {detail}")]
    Unreachable { url: String, detail: String },
    #[error("the coordinator refused the token (401): check the token file")]
    Unauthorized,
    #[error("this token's role may not do that (403): {0}")]
    Forbidden(String),
    #[error("not found (404): {0}")]
    NotFound(String),
    #[error("the coordinator refused the request ({status}): {message}")]
    Refused {
        status: u16,
        code: String,
        message: String,
    },
    #[error("the coordinator's answer could not be read: {0}")]
    BadResponse(String),
    #[error("the coordinator's answer is larger than {limit} bytes")]
    TooLarge { limit: usize },
}

/// A client bound to one coordinator and token.
#[derive(Clone)]
pub struct Client {
    base: String,
    token: String,
    http: reqwest::Client,
}

impl Client {
    pub fn new(base: &str, token: &str) -> Result<Client, ClientError> {
        Client::with_ca(base, token, None)
    }

    /// [`Client::new`] trusting `ca_file`'s certificates (PEM) beside the system's roots,
    /// for a coordinator whose certificate a private CA signed.
    pub fn with_ca(
        base: &str,
        token: &str,
        ca_file: Option<&std::path::Path>,
    ) -> Result<Client, ClientError> {
        let builder = crate::tls::client(ca_file).map_err(|e| ClientError::Unreachable {
            url: base.to_string(),
            detail: e.to_string(),
        })?;
        let http = builder
            .connect_timeout(Duration::from_secs(3))
            .timeout(Duration::from_secs(15))
            .build()
            .map_err(|e| ClientError::Unreachable {
                url: base.to_string(),
                detail: e.to_string(),
            })?;
        Ok(Client {
            base: base.trim_end_matches('/').to_string(),
            token: token.trim().to_string(),
            http,
        })
    }

    pub fn base(&self) -> &str {
        &self.base
    }

    pub fn token(&self) -> &str {
        &self.token
    }

    async fn read<T: DeserializeOwned>(
        &self,
        response: reqwest::Response,
    ) -> Result<T, ClientError> {
        let status = response.status().as_u16();
        if response
            .content_length()
            .is_some_and(|n| n as usize > MAX_RESPONSE_BYTES)
        {
            return Err(ClientError::TooLarge {
                limit: MAX_RESPONSE_BYTES,
            });
        }
        let mut response = response;
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| self.unreachable(&e))? {
            if body.len() + chunk.len() > MAX_RESPONSE_BYTES {
                return Err(ClientError::TooLarge {
                    limit: MAX_RESPONSE_BYTES,
                });
            }
            body.extend_from_slice(&chunk);
        }
        if (200..300).contains(&status) {
            return serde_json::from_slice(&body)
                .map_err(|e| ClientError::BadResponse(e.to_string()));
        }
        let (code, message) = serde_json::from_slice::<ErrorBody>(&body)
            .map(|e| (e.error.code, e.error.message))
            .unwrap_or_default();
        Err(match status {
            401 => ClientError::Unauthorized,
            403 => ClientError::Forbidden(message),
            404 => ClientError::NotFound(message),
            _ => ClientError::Refused {
                status,
                code,
                message,
            },
        })
    }

    fn unreachable(&self, e: &reqwest::Error) -> ClientError {
        let detail = crate::tls::describe(e);
        ClientError::Unreachable {
            url: self.base.clone(),
            detail,
        }
    }

    async fn get<T: DeserializeOwned>(
        &self,
        path: &str,
        query: &[(String, String)],
    ) -> Result<T, ClientError> {
        let response = self
            .http
            .get(format!("{}{path}", self.base))
            .bearer_auth(&self.token)
            .query(query)
            .send()
            .await
            .map_err(|e| self.unreachable(&e))?;
        self.read(response).await
    }

    /// One page of intents.
    pub async fn intents(
        &self,
        query: &[(String, String)],
    ) -> Result<IntentPage<StateName>, ClientError> {
        self.get("/v1/intents", query).await
    }

    /// One intent with everything attached.
    pub async fn intent(&self, id: &str) -> Result<IntentDetail<StateName>, ClientError> {
        self.get(&format!("/v1/intents/{}", urlencode(id)), &[])
            .await
    }

    /// Everything known about an action key, the intent it belongs to first.
    pub async fn action_key(&self, key: &str) -> Result<KeyLedger<StateName>, ClientError> {
        self.get(&format!("/v1/action-keys/{}", urlencode(key)), &[])
            .await
    }

    /// The gate's revisit events after `after_seq`, newest first.
    pub async fn revisits(&self, after_seq: u64, limit: u32) -> Result<RevisitPage, ClientError> {
        let query = [
            ("after".to_string(), after_seq.to_string()),
            ("limit".to_string(), limit.to_string()),
        ];
        self.get("/v1/revisits", &query).await
    }

    /// What this client's token is and may do.
    pub async fn whoami(&self) -> Result<Whoami, ClientError> {
        self.get("/v1/whoami", &[]).await
    }

    /// Any JSON read (metrics, pauses, audit).
    pub async fn get_json(
        &self,
        path: &str,
        query: &[(String, String)],
    ) -> Result<Value, ClientError> {
        self.get(path, query).await
    }

    /// `POST /v1/commands`; the body carries the command id generated at confirmation.
    pub async fn command(&self, body: &Value) -> Result<Value, ClientError> {
        let response = self
            .http
            .post(format!("{}/v1/commands", self.base))
            .bearer_auth(&self.token)
            .json(body)
            .send()
            .await
            .map_err(|e| self.unreachable(&e))?;
        self.read(response).await
    }

    /// The first `limit` intents a command covered when it was recorded.
    pub async fn command_targets(
        &self,
        command_id: &str,
        limit: u32,
    ) -> Result<CommandTargets, ClientError> {
        self.get(
            &format!("/v1/commands/{}/targets", urlencode(command_id)),
            &[("limit".to_string(), limit.to_string())],
        )
        .await
    }

    /// Open the event stream after `last_event_id`.
    pub async fn events(
        &self,
        last_event_id: Option<i64>,
    ) -> Result<reqwest::Response, ClientError> {
        let mut request = self
            .http
            .get(format!("{}/v1/events", self.base))
            .bearer_auth(&self.token)
            .timeout(Duration::from_secs(24 * 3600));
        if let Some(id) = last_event_id {
            request = request.header("Last-Event-ID", id.to_string());
        }
        let response = request.send().await.map_err(|e| self.unreachable(&e))?;
        match response.status().as_u16() {
            200 => Ok(response),
            401 => Err(ClientError::Unauthorized),
            403 => Err(ClientError::Forbidden("the event stream".into())),
            status => Err(ClientError::Refused {
                status,
                code: String::new(),
                message: "event stream".into(),
            }),
        }
    }
}

fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b':' => {
                (b as char).to_string()
            }
            other => format!("%{other:02X}"),
        })
        .collect()
}
