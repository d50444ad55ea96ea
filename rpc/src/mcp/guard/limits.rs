//! Rate and concurrency limits, and the table of tool calls in flight (which is also how a
//! legacy `notifications/cancelled` or a session's end reaches a running call).

use crate::jsonrpc::Id;
use alloc::collections::VecDeque;
use alloc::rc::{Rc, Weak};
use alloc::vec::Vec;
use core::cell::Cell;
use serde_json::Value;

/// Who a limit applies to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Key {
    /// A legacy session, by its serial number.
    Session(u64),
    /// A modern-era client, by address.
    Addr([u8; 4]),
}

/// Request times in the last second.
#[derive(Debug, Default)]
pub(crate) struct RateWindow {
    stamps: VecDeque<u64>,
}

impl RateWindow {
    /// Counts a request at `now_ms` if fewer than `limit` arrived in the second before it.
    pub(crate) fn admit(&mut self, now_ms: u64, limit: usize) -> bool {
        if self.full(now_ms, limit) {
            return false;
        }
        self.stamps.push_back(now_ms);
        true
    }

    /// Whether nothing was counted in the second before `now_ms`: forgetting the window
    /// changes no verdict.
    fn cold(&self, now_ms: u64) -> bool {
        self.stamps
            .back()
            .is_none_or(|&t| now_ms.saturating_sub(t) >= 1000)
    }

    /// Whether `limit` requests arrived in the second before `now_ms` (nothing is counted).
    fn full(&mut self, now_ms: u64, limit: usize) -> bool {
        while self
            .stamps
            .front()
            .is_some_and(|&t| now_ms.saturating_sub(t) >= 1000)
        {
            self.stamps.pop_front();
        }
        self.stamps.len() >= limit
    }
}

/// Rate windows by client address, bounded: when the table is full, a new address takes the
/// place of the least recently seen one whose window is empty (forgetting it changes no
/// verdict); when every window is hot, new addresses share one overflow window with the same
/// limit, so no number of addresses escapes the limit by pushing windows out.
#[derive(Debug, Default)]
pub(crate) struct ClientWindows {
    entries: Vec<([u8; 4], u64, RateWindow)>,
    overflow: RateWindow,
}

impl ClientWindows {
    /// Whether `addr` already used up its `limit` in the last second (nothing is counted).
    /// An address without a window of its own is judged by the overflow window.
    pub(crate) fn exhausted(&mut self, addr: [u8; 4], now_ms: u64, limit: usize) -> bool {
        match self.entries.iter_mut().find(|e| e.0 == addr) {
            Some(e) => e.2.full(now_ms, limit),
            None => self.overflow.full(now_ms, limit),
        }
    }

    /// Counts a request of `addr` if its window (at most `cap` are kept) has room.
    pub(crate) fn admit(&mut self, addr: [u8; 4], now_ms: u64, limit: usize, cap: usize) -> bool {
        if let Some(e) = self.entries.iter_mut().find(|e| e.0 == addr) {
            e.1 = now_ms;
            return e.2.admit(now_ms, limit);
        }
        if self.entries.len() >= cap.max(1) {
            let coldest = self
                .entries
                .iter()
                .enumerate()
                .filter(|(_, e)| e.2.cold(now_ms))
                .min_by_key(|(_, e)| e.1)
                .map(|(i, _)| i);
            match coldest {
                Some(i) => {
                    self.entries.swap_remove(i);
                }
                None => return self.overflow.admit(now_ms, limit),
            }
        }
        let mut w = RateWindow::default();
        let ok = w.admit(now_ms, limit);
        self.entries.push((addr, now_ms, w));
        ok
    }
}

/// One tool call in flight, shared between the server and the response body that runs it.
#[derive(Debug)]
pub(crate) struct CallState {
    pub(crate) key: Key,
    pub(crate) request_id: Id,
    pub(crate) cancelled: Cell<bool>,
    pub(crate) finished: Cell<bool>,
}

impl CallState {
    pub(crate) fn new(key: Key, request_id: Id) -> Rc<Self> {
        Rc::new(CallState {
            key,
            request_id,
            cancelled: Cell::new(false),
            finished: Cell::new(false),
        })
    }
}

/// Calls in flight. Holds weak references: a call whose body was dropped is gone.
#[derive(Debug, Default)]
pub(crate) struct Calls {
    list: Vec<Weak<CallState>>,
}

impl Calls {
    fn live(&mut self) -> impl Iterator<Item = Rc<CallState>> + '_ {
        self.list
            .retain(|w| w.upgrade().is_some_and(|c| !c.finished.get()));
        self.list.iter().filter_map(Weak::upgrade)
    }

    pub(crate) fn add(&mut self, call: &Rc<CallState>) {
        self.list.push(Rc::downgrade(call));
    }

    /// Calls running for `key`.
    pub(crate) fn active(&mut self, key: Key) -> usize {
        self.live()
            .filter(|c| c.key == key && !c.cancelled.get())
            .count()
    }

    /// Cancels `key`'s call with this request id; whether one was found.
    pub(crate) fn cancel_request(&mut self, key: Key, request_id: &Value) -> bool {
        let mut found = false;
        for c in self.live() {
            if c.key == key && c.request_id.matches(request_id) {
                c.cancelled.set(true);
                found = true;
            }
        }
        found
    }

    /// Cancels every call of `key` (its session ended).
    pub(crate) fn cancel_all(&mut self, key: Key) {
        for c in self.live() {
            if c.key == key {
                c.cancelled.set(true);
            }
        }
    }

    /// Whether `key` has calls in flight.
    pub(crate) fn busy(&mut self, key: Key) -> bool {
        self.live().any(|c| c.key == key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_admits_limit_per_rolling_second() {
        let mut w = RateWindow::default();
        for i in 0..20 {
            assert!(w.admit(1000 + i, 20));
        }
        assert!(!w.admit(1500, 20));
        assert!(!w.admit(1999, 20));
        assert!(w.admit(2000, 20));
    }

    #[test]
    fn client_table_is_bounded_and_hot_windows_stay() {
        let mut t = ClientWindows::default();
        // Four addresses fill the table; the next ones share the overflow window, whose
        // limit (1) the fifth uses up, so the sixth and later are refused like a hot one.
        for i in 0..4u8 {
            assert!(t.admit([10, 0, 0, i], u64::from(i), 1, 4));
        }
        assert!(t.admit([10, 0, 0, 4], 5, 1, 4));
        for i in 5..40u8 {
            assert!(!t.admit([10, 0, 0, i], 6, 1, 4), "address {i} escaped");
            assert!(t.exhausted([10, 0, 0, i], 6, 1));
        }
        assert_eq!(t.entries.len(), 4);
        assert!(t.exhausted([10, 0, 0, 0], 20, 1));
        // A second later every window is cold: a new address takes the oldest one's place.
        assert!(!t.exhausted([10, 0, 0, 42], 1009, 1));
        assert!(t.admit([10, 0, 0, 42], 1009, 1, 4));
        assert_eq!(t.entries.len(), 4);
        assert!(!t.entries.iter().any(|e| e.0 == [10, 0, 0, 0]));
        assert!(t.exhausted([10, 0, 0, 42], 1010, 1));
    }
}
