//! Reconciliation that paces itself: an indeterminate intent whose downstream keeps failing
//! its lookups is looked up with capped exponential backoff, a bounded number of times, and
//! then waits for an operator, whose reconcile looks it up at once.
//!
//! The coordinator runs on a manual clock the test moves, served over real HTTP beside the
//! sandbox: an hour passes in a few seconds, and every lookup is counted at both ends.

use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

use intentdesk::clock::{Clock, Entropy, ManualClock, OsEntropy, SeededEntropy, SystemClock};
use intentdesk::coordinator::{Config, run_with};
use intentdesk::domain::CommandId;
use intentdesk::sandbox::FaultSpec;

use crate::common::backends::Backend;
use crate::common::deploy::{self, Setup, Token};

const ADMIN: &str = "pacing-admin-token";
const AGENT: &str = "pacing-agent-token";
const SUPERVISOR: &str = "pacing-supervisor-token";
const PATIENCE: Duration = Duration::from_secs(20);
const HOUR_MS: u64 = 3_600_000;
const START_MS: u64 = 1_790_000_000_000;

/// The pacing these tests configure: the n-th automatic lookup waits up to
/// 1 s · 2^(n-1), at most 60 s; 20 lookups at most.
const PACING: &str = "[lookups]\nfirst_delay_ms = 1000\nmax_delay_ms = 60000\nbudget = 20\n\
                      per_connector_per_sec = 5\n";
const BUDGET: u64 = 20;

struct Rig {
    base: String,
    http: reqwest::Client,
    clock: Arc<ManualClock>,
    config: Config,
    sandbox: deploy::Sandbox,
    stop: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<anyhow::Result<()>>>,
    _dir: tempfile::TempDir,
}

impl Rig {
    /// A coordinator on a manual clock in front of a sandbox that loses every creation's
    /// response after committing it and fails every lookup.
    async fn start(backend: &Backend, pacing: &str) -> Rig {
        let sandbox = deploy::sandbox("drop_after_commit=1,fail_lookups=1", None, Some(7)).await;
        let dir = tempfile::tempdir().expect("a temporary directory");
        let mut setup = Setup::on(
            backend,
            dir.path(),
            &sandbox.url,
            vec![
                Token::all_tenants("admin", ADMIN),
                Token::all_tenants("agent", AGENT),
                Token::all_tenants("supervisor", SUPERVISOR),
            ],
        );
        setup.top_level = pacing.to_string();
        let config = Config::parse(&setup.toml(), "test").expect("the test configuration");
        let clock = Arc::new(ManualClock::new(START_MS));
        let (base, stop, task) = serve(&config, &clock, 17).await;
        Rig {
            base,
            http: intentdesk::tls::client(None)
                .expect("a TLS client")
                .no_proxy()
                .timeout(PATIENCE)
                .build()
                .expect("a client"),
            clock,
            config,
            sandbox,
            stop: Some(stop),
            task: Some(task),
            _dir: dir,
        }
    }

    async fn call(&self, token: &str, path: &str, body: Option<&Value>) -> (StatusCode, Value) {
        let mut request = match body {
            Some(body) => self.http.post(format!("{}{path}", self.base)).json(body),
            None => self.http.get(format!("{}{path}", self.base)),
        };
        request = request.bearer_auth(token);
        for _ in 0..200 {
            match request.try_clone().expect("a plain request").send().await {
                Ok(response) => {
                    let status = response.status();
                    return (status, response.json().await.unwrap_or(Value::Null));
                }
                // The coordinator may still be starting.
                Err(e) if e.is_connect() => tokio::time::sleep(Duration::from_millis(25)).await,
                Err(e) => panic!("the coordinator answers: {e}"),
            }
        }
        panic!("the coordinator never accepted a connection");
    }

