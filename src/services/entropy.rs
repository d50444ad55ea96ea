//! Session ids and smoltcp's seed need unpredictable bits; the Indy has no random number
//! generator, so mix what varies between boots and between calls (the clock, the machine's
//! address, the wall time) through a xorshift64* generator. Not cryptographic: session ids are
//! a routing key, and the bearer token is what authenticates.

/// A xorshift64* generator that also folds in the clock on every draw.
pub struct Entropy {
    state: u64,
}

impl Entropy {
    pub fn new(seed: u64) -> Self {
        // A zero state would stay zero.
        Entropy {
            state: seed ^ 0x9E37_79B9_7F4A_7C15 | 1,
        }
    }

    /// Mixes in a value that varies (the clock at the time of the call).
    pub fn stir(&mut self, v: u64) {
        self.state ^= v.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
        self.next_u64();
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.state;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.state = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let bytes = self.next_u64().to_be_bytes();
            chunk.copy_from_slice(&bytes[..chunk.len()]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn different_seeds_give_different_streams() {
        let (mut a, mut b) = (Entropy::new(1), Entropy::new(2));
        let (mut x, mut y) = ([0u8; 16], [0u8; 16]);
        a.fill(&mut x);
        b.fill(&mut y);
        assert_ne!(x, y);
        assert_ne!(x, [0; 16]);
    }

    #[test]
    fn zero_seed_still_varies() {
        let mut e = Entropy::new(0x9E37_79B9_7F4A_7C15);
        assert_ne!(e.next_u64(), e.next_u64());
    }
}
