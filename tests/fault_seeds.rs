//! The seeds' fault tests, for real: a coordinator (on each backend) and a sandbox on loopback, driven over
//! HTTP, each scenario asserting on logical outcomes — the sandbox's true effects per action
//! key, the intent's final state, attempts against the budget, late results — never on RPC
//! success. Every wait polls for the expected state with a bounded patience; none sleeps to
//! synchronise.

use std::time::{Duration, Instant};

use intentdesk::domain::{AttemptId, Event, IntentId, KeyContract};
use intentdesk::sandbox::{FaultSpec, Resource, SandboxState, WebhookTarget};
use intentdesk::store::ops::*;
use intentdesk::store::{ApplyContext, ClaimedRow, DispatchPlan, SendTerms};
use intentdesk::workload::{DriverConfig, Mix, drive};
use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::net::TcpListener;

mod common;
use common::backends::Backend;
use common::deploy::{self, Token};

on_both_backends_tokio! {
    a_response_dropped_after_commit_ends_committed_through_lookup_not_resend,
    a_first_attempt_held_until_after_the_retry_lands_as_a_replay_with_one_effect,
    a_redelivered_queue_message_and_webhook_give_one_effect_and_one_receipt,
    overload_at_every_layer_keeps_every_intent_within_its_budget,
    a_losing_hedge_finishing_after_the_winner_has_no_effect_and_counts_as_late,
    authorisation_expiring_while_an_attempt_is_in_flight_allows_no_new_attempt,
    one_order_sent_from_the_persian_and_the_english_interface_is_one_intent_with_one_effect,
    reusing_a_key_with_changed_parameters_is_refused_and_changes_nothing,
    a_deliberate_repeat_under_a_new_key_is_a_second_intent_and_a_second_effect,
    a_downstream_that_forgot_the_key_gets_no_blind_resend,
}

const ADMIN: &str = "fault-admin-token";
const AGENT: &str = "fault-agent-token";
/// What the sandbox presents with its receipts.
const ERP: &str = "fault-erp-connector-token";
/// Guards against a hang; never a stand-in for synchronisation.
const PATIENCE: Duration = Duration::from_secs(30);
const POLL: Duration = Duration::from_millis(25);

/// What a scenario changes about the coordinator and the sandbox.
struct Setup {
    faults: &'static str,
    webhooks: bool,
    timeout_ms: u64,
    key_retention_secs: u64,
    dispatch_lease_ms: u64,
}

impl Default for Setup {
    fn default() -> Self {
        Setup {
            faults: "none",
            webhooks: false,
            timeout_ms: 300,
            key_retention_secs: 86_400,
            dispatch_lease_ms: 30_000,
        }
    }
}

/// A coordinator and a sandbox, stopped when dropped.
struct Rig {
    base: String,
    sandbox_url: String,
    sandbox: SandboxState,
    http: reqwest::Client,
    db: intentdesk::store::Location,
    _coordinator: deploy::Coordinator,
    _sandbox: deploy::Sandbox,
    _dir: tempfile::TempDir,
}

async fn start(backend: &Backend, setup: Setup) -> Rig {
    // The coordinator's address comes first: the sandbox sends its receipts there.
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind coordinator");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let webhook = setup.webhooks.then(|| WebhookTarget {
        url: format!("{base}/v1/receipts/erp")
            .parse()
            .expect("webhook URL"),
        token: Some(ERP.to_string()),
    });
    let downstream = deploy::sandbox(setup.faults, webhook, Some(11)).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let tokens = vec![
        Token::all_tenants("admin", ADMIN),
        Token::all_tenants("agent", AGENT),
        Token::erp_connector(ERP),
    ];
    let mut config = deploy::Setup::on(backend, dir.path(), &downstream.url, tokens);
    config.timeout_ms = setup.timeout_ms;
    config.key_retention_secs = setup.key_retention_secs;
    config.dispatch_lease_ms = Some(setup.dispatch_lease_ms);
    let coordinator = deploy::Coordinator::serve(listener, &config);
    let http = intentdesk::tls::client(None)
        .expect("a TLS client")
        .no_proxy()
        .timeout(PATIENCE)
        .build()
        .expect("client");
    Rig {
        base,
        sandbox_url: downstream.url.clone(),
        sandbox: downstream.state.clone(),
        http,
        db: config.database,
        _coordinator: coordinator,
        _sandbox: downstream,
        _dir: dir,
    }
}

