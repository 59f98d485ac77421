//! The coordinator's configuration file (TOML). The keys of the design's fixed block keep
//! exactly their meaning; the others have defaults and are documented in
//! [`EXAMPLE_CONFIG`], which `intentdesk coordinator --print-example-config` prints.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::policies::{PolicyConfig, compile as compile_policies};
use crate::domain::policy::Policy;
use crate::domain::{BareOverload, KeyContract, ReleaseRegistry, Role};
pub use crate::store::Durability;

/// A commented example configuration.
pub const EXAMPLE_CONFIG: &str = r#"# intentdesk coordinator configuration
listen = "127.0.0.1:7410"          # address the HTTP API listens on
# operator_listen = "127.0.0.1:7411" # optional: the same API on a port with a thread of its own,
                                   # for the console and operators in an agents' flood
database = "intentdesk.sqlite"     # SQLite file (created if missing; relative to this file), or
                                   # postgres://user:password@host:5432/dbname
# "power_loss" (default): an answered write survives a power loss (one sync per group commit).
# "process_crash": it survives a crash of the process only; faster on slow disks.
durability = "power_loss"

# How often the reconciler looks indeterminate intents up, and how many lookups one pass may do.
reconcile_interval_ms = 2000
reconcile_batch = 200
# How an indeterminate intent's automatic lookups are paced (each shown at its default). The
# n-th lookup is followed by a wait of first_delay_ms * 2^(n-1), at most max_delay_ms, drawn
# between half and all of it (and never shorter than a Retry-After the lookup was answered
# with). After `budget` automatic lookups the intent shows "lookups exhausted" and waits for
# an operator, whose reconcile command looks it up at once, whatever its pacing.
# [lookups]
# first_delay_ms = 2000
# max_delay_ms = 600000
# budget = 20
# per_connector_per_sec = 5     # automatic lookups one connector is sent per second at most
# How long a dispatcher holds a claimed outbox row before another may take it over. It must be
# at least twice the longest connector timeout plus a second, so a send always ends (or is
# not begun) inside its lease.
dispatch_lease_ms = 30000
# How many dispatches may be in flight at once.
dispatch_concurrency = 64
# Largest request body accepted, in bytes (larger bodies get 413).
max_body_bytes = 262144

# What a slow, stuck or greedy client may hold (each shown at its default).
[limits]
header_read_timeout_ms = 10000   # headers not in by then: the connection is closed
request_timeout_ms = 30000       # not answered by then: 503 + Retry-After (event streams excepted);
                                 # a write may still have been applied: retry with the same key
max_connections = 2048           # more: 503 + Retry-After, and the connection is closed
max_concurrent_requests = 1024   # in progress at once, all tokens: more get 503 + Retry-After
max_concurrent_per_token = 256   # in progress at once with one token: more get 429 + Retry-After
                                 # (a fleet of agents sharing one token shares this)
max_event_streams = 256          # GET /v1/events open at once, all tokens: one more gets 503
max_event_streams_per_token = 16 # ... with one token: one more gets 429
max_queued_writes = 512          # agents' writes waiting for the store at once: more get 503 +
                                 # Retry-After at once, nothing stored (the coordinator's own
                                 # writes and operator commands wait ahead and are never shed)
events_kept_hours = 24           # the change feed behind GET /v1/events keeps this much ...
events_kept_max = 2000000        # ... and at most this many events; a client resuming from
                                 # an older one is told to read everything again

# HTTPS (optional): the certificate chain and key this coordinator serves with, and CA
# certificates to trust beside the system's when calling connectors over https://.
# [tls]
# cert_file = "coordinator.crt"
# key_file = "coordinator.key"
# ca_file = "company-ca.pem"

# Bearer tokens are stored only as their SHA-256 (hex). Make one with:
#   printf %s "$TOKEN" | sha256sum
[[tokens]]
name = "ops-admin"
token_sha256 = "<hex sha256 of the bearer token>"
role = "admin"                 # agent | connector | viewer | supervisor | engineer | admin
tenants = ["*"]                # or a list of tenant names

