//! Duplication: now and then a frame arrives twice, as when a switch floods it on two ports or
//! a sender's retry crosses the original.

use smoltcp::phy::Device;
use smoltcp::time::Instant;

use super::{Dice, Fault, give_frame, take_frame};

/// Delivers `pct` percent of frames a second time, right after the first.
pub struct Duplicate {
    pct: u8,
    rx_dice: Dice,
    tx_dice: Dice,
    /// The copy of the last received frame still to be delivered.
    rx_again: Option<Vec<u8>>,
}

impl Duplicate {
    pub fn new(pct: u8, seed: u64) -> Duplicate {
        Duplicate {
            pct,
            rx_dice: Dice::new(seed, 3),
            tx_dice: Dice::new(seed, 4),
            rx_again: None,
        }
    }
}

impl Fault for Duplicate {
    fn receive<D: Device>(&mut self, inner: &mut D, now: Instant) -> Option<Vec<u8>> {
        if let Some(again) = self.rx_again.take() {
            return Some(again);
        }
        let frame = take_frame(inner, now)?;
        if self.rx_dice.roll(self.pct) {
            self.rx_again = Some(frame.clone());
        }
        Some(frame)
    }

    fn send<D: Device>(&mut self, inner: &mut D, now: Instant, frame: Vec<u8>) {
        give_frame(inner, now, &frame);
        if self.tx_dice.roll(self.pct) {
            give_frame(inner, now, &frame);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::host::WireDevice;
    use crate::net::wire::wire;
    use smoltcp::phy::{RxToken, TxToken};

    #[test]
    fn at_100_percent_every_frame_comes_twice_both_ways() {
        let (guest, host) = wire(16);
        let mut d = Duplicate::new(100, 1).around(WireDevice { wire: host });
        let t = Instant::ZERO;
        guest.send(vec![1]);
        guest.send(vec![2]);
        let got: Vec<u8> =
            std::iter::from_fn(|| d.receive(t).map(|(rx, _)| rx.consume(|b| b[0]))).collect();
        assert_eq!(got, [1, 1, 2, 2]);
        d.transmit(t).unwrap().consume(1, |b| b[0] = 5);
        let sent: Vec<u8> = std::iter::from_fn(|| guest.recv().map(|f| f[0])).collect();
        assert_eq!(sent, [5, 5]);
    }

    #[test]
    fn some_frames_come_twice_at_10_percent() {
        let (guest, host) = wire(2000);
        let mut d = Duplicate::new(10, 7).around(WireDevice { wire: host });
        for i in 0..1000u16 {
            guest.send(i.to_be_bytes().to_vec());
        }
        let n = std::iter::from_fn(|| d.receive(Instant::ZERO).map(|_| ())).count();
        assert!((1050..=1150).contains(&n), "{n} frames from 1000");
    }
}