/// An intent body: `operation` of `tier` with `args`.
fn intent(operation: &str, tier: &str, args: Value, locale: &str) -> Value {
    json!({
        "tenant": "pars-trading",
        "actor": "agent:kharid-bot",
        "purpose": "ثبت سفارش خرید تأییدشده",
        "operation": operation,
        "tool": "erp",
        "consequence": tier,
        "args": args,
        "deadline_secs": 60,
        "max_attempts": 4,
        "release_id": "procure-agent@2.4.0",
        "locale": locale,
        "connector": "erp",
    })
}

fn purchase_order(amount: &str) -> Value {
    intent(
        "purchase_order.create",
        "write",
        json!({"item": "A4 paper", "qty": 1200, "amount": amount}),
        "en-US",
    )
}

impl Rig {
    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        token: &str,
        body: Option<&Value>,
    ) -> (StatusCode, Value) {
        let mut request = self
            .http
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(token);
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = request.send().await.expect("the coordinator answers");
        let status = response.status();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    /// Create under `key`: the status, the intent, and whether it was a replay.
    async fn create(&self, key: &str, body: &Value) -> (StatusCode, Value, bool) {
        let response = self
            .http
            .post(format!("{}/v1/intents", self.base))
            .bearer_auth(AGENT)
            .header("Idempotency-Key", key)
            .json(body)
            .send()
            .await
            .expect("the coordinator answers");
        let status = response.status();
        let replayed = response
            .headers()
            .get("idempotent-replayed")
            .is_some_and(|v| v == "true");
        (
            status,
            response.json().await.unwrap_or(Value::Null),
            replayed,
        )
    }

    /// Create, authorise, and return the intent's id and action key.
    async fn authorized(
        &self,
        key: &str,
        body: &Value,
        valid_for_secs: Option<u64>,
    ) -> (String, String) {
        let (status, created, _) = self.create(key, body).await;
        assert_eq!(status, StatusCode::CREATED, "{created}");
        let id = created["id"].as_str().expect("an id").to_string();
        let mut approval = json!({"authorization_version": "policy-v7"});
        if let Some(secs) = valid_for_secs {
            approval["valid_for_secs"] = secs.into();
        }
        let (status, body) = self
            .call(
                reqwest::Method::POST,
                &format!("/v1/intents/{id}/authorize"),
                ADMIN,
                Some(&approval),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        (
            id,
            created["action_key"]
                .as_str()
                .expect("an action key")
                .to_string(),
        )
    }

    async fn dispatch(&self, id: &str) -> bool {
        let (status, body) = self
            .call(
                reqwest::Method::POST,
                &format!("/v1/intents/{id}/dispatch"),
                AGENT,
                None,
            )
            .await;
        assert_eq!(status, StatusCode::ACCEPTED, "{body}");
        body["dispatched"].as_bool().expect("dispatched is a bool")
    }

    async fn start_attempt(
        &self,
        id: &str,
        provider: &str,
        hedge_group: Option<&str>,
    ) -> (StatusCode, Value) {
        let body = json!({"kind": "retrieval", "provider": provider, "hedge_group": hedge_group});
        self.call(
            reqwest::Method::POST,
            &format!("/v1/intents/{id}/attempts"),
            AGENT,
            Some(&body),
        )
        .await
    }

    async fn finish_attempt(&self, id: &str, attempt: &str, outcome: &str) -> Value {
        let body = json!({"outcome": outcome, "provider_request_id": format!("req-{attempt}"),
                          "cost_micros": 4200});
        let (status, body) = self
            .call(
                reqwest::Method::PATCH,
                &format!("/v1/intents/{id}/attempts/{attempt}"),
                AGENT,
                Some(&body),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body
    }

    /// The operator's view of one intent: envelope, attempts, receipts, transitions.
    async fn detail(&self, id: &str) -> Value {
        let (status, body) = self
            .call(
                reqwest::Method::GET,
                &format!("/v1/intents/{id}"),
                ADMIN,
                None,
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body
    }

    /// Poll the intent until `done` holds; its detail then.
    async fn wait_for(&self, id: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let detail = self.detail(id).await;
            if done(&detail) {
                return detail;
            }
            assert!(
                Instant::now() < deadline,
                "waited too long for {what}: {detail:#}"
            );
            tokio::time::sleep(POLL).await;
        }
    }

    async fn wait_for_state(&self, id: &str, state: &str) -> Value {
        self.wait_for(id, state, |d| d["intent"]["state"] == state)
            .await
    }

    fn effects(&self, action_key: &str) -> u64 {
        self.sandbox
            .effects_for(&action_key.parse().expect("action key"))
    }

    /// Wait until the sandbox says so.
    async fn wait_for_sandbox(&self, what: &str, done: impl Fn(&SandboxState) -> bool) {
        let deadline = Instant::now() + PATIENCE;
        while !done(&self.sandbox) {
            assert!(Instant::now() < deadline, "waited too long for {what}");
            tokio::time::sleep(POLL).await;
        }
    }

    /// Dispatch as a coordinator does, claiming the outbox message with a short lease, in
    /// one transaction on the coordinator's database, as a coordinator that then dies
    /// leaves it: the claim it holds.
    fn dispatch_as_a_coordinator_that_dies(&self, id: &str) -> ClaimedRow {
        let id: IntentId = id.parse().expect("an intent id");
        let now = intentdesk::clock::Clock::now_ms(&intentdesk::clock::SystemClock);
        // The `erp` connector of the test's configuration.
        let contract = |_: &str, operation: &str| {
            let resource = match operation {
                "purchase_order.create" => "purchase-orders",
                "inventory.reserve" => "inventory-reservations",
                "payment.initiate" => "payments",
                other => return Err(format!("no resource for `{other}`")),
            };
            Ok(SendTerms {
                key: KeyContract {
                    supports_idempotency: true,
                    retention_ms: 86_400_000,
                    timeout_ms: 300,
                },
                resource: resource.to_string(),
            })
        };
        common::backends::with_store(&self.db, |store| {
            store
                .batch(|s| {
                    let ctx = ApplyContext {
                        now_ms: now,
                        dispatch: Some(DispatchPlan {
                            attempt_id: AttemptId::generate(now, 77),
                            available_at_ms: now,
                        }),
                        ..ApplyContext::default()
                    };
                    s.apply(&id, &Event::Dispatch, &ctx)?;
                    s.claim_outbox("a coordinator that dies", now, 300, 1, &contract)
                })
                .expect("the transaction commits")
                .expect("the dispatch is claimed")
                .rows
                .pop()
                .expect("one claimed message")
        })
    }

    /// A raw query on the coordinator's database, for what the API does not show.
    fn query_u64(&self, sql: &str, id: &str) -> u64 {
        use intentdesk::store::sql::{ConnExt, params};
        common::backends::with_store(&self.db, |store| {
            store
                .conn()
                .one(sql, params![id], |r| r.get::<i64>(0))
                .map(|v| v as u64)
                .expect("query answers")
        })
    }
}

fn attempts_of<'a>(detail: &'a Value, kind: &str) -> Vec<&'a Value> {
    detail["attempts"]
        .as_array()
        .expect("attempts")
        .iter()
        .filter(|a| a["kind"] == kind)
        .collect()
}

