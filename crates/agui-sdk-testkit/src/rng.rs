//! A seeded generator (xorshift64): the same numbers on every run, so that a test or a
//! benchmark that draws from it sees the same input each time.

/// Deterministic pseudo-random numbers (xorshift64). The seed must not be 0 (the
/// sequence would stay 0).
#[derive(Debug, Clone)]
pub struct Rng(pub u64);

impl Rng {
    /// The next number.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    /// A number in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next_u64() % (hi - lo + 1) as u64) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::Rng;

    #[test]
    fn the_same_seed_gives_the_same_numbers_within_bounds() {
        let (mut a, mut b) = (Rng(7), Rng(7));
        for _ in 0..1000 {
            let x = a.range(5, 40);
            assert_eq!(x, b.range(5, 40));
            assert!((5..=40).contains(&x));
            assert!(a.below(3) < 3 && b.below(3) < 3);
        }
        assert_ne!(Rng(7).next_u64(), Rng(8).next_u64());
    }
}
