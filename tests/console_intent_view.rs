//! The intent view against a real coordinator and sandbox on loopback: an indeterminate
//! intent (the sandbox dropped the response after committing) is opened, reconciled from
//! the view and ends committed with one effect; a close without evidence is refused with the
//! reason shown; a command retried after a network failure applies once; a supervisor sees
//! pause disabled and why; a deep link opens an intent by its action key; exports are
//! written. And pictures of the timeline for a normal, an amplified and an indeterminate
//! intent, from fixed data and a fixed clock.
#![cfg(feature = "console")]

mod common;

use common::console::{ADMIN, Rig, RigOptions, SUPERVISOR, click_role_when_still, until};
use egui::accesskit::Role;
use egui_kittest::Harness;
use egui_kittest::kittest::{NodeT, Queryable};
use intentdesk::client::Client;
use intentdesk::console::ConsoleApp;
use intentdesk::console::model::IntentDetail;
use intentdesk::console::views::timeline::model::TimelineModel;
use intentdesk::console::views::timeline::{TimelineView, legend_ui, timeline_ui};
use intentdesk::domain::Locale;
use intentdesk::i18n::Localizer;
use serde_json::{Value, json};

/// The window the intent view is tested in.
const SIZE: egui::Vec2 = egui::vec2(1500.0, 900.0);

/// Automatic lookups are off: an indeterminate intent stays so until an operator acts.
fn rig(faults: &'static str) -> Rig {
    Rig::start_with(RigOptions {
        faults,
        reconcile: false,
        ..RigOptions::default()
    })
}

fn state_of(app: &ConsoleApp) -> Option<String> {
    app.open
        .as_ref()
        .and_then(|o| o.detail.as_ref())
        .map(|d| d.intent.state.wire().to_string())
}

/// Open `id` and wait until its detail and the token's role are known.
fn open_intent(rig: &Rig, token: &str, id: &str) -> Harness<'static, ConsoleApp> {
    let mut harness = rig.harness_as(token, Some(id.to_string()), SIZE);
    until(&mut harness, "the intent and the role", |app| {
        state_of(app).is_some() && app.intent_view.whoami().is_some()
    });
    harness
}

fn click(harness: &mut Harness<'static, ConsoleApp>, role: Role, label: &str) {
    click_role_when_still(harness, role, label);
    harness.run_steps(2);
}

fn type_into(harness: &mut Harness<'static, ConsoleApp>, label: &str, text: &str) {
    let field = harness.get_by_role_and_label(Role::TextInput, label);
    field.click();
    harness.run_steps(1);
    harness
        .get_by_role_and_label(Role::TextInput, label)
        .type_text(text);
    harness.run_steps(2);
}

