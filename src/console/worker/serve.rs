//! Serving one request: from the coordinator, with the local cache in front of it for
//! pages and details (and instead of it offline).

use std::time::Duration;

use serde_json::Value;

use super::messages::{DashboardAnswer, DashboardRead, MetricsError, Reply, Request};
use crate::client::{Client, ClientError};
use crate::console::cache::Cache;
use crate::console::model::IntentPage;
use crate::console::views::revisit_notice::SHOWN;
use crate::wire::CommandBody;

pub(super) async fn serve(
    client: Option<&Client>,
    cache: Option<&Cache>,
    request: Request,
) -> Vec<Reply> {
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
        Request::Revisits => {
            let result = match client {
                Some(c) => c.revisits(0, SHOWN).await,
                None => Err(offline()),
            };
            vec![Reply::Revisits { result }]
        }
        Request::Whoami => {
            let result = match client {
                Some(c) => c.whoami().await,
                None => Err(offline()),
            };
            vec![Reply::Whoami { result }]
        }
        Request::Dashboard {
            generation,
            read,
            query,
        } => {
            let result = match client {
                Some(c) => read_dashboard(c, read, &query).await,
                None => Err(offline().into()),
            };
            vec![Reply::Dashboard {
                generation,
                read,
                result,
            }]
        }
        Request::Command { body } => {
            let result = match client {
                Some(c) => send_command(c, &body).await,
                None => Err(offline()),
            };
            let result = match (client, result) {
                (Some(c), Ok(record)) if body.dry_run => Ok(with_first_targets(c, record).await),
                (_, other) => other,
            };
            vec![Reply::Command { body, result }]
        }
    }
}

/// How many of a dry run's targets the command dialog lists.
const FIRST_TARGETS: u32 = 50;

/// A dry run's record with the first of its frozen targets beside its count, as
/// `result.targets` (the record itself carries only `result.target_count`). Without them
/// the dialog still shows the count.
async fn with_first_targets(client: &Client, mut record: Value) -> Value {
    let Some(id) = record.get("command_id").and_then(Value::as_str) else {
        return record;
    };
    match client.command_targets(id, FIRST_TARGETS).await {
        Ok(page) => {
            let ids: Vec<Value> = page
                .items
                .into_iter()
                .map(|t| Value::String(t.intent_id))
                .collect();
            if let Some(result) = record.get_mut("result").and_then(Value::as_object_mut) {
                result.insert("targets".into(), Value::Array(ids));
            }
        }
        Err(e) => tracing::warn!(error = %e, "a dry run's targets could not be read"),
    }
    record
}

/// Send a command, retrying transport failures with the same body (and so the same command
/// id): the coordinator answers a replay with the first result, so a retry never applies a
/// command twice.
async fn send_command(client: &Client, body: &CommandBody) -> Result<Value, ClientError> {
    let body = serde_json::to_value(body).map_err(|e| ClientError::BadResponse(e.to_string()))?;
    let mut delay = Duration::from_millis(200);
    let mut last = None;
    for _ in 0..4 {
        match client.command(&body).await {
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

/// One dashboard figure, read as the type it is.
async fn read_dashboard(
    client: &Client,
    read: DashboardRead,
    query: &[(String, String)],
) -> Result<DashboardAnswer, MetricsError> {
    let value = client.get_json(read.path(), query).await?;
    let unreadable = |e: serde_json::Error| MetricsError::Unreadable(e.to_string());
    Ok(match read {
        DashboardRead::Chart(_) => {
            DashboardAnswer::Chart(serde_json::from_value(value).map_err(unreadable)?)
        }
        DashboardRead::Histogram => {
            DashboardAnswer::Histogram(serde_json::from_value(value).map_err(unreadable)?)
        }
        DashboardRead::Overview => {
            DashboardAnswer::Overview(serde_json::from_value(value).map_err(unreadable)?)
        }
        DashboardRead::Board => {
            let page: IntentPage = serde_json::from_value(value).map_err(unreadable)?;
            DashboardAnswer::Board(page.items)
        }
    })
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