async fn a_response_dropped_after_commit_ends_committed_through_lookup_not_resend(
    backend: Backend,
) {
    let rig = start(
        &backend,
        Setup {
            faults: "drop_after_commit=1",
            ..Setup::default()
        },
    )
    .await;
    let (id, key) = rig
        .authorized("drop-1", &purchase_order("4500"), None)
        .await;
    assert!(rig.dispatch(&id).await);

    let detail = rig.wait_for_state(&id, "committed").await;
    assert_eq!(rig.effects(&key), 1, "one effect downstream");
    assert_eq!(
        attempts_of(&detail, "dispatch").len(),
        1,
        "never resent: {detail:#}"
    );
    let receipts = detail["receipts"].as_array().expect("receipts");
    assert_eq!(receipts.len(), 1, "{detail:#}");
    assert_eq!(
        receipts[0]["source"], "lookup",
        "committed by looking the key up"
    );
}

async fn a_first_attempt_held_until_after_the_retry_lands_as_a_replay_with_one_effect(
    backend: Backend,
) {
    let rig = start(
        &backend,
        Setup {
            // Held far past the second lookup: the first is woken at once and may still
            // be held, its successor is due 1-2 s after it (the reconciler's backoff), and
            // the retry it proves needed must land before the held send does.
            faults: "delay_ms=8000",
            ..Setup::default()
        },
    )
    .await;
    let (id, key) = rig
        .authorized("held-1", &purchase_order("4500"), None)
        .await;
    assert!(rig.dispatch(&id).await);

    // The first send is held past the connector's timeout: its outcome is unknown.
    rig.wait_for_state(&id, "indeterminate").await;
    rig.sandbox.set_faults(FaultSpec::none());
    // A lookup proves the key absent (the first send is still held), so the same command
    // is sent again with the same key, and that retry returns first.
    let detail = rig.wait_for_state(&id, "committed").await;
    assert_eq!(rig.effects(&key), 1);
    // Then the held first attempt lands: a replay of the retry's record, no new effect.
    let action_key = key.parse().expect("action key");
    rig.wait_for_sandbox("the held request to land", |s| {
        s.replays_for(&action_key) >= 1
    })
    .await;
    assert_eq!(rig.effects(&key), 1, "one effect after both landed");
    let dispatches = attempts_of(&detail, "dispatch");
    assert_eq!(dispatches.len(), 2, "{detail:#}");
    assert_eq!(dispatches[0]["outcome"], "timed_out");
    assert_eq!(dispatches[1]["outcome"], "succeeded");
}