    /// Create an order, have an admin approve it and the agent dispatch it: its id.
    async fn dispatched_order(&self, key: &str) -> String {
        let body = json!({
            "tenant": "acme", "actor": "agent:kharid-bot", "purpose": "restock paper",
            "operation": "purchase_order.create", "tool": "erp", "consequence": "write",
            "args": {"item": "A4 paper", "qty": 1200, "amount": "90"},
            "deadline_secs": 120, "max_attempts": 4, "release_id": "procure-agent@2.4.0",
            "locale": "en-US", "connector": "erp",
        });
        let response = self
            .http
            .post(format!("{}/v1/intents", self.base))
            .bearer_auth(AGENT)
            .header("Idempotency-Key", key)
            .json(&body)
            .send()
            .await
            .expect("the coordinator answers");
        assert_eq!(response.status(), StatusCode::CREATED);
        let created: Value = response.json().await.expect("a body");
        let id = created["id"].as_str().expect("an id").to_string();
        let approval = json!({"authorization_version": "policy-v7"});
        let (status, answer) = self
            .call(
                ADMIN,
                &format!("/v1/intents/{id}/authorize"),
                Some(&approval),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{answer}");
        let response = self
            .http
            .post(format!("{}/v1/intents/{id}/dispatch", self.base))
            .bearer_auth(AGENT)
            .send()
            .await
            .expect("the coordinator answers");
        assert_eq!(response.status(), StatusCode::ACCEPTED);
        id
    }

    async fn intent(&self, id: &str) -> Value {
        let (status, detail) = self.call(ADMIN, &format!("/v1/intents/{id}"), None).await;
        assert_eq!(status, StatusCode::OK, "{detail}");
        detail["intent"].clone()
    }

    /// Poll the intent until `done` holds; the intent then.
    async fn wait_for(&self, id: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let intent = self.intent(id).await;
            if done(&intent) {
                return intent;
            }
            assert!(Instant::now() < deadline, "{what}: {intent}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Let the reconciler make every automatic lookup it is allowed, moving the clock to
    /// each one's due time, until the budget is spent: the lookups counted on the way.
    async fn run_lookups_out(&self, id: &str, within_ms: u64) -> u64 {
        let mut intent = self
            .wait_for(id, "the first lookup", |i| lookups(i) >= 1)
            .await;
        loop {
            let seen = lookups(&intent);
            if !intent["lookups_exhausted_at_ms"].is_null() {
                return seen;
            }
            let Some(next) = intent["next_lookup_at_ms"].as_u64() else {
                // Between the last lookup's count and its recording.
                intent = self.intent(id).await;
                continue;
            };
            assert!(
                next <= START_MS + within_ms,
                "lookup {} would be due {} s in, past {} s: {intent}",
                seen + 1,
                (next - START_MS) / 1000,
                within_ms / 1000
            );
            if next > self.clock.now_ms() {
                self.clock.set_ms(next);
            }
            intent = self
                .wait_for(id, "the next lookup or the budget spent", |i| {
                    lookups(i) > seen || !i["lookups_exhausted_at_ms"].is_null()
                })
                .await;
        }
    }

    /// Wait until the reconciler has made a whole pass after the clock moved to where it
    /// is now: two intents that expire one after the other, each created after the
    /// previous one expired, prove the pass that expired the first one has ended.
    async fn settle_one_pass(&self, tag: &str) {
        for n in 0..2 {
            let body = json!({
                "tenant": "acme", "actor": "agent:kharid-bot", "purpose": "compare quotes",
                "operation": "quote.compare", "tool": "llm", "consequence": "compute",
                "args": {"quotes": ["a", "b"], "n": n, "tag": tag},
                "deadline_secs": 1, "max_attempts": 4, "release_id": "procure-agent@2.4.0",
            });
            let response = self
                .http
                .post(format!("{}/v1/intents", self.base))
                .bearer_auth(AGENT)
                .header("Idempotency-Key", format!("{tag}-{n}"))
                .json(&body)
                .send()
                .await
                .expect("the coordinator answers");
            assert_eq!(response.status(), StatusCode::CREATED);
            let created: Value = response.json().await.expect("a body");
            let id = created["id"].as_str().expect("an id").to_string();
            self.clock.advance_ms(2_000);
            self.wait_for(&id, "the sweep expires it", |i| i["state"] == "expired")
                .await;
        }
    }

    async fn reconcile(&self, id: &str) -> Value {
        let command_id =
            CommandId::generate(SystemClock.now_ms(), OsEntropy::default().next_u128());
        let body = json!({"command_id": command_id.to_string(), "kind": "reconcile",
                          "target": {"intent_id": id}});
        let (status, answer) = self.call(SUPERVISOR, "/v1/commands", Some(&body)).await;
        assert_eq!(status, StatusCode::CREATED, "{answer}");
        answer["result"]["lookups"][0].clone()
    }

    /// Stop the coordinator and start another on the same database and clock.
    async fn restart(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            task.await
                .expect("the coordinator's task")
                .expect("a clean stop");
        }
        let (base, stop, task) = serve(&self.config, &self.clock, 18).await;
        self.base = base;
        self.stop = Some(stop);
        self.task = Some(task);
    }

    /// Let the reconciler make automatic lookups, moving the clock to each one's due time,
    /// until `n` were made: the intent then.
    async fn run_lookups_until(&self, id: &str, n: u64) -> Value {
        loop {
            let intent = self
                .wait_for(id, "a lookup counted and its next one planned", |i| {
                    lookups(i) >= 1 && i["next_lookup_at_ms"].is_u64()
                })
                .await;
            let seen = lookups(&intent);
            if seen >= n {
                return intent;
            }
            let next = intent["next_lookup_at_ms"].as_u64().unwrap_or(0);
            if next > self.clock.now_ms() {
                self.clock.set_ms(next);
            }
            self.wait_for(id, "the next lookup", |i| lookups(i) > seen)
                .await;
        }
    }

    async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            task.await
                .expect("the coordinator's task")
                .expect("a clean stop");
        }
    }
}