# Whoever approves what the agents create has a token of its own: an intent is never approved
# by the token that created it, and never by an agent. Supervisors and admins may approve too.
# [[tokens]]
# name = "acme-approvals"
# token_sha256 = "<hex sha256 of the approver's token>"
# role = "approver"
# tenants = ["acme"]

# The token a downstream presents with its receipt webhooks (POST /v1/receipts/erp): a
# connector token names the connectors it speaks for, and may do nothing else.
[[tokens]]
name = "erp-webhooks"
token_sha256 = "<hex sha256 of the connector's token>"
role = "connector"
tenants = ["*"]
connectors = ["erp"]

[[connectors]]
name = "erp"
base_url = "http://127.0.0.1:7420"
supports_idempotency = true    # the downstream deduplicates creates by Idempotency-Key
key_retention_secs = 86400     # ... for this long after the first request
supports_lookup = true         # GET <resource>?external_ref=<action key> finds a record
timeout_ms = 2000
# An idle connection is let go after this long (0: a new connection, and its TLS handshake,
# for every call, inside timeout_ms). Keep it a second or more below the downstream's own
# keep-alive: a command sent on a connection just as the downstream closes it cannot be
# known to have been applied. 4000 suits downstreams that keep idle connections 5 s or more.
idle_connection_ms = 4000
# A 503 or 429 without Retry-After on a create is looked up before anything else, since a proxy
# may answer so after the request went through. Set true only if this downstream's overload
# answers always mean "not applied"; such a create is then retried like an explicit refusal.
overload_means_not_applied = false
# which downstream resource each operation creates
operations = { "purchase_order.create" = "purchase-orders", "inventory.reserve" = "inventory-reservations", "payment.initiate" = "payments" }

# Release parity (optional): the releases eligible to act for an operation, with what each
# binds. An operation with releases listed here refuses (422, naming the release and the
# operation, storing nothing) an intent, a reported attempt, a dispatch or a failover under a
# release it does not list, and its failover divergence counts eligible releases only. An
# operation with none listed accepts any release, as without this table.
# [[releases]]
# operation = "purchase_order.create"
# release_id = "procure-agent@2.4.0"
# model = "model-a-2026-09"
# prompt = "procure-v12"
# tool_schema = "erp-po-v3"
# safety_policy = "spend-guard-v5"
# router = "primary-then-backup-v2"

# A tenant's approval policy (optional). Without one, a tenant's intents are bounded only by
# the budget cap of their tier (read and compute 20 attempts, proposal and write 10, financial
# 5). With one, an operation the policy does not name (and no "*" rule) is refused, and a
# request outside its rule is refused with the rule's name, when it is created and again
# when it is approved.
# [[policies]]
# tenant = "acme"
# version = "2026-12"              # each approval records it; a changed version lapses older
#                                  # approvals when the coordinator starts: those intents begin
#                                  # no new attempt until approved again
# [policies.operations."payment.initiate"]
# max_amount = { IRR = 500000000, USD = "25000.50" }  # by args.currency ("*": any); the
#                                  # amount is args.amount (amount_field, currency_field change it)
# connectors = ["erp"]             # the connectors it may be sent through (default: any)
# max_attempts = { financial = 3 } # the budget cap of each tier, at most the tier's own
# approval_secs = 3600             # an approval lasts at most this long
# [policies.operations."*"]        # every other operation, within the tier caps
"#;

/// Why a configuration cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Parse { path: String, message: String },
    #[error("{path}: {message}")]
    Invalid { path: String, message: String },
}

/// One bearer token.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenConfig {
    pub name: String,
    pub token_sha256: String,
    pub role: Role,
    pub tenants: Vec<String>,
    /// For a `connector` token: the connectors whose receipts it may deliver.
    #[serde(default)]
    pub connectors: Vec<String>,
    /// An admin token that may approve the intents it created itself: for a load harness or
    /// an importer that stands for both roles. Off by default; refused on any other role.
    #[serde(default)]
    pub may_approve_own: bool,
}