async fn a_redelivered_queue_message_and_webhook_give_one_effect_and_one_receipt(backend: Backend) {
    // A coordinator claimed the outbox message, sent it and died before recording anything;
    // the queue delivers the message again to a live dispatcher once the dead one's lease
    // runs out, while the send is still held downstream. The webhook comes three times.
    let setup = Setup {
        faults: "delay_ms=400,redeliver=3",
        webhooks: true,
        ..Setup::default()
    };
    let rig = start(&backend, setup).await;
    let (id, key) = rig
        .authorized("redeliver-1", &purchase_order("4500"), None)
        .await;
    let claimed = rig.dispatch_as_a_coordinator_that_dies(&id);
    let send = rig
        .http
        .post(format!("{}/purchase-orders", rig.sandbox_url))
        .header("Idempotency-Key", claimed.action_key.as_str())
        .header("Content-Type", "application/json")
        .body(claimed.payload_json.clone())
        .send();
    // The dying coordinator's send is on its way; it dies before the answer.
    let in_flight = tokio::spawn(send);
    rig.wait_for_state(&id, "committed").await;
    let _ = in_flight.await;

    let deliveries = "SELECT coalesce(max(w.deliveries), 0) FROM webhook_arrivals w \
         JOIN intents i ON i.seq = w.intent_seq WHERE i.action_key = ?1";
    let deadline = Instant::now() + PATIENCE;
    while rig.query_u64(deliveries, &key) < 3 {
        assert!(
            Instant::now() < deadline,
            "the webhook was not delivered three times"
        );
        tokio::time::sleep(POLL).await;
    }
    // The queue delivers the message again once the dead coordinator's lease runs out, and
    // the live dispatcher records it as possibly sent without sending it.
    let handled_again = "SELECT count(*) FROM outbox o JOIN intents i ON i.seq = o.intent_seq \
         WHERE i.id = ?1 AND o.claims >= 2 AND o.status = 'done'";
    while rig.query_u64(handled_again, &id) < 1 {
        assert!(
            Instant::now() < deadline,
            "the queue message was never delivered again"
        );
        tokio::time::sleep(POLL).await;
    }
    let detail = rig.detail(&id).await;
    assert_eq!(rig.effects(&key), 1, "one effect");
    assert_eq!(
        detail["receipts"].as_array().expect("receipts").len(),
        1,
        "one receipt: {detail:#}"
    );
    assert_eq!(
        attempts_of(&detail, "dispatch").len(),
        1,
        "the redelivered message was not resent"
    );
}

