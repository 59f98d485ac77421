//! The fault settings of the sandbox and their SPEC grammar.
//!
//! A SPEC is comma-separated `name=value` items; `none` or an empty string clears every
//! fault. Items:
//!
//! | item | meaning |
//! |---|---|
//! | `drop_after_commit=P` | commit the effect, then close the connection without a response |
//! | `delay_ms=MS@P` | with probability P hold a request MS milliseconds before processing it (`delay_ms=MS` means P = 1); a held creation takes effect even if its caller stopped waiting |
//! | `overload=P` | answer 503 with `Retry-After`, processing nothing |
//! | `overload_writes=P` | the same, on creations only (lookups answer: a saturated write path) |
//! | `fail_lookups=P` | answer a lookup 500, finding nothing (creations answer: a broken read path) |
//! | `bare_503_after_commit=P` | commit the effect, then answer 503 without `Retry-After`, as a proxy in front that gave up waiting |
//! | `redirect_after_commit=P` | commit the effect, then answer 303 See Other with the record's lookup as its `Location` |
//! | `wrong_record=P` | commit the effect, then answer with the first record of its kind (another key's, unless it is the first) and no `external_ref`, as a downstream that mixed its answers up |
//! | `wrong_lookup=P` | answer a lookup that finds its record with the first record of its kind instead, without `external_ref` |
//! | `retry_after_secs=N` | the `Retry-After` value (default 1) |
//! | `refuse=P` | accept a TCP connection and close it at once, reading nothing |
//! | `redeliver=N` | deliver every webhook N times in total (default 1, at least 1) |
//! | `retention_secs=N` | forget idempotency keys N seconds after their record was created |
//! | `ignore_keys=true\|false` | create a new record on every POST, whatever the key |
//!
//! Probabilities are decimal numbers in `0..=1`. Each name may appear once. [`FaultSpec`]
//! prints back as a canonical SPEC: the items that differ from the defaults, in the order
//! of the table above, or `none`.

use std::fmt;
use std::str::FromStr;

/// A probability in `0..=1`.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Default)]
pub struct Probability(f64);

impl Probability {
    pub const NEVER: Self = Self(0.0);
    pub const ALWAYS: Self = Self(1.0);

    /// `None` unless `p` is a finite number in `0..=1`.
    pub fn new(p: f64) -> Option<Self> {
        (p.is_finite() && (0.0..=1.0).contains(&p)).then_some(Self(p))
    }

    pub fn get(self) -> f64 {
        self.0
    }

    pub fn is_never(self) -> bool {
        self.0 <= 0.0
    }
}

impl fmt::Display for Probability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Hold a request `ms` milliseconds before processing it, with the given probability.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Delay {
    pub ms: u64,
    pub probability: Probability,
}

/// Every fault setting at once. [`FaultSpec::default`] is no fault at all.
#[derive(Debug, Clone, PartialEq)]
pub struct FaultSpec {
    pub drop_after_commit: Probability,
    /// The responses of the first this many creations (not replays) are lost after they
    /// commit, whatever the dice say: a lost response that is certain to happen.
    pub drop_first: u64,
    /// `None` when no request is ever delayed.
    pub delay: Option<Delay>,
    pub overload: Probability,
    pub overload_writes: Probability,
    pub fail_lookups: Probability,
    pub bare_503_after_commit: Probability,
    pub redirect_after_commit: Probability,
    pub wrong_record: Probability,
    pub wrong_lookup: Probability,
    pub retry_after_secs: u64,
    pub refuse: Probability,
    /// How many times each webhook is delivered in total; at least 1.
    pub redeliver: u32,
    /// `None` keeps idempotency keys for as long as the sandbox runs.
    pub retention_secs: Option<u64>,
    pub ignore_keys: bool,
}

impl FaultSpec {
    pub const DEFAULT_RETRY_AFTER_SECS: u64 = 1;

    /// No fault at all.
    pub fn none() -> Self {
        Self::default()
    }

    /// Key retention in milliseconds, if keys are forgotten.
    pub fn retention_ms(&self) -> Option<u64> {
        self.retention_secs.map(|s| s.saturating_mul(1000))
    }
}

