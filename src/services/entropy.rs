//! The module's random numbers: session ids, the generated token and smoltcp's seed (from which
//! it draws TCP initial sequence numbers and ephemeral ports). The Indy has no random number
//! generator, so the board collects timing it cannot predict (docs/security.md, "Entropy":
//! R4400 Count-register jitter across device reads, the DS1386's hundredths, the arrival time
//! of every received frame) and stirs it in here; a ChaCha20 DRBG (the `chacha20` crate's
//! keystream) turns the pool into output.
//!
//! Samples are folded into a 256-bit pool as they come (cheap: a frame's arrival costs a few
//! multiplies). Before a draw, once [`RESEED_SAMPLES`] samples have come in since the last
//! reseed, the generator is rekeyed with its own next 32 bytes XOR the pool: what was unknown
//! before stays unknown (the old key is in the new one), and new timing is added. After every
//! draw the key is replaced by the next 32 bytes of keystream ("fast key erasure"), so a state
//! seen later does not give away what was drawn before.
//!
//! (`rand_chacha` was the first choice; its 4-block refill is one straight run of ~1,100
//! instructions, a translation block Unicorn's code generator cannot hold, so the rig
//! crashed. The `chacha20` crate's portable backend computes one block in a loop.)

use chacha20::ChaCha20;
use chacha20::cipher::{KeyIvInit, StreamCipher};

/// Samples collected before the generator is rekeyed at its next draw.
pub const RESEED_SAMPLES: u32 = 64;

/// A ChaCha20 DRBG with an entropy pool.
pub struct Entropy {
    key: [u8; 32],
    pool: [u64; 4],
    /// Samples folded in since the last reseed (the lane of the next one, too).
    fresh: u32,
    /// Reseeds so far (`status`-style diagnostics and tests).
    reseeds: u32,
}

impl Entropy {
    /// A generator keyed from the samples gathered at boot (at least the clock and the
    /// device-read jitter; see the board's `entropy` module).
    pub fn new(samples: &[u64]) -> Self {
        let mut e = Entropy {
            key: [0; 32],
            pool: [
                0x6a09_e667_f3bc_c908,
                0xbb67_ae85_84ca_a73b,
                0x3c6e_f372_fe94_f82b,
                0,
            ],
            fresh: 0,
            reseeds: 0,
        };
        for &s in samples {
            e.stir(s);
        }
        e.reseed();
        e
    }

    /// Folds one sample into the pool (a Count reading, a frame's arrival time).
    pub fn stir(&mut self, v: u64) {
        let lane = (self.fresh % 4) as usize;
        let x = (self.pool[lane] ^ v).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.pool[lane] = x.rotate_left(29) ^ self.pool[(lane + 1) % 4];
        self.fresh = self.fresh.saturating_add(1);
    }

    /// Rekeys the generator with its own output XOR the pool.
    fn reseed(&mut self) {
        let mut seed = [0u8; 32];
        self.keystream(&mut seed);
        for (chunk, lane) in seed.chunks_mut(8).zip(self.pool) {
            for (b, l) in chunk.iter_mut().zip(lane.to_be_bytes()) {
                *b ^= l;
            }
        }
        self.key = seed;
        self.fresh = 0;
        self.reseeds = self.reseeds.wrapping_add(1);
    }

    /// `buf.len()` bytes of keystream under the current key, then the next 32 as the new key.
    fn keystream(&mut self, buf: &mut [u8]) {
        let mut cipher = ChaCha20::new(&self.key.into(), &[0u8; 12].into());
        buf.fill(0);
        cipher.apply_keystream(buf);
        let mut next = [0u8; 32];
        cipher.apply_keystream(&mut next);
        self.key = next;
    }

    /// Fills `buf` with output, rekeying first when enough new samples came in.
    pub fn fill(&mut self, buf: &mut [u8]) {
        if self.fresh >= RESEED_SAMPLES {
            self.reseed();
        }
        self.keystream(buf);
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut b = [0u8; 8];
        self.fill(&mut b);
        u64::from_be_bytes(b)
    }

    /// How many times the generator was keyed (1 after `new`).
    pub fn reseeds(&self) -> u32 {
        self.reseeds
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn draw(e: &mut Entropy) -> [u8; 16] {
        let mut x = [0u8; 16];
        e.fill(&mut x);
        x
    }

    #[test]
    fn different_samples_give_different_streams() {
        let (mut a, mut b) = (Entropy::new(&[1, 2, 3]), Entropy::new(&[1, 2, 4]));
        assert_ne!(draw(&mut a), draw(&mut b));
        // The same samples give the same stream: the output is a function of what was stirred.
        let (mut c, mut d) = (Entropy::new(&[7, 8]), Entropy::new(&[7, 8]));
        assert_eq!(draw(&mut c), draw(&mut d));
    }

    #[test]
    fn the_order_of_samples_matters() {
        let (mut a, mut b) = (Entropy::new(&[1, 2]), Entropy::new(&[2, 1]));
        assert_ne!(draw(&mut a), draw(&mut b));
    }

    #[test]
    fn stirring_reseeds_after_enough_samples() {
        let mut a = Entropy::new(&[5]);
        let mut b = Entropy::new(&[5]);
        assert_eq!(a.reseeds(), 1);
        for i in 0..RESEED_SAMPLES {
            a.stir(u64::from(i));
            b.stir(u64::from(i) + 1);
        }
        // Same key so far; the pools differ and the next draw rekeys both.
        assert_ne!(draw(&mut a), draw(&mut b));
        assert_eq!(a.reseeds(), 2);
        // A few samples alone do not rekey.
        a.stir(1);
        let _ = draw(&mut a);
        assert_eq!(a.reseeds(), 2);
    }

    #[test]
    fn output_looks_uniform() {
        // Bit balance over 64 KiB: a broken generator (stuck bits, short cycles) fails it.
        let mut e = Entropy::new(&[0]);
        let mut buf = alloc::vec![0u8; 1 << 16];
        e.fill(&mut buf);
        let ones: u32 = buf.iter().map(|b| b.count_ones()).sum();
        let bits = (buf.len() * 8) as f64;
        let ratio = f64::from(ones) / bits;
        assert!((0.49..0.51).contains(&ratio), "{ratio}");
        let mut seen = alloc::collections::BTreeSet::new();
        for c in buf.chunks(8) {
            assert!(seen.insert(c.to_vec()), "a repeated 64-bit block");
        }
    }
}