/// Commands touching `id` that were not dry runs, from the audit trail.
fn audit_entries(rig: &Rig, id: &str) -> Vec<Value> {
    rig.get(&format!("/v1/commands?intent_id={id}"))["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter(|c| c["dry_run"] != true)
        .cloned()
        .collect()
}

#[test]
fn an_indeterminate_order_is_reconciled_from_the_view_and_ends_committed_with_one_effect() {
    let rig = rig("drop_after_commit=1");
    let (id, key) = rig.indeterminate_order("drop-1");
    assert_eq!(
        rig.effects(&key),
        1,
        "the downstream applied it once before dropping the answer"
    );
    let mut harness = open_intent(&rig, ADMIN, &id);
    assert_eq!(state_of(harness.state()).as_deref(), Some("indeterminate"));

    click(&mut harness, Role::Button, "Reconcile now...");
    assert!(
        harness
            .query_by_label_contains("read only, for a record under action key")
            .is_some(),
        "the confirmation says what will happen"
    );
    click(&mut harness, Role::Button, "Reconcile");
    until(&mut harness, "committed", |app| {
        state_of(app).as_deref() == Some("committed")
    });

    assert!(
        harness.query_by_label_contains("committed.").is_some(),
        "the result is shown"
    );
    assert_eq!(rig.effects(&key), 1, "still one effect downstream");
    let receipts = &rig.get(&format!("/v1/intents/{id}"))["receipts"];
    assert_eq!(receipts.as_array().map(Vec::len), Some(1));
    assert_eq!(receipts[0]["source"], "lookup");
}

#[test]
fn a_close_without_evidence_is_refused_with_the_reason_shown() {
    let rig = rig("drop_after_commit=1");
    let (id, _) = rig.indeterminate_order("close-1");
    let mut harness = open_intent(&rig, ADMIN, &id);

    click(&mut harness, Role::Button, "Close...");
    type_into(&mut harness, "Reason", "the ERP team says it is there");
    // Committed is preselected; without a reference the view refuses to send it.
    let reason = "Closing as committed needs a receipt id or downstream reference.";
    assert!(
        harness.query_by_label(reason).is_some(),
        "the reason is shown"
    );
    let confirm = harness.get_by_role_and_label(Role::Button, "Confirm close");
    assert!(
        confirm.accesskit_node().is_disabled(),
        "confirm is disabled"
    );
    confirm.click();
    harness.run_steps(3);
    assert!(
        audit_entries(&rig, &id).is_empty(),
        "nothing reached the coordinator"
    );

    // The coordinator refuses it too, with the same words, and records the refusal.
    let client = Client::new(&rig.base, ADMIN).expect("client");
    let body = json!({"command_id": "cmd_01kbx0000000000000000000aa", "kind": "close",
        "target": {"intent_id": id}, "reason": "no evidence", "disposition": "committed"});
    let refused = rig
        .runtime
        .block_on(client.command(&body))
        .expect_err("refused");
    assert!(
        refused
            .to_string()
            .contains("needs a receipt id or downstream reference"),
        "{refused}"
    );

    // Meanwhile another operator cancels it: a close sent from the view now is refused by
    // the coordinator, and the view shows why.
    let cancel = json!({"command_id": "cmd_01kbx0000000000000000000ab", "kind": "close",
        "target": {"intent_id": id}, "reason": "duplicate order", "disposition": "cancelled",
        "evidence": {"note": "the ERP team removed it"}});
    rig.runtime
        .block_on(client.command(&cancel))
        .expect("cancelled");
    type_into(&mut harness, "Receipt or downstream reference", "PO-77");
    click(&mut harness, Role::Button, "Confirm close");
    until(&mut harness, "the refusal", |app| {
        matches!(
            app.intent_view
                .dialog
                .as_ref()
                .and_then(|d| d.sent.as_ref())
                .map(|s| &s.state),
            Some(intentdesk::console::views::command_dialog::SendState::Refused(_))
        )
    });
    assert!(
        harness
            .query_by_label_contains(
                "The coordinator refused it: the intent is cancelled, which is final"
            )
            .is_some(),
        "the refusal is shown with the coordinator's reason"
    );
}

#[test]
fn a_command_retried_after_a_network_failure_applies_once() {
    let mut rig = rig("drop_after_commit=1");
    // An open intent: the pause is aimed at it alone.
    let (id, _) = rig.indeterminate_order("retry-1");
    let mut harness = open_intent(&rig, ADMIN, &id);

    click(&mut harness, Role::Button, "Pause...");
    until(&mut harness, "the dry run", |app| {
        app.intent_view
            .dialog
            .as_ref()
            .is_some_and(|d| d.dry_runs.iter().any(|r| matches!(r.result, Some(Ok(_)))))
    });
    assert!(
        harness.query_by_label_contains("open intent now").is_some(),
        "the dry run shows the set"
    );
    assert!(
        harness.query_by_label_contains("not cancelled").is_some(),
        "and what will not happen"
    );
    type_into(&mut harness, "Reason", "supplier incident");

    // The network goes away just as the operator confirms.
    let addr = rig.addr.to_string();
    rig.stop_coordinator();
    click(&mut harness, Role::Button, "Confirm pause");
    until(&mut harness, "the send fails", |app| {
        matches!(
            app.intent_view
                .dialog
                .as_ref()
                .and_then(|d| d.sent.as_ref())
                .map(|s| &s.state),
            Some(intentdesk::console::views::command_dialog::SendState::Failed(_))
        )
    });
    let body = harness
        .state()
        .intent_view
        .dialog
        .as_ref()
        .and_then(|d| d.sent.as_ref())
        .map(|s| json!(s.body))
        .expect("body");
    assert!(
        harness
            .query_by_label_contains("Sending again is safe")
            .is_some()
    );

    rig.start_coordinator(&addr);
    click(&mut harness, Role::Button, "Send again");
    until(&mut harness, "applied", |app| {
        app.intent_view.dialog.is_none()
            && app
                .intent_view
                .last
                .as_ref()
                .is_some_and(|l| l.result.is_ok())
            && app
                .open
                .as_ref()
                .and_then(|o| o.detail.as_ref())
                .is_some_and(|d| !d.pauses.is_empty())
    });
    let sent_id = harness
        .state()
        .intent_view
        .last
        .as_ref()
        .map(|l| json!(l.body.command_id));
    assert_eq!(
        sent_id,
        Some(body["command_id"].clone()),
        "the retry carried the same command id"
    );

    // Its answer lost once more, the same body arrives again: the first result is replayed.
    let client = Client::new(&rig.base, ADMIN).expect("client");
    let replay = rig
        .runtime
        .block_on(client.command(&body))
        .expect("replayed");
    assert_eq!(replay["status"], "applied");

    let entries = audit_entries(&rig, &id);
    assert_eq!(
        entries.len(),
        1,
        "one command in the audit trail: {entries:#?}"
    );
    assert_eq!(entries[0]["command_id"], body["command_id"]);
    assert_eq!(
        rig.get("/v1/pauses")["items"].as_array().map(Vec::len),
        Some(1),
        "one pause"
    );
}

#[test]
fn a_supervisor_sees_pause_disabled_and_why() {
    let rig = rig("drop_after_commit=1");
    let (id, _) = rig.indeterminate_order("sup-1");
    let harness = open_intent(&rig, SUPERVISOR, &id);
    assert_eq!(
        harness
            .state()
            .intent_view
            .whoami()
            .map(|w| w.role.as_str()),
        Some("supervisor")
    );

    let who: Value = rig.runtime.block_on(async {
        intentdesk::tls::client(None)
            .expect("a TLS client")
            .build()
            .expect("an HTTP client")
            .get(format!("{}/v1/whoami", rig.base))
            .bearer_auth(SUPERVISOR)
            .send()
            .await
            .expect("whoami")
            .json()
            .await
            .expect("json")
    });
    assert_eq!(who["role"], "supervisor");
    assert_eq!(who["may"]["pause_resume"], false);
    assert_eq!(who["may"]["reconcile"], true);

    let pause = harness.get_by_role_and_label(Role::Button, "Pause...");
    assert!(pause.accesskit_node().is_disabled(), "pause is disabled");
    assert!(
        harness
            .query_by_label_contains("your role (supervisor) may not; engineers and admins may")
            .is_some(),
        "the reason is shown"
    );
    let reconcile = harness.get_by_role_and_label(Role::Button, "Reconcile now...");
    assert!(
        !reconcile.accesskit_node().is_disabled(),
        "a supervisor may reconcile"
    );
    let close = harness.get_by_role_and_label(Role::Button, "Close...");
    assert!(!close.accesskit_node().is_disabled(), "and close");
}

#[test]
fn a_deep_link_by_action_key_opens_the_intent_and_exports_are_written() {
    let rig = rig("none");
    let created = rig.intent("acme", "link-1", &[]);
    rig.intent("acme", "link-2", &[]);
    let id = created["id"].as_str().expect("id").to_string();
    let key = created["action_key"].as_str().expect("key").to_string();
    let mut harness = rig.harness_as(ADMIN, Some(key), SIZE);
    until(&mut harness, "the intent opens by its action key", |app| {
        app.open
            .as_ref()
            .is_some_and(|o| o.id == id && o.detail.is_some())
            && app.table.rows.len() == 2
    });

    let dir = tempfile::tempdir().expect("dir");
    let json_path = dir.path().join("incident.json");
    click(&mut harness, Role::Button, "Export JSON...");
    let field = harness.get_by_role_and_label(Role::TextInput, "File");
    field.click();
    harness.run_steps(1);
    harness.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::A);
    harness
        .get_by_role_and_label(Role::TextInput, "File")
        .type_text(&json_path.display().to_string());
    harness.run_steps(1);
    click(&mut harness, Role::Button, "Save");
    until(&mut harness, "the JSON is written", |app| {
        app.intent_view
            .export
            .last
            .as_ref()
            .is_some_and(|r| r.is_ok())
    });
    let exported: Value =
        serde_json::from_slice(&std::fs::read(&json_path).expect("file")).expect("json");
    assert_eq!(exported["intent"]["id"], id.as_str());
    assert!(
        exported["attempts"]
            .as_array()
            .is_some_and(|a| !a.is_empty())
    );
    assert!(exported["action_key_ledger"]["uses"].is_array());
    click(&mut harness, Role::Button, "Close");

    let csv_path = dir.path().join("table.csv");
    harness
        .state_mut()
        .queue(intentdesk::console::commands::ConsoleCommand::ExportTable);
    harness.run_steps(2);
    harness
        .get_by_role_and_label(Role::TextInput, "File")
        .click();
    harness.run_steps(1);
    harness.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::A);
    harness
        .get_by_role_and_label(Role::TextInput, "File")
        .type_text(&csv_path.display().to_string());
    harness.run_steps(1);
    click(&mut harness, Role::Button, "Save");
    until(&mut harness, "the CSV is written", |app| {
        app.intent_view
            .export
            .last
            .as_ref()
            .is_some_and(|r| r.is_ok())
    });
    let csv = std::fs::read_to_string(&csv_path).expect("csv");
    assert_eq!(csv.lines().count(), 3, "a header and two intents:\n{csv}");
    assert!(csv.contains(&id));
}

