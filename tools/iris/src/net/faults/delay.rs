//! Delay: every frame, in either direction, is delivered a fixed time after it was handed over,
//! in order, as over a long cable or a slow switch.

use std::collections::VecDeque;

use smoltcp::phy::Device;
use smoltcp::time::{Duration, Instant};

use super::{Fault, MAX_HELD, give_frame, take_frame};

/// Delays every frame by `delay`.
pub struct Delay {
    delay: Duration,
    /// Frames received from the device, each with the time it is due to the stack.
    rx: VecDeque<(Instant, Vec<u8>)>,
    /// Frames the stack sent, each with the time it is due to the device.
    tx: VecDeque<(Instant, Vec<u8>)>,
}

impl Delay {
    pub fn new(delay: Duration) -> Delay {
        Delay {
            delay,
            rx: VecDeque::new(),
            tx: VecDeque::new(),
        }
    }

    /// Hands `inner` the sent frames that are due.
    fn flush<D: Device>(&mut self, inner: &mut D, now: Instant) {
        while let Some((due, _)) = self.tx.front() {
            if *due > now || inner.transmit(now).is_none() {
                break;
            }
            if let Some((_, frame)) = self.tx.pop_front() {
                give_frame(inner, now, &frame);
            }
        }
    }
}

impl Fault for Delay {
    fn receive<D: Device>(&mut self, inner: &mut D, now: Instant) -> Option<Vec<u8>> {
        self.flush(inner, now);
        while self.rx.len() < MAX_HELD {
            let Some(frame) = take_frame(inner, now) else {
                break;
            };
            self.rx.push_back((now + self.delay, frame));
        }
        if self.rx.front().is_none_or(|(due, _)| *due > now) {
            return None;
        }
        self.rx.pop_front().map(|(_, frame)| frame)
    }

    fn send<D: Device>(&mut self, inner: &mut D, now: Instant, frame: Vec<u8>) {
        if self.delay == Duration::ZERO && self.tx.is_empty() {
            give_frame(inner, now, &frame);
        } else {
            self.tx.push_back((now + self.delay, frame));
        }
    }

    fn ready<D: Device>(&mut self, inner: &mut D, now: Instant) -> bool {
        self.flush(inner, now);
        self.tx.len() < MAX_HELD && (!self.tx.is_empty() || inner.transmit(now).is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::host::WireDevice;
    use crate::net::wire::wire;
    use smoltcp::phy::{RxToken, TxToken};

    #[test]
    fn frames_wait_their_delay_in_both_directions_and_keep_their_order() {
        let (guest, host) = wire(16);
        let mut d = Delay::new(Duration::from_millis(3)).around(WireDevice { wire: host });
        let t0 = Instant::from_millis(100);
        guest.send(vec![1]);
        guest.send(vec![2]);
        assert!(d.receive(t0).is_none(), "not before its time");
        assert!(d.receive(Instant::from_millis(102)).is_none());
        let t3 = Instant::from_millis(103);
        let (rx, _) = d.receive(t3).unwrap();
        assert_eq!(rx.consume(<[u8]>::to_vec), [1]);
        let (rx, _) = d.receive(t3).unwrap();
        assert_eq!(rx.consume(<[u8]>::to_vec), [2]);
        assert!(d.receive(t3).is_none());

        d.transmit(t0).unwrap().consume(1, |b| b[0] = 7);
        d.transmit(Instant::from_millis(101))
            .unwrap()
            .consume(1, |b| b[0] = 8);
        assert!(d.receive(Instant::from_millis(102)).is_none());
        assert_eq!(guest.recv(), None, "held for 3 ms");
        assert!(d.receive(t3).is_none());
        assert_eq!(guest.recv(), Some(vec![7]));
        assert_eq!(guest.recv(), None);
        assert!(d.transmit(Instant::from_millis(104)).is_some());
        assert_eq!(guest.recv(), Some(vec![8]));
    }

    #[test]
    fn without_a_delay_frames_pass_at_once() {
        let (guest, host) = wire(16);
        let mut d = Delay::new(Duration::ZERO).around(WireDevice { wire: host });
        let t = Instant::from_millis(5);
        d.transmit(t)
            .unwrap()
            .consume(2, |b| b.copy_from_slice(&[4, 5]));
        assert_eq!(guest.recv(), Some(vec![4, 5]));
        guest.send(vec![6]);
        let (rx, _) = d.receive(t).unwrap();
        assert_eq!(rx.consume(<[u8]>::to_vec), [6]);
    }
}
