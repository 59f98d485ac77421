//! A tenant's approval policy: per operation, the largest amount an intent may carry (per
//! currency), the connectors it may be sent through, the budget cap of each consequence
//! tier and how long an approval lasts. A request outside it is refused with the rule that
//! refused it ([`PolicyRefusal`]), when the intent is created and again when it is
//! approved. The policy has a version; an approval names the version it was given under,
//! and a changed version lapses it (see the coordinator's start).
//!
//! Besides any policy, each consequence tier has a budget cap of its own
//! ([`tier_attempt_cap`]): how many attempts one intent of that tier may ask for at most.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::Value;

use super::vocab::ConsequenceTier;

/// The rule name of an operation a policy does not list and has no `"*"` rule for.
pub const ANY_OPERATION: &str = "*";
/// The currency key of a ceiling that applies whatever the currency (or with none).
pub const ANY_CURRENCY: &str = "*";

/// The most attempts one intent of `tier` may ask for, under any policy. Mutating work is
/// held tighter: every attempt of it may land downstream.
pub fn tier_attempt_cap(tier: ConsequenceTier) -> u32 {
    match tier {
        ConsequenceTier::Read | ConsequenceTier::Compute => 20,
        ConsequenceTier::Proposal | ConsequenceTier::Write => 10,
        ConsequenceTier::Financial => 5,
    }
}

/// One tenant's policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    pub tenant: String,
    pub version: String,
    /// By operation name; [`ANY_OPERATION`] for every operation not named.
    pub operations: BTreeMap<String, OperationRule>,
}

/// What a policy allows one operation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OperationRule {
    /// The largest amount by currency (canonical decimal text, as in the canonical
    /// arguments); [`ANY_CURRENCY`] for any currency. Empty: no ceiling.
    pub max_amount: BTreeMap<String, String>,
    /// The top-level argument holding the amount.
    pub amount_field: String,
    /// The top-level argument holding the currency.
    pub currency_field: String,
    /// The connectors the operation may be sent through; empty: any configured one.
    pub connectors: Vec<String>,
    /// The most attempts an intent may ask for, by tier (at most the tier's own cap).
    pub max_attempts: BTreeMap<ConsequenceTier, u32>,
    /// How long an approval lasts, in seconds; `None`: as long as the approver asks (or
    /// until the deadline).
    pub approval_secs: Option<u64>,
}

/// Why a policy refused a request: the rule, named as `policy acme v3:
/// purchase_order.create max_amount[IRR]`, and what the request carried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyRefusal {
    pub rule: String,
    pub message: String,
}

impl fmt::Display for PolicyRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.rule, self.message)
    }
}

/// What a policy judges of an intent.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    pub operation: &'a str,
    pub connector: &'a str,
    pub tier: ConsequenceTier,
    pub max_attempts: u32,
    /// The canonical arguments (numbers in canonical form).
    pub args: &'a Value,
}

impl Policy {
    /// The rule for `operation`, and the name it is listed under.
    pub fn rule(&self, operation: &str) -> Option<(&str, &OperationRule)> {
        self.operations
            .get_key_value(operation)
            .or_else(|| self.operations.get_key_value(ANY_OPERATION))
            .map(|(name, rule)| (name.as_str(), rule))
    }

    fn rule_name(&self, listed: &str, part: &str) -> String {
        format!("policy {} {}: {listed} {part}", self.tenant, self.version)
    }

