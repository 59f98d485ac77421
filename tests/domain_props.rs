//! Properties of the pure core, stated as specifications and checked on generated cases:
//! the intent state machine, the retry policy and canonical arguments.

use intentdesk::domain::canonical::{CanonicalArgs, canonicalize, normalize_text};
use intentdesk::domain::retry::{
    BudgetView, GiveUpReason, Jitter, RetryPolicy, SplitMix64, backoff_ms, plan_retry,
};
use intentdesk::domain::state::{Effect, Event, Evidence, IntentFacts, Refusal, apply};
use intentdesk::domain::vocab::{Disposition, IntentState};
use proptest::prelude::*;
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------
// The intent state machine
// ---------------------------------------------------------------------------------------

/// Any state, with the ones that matter most (executing, indeterminate) more often.
fn any_state() -> impl Strategy<Value = IntentState> {
    prop_oneof![
        2 => prop::sample::select(IntentState::ALL.to_vec()),
        1 => Just(IntentState::Executing),
        1 => Just(IntentState::Indeterminate),
    ]
}

fn any_facts() -> impl Strategy<Value = IntentFacts> {
    (
        any_state(),
        any::<bool>(),
        0u32..6,
        0u32..6,
        0u64..30_000,
        0u64..30_000,
        any::<bool>(),
        prop::bool::weighted(0.9),
        prop::bool::weighted(0.1),
    )
        .prop_map(
            |(state, paused, used, max, deadline, now, crossed, auth, in_flight)| IntentFacts {
                state,
                paused,
                attempts_used: used.min(max),
                max_attempts: max,
                deadline_at_ms: deadline,
                now_ms: now,
                may_have_crossed_boundary: crossed,
                authorization_valid: auth,
                dispatch_in_flight: in_flight,
                cancel_requested: false,
            },
        )
}

fn any_text() -> impl Strategy<Value = Option<String>> {
    prop::sample::select(vec![
        None,
        Some(String::new()),
        Some("   ".to_owned()),
        Some("po-17".to_owned()),
        Some("checked the ERP: no order".to_owned()),
    ])
}

fn any_event() -> impl Strategy<Value = Event> {
    let evidence =
        (any_text(), any_text()).prop_map(|(reference, note)| Evidence { reference, note });
    prop_oneof![
        1 => Just(Event::Validated),
        1 => Just(Event::Refused {
            reason: "invalid".into()
        }),
        1 => Just(Event::Authorized),
        3 => Just(Event::Dispatch),
        1 => Just(Event::ReceiptFound {
            receipt_ref: "rcp".into()
        }),
        2 => Just(Event::OutcomeUnknown),
        1 => Just(Event::NotSent),
        2 => Just(Event::ProvedAbsentRetry),
        1 => Just(Event::ProvedAbsentCancel),
        1 => Just(Event::Cancel {
            reason: "owner".into()
        }),
        1 => (prop::sample::select(Disposition::ALL.to_vec()), evidence).prop_map(
            |(disposition, evidence)| Event::OperatorClose {
                disposition,
                evidence
            }
        ),
        1 => Just(Event::DeadlinePassed),
    ]
}

/// Between events time passes and a pause may start or end.
fn any_steps() -> impl Strategy<Value = Vec<(Event, u64, bool)>> {
    prop::collection::vec((any_event(), 0u64..4_000, prop::bool::weighted(0.2)), 0..40)
}

/// One applied event: the facts before it, the event, and what the machine answered.
struct Step {
    before: IntentFacts,
    event: Event,
    result: Result<intentdesk::domain::Transition, Refusal>,
}

