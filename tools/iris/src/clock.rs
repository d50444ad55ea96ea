//! The rig clock: host monotonic time since the machine was built plus an offset tests can
//! advance, so timeouts (watchdog, sessions) are testable without waiting.

use std::cell::Cell;
use std::time::Instant;

pub struct Clock {
    start: Instant,
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
            start: Instant::now(),
            offset_ms: Cell::new(0),
        }
    }

    pub fn now_ms(&self) -> u64 {
        self.start.elapsed().as_millis() as u64 + self.offset_ms.get()
    }

    pub fn advance(&self, ms: u64) {
        self.offset_ms.set(self.offset_ms.get().saturating_add(ms));
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
}