/// One downstream system.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConnectorConfig {
    pub name: String,
    pub base_url: String,
    #[serde(default = "yes")]
    pub supports_idempotency: bool,
    #[serde(default)]
    pub key_retention_secs: u64,
    #[serde(default = "yes")]
    pub supports_lookup: bool,
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
    #[serde(default)]
    pub overload_means_not_applied: bool,
    /// How long a connection to this downstream is kept for the next call once idle; 0
    /// opens one for every call. Shorter than the downstream's own keep-alive, so the
    /// coordinator lets a connection go before the downstream closes it: a command sent
    /// on a connection just as the downstream closes it may or may not have been applied.
    #[serde(default = "default_idle_connection_ms")]
    pub idle_connection_ms: u64,
    #[serde(default)]
    pub operations: BTreeMap<String, String>,
}

impl ConnectorConfig {
    /// What the connector promises about keys, for the send gate and the reconciler.
    pub fn key_contract(&self) -> KeyContract {
        KeyContract {
            supports_idempotency: self.supports_idempotency,
            retention_ms: self.key_retention_secs.saturating_mul(1000),
            timeout_ms: self.timeout_ms,
        }
    }

    /// What a 503 or 429 without `Retry-After` from this downstream means.
    pub fn bare_overload(&self) -> BareOverload {
        if self.overload_means_not_applied {
            BareOverload::NotApplied
        } else {
            BareOverload::Unproven
        }
    }
}

fn yes() -> bool {
    true
}
fn default_timeout_ms() -> u64 {
    2000
}
pub(crate) fn default_idle_connection_ms() -> u64 {
    u64::try_from(crate::tls::POOL_IDLE.as_millis()).unwrap_or(u64::MAX)
}

/// The longest `idle_connection_ms` taken: an hour. Longer is a typo (seconds for
/// milliseconds, say) more often than a wish, and holds sockets for nothing.
pub const MAX_IDLE_CONNECTION_MS: u64 = 3_600_000;

/// The whole configuration.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub listen: String,
    /// A second address for operators and the console, served by a thread of its own: a
    /// flood of agents' requests on `listen` does not queue ahead of them. The same API and
    /// tokens on both.
    #[serde(default)]
    pub operator_listen: Option<String>,
    pub database: crate::store::Location,
    #[serde(default)]
    pub durability: Durability,
    #[serde(default)]
    pub tokens: Vec<TokenConfig>,
    #[serde(default)]
    pub connectors: Vec<ConnectorConfig>,
    #[serde(default = "default_reconcile_interval_ms")]
    pub reconcile_interval_ms: u64,
    #[serde(default = "default_reconcile_batch")]
    pub reconcile_batch: u32,
    #[serde(default = "default_lease_ms")]
    pub dispatch_lease_ms: u64,
    #[serde(default = "default_concurrency")]
    pub dispatch_concurrency: usize,
    #[serde(default = "default_max_body")]
    pub max_body_bytes: usize,
    #[serde(default)]
    pub limits: Limits,
    #[serde(default)]
    pub tls: TlsConfig,
    /// Each tenant's approval policy (`[[policies]]`), as written.
    #[serde(default)]
    pub policies: Vec<PolicyConfig>,
    /// The same, checked and by tenant; filled when the configuration is parsed.
    #[serde(skip)]
    pub tenant_policies: BTreeMap<String, Policy>,
    #[serde(default)]
    pub lookups: LookupPacing,
    /// Each operation's eligible releases (`[[releases]]`); an operation with none listed
    /// accepts any release.
    #[serde(default)]
    pub releases: ReleaseRegistry,
}