// ---------------------------------------------------------------------------------------
// Pictures of the timeline, from fixed data and a fixed clock.

/// 2026-11-30 09:35:55 UTC.
const T0: u64 = 1_796_031_355_000;

fn intent(
    id: &str,
    operation: &str,
    tier: &str,
    state: &str,
    attempts: u32,
    max: u32,
    deadline_ms: u64,
) -> Value {
    json!({
        "id": id, "tenant": "acme", "actor": "agent-7", "purpose": "restock", "operation": operation,
        "tool": "erp.po", "consequence": tier, "state": state, "attempts": attempts, "max_attempts": max,
        "created_at_ms": T0, "updated_at_ms": T0 + 5_000, "deadline_at_ms": T0 + deadline_ms,
        "action_key": format!("po:acme:{id}"), "connector": "erp", "release_id": "r7", "locale": "en-US",
    })
}

fn transition(from: Option<&str>, to: &str, event: &str, at: u64) -> Value {
    json!({"from": from, "to": to, "event": event, "at_ms": T0 + at})
}

#[allow(clippy::too_many_arguments)]
fn attempt(
    id: &str,
    kind: &str,
    provider: &str,
    region: Option<&str>,
    start: u64,
    end: Option<u64>,
    outcome: &str,
    extra: Value,
) -> Value {
    let mut a = json!({
        "id": id, "kind": kind, "provider": provider, "region": region, "release_id": "r7",
        "outcome": outcome, "started_at_ms": T0 + start, "ended_at_ms": end.map(|e| T0 + e),
    });
    if let (Some(a), Some(extra)) = (a.as_object_mut(), extra.as_object()) {
        a.extend(extra.clone());
    }
    a
}