/// Run `steps` from `facts` the way the coordinator would: apply each event, take the new
/// state, and count an attempt for every dispatch enqueued.
fn run(mut facts: IntentFacts, steps: Vec<(Event, u64, bool)>) -> (IntentFacts, Vec<Step>) {
    let mut log = Vec::new();
    for (event, advance_ms, paused) in steps {
        facts.now_ms += advance_ms;
        facts.paused = paused;
        let before = facts.clone();
        let result = apply(&facts, &event);
        if let Ok(t) = &result {
            facts.state = t.to;
            // A cancel that did not end the intent leaves the request beside its state.
            if matches!(event, Event::Cancel { .. }) {
                facts.cancel_requested = true;
            }
            if t.effects.contains(&Effect::EnqueueDispatch) {
                facts.attempts_used += 1;
                facts.may_have_crossed_boundary = true;
            }
        }
        log.push(Step {
            before,
            event,
            result,
        });
    }
    (facts, log)
}

fn carries_evidence(evidence: &Evidence) -> bool {
    let present = |s: &Option<String>| s.as_deref().is_some_and(|s| !s.trim().is_empty());
    present(&evidence.reference) || present(&evidence.note)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// An indeterminate intent leaves only by evidence: a receipt (→ committed), a proved
    /// absence with a permitted retry (→ executing), or an operator close with evidence
    /// (→ committed or cancelled).
    #[test]
    fn indeterminate_is_left_only_by_evidence(facts in any_facts(), steps in any_steps()) {
        let (_, log) = run(facts, steps);
        for step in log {
            let Ok(t) = &step.result else { continue };
            // Staying indeterminate (a recorded cancellation request) is not leaving it.
            if step.before.state != IntentState::Indeterminate || t.to == IntentState::Indeterminate {
                continue;
            }
            prop_assert!(
                matches!(t.to, IntentState::Committed | IntentState::Executing | IntentState::Cancelled),
                "indeterminate went to {} on {:?}", t.to, step.event
            );
            let by_evidence = match &step.event {
                Event::ReceiptFound { .. } | Event::ProvedAbsentRetry | Event::ProvedAbsentCancel => true,
                Event::OperatorClose { evidence, .. } => carries_evidence(evidence),
                _ => false,
            };
            prop_assert!(by_evidence, "indeterminate left on {:?}", step.event);
        }
    }

    /// Once terminal, every event is refused and the state never changes again.
    #[test]
    fn terminal_states_stay_terminal(facts in any_facts(), steps in any_steps()) {
        let (_, log) = run(facts, steps);
        let mut terminal_at = None;
        for step in log {
            if let Some(state) = terminal_at {
                prop_assert_eq!(step.before.state, state);
                prop_assert_eq!(step.result, Err(Refusal::Terminal { state }));
            } else if let Ok(t) = &step.result
                && t.to.is_terminal()
            {
                terminal_at = Some(t.to);
            }
        }
    }

    /// Once cancellation is asked for, nothing more is sent: no event enqueues a dispatch,
    /// and a cancel never makes anything final that may have crossed and was not settled.
    #[test]
    fn nothing_is_sent_once_cancellation_is_requested(facts in any_facts(), steps in any_steps()) {
        let (_, log) = run(facts, steps);
        for step in &log {
            let Ok(t) = &step.result else { continue };
            if step.before.cancel_requested {
                prop_assert!(!t.effects.contains(&Effect::EnqueueDispatch), "{:?} sent", step.event);
            }
            if matches!(step.event, Event::Cancel { .. }) && t.to == IntentState::Cancelled {
                prop_assert!(!step.before.dispatch_in_flight);
                prop_assert!(
                    !step.before.may_have_crossed_boundary
                        || !matches!(step.before.state, IntentState::Executing | IntentState::Indeterminate)
                );
            }
        }
    }

    /// Counting every dispatch enqueued (first dispatches, re-dispatches and proved-absent
    /// retries), an intent never makes more attempts than its `max_attempts`.
    #[test]
    fn the_budget_is_never_exceeded(facts in any_facts(), steps in any_steps()) {
        let max = facts.max_attempts;
        let (end, log) = run(facts, steps);
        for step in &log {
            if let Ok(t) = &step.result
                && t.effects.contains(&Effect::EnqueueDispatch)
            {
                prop_assert!(matches!(step.event, Event::Dispatch | Event::ProvedAbsentRetry));
                prop_assert!(step.before.attempts_used < max);
            }
        }
        prop_assert!(end.attempts_used <= max);
    }
}

