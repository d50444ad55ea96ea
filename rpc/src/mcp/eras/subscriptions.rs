//! Resource subscriptions: which resources can be watched ([`WatchDef`]), which legacy
//! sessions watch which, and each session's bounded log of `notifications/resources/updated`
//! events that its `GET /mcp` stream sends and replays (`get_stream`).
//!
//! Changes are found by polling: a watched resource's version function runs at most once per
//! its interval, and only while some session watches it, so however often the resource
//! changes a session gets at most one update for it per interval (coalescing). The log keeps
//! the last [`EVENTS_KEPT`] events of each session; a client resuming from an event that has
//! fallen out of it gets one update for each resource it watches instead (see `resume`).

use crate::http::Response;
use crate::jsonrpc::RpcError;
use crate::mcp::eras::session::Sessions;
use crate::mcp::guard::authority::{Door, Owner};
use crate::mcp::guard::request::Cx;
use crate::mcp::wire::reply;
use alloc::collections::VecDeque;
use alloc::rc::Rc;
use alloc::vec::Vec;
use core::cell::RefCell;
use irix7_kmem::share::{Claim, Share};
use serde_json::json;

/// Events kept per session for `Last-Event-ID` replay: 16 bytes each.
const EVENTS_KEPT: usize = 16;
/// Watchable resources at most (a session's subscriptions are a bit mask).
const MAX_WATCHES: usize = 32;

/// A resource that can be subscribed to. `version` returns a value that changes whenever the
/// resource's contents do (a byte counter, a digest); it is called at most once per
/// `interval_ms`, which is also the shortest time between two updates of the resource.
pub struct WatchDef<C> {
    pub uri: &'static str,
    pub interval_ms: u64,
    pub version: fn(&mut C) -> u64,
}

copy_for_any_context!(WatchDef);

/// One watched resource's last seen version.
#[derive(Clone, Copy, Default)]
struct Seen {
    version: Option<u64>,
    checked_ms: Option<u64>,
}

/// A session's subscriptions and event log.
pub(crate) struct Feed {
    pub(crate) serial: u64,
    /// Bit `i`: the session watches watch `i`.
    pub(crate) mask: u32,
    /// `(sequence, watch index)`, oldest first, at most [`EVENTS_KEPT`].
    pub(crate) events: VecDeque<(u64, u8)>,
    /// The next event's sequence number (from 1: `Last-Event-ID` 0 means "before all").
    pub(crate) next_seq: u64,
    /// The stream that sends this feed now (0: none); a newer GET takes over.
    pub(crate) stream: u64,
}

impl Feed {
    fn push(&mut self, watch: u8) {
        if self.events.len() >= EVENTS_KEPT {
            self.events.pop_front();
        }
        self.events.push_back((self.next_seq, watch));
        self.next_seq += 1;
    }

    /// Where a stream resuming after event `last` starts: the sequence of the next event to
    /// send. When events after `last` have fallen out of the log, one fresh update per
    /// watched resource is logged first and the stream starts with them: an update says only
    /// "read it again", so one per resource stands for any number lost.
    pub(crate) fn resume(&mut self, last: Option<u64>) -> u64 {
        let Some(last) = last.filter(|l| *l < self.next_seq) else {
            return self.next_seq;
        };
        let oldest = self.events.front().map_or(self.next_seq, |e| e.0);
        if last + 1 >= oldest {
            return last + 1;
        }
        let start = self.next_seq;
        for i in 0..MAX_WATCHES {
            if self.mask & (1 << i) != 0 {
                self.push(i as u8);
            }
        }
        start
    }
}

/// Subscriptions of every session, and the streams open on them.
#[derive(Default)]
pub(crate) struct Hub {
    seen: Vec<Seen>,
    pub(crate) feeds: Vec<Feed>,
    /// Event streams open now (`GET /mcp`, `subscriptions/listen`), each with its number and
    /// holder: bounded by `Limits::event_streams`, shared between owners (see [`Hub::admits`]).
    open: Vec<(u64, Claim<Owner>)>,
    next_stream: u64,
}

impl Hub {
    pub(crate) fn feed(&mut self, serial: u64) -> Option<&mut Feed> {
        self.feeds.iter_mut().find(|f| f.serial == serial)
    }

    /// The session's feed, created empty if it has none (at most one per session).
    pub(crate) fn feed_or_new(&mut self, serial: u64) -> &mut Feed {
        let i = match self.feeds.iter().position(|f| f.serial == serial) {
            Some(i) => i,
            None => {
                self.feeds.push(Feed {
                    serial,
                    mask: 0,
                    events: VecDeque::new(),
                    next_seq: 1,
                    stream: 0,
                });
                self.feeds.len() - 1
            }
        };
        &mut self.feeds[i]
    }

    /// The session is gone: its subscriptions and log too (its stream ends on its next poll).
    pub(crate) fn forget(&mut self, serial: u64) {
        self.feeds.retain(|f| f.serial != serial);
    }

