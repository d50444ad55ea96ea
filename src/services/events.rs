//! The machine's events since boot: why it booted, a reset or power-off someone asked for, a
//! refused deploy, a poll gap that came close to the watchdog, an address gained or lost. Kept
//! in a bounded ring (the oldest dropped first, and counted), each with a sequence number from
//! 1 so that a reader can tell what it missed; `irix7://events` serves them and announces each
//! new one to its subscribers. Every event is also an audit line (see `Services::record_event`).
//!
//! What can cause one is bounded by its nature: one boot and one deploy verdict per boot, one
//! reset or power-off (the power slot refuses a second), a near miss only after a gap of half
//! the watchdog's period, an address change per DHCP lease. The ring bounds the rest.

use alloc::collections::VecDeque;
use alloc::string::String;
use core::fmt;

/// Events kept.
pub const MAX_EVENTS: usize = 64;
/// Bytes of one event's detail; a longer one is cut on a character boundary.
pub const MAX_DETAIL: usize = 160;
/// The Indy's MC watchdog period: 2²⁰ ticks of 64 µs.
pub const WATCHDOG_MS: u64 = 67_108;
/// A gap between two polls (two watchdog kicks) this long or longer is a near miss: half the
/// period, so there is still time to notice before the next gap of that kind resets the machine.
pub const NEAR_MISS_MS: u64 = WATCHDOG_MS / 2;

/// What happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Boot,
    ResetRequested,
    ShutdownRequested,
    /// The kernel refused the configured image and runs the last good one.
    DeployRefused,
    /// Two polls (two watchdog kicks) at least [`NEAR_MISS_MS`] apart.
    WatchdogNearMiss,
    /// The module's IPv4 address was given, changed or lost.
    Address,
    /// A context of the kernel (a cell) faulted or exited (`services::debug`).
    Context,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Boot => "boot",
            Kind::ResetRequested => "reset-requested",
            Kind::ShutdownRequested => "shutdown-requested",
            Kind::DeployRefused => "deploy-refused",
            Kind::WatchdogNearMiss => "watchdog-near-miss",
            Kind::Address => "address",
            Kind::Context => "context",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// From 1, one more for each event since boot.
    pub seq: u64,
    /// Monotonic milliseconds since boot.
    pub at_ms: u64,
    pub kind: Kind,
    pub detail: String,
}

/// `audit <ms> ms machine event <seq> <kind>: <detail>`: the event as a line of the audit
/// trail (the detail is the module's own words, never a client's).
impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "audit {} ms machine event {} {}: {}",
            self.at_ms,
            self.seq,
            self.kind.as_str(),
            self.detail
        )
    }
}

#[derive(Debug)]
pub struct Events {
    ring: VecDeque<Event>,
    next_seq: u64,
    dropped: u64,
    /// When the last poll started, to measure the gap to the next.
    last_poll_ms: u64,
}

impl Events {
    /// An empty ring, started at `now_ms` (the first poll's gap is
    /// measured from here).
    pub fn new(now_ms: u64) -> Self {
        Events {
            ring: VecDeque::new(),
            next_seq: 1,
            dropped: 0,
            last_poll_ms: now_ms,
        }
    }

    /// Keeps an event, dropping the oldest past [`MAX_EVENTS`]; the event as kept.
    pub fn push(&mut self, at_ms: u64, kind: Kind, detail: &str) -> &Event {
        let end = detail.floor_char_boundary(MAX_DETAIL);
        if self.ring.len() >= MAX_EVENTS && self.ring.pop_front().is_some() {
            self.dropped += 1;
        }
        self.ring.push_back(Event {
            seq: self.next_seq,
            at_ms,
            kind,
            detail: String::from(detail.get(..end).unwrap_or("")),
        });
        self.next_seq += 1;
        // Just pushed: the ring is not empty.
        &self.ring[self.ring.len() - 1]
    }

    /// The events kept, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = &Event> {
        self.ring.iter()
    }

    /// Events dropped to make room since boot.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Events recorded since boot: also a version that changes with each new event.
    pub fn total(&self) -> u64 {
        self.next_seq - 1
    }

    /// Takes a poll's start; the gap since the previous one if it was a near miss.
    pub fn polled(&mut self, now_ms: u64) -> Option<u64> {
        let gap = now_ms.saturating_sub(self.last_poll_ms);
        self.last_poll_ms = now_ms;
        (gap >= NEAR_MISS_MS).then_some(gap)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;
    use alloc::string::ToString;

    #[test]
    fn keeps_the_newest_events_numbered_and_counts_the_dropped() {
        let mut ev = Events::new(0);
        assert_eq!((ev.total(), ev.dropped(), ev.iter().count()), (0, 0, 0));
        ev.push(5, Kind::Boot, "cause watchdog");
        for i in 0..100 {
            ev.push(10 + i, Kind::Address, &format!("address {i}"));
        }
        assert_eq!(ev.total(), 101);
        assert_eq!(ev.dropped(), 101 - MAX_EVENTS as u64);
        let kept: alloc::vec::Vec<&Event> = ev.iter().collect();
        assert_eq!(kept.len(), MAX_EVENTS);
        assert_eq!(kept[0].seq, 101 - MAX_EVENTS as u64 + 1);
        assert_eq!(kept[MAX_EVENTS - 1].seq, 101);
        assert_eq!(kept[MAX_EVENTS - 1].detail, "address 99");
        assert!(kept.windows(2).all(|w| w[1].seq == w[0].seq + 1));
    }

    #[test]
    fn a_long_detail_is_cut_on_a_character_boundary() {
        let mut ev = Events::new(0);
        let e = ev.push(1, Kind::Boot, &"é".repeat(MAX_DETAIL));
        assert!(e.detail.len() <= MAX_DETAIL && e.detail.len() >= MAX_DETAIL - 1);
    }

    #[test]
    fn a_poll_gap_of_half_the_watchdog_period_is_a_near_miss() {
        let mut ev = Events::new(1_000);
        assert_eq!(ev.polled(1_010), None);
        assert_eq!(ev.polled(1_010 + NEAR_MISS_MS - 1), None);
        let at = 1_010 + NEAR_MISS_MS - 1;
        assert_eq!(ev.polled(at + NEAR_MISS_MS), Some(NEAR_MISS_MS));
        assert_eq!(ev.polled(at + NEAR_MISS_MS + 1), None);
        // A clock that went backwards is no gap.
        assert_eq!(ev.polled(0), None);
        // The gap from boot to the first poll counts.
        let mut ev = Events::new(0);
        assert_eq!(ev.polled(40_000), Some(40_000));
    }

    #[test]
    fn an_event_is_an_audit_line() {
        let mut ev = Events::new(0);
        ev.push(7, Kind::Boot, "cause reset");
        let e = ev.push(1234, Kind::ResetRequested, "system.reset, in 250 ms");
        assert_eq!(
            e.to_string(),
            "audit 1234 ms machine event 2 reset-requested: system.reset, in 250 ms"
        );
    }
}
