//! The intents table's filters, sort and saved views: what the operator chose, as the query
//! the coordinator understands, and as removable chips.

use serde::{Deserialize, Serialize};

use crate::wire::{FilterParam, FilterQuery};

/// Every filter of the intents table. Empty lists and `None` match everything.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Filters {
    pub tenants: Vec<String>,
    pub providers: Vec<String>,
    pub states: Vec<String>,
    pub operations: Vec<String>,
    pub tools: Vec<String>,
    pub releases: Vec<String>,
    pub locales: Vec<String>,
    pub tiers: Vec<String>,
    pub paused: Option<bool>,
    pub since_ms: Option<u64>,
    pub until_ms: Option<u64>,
    pub min_attempts: Option<u32>,
    pub q: String,
    /// `created`, `attempts`, `deadline`, `updated` or `indeterminate_since`, `-` for descending.
    pub sort: String,
}

/// One removable chip: which filter, and the value it shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chip {
    pub field: FilterParam,
    pub value: String,
}

/// A named set of filters the operator keeps.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedView {
    pub name: String,
    pub filters: Filters,
}

impl Filters {
    pub fn sort_or_default(&self) -> &str {
        if self.sort.is_empty() {
            "-created"
        } else {
            &self.sort
        }
    }

    /// The filters as `GET /v1/intents` and the metric endpoints take them.
    pub fn filter_query(&self) -> FilterQuery {
        let q = self.q.trim();
        FilterQuery {
            tenants: self.tenants.clone(),
            providers: self.providers.clone(),
            states: self.states.clone(),
            operations: self.operations.clone(),
            tools: self.tools.clone(),
            releases: self.releases.clone(),
            locales: self.locales.clone(),
            tiers: self.tiers.clone(),
            paused: self.paused,
            since_ms: self.since_ms,
            until_ms: self.until_ms,
            min_attempts: self.min_attempts,
            q: (!q.is_empty()).then(|| q.to_string()),
        }
    }

    /// The query string of `GET /v1/intents` and the metric endpoints.
    pub fn query(&self) -> Vec<(String, String)> {
        self.filter_query().pairs()
    }

    /// The filters as chips, in a stable order.
    pub fn chips(&self) -> Vec<Chip> {
        let mut chips = Vec::new();
        let lists: [(FilterParam, &Vec<String>); 8] = [
            (FilterParam::Tenant, &self.tenants),
            (FilterParam::Provider, &self.providers),
            (FilterParam::State, &self.states),
            (FilterParam::Operation, &self.operations),
            (FilterParam::Tool, &self.tools),
            (FilterParam::Release, &self.releases),
            (FilterParam::Locale, &self.locales),
            (FilterParam::Tier, &self.tiers),
        ];
        for (field, values) in lists {
            chips.extend(values.iter().map(|v| Chip {
                field,
                value: v.clone(),
            }));
        }
        if let Some(p) = self.paused {
            chips.push(Chip {
                field: FilterParam::Paused,
                value: p.to_string(),
            });
        }
        if let Some(v) = self.min_attempts {
            chips.push(Chip {
                field: FilterParam::MinAttempts,
                value: v.to_string(),
            });
        }
        if let Some(v) = self.since_ms {
            chips.push(Chip {
                field: FilterParam::Since,
                value: v.to_string(),
            });
        }
        if let Some(v) = self.until_ms {
            chips.push(Chip {
                field: FilterParam::Until,
                value: v.to_string(),
            });
        }
        if !self.q.trim().is_empty() {
            chips.push(Chip {
                field: FilterParam::Q,
                value: self.q.trim().to_string(),
            });
        }
        chips
    }

    /// Remove what one chip stands for.
    pub fn remove(&mut self, chip: &Chip) {
        let drop_value = |list: &mut Vec<String>| list.retain(|v| v != &chip.value);
        match chip.field {
            FilterParam::Tenant => drop_value(&mut self.tenants),
            FilterParam::Provider => drop_value(&mut self.providers),
            FilterParam::State => drop_value(&mut self.states),
            FilterParam::Operation => drop_value(&mut self.operations),
            FilterParam::Tool => drop_value(&mut self.tools),
            FilterParam::Release => drop_value(&mut self.releases),
            FilterParam::Locale => drop_value(&mut self.locales),
            FilterParam::Tier => drop_value(&mut self.tiers),
            FilterParam::Paused => self.paused = None,
            FilterParam::MinAttempts => self.min_attempts = None,
            FilterParam::Since => self.since_ms = None,
            FilterParam::Until => self.until_ms = None,
            FilterParam::Q => self.q.clear(),
        }
    }

    /// Add `value` to a list filter, or take it out when already there.
    pub fn toggle(list: &mut Vec<String>, value: &str) {
        if let Some(i) = list.iter().position(|v| v == value) {
            list.remove(i);
        } else {
            list.push(value.to_string());
        }
    }
}

/// The saved views every console starts with.
pub fn default_views() -> Vec<SavedView> {
    vec![
        SavedView {
            name: "indeterminate, oldest first".into(),
            filters: Filters {
                states: vec!["indeterminate".into()],
                sort: "indeterminate_since".into(),
                ..Filters::default()
            },
        },
        SavedView {
            name: "amplification >= 3".into(),
            filters: Filters {
                min_attempts: Some(3),
                sort: "-attempts".into(),
                ..Filters::default()
            },
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chips_remove_exactly_their_filter() {
        let mut f = Filters {
            tenants: vec!["acme".into(), "globex".into()],
            min_attempts: Some(3),
            ..Filters::default()
        };
        let chips = f.chips();
        assert_eq!(chips.len(), 3);
        f.remove(&chips[0]);
        assert_eq!(f.tenants, vec!["globex".to_string()]);
        assert_eq!(
            f.query(),
            vec![
                ("tenant".into(), "globex".into()),
                ("min_attempts".into(), "3".into())
            ]
        );
    }
}