async fn overload_at_every_layer_keeps_every_intent_within_its_budget(backend: Backend) {
    let rig = start(
        &backend,
        Setup {
            faults: "overload=1,retry_after_secs=1",
            ..Setup::default()
        },
    )
    .await;
    // The agents' providers refuse every call too; the agents keep trying past the budget.
    let mix = Mix {
        provider_failure: 0.0,
        provider_overload: 1.0,
        provider_timeout: 0.0,
        hedge: 0.3,
        replay_same: 0.0,
        replay_other_interface: 0.0,
        repeat: 0.0,
        changed_reuse: 0.0,
        double_dispatch: 0.2,
        latency_scale: 0.02,
        deadline_scale: 1.0,
        legacy: 0.0,
    };
    let config = DriverConfig {
        coordinator: rig.base.parse().expect("URL"),
        token: AGENT.to_string(),
        approver_token: Some(ADMIN.to_string()),
        seed: 4,
        run_tag: "overload".to_string(),
        mix,
        rate_per_sec: 200.0,
        intents: Some(30),
        concurrency: 30,
        batch: 1,
        request_timeout: Duration::from_secs(10),
        patience: Duration::from_secs(10),
        keep_intents: true,
        clock: intentdesk::clock::system_clock(),
    };
    let log = drive(&config, std::future::pending())
        .await
        .expect("the workload runs");
    assert_eq!(log.totals.errors, 0, "{:?}", log.errors);
    assert!(
        log.totals.attempts_refused > 0,
        "agents met the budget: {:?}",
        log.totals
    );

    for driven in &log.intents {
        let id = driven.id.as_str();
        let detail = if driven.tier.is_mutating() {
            rig.wait_for_state(id, "rejected").await
        } else {
            rig.detail(id).await
        };
        let intent = &detail["intent"];
        let (used, budget) = (
            intent["attempts"].as_u64().expect("n"),
            intent["max_attempts"].as_u64().expect("n"),
        );
        assert!(
            used <= budget,
            "{used} attempts of a budget of {budget}: {detail:#}"
        );
        assert_eq!(rig.effects(driven.action_key.as_str()), 0);
    }
    let (_, summary) = rig
        .call(reqwest::Method::GET, "/v1/metrics/summary", ADMIN, None)
        .await;
    assert_eq!(summary["budget_exceeded"], 0, "{summary:#}");
    let mean = summary["amplification"]["mean"].as_f64().expect("mean");
    assert!(
        mean <= 4.0,
        "amplification {mean} stays within the largest budget"
    );
    assert_eq!(
        rig.sandbox.effects_summary().effects,
        0,
        "an overloaded downstream applied nothing"
    );
}

