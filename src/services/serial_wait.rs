//! Waiting on the console: an incremental literal matcher over the serial ring's bytes, and
//! the bounded set of waiters.
//!
//! A waiter (a `serial.read` with `wait_ms`) feeds the matcher only the bytes that arrived
//! since its last look, so no byte is scanned twice however long it waits, and a match that
//! straddles two looks is still found: the matcher's whole memory is how much of the needle
//! the last bytes matched (Knuth–Morris–Pratt), a few bytes a waiter.
//!
//! Literal strings only, on purpose: the state stays O(needle), the work per byte amortised
//! O(1) with no backtracking an input could make expensive, and the code is small (a regular
//! expression engine would cost a sizeable share of the image budget).

use alloc::rc::Rc;
use alloc::vec::Vec;
use core::cell::{Cell, RefCell};
use irix7_kmem::share::{Claim, Share, Short};

/// Longest needle a waiter may look for, in bytes.
pub const NEEDLE_MAX: usize = 256;

/// Finds a literal byte string in a stream fed piece by piece.
#[derive(Clone, Debug)]
pub struct Literal {
    needle: Vec<u8>,
    /// `fail[i]`: the length of the longest proper prefix of `needle[..=i]` that is also its
    /// suffix.
    fail: Vec<u16>,
    /// Bytes of the needle the stream's last bytes match.
    matched: usize,
}

impl Literal {
    /// A matcher for `needle` (1 to [`NEEDLE_MAX`] bytes), or `None`.
    pub fn new(needle: &[u8]) -> Option<Self> {
        if needle.is_empty() || needle.len() > NEEDLE_MAX {
            return None;
        }
        let mut fail = alloc::vec![0u16; needle.len()];
        let mut k = 0usize;
        for i in 1..needle.len() {
            while k > 0 && needle.get(i) != needle.get(k) {
                k = usize::from(fail.get(k - 1).copied().unwrap_or(0));
            }
            if needle.get(i) == needle.get(k) {
                k += 1;
            }
            if let Some(f) = fail.get_mut(i) {
                *f = k as u16;
            }
        }
        Some(Literal {
            needle: needle.to_vec(),
            fail,
            matched: 0,
        })
    }

    pub fn len(&self) -> usize {
        self.needle.len()
    }

    pub fn is_empty(&self) -> bool {
        self.needle.is_empty()
    }

    /// Forgets a partial match: the bytes after the last piece fed are not the ones that
    /// follow it (the ring lost some).
    pub fn restart(&mut self) {
        self.matched = 0;
    }

    /// Feeds the bytes that follow the last piece, the first of them at absolute offset
    /// `at`. Returns the absolute offset where the first match starts (the matcher then
    /// restarts) or `None`.
    pub fn feed(&mut self, at: u32, bytes: &[u8]) -> Option<u32> {
        let n = self.needle.len();
        for (i, &b) in bytes.iter().enumerate() {
            while self.matched > 0 && self.needle.get(self.matched) != Some(&b) {
                self.matched = usize::from(self.fail.get(self.matched - 1).copied().unwrap_or(0));
            }
            if self.needle.get(self.matched) == Some(&b) {
                self.matched += 1;
            }
            if self.matched == n {
                self.matched = 0;
                let end = u64::from(at) + i as u64 + 1;
                return u32::try_from(end - n as u64).ok();
            }
        }
        None
    }
}

/// The waiters on the console, bounded: each holds a connection for as long as it waits, so
/// their number is capped below the socket pool (set at init, see `net::budget`), and shared
/// between their owners by `irix7_kmem::share` (each privilege above observe keeps a place
/// lesser tokens cannot take; one owner holds at most half).
#[derive(Debug, Default)]
pub struct Waiters {
    share: Share,
    held: Places,
    next: Cell<u64>,
}

/// One waiter's place; given back on drop (the wait ended, was cancelled, or its client left).
#[derive(Debug)]
pub struct WaiterSlot {
    id: u64,
    held: Places,
}

/// The places held, each by its number and its holder's claim.
type Places = Rc<RefCell<Vec<(u64, Claim<u64>)>>>;

impl Waiters {
    pub fn new(limit: usize) -> Self {
        Waiters {
            share: Share {
                total: limit,
                per_owner: (limit / 2).max(1),
            },
            held: Rc::default(),
            next: Cell::new(0),
        }
    }

    pub fn limit(&self) -> usize {
        self.share.total
    }

    /// Waiters holding a place now.
    pub fn held(&self) -> usize {
        self.held.borrow().len()
    }

    /// A place for `claim`, or why not (see `irix7_kmem::share`). Its owner's clients count as
    /// one: a wait is a running call, which the owner's other clients need room beside, so no
    /// client of it takes more than its owner's half by coming from many connections.
    pub fn take(&self, claim: Claim<u64>) -> Result<WaiterSlot, Short> {
        let claim = Claim { client: 0, ..claim };
        let mut held = self.held.borrow_mut();
        self.share.admits(claim, held.iter().map(|h| h.1))?;
        let id = self.next.get();
        self.next.set(id.wrapping_add(1));
        held.push((id, claim));
        Ok(WaiterSlot {
            id,
            held: self.held.clone(),
        })
    }
}