type Served = (
    String,
    oneshot::Sender<()>,
    tokio::task::JoinHandle<anyhow::Result<()>>,
);

/// Serve `config` on a loopback port, on `clock`.
async fn serve(config: &Config, clock: &Arc<ManualClock>, seed: u64) -> Served {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind the coordinator");
    let addr = listener.local_addr().expect("an address");
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(run_with(
        listener,
        config.clone(),
        clock.clone(),
        Arc::new(SeededEntropy::new(seed)),
        async {
            let _ = stopped.await;
        },
    ));
    (format!("http://{addr}"), stop, task)
}

fn lookups(intent: &Value) -> u64 {
    intent["lookups"].as_u64().unwrap_or(0)
}

crate::on_both_backends_tokio! {
    multi_thread:
    an_hour_of_failing_lookups_makes_a_bounded_number_of_them,
    an_operator_reconcile_after_the_budget_looks_up_at_once_and_settles,
    a_restart_keeps_each_intents_backoff_where_it_was,
}

async fn a_restart_keeps_each_intents_backoff_where_it_was(backend: Backend) {
    let mut rig = Rig::start(&backend, PACING).await;
    let id = rig.dispatched_order("restart-1").await;
    rig.wait_for(&id, "the lost response", |i| i["state"] == "indeterminate")
        .await;
    // After the fifth lookup the next waits at least 8 s (half of 1 s · 2^4).
    let before = rig.run_lookups_until(&id, 5).await;
    assert_eq!(lookups(&before), 5, "{before}");
    let next = before["next_lookup_at_ms"].as_u64().expect("planned");
    assert!(next >= rig.clock.now_ms() + 8_000, "{before}");

    // A new coordinator on the same database: its first passes look nothing up, since
    // the plan was kept (and the clock moves 4 s while they run, short of the plan).
    rig.restart().await;
    rig.settle_one_pass("after-restart").await;
    let after = rig.intent(&id).await;
    assert!(rig.clock.now_ms() < next);
    assert_eq!(lookups(&after), 5, "{after}");
    assert_eq!(after["next_lookup_at_ms"], next, "{after}");
    assert_eq!(rig.sandbox.state.lookups_received(), 5);

    // When it is due, the sixth follows, and the backoff goes on from there: at least 16 s.
    rig.clock.set_ms(next);
    let sixth = rig
        .wait_for(&id, "the sixth lookup planned", |i| {
            lookups(i) == 6 && i["next_lookup_at_ms"].as_u64() != Some(next)
        })
        .await;
    let last = sixth["last_lookup_at_ms"].as_u64().expect("a last lookup");
    let planned = sixth["next_lookup_at_ms"].as_u64().expect("a plan");
    assert!(planned - last >= 16_000, "{sixth}");
    rig.stop().await;
}

async fn an_hour_of_failing_lookups_makes_a_bounded_number_of_them(backend: Backend) {
    let rig = Rig::start(&backend, PACING).await;
    let id = rig.dispatched_order("hour-1").await;
    rig.wait_for(&id, "the lost response", |i| i["state"] == "indeterminate")
        .await;

    // With these settings the waits add up to at most 1+2+4+8+16+32 s and 13 × 60 s: the
    // budget is spent well inside the hour, whatever the jitter drew.
    let made = rig.run_lookups_out(&id, HOUR_MS).await;
    assert_eq!(made, BUDGET, "exactly the budget's lookups");

    // The rest of the hour passes; the reconciler keeps sweeping and looks nothing up.
    rig.clock.set_ms(START_MS + HOUR_MS);
    rig.settle_one_pass("after-the-hour").await;
    let intent = rig.intent(&id).await;
    assert_eq!(intent["state"], "indeterminate", "{intent}");
    assert_eq!(lookups(&intent), BUDGET, "{intent}");
    assert!(intent["lookups_exhausted_at_ms"].is_u64(), "{intent}");
    assert!(intent["next_lookup_at_ms"].is_null(), "{intent}");
    assert_eq!(intent["attempts"], 1, "lookups are not attempts: {intent}");
    assert_eq!(
        rig.sandbox.state.lookups_received(),
        BUDGET,
        "the downstream saw as many lookups as were counted"
    );

    // The lookups are the intent's own amplification, in the summary and on /metrics.
    let (status, summary) = rig
        .call(
            ADMIN,
            "/v1/metrics/summary?tenant=acme&operation=purchase_order.create",
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{summary}");
    assert_eq!(summary["lookups"], BUDGET, "{summary}");
    assert_eq!(summary["lookup_amplification"]["max"], BUDGET, "{summary}");
    assert_eq!(summary["lookups_exhausted"], 1, "{summary}");
    let text = rig
        .http
        .get(format!("{}/metrics", rig.base))
        .bearer_auth(ADMIN)
        .send()
        .await
        .expect("the coordinator answers")
        .text()
        .await
        .expect("a body");
    assert!(
        text.lines()
            .any(|l| l == format!("intentdesk_lookup_amplification_max {BUDGET}")),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l == "intentdesk_lookups_exhausted_count 1"),
        "{text}"
    );
    rig.stop().await;
}

