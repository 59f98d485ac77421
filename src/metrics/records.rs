//! The records of the metric index: interned dimension values, one compact record per
//! intent and per attempt, and the spans an intent spent indeterminate.

use std::collections::HashMap;

/// Text values of one dimension, interned to small ids.
///
/// A dictionary has room for `limit` values; past it, and past [`PER_TENANT`] values first
/// brought by one tenant, a new value gets the id `limit`, labelled [`OTHER`]: it is never
/// shown under another value's name, and one tenant's thousands of names cannot use up the
/// room of the others.
#[derive(Debug, Clone)]
pub(crate) struct Dict {
    names: Vec<String>,
    ids: HashMap<String, u16>,
    limit: u16,
    /// New values each tenant brought, for the dimensions counted per tenant.
    brought: HashMap<u16, u32>,
}

/// The label of every value a dictionary had no room for.
pub(crate) const OTHER: &str = "(other)";
/// The most values one tenant may add to a dimension counted per tenant.
pub(crate) const PER_TENANT: u32 = 1_024;

impl Default for Dict {
    fn default() -> Self {
        Dict::with_limit(u16::MAX)
    }
}

impl Dict {
    pub(crate) fn with_limit(limit: u16) -> Dict {
        Dict {
            names: Vec::new(),
            ids: HashMap::new(),
            limit,
            brought: HashMap::new(),
        }
    }

    /// The id of `name`, adding it when new and there is room.
    pub(crate) fn id(&mut self, name: &str) -> u16 {
        self.id_for(None, name)
    }

    /// [`Dict::id`], counting a new value against `tenant`'s share.
    pub(crate) fn id_for(&mut self, tenant: Option<u16>, name: &str) -> u16 {
        if let Some(&id) = self.ids.get(name) {
            return id;
        }
        let room = self.names.len() < usize::from(self.limit);
        let share = tenant.is_none_or(|t| self.brought.get(&t).copied().unwrap_or(0) < PER_TENANT);
        if !room || !share {
            return self.limit;
        }
        let id = self.names.len() as u16;
        self.names.push(name.to_string());
        self.ids.insert(name.to_string(), id);
        if let Some(t) = tenant {
            *self.brought.entry(t).or_default() += 1;
        }
        id
    }

    pub(crate) fn find(&self, name: &str) -> Option<u16> {
        self.ids.get(name).copied()
    }

    pub(crate) fn name(&self, id: u16) -> &str {
        if id == self.limit {
            return OTHER;
        }
        self.names.get(usize::from(id)).map_or("", String::as_str)
    }

    pub(crate) fn len(&self) -> usize {
        self.names.len()
    }

    /// Roughly the bytes the dictionary holds.
    pub(crate) fn bytes(&self) -> usize {
        self.names
            .iter()
            .map(|n| 2 * n.len() + 2 * std::mem::size_of::<String>() + 8)
            .sum()
    }
}

/// The dictionaries of every dimension. Providers, releases, tools and operations come
/// from agents and are counted per tenant; tenants, locales, tiers and states are few.
#[derive(Debug, Clone)]
pub(crate) struct Dicts {
    pub tenant: Dict,
    pub provider: Dict,
    pub release: Dict,
    pub tool: Dict,
    pub operation: Dict,
    pub locale: Dict,
    pub tier: Dict,
    pub state: Dict,
}

impl Default for Dicts {
    fn default() -> Self {
        Dicts {
            tenant: Dict::default(),
            provider: Dict::default(),
            // An attempt keeps its release in 15 bits, beside the late flag.
            release: Dict::with_limit(LATE_BIT - 1),
            tool: Dict::default(),
            operation: Dict::default(),
            locale: Dict::default(),
            tier: Dict::default(),
            state: Dict::default(),
        }
    }
}

impl Dicts {
    /// Roughly the bytes all dictionaries hold.
    pub(crate) fn bytes(&self) -> usize {
        [
            &self.tenant,
            &self.provider,
            &self.release,
            &self.tool,
            &self.operation,
            &self.locale,
            &self.tier,
            &self.state,
        ]
        .iter()
        .map(|d| d.bytes())
        .sum()
    }
}

/// The most providers told apart in the provider mask; later ones share the last bit
/// ([`OVERFLOW_BIT`]), and whoever reads it looks at the attempts for which they were.
pub(crate) const MASK_BITS: u16 = 64;
pub(crate) const OVERFLOW_BIT: u64 = 1 << (MASK_BITS - 1);

pub(crate) fn provider_bit(id: u16) -> u64 {
    1u64 << id.min(MASK_BITS - 1)
}

/// One intent.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct IntentRec {
    pub seq: i64,
    pub created_ms: u64,
    /// 0 when not committed.
    pub committed_ms: u64,
    /// Where its attempts start in [`MetricIndex::attempts`], and how many there are.
    pub first_attempt: u32,
    pub n_attempts: u32,
    /// The intent's attempt count as the intents table keeps it.
    pub attempts: u32,
    pub max_attempts: u32,
    pub tenant: u16,
    pub operation: u16,
    pub tool: u16,
    pub release: u16,
    pub locale: u16,
    pub tier: u16,
    pub state: u16,
    /// One bit per provider its attempts used.
    pub providers: u64,
    /// Attempts that reported a proposal hash, and whether two of them differ.
    pub proposals: u32,
    pub diverged: bool,
    /// Attempts that completed late.
    pub late: u32,
    /// Lookups of its action key, as the intents table keeps the count.
    pub lookups: u32,
    /// Whether its command was ever handed to the connector.
    pub dispatched: bool,
    /// Whether its automatic lookups' budget is spent.
    pub lookups_exhausted: bool,
    /// False once replaced by a newer copy.
    pub live: bool,
}

/// One attempt, 16 bytes.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct AttemptRec {
    pub started_ms: u64,
    /// Milliseconds from start to end; `u32::MAX` while it has not ended.
    pub ended_after_ms: u32,
    pub provider: u16,
    /// The release id; the top bit is the late flag.
    release_late: u16,
}

const LATE_BIT: u16 = 1 << 15;

impl AttemptRec {
    pub(crate) fn new(
        started_ms: u64,
        ended_after_ms: u32,
        provider: u16,
        release: u16,
        late: bool,
    ) -> AttemptRec {
        AttemptRec {
            started_ms,
            ended_after_ms,
            provider,
            release_late: release.min(LATE_BIT - 1) | if late { LATE_BIT } else { 0 },
        }
    }

    pub(crate) fn release(&self) -> u16 {
        self.release_late & !LATE_BIT
    }

    pub(crate) fn late(&self) -> bool {
        self.release_late & LATE_BIT != 0
    }

    pub(crate) fn ended_ms(&self) -> Option<u64> {
        (self.ended_after_ms != u32::MAX).then(|| self.started_ms + u64::from(self.ended_after_ms))
    }
}

/// A span of time an intent spent indeterminate; `left_ms` is `u64::MAX` while it still is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Interval {
    pub entered_ms: u64,
    pub left_ms: u64,
}