fn normal() -> IntentDetail {
    let id = "int_01kbx7q3p9d2m8v4r6t0y5zs01";
    serde_json::from_value(json!({
        "intent": intent(id, "purchase_order.create", "write", "committed", 1, 3, 10_000),
        "attempts": [attempt("att_01kbx7q3p9d2m8v4r6t0y5zsa1", "dispatch", "erp", None, 150, Some(420), "succeeded",
            json!({"presented_key": format!("po:acme:{id}"), "sent": true, "http_status": 201, "provider_request_id": "PO-4500"}))],
        "receipts": [
            {"id": "rcp_01kbx7q3p9d2m8v4r6t0y5zsr1", "downstream_id": "PO-4500", "source": "dispatch", "authoritative": true, "received_at_ms": T0 + 420},
            {"id": "rcp_01kbx7q3p9d2m8v4r6t0y5zsr2", "downstream_id": "PO-4500", "source": "webhook", "event_id": "evt-1", "authoritative": false, "received_at_ms": T0 + 1_900}
        ],
        "transitions": [
            transition(None, "prepared", "validated", 5),
            transition(Some("prepared"), "authorized", "authorized", 120),
            transition(Some("authorized"), "executing", "dispatch", 150),
            transition(Some("executing"), "committed", "receipt_found", 425),
        ],
        "key_forget_at_ms": T0 + 150 + 3_600_000,
    }))
    .expect("normal detail")
}