    /// Whether the policy allows `req`.
    pub fn check(&self, req: &Request<'_>) -> Result<(), PolicyRefusal> {
        let Some((listed, rule)) = self.rule(req.operation) else {
            return Err(PolicyRefusal {
                rule: format!("policy {} {}: operations", self.tenant, self.version),
                message: format!(
                    "lists no rule for `{}` (and no `*` rule), so it is not allowed",
                    req.operation
                ),
            });
        };
        let refuse = |part: &str, message: String| PolicyRefusal {
            rule: self.rule_name(listed, part),
            message,
        };
        if !rule.connectors.is_empty() && !rule.connectors.iter().any(|c| c == req.connector) {
            return Err(refuse(
                "connectors",
                format!(
                    "connector `{}` is not among the allowed: {}",
                    req.connector,
                    rule.connectors.join(", ")
                ),
            ));
        }
        if let Some(&cap) = rule.max_attempts.get(&req.tier)
            && req.max_attempts > cap
        {
            return Err(refuse(
                &format!("max_attempts[{}]", req.tier),
                format!(
                    "max_attempts {} is above the cap {cap} for {} work",
                    req.max_attempts, req.tier
                ),
            ));
        }
        if rule.max_amount.is_empty() {
            return Ok(());
        }
        let currency = match req.args.get(&rule.currency_field) {
            Some(Value::String(c)) => c.trim().to_uppercase(),
            _ => String::new(),
        };
        let ceiling = rule
            .max_amount
            .get_key_value(currency.as_str())
            .or_else(|| rule.max_amount.get_key_value(ANY_CURRENCY));
        let Some((key, ceiling)) = ceiling else {
            let known: Vec<&str> = rule.max_amount.keys().map(String::as_str).collect();
            return Err(refuse(
                "max_amount",
                format!(
                    "has no ceiling for currency `{currency}` (args.{}); ceilings are set for {}",
                    rule.currency_field,
                    known.join(", ")
                ),
            ));
        };
        let part = format!("max_amount[{key}]");
        let amount = match req.args.get(&rule.amount_field) {
            Some(Value::Number(n)) => n.to_string(),
            Some(Value::String(s)) => s.clone(),
            _ => {
                return Err(refuse(
                    &part,
                    format!(
                        "the ceiling needs the amount in args.{}, which is missing",
                        rule.amount_field
                    ),
                ));
            }
        };
        match compare_decimal(&amount, ceiling) {
            Some(std::cmp::Ordering::Greater) => Err(refuse(
                &part,
                format!("amount {amount} is above the ceiling {ceiling}"),
            )),
            Some(_) => Ok(()),
            None => Err(refuse(
                &part,
                format!(
                    "args.{} = {amount} is not a plain decimal",
                    rule.amount_field
                ),
            )),
        }
    }

    /// How long an approval of `operation` lasts under this policy, in seconds.
    pub fn approval_secs(&self, operation: &str) -> Option<u64> {
        self.rule(operation).and_then(|(_, r)| r.approval_secs)
    }
}

/// Compare two plain decimals (`-?digits(.digits)?`, as canonical arguments write them)
/// without floating point; `None` when either is not one.
pub fn compare_decimal(a: &str, b: &str) -> Option<std::cmp::Ordering> {
    use std::cmp::Ordering;
    let (a_neg, a_int, a_frac) = split_decimal(a)?;
    let (b_neg, b_int, b_frac) = split_decimal(b)?;
    let zero = |int: &str, frac: &str| int == "0" && frac.is_empty();
    let a_neg = a_neg && !zero(a_int, a_frac);
    let b_neg = b_neg && !zero(b_int, b_frac);
    let magnitude = a_int
        .len()
        .cmp(&b_int.len())
        .then_with(|| a_int.cmp(b_int))
        .then_with(|| {
            let width = a_frac.len().max(b_frac.len());
            format!("{a_frac:0<width$}").cmp(&format!("{b_frac:0<width$}"))
        });
    Some(match (a_neg, b_neg) {
        (false, false) => magnitude,
        (true, true) => magnitude.reverse(),
        (true, false) => Ordering::Less,
        (false, true) => Ordering::Greater,
    })
}

