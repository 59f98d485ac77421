//! The filters of `GET /v1/intents` and the metric endpoints, named once for both ends:
//! [`FilterParam`] is each parameter's name, which the coordinator reads and the console
//! writes, and [`FilterQuery`] is a filter as a client sends it.
//!
//! List filters are comma-separated (`tenant=a,b`); times are unix milliseconds.

/// One filter parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FilterParam {
    Tenant,
    Provider,
    State,
    Operation,
    Tool,
    Release,
    Locale,
    Tier,
    Paused,
    Since,
    Until,
    MinAttempts,
    Q,
}

impl FilterParam {
    /// Every filter, in the order a query lists them.
    pub const ALL: [FilterParam; 13] = [
        FilterParam::Tenant,
        FilterParam::Provider,
        FilterParam::State,
        FilterParam::Operation,
        FilterParam::Tool,
        FilterParam::Release,
        FilterParam::Locale,
        FilterParam::Tier,
        FilterParam::Paused,
        FilterParam::Since,
        FilterParam::Until,
        FilterParam::MinAttempts,
        FilterParam::Q,
    ];

    /// Every filter's name, in the order of [`FilterParam::ALL`].
    pub const NAMES: [&'static str; 13] = {
        let mut names = [""; 13];
        let mut i = 0;
        while i < Self::ALL.len() {
            names[i] = Self::ALL[i].name();
            i += 1;
        }
        names
    };

    /// The parameter's name in the query string.
    pub const fn name(self) -> &'static str {
        match self {
            FilterParam::Tenant => "tenant",
            FilterParam::Provider => "provider",
            FilterParam::State => "state",
            FilterParam::Operation => "operation",
            FilterParam::Tool => "tool",
            FilterParam::Release => "release",
            FilterParam::Locale => "locale",
            FilterParam::Tier => "tier",
            FilterParam::Paused => "paused",
            FilterParam::Since => "since",
            FilterParam::Until => "until",
            FilterParam::MinAttempts => "min_attempts",
            FilterParam::Q => "q",
        }
    }
}

/// A filter as a client sends it. Empty lists and `None` match everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FilterQuery {
    pub tenants: Vec<String>,
    pub providers: Vec<String>,
    /// State names (`indeterminate`, ...).
    pub states: Vec<String>,
    pub operations: Vec<String>,
    pub tools: Vec<String>,
    pub releases: Vec<String>,
    /// Locale tags (`fa-IR`, ...).
    pub locales: Vec<String>,
    /// Consequence tiers (`write`, ...).
    pub tiers: Vec<String>,
    pub paused: Option<bool>,
    pub since_ms: Option<u64>,
    pub until_ms: Option<u64>,
    pub min_attempts: Option<u32>,
    /// The search text; sent when not blank.
    pub q: Option<String>,
}

impl FilterQuery {
    /// The query string's pairs, in the order of [`FilterParam::ALL`]; filters that match
    /// everything are left out.
    pub fn pairs(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let mut list = |param: FilterParam, values: &[String]| {
            if !values.is_empty() {
                out.push((param.name().to_string(), values.join(",")));
            }
        };
        list(FilterParam::Tenant, &self.tenants);
        list(FilterParam::Provider, &self.providers);
        list(FilterParam::State, &self.states);
        list(FilterParam::Operation, &self.operations);
        list(FilterParam::Tool, &self.tools);
        list(FilterParam::Release, &self.releases);
        list(FilterParam::Locale, &self.locales);
        list(FilterParam::Tier, &self.tiers);
        let mut value = |param: FilterParam, value: Option<String>| {
            if let Some(v) = value {
                out.push((param.name().to_string(), v));
            }
        };
        value(FilterParam::Paused, self.paused.map(|p| p.to_string()));
        value(FilterParam::Since, self.since_ms.map(|v| v.to_string()));
        value(FilterParam::Until, self.until_ms.map(|v| v.to_string()));
        value(
            FilterParam::MinAttempts,
            self.min_attempts.map(|v| v.to_string()),
        );
        value(
            FilterParam::Q,
            self.q.clone().filter(|q| !q.trim().is_empty()),
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_lists_only_the_filters_that_narrow_in_a_fixed_order() {
        let query = FilterQuery {
            tenants: vec!["acme".into(), "globex".into()],
            min_attempts: Some(3),
            q: Some(" ".into()),
            paused: Some(false),
            ..FilterQuery::default()
        };
        assert_eq!(
            query.pairs(),
            vec![
                ("tenant".to_string(), "acme,globex".to_string()),
                ("paused".to_string(), "false".to_string()),
                ("min_attempts".to_string(), "3".to_string()),
            ]
        );
    }

    #[test]
    fn every_filter_has_its_own_name() {
        let mut names = FilterParam::NAMES.to_vec();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), FilterParam::ALL.len());
    }
}