impl Drop for WaiterSlot {
    fn drop(&mut self) {
        if let Ok(mut held) = self.held.try_borrow_mut() {
            held.retain(|h| h.0 != self.id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn find_all(needle: &[u8], hay: &[u8], piece: usize) -> Vec<u32> {
        let mut m = Literal::new(needle).unwrap();
        let mut found = Vec::new();
        let mut at = 0usize;
        while at < hay.len() {
            let end = (at + piece).min(hay.len());
            let mut from = at;
            // A piece may hold several matches: feed the rest after each.
            while let Some(off) = m.feed(from as u32, &hay[from..end]) {
                found.push(off);
                from = off as usize + needle.len();
                if from >= end {
                    break;
                }
            }
            at = end;
        }
        found
    }

    #[test]
    fn finds_a_match_that_straddles_pieces_of_every_size() {
        let hay = b"booting... login: ok\nindy login: root\n";
        let want = hay.windows(6).position(|w| w == b"login:").unwrap() as u32;
        for piece in 1..hay.len() {
            let mut m = Literal::new(b"login:").unwrap();
            let mut got = None;
            for (n, c) in hay.chunks(piece).enumerate() {
                if let Some(off) = m.feed((n * piece) as u32, c) {
                    got = Some(off);
                    break;
                }
            }
            assert_eq!(got, Some(want), "piece {piece}");
        }
    }

    #[test]
    fn self_overlapping_needles_are_not_missed() {
        // A naive matcher that restarts after a mismatch misses these.
        assert_eq!(find_all(b"aab", b"aaab", 1), [1]);
        assert_eq!(find_all(b"abab", b"ababab", 2), [0]);
        assert_eq!(find_all(b"abcabd", b"abcabcabd", 3), [3]);
        assert_eq!(find_all(b"xx", b"xxxx", 4), [0, 2]);
    }

    #[test]
    fn agrees_with_a_plain_search_on_many_inputs() {
        let mut seed = 7u32;
        for _ in 0..300 {
            let needle_len = 1 + (seed as usize >> 3) % 4;
            let mut next = || {
                seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                (seed >> 16) as u8 % 3 + b'a'
            };
            let needle: Vec<u8> = (0..needle_len).map(|_| next()).collect();
            let hay: Vec<u8> = (0..40).map(|_| next()).collect();
            let want = hay
                .windows(needle.len())
                .position(|w| w == &needle[..])
                .map(|p| p as u32);
            for piece in [1, 3, 7, 40] {
                let got = find_all(&needle, &hay, piece).first().copied();
                assert_eq!(got, want, "{needle:?} in {hay:?} by {piece}");
            }
        }
    }

    #[test]
    fn offsets_are_absolute_and_restart_forgets_a_partial_match() {
        let mut m = Literal::new(b"READY").unwrap();
        assert_eq!(m.feed(1000, b"xxREA"), None);
        assert_eq!(m.feed(1005, b"DY"), Some(1002));
        assert_eq!(m.feed(2000, b"REA"), None);
        m.restart();
        assert_eq!(m.feed(3000, b"DY"), None, "the ring lost the bytes between");
    }

    #[test]
    fn needles_are_bounded() {
        assert!(Literal::new(b"").is_none());
        assert!(Literal::new(&[b'a'; NEEDLE_MAX + 1]).is_none());
        assert_eq!(Literal::new(&[b'a'; NEEDLE_MAX]).unwrap().len(), NEEDLE_MAX);
    }

    #[test]
    fn waiter_places_are_bounded_and_come_back_on_drop() {
        // Two owners of the same rank on a pool too small to reserve anything.
        let claim = |owner| Claim {
            owner,
            rank: 2,
            client: 1,
        };
        let w = Waiters::new(2);
        let a = w.take(claim(1)).unwrap();
        let b = w.take(claim(2)).unwrap();
        assert!(w.take(claim(3)).is_err());
        assert_eq!(w.held(), 2);
        drop(a);
        let c = w.take(claim(3)).unwrap();
        drop((b, c));
        assert_eq!(w.held(), 0);
        assert!(Waiters::new(0).take(claim(1)).is_err());
    }

    #[test]
    fn observers_holding_their_places_leave_the_administrator_one() {
        let observer = |owner, client| Claim {
            owner,
            rank: 0,
            client,
        };
        let w = Waiters::new(4);
        // Two observe tokens, each from several connections: together they hold two places.
        let held: Vec<_> = (0..8)
            .filter_map(|i| w.take(observer(i % 2, i)).ok())
            .collect();
        assert_eq!(held.len(), 2);
        let admin = Claim {
            owner: 99,
            rank: 2,
            client: 1,
        };
        let mine = w.take(admin).expect("the administrator waits");
        assert_eq!(w.take(observer(5, 5)).err(), Some(Short::Tier));
        drop((held, mine));
        assert_eq!(w.held(), 0);
    }
}