/// Sign, integer digits without leading zeros, and fractional digits without trailing ones.
fn split_decimal(s: &str) -> Option<(bool, &str, &str)> {
    let (neg, digits) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s),
    };
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    let all_digits = |t: &str| t.bytes().all(|b| b.is_ascii_digit());
    if int.is_empty()
        || !all_digits(int)
        || !all_digits(frac)
        || (digits.contains('.') && frac.is_empty())
    {
        return None;
    }
    let int = int.trim_start_matches('0');
    let int = if int.is_empty() { "0" } else { int };
    Some((neg, int, frac.trim_end_matches('0')))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::cmp::Ordering;

    fn policy() -> Policy {
        let rule = OperationRule {
            max_amount: BTreeMap::from([
                ("IRR".to_string(), "50000000".to_string()),
                ("USD".to_string(), "5000.5".to_string()),
            ]),
            amount_field: "amount".into(),
            currency_field: "currency".into(),
            connectors: vec!["erp".into()],
            max_attempts: BTreeMap::from([(ConsequenceTier::Financial, 2)]),
            approval_secs: Some(3600),
        };
        Policy {
            tenant: "acme".into(),
            version: "v3".into(),
            operations: BTreeMap::from([("payment.initiate".to_string(), rule)]),
        }
    }

    fn payment<'a>(args: &'a Value, connector: &'a str, max_attempts: u32) -> Request<'a> {
        Request {
            operation: "payment.initiate",
            connector,
            tier: ConsequenceTier::Financial,
            max_attempts,
            args,
        }
    }

    #[test]
    fn decimals_compare_by_value_not_by_text() {
        assert_eq!(
            compare_decimal("50000001", "50000000"),
            Some(Ordering::Greater)
        );
        assert_eq!(compare_decimal("9", "10"), Some(Ordering::Less));
        assert_eq!(compare_decimal("5000.50", "5000.5"), Some(Ordering::Equal));
        assert_eq!(
            compare_decimal("5000.51", "5000.5"),
            Some(Ordering::Greater)
        );
        assert_eq!(compare_decimal("-3", "2"), Some(Ordering::Less));
        assert_eq!(compare_decimal("-3", "-2"), Some(Ordering::Less));
        assert_eq!(compare_decimal("-0", "0"), Some(Ordering::Equal));
        assert_eq!(compare_decimal("007", "7"), Some(Ordering::Equal));
        assert_eq!(compare_decimal("1e3", "7"), None);
        assert_eq!(compare_decimal("1.", "7"), None);
    }

    #[test]
    fn an_amount_above_its_currency_ceiling_is_refused_with_the_rule() {
        let p = policy();
        let ok = json!({"amount": 50000000, "currency": "IRR"});
        assert_eq!(p.check(&payment(&ok, "erp", 2)), Ok(()));
        let over = json!({"amount": 50000001, "currency": "IRR"});
        let refused = p.check(&payment(&over, "erp", 2)).expect_err("refused");
        assert_eq!(
            refused.rule,
            "policy acme v3: payment.initiate max_amount[IRR]"
        );
        assert!(refused.message.contains("50000001"), "{refused}");
        let dollars = json!({"amount": "5000.51", "currency": "usd"});
        assert!(p.check(&payment(&dollars, "erp", 1)).is_err());
    }

    #[test]
    fn a_currency_without_a_ceiling_and_a_missing_amount_are_refused() {
        let p = policy();
        let euros = json!({"amount": 1, "currency": "EUR"});
        let refused = p.check(&payment(&euros, "erp", 1)).expect_err("refused");
        assert_eq!(refused.rule, "policy acme v3: payment.initiate max_amount");
        let none = json!({"currency": "IRR"});
        let refused = p.check(&payment(&none, "erp", 1)).expect_err("refused");
        assert!(refused.message.contains("args.amount"), "{refused}");
    }

    #[test]
    fn connectors_budgets_and_unlisted_operations_are_policy() {
        let p = policy();
        let args = json!({"amount": 1, "currency": "IRR"});
        let refused = p
            .check(&payment(&args, "legacy-erp", 1))
            .expect_err("refused");
        assert_eq!(refused.rule, "policy acme v3: payment.initiate connectors");
        let refused = p.check(&payment(&args, "erp", 3)).expect_err("refused");
        assert_eq!(
            refused.rule,
            "policy acme v3: payment.initiate max_attempts[financial]"
        );
        let other = Request {
            operation: "purchase_order.create",
            ..payment(&args, "erp", 1)
        };
        let refused = p.check(&other).expect_err("refused");
        assert_eq!(refused.rule, "policy acme v3: operations");
        let mut open = p.clone();
        open.operations
            .insert(ANY_OPERATION.into(), OperationRule::default());
        assert_eq!(open.check(&other), Ok(()));
    }
}
