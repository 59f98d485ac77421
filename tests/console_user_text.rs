//! Text that users and agents wrote keeps its own direction in both consoles, the frozen
//! command is on screen, and the Persian envelope and panel are laid out from the right:
//! pictures of the envelope and the audit trail (compared by eye with the pango renderings
//! of the reference sentences, then pinned), and the real app against a real coordinator.
#![cfg(feature = "console")]

mod common;

use common::console::{Rig, until};
use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;
use intentdesk::console::ConsoleApp;
use intentdesk::console::commands::ConsoleCommand;
use intentdesk::console::model::IntentDetail;
use intentdesk::console::views::audit::audit_ui;
use intentdesk::console::views::envelope::envelope_ui;
use intentdesk::console::views::intent_view::IntentTab;
use intentdesk::domain::Locale;
use intentdesk::domain::canonical::canonicalize;
use intentdesk::i18n::Localizer;
use serde_json::{Value, json};

/// The purpose of the example: a Persian employee's order.
const PURPOSE: &str = "پرداخت ۳۵٫۵ میلیون ریال به تأمین‌کننده ACME-IR در ۱۴۰۵/۰۹/۱۰";
/// Three of the reference sentences of the design notes.
const APPROVED: &str = "درخواست خرید تأیید شده";
const ORDER: &str = "سفارش PO-1234 برای ۱۲۰۰ واحد";
const PENDING: &str = "وضعیت: «در انتظار» (۳ مورد) می‌شود";

const T0: u64 = 1_796_031_355_000;

fn args() -> Value {
    json!({"supplier": "ACME-IR", "amount": 35_500_000, "currency": "IRR", "item": "کاغذ A4", "note": ORDER})
}

fn detail() -> IntentDetail {
    let id = "int_01kbx7q3p9d2m8v4r6t0y5zs09";
    let args = args();
    let hash = canonicalize(&args).expect("canonical").hash;
    serde_json::from_value(json!({
        "intent": {
            "id": id, "tenant": "pars-trading", "actor": "کارمند خرید", "purpose": PURPOSE,
            "operation": "purchase_order.create", "tool": "erp.po", "consequence": "financial",
            "state": "indeterminate", "state_reason": PENDING, "attempts": 1, "max_attempts": 3,
            "created_at_ms": T0, "updated_at_ms": T0 + 5_000, "deadline_at_ms": T0 + 600_000,
            "action_key": format!("po:pars-trading:{id}"), "connector": "erp", "release_id": "r7",
            "locale": "fa-IR", "args": args, "canonical_args_hash": hash,
            "authorization_version": "v1", "approver": APPROVED,
        },
        "commands": [
            {"command_id": "cmd_01kbx7q3p9d2m8v4r6t0y5zsd9", "kind": "close", "actor": "سرپرست", "role": "supervisor",
             "reason": PURPOSE, "dry_run": false, "status": "applied", "result": {},
             "body": {"target": {"intent_id": id}, "evidence": {"reference": "PO-1234", "note": ORDER}},
             "created_at_ms": T0 + 6_500}
        ],
    }))
    .expect("detail")
}

fn picture(
    name: &str,
    locale: Locale,
    height: f32,
    draw: fn(&mut egui::Ui, &Localizer, &IntentDetail),
) {
    let detail = detail();
    let i18n = Localizer::new(locale);
    let mut harness = Harness::builder()
        .with_size(egui::vec2(760.0, height))
        .with_context_setup(intentdesk::console::text::install_fonts)
        .build_ui(move |ui| {
            if i18n.is_rtl() {
                ui.with_layout(egui::Layout::top_down(egui::Align::Max), |ui| {
                    draw(ui, &i18n, &detail)
                });
            } else {
                draw(ui, &i18n, &detail);
            }
        });
    harness.run_steps(4);
    harness.snapshot(name);
}

#[test]
fn persian_text_reads_in_its_own_order_in_the_english_envelope() {
    picture("envelope_en_persian_text", Locale::EnUs, 820.0, envelope_ui);
}

#[test]
fn the_persian_envelope_puts_values_beside_their_names() {
    picture("envelope_fa", Locale::FaIr, 820.0, envelope_ui);
}

