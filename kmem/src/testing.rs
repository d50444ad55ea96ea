//! What tests share: one pseudo-random generator for every crate's tests and the fuzz targets.
//! Built only for tests (the `testing` feature), never into the image. It lives here because
//! the module's services may not depend on the protocol crate, and both crates' tests use it.

/// A seeded linear congruential generator: reproducible "random" inputs for tests that throw
/// garbage at a parser. Not for anything that needs real randomness.
#[derive(Clone, Debug)]
pub struct Lcg(pub u64);

impl Lcg {
    /// The next 31 pseudo-random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }

    /// A pseudo-random number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        self.next_u64() as usize % n.max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::Lcg;

    #[test]
    fn lcg_is_reproducible() {
        let (mut a, mut b) = (Lcg(7), Lcg(7));
        for _ in 0..4 {
            let x = a.next_u64();
            assert!(x == b.next_u64() && x < 1 << 31);
        }
        assert!((0..100).all(|_| a.below(3) < 3));
        assert_eq!(a.below(0), 0);
    }
}