/// How automatic lookups are paced (`[lookups]`): capped exponential backoff with jitter per
/// intent, a budget per intent, and a rate per connector.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LookupPacing {
    /// The wait after an intent's first automatic lookup, before jitter.
    pub first_delay_ms: u64,
    /// The longest wait between two automatic lookups of one intent, before jitter.
    pub max_delay_ms: u64,
    /// Automatic lookups per intent; past them the intent waits for an operator.
    pub budget: u32,
    /// Automatic lookups sent to one connector per second at most.
    pub per_connector_per_sec: u32,
}

impl Default for LookupPacing {
    fn default() -> Self {
        LookupPacing {
            first_delay_ms: 2_000,
            max_delay_ms: 600_000,
            budget: 20,
            per_connector_per_sec: 5,
        }
    }
}

/// TLS (`[tls]`): the coordinator serves HTTPS when given a certificate and its key, and
/// trusts `ca_file` (beside the system's roots) when it calls connectors over HTTPS.
/// Relative paths are taken relative to the configuration file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsConfig {
    /// The certificate chain this coordinator presents, PEM, leaf first.
    pub cert_file: Option<std::path::PathBuf>,
    /// The private key of that certificate, PEM.
    pub key_file: Option<std::path::PathBuf>,
    /// More CA certificates (PEM) to trust for connectors' HTTPS.
    pub ca_file: Option<std::path::PathBuf>,
}

/// What a slow, stuck or greedy client may hold of the HTTP server (`[limits]`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// A request's headers must have arrived this long after its first byte, or the
    /// connection is closed.
    pub header_read_timeout_ms: u64,
    /// A request (an event stream excepted) not answered by then is answered 503 with
    /// `Retry-After`; what it wrote may have been applied, as after any timeout.
    pub request_timeout_ms: u64,
    /// Connections past this many are answered 503 with `Retry-After` and closed.
    pub max_connections: usize,
    /// Requests in progress at once, all tokens together; more are answered 503.
    pub max_concurrent_requests: usize,
    /// Requests in progress at once with one token; more are answered 429.
    pub max_concurrent_per_token: usize,
    /// Event streams open at once, all tokens together; one more is answered 503.
    pub max_event_streams: usize,
    /// Event streams open at once with one token; one more is answered 429.
    pub max_event_streams_per_token: usize,
    /// Agents' writes (create, authorize, report) waiting for or in the store at once;
    /// one more is answered 503 with `Retry-After` before anything is queued.
    pub max_queued_writes: usize,
    /// Events of the change feed older than this are dropped.
    pub events_kept_hours: u64,
    /// At most this many events are kept, the newest.
    pub events_kept_max: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            header_read_timeout_ms: 10_000,
            request_timeout_ms: 30_000,
            max_connections: 2_048,
            max_concurrent_requests: 1_024,
            max_concurrent_per_token: 256,
            max_event_streams: 256,
            max_event_streams_per_token: 16,
            max_queued_writes: 512,
            events_kept_hours: 24,
            events_kept_max: 2_000_000,
        }
    }
}

fn default_reconcile_interval_ms() -> u64 {
    2000
}
fn default_reconcile_batch() -> u32 {
    200
}
fn default_lease_ms() -> u64 {
    30_000
}
fn default_concurrency() -> usize {
    64
}
fn default_max_body() -> usize {
    262_144
}

