//! The virtual Ethernet cable between the emulated NIC and the host-side network stack: two
//! bounded in-memory frame queues, one per direction. Nothing on it ever reaches a real
//! network. Either end may live on another thread.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// Frames each direction holds before the sender's frames are dropped.
pub const DEFAULT_CAPACITY: usize = 256;
/// Largest frame the wire carries (Ethernet header + 1500 + a VLAN tag; no FCS).
pub const MAX_FRAME: usize = 1518;

/// Per-direction counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DirStats {
    pub frames: u64,
    pub bytes: u64,
    /// Frames refused because the queue was full or the frame too long.
    pub dropped: u64,
}

/// Counts for both directions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WireStats {
    pub to_guest: DirStats,
    pub to_host: DirStats,
}

#[derive(Default)]
struct Queues {
    to_guest: VecDeque<Vec<u8>>,
    to_host: VecDeque<Vec<u8>>,
    stats: WireStats,
}

struct Shared {
    capacity: usize,
    queues: Mutex<Queues>,
    /// Signalled when a frame is queued toward the host, so a host thread can sleep.
    to_host_ready: Condvar,
}

/// Which end of the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The emulated NIC: receives what the host sends.
    Guest,
    /// The host-side stack: receives what the guest sends.
    Host,
}

/// One end of the wire.
#[derive(Clone)]
pub struct WireEnd {
    shared: Arc<Shared>,
    side: Side,
}

/// A new wire with `capacity` frames per direction: (guest end, host end).
pub fn wire(capacity: usize) -> (WireEnd, WireEnd) {
    let shared = Arc::new(Shared {
        capacity: capacity.max(1),
        queues: Mutex::new(Queues::default()),
        to_host_ready: Condvar::new(),
    });
    (
        WireEnd {
            shared: shared.clone(),
            side: Side::Guest,
        },
        WireEnd {
            shared,
            side: Side::Host,
        },
    )
}

impl WireEnd {
    fn lock(&self) -> MutexGuard<'_, Queues> {
        // A panic elsewhere while holding the lock leaves plain queues behind: keep using them.
        self.shared.queues.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn side(&self) -> Side {
        self.side
    }

    /// Whether a frame sent now would be queued rather than dropped.
    pub fn can_send(&self) -> bool {
        let q = self.lock();
        let out = match self.side {
            Side::Guest => &q.to_host,
            Side::Host => &q.to_guest,
        };
        out.len() < self.shared.capacity
    }

    /// Sends a frame to the other end. Returns false (and counts a drop) when the queue is full
    /// or the frame longer than [`MAX_FRAME`].
    pub fn send(&self, frame: Vec<u8>) -> bool {
        let mut q = self.lock();
        let q = &mut *q;
        let (out, stats) = match self.side {
            Side::Guest => (&mut q.to_host, &mut q.stats.to_host),
            Side::Host => (&mut q.to_guest, &mut q.stats.to_guest),
        };
        if out.len() >= self.shared.capacity || frame.len() > MAX_FRAME {
            stats.dropped += 1;
            return false;
        }
        stats.frames += 1;
        stats.bytes += frame.len() as u64;
        out.push_back(frame);
        if self.side == Side::Guest {
            self.shared.to_host_ready.notify_all();
        }
        true
    }

    /// Takes the oldest frame sent to this end.
    pub fn recv(&self) -> Option<Vec<u8>> {
        let mut q = self.lock();
        match self.side {
            Side::Guest => q.to_guest.pop_front(),
            Side::Host => q.to_host.pop_front(),
        }
    }

    /// Frames waiting for this end.
    pub fn pending(&self) -> usize {
        let q = self.lock();
        match self.side {
            Side::Guest => q.to_guest.len(),
            Side::Host => q.to_host.len(),
        }
    }

    /// Host end: sleeps until the guest sends a frame or `timeout` passes.
    pub fn wait_for_frames(&self, timeout: Duration) {
        let q = self.lock();
        let waiting = match self.side {
            Side::Guest => q.to_guest.is_empty(),
            Side::Host => q.to_host.is_empty(),
        };
        if waiting && self.side == Side::Host {
            let _ = self.shared.to_host_ready.wait_timeout(q, timeout);
        }
    }

    pub fn stats(&self) -> WireStats {
        self.lock().stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_cross_in_order_and_overflow_is_counted() {
        let (guest, host) = wire(2);
        assert!(host.send(vec![1]));
        assert!(host.send(vec![2]));
        assert!(!host.can_send());
        assert!(!host.send(vec![3]));
        assert_eq!(guest.pending(), 2);
        assert_eq!(guest.recv(), Some(vec![1]));
        assert_eq!(guest.recv(), Some(vec![2]));
        assert_eq!(guest.recv(), None);
        assert!(guest.send(vec![9; 60]));
        assert!(!guest.send(vec![0; MAX_FRAME + 1]));
        assert_eq!(host.recv(), Some(vec![9; 60]));
        let s = host.stats();
        assert_eq!(
            s.to_guest,
            DirStats {
                frames: 2,
                bytes: 2,
                dropped: 1
            }
        );
        assert_eq!(
            s.to_host,
            DirStats {
                frames: 1,
                bytes: 60,
                dropped: 1
            }
        );
    }
}
