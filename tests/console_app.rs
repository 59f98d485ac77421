//! The real console app against a real coordinator and sandbox on loopback: filtering by
//! tenant and provider changes the table, searching an action key opens its intent,
//! clicking a row opens it, and a lost coordinator shows the stale banner until it is back.
#![cfg(feature = "console")]

mod common;

use common::console::{Rig, click_role_when_still, open_row, until};
use egui::accesskit::Role;
use egui_kittest::kittest::Queryable;

/// Open the palette with Ctrl+K, type `text` into its field (which has the focus) and
/// press Enter.
fn choose_in_palette(
    harness: &mut egui_kittest::Harness<'static, intentdesk::console::ConsoleApp>,
    text: &str,
) {
    harness.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::K);
    harness.run_steps(2);
    harness.event(egui::Event::Text(text.into()));
    harness.run_steps(2);
    harness.key_press(egui::Key::Enter);
    harness.run_steps(2);
}

/// The main screen's size in these tests.
const SIZE: egui::Vec2 = egui::vec2(1400.0, 800.0);

#[test]
fn filtering_by_tenant_and_provider_changes_the_table() {
    let rig = Rig::start();
    rig.intent("acme", "a1", &["openai"]);
    rig.intent("acme", "a2", &["anthropic"]);
    rig.intent("globex", "g1", &["openai"]);
    rig.intent("globex", "g2", &[]);
    let mut harness = rig.harness(SIZE);
    until(&mut harness, "all four rows", |app| {
        app.table.rows.len() == 4
    });

    click_role_when_still(&mut harness, Role::Button, "Tenant");
    click_role_when_still(&mut harness, Role::CheckBox, "acme");
    until(&mut harness, "the acme box ticked", |app| {
        app.state.filters.tenants == ["acme"]
    });
    until(&mut harness, "only acme", |app| {
        !app.table.loading
            && app.table.rows.len() == 2
            && app.table.rows.iter().all(|r| r.tenant == "acme")
    });

    harness.key_press(egui::Key::Escape);
    harness.run_steps(2);
    click_role_when_still(&mut harness, Role::Button, "Provider");
    click_role_when_still(&mut harness, Role::CheckBox, "openai");
    until(&mut harness, "the openai box ticked", |app| {
        app.state.filters.providers == ["openai"]
    });
    until(&mut harness, "acme on openai", |app| {
        !app.table.loading
            && app.table.rows.len() == 1
            && app.table.rows[0].providers.contains(&"openai".to_string())
    });
}

#[test]
fn searching_an_action_key_opens_its_intent() {
    let rig = Rig::start();
    let wanted = rig.intent("acme", "k1", &[]);
    rig.intent("acme", "k2", &[]);
    let mut harness = rig.harness(SIZE);
    until(&mut harness, "rows", |app| app.table.rows.len() == 2);
    let key = wanted["action_key"].as_str().expect("key");
    let input = harness.get_by_role(Role::TextInput);
    input.focus();
    input.type_text(key);
    harness.run_steps(2);
    harness.key_press(egui::Key::Enter);
    harness.run_steps(2);
    let id = wanted["id"].as_str().expect("id").to_string();
    until(&mut harness, "the intent opens with its detail", |app| {
        app.open
            .as_ref()
            .is_some_and(|o| o.id == id && o.detail.is_some())
    });
    until(&mut harness, "the search narrows the table", |app| {
        app.table.rows.len() == 1
    });
}

#[test]
fn clicking_a_row_opens_the_intent() {
    let rig = Rig::start();
    let wanted = rig.intent("acme", "r1", &[]);
    let mut harness = rig.harness(SIZE);
    until(&mut harness, "a row", |app| app.table.rows.len() == 1);
    let id = wanted["id"].as_str().expect("id");
    open_row(&mut harness, id);
    until(&mut harness, "the panel shows the action key", |app| {
        app.open
            .as_ref()
            .and_then(|o| o.detail.as_ref())
            .is_some_and(|d| d.intent.id == id)
    });
    assert!(
        harness
            .query_by_label(wanted["action_key"].as_str().expect("key"))
            .is_some()
    );
}

