//! Typed, prefixed identifiers and the action key.
//!
//! Every id the coordinator makes is a newtype with a fixed prefix (`int_`, `att_`, `rcp_`) followed by
//! 26 characters of lowercase Crockford base32: 48 bits of creation time in milliseconds
//! and 80 bits of entropy, so ids sort by creation time. Generation takes the time and the
//! entropy as arguments, which keeps this module free of clocks and random sources. Command
//! ids are the client's: opaque, checked only for their alphabet and length.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Why a string is not a valid id, tenant or action key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    #[error("expected an id starting with `{expected}`, got `{got}`")]
    WrongPrefix { expected: &'static str, got: String },
    #[error(
        "`{got}` is not a valid id: after the prefix come 26 characters of 0-9 and a-z (no i, l, o, u)"
    )]
    Malformed { got: String },
    #[error(
        "`{got}` is not a valid tenant: use 1 to 40 characters of a-z, 0-9 and `-`, starting with a letter or digit"
    )]
    BadTenant { got: String },
    #[error("`{got}` is not a valid action key: expected `<op-prefix>:<tenant>:<intent_id>`")]
    BadActionKey { got: String },
    #[error(
        "`{got}` is not a valid command id: use 1 to 128 characters of A-Za-z0-9 and `.` `_` `:` `-`"
    )]
    BadCommandId { got: String },
}

const CROCKFORD: &[u8; 32] = b"0123456789abcdefghjkmnpqrstvwxyz";
const BODY_LEN: usize = 26;

/// `prefix` followed by the body for `at_ms` and `entropy`, in one allocation.
fn encode(prefix: &str, at_ms: u64, entropy: u128) -> String {
    // 128 bits: 48 bits of time, then 80 bits of entropy.
    let value: u128 =
        ((u128::from(at_ms) & 0xFFFF_FFFF_FFFF) << 80) | (entropy & ((1u128 << 80) - 1));
    let mut out = String::with_capacity(prefix.len() + BODY_LEN);
    out.push_str(prefix);
    for i in 0..BODY_LEN {
        // 26 * 5 = 130 bits; the first character carries only the top 3 bits.
        let shift = 5 * (BODY_LEN - 1 - i);
        let digit = if shift >= 128 {
            0
        } else {
            (value >> shift) & 0x1F
        };
        out.push(char::from(CROCKFORD[digit as usize]));
    }
    out
}

/// Which bytes are digits of [`CROCKFORD`]: looked up, not searched for (every intent read
/// from the store parses its ids).
const IS_DIGIT: [bool; 256] = {
    let mut table = [false; 256];
    let mut i = 0;
    while i < CROCKFORD.len() {
        table[CROCKFORD[i] as usize] = true;
        i += 1;
    }
    table
};

fn valid_body(body: &str) -> bool {
    body.len() == BODY_LEN
        && body.bytes().all(|b| IS_DIGIT[usize::from(b)])
        && body.as_bytes()[0] <= b'7'
}

fn decode_time_ms(body: &str) -> u64 {
    let mut value: u128 = 0;
    for b in body.bytes() {
        let digit = CROCKFORD.iter().position(|&c| c == b).unwrap_or(0) as u128;
        value = (value << 5) | digit;
    }
    (value >> 80) as u64
}

/// An id compares equal to the text it is written as.
macro_rules! compares_as_text {
    ($name:ident) => {
        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }

        impl PartialEq<String> for $name {
            fn eq(&self, other: &String) -> bool {
                &self.0 == other
            }
        }

        impl PartialEq<$name> for String {
            fn eq(&self, other: &$name) -> bool {
                self == &other.0
            }
        }
    };
}