async fn an_operator_reconcile_after_the_budget_looks_up_at_once_and_settles(backend: Backend) {
    let pacing = "[lookups]\nfirst_delay_ms = 1000\nmax_delay_ms = 4000\nbudget = 3\n";
    let rig = Rig::start(&backend, pacing).await;
    let id = rig.dispatched_order("operator-1").await;
    rig.wait_for(&id, "the lost response", |i| i["state"] == "indeterminate")
        .await;
    assert_eq!(rig.run_lookups_out(&id, HOUR_MS).await, 3);

    // Still failing: the operator's lookup is made and counted, and changes no pacing.
    let still = rig.reconcile(&id).await;
    assert_eq!(still["result"], "still_indeterminate", "{still}");
    let intent = rig.intent(&id).await;
    assert_eq!(lookups(&intent), 4, "{intent}");
    assert!(intent["lookups_exhausted_at_ms"].is_u64(), "{intent}");
    assert_eq!(rig.sandbox.state.lookups_received(), 4);

    // The downstream answers again: the operator's lookup finds the order.
    rig.sandbox.state.set_faults(FaultSpec::none());
    let found = rig.reconcile(&id).await;
    assert_eq!(found["result"], "committed", "{found}");
    let intent = rig.intent(&id).await;
    assert_eq!(intent["state"], "committed", "{intent}");
    assert_eq!(lookups(&intent), 5, "{intent}");
    assert_eq!(rig.sandbox.state.lookups_received(), 5);
    rig.stop().await;
}

/// Pictures of an intent whose lookups ran out, from fixed data and a fixed clock: the
/// envelope and the action-key ledger, and the timeline, in both locales.
#[cfg(feature = "console")]
mod pictures {
    use egui_kittest::Harness;
    use egui_kittest::kittest::Queryable;
    use intentdesk::console::model::IntentDetail;
    use intentdesk::console::views::envelope::envelope_ui;
    use intentdesk::console::views::ledger::{Ledger, ledger_ui};
    use intentdesk::console::views::timeline::model::TimelineModel;
    use intentdesk::console::views::timeline::{TimelineView, timeline_ui};
    use intentdesk::domain::Locale;
    use intentdesk::i18n::Localizer;
    use serde_json::json;

    /// 2026-11-30 09:35:55 UTC.
    const T0: u64 = 1_796_031_355_000;

