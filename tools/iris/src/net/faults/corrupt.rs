//! Corruption: now and then one bit of a frame is flipped, in either direction, as line noise
//! would (a wire without a frame check sequence, so only the IPv4 and TCP checksums can tell).
//! smoltcp's `FaultInjector` offers this too, but in 0.14 it flips its bit in the transmit
//! buffer before the stack writes the frame over it, so sent frames always went out intact.

use smoltcp::phy::Device;
use smoltcp::time::Instant;

use super::{Dice, Fault, give_frame, take_frame};

/// Flips one bit in `pct` percent of frames.
pub struct Corrupt {
    pct: u8,
    rx_dice: Dice,
    tx_dice: Dice,
}

impl Corrupt {
    pub fn new(pct: u8, seed: u64) -> Corrupt {
        Corrupt {
            pct,
            rx_dice: Dice::new(seed, 5),
            tx_dice: Dice::new(seed, 6),
        }
    }
}

/// Flips one bit of `frame`, maybe.
fn damage(dice: &mut Dice, pct: u8, frame: &mut [u8]) {
    if !frame.is_empty() && dice.roll(pct) {
        let bit = dice.draw() % (frame.len() as u64 * 8);
        frame[(bit / 8) as usize] ^= 1 << (bit % 8);
    }
}

impl Fault for Corrupt {
    fn receive<D: Device>(&mut self, inner: &mut D, now: Instant) -> Option<Vec<u8>> {
        let mut frame = take_frame(inner, now)?;
        damage(&mut self.rx_dice, self.pct, &mut frame);
        Some(frame)
    }

    fn send<D: Device>(&mut self, inner: &mut D, now: Instant, mut frame: Vec<u8>) {
        damage(&mut self.tx_dice, self.pct, &mut frame);
        give_frame(inner, now, &frame);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::host::WireDevice;
    use crate::net::wire::wire;
    use smoltcp::phy::{RxToken, TxToken};

    /// Bits that differ between two frames of one length.
    fn flipped(a: &[u8], b: &[u8]) -> u32 {
        a.iter().zip(b).map(|(x, y)| (x ^ y).count_ones()).sum()
    }

    #[test]
    fn at_100_percent_every_frame_has_one_bit_flipped_both_ways() {
        let (guest, host) = wire(64);
        let mut c = Corrupt::new(100, 3).around(WireDevice { wire: host });
        let frame: Vec<u8> = (0..60).collect();
        for _ in 0..20 {
            guest.send(frame.clone());
            let (rx, _) = c.receive(Instant::ZERO).unwrap();
            assert_eq!(rx.consume(|b| flipped(b, &frame)), 1);
            c.transmit(Instant::ZERO)
                .unwrap()
                .consume(60, |b| b.copy_from_slice(&frame));
            assert_eq!(flipped(&guest.recv().unwrap(), &frame), 1, "sent");
        }
    }

    #[test]
    fn at_0_percent_frames_pass_intact() {
        let (guest, host) = wire(64);
        let mut c = Corrupt::new(0, 3).around(WireDevice { wire: host });
        c.transmit(Instant::ZERO)
            .unwrap()
            .consume(3, |b| b.copy_from_slice(&[1, 2, 3]));
        assert_eq!(guest.recv(), Some(vec![1, 2, 3]));
    }
}