    /// Whether `claim` may open one more of at most `limit` streams: as `irix7_kmem::share`
    /// divides them (each privilege above observe keeps a quarter, one owner holds at most
    /// half, a quiet client of it its equal part), so that streams a lesser token holds open
    /// (reading them or not) leave the administrator one.
    pub(crate) fn admits(&self, claim: Claim<Owner>, limit: usize) -> bool {
        let share = Share {
            total: limit,
            per_owner: (limit / 2).max(1),
        };
        share.admits(claim, self.open.iter().map(|o| o.1)).is_ok()
    }

    /// A new stream's number, counted as open for `claim`.
    pub(crate) fn open_stream(&mut self, claim: Claim<Owner>) -> u64 {
        self.next_stream += 1;
        self.open.push((self.next_stream, claim));
        self.next_stream
    }

    pub(crate) fn close_stream(&mut self, serial: u64, stream: u64) {
        self.open.retain(|o| o.0 != stream);
        if let Some(f) = self.feed(serial)
            && f.stream == stream
        {
            f.stream = 0;
        }
    }

    /// Runs the version function of each watched resource whose interval has passed and logs
    /// an update for each session watching one that changed. The first look at a resource
    /// only takes its version. `ctx` already borrowed elsewhere means "look next time".
    pub(crate) fn check<C>(&mut self, defs: &[WatchDef<C>], ctx: &RefCell<C>, now_ms: u64) {
        self.seen.resize(defs.len(), Seen::default());
        for (i, def) in defs.iter().enumerate().take(MAX_WATCHES) {
            let bit = 1u32 << i;
            let Some(seen) = self.seen.get_mut(i) else {
                continue;
            };
            if !self.feeds.iter().any(|f| f.mask & bit != 0) {
                // Unwatched: the next subscriber starts from a fresh version.
                *seen = Seen::default();
                continue;
            }
            if seen
                .checked_ms
                .is_some_and(|t| now_ms.saturating_sub(t) < def.interval_ms)
            {
                continue;
            }
            let Ok(mut c) = ctx.try_borrow_mut() else {
                continue;
            };
            let v = (def.version)(&mut c);
            drop(c);
            seen.checked_ms = Some(now_ms);
            let changed = seen.version.is_some_and(|old| old != v);
            seen.version = Some(v);
            if changed {
                for f in self.feeds.iter_mut().filter(|f| f.mask & bit != 0) {
                    f.push(i as u8);
                }
            }
        }
    }
}

/// The server's watchable resources and the hub they feed.
pub(crate) struct Subscriptions<C> {
    pub(crate) defs: Vec<WatchDef<C>>,
    pub(crate) hub: Rc<RefCell<Hub>>,
}

impl<C> Default for Subscriptions<C> {
    fn default() -> Self {
        Subscriptions {
            defs: Vec::new(),
            hub: Rc::new(RefCell::new(Hub::default())),
        }
    }
}

impl<C> Clone for Subscriptions<C> {
    /// The same resources, with a hub of its own (a fresh server has no sessions).
    fn clone(&self) -> Self {
        Subscriptions {
            defs: self.defs.clone(),
            hub: Rc::default(),
        }
    }
}