impl Config {
    /// Read and check a configuration file; a relative `database` is taken relative to it.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: shown.clone(),
            source,
        })?;
        let mut config = Config::parse(&text, &shown)?;
        if let (crate::store::Location::Sqlite(file), Some(dir)) = (&config.database, path.parent())
            && file.is_relative()
        {
            config.database = crate::store::Location::Sqlite(dir.join(file));
        }
        if let Some(dir) = path.parent() {
            let tls = &mut config.tls;
            for file in [&mut tls.cert_file, &mut tls.key_file, &mut tls.ca_file]
                .into_iter()
                .flatten()
            {
                if file.is_relative() {
                    *file = dir.join(&*file);
                }
            }
        }
        Ok(config)
    }

    /// Parse and check configuration text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Config, ConfigError> {
        let mut config: Config = toml::from_str(text).map_err(|e| ConfigError::Parse {
            path: origin.to_string(),
            message: e.to_string(),
        })?;
        config.check(origin)?;
        config.tenant_policies =
            compile_policies(&config.policies, &|c| config.connector(c).is_some()).map_err(
                |message| ConfigError::Invalid {
                    path: origin.to_string(),
                    message,
                },
            )?;
        Ok(config)
    }

    fn check(&self, origin: &str) -> Result<(), ConfigError> {
        let invalid = |message: String| ConfigError::Invalid {
            path: origin.to_string(),
            message,
        };
        let l = &self.limits;
        for (key, value) in [
            ("header_read_timeout_ms", l.header_read_timeout_ms),
            ("request_timeout_ms", l.request_timeout_ms),
            ("max_connections", l.max_connections as u64),
            ("max_concurrent_requests", l.max_concurrent_requests as u64),
            (
                "max_concurrent_per_token",
                l.max_concurrent_per_token as u64,
            ),
            ("max_event_streams", l.max_event_streams as u64),
            (
                "max_event_streams_per_token",
                l.max_event_streams_per_token as u64,
            ),
            ("max_queued_writes", l.max_queued_writes as u64),
            ("events_kept_hours", l.events_kept_hours),
            ("events_kept_max", l.events_kept_max),
        ] {
            if value == 0 {
                return Err(invalid(format!("limits.{key} must be at least 1")));
            }
        }
        if let Some(slowest) = self.connectors.iter().max_by_key(|c| c.timeout_ms)
            && slowest.timeout_ms >= l.request_timeout_ms
        {
            return Err(invalid(format!(
                "limits.request_timeout_ms ({}) must be longer than connector `{}`'s timeout_ms ({}): \
                 an operator's lookup waits for the connector",
                l.request_timeout_ms, slowest.name, slowest.timeout_ms
            )));
        }
        if self.tls.cert_file.is_some() != self.tls.key_file.is_some() {
            return Err(invalid(
                "tls.cert_file and tls.key_file go together: give both to serve HTTPS, or neither"
                    .into(),
            ));
        }
        let mut names = std::collections::BTreeSet::new();
        for t in &self.tokens {
            // A token's name is the principal's identity: who reported an attempt, who used
            // a caller key, who ran a command.
            if !names.insert(t.name.as_str()) {
                return Err(invalid(format!(
                    "token `{}` is named twice; a token's name is its principal's identity",
                    t.name
                )));
            }
            let ok =
                t.token_sha256.len() == 64 && t.token_sha256.bytes().all(|b| b.is_ascii_hexdigit());
            if !ok {
                return Err(invalid(format!(
                    "token `{}`: token_sha256 must be 64 hex characters",
                    t.name
                )));
            }
            if t.tenants.is_empty() {
                return Err(invalid(format!(
                    "token `{}`: tenants must list at least one tenant or \"*\"",
                    t.name
                )));
            }
            match (t.role, t.connectors.is_empty()) {
                (Role::Connector, true) => {
                    return Err(invalid(format!(
                        "token `{}`: a connector token must list the connectors it speaks for \
                         (connectors = [\"erp\"])",
                        t.name
                    )));
                }
                (Role::Connector, false) => {
                    if let Some(unknown) = t.connectors.iter().find(|c| self.connector(c).is_none())
                    {
                        return Err(invalid(format!(
                            "token `{}`: names connector `{unknown}`, which is not configured",
                            t.name
                        )));
                    }
                }
                (_, false) => {
                    return Err(invalid(format!(
                        "token `{}`: only a connector token lists connectors",
                        t.name
                    )));
                }
                (_, true) => {}
            }
            if t.may_approve_own && t.role != Role::Admin {
                return Err(invalid(format!(
                    "token `{}`: only an admin token may approve its own intents (may_approve_own)",
                    t.name
                )));
            }
        }
        let mut connector_names = std::collections::BTreeSet::new();
        for c in &self.connectors {
            // Intents, action keys, tokens and receipts name their connector; two of one name
            // would split its settings between whichever each part found first.
            if !connector_names.insert(c.name.as_str()) {
                return Err(invalid(format!(
                    "connector `{}` is named twice; a connector's name is its identity",
                    c.name
                )));
            }
            if !(c.base_url.starts_with("http://") || c.base_url.starts_with("https://")) {
                return Err(invalid(format!(
                    "connector `{}`: base_url must start with http:// or https://",
                    c.name
                )));
            }
            if c.timeout_ms == 0 {
                return Err(invalid(format!(
                    "connector `{}`: timeout_ms must be positive",
                    c.name
                )));
            }
            if c.idle_connection_ms > MAX_IDLE_CONNECTION_MS {
                return Err(invalid(format!(
                    "connector `{}`: idle_connection_ms must be at most {MAX_IDLE_CONNECTION_MS} \
                     (an hour), got {}",
                    c.name, c.idle_connection_ms
                )));
            }
            let least = min_lease_ms(c.timeout_ms);
            if self.dispatch_lease_ms < least {
                return Err(invalid(format!(
                    "dispatch_lease_ms ({}) must be at least {least}: twice connector `{}`'s \
                     timeout_ms ({}) and a second, so a send ends inside its lease",
                    self.dispatch_lease_ms, c.name, c.timeout_ms
                )));
            }
        }
        let p = &self.lookups;
        for (key, value) in [
            ("first_delay_ms", p.first_delay_ms),
            ("max_delay_ms", p.max_delay_ms),
            ("budget", u64::from(p.budget)),
            ("per_connector_per_sec", u64::from(p.per_connector_per_sec)),
        ] {
            if value == 0 {
                return Err(invalid(format!("lookups.{key} must be at least 1")));
            }
        }
        if p.max_delay_ms < p.first_delay_ms {
            return Err(invalid(format!(
                "lookups.max_delay_ms ({}) must be at least lookups.first_delay_ms ({})",
                p.max_delay_ms, p.first_delay_ms
            )));
        }
        if let Some(problem) = self.releases.problem() {
            return Err(invalid(problem));
        }
        if self.dispatch_concurrency == 0 {
            return Err(invalid("dispatch_concurrency must be positive".to_string()));
        }
        Ok(())
    }

    pub fn connector(&self, name: &str) -> Option<&ConnectorConfig> {
        self.connectors.iter().find(|c| c.name == name)
    }

    /// The approval policy of `tenant`, if it has one.
    pub fn policy(&self, tenant: &str) -> Option<&Policy> {
        self.tenant_policies.get(tenant)
    }
}

