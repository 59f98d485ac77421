//! The `[[policies]]` of the configuration: each tenant's approval policy as the file
//! writes it, checked at load and turned into [`crate::domain::policy::Policy`].

use std::collections::BTreeMap;

use serde::Deserialize;

use super::ingest::MAX_APPROVAL_SECS;
use crate::domain::ConsequenceTier;
use crate::domain::policy::{
    ANY_CURRENCY, OperationRule, Policy, compare_decimal, tier_attempt_cap,
};

/// One tenant's policy as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyConfig {
    pub tenant: String,
    pub version: String,
    #[serde(default)]
    pub operations: BTreeMap<String, RuleConfig>,
}

/// One operation's rule as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleConfig {
    #[serde(default)]
    pub max_amount: BTreeMap<String, AmountConfig>,
    #[serde(default)]
    pub amount_field: Option<String>,
    #[serde(default)]
    pub currency_field: Option<String>,
    #[serde(default)]
    pub connectors: Vec<String>,
    #[serde(default)]
    pub max_attempts: BTreeMap<ConsequenceTier, u32>,
    #[serde(default)]
    pub approval_secs: Option<u64>,
}

/// A ceiling as written: a whole number, or a decimal as text (`"2500.50"`).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum AmountConfig {
    Whole(u64),
    Text(String),
}

/// Check every policy and compile them by tenant; `connector_known` says whether a
/// connector is configured. The message names the policy and the key at fault.
pub fn compile(
    policies: &[PolicyConfig],
    connector_known: &dyn Fn(&str) -> bool,
) -> Result<BTreeMap<String, Policy>, String> {
    let mut out = BTreeMap::new();
    for p in policies {
        let tenant: crate::domain::Tenant = p
            .tenant
            .parse()
            .map_err(|e| format!("policies: tenant `{}`: {e}", p.tenant))?;
        let at = format!("policy of tenant `{tenant}`");
        if out.contains_key(tenant.as_str()) {
            return Err(format!("{at} is given twice; a tenant has one policy"));
        }
        let version = p.version.trim();
        if version.is_empty()
            || version.chars().count() > 100
            || version.chars().any(char::is_control)
        {
            return Err(format!(
                "{at}: version must be 1 to 100 printable characters"
            ));
        }
        if p.operations.is_empty() {
            return Err(format!(
                "{at}: operations must name at least one operation (or \"*\" for every one)"
            ));
        }
        let mut operations = BTreeMap::new();
        for (name, rule) in &p.operations {
            let at = format!("{at}, operation `{name}`");
            operations.insert(name.clone(), compile_rule(rule, &at, connector_known)?);
        }
        out.insert(
            tenant.as_str().to_string(),
            Policy {
                tenant: tenant.as_str().to_string(),
                version: version.to_string(),
                operations,
            },
        );
    }
    Ok(out)
}

fn compile_rule(
    rule: &RuleConfig,
    at: &str,
    connector_known: &dyn Fn(&str) -> bool,
) -> Result<OperationRule, String> {
    let mut max_amount = BTreeMap::new();
    for (currency, amount) in &rule.max_amount {
        let text = match amount {
            AmountConfig::Whole(n) => n.to_string(),
            AmountConfig::Text(t) => t.trim().to_string(),
        };
        let plain =
            compare_decimal(&text, "0").is_some_and(|o| o.is_ge()) && !text.starts_with('-');
        if !plain {
            return Err(format!(
                "{at}: max_amount.{currency} must be a whole number or a decimal as text (\"2500.50\"), at least 0"
            ));
        }
        let currency = currency.trim().to_uppercase();
        let named = currency == ANY_CURRENCY
            || (!currency.is_empty()
                && currency.len() <= 12
                && currency.bytes().all(|b| b.is_ascii_alphanumeric()));
        if !named {
            return Err(format!(
                "{at}: max_amount key `{currency}` must be a currency code such as IRR, or \"*\""
            ));
        }
        max_amount.insert(currency, text);
    }
    if let Some(unknown) = rule.connectors.iter().find(|c| !connector_known(c)) {
        return Err(format!(
            "{at}: connectors names `{unknown}`, which is not configured"
        ));
    }
    for (tier, &cap) in &rule.max_attempts {
        let most = tier_attempt_cap(*tier);
        if cap == 0 || cap > most {
            return Err(format!(
                "{at}: max_attempts.{tier} must be between 1 and {most} (the cap of {tier} work)"
            ));
        }
    }
    if rule
        .approval_secs
        .is_some_and(|s| s == 0 || s > MAX_APPROVAL_SECS)
    {
        return Err(format!(
            "{at}: approval_secs must be between 1 and {MAX_APPROVAL_SECS}"
        ));
    }
    let field = |given: &Option<String>, default: &str, key: &str| match given {
        None => Ok(default.to_string()),
        Some(f) if !f.trim().is_empty() && f.len() <= 100 => Ok(f.trim().to_string()),
        Some(_) => Err(format!("{at}: {key} must name an argument")),
    };
    Ok(OperationRule {
        max_amount,
        amount_field: field(&rule.amount_field, "amount", "amount_field")?,
        currency_field: field(&rule.currency_field, "currency", "currency_field")?,
        connectors: rule.connectors.clone(),
        max_attempts: rule.max_attempts.clone(),
        approval_secs: rule.approval_secs,
    })
}