impl<C: 'static> Subscriptions<C> {
    /// Makes resources subscribable (a later duplicate URI is ignored), at most 32.
    pub(crate) fn register(&mut self, table: &[WatchDef<C>]) {
        for def in table {
            let subs = &mut self.defs;
            if subs.len() < MAX_WATCHES && !subs.iter().any(|d| d.uri == def.uri) {
                subs.push(*def);
            }
        }
    }

    /// Whether `resources/subscribe` is real here: something can be watched.
    pub(crate) fn offered(&self) -> bool {
        !self.defs.is_empty()
    }

    /// Legacy `resources/subscribe` and `resources/unsubscribe` of session `serial`.
    pub(crate) fn subscribe(&self, serial: u64, cx: &Cx<'_>, on: bool) -> Response {
        let Some(uri) = cx.params.get("uri").and_then(|u| u.as_str()) else {
            return reply::error(
                200,
                Some(cx.id),
                &RpcError::invalid_params("Invalid params: uri is required"),
            );
        };
        let uri = &*uri;
        let Some(i) = self.defs.iter().position(|d| d.uri == uri) else {
            let mut can = alloc::string::String::new();
            for d in &self.defs {
                if !can.is_empty() {
                    can.push_str(", ");
                }
                can.push_str(d.uri);
            }
            let msg = alloc::format!(
                "Invalid params: {uri} cannot be subscribed to; these can: {}",
                if can.is_empty() { "none" } else { &can }
            );
            return reply::error(200, Some(cx.id), &RpcError::invalid_params(msg));
        };
        if on
            && let Some(def) = self.defs.get(i)
            && let Err(denied) = cx.authority.check_door(Door::Watch(def.uri))
        {
            let err = crate::mcp::guard::authority::forbidden(&denied);
            return reply::error(200, Some(cx.id), &err);
        }
        let mut hub = self.hub.borrow_mut();
        if on {
            hub.feed_or_new(serial).mask |= 1 << i;
        } else if let Some(f) = hub.feed(serial) {
            f.mask &= !(1 << i);
        }
        drop(hub);
        reply::result(cx.id, &json!({}))
    }

    /// A session whose event stream is open is in use: it neither expires nor is evicted
    /// first, however long its client only listens.
    pub(crate) fn touch_streamed(&self, sessions: &mut Sessions, now_ms: u64) {
        let hub = self.hub.borrow();
        for f in hub.feeds.iter().filter(|f| f.stream != 0) {
            if let Some(s) = sessions.find_serial(f.serial) {
                s.last_seen_ms = now_ms;
            }
        }
    }

    /// A session ended: drop its subscriptions.
    pub(crate) fn forget(&self, serial: u64) {
        self.hub.borrow_mut().forget(serial);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn version(c: &mut u64) -> u64 {
        *c
    }

    const SERIAL: WatchDef<u64> = WatchDef {
        uri: "x://serial",
        interval_ms: 500,
        version,
    };

    #[test]
    fn changes_are_logged_once_per_interval_for_watching_sessions_only() {
        let ctx = RefCell::new(0u64);
        let mut hub = Hub::default();
        hub.feed_or_new(1).mask = 1;
        hub.feed_or_new(2);
        hub.check(&[SERIAL], &ctx, 0); // the first look takes the version
        *ctx.borrow_mut() = 5;
        hub.check(&[SERIAL], &ctx, 100); // within the interval: not looked at
        assert!(hub.feed(1).unwrap().events.is_empty());
        hub.check(&[SERIAL], &ctx, 500);
        *ctx.borrow_mut() = 6;
        hub.check(&[SERIAL], &ctx, 600);
        hub.check(&[SERIAL], &ctx, 999);
        assert_eq!(
            hub.feed(1).unwrap().events.iter().collect::<Vec<_>>(),
            [&(1, 0)]
        );
        hub.check(&[SERIAL], &ctx, 1000);
        assert_eq!(hub.feed(1).unwrap().events.len(), 2);
        assert!(hub.feed(2).unwrap().events.is_empty());
    }

    #[test]
    fn a_busy_context_is_looked_at_later() {
        let ctx = RefCell::new(0u64);
        let mut hub = Hub::default();
        hub.feed_or_new(1).mask = 1;
        hub.check(&[SERIAL], &ctx, 0);
        *ctx.borrow_mut() = 1;
        let held = ctx.borrow_mut();
        hub.check(&[SERIAL], &ctx, 500);
        drop(held);
        hub.check(&[SERIAL], &ctx, 501);
        assert_eq!(hub.feed(1).unwrap().events.len(), 1);
    }

    #[test]
    fn the_log_is_bounded_and_resuming_past_it_resends_one_update_per_resource() {
        let mut hub = Hub::default();
        let f = hub.feed_or_new(1);
        f.mask = 0b101;
        for _ in 0..EVENTS_KEPT + 4 {
            f.push(0);
        }
        assert_eq!(f.events.len(), EVENTS_KEPT);
        assert_eq!(f.events.front().unwrap().0, 5);
        // Event 4 is still known to the client; 5 onwards are in the log.
        assert_eq!(f.resume(Some(4)), 5);
        assert_eq!(f.resume(Some(19)), 20);
        // Fresh: only what happens from now on.
        assert_eq!(f.resume(None), 21);
        // An id from the future (another server's) counts as none.
        assert_eq!(f.resume(Some(99)), 21);
        // Events 2..=4 are lost: one update per watched resource stands for them.
        assert_eq!(f.resume(Some(1)), 21);
        let tail: Vec<_> = f.events.iter().rev().take(2).copied().collect();
        assert_eq!(tail, [(22, 2), (21, 0)]);
        assert_eq!(f.events.len(), EVENTS_KEPT);
    }

    #[test]
    fn forgetting_a_session_drops_its_feed_and_unwatched_resources_restart() {
        let ctx = RefCell::new(0u64);
        let mut hub = Hub::default();
        hub.feed_or_new(1).mask = 1;
        hub.check(&[SERIAL], &ctx, 0);
        hub.forget(1);
        assert!(hub.feed(1).is_none());
        *ctx.borrow_mut() = 3;
        hub.check(&[SERIAL], &ctx, 1000);
        // A new subscriber does not hear of changes from before it subscribed.
        hub.feed_or_new(2).mask = 1;
        hub.check(&[SERIAL], &ctx, 2000);
        assert!(hub.feed(2).unwrap().events.is_empty());
    }
}
