//! The SPEC grammar, read as a specification.

use super::{Delay, FaultSpec, FaultSpecProblem, Probability};

fn parse(spec: &str) -> FaultSpec {
    spec.parse().expect("spec should parse")
}

fn problem(spec: &str) -> (String, FaultSpecProblem) {
    let err = spec
        .parse::<FaultSpec>()
        .expect_err("spec should be refused");
    (err.item, err.problem)
}

fn p(value: f64) -> Probability {
    Probability::new(value).expect("test probability is in range")
}

#[test]
fn none_and_empty_clear_everything() {
    assert_eq!(parse("none"), FaultSpec::none());
    assert_eq!(parse("  NONE "), FaultSpec::none());
    assert_eq!(parse(""), FaultSpec::none());
    assert_eq!(FaultSpec::none().to_string(), "none");
}

#[test]
fn every_item_from_the_design_example_parses() {
    let spec = parse(
        "drop_after_commit=0.2,delay_ms=3000@0.1,overload=0.1,retry_after_secs=1,\
         refuse=0.05,redeliver=3,retention_secs=5,ignore_keys=false",
    );
    assert_eq!(spec.drop_after_commit, p(0.2));
    assert_eq!(
        spec.delay,
        Some(Delay {
            ms: 3000,
            probability: p(0.1)
        })
    );
    assert_eq!(spec.overload, p(0.1));
    assert_eq!(spec.retry_after_secs, 1);
    assert_eq!(spec.refuse, p(0.05));
    assert_eq!(spec.redeliver, 3);
    assert_eq!(spec.retention_secs, Some(5));
    assert!(!spec.ignore_keys);
}

#[test]
fn drop_first_counts_creations_and_writes_back() {
    let spec = parse("drop_first=3");
    assert_eq!(spec.drop_first, 3);
    assert_eq!(spec.to_string(), "drop_first=3");
    assert!("drop_first=-1".parse::<FaultSpec>().is_err());
}

#[test]
fn delay_without_probability_always_applies() {
    let spec = parse("delay_ms=250");
    assert_eq!(
        spec.delay,
        Some(Delay {
            ms: 250,
            probability: Probability::ALWAYS
        })
    );
}

#[test]
fn spaces_around_items_names_and_values_are_ignored() {
    assert_eq!(
        parse(" overload = 0.5 , ignore_keys = TRUE "),
        parse("overload=0.5,ignore_keys=true")
    );
}

#[test]
fn display_prints_a_canonical_spec_in_a_fixed_order_without_defaults() {
    let spec = parse(
        "ignore_keys=true,retention_secs=0,redeliver=3,refuse=0.05,retry_after_secs=2,\
         overload=1,delay_ms=3000@0.1,drop_after_commit=0.2",
    );
    assert_eq!(
        spec.to_string(),
        "drop_after_commit=0.2,delay_ms=3000@0.1,overload=1,retry_after_secs=2,\
         refuse=0.05,redeliver=3,retention_secs=0,ignore_keys=true"
    );
    assert_eq!(
        parse("delay_ms=10@1,redeliver=1,ignore_keys=false,overload=0").to_string(),
        "delay_ms=10"
    );
}

#[test]
fn canonical_spec_parses_back_to_the_same_settings() {
    let spec = parse("overload=0.3,delay_ms=40@0.25,retention_secs=9,redeliver=2");
    assert_eq!(parse(&spec.to_string()), spec);
}

#[test]
fn the_after_commit_answers_print_in_the_tables_order() {
    let spec = parse(
        "retry_after_secs=2,wrong_lookup=0.75,wrong_record=0.25,redirect_after_commit=0.5,bare_503_after_commit=1",
    );
    assert_eq!(spec.redirect_after_commit, p(0.5));
    assert_eq!(spec.wrong_record, p(0.25));
    assert_eq!(spec.wrong_lookup, p(0.75));
    assert_eq!(
        spec.to_string(),
        "bare_503_after_commit=1,redirect_after_commit=0.5,wrong_record=0.25,wrong_lookup=0.75,retry_after_secs=2"
    );
    assert_eq!(parse(&spec.to_string()), spec);
    assert_eq!(
        problem("redirect_after_commit=2"),
        (
            "redirect_after_commit=2".to_owned(),
            FaultSpecProblem::ProbabilityOutOfRange
        )
    );
}

#[test]
fn a_delay_that_never_happens_is_no_delay() {
    assert_eq!(parse("delay_ms=0"), FaultSpec::none());
    assert_eq!(parse("delay_ms=500@0"), FaultSpec::none());
}

#[test]
fn unknown_name_is_refused() {
    assert_eq!(
        problem("overload=0.1,explode=1"),
        ("explode=1".to_owned(), FaultSpecProblem::UnknownName)
    );
}

#[test]
fn missing_equals_is_refused() {
    assert_eq!(
        problem("overload"),
        ("overload".to_owned(), FaultSpecProblem::MissingEquals)
    );
}

#[test]
fn values_that_are_not_numbers_are_refused() {
    for spec in [
        "overload=high",
        "delay_ms=soon",
        "delay_ms=100@often",
        "retry_after_secs=-1",
        "redeliver=2.5",
        "retention_secs=",
        "refuse=NaN",
        "drop_after_commit=inf",
    ] {
        assert_eq!(
            problem(spec),
            (spec.to_owned(), FaultSpecProblem::NotANumber)
        );
    }
}

#[test]
fn probabilities_outside_zero_to_one_are_refused() {
    for spec in [
        "drop_after_commit=1.5",
        "overload=-0.1",
        "refuse=2",
        "delay_ms=10@1.01",
    ] {
        assert_eq!(
            problem(spec),
            (spec.to_owned(), FaultSpecProblem::ProbabilityOutOfRange)
        );
    }
}

#[test]
fn ignore_keys_takes_only_true_or_false() {
    assert_eq!(
        problem("ignore_keys=yes"),
        ("ignore_keys=yes".to_owned(), FaultSpecProblem::NotABool)
    );
}

#[test]
fn redeliver_zero_is_refused() {
    assert_eq!(
        problem("redeliver=0"),
        ("redeliver=0".to_owned(), FaultSpecProblem::ZeroRedeliver)
    );
}

#[test]
fn a_name_given_twice_is_refused() {
    assert_eq!(
        problem("overload=0.1,overload=0.2"),
        ("overload=0.2".to_owned(), FaultSpecProblem::Repeated)
    );
}

#[test]
fn empty_items_are_refused() {
    assert_eq!(
        problem("overload=0.1,,refuse=0.1"),
        (String::new(), FaultSpecProblem::EmptyItem)
    );
}

#[test]
fn none_mixed_with_other_items_is_refused() {
    assert_eq!(
        problem("none,overload=1"),
        ("none".to_owned(), FaultSpecProblem::NoneNotAlone)
    );
}

#[test]
fn the_error_message_names_the_item_and_the_reason() {
    let err = "overload=7".parse::<FaultSpec>().expect_err("out of range");
    assert_eq!(
        err.to_string(),
        "bad fault item `overload=7`: probability must be between 0 and 1"
    );
}

#[test]
fn long_items_are_clipped_in_errors() {
    let long = format!("x{}=1", "y".repeat(500));
    let (item, _) = problem(&long);
    assert!(item.chars().count() <= 65, "item = {item}");
}
