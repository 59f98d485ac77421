//! The intents table's filters, sort and saved views: what the operator chose, as the query
//! the coordinator understands, and as removable chips.

use serde::{Deserialize, Serialize};

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
    pub field: &'static str,
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

    /// The query string of `GET /v1/intents` and the metric endpoints.
    pub fn query(&self) -> Vec<(String, String)> {
        let mut q = Vec::new();
        let mut list = |name: &str, values: &[String]| {
            if !values.is_empty() {
                q.push((name.to_string(), values.join(",")));
            }
        };
        list("tenant", &self.tenants);
        list("provider", &self.providers);
        list("state", &self.states);
        list("operation", &self.operations);
        list("tool", &self.tools);
        list("release", &self.releases);
        list("locale", &self.locales);
        list("tier", &self.tiers);
        if let Some(p) = self.paused {
            q.push(("paused".into(), p.to_string()));
        }
        if let Some(v) = self.since_ms {
            q.push(("since".into(), v.to_string()));
        }
        if let Some(v) = self.until_ms {
            q.push(("until".into(), v.to_string()));
        }
        if let Some(v) = self.min_attempts {
            q.push(("min_attempts".into(), v.to_string()));
        }
        if !self.q.trim().is_empty() {
            q.push(("q".into(), self.q.trim().to_string()));
        }
        q
    }

    /// The filters as chips, in a stable order.
    pub fn chips(&self) -> Vec<Chip> {
        let mut chips = Vec::new();
        let lists: [(&'static str, &Vec<String>); 8] = [
            ("tenant", &self.tenants),
            ("provider", &self.providers),
            ("state", &self.states),
            ("operation", &self.operations),
            ("tool", &self.tools),
            ("release", &self.releases),
            ("locale", &self.locales),
            ("tier", &self.tiers),
        ];
        for (field, values) in lists {
            chips.extend(values.iter().map(|v| Chip {
                field,
                value: v.clone(),
            }));
        }
        if let Some(p) = self.paused {
            chips.push(Chip {
                field: "paused",
                value: p.to_string(),
            });
        }
        if let Some(v) = self.min_attempts {
            chips.push(Chip {
                field: "min_attempts",
                value: v.to_string(),
            });
        }
        if let Some(v) = self.since_ms {
            chips.push(Chip {
                field: "since",
                value: v.to_string(),
            });
        }
        if let Some(v) = self.until_ms {
            chips.push(Chip {
                field: "until",
                value: v.to_string(),
            });
        }
        if !self.q.trim().is_empty() {
            chips.push(Chip {
                field: "q",
                value: self.q.trim().to_string(),
            });
        }
        chips
    }

    /// Remove what one chip stands for.
    pub fn remove(&mut self, chip: &Chip) {
        let drop_value = |list: &mut Vec<String>| list.retain(|v| v != &chip.value);
        match chip.field {
            "tenant" => drop_value(&mut self.tenants),
            "provider" => drop_value(&mut self.providers),
            "state" => drop_value(&mut self.states),
            "operation" => drop_value(&mut self.operations),
            "tool" => drop_value(&mut self.tools),
            "release" => drop_value(&mut self.releases),
            "locale" => drop_value(&mut self.locales),
            "tier" => drop_value(&mut self.tiers),
            "paused" => self.paused = None,
            "min_attempts" => self.min_attempts = None,
            "since" => self.since_ms = None,
            "until" => self.until_ms = None,
            "q" => self.q.clear(),
            _ => {}
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
