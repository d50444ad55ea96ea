//! What the flight record says and when each part is rewritten: a call's slot when the call
//! starts (so a call that stops the machine is in the record before it runs) and when it ends
//! (the slot is cleared), each a 44-byte write; the header at most once a second from `poll`
//! ([`WRITE_INTERVAL_MS`]), when a call beyond the slots is counted, and before a requested
//! reset. An idle machine costs one comparison a poll.
//! Pure: the board stores the bytes ([`SlotWrite`], [`Recorder::header`]) in the kernel's
//! region.

use super::record::{
    self, ERA_LEGACY, ERA_MODERN, Flight, FlightCall, HEADER_LEN, MAX_CALLS, RECORD_LEN, SLOT_LEN,
};
use alloc::borrow::Cow;
use alloc::string::String;

/// Longest time between two header writes while the module polls.
pub const WRITE_INTERVAL_MS: u64 = 1000;

/// The figures a header write refreshes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Figures {
    pub uptime_ms: u64,
    pub heap_used: usize,
    pub heap_size: usize,
    pub connections: usize,
    pub requests: u64,
}

/// A call's slot as its start or end leaves it: these bytes at this offset of the record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlotWrite {
    pub at: usize,
    pub bytes: [u8; SLOT_LEN],
}

/// The module's record and the calls it tracks.
pub struct Recorder {
    /// The header's fields (its `calls` stay empty: they live in `slots`).
    flight: Flight,
    /// The call in each slot, if any.
    slots: [Option<FlightCall>; MAX_CALLS],
    /// The next call's number (0 is never one: it names a call that got no slot).
    next_seq: u32,
    last_write_ms: Option<u64>,
    bytes: [u8; HEADER_LEN],
}

impl Recorder {
    pub fn new(build: &str) -> Recorder {
        Recorder {
            flight: Flight {
                build: String::from(build),
                ..Flight::default()
            },
            slots: Default::default(),
            next_seq: 1,
            last_write_ms: None,
            bytes: [0; HEADER_LEN],
        }
    }

    /// A call starts: it takes a free slot, or is counted as dropped when all
    /// [`MAX_CALLS`] are taken. Returns its token and its slot, or 0 and `None` for a dropped
    /// call (then the header is to be written: it carries the count).
    pub fn call_started(
        &mut self,
        tool: &'static str,
        client: [u8; 4],
        legacy: bool,
        at_ms: u64,
    ) -> (u32, Option<SlotWrite>) {
        let Some(i) = self.slots.iter().position(Option::is_none) else {
            self.flight.dropped = self.flight.dropped.saturating_add(1);
            return (0, None);
        };
        let seq = self.next_seq;
        self.next_seq = self.next_seq.wrapping_add(1).max(1);
        let call = FlightCall {
            seq,
            tool: Cow::Borrowed(tool),
            client,
            era: if legacy { ERA_LEGACY } else { ERA_MODERN },
            started_ms: u32::try_from(at_ms).unwrap_or(u32::MAX),
        };
        let mut bytes = [0; SLOT_LEN];
        record::encode_slot(&call, &mut bytes);
        self.slots[i] = Some(call);
        let at = record::slot_at(i);
        (seq, Some(SlotWrite { at, bytes }))
    }

    /// The call `token` ended: its slot, cleared; or, for a dropped call, `None` and one
    /// fewer counted (which reaches the header with its next write: a second late at most).
    pub fn call_ended(&mut self, token: u32) -> Option<SlotWrite> {
        let found = self
            .slots
            .iter()
            .position(|s| s.as_ref().is_some_and(|c| c.seq == token));
        match found {
            Some(i) if token != 0 => {
                self.slots[i] = None;
                let at = record::slot_at(i);
                Some(SlotWrite {
                    at,
                    bytes: [0; SLOT_LEN],
                })
            }
            _ => {
                self.flight.dropped = self.flight.dropped.saturating_sub(1);
                None
            }
        }
    }

    /// Who asked for the reset about to happen (written with the next header).
    pub fn reset_requested(&mut self, by: &str) {
        self.flight.reset_by.clear();
        let n = by.floor_char_boundary(record::NAME_LEN);
        self.flight.reset_by.push_str(&by[..n]);
    }

    /// Where this boot wrote its generated token into the serial ring.
    pub fn secret(&mut self, start: u32, end: u32) {
        self.flight.secret = (end > start).then_some((start, end));
    }

    /// Whether a periodic header write is due at `now_ms`.
    pub fn due(&self, now_ms: u64) -> bool {
        self.last_write_ms
            .is_none_or(|t| now_ms.saturating_sub(t) >= WRITE_INTERVAL_MS)
    }

    /// The header with these figures, sealed, to be stored now at the region's start.
    pub fn header(&mut self, f: Figures) -> &[u8; HEADER_LEN] {
        let fl = &mut self.flight;
        fl.uptime_ms = f.uptime_ms;
        fl.heap_used = u32::try_from(f.heap_used).unwrap_or(u32::MAX);
        fl.heap_size = u32::try_from(f.heap_size).unwrap_or(u32::MAX);
        fl.connections = u32::try_from(f.connections).unwrap_or(u32::MAX);
        fl.requests = u32::try_from(f.requests).unwrap_or(u32::MAX);
        record::encode_header(fl, &mut self.bytes);
        fl.seq = fl.seq.wrapping_add(1);
        self.last_write_ms = Some(f.uptime_ms);
        &self.bytes
    }

    /// The whole record as this boot starts it: the header and every slot free, over
    /// whatever the region held (this boot names no call it did not start).
    pub fn first(&mut self, f: Figures) -> [u8; RECORD_LEN] {
        let mut out = [0; RECORD_LEN];
        out[..HEADER_LEN].copy_from_slice(self.header(f));
        out
    }

    /// The calls in flight now, by slot.
    #[cfg(test)]
    pub fn calls(&self) -> impl Iterator<Item = &FlightCall> {
        self.slots.iter().flatten()
    }
}
