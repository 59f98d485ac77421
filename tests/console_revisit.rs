//! The gate-revisit notice and the key retention an intent was sent under, in the real
//! console against a real coordinator: a coordinator started again over the same database
//! with a shorter key retention shows the notice in the top bar with what changed, until it
//! is acknowledged; the open intent's ledger shows the retention its key was sent under and
//! warns that the connector's differs now. And pictures of the notice, the envelope's new
//! rows and the ledger's warning, in English and Persian, from fixed data.
#![cfg(feature = "console")]

mod common;

use common::console::{Rig, RigOptions, until};
use egui::accesskit::Role;
use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;
use intentdesk::console::actions::Actions;
use intentdesk::console::model::IntentDetail;
use intentdesk::console::views::envelope::envelope_ui;
use intentdesk::console::views::ledger::{Ledger, ledger_ui};
use intentdesk::console::views::revisit_notice::{RevisitNotice, revisit_notice_ui};
use intentdesk::domain::Locale;
use intentdesk::i18n::Localizer;
use intentdesk::wire::Revisit;
use serde_json::json;

const SIZE: egui::Vec2 = egui::vec2(1500.0, 900.0);

#[test]
fn a_shorter_retention_after_a_restart_shows_the_notice_and_the_ledger_warns() {
    let mut rig = Rig::start_with(RigOptions {
        reconcile: false,
        ..RigOptions::default()
    });
    let created = rig.intent("acme", "po-1", &[]);
    let id = created["id"].as_str().expect("id").to_string();
    let mut harness = rig.harness_as(common::console::ADMIN, Some(id.clone()), SIZE);
    until(
        &mut harness,
        "the order sent and shown, and the events read",
        |app| {
            app.live.connected
                && !app.revisits.items.is_empty()
                && app
                    .open
                    .as_ref()
                    .and_then(|o| o.detail.as_ref())
                    .is_some_and(|d| d.intent.first_dispatch_at_ms.is_some())
        },
    );
    // The first order named a release and a tool the gate had not seen; the connector's
    // contract is the first start's baseline, and no event.
    assert!(
        harness
            .query_by_label_contains("New tool erp.po (Write)")
            .is_some(),
        "the newest first sighting is named"
    );
    assert!(harness.query_by_label_contains("and 1 more").is_some());
    assert!(
        harness
            .query_by_label_contains("key retention shortened")
            .is_none()
    );
    harness
        .get_by_role_and_label(Role::Button, "Acknowledge")
        .click();
    harness.run_steps(3);
    assert!(
        harness
            .query_by_label_contains("Revisit the retry/failover gate")
            .is_none(),
        "acknowledged, the notice is gone"
    );
    let seen = harness.state().revisits_acknowledged();

    let addr = rig.addr.to_string();
    rig.stop_coordinator();
    until(&mut harness, "the coordinator is gone", |app| {
        !app.live.connected
    });
    rig.key_retention_secs = 3_600;
    rig.start_coordinator(&addr);
    until(
        &mut harness,
        "the revisit event read after the restart",
        |app| app.live.connected && app.revisits.items.first().is_some_and(|r| r.seq > seen),
    );
    assert!(
        harness
            .query_by_label_contains("Revisit the retry/failover gate")
            .is_some(),
        "the notice shows"
    );
    assert!(
        harness
            .query_by_label_contains("erp: key retention shortened from 1d 0h to 1h 0m")
            .is_some(),
        "the notice says what changed, old and new"
    );

    // The open intent read again: sent under a day, the connector promises an hour now.
    harness
        .state_mut()
        .queue(intentdesk::console::commands::ConsoleCommand::OpenIntent(
            id.clone(),
        ));
    until(
        &mut harness,
        "the intent read with the live retention",
        |app| {
            app.open
                .as_ref()
                .and_then(|o| o.detail.as_ref())
                .is_some_and(|d| d.live_key_retention_secs == Some(3_600))
        },
    );
    harness
        .get_by_role_and_label(Role::Button, "Action key")
        .click();
    harness.run_steps(3);
    assert!(
        harness
            .query_by_label_contains("first sent under a key retention of 1d 0h")
            .is_some(),
        "the ledger names the retention the key was sent under"
    );
    assert!(
        harness
            .query_by_label_contains("key retention is now 1h 0m, shorter than the 1d 0h")
            .is_some(),
        "the ledger warns that the live retention differs: {:?}",
        harness
            .query_all_by_label_contains("retention")
            .map(|n| format!("{n:?}"))
            .collect::<Vec<_>>()
    );

    harness
        .get_by_role_and_label(Role::Button, "Acknowledge")
        .click();
    harness.run_steps(3);
    assert!(
        harness
            .query_by_label_contains("Revisit the retry/failover gate")
            .is_none(),
        "acknowledged again, the notice is gone"
    );
    let newest = harness.state().revisits.items[0].seq;
    assert_eq!(harness.state().revisits_acknowledged(), newest);
}

const T0: u64 = 1_764_489_600_000;