    /// An order whose response was lost, looked up four times at growing intervals, its
    /// budget of four spent: it waits for an operator.
    fn exhausted() -> IntentDetail {
        let id = "int_01kbx7q3p9d2m8v4r6t0y5zs09";
        let key = format!("po:acme:{id}");
        let lookup = |n: u32, at: u64| {
            json!({"id": format!("att_01kbx7q3p9d2m8v4r6t0y5zsk{n}"), "kind": "lookup", "provider": "erp",
                   "outcome": "failed", "http_status": 500, "started_at_ms": T0 + at,
                   "ended_at_ms": T0 + at + 300, "release_id": "procure-agent@2.5.0"})
        };
        serde_json::from_value(json!({
            "intent": {
                "id": id, "tenant": "acme", "actor": "agent-7", "purpose": "restock paper",
                "operation": "purchase_order.create", "tool": "erp", "consequence": "write",
                "state": "indeterminate", "attempts": 1, "max_attempts": 3,
                "created_at_ms": T0, "updated_at_ms": T0 + 1_200, "deadline_at_ms": T0 + 120_000,
                "action_key": key, "connector": "erp", "release_id": "procure-agent@2.5.0",
                "locale": "en-US", "first_dispatch_at_ms": T0 + 200,
                "indeterminate_since_ms": T0 + 1_200, "key_retention_secs": 86_400,
                "retry_owner": "coordinator", "may_have_crossed_boundary": true,
                "lookups": 4, "last_lookup_at_ms": T0 + 15_000, "next_lookup_at_ms": null,
                "lookups_exhausted_at_ms": T0 + 15_300
            },
            "attempts": [
                {"id": "att_01kbx7q3p9d2m8v4r6t0y5zsk0", "kind": "dispatch", "provider": "erp",
                 "outcome": "lost", "sent": true, "presented_key": key, "started_at_ms": T0 + 200,
                 "ended_at_ms": T0 + 1_200, "release_id": "procure-agent@2.5.0"},
                lookup(1, 1_300), lookup(2, 3_300), lookup(3, 7_300), lookup(4, 15_000)
            ],
            "transitions": [
                {"from": null, "to": "prepared", "event": "validated", "at_ms": T0 + 5},
                {"from": "prepared", "to": "authorized", "event": "authorized", "at_ms": T0 + 120},
                {"from": "authorized", "to": "executing", "event": "dispatch", "at_ms": T0 + 200},
                {"from": "executing", "to": "indeterminate", "event": "outcome_unknown", "at_ms": T0 + 1_205}
            ],
            "key_forget_at_ms": T0 + 200 + 86_400_000
        }))
        .expect("the detail")
    }

    fn envelope_and_ledger(name: &str, locale: Locale, says: &str) {
        let i18n = Localizer::new(locale);
        let detail = exhausted();
        let ledger = Ledger::build(&detail, T0 + 20_000);
        intentdesk::console::views::charts::time_axis::show_times_in_utc(true);
        let mut harness = Harness::builder()
            .with_size(egui::vec2(1000.0, 1100.0))
            .with_context_setup(intentdesk::console::text::install_fonts)
            .build_ui(move |ui| {
                envelope_ui(ui, &i18n, &detail);
                ui.separator();
                ledger_ui(ui, &i18n, &detail, &ledger);
            });
        harness.run_steps(3);
        assert!(
            harness.query_by_label_contains(says).is_some(),
            "the ledger says `{says}`"
        );
        harness.snapshot(name);
    }

    #[test]
    fn the_ledger_shows_the_lookups_and_that_they_ran_out() {
        envelope_and_ledger(
            "gate_lookups_ledger_en",
            Locale::EnUs,
            "Lookups exhausted at",
        );
    }

    #[test]
    fn the_ledger_shows_the_lookups_and_that_they_ran_out_in_persian() {
        envelope_and_ledger("gate_lookups_ledger_fa", Locale::FaIr, "تمام شد");
    }

    fn timeline(name: &str, locale: Locale) {
        let detail = exhausted();
        let model = TimelineModel::build(&detail, T0 + 20_000);
        assert_eq!(model.lookups_exhausted_ms, Some(15_300));
        assert_eq!(model.next_lookup_ms, None);
        let mut view = TimelineView::default();
        view.sync(&model);
        view.fit_span(&model);
        let i18n = Localizer::new(locale);
        let height = if i18n.is_rtl() { 352.0 } else { 330.0 };
        let mut harness = Harness::builder()
            .with_size(egui::vec2(920.0, height))
            .with_context_setup(intentdesk::console::text::install_fonts)
            .build_ui(move |ui| {
                timeline_ui(ui, &i18n, &detail, &model, &mut view, 250.0);
            });
        harness.run_steps(3);
        harness.snapshot(name);
    }

    #[test]
    fn the_timeline_marks_each_lookup_and_where_they_ran_out() {
        timeline("gate_lookups_timeline_en", Locale::EnUs);
    }

    #[test]
    fn the_timeline_marks_each_lookup_and_where_they_ran_out_in_persian() {
        timeline("gate_lookups_timeline_fa", Locale::FaIr);
    }

    /// While lookups are still paced, the next one is a line of its own.
    #[test]
    fn the_next_lookup_is_on_the_timeline_while_it_is_due() {
        let mut detail = exhausted();
        detail.intent.lookups_exhausted_at_ms = None;
        detail.intent.next_lookup_at_ms = Some(T0 + 31_000);
        let model = TimelineModel::build(&detail, T0 + 20_000);
        assert_eq!(model.next_lookup_ms, Some(31_000));
        assert!(model.span_ms.1 >= 31_000, "in view: {:?}", model.span_ms);
    }
}
