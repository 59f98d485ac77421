//! What the HTTP benchmarks share: the purchase order they send, its create, the count of
//! committed orders, and percentiles of sorted latencies. Included by path
//! (`#[path = "support/orders.rs"] mod orders;`), each benchmark being its own crate.

use serde_json::{Value, json};

/// The admin token every benchmark's coordinator admits; it creates and approves its own
/// orders (`may_approve_own`), as a load harness stands for both the agent and the approver.
pub const TOKEN: &str = "bench-token";

/// The `p`th percentile of `sorted`.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted[rank.min(sorted.len()) - 1]
}

/// Order number `n`: a purchase order on the `erp` connector.
pub fn order(n: u64) -> Value {
    json!({
        "tenant": "acme", "actor": "bench", "purpose": "bench", "operation": "purchase_order.create",
        "tool": "erp.po", "consequence": "write", "args": {"item": "paper", "qty": n % 5000 + 1},
        "deadline_secs": 600, "max_attempts": 3, "release_id": "r1", "locale": "en-US", "connector": "erp"
    })
}

/// Create order `n` under the key `{tag}-{n}`: its id.
pub async fn create(http: &reqwest::Client, url: &str, n: u64, tag: &str) -> String {
    let created: Value = http
        .post(format!("{url}/v1/intents"))
        .bearer_auth(TOKEN)
        .header("Idempotency-Key", format!("{tag}-{n}"))
        .json(&order(n))
        .send()
        .await
        .expect("create")
        .json()
        .await
        .expect("json");
    created["id"].as_str().expect("id").to_string()
}

/// How many intents the coordinator at `url` has committed.
pub async fn committed(http: &reqwest::Client, url: &str) -> u64 {
    let summary: Value = http
        .get(format!("{url}/v1/metrics/summary"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .expect("summary")
        .json()
        .await
        .expect("json");
    summary["committed"].as_u64().unwrap_or(0)
}

/// Order `n`, created, authorised and dispatched; with several coordinators (`urls`) its
/// three requests each go to the next one, as a round-robin load balancer sends them.
pub async fn whole_order(http: &reqwest::Client, urls: &[String], n: u64) {
    let at = |step: u64| &urls[((n + step) % urls.len() as u64) as usize];
    let id = create(http, at(0), n, "order").await;
    let auth = json!({"authorization_version": "v1"});
    let r = http
        .post(format!("{}/v1/intents/{id}/authorize", at(1)))
        .bearer_auth(TOKEN)
        .json(&auth)
        .send()
        .await;
    assert!(r.expect("authorize").status().is_success());
    let r = http
        .post(format!("{}/v1/intents/{id}/dispatch", at(2)))
        .bearer_auth(TOKEN)
        .send()
        .await;
    assert_eq!(r.expect("dispatch").status().as_u16(), 202);
}