#[test]
fn a_lost_coordinator_shows_the_stale_banner_and_recovers() {
    let mut rig = Rig::start();
    rig.intent("acme", "s1", &[]);
    let mut harness = rig.harness(SIZE);
    until(&mut harness, "live", |app| {
        app.live.connected && app.table.rows.len() == 1
    });
    assert!(harness.query_by_label_contains("Stale").is_none());

    let addr = rig.addr.to_string();
    rig.stop_coordinator();
    until(&mut harness, "stale", |app| !app.live.connected);
    assert!(
        harness.query_by_label_contains("Stale").is_some(),
        "the banner says the data is stale"
    );

    rig.start_coordinator(&addr);
    rig.intent("acme", "s2", &[]);
    until(&mut harness, "live again with the new intent", |app| {
        app.live.connected && app.table.rows.len() == 2
    });
    assert!(harness.query_by_label_contains("Stale").is_none());
}

#[test]
fn the_palette_starts_a_command_on_the_open_intent_only_where_it_may_be_started() {
    let rig = Rig::start();
    let order = rig.intent("acme", "p1", &[]);
    let id = order["id"].as_str().expect("id").to_string();
    let mut harness = rig.harness(SIZE);
    harness
        .state_mut()
        .queue(intentdesk::console::commands::ConsoleCommand::OpenIntent(
            id.clone(),
        ));
    until(
        &mut harness,
        "the order committed, open, and the role known",
        |app| {
            app.intent_view.whoami().is_some()
                && app
                    .open
                    .as_ref()
                    .and_then(|o| o.detail.as_ref())
                    .is_some_and(|d| d.intent.id == id && d.intent.state.wire() == "committed")
        },
    );

    // A committed order cannot be closed: the palette does not offer it, Enter does nothing.
    choose_in_palette(&mut harness, "Close");
    assert!(
        harness.state().intent_view.dialog.is_none(),
        "no dialog for a final intent"
    );

    // Pause may always be started by an admin: its dialog opens from the palette.
    harness.state_mut().palette.open = false;
    choose_in_palette(&mut harness, "Pause");
    assert!(
        harness.state().intent_view.dialog.is_some(),
        "the pause dialog is open"
    );
}

#[test]
fn the_open_intent_follows_a_burst_of_changes_to_its_newest_detail() {
    let rig = Rig::start();
    let body = serde_json::json!({
        "tenant": "acme", "actor": "agent", "purpose": "compare quotes", "operation": "quote.compare",
        "tool": "llm.compare", "consequence": "compute", "args": {"item": "paper", "qty": 10},
        "deadline_secs": 600, "max_attempts": 20, "release_id": "r1", "locale": "en-US", "connector": "erp"
    });
    let (status, _, created) = rig.post("/v1/intents", Some("burst"), &body);
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_str().expect("id").to_string();
    let auth = serde_json::json!({"authorization_version": "v1"});
    let (status, _, _) = rig.post_as(
        common::console::SUPERVISOR,
        &format!("/v1/intents/{id}/authorize"),
        None,
        &auth,
    );
    assert_eq!(status, 200);
    let mut harness = rig.harness_as(common::console::ADMIN, Some(id.clone()), SIZE);
    until(&mut harness, "the intent opens", |app| {
        app.open.as_ref().is_some_and(|o| o.detail.is_some())
    });

    // Every change to the open intent asks for its detail again, possibly while an earlier
    // answer is on its way (the order of requests is unit-tested in the worker); after
    // the burst the detail shown is the newest and nothing is left owed.
    const BURST: usize = 18;
    for n in 0..BURST {
        let provider = if n % 2 == 0 { "openai" } else { "anthropic" };
        let attempt = serde_json::json!({"kind": "inference", "provider": provider});
        let (status, _, answer) = rig.post(&format!("/v1/intents/{id}/attempts"), None, &attempt);
        assert!(
            (200..300).contains(&status),
            "attempt {n}: {status} {answer}"
        );
        harness.step();
    }
    until(&mut harness, "every attempt of the burst is shown", |app| {
        app.detail_refresh.settled()
            && app
                .open
                .as_ref()
                .and_then(|o| o.detail.as_ref())
                .map(|d| d.attempts.len())
                == Some(BURST)
    });
    assert_eq!(
        harness.state().open.as_ref().map(|o| o.id.as_str()),
        Some(id.as_str())
    );
}