async fn a_losing_hedge_finishing_after_the_winner_has_no_effect_and_counts_as_late(
    backend: Backend,
) {
    let rig = start(&backend, Setup::default()).await;
    let search = intent(
        "supplier.search",
        "read",
        json!({"query": "کاغذ A4", "max_results": "۱۰"}),
        "fa-IR",
    );
    let (id, key) = rig.authorized("hedge-1", &search, None).await;
    let (status, a) = rig.start_attempt(&id, "openai", Some("hedge-1")).await;
    assert_eq!(status, StatusCode::CREATED, "{a}");
    let (status, b) = rig.start_attempt(&id, "anthropic", Some("hedge-1")).await;
    assert_eq!(status, StatusCode::CREATED, "{b}");
    let (a, b) = (a["id"].as_str().expect("id"), b["id"].as_str().expect("id"));

    let winner = rig.finish_attempt(&id, b, "succeeded").await;
    assert_eq!(winner["late"], false);
    let loser = rig.finish_attempt(&id, a, "succeeded").await;
    assert_eq!(
        loser["late"], true,
        "the losing hedge finished after the intent had its result"
    );
    // The loser is recorded as a losing hedge, with what it cost; the winner is not.
    assert_eq!(
        (&loser["hedge_lost"], &loser["cost_micros"]),
        (&json!(true), &json!(4200))
    );
    let detail = rig.detail(&id).await;
    let won = detail["attempts"]
        .as_array()
        .and_then(|all| all.iter().find(|x| x["id"] == b))
        .expect("the winner");
    assert_eq!(won["hedge_lost"], false, "{detail:#}");

    let detail = rig.detail(&id).await;
    assert_eq!(detail["intent"]["state"], "committed");
    assert_eq!(
        detail["receipts"].as_array().expect("receipts").len(),
        1,
        "one result: {detail:#}"
    );
    assert!(
        attempts_of(&detail, "dispatch").is_empty(),
        "a read never crosses the action boundary"
    );
    assert_eq!(rig.effects(&key), 0);
    let (_, summary) = rig
        .call(
            reqwest::Method::GET,
            "/v1/metrics/summary?tier=read",
            ADMIN,
            None,
        )
        .await;
    assert_eq!(summary["late_results"], 1, "{summary:#}");

    // A write is never hedged: two concurrent dispatches are one dispatch.
    let (id, key) = rig
        .authorized("hedge-2", &purchase_order("4500"), None)
        .await;
    let (first, second) = tokio::join!(rig.dispatch(&id), rig.dispatch(&id));
    assert!(first ^ second, "exactly one call enqueued the dispatch");
    let detail = rig.wait_for_state(&id, "committed").await;
    assert_eq!(attempts_of(&detail, "dispatch").len(), 1);
    assert_eq!(rig.effects(&key), 1);
    assert_eq!(
        rig.sandbox.effects_summary().effects,
        1,
        "the read added nothing downstream"
    );
}

/// Wait until the authorisation of `detail`'s intent has lapsed by the coordinator's clock.
async fn wait_until_lapsed(rig: &Rig, id: &str) {
    let detail = rig.detail(id).await;
    let expires = detail["intent"]["authorization_expires_at_ms"]
        .as_u64()
        .expect("an expiry");
    let deadline = Instant::now() + PATIENCE;
    while intentdesk::clock::Clock::now_ms(&intentdesk::clock::SystemClock) <= expires {
        assert!(Instant::now() < deadline, "the authorisation never lapsed");
        tokio::time::sleep(POLL).await;
    }
}