/// The shortest dispatch lease a connector with `timeout_ms` allows: a claimed send waits at
/// most one timeout for its answer, and the lease leaves as much again, and a second, for
/// recording it.
pub fn min_lease_ms(timeout_ms: u64) -> u64 {
    timeout_ms.saturating_mul(2).saturating_add(1000)
}

/// The hex SHA-256 of a bearer token, as the configuration stores it.
pub fn token_sha256(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The commented approver token and policy of the example are valid once uncommented.
    #[test]
    fn the_examples_commented_approver_and_policy_parse() {
        // The commented block that starts at `first`, up to its blank line, uncommented.
        let block = |first: &str| -> String {
            let from = EXAMPLE_CONFIG
                .find(first)
                .expect("the block is in the example");
            EXAMPLE_CONFIG[from..]
                .lines()
                .take_while(|l| !l.trim().is_empty())
                .filter_map(|l| l.strip_prefix("# "))
                .filter(|l| l.starts_with('[') || l.contains(" = "))
                .map(|l| l.split(" # ").next().unwrap_or(l).trim_end())
                .collect::<Vec<_>>()
                .join("\n")
        };
        let text = format!(
            "{EXAMPLE_CONFIG}\n{}\n{}\n",
            block("# [[tokens]]\n# name = \"acme-approvals\""),
            block("# [[policies]]")
        )
        .replace("<hex sha256 of the bearer token>", &token_sha256("secret"))
        .replace(
            "<hex sha256 of the connector's token>",
            &token_sha256("hook"),
        )
        .replace(
            "<hex sha256 of the approver's token>",
            &token_sha256("approve"),
        );
        let config = Config::parse(&text, "example").expect("valid once uncommented");
        assert!(config.tokens.iter().any(|t| t.role == Role::Approver));
        let acme = config.policy("acme").expect("acme has a policy");
        assert_eq!(acme.version, "2026-12");
        assert!(acme.rule("payment.initiate").is_some());
        assert_eq!(acme.rule("inventory.check").map(|(n, _)| n), Some("*"));
    }

    #[test]
    fn the_example_parses_once_its_hash_is_filled_in() {
        let text = EXAMPLE_CONFIG
            .replace("<hex sha256 of the bearer token>", &token_sha256("secret"))
            .replace(
                "<hex sha256 of the connector's token>",
                &token_sha256("hook"),
            );
        let config = Config::parse(&text, "example").expect("the example is valid");
        assert_eq!(config.tokens[0].role, Role::Admin);
        assert_eq!(
            config.connector("erp").map(|c| c.key_retention_secs),
            Some(86_400)
        );
    }

    #[test]
    fn unknown_keys_are_named() {
        let err = Config::parse(
            "listen = \"x\"\ndatabase = \"d\"\nlisten_port = 3\n",
            "c.toml",
        )
        .expect_err("unknown key");
        assert!(err.to_string().contains("listen_port"), "{err}");
    }

    #[test]
    fn a_lease_not_comfortably_longer_than_a_timeout_is_refused() {
        let base = "listen = \"x\"\ndatabase = \"d\"\n";
        let connector =
            "[[connectors]]\nname = \"erp\"\nbase_url = \"http://h\"\ntimeout_ms = 500\n";
        let err = Config::parse(
            &format!("{base}dispatch_lease_ms = 1999\n{connector}"),
            "c.toml",
        )
        .expect_err("too short");
        assert!(err.to_string().contains("dispatch_lease_ms"), "{err}");
        assert!(err.to_string().contains("2000"), "{err}");
        Config::parse(
            &format!("{base}dispatch_lease_ms = 2000\n{connector}"),
            "c.toml",
        )
        .expect("long enough");
    }

    #[test]
    fn a_connectors_idle_connection_setting_is_checked_and_named() {
        let base = "listen = \"x\"\ndatabase = \"d\"\n";
        let erp = |idle: &str| {
            format!("{base}[[connectors]]\nname = \"erp\"\nbase_url = \"http://h\"\n{idle}")
        };
        let config = Config::parse(&erp(""), "c.toml").expect("the default");
        assert_eq!(config.connectors[0].idle_connection_ms, 4000);
        for (line, named) in [
            ("idle_connection_ms = 3600001\n", "3600000"),
            ("idle_connection_ms = -1\n", "idle_connection_ms"),
            ("idle_connection_ms = \"4s\"\n", "idle_connection_ms"),
        ] {
            let err = Config::parse(&erp(line), "c.toml").expect_err(line);
            assert!(err.to_string().contains(named), "{line}: {err}");
            assert!(
                err.to_string().contains("idle_connection_ms"),
                "{line}: {err}"
            );
        }
        for idle in [0, 3_600_000] {
            let config = Config::parse(&erp(&format!("idle_connection_ms = {idle}\n")), "c.toml")
                .expect("in range");
            assert_eq!(config.connectors[0].idle_connection_ms, idle);
        }
    }

    #[test]
    fn a_connector_named_twice_is_refused_and_named() {
        let base = "listen = \"x\"\ndatabase = \"d\"\n";
        let erp = "[[connectors]]\nname = \"erp\"\nbase_url = \"http://h\"\n";
        let other = "[[connectors]]\nname = \"ledger\"\nbase_url = \"http://h\"\n";
        let twice = format!("{base}{erp}{other}{erp}idle_connection_ms = 1000\n");
        let err = Config::parse(&twice, "c.toml").expect_err("named twice");
        assert!(
            err.to_string().contains("connector `erp` is named twice"),
            "{err}"
        );
        Config::parse(&format!("{base}{erp}{other}"), "c.toml").expect("two names");
    }

    #[test]
    fn connector_tokens_name_configured_connectors_and_others_none() {
        let head = "listen = \"x\"\ndatabase = \"d\"\n";
        let erp = "[[connectors]]\nname = \"erp\"\nbase_url = \"http://h\"\n";
        let token = |role: &str, connectors: &str| {
            format!(
                "{head}[[tokens]]\nname = \"t\"\ntoken_sha256 = \"{}\"\nrole = \"{role}\"\n\
                 tenants = [\"*\"]\n{connectors}{erp}",
                token_sha256("s")
            )
        };
        let config = Config::parse(&token("connector", "connectors = [\"erp\"]\n"), "c")
            .expect("a connector token");
        assert_eq!(config.tokens[0].connectors, vec!["erp".to_string()]);
        for (role, connectors, said) in [
            ("connector", "", "must list the connectors"),
            ("connector", "connectors = [\"bank\"]\n", "`bank`"),
            (
                "agent",
                "connectors = [\"erp\"]\n",
                "only a connector token",
            ),
        ] {
            let err = Config::parse(&token(role, connectors), "c").expect_err(said);
            assert!(err.to_string().contains(said), "{err}");
        }
    }

    #[test]
    fn a_token_name_is_an_identity_and_may_not_repeat() {
        let token = |secret: &str| {
            format!(
                "[[tokens]]\nname = \"ops\"\ntoken_sha256 = \"{}\"\nrole = \"admin\"\ntenants = [\"*\"]\n",
                token_sha256(secret)
            )
        };
        let text = format!(
            "listen = \"x\"\ndatabase = \"d\"\n{}{}",
            token("a"),
            token("b")
        );
        let err = Config::parse(&text, "c").expect_err("a repeated name");
        assert!(err.to_string().contains("named twice"), "{err}");
    }

    #[test]
    fn durability_defaults_to_power_loss() {
        let config = Config::parse("listen = \"x\"\ndatabase = \"d\"\n", "c").expect("valid");
        assert_eq!(config.durability, Durability::PowerLoss);
        let config = Config::parse(
            "listen = \"x\"\ndatabase = \"d\"\ndurability = \"process_crash\"\n",
            "c",
        )
        .expect("valid");
        assert_eq!(config.durability, Durability::ProcessCrash);
        let err = Config::parse(
            "listen = \"x\"\ndatabase = \"d\"\ndurability = \"fast\"\n",
            "c",
        )
        .expect_err("unknown");
        assert!(err.to_string().contains("power_loss"), "{err}");
    }

    #[test]
    fn lookup_pacing_has_defaults_and_refuses_nonsense() {
        let base = "listen = \"x\"\ndatabase = \"d\"\n";
        let config = Config::parse(base, "c").expect("valid");
        assert_eq!(config.lookups, LookupPacing::default());
        assert_eq!(config.lookups.budget, 20);
        for (table, said) in [
            ("[lookups]\nbudget = 0\n", "lookups.budget"),
            (
                "[lookups]\nfirst_delay_ms = 5000\nmax_delay_ms = 1000\n",
                "max_delay_ms",
            ),
            ("[lookups]\nbugdet = 3\n", "bugdet"),
        ] {
            let err = Config::parse(&format!("{base}{table}"), "c").expect_err(said);
            assert!(err.to_string().contains(said), "{err}");
        }
    }

    #[test]
    fn a_bad_hash_is_refused() {
        let text = "listen = \"x\"\ndatabase = \"d\"\n[[tokens]]\nname = \"a\"\ntoken_sha256 = \"abc\"\nrole = \"admin\"\ntenants = [\"*\"]\n";
        assert!(Config::parse(text, "c.toml").is_err());
    }
}
