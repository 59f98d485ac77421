//! The simulation's randomness: every choice of a world is drawn from a [`Dice`] seeded by
//! the world's seed and the step's number, so a step makes the same choices whatever steps
//! were skipped before it (which is what lets a failing history be shrunk).

use crate::domain::retry::SplitMix64;

/// A seeded source of choices.
#[derive(Debug, Clone)]
pub struct Dice(SplitMix64);

impl Dice {
    pub fn new(seed: u64) -> Dice {
        Dice(SplitMix64::new(seed))
    }

    /// The dice of step `step` of the world `seed`, for the purpose `stream`.
    pub fn for_step(seed: u64, step: u64, stream: u64) -> Dice {
        let mut mix = SplitMix64::new(seed ^ 0x005E_ED0F_5EED);
        let a = mix.next_u64();
        let mut mix = SplitMix64::new(a ^ step.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let b = mix.next_u64();
        Dice(SplitMix64::new(
            b ^ stream.wrapping_mul(0xD1B5_4A32_D192_ED03),
        ))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// A number in `0..n` (`0` when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next_u64() % n }
    }

    /// A number in `lo..=hi`.
    pub fn between(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi.saturating_sub(lo) + 1)
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        ((self.next_u64() >> 11) as f64 / (1u64 << 53) as f64) < p
    }

    /// One of `items`, or `None` when there are none.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        if items.is_empty() {
            None
        } else {
            items.get(self.below(items.len() as u64) as usize)
        }
    }

    /// An index into `weights`, drawn in proportion to them.
    pub fn weighted(&mut self, weights: &[u64]) -> usize {
        let total: u64 = weights.iter().sum();
        let mut at = self.below(total);
        for (i, w) in weights.iter().enumerate() {
            if at < *w {
                return i;
            }
            at -= w;
        }
        weights.len().saturating_sub(1)
    }
}
