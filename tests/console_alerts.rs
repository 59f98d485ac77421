//! Alerts on logical outcomes in the real console against a real coordinator: a duplicate
//! effect made by a sandbox that ignores idempotency keys lights the top bar's badge naming
//! it, in English and in Persian; a threshold typed as text or out of range is refused in
//! place with the reason while the value in force stays, and Persian digits are taken.
#![cfg(feature = "console")]

mod common;

use std::time::{Duration, Instant};

use common::console::{PATIENCE, Rig, RigOptions, until};
use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;
use intentdesk::console::ConsoleApp;
use intentdesk::console::commands::ConsoleCommand;
use serde_json::Value;

const SIZE: egui::Vec2 = egui::vec2(1400.0, 800.0);

/// Wait until the coordinator says intent `id` is in `state`.
fn wait_for_state(rig: &Rig, id: &str, state: &str) {
    let started = Instant::now();
    while rig.get(&format!("/v1/intents/{id}"))["intent"]["state"] != state {
        assert!(started.elapsed() < PATIENCE, "{id} never became {state}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Send the order under `action_key` to the sandbox again, past the coordinator, as a
/// client that retries on its own would: the sandbox ignores the key and makes a second
/// purchase order, and its webhook tells the coordinator.
fn resend_past_the_coordinator(rig: &Rig, action_key: &str) -> u16 {
    rig.runtime.block_on(async {
        intentdesk::tls::client(None)
            .expect("a TLS client")
            .build()
            .expect("an HTTP client")
            .post(format!("{}/purchase-orders", rig.sandbox_url()))
            .header("Idempotency-Key", action_key)
            .json(&serde_json::json!({"item": "paper", "qty": 10}))
            .send()
            .await
            .expect("the sandbox answers")
            .status()
            .as_u16()
    })
}

fn badge_says(harness: &Harness<'static, ConsoleApp>, words: &str) -> bool {
    harness.query_by_label_contains(words).is_some()
}

#[test]
fn a_duplicate_effect_from_a_sandbox_that_ignores_keys_lights_the_badge_naming_it() {
    let rig = Rig::start_with(RigOptions {
        faults: "ignore_keys=true",
        webhooks: true,
        ..RigOptions::default()
    });
    let created = rig.intent("acme", "dup-1", &[]);
    let id = created["id"].as_str().expect("id");
    let action_key = created["action_key"].as_str().expect("action key");
    wait_for_state(&rig, id, "committed");

    let mut harness = rig.harness(SIZE);
    until(&mut harness, "the overview of the committed order", |app| {
        app.dashboard
            .overview
            .as_ref()
            .is_some_and(|o| o.committed == 1)
    });
    assert!(
        !badge_says(&harness, "duplicate effects"),
        "one order, one effect: nothing to alert on"
    );

    assert_eq!(resend_past_the_coordinator(&rig, action_key), 201);
    assert_eq!(
        rig.effects(action_key),
        2,
        "the sandbox made a second effect"
    );
    until(&mut harness, "the duplicate reaches the overview", |app| {
        app.dashboard
            .overview
            .as_ref()
            .is_some_and(|o| o.duplicate_effects == 1)
    });
    assert!(
        badge_says(&harness, "duplicate effects 1 > 0"),
        "the badge names the duplicate"
    );
    let summary: Value = rig.get("/v1/metrics/summary");
    assert_eq!(summary["duplicate_effects"], 1);

    harness.state_mut().queue(ConsoleCommand::SwitchLocale);
    harness.run_steps(4);
    assert!(
        badge_says(&harness, "اثرهای تکراری ۱ > ۰"),
        "the Persian badge names it in Persian digits"
    );
}

/// The threshold field labelled `label`, focused with its text selected.
fn select_field(harness: &mut Harness<'static, ConsoleApp>, label: &str) {
    harness.get_by_label(label).click();
    harness.run_steps(2);
    harness.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::A);
    harness.run_steps(1);
}

fn type_into(harness: &mut Harness<'static, ConsoleApp>, label: &str, text: &str) {
    select_field(harness, label);
    harness.event(egui::Event::Text(text.into()));
    harness.run_steps(2);
}

#[test]
fn a_threshold_typed_wrong_is_refused_in_place_and_persian_digits_are_taken() {
    let rig = Rig::start();
    let mut harness = rig.harness(egui::vec2(1400.0, 600.0));
    harness.state_mut().queue(ConsoleCommand::ShowDashboard);
    harness.run_steps(2);
    let p99 = |app: &ConsoleApp| app.state.dashboard.amplification_p99_max;
    assert_eq!(p99(harness.state()), 3.0);

    type_into(&mut harness, "amplification p99 above", "three");
    assert!(
        harness
            .query_by_label("Not a number; 3 stays in force.")
            .is_some()
    );
    assert_eq!(p99(harness.state()), 3.0, "the value in force stays");

    type_into(&mut harness, "amplification p99 above", "500");
    assert!(
        harness
            .query_by_label("Must be between 1 and 50; 3 stays in force.")
            .is_some()
    );
    assert_eq!(p99(harness.state()), 3.0);

    type_into(&mut harness, "amplification p99 above", "۴٫۵");
    assert_eq!(p99(harness.state()), 4.5, "Persian digits are taken");
    assert!(harness.query_by_label_contains("stays in force").is_none());

    harness.state_mut().queue(ConsoleCommand::SwitchLocale);
    harness.run_steps(4);
    type_into(&mut harness, "صدک ۹۹ تکثیر بیش از", "۰٫۵");
    assert!(
        harness
            .query_by_label("باید بین ۱ و ۵۰ باشد؛ ۴٫۵ همچنان برقرار است.")
            .is_some(),
        "refused in Persian, with Persian digits"
    );
    assert_eq!(p99(harness.state()), 4.5);
    type_into(&mut harness, "قدیمی‌ترین نامعلوم بیش از (دقیقه)", "25");
    assert_eq!(
        harness
            .state()
            .state
            .dashboard
            .oldest_indeterminate_max_mins,
        25,
        "Latin digits are taken in the Persian console too"
    );
    // Off focus the field shows the value in force in Persian digits.
    harness.get_by_label("اثرهای تکراری بیش از").click();
    harness.run_steps(2);
    assert_eq!(
        harness
            .get_by_label("قدیمی‌ترین نامعلوم بیش از (دقیقه)")
            .value()
            .as_deref(),
        Some("۲۵")
    );
}