impl Default for FaultSpec {
    fn default() -> Self {
        Self {
            drop_after_commit: Probability::NEVER,
            drop_first: 0,
            delay: None,
            overload: Probability::NEVER,
            overload_writes: Probability::NEVER,
            fail_lookups: Probability::NEVER,
            bare_503_after_commit: Probability::NEVER,
            redirect_after_commit: Probability::NEVER,
            wrong_record: Probability::NEVER,
            wrong_lookup: Probability::NEVER,
            retry_after_secs: Self::DEFAULT_RETRY_AFTER_SECS,
            refuse: Probability::NEVER,
            redeliver: 1,
            retention_secs: None,
            ignore_keys: false,
        }
    }
}

/// Why a SPEC item was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FaultSpecProblem {
    MissingEquals,
    EmptyItem,
    UnknownName,
    NotANumber,
    ProbabilityOutOfRange,
    NotABool,
    ZeroRedeliver,
    Repeated,
    NoneNotAlone,
}

impl fmt::Display for FaultSpecProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::MissingEquals => "expected `name=value`, missing `=`",
            Self::EmptyItem => "empty item between commas",
            Self::UnknownName => {
                "unknown name; expected one of drop_after_commit, drop_first, delay_ms, overload, \
                 overload_writes, fail_lookups, bare_503_after_commit, redirect_after_commit, wrong_record, wrong_lookup, retry_after_secs, refuse, redeliver, \
                 retention_secs, ignore_keys"
            }
            Self::NotANumber => "value is not a number",
            Self::ProbabilityOutOfRange => "probability must be between 0 and 1",
            Self::NotABool => "value must be `true` or `false`",
            Self::ZeroRedeliver => "redeliver must be at least 1",
            Self::Repeated => "name given more than once",
            Self::NoneNotAlone => "`none` must stand alone",
        })
    }
}

/// A SPEC that does not parse: the offending item and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad fault item `{item}`: {problem}")]
pub struct FaultSpecError {
    pub item: String,
    pub problem: FaultSpecProblem,
}

impl FromStr for FaultSpec {
    type Err = FaultSpecError;

    fn from_str(spec: &str) -> Result<Self, FaultSpecError> {
        let spec = spec.trim();
        if spec.is_empty() || spec.eq_ignore_ascii_case("none") {
            return Ok(Self::none());
        }
        let mut out = Self::none();
        let mut seen: Vec<&str> = Vec::new();
        for raw in spec.split(',') {
            let item = raw.trim();
            let fail = |problem| FaultSpecError {
                item: clip(item),
                problem,
            };
            if item.is_empty() {
                return Err(fail(FaultSpecProblem::EmptyItem));
            }
            if item.eq_ignore_ascii_case("none") {
                return Err(fail(FaultSpecProblem::NoneNotAlone));
            }
            let (name, value) = item
                .split_once('=')
                .ok_or_else(|| fail(FaultSpecProblem::MissingEquals))?;
            let (name, value) = (name.trim(), value.trim());
            if seen.contains(&name) {
                return Err(fail(FaultSpecProblem::Repeated));
            }
            apply(&mut out, name, value).map_err(fail)?;
            seen.push(name);
        }
        Ok(out)
    }
}