fn amplified() -> IntentDetail {
    let id = "int_01kbx7q3p9d2m8v4r6t0y5zs02";
    let e = json!({});
    serde_json::from_value(json!({
        "intent": intent(id, "quote.compare", "compute", "committed", 8, 8, 12_000),
        "attempts": [
            attempt("att_01kbx7q3p9d2m8v4r6t0y5zsb0", "retrieval", "catalog", None, 100, Some(160), "succeeded", e.clone()),
            attempt("att_01kbx7q3p9d2m8v4r6t0y5zsb1", "inference", "openai", Some("us-east"), 200, Some(2_200), "timed_out", json!({"error_class": "timeout"})),
            attempt("att_01kbx7q3p9d2m8v4r6t0y5zsb2", "inference", "openai", Some("us-east"), 2_450, Some(2_520), "failed", json!({"http_status": 429, "retry_after_ms": 1000})),
            attempt("att_01kbx7q3p9d2m8v4r6t0y5zsb3", "inference", "anthropic", Some("eu-west"), 3_600, Some(5_200), "succeeded", json!({"hedge_group": "h1"})),
            attempt("att_01kbx7q3p9d2m8v4r6t0y5zsb4", "inference", "openai", Some("eu-west"), 3_600, Some(4_100), "failed", json!({"hedge_group": "h1", "http_status": 503})),
            attempt("att_01kbx7q3p9d2m8v4r6t0y5zsb5", "inference", "mistral", Some("eu-west"), 3_620, Some(5_300), "abandoned", json!({"hedge_group": "h1"})),
            attempt("att_01kbx7q3p9d2m8v4r6t0y5zsb6", "proposal", "anthropic", Some("eu-west"), 5_400, Some(6_000), "succeeded", json!({"proposal_hash": "9f2c1a"})),
            attempt("att_01kbx7q3p9d2m8v4r6t0y5zsb7", "inference", "openai", Some("us-east"), 6_100, Some(12_900), "succeeded", json!({"late": true, "release_id": "r6"})),
        ],
        "transitions": [
            transition(None, "prepared", "validated", 5),
            transition(Some("prepared"), "authorized", "authorized", 60),
            transition(Some("authorized"), "executing", "attempt_started", 200),
            transition(Some("executing"), "committed", "receipt_found", 6_050),
        ],
    }))
    .expect("amplified detail")
}

