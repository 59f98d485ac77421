//! Release parity: which releases may act for an operation. A release is one deployed
//! combination of what decides an agent's behaviour (model, prompt, tool schema, safety
//! policy, router); an operation with a registry accepts attempts, failovers among them,
//! only from the releases it lists. An operation without one accepts any release, as before
//! registries existed.

use std::fmt;

use serde::{Deserialize, Serialize};

/// One eligible release of one operation, and what it binds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Release {
    pub operation: String,
    pub release_id: String,
    pub model: String,
    pub prompt: String,
    pub tool_schema: String,
    pub safety_policy: String,
    pub router: String,
}

/// Every operation's eligible releases.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ReleaseRegistry {
    pub releases: Vec<Release>,
}

/// A release an operation's registry does not list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IneligibleRelease {
    pub operation: String,
    pub release_id: String,
    /// The releases that are eligible for the operation, in the registry's order.
    pub eligible: Vec<String>,
}

impl fmt::Display for IneligibleRelease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "release `{}` is not eligible for operation `{}`: its release registry lists {}",
            self.release_id,
            self.operation,
            self.eligible
                .iter()
                .map(|r| format!("`{r}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    }
}

impl ReleaseRegistry {
    /// Whether `operation` has a registry (and so refuses releases it does not list).
    pub fn governs(&self, operation: &str) -> bool {
        self.releases.iter().any(|r| r.operation == operation)
    }

    /// The listed release `release_id` of `operation`.
    pub fn release(&self, operation: &str, release_id: &str) -> Option<&Release> {
        self.releases
            .iter()
            .find(|r| r.operation == operation && r.release_id == release_id)
    }

    /// Whether `release_id` may act for `operation`: listed, or the operation has no
    /// registry.
    pub fn eligible(&self, operation: &str, release_id: &str) -> bool {
        !self.governs(operation) || self.release(operation, release_id).is_some()
    }

    /// [`ReleaseRegistry::eligible`], with the reason when not.
    pub fn check(&self, operation: &str, release_id: &str) -> Result<(), IneligibleRelease> {
        if self.eligible(operation, release_id) {
            return Ok(());
        }
        Err(IneligibleRelease {
            operation: operation.to_string(),
            release_id: release_id.to_string(),
            eligible: self
                .releases
                .iter()
                .filter(|r| r.operation == operation)
                .map(|r| r.release_id.clone())
                .collect(),
        })
    }

    /// What is wrong with the registry itself: an empty field, or a release listed twice
    /// for one operation.
    pub fn problem(&self) -> Option<String> {
        for (i, r) in self.releases.iter().enumerate() {
            for (field, value) in [
                ("operation", &r.operation),
                ("release_id", &r.release_id),
                ("model", &r.model),
                ("prompt", &r.prompt),
                ("tool_schema", &r.tool_schema),
                ("safety_policy", &r.safety_policy),
                ("router", &r.router),
            ] {
                if value.trim().is_empty() || value.trim() != value {
                    return Some(format!(
                        "releases[{i}]: {field} must be non-empty text without surrounding spaces"
                    ));
                }
            }
            if r.release_id.chars().count() > 100 {
                return Some(format!(
                    "releases[{i}]: release_id must be at most 100 characters"
                ));
            }
            if self.releases[..i]
                .iter()
                .any(|o| o.operation == r.operation && o.release_id == r.release_id)
            {
                return Some(format!(
                    "releases[{i}]: release `{}` of operation `{}` is listed twice",
                    r.release_id, r.operation
                ));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn release(operation: &str, release_id: &str) -> Release {
        Release {
            operation: operation.into(),
            release_id: release_id.into(),
            model: "m".into(),
            prompt: "p".into(),
            tool_schema: "t".into(),
            safety_policy: "s".into(),
            router: "r".into(),
        }
    }

    #[test]
    fn only_an_operation_with_a_registry_refuses_unlisted_releases() {
        let registry = ReleaseRegistry {
            releases: vec![
                release("quote.compare", "a@1"),
                release("quote.compare", "b@1"),
            ],
        };
        assert!(registry.eligible("quote.compare", "b@1"));
        assert!(registry.eligible("purchase_order.create", "anything"));
        let refused = registry
            .check("quote.compare", "c@9")
            .expect_err("not listed");
        assert_eq!(refused.eligible, vec!["a@1".to_string(), "b@1".to_string()]);
        assert!(refused.to_string().contains("`c@9`"), "{refused}");
        assert!(refused.to_string().contains("`quote.compare`"), "{refused}");
    }

    #[test]
    fn a_repeated_or_blank_release_is_a_problem() {
        let twice = ReleaseRegistry {
            releases: vec![release("q", "a"), release("q", "a")],
        };
        assert!(twice.problem().expect("a problem").contains("listed twice"));
        let blank = ReleaseRegistry {
            releases: vec![release("q", " ")],
        };
        assert!(blank.problem().expect("a problem").contains("release_id"));
        let fine = ReleaseRegistry {
            releases: vec![release("q", "a"), release("r", "a")],
        };
        assert_eq!(fine.problem(), None);
    }
}