async fn authorisation_expiring_while_an_attempt_is_in_flight_allows_no_new_attempt(
    backend: Backend,
) {
    let rig = start(
        &backend,
        Setup {
            // Approvals last three seconds, time for an attempt to begin on a loaded
            // machine; a send refused for load is retried four seconds on, past the lapse.
            faults: "overload=1,retry_after_secs=4",
            ..Setup::default()
        },
    )
    .await;

    // Non-mutating work: the attempt in flight ends, visibly; the next one is refused.
    let compare = intent(
        "quote.compare",
        "compute",
        json!({"quotes": ["a", "b"]}),
        "en-US",
    );
    let (id, _) = rig.authorized("auth-1", &compare, Some(3)).await;
    let (status, started) = rig.start_attempt(&id, "openai", None).await;
    assert_eq!(status, StatusCode::CREATED, "{started}");
    wait_until_lapsed(&rig, &id).await;
    rig.finish_attempt(&id, started["id"].as_str().expect("id"), "failed")
        .await;
    let (status, refused) = rig.start_attempt(&id, "anthropic", None).await;
    assert_eq!(status, StatusCode::CONFLICT, "{refused}");
    assert_eq!(refused["error"]["code"], "authorization_invalid");
    let detail = rig.detail(&id).await;
    let attempts = detail["attempts"].as_array().expect("attempts");
    assert_eq!(attempts.len(), 1, "no new attempt: {detail:#}");
    assert_eq!(attempts[0]["outcome"], "failed", "the outcome is visible");

    // Mutating work: a retry planned before the lapse is not sent after it; the intent
    // waits for a fresh approval, which an approver gives, and then it goes.
    let (id, key) = rig
        .authorized("auth-2", &purchase_order("4500"), Some(3))
        .await;
    assert!(rig.dispatch(&id).await);
    let detail = rig
        .wait_for(&id, "the retry held for want of an approval", |d| {
            let dispatches = attempts_of(d, "dispatch");
            dispatches.len() >= 2
                && dispatches
                    .last()
                    .is_some_and(|a| a["outcome"] == "abandoned")
                && d["intent"]["state_reason"]
                    .as_str()
                    .is_some_and(|r| r.starts_with("waiting for a fresh approval"))
        })
        .await;
    assert_eq!(
        detail["intent"]["state"], "executing",
        "not rejected: {detail:#}"
    );
    let expires = detail["intent"]["authorization_expires_at_ms"]
        .as_u64()
        .expect("an expiry");
    let dispatches = attempts_of(&detail, "dispatch");
    for attempt in &dispatches {
        let started = attempt["started_at_ms"].as_u64().expect("start");
        assert!(
            started < expires,
            "no attempt begun after the lapse: {detail:#}"
        );
    }
    let last = dispatches.last().expect("at least one dispatch");
    assert_eq!(
        (&last["sent"], &last["http_status"]),
        (&json!(false), &Value::Null),
        "the retry planned before the lapse was not sent: {detail:#}"
    );
    assert_eq!(rig.effects(&key), 0);

    // A fresh approval, by someone other than the agent: the held retry is planned again.
    rig.sandbox.set_faults("none".parse().expect("faults"));
    let (status, body) = rig
        .call(
            reqwest::Method::POST,
            &format!("/v1/intents/{id}/authorize"),
            ADMIN,
            Some(&json!({"authorization_version": "policy-v8"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let detail = rig.wait_for_state(&id, "committed").await;
    assert_eq!(rig.effects(&key), 1);
    assert_eq!(detail["intent"]["authorization_version"], "policy-v8");
    assert!(
        detail["intent"]["state_reason"].is_null(),
        "the wait is over: {detail:#}"
    );
}

async fn one_order_sent_from_the_persian_and_the_english_interface_is_one_intent_with_one_effect(
    backend: Backend,
) {
    let rig = start(&backend, Setup::default()).await;
    let persian = intent(
        "purchase_order.create",
        "write",
        json!({"item": "کاغذ A4", "qty": "۱۲۰۰", "supplier": "شرکت پارس کاغذ", "amount": "۴۵۰۰۰۰۰"}),
        "fa-IR",
    );
    // The English interface: ASCII digits, a grouped amount, and an Arabic keyboard's kaf.
    let english = intent(
        "purchase_order.create",
        "write",
        json!({"item": "كاغذ A4", "qty": "1200", "supplier": "شركت پارس كاغذ", "amount": "4,500,000"}),
        "en-US",
    );
    let (status, first, _) = rig.create("pars-po-77", &persian).await;
    assert_eq!(status, StatusCode::CREATED, "{first}");
    let (status, again, replayed) = rig.create("pars-po-77", &english).await;
    assert_eq!(status, StatusCode::OK, "{again}");
    assert!(replayed, "answered as a replay");
    assert_eq!(first["id"], again["id"], "one intent");

    let id = first["id"].as_str().expect("id");
    let key = first["action_key"].as_str().expect("key");
    let approval = json!({"authorization_version": "policy-v7"});
    let (status, _) = rig
        .call(
            reqwest::Method::POST,
            &format!("/v1/intents/{id}/authorize"),
            ADMIN,
            Some(&approval),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    // Both interfaces press dispatch.
    let (a, b) = tokio::join!(rig.dispatch(id), rig.dispatch(id));
    assert!(a ^ b);
    rig.wait_for_state(id, "committed").await;
    assert_eq!(rig.effects(key), 1);
    assert_eq!(rig.sandbox.effects_summary().effects, 1);
}

async fn reusing_a_key_with_changed_parameters_is_refused_and_changes_nothing(backend: Backend) {
    let rig = start(&backend, Setup::default()).await;
    let (id, key) = rig.authorized("po-88", &purchase_order("4500"), None).await;
    assert!(rig.dispatch(&id).await);
    rig.wait_for_state(&id, "committed").await;

    let (status, refused, _) = rig.create("po-88", &purchase_order("9900")).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{refused}");
    assert_eq!(refused["error"]["code"], "idempotency_key_mismatch");
    // Downstream, the action key with a changed body is refused as well.
    let changed = rig
        .http
        .post(format!("{}/purchase-orders", rig.sandbox_url))
        .header("Idempotency-Key", &key)
        .json(&json!({"amount": 9900, "item": "A4 paper", "qty": 1200}))
        .send()
        .await
        .expect("the sandbox answers");
    assert_eq!(changed.status(), StatusCode::UNPROCESSABLE_ENTITY);

    assert_eq!(rig.effects(&key), 1, "no new effect");
    let record = rig
        .sandbox
        .lookup(Resource::PurchaseOrders, &key.parse().expect("key"))
        .expect("the record");
    assert_eq!(record.body["amount"], 4500, "the first order stands");
    let detail = rig.detail(&id).await;
    assert_eq!(
        detail["ingest_mismatches"], 1,
        "the refused reuse is on the record: {detail:#}"
    );
}

async fn a_deliberate_repeat_under_a_new_key_is_a_second_intent_and_a_second_effect(
    backend: Backend,
) {
    let rig = start(&backend, Setup::default()).await;
    let order = purchase_order("4500");
    let (first, first_key) = rig.authorized("po-monday", &order, None).await;
    let (second, second_key) = rig.authorized("po-monday-again", &order, None).await;
    assert_ne!(first, second, "two intents");
    assert_ne!(first_key, second_key, "two action keys");
    assert!(rig.dispatch(&first).await);
    assert!(rig.dispatch(&second).await);
    rig.wait_for_state(&first, "committed").await;
    rig.wait_for_state(&second, "committed").await;
    assert_eq!((rig.effects(&first_key), rig.effects(&second_key)), (1, 1));
    let totals = rig.sandbox.effects_summary();
    assert_eq!(
        (totals.effects, totals.duplicate_effects),
        (2, 0),
        "two effects, neither a duplicate"
    );
}

async fn a_downstream_that_forgot_the_key_gets_no_blind_resend(backend: Backend) {
    // The downstream keeps keys for one second, and says so in the connector's config.
    let setup = Setup {
        faults: "delay_ms=2000,retention_secs=1",
        key_retention_secs: 1,
        ..Setup::default()
    };
    let rig = start(&backend, setup).await;
    let (id, key) = rig
        .authorized("forget-1", &purchase_order("4500"), None)
        .await;
    assert!(rig.dispatch(&id).await);
    rig.wait_for_state(&id, "indeterminate").await;

    // The held send lands late, after the coordinator gave up waiting; lookups are held too
    // and time out, until the downstream has forgotten the key.
    let action_key: intentdesk::sandbox::ExternalRef = key.parse().expect("key");
    rig.wait_for_sandbox("the held send to land", |s| s.effects_for(&action_key) == 1)
        .await;
    rig.wait_for_sandbox("the key to be forgotten", |s| {
        s.lookup(Resource::PurchaseOrders, &action_key).is_none()
    })
    .await;
    rig.sandbox
        .set_faults("retention_secs=1".parse().expect("spec"));

    // Now a lookup answers "not found", twice; not found is no proof once the key may have
    // been forgotten, so nothing is resent.
    let detail = rig
        .wait_for(&id, "two lookups answered not found", |d| {
            attempts_of(d, "lookup")
                .iter()
                .filter(|a| a["http_status"] == 404)
                .count()
                >= 2
        })
        .await;
    assert_eq!(
        detail["intent"]["state"], "indeterminate",
        "left for an operator"
    );
    assert_eq!(
        attempts_of(&detail, "dispatch").len(),
        1,
        "no resend: {detail:#}"
    );
    assert_eq!(rig.effects(&key), 1, "a resend would have made it two");
}