fn apply(out: &mut FaultSpec, name: &str, value: &str) -> Result<(), FaultSpecProblem> {
    match name {
        "drop_after_commit" => out.drop_after_commit = probability(value)?,
        "drop_first" => out.drop_first = number(value)?,
        "delay_ms" => {
            let (ms, p) = match value.split_once('@') {
                Some((ms, p)) => (number(ms.trim())?, probability(p.trim())?),
                None => (number(value)?, Probability::ALWAYS),
            };
            out.delay = (ms > 0 && !p.is_never()).then_some(Delay { ms, probability: p });
        }
        "overload" => out.overload = probability(value)?,
        "overload_writes" => out.overload_writes = probability(value)?,
        "fail_lookups" => out.fail_lookups = probability(value)?,
        "bare_503_after_commit" => out.bare_503_after_commit = probability(value)?,
        "redirect_after_commit" => out.redirect_after_commit = probability(value)?,
        "wrong_record" => out.wrong_record = probability(value)?,
        "wrong_lookup" => out.wrong_lookup = probability(value)?,
        "retry_after_secs" => out.retry_after_secs = number(value)?,
        "refuse" => out.refuse = probability(value)?,
        "redeliver" => {
            let n = u32::try_from(number(value)?).map_err(|_| FaultSpecProblem::NotANumber)?;
            if n == 0 {
                return Err(FaultSpecProblem::ZeroRedeliver);
            }
            out.redeliver = n;
        }
        "retention_secs" => out.retention_secs = Some(number(value)?),
        "ignore_keys" => {
            out.ignore_keys = match value.to_ascii_lowercase().as_str() {
                "true" => true,
                "false" => false,
                _ => return Err(FaultSpecProblem::NotABool),
            }
        }
        _ => return Err(FaultSpecProblem::UnknownName),
    }
    Ok(())
}

fn number(value: &str) -> Result<u64, FaultSpecProblem> {
    value.parse().map_err(|_| FaultSpecProblem::NotANumber)
}

fn probability(value: &str) -> Result<Probability, FaultSpecProblem> {
    let p: f64 = value.parse().map_err(|_| FaultSpecProblem::NotANumber)?;
    if !p.is_finite() {
        return Err(FaultSpecProblem::NotANumber);
    }
    Probability::new(p).ok_or(FaultSpecProblem::ProbabilityOutOfRange)
}

/// Long input is clipped so an error never echoes a whole request body.
fn clip(item: &str) -> String {
    const MAX_CHARS: usize = 64;
    if item.chars().count() <= MAX_CHARS {
        item.to_owned()
    } else {
        let head: String = item.chars().take(MAX_CHARS).collect();
        format!("{head}…")
    }
}

impl fmt::Display for FaultSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut items: Vec<String> = Vec::new();
        if !self.drop_after_commit.is_never() {
            items.push(format!("drop_after_commit={}", self.drop_after_commit));
        }
        if self.drop_first > 0 {
            items.push(format!("drop_first={}", self.drop_first));
        }
        if let Some(delay) = self.delay.filter(|d| d.ms > 0 && !d.probability.is_never()) {
            if delay.probability == Probability::ALWAYS {
                items.push(format!("delay_ms={}", delay.ms));
            } else {
                items.push(format!("delay_ms={}@{}", delay.ms, delay.probability));
            }
        }
        if !self.overload.is_never() {
            items.push(format!("overload={}", self.overload));
        }
        if !self.overload_writes.is_never() {
            items.push(format!("overload_writes={}", self.overload_writes));
        }
        if !self.fail_lookups.is_never() {
            items.push(format!("fail_lookups={}", self.fail_lookups));
        }
        if !self.bare_503_after_commit.is_never() {
            items.push(format!(
                "bare_503_after_commit={}",
                self.bare_503_after_commit
            ));
        }
        if !self.redirect_after_commit.is_never() {
            items.push(format!(
                "redirect_after_commit={}",
                self.redirect_after_commit
            ));
        }
        if !self.wrong_record.is_never() {
            items.push(format!("wrong_record={}", self.wrong_record));
        }
        if !self.wrong_lookup.is_never() {
            items.push(format!("wrong_lookup={}", self.wrong_lookup));
        }
        if self.retry_after_secs != Self::DEFAULT_RETRY_AFTER_SECS {
            items.push(format!("retry_after_secs={}", self.retry_after_secs));
        }
        if !self.refuse.is_never() {
            items.push(format!("refuse={}", self.refuse));
        }
        if self.redeliver > 1 {
            items.push(format!("redeliver={}", self.redeliver));
        }
        if let Some(secs) = self.retention_secs {
            items.push(format!("retention_secs={secs}"));
        }
        if self.ignore_keys {
            items.push("ignore_keys=true".to_owned());
        }
        if items.is_empty() {
            f.write_str("none")
        } else {
            f.write_str(&items.join(","))
        }
    }
}

#[cfg(test)]
#[path = "faults_tests.rs"]
mod tests;