// ---------------------------------------------------------------------------------------
// The retry policy
// ---------------------------------------------------------------------------------------

fn any_policy() -> impl Strategy<Value = RetryPolicy> {
    let duration = prop_oneof![0u64..100_000, any::<u64>()];
    (
        duration.clone(),
        duration.clone(),
        duration.clone(),
        duration,
    )
        .prop_map(
            |(base_delay_ms, cap_delay_ms, confirmation_reserve_ms, retry_after_jitter_ms)| {
                RetryPolicy {
                    base_delay_ms,
                    cap_delay_ms,
                    confirmation_reserve_ms,
                    retry_after_jitter_ms,
                }
            },
        )
}

fn any_budget() -> impl Strategy<Value = BudgetView> {
    let instant = prop_oneof![0u64..200_000, any::<u64>()];
    (
        0u32..8,
        0u32..8,
        instant.clone(),
        instant,
        prop::bool::weighted(0.1),
    )
        .prop_map(
            |(attempts_used, max_attempts, now_ms, deadline_at_ms, paused)| BudgetView {
                attempts_used,
                max_attempts,
                now_ms,
                deadline_at_ms,
                paused,
            },
        )
}

/// `base·2ⁿ` without limits, as u128 (anything past 2¹²⁸ is as good as infinite here).
fn unbounded_backoff(base: u64, n: u32) -> u128 {
    match (base, n) {
        (0, _) => 0,
        (_, 0..=63) => u128::from(base) << n,
        _ => u128::MAX,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    /// Full-jitter backoff stays within `min(cap, base·2ⁿ)` for every n, without overflow.
    #[test]
    fn backoff_stays_under_the_cap_and_the_exponential(
        policy in any_policy(),
        n in prop_oneof![0u32..80, any::<u32>()],
        seed in any::<u64>(),
    ) {
        let delay = backoff_ms(&policy, n, &mut SplitMix64::new(seed));
        prop_assert!(delay <= policy.cap_delay_ms);
        prop_assert!(u128::from(delay) <= unbounded_backoff(policy.base_delay_ms, n));
    }

    /// A planned retry always starts early enough to leave the confirmation reserve before
    /// the deadline, and only while unpaused with budget left.
    #[test]
    fn plan_retry_never_plans_past_the_deadline_minus_the_reserve(
        policy in any_policy(),
        budget in any_budget(),
        retry_after_ms in prop::option::of(prop_oneof![0u64..60_000, any::<u64>()]),
        seed in any::<u64>(),
    ) {
        let plan = plan_retry(&policy, &budget, retry_after_ms, &mut SplitMix64::new(seed));
        if let Ok(delay) = plan {
            prop_assert!(!budget.paused);
            prop_assert!(budget.attempts_used < budget.max_attempts);
            let ready = u128::from(budget.now_ms) + u128::from(delay)
                + u128::from(policy.confirmation_reserve_ms);
            prop_assert!(ready <= u128::from(budget.deadline_at_ms));
        }
    }

    /// `Retry-After` is honoured: the delay is at least what the downstream asked for, and
    /// at most that plus the configured jitter.
    #[test]
    fn retry_after_is_always_honoured(
        policy in any_policy(),
        budget in any_budget(),
        retry_after_ms in prop_oneof![0u64..60_000, any::<u64>()],
        seed in any::<u64>(),
    ) {
        if let Ok(delay) = plan_retry(&policy, &budget, Some(retry_after_ms), &mut SplitMix64::new(seed)) {
            prop_assert!(delay >= retry_after_ms);
            prop_assert!(u128::from(delay)
                <= u128::from(retry_after_ms) + u128::from(policy.retry_after_jitter_ms));
        }
    }

    /// Whether a retry is planned never depends on the random draw, only on the facts.
    #[test]
    fn giving_up_does_not_depend_on_the_draw(
        policy in any_policy(),
        budget in any_budget(),
        retry_after_ms in prop::option::of(0u64..60_000),
        a in any::<u64>(),
        b in any::<u64>(),
    ) {
        let first = plan_retry(&policy, &budget, retry_after_ms, &mut SplitMix64::new(a));
        let second = plan_retry(&policy, &budget, retry_after_ms, &mut SplitMix64::new(b));
        prop_assert_eq!(first.err(), second.err());
    }

    /// An intent gives up for the deadline only when even the shortest permissible wait
    /// (none, or the bare `Retry-After`) would eat into the confirmation reserve.
    #[test]
    fn the_deadline_ends_retries_only_when_nothing_fits(
        policy in any_policy(),
        budget in any_budget(),
        retry_after_ms in prop::option::of(0u64..60_000),
        seed in any::<u64>(),
    ) {
        let plan = plan_retry(&policy, &budget, retry_after_ms, &mut SplitMix64::new(seed));
        if plan == Err(GiveUpReason::DeadlineTooClose) {
            let shortest = u128::from(budget.now_ms)
                + u128::from(retry_after_ms.unwrap_or(0))
                + u128::from(policy.confirmation_reserve_ms);
            prop_assert!(shortest > u128::from(budget.deadline_at_ms));
        }
    }
}

// ---------------------------------------------------------------------------------------
// Canonical arguments
// ---------------------------------------------------------------------------------------

#[derive(Debug, Clone)]
struct Line {
    sku: String,
    qty: u32,
    unit_price_cents: u64,
}

#[derive(Debug, Clone)]
struct Order {
    vendor: String,
    recipient: String,
    currency: &'static str,
    lines: Vec<Line>,
    note: String,
}

/// Persian words written with Persian yeh and keheh, as the English console stores them.
fn persian_words() -> impl Strategy<Value = String> {
    let words = vec![
        "شرکت",
        "کاغذ",
        "یزد",
        "کیان",
        "پیک",
        "نیکی",
        "آرین",
        "مهر",
        "کالا",
        "تهران",
        "یکتا",
    ];
    prop::collection::vec(prop::sample::select(words), 1..4).prop_map(|w| w.join(" "))
}

fn any_order() -> impl Strategy<Value = Order> {
    let line = (
        "[0-9]{1,3}[A-Z]{0,2}[0-9]{2,5}",
        1u32..100_000,
        0u64..100_000_000,
    )
        .prop_map(|(sku, qty, unit_price_cents)| Line {
            sku,
            qty,
            unit_price_cents,
        });
    (
        persian_words(),
        persian_words(),
        prop::sample::select(vec!["IRR", "USD", "EUR"]),
        prop::collection::vec(line, 1..5),
        persian_words(),
    )
        .prop_map(|(vendor, recipient, currency, lines, note)| Order {
            vendor,
            recipient,
            currency,
            lines,
            note,
        })
}

fn decimal_text(cents: u64) -> String {
    format!("{}.{:02}", cents / 100, cents % 100)
}

fn total_cents(order: &Order) -> u64 {
    order
        .lines
        .iter()
        .map(|l| u64::from(l.qty) * l.unit_price_cents)
        .sum()
}

/// The order as the English console sends it: ASCII digits, JSON numbers.
fn english(order: &Order) -> Value {
    let number = |text: String| -> Value { serde_json::from_str(&text).unwrap_or(Value::Null) };
    let lines: Vec<Value> = order
        .lines
        .iter()
        .map(|l| {
            json!({
                "sku": l.sku,
                "qty": l.qty,
                "unit_price": number(decimal_text(l.unit_price_cents)),
            })
        })
        .collect();
    json!({
        "vendor": order.vendor,
        "recipient": order.recipient,
        "currency": order.currency,
        "lines": lines,
        "total": number(decimal_text(total_cents(order))),
        "note": order.note,
    })
}

/// How a Persian console (or a person typing) may write the same order.
#[derive(Debug, Clone)]
struct Spelling {
    digits: u8,
    grouping: u8,
    persian_decimal_point: bool,
    arabic_letters: bool,
    decomposed: bool,
    padding: Vec<&'static str>,
    shuffle_seed: u64,
}

fn any_spelling() -> impl Strategy<Value = Spelling> {
    let pad = prop::sample::select(vec!["", " ", "  ", "\t", "\n", "\u{00A0}", "\u{3000}"]);
    (
        0u8..3,
        0u8..3,
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        prop::collection::vec(pad, 16),
        any::<u64>(),
    )
        .prop_map(
            |(
                digits,
                grouping,
                persian_decimal_point,
                arabic_letters,
                decomposed,
                padding,
                shuffle_seed,
            )| {
                Spelling {
                    digits,
                    grouping,
                    persian_decimal_point,
                    arabic_letters,
                    decomposed,
                    padding,
                    shuffle_seed,
                }
            },
        )
}

impl Spelling {
    fn digits(&self, s: &str) -> String {
        let zero = match self.digits {
            0 => return s.to_owned(),
            1 => 0x06F0,
            _ => 0x0660,
        };
        s.chars()
            .map(|c| match c.to_digit(10) {
                Some(d) => char::from_u32(zero + d).unwrap_or(c),
                None => c,
            })
            .collect()
    }

    fn letters(&self, s: &str) -> String {
        let mut out: String = s
            .chars()
            .enumerate()
            .map(|(i, c)| match c {
                'ی' if self.arabic_letters => ['ي', 'ى'][i % 2],
                'ک' if self.arabic_letters => 'ك',
                c => c,
            })
            .collect();
        if self.decomposed {
            out = out.replace('آ', "\u{0627}\u{0653}");
        }
        out
    }

    fn pad(&self, i: usize, s: &str) -> String {
        let n = self.padding.len();
        format!("{}{s}{}", self.padding[i % n], self.padding[(i + 7) % n])
    }

    /// An amount in cents as a numeric string.
    fn amount(&self, cents: u64) -> String {
        let int = (cents / 100).to_string();
        let sep = match self.grouping {
            0 => None,
            1 => Some(','),
            _ => Some('\u{066C}'),
        };
        let mut grouped = String::new();
        for (i, c) in int.chars().enumerate() {
            if let Some(sep) = sep
                && i > 0
                && (int.len() - i).is_multiple_of(3)
            {
                grouped.push(sep);
            }
            grouped.push(c);
        }
        let point = if self.persian_decimal_point {
            '\u{066B}'
        } else {
            '.'
        };
        self.digits(&format!("{grouped}{point}{:02}", cents % 100))
    }

    fn shuffled<T>(&self, mut items: Vec<T>, salt: u64) -> Vec<T> {
        let mut rng = SplitMix64::new(self.shuffle_seed ^ salt);
        for i in (1..items.len()).rev() {
            let j = (rng.unit() * (i + 1) as f64) as usize;
            items.swap(i, j.min(i));
        }
        items
    }
}

/// Write an object's members as JSON text in the given order.
fn object_text(members: Vec<(String, String)>) -> String {
    let body: Vec<String> = members
        .into_iter()
        .map(|(k, v)| format!("{}:{v}", Value::String(k)))
        .collect();
    format!("{{ {} }}", body.join(" , "))
}

/// The order as the Persian console may send it, as JSON text with keys in any order.
fn persian_text(order: &Order, sp: &Spelling) -> String {
    let s = |i: usize, text: &str| Value::String(sp.pad(i, text)).to_string();
    let key = |i: usize, name: &str| sp.pad(i + 3, name);
    let lines: Vec<String> = order
        .lines
        .iter()
        .enumerate()
        .map(|(n, l)| {
            let members = vec![
                (key(n, "sku"), s(n, &sp.digits(&l.sku))),
                (key(n + 1, "qty"), s(n + 2, &sp.digits(&l.qty.to_string()))),
                (
                    key(n + 2, "unit_price"),
                    s(n + 4, &sp.amount(l.unit_price_cents)),
                ),
            ];
            object_text(sp.shuffled(members, n as u64 + 1))
        })
        .collect();
    let members = vec![
        (key(0, "vendor"), s(1, &sp.letters(&order.vendor))),
        (key(1, "recipient"), s(2, &sp.letters(&order.recipient))),
        (key(2, "currency"), s(3, order.currency)),
        (key(3, "lines"), format!("[{}]", lines.join(","))),
        (key(4, "total"), s(5, &sp.amount(total_cents(order)))),
        (key(5, "note"), s(6, &sp.digits(&sp.letters(&order.note)))),
    ];
    object_text(sp.shuffled(members, 0))
}

fn canonical(value: &Value) -> Result<CanonicalArgs, TestCaseError> {
    canonicalize(value).map_err(|e| TestCaseError::fail(format!("{e} in {value}")))
}

fn parse(text: &str) -> Result<Value, TestCaseError> {
    serde_json::from_str(text).map_err(|e| TestCaseError::fail(format!("{e} in {text}")))
}

/// Any JSON value, with strings and numbers in the forms canonicalisation unifies.
fn any_json() -> impl Strategy<Value = Value> {
    let text = prop_oneof![
        "[ a-zA-Z0-9,.\\-]{0,12}",
        "[ \u{0600}-\u{06FF}\u{200C}\u{00A0}]{0,12}",
        "[0-9\u{06F0}-\u{06F9}\u{0660}-\u{0669},\u{066B}\u{066C}.\\-]{1,10}",
        any::<String>(),
    ];
    let number = prop_oneof![
        2 => any::<i64>().prop_map(Value::from),
        1 => any::<u64>().prop_map(Value::from),
        3 => (any::<i64>(), 0u32..6).prop_map(|(n, places)| {
            serde_json::from_str(&format!("{}e-{places}", n / 1000)).unwrap_or(Value::Null)
        }),
        1 => any::<f64>().prop_map(Value::from),
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        number,
        text.clone().prop_map(Value::String),
    ];
    let key = prop_oneof![
        1 => prop::sample::select(vec!["amount", " qty", "total ", "sku", "note", "كد", "کد"])
            .prop_map(str::to_owned),
        4 => text,
    ];
    leaf.prop_recursive(4, 48, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(key.clone(), inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// The same order typed in Persian (Persian or Arabic-Indic digits, Arabic yeh and kaf,
    /// Persian separators, decomposed letters, extra outer whitespace, any key order)
    /// hashes equal to its English, ASCII form.
    #[test]
    fn a_persian_order_hashes_like_its_english_form(order in any_order(), sp in any_spelling()) {
        let english = canonical(&english(&order))?;
        let persian = canonical(&parse(&persian_text(&order, &sp))?)?;
        prop_assert_eq!(persian.json, english.json);
        prop_assert_eq!(persian.hash, english.hash);
    }

    /// A changed amount is a different order.
    #[test]
    fn a_changed_amount_hashes_differently(order in any_order(), which in any::<prop::sample::Index>(), bump in 1u32..1000) {
        let mut changed = order.clone();
        let line = which.index(changed.lines.len());
        changed.lines[line].qty += bump;
        prop_assert_ne!(canonical(&english(&order))?.hash, canonical(&english(&changed))?.hash);
    }

    /// A changed recipient is a different order.
    #[test]
    fn a_changed_recipient_hashes_differently(order in any_order(), other in persian_words()) {
        prop_assume!(normalize_text(&other) != normalize_text(&order.recipient));
        let mut changed = order.clone();
        changed.recipient = other;
        prop_assert_ne!(canonical(&english(&order))?.hash, canonical(&english(&changed))?.hash);
    }

    /// Canonicalising canonical text changes nothing.
    #[test]
    fn canonicalising_is_idempotent(members in prop::collection::btree_map(".{0,6}", any_json(), 0..8)) {
        let args = Value::Object(members.into_iter().collect());
        if let Ok(first) = canonicalize(&args) {
            let again = canonical(&parse(&first.json)?)?;
            prop_assert_eq!(again, first);
        }
    }

    /// The text rules are idempotent on any string.
    #[test]
    fn normalising_text_is_idempotent(s in prop_oneof![any::<String>(), "[\u{0600}-\u{06FF}\u{0300}-\u{036F} ]{0,16}"]) {
        let once = normalize_text(&s);
        prop_assert_eq!(normalize_text(&once), once);
    }
}