macro_rules! prefixed_id {
    ($(#[$doc:meta])* $name:ident, $prefix:literal) => {
        $(#[$doc])*
        #[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(String);

        impl $name {
            pub const PREFIX: &'static str = $prefix;

            /// A new id created at `at_ms` (unix milliseconds) with the given entropy.
            pub fn generate(at_ms: u64, entropy: u128) -> Self {
                Self(encode($prefix, at_ms, entropy))
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// The creation time encoded in the id, in unix milliseconds.
            pub fn created_at_ms(&self) -> u64 {
                decode_time_ms(&self.0[$prefix.len()..])
            }
        }

        impl FromStr for $name {
            type Err = IdError;
            fn from_str(s: &str) -> Result<Self, IdError> {
                let trimmed = s.trim();
                let Some(body) = trimmed.strip_prefix($prefix) else {
                    return Err(IdError::WrongPrefix { expected: $prefix, got: clip(trimmed) });
                };
                // One allocation: the prefix and the body, lowercased where it lies.
                let mut id = String::with_capacity(trimmed.len());
                id.push_str($prefix);
                id.push_str(body);
                id[$prefix.len()..].make_ascii_lowercase();
                if !valid_body(&id[$prefix.len()..]) {
                    return Err(IdError::Malformed { got: clip(trimmed) });
                }
                Ok(Self(id))
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&self.0)
            }
        }

        compares_as_text!($name);

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let raw = String::deserialize(d)?;
                raw.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}

prefixed_id!(
    /// One user- or policy-authorised outcome.
    IntentId, "int_"
);
prefixed_id!(
    /// One execution try inside an intent.
    AttemptId, "att_"
);
prefixed_id!(
    /// The authoritative committed result, as the coordinator recorded it.
    ReceiptId, "rcp_"
);

/// An operator command's id: made by the client once, when the operator confirms, and sent
/// again on every retry of that command. Any opaque 1 to 128 characters of
/// `[A-Za-z0-9._:-]` (UUIDs, ULIDs and the console's own `cmd_` ids alike), taken exactly as
/// written.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CommandId(String);

impl CommandId {
    pub const MAX_LEN: usize = 128;

    /// A new id in the console's form, `cmd_` and 26 characters of time and entropy.
    pub fn generate(at_ms: u64, entropy: u128) -> Self {
        Self(encode("cmd_", at_ms, entropy))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromStr for CommandId {
    type Err = IdError;
    fn from_str(s: &str) -> Result<Self, IdError> {
        let ok = (1..=Self::MAX_LEN).contains(&s.len())
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-'));
        if ok {
            Ok(Self(s.to_string()))
        } else {
            Err(IdError::BadCommandId { got: clip(s) })
        }
    }
}

impl fmt::Display for CommandId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for CommandId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for CommandId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for CommandId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = String::deserialize(d)?;
        raw.parse().map_err(serde::de::Error::custom)
    }
}

/// Long user input in error messages is clipped so an error never echoes a whole body.
fn clip(s: &str) -> String {
    const MAX: usize = 80;
    if s.chars().count() <= MAX {
        s.to_string()
    } else {
        let mut out: String = s.chars().take(MAX).collect();
        out.push('…');
        out
    }
}

compares_as_text!(CommandId);
compares_as_text!(Tenant);
compares_as_text!(ActionKey);

/// A tenant name: 1..=40 characters of `a-z`, `0-9` and `-`, not starting with `-`.
/// The restriction keeps tenants safe inside action keys and URLs.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct Tenant(String);

impl Tenant {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromStr for Tenant {
    type Err = IdError;
    fn from_str(s: &str) -> Result<Self, IdError> {
        let ok = (1..=40).contains(&s.len())
            && !s.starts_with('-')
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        if ok {
            Ok(Self(s.to_string()))
        } else {
            Err(IdError::BadTenant { got: clip(s) })
        }
    }
}

impl<'de> Deserialize<'de> for Tenant {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

impl fmt::Display for Tenant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for Tenant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Tenant({})", self.0)
    }
}

/// The stable idempotency key presented to a mutating downstream:
/// `<op-prefix>:<tenant>:<intent_id>`. It is derived only from the operation, the tenant and
/// the intent id, so it never carries personal or secret data.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct ActionKey(String);

impl ActionKey {
    pub fn new(operation: &str, tenant: &Tenant, intent: &IntentId) -> Self {
        Self(format!("{}:{}:{}", op_prefix(operation), tenant, intent))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The intent this key belongs to.
    pub fn intent_id(&self) -> IntentId {
        // Construction and parsing guarantee three parts and a valid id in the last one.
        let last = self.0.rsplit(':').next().unwrap_or_default();
        IntentId(last.to_string())
    }

    pub fn tenant(&self) -> Tenant {
        let mut parts = self.0.split(':');
        parts.next();
        Tenant(parts.next().unwrap_or_default().to_string())
    }
}

/// The short prefix of an operation inside an action key: the known operations have fixed
/// prefixes; any other takes the letters of its first dotted segment, at most eight.
pub fn op_prefix(operation: &str) -> String {
    match operation {
        "purchase_order.create" => "po".to_string(),
        "inventory.reserve" => "inv".to_string(),
        "payment.initiate" => "pay".to_string(),
        other => {
            let prefix: String = other
                .split('.')
                .next()
                .unwrap_or_default()
                .chars()
                .filter(|c| c.is_ascii_alphanumeric())
                .map(|c| c.to_ascii_lowercase())
                .take(8)
                .collect();
            if prefix.is_empty() {
                "op".to_string()
            } else {
                prefix
            }
        }
    }
}

impl FromStr for ActionKey {
    type Err = IdError;
    fn from_str(s: &str) -> Result<Self, IdError> {
        let bad = || IdError::BadActionKey { got: clip(s) };
        let mut parts = s.trim().split(':');
        let (Some(prefix), Some(tenant), Some(intent), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(bad());
        };
        let prefix_ok = (1..=8).contains(&prefix.len())
            && prefix
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
        if !prefix_ok {
            return Err(bad());
        }
        let tenant: Tenant = tenant.parse().map_err(|_| bad())?;
        let intent: IntentId = intent.parse().map_err(|_| bad())?;
        Ok(Self([prefix, tenant.as_str(), intent.as_str()].join(":")))
    }
}

impl<'de> Deserialize<'de> for ActionKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

impl fmt::Display for ActionKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for ActionKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ActionKey({})", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_ids_round_trip_and_keep_their_time() {
        let id = IntentId::generate(1_764_489_600_000, 0xDEAD_BEEF);
        let parsed: IntentId = id.as_str().parse().expect("a generated id parses");
        assert_eq!(parsed, id);
        assert_eq!(parsed.created_at_ms(), 1_764_489_600_000);
    }

    #[test]
    fn ids_sort_by_creation_time() {
        let early = AttemptId::generate(1_000, u128::MAX);
        let late = AttemptId::generate(1_001, 0);
        assert!(early < late);
    }

    #[test]
    fn a_wrong_prefix_is_named_in_the_error() {
        let err = "att_01jd0000000000000000000000"
            .parse::<IntentId>()
            .expect_err("wrong prefix");
        assert!(err.to_string().contains("int_"), "{err}");
    }

    #[test]
    fn malformed_bodies_are_refused() {
        for bad in [
            "int_",
            "int_123",
            "int_01jd000000000000000000000u",
            "int_zzzzzzzzzzzzzzzzzzzzzzzzzz",
        ] {
            assert!(bad.parse::<IntentId>().is_err(), "{bad} should be refused");
        }
    }

    #[test]
    fn an_id_is_read_whatever_its_case_and_surrounding_space() {
        let id = IntentId::generate(1_764_489_600_000, 0xDEAD_BEEF);
        let shouted = format!(
            "  int_{}\n",
            id.as_str()["int_".len()..].to_ascii_uppercase()
        );
        assert_eq!(shouted.parse::<IntentId>().expect("parses"), id);
        // A body of the right length in bytes but not of the alphabet, multi-byte included.
        let body = &id.as_str()["int_".len()..];
        for bad in [
            format!("int_é{}", &body[2..]),
            format!("int_{}I", &body[1..]),
        ] {
            assert!(bad.parse::<IntentId>().is_err(), "{bad} should be refused");
        }
    }

    #[test]
    fn an_action_key_has_exactly_three_parts() {
        let intent = IntentId::generate(5, 7);
        for bad in [
            "po:acme".to_string(),
            format!("po:acme:{intent}:x"),
            format!(":po:acme:{intent}"),
        ] {
            assert!(bad.parse::<ActionKey>().is_err(), "{bad} should be refused");
        }
        let spaced = format!(" po:acme:{intent} ");
        assert_eq!(
            spaced.parse::<ActionKey>().expect("parses").as_str(),
            spaced.trim()
        );
    }

    #[test]
    fn action_key_is_operation_tenant_and_intent() {
        let tenant: Tenant = "acme".parse().expect("valid tenant");
        let intent = IntentId::generate(5, 7);
        let key = ActionKey::new("purchase_order.create", &tenant, &intent);
        assert_eq!(key.as_str(), format!("po:acme:{intent}"));
        assert_eq!(key.intent_id(), intent);
        assert_eq!(key.tenant(), tenant);
        assert_eq!(key.as_str().parse::<ActionKey>().expect("round trip"), key);
    }

    #[test]
    fn tenants_that_could_break_a_key_are_refused() {
        for bad in ["", "Acme", "a:b", "-x", "a b", &"x".repeat(41)] {
            assert!(bad.parse::<Tenant>().is_err(), "{bad:?} should be refused");
        }
    }
}
