//! Reordering: now and then a frame is held back until the next frame in the same direction has
//! overtaken it, as when two paths of different length carry one flow.

use smoltcp::phy::Device;
use smoltcp::time::{Duration, Instant};

use super::{Dice, Fault, give_frame, take_frame};

/// How long a held frame waits to be overtaken; past that it goes on in order.
pub const HOLD: Duration = Duration::from_millis(5);

/// Swaps `pct` percent of frames with the frame after them.
pub struct Reorder {
    pct: u8,
    rx_dice: Dice,
    tx_dice: Dice,
    /// A received frame held back, since when, and whether another has overtaken it.
    rx_held: Option<(Instant, Vec<u8>)>,
    rx_overtaken: bool,
    /// A sent frame held back, since when.
    tx_held: Option<(Instant, Vec<u8>)>,
}

impl Reorder {
    pub fn new(pct: u8, seed: u64) -> Reorder {
        Reorder {
            pct,
            rx_dice: Dice::new(seed, 1),
            tx_dice: Dice::new(seed, 2),
            rx_held: None,
            rx_overtaken: false,
            tx_held: None,
        }
    }

    /// Sends a held frame nothing overtook within [`HOLD`].
    fn flush<D: Device>(&mut self, inner: &mut D, now: Instant) {
        if self.tx_held.as_ref().is_some_and(|(t, _)| now >= *t + HOLD)
            && let Some((_, frame)) = self.tx_held.take()
        {
            give_frame(inner, now, &frame);
        }
    }
}

impl Fault for Reorder {
    /// The next received frame in the order the stack gets them.
    fn receive<D: Device>(&mut self, inner: &mut D, now: Instant) -> Option<Vec<u8>> {
        self.flush(inner, now);
        let release = self
            .rx_held
            .as_ref()
            .is_some_and(|(t, _)| self.rx_overtaken || now >= *t + HOLD);
        if release {
            self.rx_overtaken = false;
            return self.rx_held.take().map(|(_, f)| f);
        }
        let frame = take_frame(inner, now)?;
        if self.rx_held.is_some() {
            self.rx_overtaken = true;
            return Some(frame);
        }
        if !self.rx_dice.roll(self.pct) {
            return Some(frame);
        }
        self.rx_held = Some((now, frame));
        let next = take_frame(inner, now)?;
        self.rx_overtaken = true;
        Some(next)
    }

    fn send<D: Device>(&mut self, inner: &mut D, now: Instant, frame: Vec<u8>) {
        if let Some((_, held)) = self.tx_held.take() {
            give_frame(inner, now, &frame);
            give_frame(inner, now, &held);
        } else if self.tx_dice.roll(self.pct) {
            self.tx_held = Some((now, frame));
        } else {
            give_frame(inner, now, &frame);
        }
    }

    fn ready<D: Device>(&mut self, inner: &mut D, now: Instant) -> bool {
        self.flush(inner, now);
        inner.transmit(now).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::host::WireDevice;
    use crate::net::wire::wire;
    use smoltcp::phy::{RxToken, TxToken};

    fn rx_all<D: Device>(d: &mut D, now: Instant) -> Vec<u8> {
        std::iter::from_fn(|| d.receive(now).map(|(rx, _)| rx.consume(|b| b[0]))).collect()
    }

    #[test]
    fn every_frame_is_swapped_with_the_next_at_100_percent() {
        let (guest, host) = wire(16);
        let mut r = Reorder::new(100, 1).around(WireDevice { wire: host });
        let t = Instant::from_millis(10);
        for i in 1..=4 {
            guest.send(vec![i]);
        }
        assert_eq!(rx_all(&mut r, t), [2, 1, 4, 3]);
        for i in 1..=4 {
            r.transmit(t).unwrap().consume(1, |b| b[0] = i);
        }
        let sent: Vec<u8> = std::iter::from_fn(|| guest.recv().map(|f| f[0])).collect();
        assert_eq!(sent, [2, 1, 4, 3]);
    }

    #[test]
    fn a_frame_nothing_overtakes_goes_on_after_the_hold() {
        let (guest, host) = wire(16);
        let mut r = Reorder::new(100, 1).around(WireDevice { wire: host });
        let t = Instant::from_millis(10);
        guest.send(vec![9]);
        assert_eq!(rx_all(&mut r, t), []);
        assert_eq!(rx_all(&mut r, t + HOLD), [9]);
        r.transmit(t).unwrap().consume(1, |b| b[0] = 8);
        assert_eq!(guest.recv(), None);
        assert!(r.receive(t + HOLD).is_none());
        assert_eq!(guest.recv(), Some(vec![8]));
    }

    #[test]
    fn at_0_percent_the_order_stays() {
        let (guest, host) = wire(16);
        let mut r = Reorder::new(0, 1).around(WireDevice { wire: host });
        for i in 1..=4 {
            guest.send(vec![i]);
        }
        assert_eq!(rx_all(&mut r, Instant::ZERO), [1, 2, 3, 4]);
    }
}