fn indeterminate() -> IntentDetail {
    let id = "int_01kbx7q3p9d2m8v4r6t0y5zs03";
    let key = format!("po:acme:{id}");
    serde_json::from_value(json!({
        "intent": intent(id, "purchase_order.create", "write", "indeterminate", 1, 3, 10_000),
        "attempts": [
            attempt("att_01kbx7q3p9d2m8v4r6t0y5zsc1", "dispatch", "erp", None, 200, Some(1_200), "lost",
                json!({"presented_key": key, "sent": true, "detail": "the connection closed after the request was sent"})),
            attempt("att_01kbx7q3p9d2m8v4r6t0y5zsc2", "lookup", "erp", None, 1_300, Some(2_300), "timed_out", json!({"detail": "the lookup did not answer"})),
            attempt("att_01kbx7q3p9d2m8v4r6t0y5zsc3", "lookup", "erp", None, 4_300, Some(5_300), "timed_out", json!({"detail": "the lookup did not answer"})),
        ],
        "transitions": [
            transition(None, "prepared", "validated", 5),
            transition(Some("prepared"), "authorized", "authorized", 120),
            transition(Some("authorized"), "executing", "dispatch", 200),
            transition(Some("executing"), "indeterminate", "outcome_unknown", 1_205),
        ],
        "commands": [
            {"command_id": "cmd_01kbx7q3p9d2m8v4r6t0y5zsd1", "kind": "pause", "actor": "ops-admin", "role": "engineer",
             "reason": "ERP incident", "dry_run": false, "status": "applied", "result": {"covers_open_intents": 4},
             "body": {"target": {"intent_id": id}}, "created_at_ms": T0 + 6_500}
        ],
        "pauses": [{"seq": 1, "command_id": "cmd_01kbx7q3p9d2m8v4r6t0y5zsd1", "scope": {"tenant": "acme", "intent_id": id},
                    "reason": "ERP incident", "created_by": "ops-admin", "created_at_ms": T0 + 6_500}],
        "key_forget_at_ms": T0 + 200 + 8_000,
    }))
    .expect("indeterminate detail")
}

fn timeline_picture(
    name: &str,
    detail: IntentDetail,
    now_ms: u64,
    select: Option<usize>,
    whole: bool,
    locale: Locale,
) {
    let model = TimelineModel::build(&detail, now_ms);
    let mut view = TimelineView::default();
    view.sync(&model);
    view.selected = select;
    if whole {
        view.fit_span(&model);
    }
    let i18n = Localizer::new(locale);
    // The Persian help sentence is longer and wraps to a second line.
    let height = if i18n.is_rtl() { 352.0 } else { 330.0 };
    let mut harness = Harness::builder()
        .with_size(egui::vec2(920.0, height))
        .with_context_setup(intentdesk::console::text::install_fonts)
        .build_ui(move |ui| {
            timeline_ui(ui, &i18n, &detail, &model, &mut view, 250.0);
            legend_ui(ui, &i18n);
        });
    harness.run_steps(3);
    harness.snapshot(name);
}

#[test]
fn timeline_of_a_normal_intent() {
    timeline_picture(
        "intent_timeline_normal",
        normal(),
        T0 + 12_000,
        None,
        true,
        Locale::EnUs,
    );
}

#[test]
fn timeline_of_an_amplified_intent() {
    timeline_picture(
        "intent_timeline_amplified",
        amplified(),
        T0 + 14_000,
        Some(3),
        false,
        Locale::EnUs,
    );
}

/// The same amplified intent in Persian: lane names on the right, row titles and legend in
/// Persian, Persian digits on the axis, time still running left to right as the axis says.
#[test]
fn timeline_of_an_amplified_intent_in_persian() {
    timeline_picture(
        "intent_timeline_amplified_fa",
        amplified(),
        T0 + 14_000,
        Some(3),
        false,
        Locale::FaIr,
    );
}

#[test]
fn timeline_of_an_indeterminate_intent() {
    timeline_picture(
        "intent_timeline_indeterminate",
        indeterminate(),
        T0 + 14_000,
        None,
        false,
        Locale::EnUs,
    );
}