fn revisits() -> RevisitNotice {
    let items: Vec<Revisit> = serde_json::from_value(json!([
        {"seq": 3, "kind": "retention_shortened", "subject": "erp", "field": "key_retention_secs",
         "old": "86400", "new": "3600", "at_ms": T0},
        {"seq": 2, "kind": "tool_first_seen", "subject": "erp.po", "field": "consequence",
         "old": "read", "new": "write", "tenant": "acme", "at_ms": T0 - 60_000},
        {"seq": 1, "kind": "release_first_seen", "subject": "r-2026-12", "field": "release",
         "new": "r-2026-12", "tenant": "acme", "at_ms": T0 - 120_000},
    ]))
    .expect("revisit events");
    let mut notice = RevisitNotice::default();
    notice.answered(Some(items));
    notice
}

fn sent_order() -> IntentDetail {
    let id = "int_01kbx7q3p9d2m8v4r6t0y5zs07";
    let key = format!("po:acme:{id}");
    serde_json::from_value(json!({
        "intent": {
            "id": id, "tenant": "acme", "caller_key": "order-7", "actor": "agent-7",
            "purpose": "restock paper", "operation": "purchase_order.create", "tool": "erp.po",
            "consequence": "write", "canonical_args_hash": "9f2c4e", "release_id": "r-2026-12",
            "locale": "en-US", "connector": "erp", "action_key": key, "state": "indeterminate",
            "authorization_version": "v3", "approver": "ann",
            "authorized_at_ms": T0 - 600_000, "authorization_expires_at_ms": T0 + 3_000_000,
            "attempts": 1, "max_attempts": 3, "created_at_ms": T0 - 700_000,
            "deadline_at_ms": T0 + 3_600_000, "first_dispatch_at_ms": T0 - 500_000,
            "indeterminate_since_ms": T0 - 499_000, "key_retention_secs": 86_400,
            "retry_owner": "coordinator"
        },
        "attempts": [
            {"id": "att_01kbx7q3p9d2m8v4r6t0y5zsa7", "kind": "dispatch", "provider": "erp",
             "outcome": "lost", "sent": true, "presented_key": key, "started_at_ms": T0 - 500_000,
             "ended_at_ms": T0 - 499_000, "downstream_resource": "purchase-orders",
             "key_retention_secs": 86_400}
        ],
        "key_forget_at_ms": T0 - 500_000 + 86_400_000,
        "live_key_retention_secs": 3_600
    }))
    .expect("detail")
}

/// The notice, the envelope and the ledger of an order sent under a day's retention whose
/// connector promises an hour now.
fn picture(name: &str, locale: Locale) {
    let i18n = Localizer::new(locale);
    let notice = revisits();
    let detail = sent_order();
    let ledger = Ledger::build(&detail, T0);
    intentdesk::console::views::charts::time_axis::show_times_in_utc(true);
    let mut harness = Harness::builder()
        .with_size(egui::vec2(1000.0, 1080.0))
        .with_context_setup(intentdesk::console::text::install_fonts)
        .build_ui(move |ui| {
            let mut actions = Actions::default();
            revisit_notice_ui(ui, &i18n, &notice, 0, &mut actions);
            ui.separator();
            envelope_ui(ui, &i18n, &detail);
            ui.separator();
            ledger_ui(ui, &i18n, &detail, &ledger);
        });
    harness.run_steps(3);
    harness.snapshot(name);
}

#[test]
fn the_notice_envelope_and_ledger_in_english() {
    picture("revisit_envelope_ledger_en", Locale::EnUs);
}

#[test]
fn the_notice_envelope_and_ledger_in_persian() {
    picture("revisit_envelope_ledger_fa", Locale::FaIr);
}

/// The real app's top bar, offline, with the events of [`revisits`] read: the notice sits
/// under the bar's controls.
fn top_bar_picture(name: &str, persian: bool) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let options = intentdesk::console::ConsoleOptions {
        label: "http://coordinator.example:7410".into(),
        coordinator_url: "http://coordinator.example:7410".into(),
        token: String::new(),
        offline: true,
        open: None,
        cache_path: None,
        fixed_now_ms: Some(T0),
        utc: true,
        ca_file: None,
    };
    let handle = runtime.handle().clone();
    let mut harness = Harness::builder()
        .with_size(egui::vec2(1280.0, 130.0))
        .build_eframe(move |cc| {
            intentdesk::console::ConsoleApp::new(&cc.egui_ctx, None, options, &handle)
        });
    harness.run_steps(2);
    harness.state_mut().revisits = revisits();
    if persian {
        harness
            .state_mut()
            .queue(intentdesk::console::commands::ConsoleCommand::SwitchLocale);
    }
    // The list's answer (offline: that the coordinator cannot be reached) comes from the
    // console's worker in its own time: wait for it, not for a number of frames.
    let started = std::time::Instant::now();
    while harness.state().table.error.is_none() {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(20),
            "the offline list never answered"
        );
        harness.step();
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    harness.run_steps(4);
    harness.snapshot(name);
}

#[test]
fn the_notice_in_the_top_bar_in_english() {
    top_bar_picture("revisit_top_bar_en", false);
}

#[test]
fn the_notice_in_the_top_bar_in_persian() {
    top_bar_picture("revisit_top_bar_fa", true);
}
