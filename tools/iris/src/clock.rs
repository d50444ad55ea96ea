//! The rig clock: host monotonic time since the machine last booted (or reset) plus an offset
//! tests can advance, so timeouts (watchdog, sessions) are testable without waiting. It restarts
//! at a reset because the kernel's `clock_ms` is "milliseconds since boot".

use std::cell::Cell;
use std::time::Instant;

pub struct Clock {
    start: Cell<Instant>,
    offset_ms: Cell<u64>,
}

impl Default for Clock {
    fn default() -> Clock {
        Clock::new()
    }
}

impl Clock {
    pub fn new() -> Clock {
        Clock {
            start: Cell::new(Instant::now()),
            offset_ms: Cell::new(0),
        }
    }

    pub fn now_ms(&self) -> u64 {
        self.start.get().elapsed().as_millis() as u64 + self.offset_ms.get()
    }

    pub fn advance(&self, ms: u64) {
        self.offset_ms.set(self.offset_ms.get().saturating_add(ms));
    }

    /// Back to 0 (a machine reset): the advanced offset goes too.
    pub fn restart(&self) {
        self.start.set(Instant::now());
        self.offset_ms.set(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advance_moves_time_forward() {
        let c = Clock::new();
        let a = c.now_ms();
        c.advance(5_000);
        let b = c.now_ms();
        assert!(b >= a + 5_000 && b < a + 6_000);
    }

    #[test]
    fn restart_starts_from_zero_again() {
        let c = Clock::new();
        c.advance(600_000);
        assert!(c.now_ms() >= 600_000);
        c.restart();
        assert!(c.now_ms() < 1_000);
    }
}
