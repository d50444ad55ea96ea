//! Reordering: now and then a frame is held back until the next frame in the same direction has
//! overtaken it, as when two paths of different length carry one flow.

use smoltcp::phy::{Device, DeviceCapabilities};
use smoltcp::time::{Duration, Instant};

use super::{Dice, FrameRx, FrameTx, Outbox, give_frame, take_frame};

/// How long a held frame waits to be overtaken; past that it goes on in order.
pub const HOLD: Duration = Duration::from_millis(5);

/// Swaps `pct` percent of frames with the frame after them.
pub struct Reorder<D> {
    inner: D,
    pct: u8,
    rx_dice: Dice,
    tx_dice: Dice,
    /// A received frame held back, since when, and whether another has overtaken it.
    rx_held: Option<(Instant, Vec<u8>)>,
    rx_overtaken: bool,
    /// A sent frame held back, since when.
    tx_held: Option<(Instant, Vec<u8>)>,
}

impl<D: Device> Reorder<D> {
    pub fn new(inner: D, pct: u8, seed: u64) -> Reorder<D> {
        Reorder {
            inner,
            pct,
            rx_dice: Dice::new(seed, 1),
            tx_dice: Dice::new(seed, 2),
            rx_held: None,
            rx_overtaken: false,
            tx_held: None,
        }
    }

    /// Sends a held frame nothing overtook within [`HOLD`].
    fn flush(&mut self, now: Instant) {
        if self.tx_held.as_ref().is_some_and(|(t, _)| now >= *t + HOLD)
            && let Some((_, frame)) = self.tx_held.take()
        {
            give_frame(&mut self.inner, now, &frame);
        }
    }

    /// The next received frame in the order the stack gets them.
    fn next_rx(&mut self, now: Instant) -> Option<Vec<u8>> {
        let release = self
            .rx_held
            .as_ref()
            .is_some_and(|(t, _)| self.rx_overtaken || now >= *t + HOLD);
        if release {
            self.rx_overtaken = false;
            return self.rx_held.take().map(|(_, f)| f);
        }
        let frame = take_frame(&mut self.inner, now)?;
        if self.rx_held.is_some() {
            self.rx_overtaken = true;
            return Some(frame);
        }
        if !self.rx_dice.roll(self.pct) {
            return Some(frame);
        }
        self.rx_held = Some((now, frame));
        let next = take_frame(&mut self.inner, now)?;
        self.rx_overtaken = true;
        Some(next)
    }
}

impl<D: Device> Outbox for Reorder<D> {
    fn post(&mut self, now: Instant, frame: Vec<u8>) {
        if let Some((_, held)) = self.tx_held.take() {
            give_frame(&mut self.inner, now, &frame);
            give_frame(&mut self.inner, now, &held);
        } else if self.tx_dice.roll(self.pct) {
            self.tx_held = Some((now, frame));
        } else {
            give_frame(&mut self.inner, now, &frame);
        }
    }
}

impl<D: Device> Device for Reorder<D> {
    type RxToken<'a>
        = FrameRx
    where
        Self: 'a;
    type TxToken<'a>
        = FrameTx<'a, Self>
    where
        Self: 'a;

    fn receive(&mut self, now: Instant) -> Option<(FrameRx, FrameTx<'_, Self>)> {
        self.flush(now);
        let frame = self.next_rx(now)?;
        Some((FrameRx(frame), FrameTx::new(self, now)))
    }

    fn transmit(&mut self, now: Instant) -> Option<FrameTx<'_, Self>> {
        self.flush(now);
        self.inner.transmit(now)?;
        Some(FrameTx::new(self, now))
    }

    fn capabilities(&self) -> DeviceCapabilities {
        self.inner.capabilities()
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
        let mut r = Reorder::new(WireDevice { wire: host }, 100, 1);
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
        let mut r = Reorder::new(WireDevice { wire: host }, 100, 1);
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
        let mut r = Reorder::new(WireDevice { wire: host }, 0, 1);
        for i in 1..=4 {
            guest.send(vec![i]);
        }
        assert_eq!(rx_all(&mut r, Instant::ZERO), [1, 2, 3, 4]);
    }
}