/// Lapse the approvals given under a policy version no longer in force, before the first
/// request is served: their intents begin no new attempt until approved again.
pub async fn at_start(state: &super::AppState) -> Result<(), crate::store::StoreError> {
    use crate::store::ops::*;
    let current: BTreeMap<String, String> = state
        .config
        .tenant_policies
        .iter()
        .map(|(tenant, p)| (tenant.clone(), p.version.clone()))
        .collect();
    let now = state.clock.now_ms();
    let lapsed = state
        .db
        .write(move |s| s.lapse_stale_approvals(&current, now))
        .await?;
    for (id, reason) in &lapsed {
        tracing::info!(intent = %id, %reason, "an approval lapsed with a policy change");
    }
    if !lapsed.is_empty() {
        tracing::warn!(
            intents = lapsed.len(),
            "approvals lapsed because a tenant's policy changed; those intents wait for a fresh approval"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<BTreeMap<String, Policy>, String> {
        #[derive(Deserialize)]
        struct File {
            policies: Vec<PolicyConfig>,
        }
        let file: File = toml::from_str(text).map_err(|e| e.to_string())?;
        compile(&file.policies, &|c| c == "erp")
    }

    #[test]
    fn a_policy_reads_as_the_example_writes_it() {
        let policies = parse(
            r#"
[[policies]]
tenant = "acme"
version = "2026-12"
[policies.operations."payment.initiate"]
max_amount = { IRR = 500000000, usd = "25000.50" }
connectors = ["erp"]
max_attempts = { financial = 3 }
approval_secs = 3600
[policies.operations."*"]
"#,
        )
        .expect("valid");
        let acme = &policies["acme"];
        assert_eq!(acme.version, "2026-12");
        let (_, rule) = acme.rule("payment.initiate").expect("listed");
        assert_eq!(rule.max_amount["USD"], "25000.50");
        assert_eq!(rule.max_attempts[&ConsequenceTier::Financial], 3);
        assert_eq!(acme.rule("inventory.check").map(|(n, _)| n), Some("*"));
    }

    #[test]
    fn each_mistake_is_named() {
        let base = "[[policies]]\ntenant = \"acme\"\nversion = \"v1\"\n[policies.operations.\"payment.initiate\"]\n";
        for (extra, says) in [
            ("connectors = [\"sap\"]", "`sap`, which is not configured"),
            (
                "max_attempts = { financial = 9 }",
                "max_attempts.financial must be between 1 and 5",
            ),
            (
                "max_amount = { IRR = \"1e9\" }",
                "max_amount.IRR must be a whole number",
            ),
            ("approval_secs = 0", "approval_secs must be between"),
            ("ceiling = 3", "unknown field `ceiling`"),
        ] {
            let err = parse(&format!("{base}{extra}\n")).expect_err(extra);
            assert!(err.contains(says), "{extra}: {err}");
        }
        let twice = format!("{base}\n{base}");
        assert!(parse(&twice).expect_err("twice").contains("given twice"));
        let empty = "[[policies]]\ntenant = \"acme\"\nversion = \"v1\"\n";
        assert!(
            parse(empty)
                .expect_err("empty")
                .contains("at least one operation")
        );
    }
}