#[test]
fn persian_reasons_and_evidence_read_in_their_own_order_in_the_english_audit() {
    fn audit(ui: &mut egui::Ui, i18n: &Localizer, detail: &IntentDetail) {
        let mut dry_runs = false;
        audit_ui(ui, i18n, detail, &mut dry_runs);
    }
    picture("audit_en_persian_text", Locale::EnUs, 260.0, audit);
}

fn open_persian_order(rig: &Rig) -> (String, Harness<'static, ConsoleApp>) {
    let body = json!({
        "tenant": "pars-trading", "actor": "agent", "purpose": PURPOSE, "operation": "purchase_order.create",
        "tool": "erp.po", "consequence": "write", "args": args(), "deadline_secs": 600, "max_attempts": 3,
        "release_id": "r1", "locale": "fa-IR", "connector": "erp"
    });
    let (status, _, created) = rig.post("/v1/intents", Some("po-fa-acme-ir"), &body);
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_str().expect("id").to_string();
    let mut harness = rig.harness_as(
        common::console::ADMIN,
        Some(id.clone()),
        egui::vec2(1400.0, 900.0),
    );
    until(&mut harness, "the intent", |app| {
        app.open.as_ref().is_some_and(|o| o.detail.is_some()) && app.table.rows.len() == 1
    });
    harness.state_mut().intent_view.tab = IntentTab::Envelope;
    harness.run_steps(4);
    (id, harness)
}

#[test]
fn the_frozen_command_is_on_screen_in_both_languages() {
    let rig = Rig::start();
    let (_, mut harness) = open_persian_order(&rig);
    // The canonical form the hash covers: Persian digits in text become Latin ones.
    let note = "سفارش PO-1234 برای 1200 واحد";
    for shown in ["ACME-IR", "35,500,000", "IRR", "کاغذ A4", note, PURPOSE] {
        assert!(
            harness.query_by_label(shown).is_some(),
            "{shown} is in the English envelope"
        );
    }
    let hash_sentence = Localizer::new(Locale::EnUs).tr("envelope-args-hash-matches");
    assert!(harness.query_by_label(&hash_sentence).is_some());

    harness.state_mut().queue(ConsoleCommand::SwitchLocale);
    harness.run_steps(4);
    for shown in ["ACME-IR", "۳۵٬۵۰۰٬۰۰۰", "IRR", "کاغذ A4"] {
        assert!(
            harness.query_by_label(shown).is_some(),
            "{shown} is in the Persian envelope"
        );
    }
    assert!(
        harness.query_by_label("35,500,000").is_none(),
        "the Persian envelope shows the amount in Persian digits"
    );
}

#[test]
fn after_a_switch_to_persian_the_panel_stands_beside_the_table() {
    for tab in [
        IntentTab::Timeline,
        IntentTab::Envelope,
        IntentTab::Ledger,
        IntentTab::Audit,
    ] {
        panel_beside_the_table(tab);
    }
}

fn panel_beside_the_table(tab: IntentTab) {
    let rig = Rig::start();
    let (id, mut harness) = open_persian_order(&rig);
    harness.state_mut().intent_view.tab = tab;
    harness.run_steps(4);
    let width = 1400.0;
    let short: String = id.chars().take(14).collect();
    let row_shown = |harness: &Harness<'static, ConsoleApp>| {
        harness
            .query_all_by_label(&short)
            .filter(|n| {
                let r = n.rect();
                r.width() > 0.0 && r.max.x <= width && r.min.x >= 0.0
            })
            .count()
    };
    assert!(
        row_shown(&harness) > 0,
        "the table shows the intent in English"
    );

    harness.state_mut().queue(ConsoleCommand::SwitchLocale);
    harness.run_steps(6);
    assert!(harness.state().i18n.is_rtl());
    let title = Localizer::new(Locale::FaIr)
        .tr_args("view-intent-title", &[("intent", short.as_str().into())]);
    let panel = harness.get_by_label(&title).rect();
    assert!(
        panel.min.x < width / 2.0,
        "the intent panel is on the left in Persian: {panel:?}"
    );
    assert!(
        row_shown(&harness) > 0,
        "the intents table is still visible beside the panel ({tab:?})"
    );
}
