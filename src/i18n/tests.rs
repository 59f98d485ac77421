//! The two locales say the same things: same message ids, same variables, every state,
//! tier and command named, numbers in the locale's digits.

use std::collections::{BTreeMap, BTreeSet};

use fluent_bundle::FluentResource;

use super::*;
use crate::domain::{CommandKind, ConsequenceTier, IntentState};

/// Message ids of one Fluent source, each with the variables its value and attributes use.
///
/// A message starts on an unindented line `id = …`; indented lines continue it. Comments
/// (`#`) and terms (`-id`) are skipped. The ids are checked against what Fluent itself
/// parsed in `every_scanned_message_is_one_fluent_loaded`.
fn messages(source: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in source.lines() {
        let starts_entry = line.starts_with(|c: char| c.is_ascii_alphabetic());
        if starts_entry {
            let id = line.split('=').next().unwrap_or_default().trim().to_owned();
            out.entry(id.clone()).or_default();
            current = Some(id);
        } else if !line.starts_with(' ') && !line.is_empty() {
            current = None;
        }
        if let Some(id) = &current {
            out.entry(id.clone()).or_default().extend(variables(line));
        }
    }
    out
}

/// The `$name`s of one line.
fn variables(line: &str) -> Vec<String> {
    line.split('$')
        .skip(1)
        .map(|rest| {
            rest.chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
                .collect::<String>()
        })
        .filter(|name| !name.is_empty())
        .collect()
}

fn all_messages(locale: Locale) -> BTreeMap<String, BTreeSet<String>> {
    sources(locale)
        .iter()
        .flat_map(|(_, source)| messages(source))
        .collect()
}

#[test]
fn both_locales_define_the_same_message_ids() {
    let en: BTreeSet<_> = all_messages(Locale::EnUs).into_keys().collect();
    let fa: BTreeSet<_> = all_messages(Locale::FaIr).into_keys().collect();
    assert!(!en.is_empty());
    let only_en: Vec<_> = en.difference(&fa).collect();
    let only_fa: Vec<_> = fa.difference(&en).collect();
    assert!(
        only_en.is_empty() && only_fa.is_empty(),
        "only in en-US: {only_en:?}; only in fa-IR: {only_fa:?}"
    );
}

#[test]
fn each_message_uses_the_same_variables_in_both_locales() {
    let en = all_messages(Locale::EnUs);
    let fa = all_messages(Locale::FaIr);
    let differing: Vec<_> = en
        .iter()
        .filter_map(|(id, en_vars)| {
            let fa_vars = fa.get(id)?;
            (en_vars != fa_vars).then(|| format!("{id}: en-US {en_vars:?}, fa-IR {fa_vars:?}"))
        })
        .collect();
    assert!(differing.is_empty(), "{differing:#?}");
}

#[test]
fn every_file_parses_cleanly_and_every_scanned_message_is_one_fluent_loaded() {
    for locale in Locale::ALL {
        for (file, source) in sources(*locale) {
            assert!(
                FluentResource::try_new((*source).to_owned()).is_ok(),
                "{} {file} has syntax errors",
                locale.as_str()
            );
        }
        let localizer = Localizer::new(*locale);
        for id in all_messages(*locale).keys() {
            assert!(
                localizer.bundle.has_message(id),
                "{} lacks {id}",
                locale.as_str()
            );
        }
    }
}

#[test]
fn every_state_tier_command_and_retry_owner_has_a_name() {
    let mut ids: Vec<String> = IntentState::ALL
        .iter()
        .map(|s| format!("state-{}", s.as_str()))
        .collect();
    ids.extend(
        ConsequenceTier::ALL
            .iter()
            .map(|t| format!("tier-{}", t.as_str())),
    );
    ids.extend(
        CommandKind::ALL
            .iter()
            .map(|c| format!("command-{}", c.as_str())),
    );
    ids.extend(
        crate::domain::RetryOwner::ALL
            .iter()
            .map(|o| format!("retry-owner-{}", o.as_str())),
    );
    for locale in Locale::ALL {
        let messages = all_messages(*locale);
        for id in &ids {
            assert!(messages.contains_key(id), "{} lacks {id}", locale.as_str());
        }
    }
}

#[test]
fn an_indeterminate_outcome_never_reads_as_failed() {
    let en = Localizer::new(Locale::EnUs)
        .tr("state-indeterminate")
        .to_lowercase();
    let fa = Localizer::new(Locale::FaIr).tr("state-indeterminate");
    assert!(!en.contains("fail") && !en.contains("error"), "{en}");
    assert!(
        !fa.contains("شکست") && !fa.contains("ناموفق") && !fa.contains("خطا"),
        "{fa}"
    );
    assert!(en.contains("unknown") && fa.contains("نامعلوم"));
}

#[test]
fn persian_messages_show_numbers_in_persian_digits() {
    let fa = Localizer::new(Locale::FaIr);
    assert_eq!(
        fa.tr_args("table-count", &[("count", 1200.into())]),
        "۱٬۲۰۰ درخواست"
    );
    let en = Localizer::new(Locale::EnUs);
    assert_eq!(
        en.tr_args("table-count", &[("count", 1200.into())]),
        "1,200 intents"
    );
    assert_eq!(
        en.tr_args("table-count", &[("count", 1.into())]),
        "One intent"
    );
}

#[test]
fn ids_passed_as_text_keep_their_latin_digits_and_get_no_isolation_marks() {
    let fa = Localizer::new(Locale::FaIr);
    let title = fa.tr_args("view-intent-title", &[("intent", "int_0042".into())]);
    assert_eq!(title, "درخواست int_0042");
    assert!(!title.contains(['\u{2068}', '\u{2069}']));
}

#[test]
fn a_missing_message_shows_its_id() {
    let en = Localizer::new(Locale::EnUs);
    assert_eq!(en.tr("no-such-message"), "no-such-message");
    assert_eq!(
        en.tr("state-new.no-such-attribute"),
        "state-new.no-such-attribute"
    );
}

#[test]
fn locale_direction_and_helpers_follow_the_locale() {
    let fa = Localizer::new(Locale::FaIr);
    assert!(fa.is_rtl());
    assert_eq!(fa.direction(), Direction::Rtl);
    assert_eq!(fa.int(1234), "۱٬۲۳۴");
    assert_eq!(fa.date_tooltip(0, 0), "میلادی: ۱۹۷۰/۰۱/۰۱ ۰۰:۰۰");
    let en = Localizer::new(Locale::EnUs);
    assert!(!en.is_rtl());
    assert_eq!(en.decimal(2.5, 1), "2.5");
}

#[test]
fn a_localizer_can_be_shared_between_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Localizer>();
}
