//! One intent identity in Persian and English, in the real app against a real coordinator:
//! an order sent in Persian and replayed in English under the same caller key is one intent,
//! a search typed with Persian digits finds it, and switching the language with the intent
//! open keeps the intent, its ids, the filters and the scroll position.
#![cfg(feature = "console")]

mod common;

use common::console::{Rig, open_row, until};
use egui::accesskit::Role;
use egui_kittest::kittest::Queryable;
use intentdesk::console::commands::ConsoleCommand;
use intentdesk::console::filters::Filters;
use intentdesk::console::views::intent_view::IntentTab;
use intentdesk::domain::Locale;
use intentdesk::i18n::Localizer;
use serde_json::json;

fn ledger_sentence(locale: Locale, replays: u32) -> String {
    Localizer::new(locale).tr_args(
        "ledger-ingest",
        &[("replays", replays.into()), ("mismatches", 0u32.into())],
    )
}

/// The ledger's sentence for one replay, in `locale`, and the action key are on screen.
fn assert_ledger_shown(
    harness: &egui_kittest::Harness<'static, intentdesk::console::ConsoleApp>,
    locale: Locale,
    action_key: &str,
) {
    assert!(
        harness
            .query_by_label(&ledger_sentence(locale, 1))
            .is_some(),
        "the ledger sentence in {locale:?}"
    );
    assert!(
        harness.query_all_by_label(action_key).next().is_some(),
        "the action key {action_key}"
    );
}

#[test]
fn an_order_in_persian_and_its_english_replay_are_one_intent_in_both_languages() {
    let rig = Rig::start();
    for n in 0..30 {
        rig.order(
            "acme",
            "en-US",
            &format!("filler-{n}"),
            json!({"item": "paper", "qty": n + 1}),
        );
    }
    let (status, _, created) = rig.order(
        "pars-trading",
        "fa-IR",
        "po-fa-1200",
        json!({"کالا": "کاغذ A4", "تعداد": "۱۲۰۰"}),
    );
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_str().expect("id").to_string();
    let action_key = created["action_key"].as_str().expect("key").to_string();
    // The same order from the English interface: ASCII digits, a number, another locale.
    let (status, replayed, again) = rig.order(
        "pars-trading",
        "en-US",
        "po-fa-1200",
        json!({"کالا": "کاغذ A4", "تعداد": 1200}),
    );
    assert_eq!((status, replayed), (200, true), "{again}");
    assert_eq!(
        again["id"], created["id"],
        "the replay names the same intent"
    );

    let mut harness = rig.harness(egui::vec2(1500.0, 900.0));
    until(&mut harness, "all 31 intents", |app| {
        app.table.rows.len() == 31
    });

    // Persian digits in the search box find the order whose arguments say 1200.
    let search = harness.get_by_role(Role::TextInput);
    search.focus();
    search.type_text("۱۲۰۰");
    harness.run_steps(2);
    harness.key_press(egui::Key::Enter);
    until(&mut harness, "the search narrows to the one order", |app| {
        !app.table.loading && app.table.rows.len() == 1 && app.table.rows[0].id == id
    });

    open_row(&mut harness, &id);
    until(&mut harness, "the intent opens with its detail", |app| {
        app.open
            .as_ref()
            .and_then(|o| o.detail.as_ref())
            .is_some_and(|d| d.intent.id == id)
    });
    harness.state_mut().intent_view.tab = IntentTab::Ledger;
    harness.run_steps(3);
    // The ledger says the caller key was replayed once, beside the action key.
    assert_ledger_shown(&harness, Locale::EnUs, &action_key);

    // Switch to Persian with the intent open, from the top bar's button.
    harness.get_by_label("فارسی").click();
    harness.run_steps(3);
    let app = harness.state();
    assert!(app.i18n.is_rtl(), "the console speaks Persian");
    assert_eq!(app.open.as_ref().map(|o| o.id.as_str()), Some(id.as_str()));
    assert_eq!(app.state.filters.q, "۱۲۰۰", "the search is kept as typed");
    assert_eq!(app.table.rows.len(), 1);
    // The same ledger in Persian, the same action key in Latin digits.
    assert_ledger_shown(&harness, Locale::FaIr, &action_key);

    // And back: nothing was lost on the way.
    harness.state_mut().queue(ConsoleCommand::SwitchLocale);
    harness.run_steps(3);
    assert!(!harness.state().i18n.is_rtl());
    assert_eq!(
        harness.state().open.as_ref().map(|o| o.id.as_str()),
        Some(id.as_str())
    );
    assert!(
        harness
            .query_by_label(&ledger_sentence(Locale::EnUs, 1))
            .is_some()
    );
}

#[test]
fn switching_the_language_keeps_the_filters_and_the_scroll_position() {
    let rig = Rig::start();
    for n in 0..120 {
        let tenant = if n % 4 == 3 { "globex" } else { "acme" };
        rig.order(
            tenant,
            "en-US",
            &format!("k-{n}"),
            json!({"item": "paper", "qty": n + 1}),
        );
    }
    let mut harness = rig.harness(egui::vec2(1400.0, 800.0));
    until(&mut harness, "all rows", |app| app.table.rows.len() == 120);
    let filters = Filters {
        tenants: vec!["acme".into()],
        ..Filters::default()
    };
    harness
        .state_mut()
        .queue(ConsoleCommand::SetFilters(filters.clone()));
    until(&mut harness, "acme's 90 rows", |app| {
        !app.table.loading && app.table.rows.len() == 90
    });

    // Scroll down the table until row 30 or later is at the top and it has settled.
    let center = egui::pos2(600.0, 450.0);
    let mut settled = 0;
    let mut last = 0;
    for _ in 0..200 {
        let first = harness.state().table.first_row_shown;
        if first >= 30 && first == last {
            settled += 1;
            if settled == 5 {
                break;
            }
        } else {
            settled = 0;
            if first < 30 {
                harness.hover_at(center);
                harness.event(egui::Event::MouseWheel {
                    unit: egui::MouseWheelUnit::Point,
                    delta: egui::vec2(0.0, -120.0),
                    phase: egui::TouchPhase::Move,
                    source: egui::MouseWheelSource::Unknown,
                    modifiers: egui::Modifiers::NONE,
                });
            }
        }
        last = first;
        harness.step();
    }
    let before = harness.state().table.first_row_shown;
    assert!(before >= 30, "scrolled to row {before}");
    let ids: Vec<String> = harness
        .state()
        .table
        .rows
        .iter()
        .map(|r| r.id.to_string())
        .collect();

    harness.state_mut().queue(ConsoleCommand::SwitchLocale);
    harness.run_steps(4);
    let app = harness.state();
    assert!(app.i18n.is_rtl());
    assert_eq!(
        app.state.filters.tenants, filters.tenants,
        "the filters are kept"
    );
    assert_eq!(
        app.table
            .rows
            .iter()
            .map(|r| r.id.clone())
            .collect::<Vec<_>>(),
        ids,
        "the same rows in the same order"
    );
    assert_eq!(
        app.table.first_row_shown, before,
        "the same row is at the top of the table"
    );
}
