//! Where time and randomness come from. The coordinator, the console, the workload and the
//! sandbox each receive a [`Clock`] and (where they make ids) an [`Entropy`]; none reads the
//! system's directly, so a test or a simulated world can run them on a [`ManualClock`] and
//! a [`SeededEntropy`] and get the same run twice.

use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

/// A source of the current time in unix milliseconds.
pub trait Clock: Send + Sync + fmt::Debug + 'static {
    fn now_ms(&self) -> u64;
}

/// A clock shared between the parts of one process.
pub type SharedClock = Arc<dyn Clock>;

/// The system's wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
            .unwrap_or(0)
    }
}

/// The system clock, shared.
pub fn system_clock() -> SharedClock {
    Arc::new(SystemClock)
}

/// A clock that moves only when told to. Clones share the same time.
#[derive(Clone, Default)]
pub struct ManualClock {
    now_ms: Arc<AtomicU64>,
}

impl ManualClock {
    pub fn new(start_ms: u64) -> Self {
        Self {
            now_ms: Arc::new(AtomicU64::new(start_ms)),
        }
    }

    pub fn advance_ms(&self, by_ms: u64) {
        self.now_ms.fetch_add(by_ms, Ordering::SeqCst);
    }

    pub fn set_ms(&self, now_ms: u64) {
        self.now_ms.store(now_ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> u64 {
        self.now_ms.load(Ordering::SeqCst)
    }
}

impl fmt::Debug for ManualClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ManualClock")
            .field("now_ms", &self.now_ms())
            .finish()
    }
}

/// A source of 128-bit values for ids and jitter: uniqueness, not secrecy.
pub trait Entropy: Send + Sync + fmt::Debug + 'static {
    fn next_u128(&self) -> u128;

    /// 64 bits, for seeding a jitter generator.
    fn next_u64(&self) -> u64 {
        self.next_u128() as u64
    }
}

/// Entropy shared between the parts of one process.
pub type SharedEntropy = Arc<dyn Entropy>;

/// The standard library's randomly keyed hasher over a counter: different in every process.
#[derive(Debug, Default)]
pub struct OsEntropy {
    counter: AtomicU64,
}

impl Entropy for OsEntropy {
    fn next_u128(&self) -> u128 {
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        let state = std::collections::hash_map::RandomState::new();
        let mut a = state.build_hasher();
        a.write_u64(n);
        let mut b = state.build_hasher();
        b.write_u64(n ^ 0x9E37_79B9_7F4A_7C15);
        (u128::from(a.finish()) << 64) | u128::from(b.finish())
    }
}

/// The process's own entropy, shared.
pub fn os_entropy() -> SharedEntropy {
    Arc::new(OsEntropy::default())
}

/// Entropy from a seed: the same sequence for the same seed (SplitMix64).
#[derive(Debug)]
pub struct SeededEntropy {
    state: Mutex<u64>,
}

impl SeededEntropy {
    pub fn new(seed: u64) -> Self {
        Self {
            state: Mutex::new(seed),
        }
    }

    fn next_word(&self) -> u64 {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = *state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

impl Entropy for SeededEntropy {
    fn next_u128(&self) -> u128 {
        (u128::from(self.next_word()) << 64) | u128::from(self.next_word())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_gives_the_same_values_and_the_os_source_does_not_repeat() {
        let (a, b) = (SeededEntropy::new(7), SeededEntropy::new(7));
        assert_eq!(
            (a.next_u128(), a.next_u128()),
            (b.next_u128(), b.next_u128())
        );
        let os = OsEntropy::default();
        assert_ne!(os.next_u128(), os.next_u128());
    }

    #[test]
    fn a_manual_clock_moves_only_when_told() {
        let clock = ManualClock::new(1_000);
        let shared = clock.clone();
        clock.advance_ms(500);
        assert_eq!(shared.now_ms(), 1_500);
    }
}
