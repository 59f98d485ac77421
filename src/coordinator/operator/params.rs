//! Query strings of the operator API. Every route names the parameters it accepts; an
//! unknown parameter, a repeated single-valued one, an unknown vocabulary value, a number
//! that is not one or out of range is collected, and all are answered together as one 400
//! whose `fields` name each parameter and what was wrong with it.
//!
//! Multi-valued filters are comma-separated (`tenant=a,b`); repeating the parameter adds
//! values too (`tenant=a&tenant=b`).

use std::collections::BTreeMap;
use std::fmt::Display;
use std::str::FromStr;

use axum::extract::Query;
use axum::extract::rejection::QueryRejection;

use crate::coordinator::auth::Principal;
use crate::coordinator::error::ApiError;
use crate::domain::{ConsequenceTier, IntentState, Locale, Tenant};
use crate::store::IntentFilter;
use crate::wire::FilterParam;

/// The filters shared by the intent list and the metrics.
pub const FILTER_PARAMS: &[&str] = &FilterParam::NAMES;

/// The longest single filter value, and the most values one filter may list.
const MAX_VALUE_CHARS: usize = 100;
const MAX_VALUES: usize = 100;
/// The longest search text.
const MAX_Q_CHARS: usize = 200;

/// The raw pairs of a query string, as axum decodes them.
pub type RawQuery = Result<Query<Vec<(String, String)>>, QueryRejection>;

/// A query string being read.
pub struct Params {
    values: BTreeMap<String, Vec<String>>,
    errors: BTreeMap<String, String>,
}

fn clip(s: &str) -> String {
    let mut out: String = s.chars().take(60).collect();
    if s.chars().count() > 60 {
        out.push('…');
    }
    out
}

impl Params {
    /// Take the pairs of `raw`, refusing any name not in one of `accepted`.
    pub fn new(raw: RawQuery, accepted: &[&[&str]]) -> Result<Params, ApiError> {
        let Query(pairs) =
            raw.map_err(|e| ApiError::bad_request(format!("the query string is not valid: {e}")))?;
        let mut params = Params {
            values: BTreeMap::new(),
            errors: BTreeMap::new(),
        };
        for (name, value) in pairs {
            if accepted.iter().any(|set| set.contains(&name.as_str())) {
                params.values.entry(name).or_default().push(value);
            } else {
                let known: Vec<&str> = accepted
                    .iter()
                    .flat_map(|set| set.iter().copied())
                    .collect();
                let message = if known.is_empty() {
                    "unknown parameter; this route takes none".to_string()
                } else {
                    format!("unknown parameter; accepted: {}", known.join(", "))
                };
                params.errors.insert(clip(&name), message);
            }
        }
        Ok(params)
    }

    /// Record a problem with parameter `name`.
    pub fn fail(&mut self, name: &str, message: impl Into<String>) {
        self.errors
            .entry(name.to_string())
            .or_insert_with(|| message.into());
    }

    /// A single-valued parameter, trimmed; empty counts as absent.
    pub fn text(&mut self, name: &str) -> Option<String> {
        let values = self.values.remove(name)?;
        if values.len() > 1 {
            self.fail(name, "given more than once");
            return None;
        }
        let value = values.into_iter().next()?.trim().to_string();
        (!value.is_empty()).then_some(value)
    }

    /// A multi-valued parameter: every comma-separated, trimmed, non-empty value.
    pub fn list(&mut self, name: &str) -> Vec<String> {
        let raw = self.values.remove(name).unwrap_or_default();
        let out: Vec<String> = raw
            .iter()
            .flat_map(|v| v.split(','))
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_string)
            .collect();
        if out.len() > MAX_VALUES {
            self.fail(
                name,
                format!("lists {} values; the limit is {MAX_VALUES}", out.len()),
            );
            return Vec::new();
        }
        if let Some(long) = out.iter().find(|v| v.chars().count() > MAX_VALUE_CHARS) {
            self.fail(
                name,
                format!(
                    "`{}` is longer than {MAX_VALUE_CHARS} characters",
                    clip(long)
                ),
            );
            return Vec::new();
        }
        out
    }

    /// A multi-valued parameter whose values are parsed, each error naming the value.
    pub fn parsed_list<T>(&mut self, name: &str) -> Vec<T>
    where
        T: FromStr,
        T::Err: Display,
    {
        let mut out = Vec::new();
        for value in self.list(name) {
            match value.parse::<T>() {
                Ok(v) => out.push(v),
                Err(e) => {
                    self.fail(name, e.to_string());
                    return Vec::new();
                }
            }
        }
        out
    }

    /// A single number within `min..=max`.
    pub fn number<T>(&mut self, name: &str, min: T, max: T) -> Option<T>
    where
        T: FromStr + PartialOrd + Display + Copy,
    {
        let raw = self.text(name)?;
        match raw.parse::<T>() {
            Ok(v) if v >= min && v <= max => Some(v),
            Ok(_) => {
                self.fail(name, format!("must be between {min} and {max}"));
                None
            }
            Err(_) => {
                self.fail(name, format!("`{}` is not a whole number", clip(&raw)));
                None
            }
        }
    }

    /// `true` or `false`.
    pub fn boolean(&mut self, name: &str) -> Option<bool> {
        match self.text(name)?.as_str() {
            "true" => Some(true),
            "false" => Some(false),
            other => {
                let message = format!("`{}` is not `true` or `false`", clip(other));
                self.fail(name, message);
                None
            }
        }
    }

    /// The intent filters, with the caller's tenant scope always applied on top.
    pub fn filter(&mut self, principal: &Principal) -> IntentFilter {
        use FilterParam as F;
        let tenants: Vec<Tenant> = self.parsed_list(F::Tenant.name());
        let q = self.text(F::Q.name());
        if q.as_ref().is_some_and(|q| q.chars().count() > MAX_Q_CHARS) {
            self.fail(
                F::Q.name(),
                format!("is longer than {MAX_Q_CHARS} characters"),
            );
        }
        let since_ms = self.number(F::Since.name(), 0, u64::MAX);
        let until_ms = self.number(F::Until.name(), 0, u64::MAX);
        if let (Some(since), Some(until)) = (since_ms, until_ms)
            && since > until
        {
            self.fail(F::Until.name(), "must not be before `since`");
        }
        IntentFilter {
            tenants: tenants.iter().map(|t| t.as_str().to_string()).collect(),
            providers: self.list(F::Provider.name()),
            states: self.parsed_list::<IntentState>(F::State.name()),
            operations: self.list(F::Operation.name()),
            tools: self.list(F::Tool.name()),
            releases: self.list(F::Release.name()),
            locales: self.parsed_list::<Locale>(F::Locale.name()),
            tiers: self.parsed_list::<ConsequenceTier>(F::Tier.name()),
            paused: self.boolean(F::Paused.name()),
            since_ms,
            until_ms,
            min_attempts: self.number(F::MinAttempts.name(), 0, u32::MAX),
            q: q.filter(|q| q.chars().count() <= MAX_Q_CHARS),
            workflows: Vec::new(),
            allowed_tenants: principal.tenants.clone(),
        }
    }

    /// 400 naming every bad parameter, or nothing.
    pub fn finish(self) -> Result<(), ApiError> {
        if self.errors.is_empty() {
            Ok(())
        } else {
            Err(ApiError::fields(self.errors))
        }
    }
}
