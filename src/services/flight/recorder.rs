//! What the flight record says and when it is rewritten: at every tool call's start (so a
//! call that stops the machine is in the record before it runs) and otherwise at most once a
//! second from `poll` ([`WRITE_INTERVAL_MS`]), which is also when a call's end reaches it: a
//! call that ended less than a second before the machine stopped may still be listed. An idle
//! machine costs one comparison a poll.
//! Pure: the board stores the bytes ([`Recorder::record`]) in the kernel's region.

use super::record::{self, ERA_LEGACY, ERA_MODERN, Flight, FlightCall, RECORD_LEN};
use alloc::borrow::Cow;
use alloc::string::String;
use alloc::vec::Vec;

/// Longest time between two writes while the module polls.
pub const WRITE_INTERVAL_MS: u64 = 1000;

/// The figures a periodic write refreshes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Figures {
    pub uptime_ms: u64,
    pub heap_used: usize,
    pub heap_size: usize,
    pub connections: usize,
    pub requests: u64,
}

/// The module's record and the calls it tracks.
pub struct Recorder {
    flight: Flight,
    /// The token of each call in `flight.calls`, in the same order.
    tokens: Vec<u32>,
    next_token: u32,
    last_write_ms: Option<u64>,
    bytes: [u8; RECORD_LEN],
}

impl Recorder {
    pub fn new(build: &str) -> Recorder {
        Recorder {
            flight: Flight {
                build: String::from(build),
                ..Flight::default()
            },
            tokens: Vec::new(),
            next_token: 1,
            last_write_ms: None,
            bytes: [0; RECORD_LEN],
        }
    }

    /// A call starts: it is recorded unless [`record::MAX_CALLS`] are already, in which case
    /// it is counted as dropped. Returns its token (0 for a dropped call).
    pub fn call_started(
        &mut self,
        tool: &'static str,
        client: [u8; 4],
        legacy: bool,
        at_ms: u64,
    ) -> u32 {
        self.flight.uptime_ms = self.flight.uptime_ms.max(at_ms);
        if self.flight.calls.len() >= record::MAX_CALLS
            || self.flight.calls.try_reserve(1).is_err()
            || self.tokens.try_reserve(1).is_err()
        {
            self.flight.dropped = self.flight.dropped.saturating_add(1);
            return 0;
        }
        let token = self.next_token;
        self.next_token = self.next_token.wrapping_add(1).max(1);
        self.flight.calls.push(FlightCall {
            tool: Cow::Borrowed(tool),
            client,
            era: if legacy { ERA_LEGACY } else { ERA_MODERN },
            started_ms: u32::try_from(at_ms).unwrap_or(u32::MAX),
        });
        self.tokens.push(token);
        token
    }

    /// The call `token` ended.
    pub fn call_ended(&mut self, token: u32) {
        match self.tokens.iter().position(|&t| t == token) {
            Some(i) if token != 0 => {
                self.tokens.remove(i);
                self.flight.calls.remove(i);
            }
            _ => self.flight.dropped = self.flight.dropped.saturating_sub(1),
        }
    }

    /// Who asked for the reset about to happen (written with the next record).
    pub fn reset_requested(&mut self, by: &str) {
        self.flight.reset_by.clear();
        let mut n = by.len().min(record::NAME_LEN);
        while !by.is_char_boundary(n) {
            n -= 1;
        }
        self.flight.reset_by.push_str(&by[..n]);
    }

    /// Where this boot wrote its generated token into the serial ring.
    pub fn secret(&mut self, start: u32, end: u32) {
        self.flight.secret = (end > start).then_some((start, end));
    }

    /// Whether a periodic write is due at `now_ms`.
    pub fn due(&self, now_ms: u64) -> bool {
        self.last_write_ms
            .is_none_or(|t| now_ms.saturating_sub(t) >= WRITE_INTERVAL_MS)
    }

    /// The record with these figures, sealed, to be stored now.
    pub fn record(&mut self, f: Figures) -> &[u8; RECORD_LEN] {
        let fl = &mut self.flight;
        fl.uptime_ms = f.uptime_ms;
        fl.heap_used = u32::try_from(f.heap_used).unwrap_or(u32::MAX);
        fl.heap_size = u32::try_from(f.heap_size).unwrap_or(u32::MAX);
        fl.connections = u32::try_from(f.connections).unwrap_or(u32::MAX);
        fl.requests = u32::try_from(f.requests).unwrap_or(u32::MAX);
        record::encode(fl, &mut self.bytes);
        fl.seq = fl.seq.wrapping_add(1);
        self.last_write_ms = Some(f.uptime_ms);
        &self.bytes
    }

    /// The calls in flight now (tests and the status report).
    pub fn calls(&self) -> &[FlightCall] {
        &self.flight.calls
    }
}
