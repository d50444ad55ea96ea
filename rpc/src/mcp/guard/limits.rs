//! Rate and concurrency limits, counted per owner and shared fairly between its clients, and
//! the table of tool calls in flight (which is also how a
//! legacy `notifications/cancelled` or a session's end reaches a running call).

use crate::jsonrpc::Id;
use crate::mcp::guard::authority::{Client, Key};
use alloc::collections::VecDeque;
use alloc::rc::{Rc, Weak};
use alloc::vec::Vec;
use core::cell::Cell;
use irix7_kmem::share::fair_rate;
use serde_json::Value;

/// Request times in the last second, each with the client that sent it.
#[derive(Debug, Default)]
pub(crate) struct RateWindow {
    stamps: VecDeque<(u64, u64)>,
}

impl RateWindow {
    /// Counts a request of `client` at `now_ms` if the window has room for it: fewer than
    /// `limit` in the second before, or the client below its equal part of them (see
    /// `irix7_kmem::share::fair_rate`).
    pub(crate) fn admit(&mut self, now_ms: u64, client: u64, limit: usize) -> bool {
        self.forget_before(now_ms);
        if !fair_rate(self.stamps.iter().map(|s| s.1), client, limit) {
            return false;
        }
        self.stamps.push_back((now_ms, client));
        true
    }

    /// Whether nothing was counted in the second before `now_ms`: forgetting the window
    /// changes no verdict.
    fn cold(&self, now_ms: u64) -> bool {
        self.stamps
            .back()
            .is_none_or(|&(t, _)| now_ms.saturating_sub(t) >= 1000)
    }

    /// Whether `limit` requests arrived in the second before `now_ms` (nothing is counted).
    fn full(&mut self, now_ms: u64, limit: usize) -> bool {
        self.forget_before(now_ms);
        self.stamps.len() >= limit
    }

    fn forget_before(&mut self, now_ms: u64) {
        while self
            .stamps
            .front()
            .is_some_and(|&(t, _)| now_ms.saturating_sub(t) >= 1000)
        {
            self.stamps.pop_front();
        }
    }
}

/// Rate windows by owner (a token, an address), bounded: when the table is full, a new owner
/// takes the place of the least recently seen one whose window is empty (forgetting it
/// changes no verdict); when every window is hot, new owners share one overflow window with
/// the same limit, so no number of owners escapes the limit by pushing windows out.
#[derive(Debug)]
pub(crate) struct Windows<K> {
    entries: Vec<(K, u64, RateWindow)>,
    overflow: RateWindow,
}

impl<K> Default for Windows<K> {
    fn default() -> Self {
        Windows {
            entries: Vec::new(),
            overflow: RateWindow::default(),
        }
    }
}

impl<K: Copy + Eq> Windows<K> {
    /// Whether `key` already used up its `limit` in the last second (nothing is counted).
    /// A key without a window of its own is judged by the overflow window.
    pub(crate) fn exhausted(&mut self, key: K, now_ms: u64, limit: usize) -> bool {
        match self.entries.iter_mut().find(|e| e.0 == key) {
            Some(e) => e.2.full(now_ms, limit),
            None => self.overflow.full(now_ms, limit),
        }
    }

    /// Counts a request of `key`'s `client` if its window (at most `cap` are kept) has room.
    pub(crate) fn admit(
        &mut self,
        key: K,
        client: u64,
        now_ms: u64,
        limit: usize,
        cap: usize,
    ) -> bool {
        if let Some(e) = self.entries.iter_mut().find(|e| e.0 == key) {
            e.1 = now_ms;
            return e.2.admit(now_ms, client, limit);
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
                None => return self.overflow.admit(now_ms, client, limit),
            }
        }
        let mut w = RateWindow::default();
        let ok = w.admit(now_ms, client, limit);
        self.entries.push((key, now_ms, w));
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

    /// Whether `key` may start one more call: its owner runs fewer than `per_owner`. No
    /// equal parts between the owner's clients here: in the 2026-07-28 era a client is a
    /// connection, which runs one call at a time, so every new connection would be below its
    /// part. A token's long calls are bounded further by the pools they wait on (console
    /// waiters, two a token), which leave its other clients room.
    pub(crate) fn admits(&mut self, key: Key, per_owner: usize) -> bool {
        let owner = key.owner;
        self.live()
            .filter(|c| c.key.owner == owner && !c.cancelled.get())
            .count()
            < per_owner
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

    /// Cancels every call of `client` (its session ended).
    pub(crate) fn cancel_all(&mut self, client: Client) {
        for c in self.live() {
            if c.key.client == client {
                c.cancelled.set(true);
            }
        }
    }

    /// Whether `client` has calls in flight.
    pub(crate) fn busy(&mut self, client: Client) -> bool {
        self.live().any(|c| c.key.client == client)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_admits_limit_per_rolling_second() {
        let mut w = RateWindow::default();
        for i in 0..20 {
            assert!(w.admit(1000 + i, 7, 20));
        }
        assert!(!w.admit(1500, 7, 20));
        assert!(!w.admit(1999, 7, 20));
        assert!(w.admit(2000, 7, 20));
    }

    #[test]
    fn a_full_window_still_has_room_for_a_quiet_sibling() {
        let mut w = RateWindow::default();
        for i in 0..20 {
            assert!(w.admit(1000 + i, 1, 20));
        }
        assert!(!w.admit(1100, 1, 20));
        let quiet = (0..30).filter(|i| w.admit(1100 + i, 2, 20)).count();
        assert_eq!(quiet, 10, "the quiet client's equal part of the limit");
        assert!(!w.admit(1200, 1, 20));
    }

    #[test]
    fn the_table_is_bounded_and_hot_windows_stay() {
        let mut t = Windows::default();
        // Four addresses fill the table; the next ones share the overflow window, whose
        // limit (1) the fifth uses up, so the sixth and later are refused like a hot one.
        for i in 0..4u8 {
            assert!(t.admit([10, 0, 0, i], 0, u64::from(i), 1, 4));
        }
        assert!(t.admit([10, 0, 0, 4], 0, 5, 1, 4));
        for i in 5..40u8 {
            assert!(!t.admit([10, 0, 0, i], 0, 6, 1, 4), "address {i} escaped");
            assert!(t.exhausted([10, 0, 0, i], 6, 1));
        }
        assert_eq!(t.entries.len(), 4);
        assert!(t.exhausted([10, 0, 0, 0], 20, 1));
        // A second later every window is cold: a new address takes the oldest one's place.
        assert!(!t.exhausted([10, 0, 0, 42], 1009, 1));
        assert!(t.admit([10, 0, 0, 42], 0, 1009, 1, 4));
        assert_eq!(t.entries.len(), 4);
        assert!(!t.entries.iter().any(|e| e.0 == [10, 0, 0, 0]));
        assert!(t.exhausted([10, 0, 0, 42], 1010, 1));
    }
}
