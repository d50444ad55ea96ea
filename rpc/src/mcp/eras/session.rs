//! Legacy-era sessions (`Mcp-Session-Id`): created by `initialize`, ended by `DELETE`, by 30
//! minutes without a request, or by eviction when the table is full.
//!
//! A session belongs to the owner (token) that opened it: another owner is told it does not
//! exist. Owners share the table as `irix7_kmem::share` says: each holds at most half of it,
//! and each rank above the lowest keeps a quarter that lower ranks cannot fill.
//!
//! Eviction spares the sessions in use and never reaches above the newcomer: an owner past
//! its share evicts one of its own idle sessions, and a full table one idle session of the
//! newcomer's rank or below. Sessions that never came back after their `initialize` go first
//! (a client opening sessions in a loop evicts its own abandoned ones), then the lowest rank,
//! then the least recently used.

use crate::mcp::guard::authority::{Client, Owner};
use crate::mcp::wire::tool::LogLevel;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write;
use irix7_kmem::share::{Share, Short};
use serde_json::Value;

/// One legacy session.
#[derive(Debug)]
pub(crate) struct Session {
    pub(crate) id: String,
    /// Never reused: names the session in limit keys and event ids.
    pub(crate) serial: u64,
    pub(crate) version: &'static str,
    pub(crate) last_seen_ms: u64,
    /// A request named the session after its `initialize`: a client is using it.
    pub(crate) returned: bool,
    pub(crate) log_level: Option<LogLevel>,
    pub(crate) client_capabilities: Value,
    /// Who opened it: no other owner may use, read or end it.
    pub(crate) owner: Owner,
    /// Counter of SSE streams opened in this session (for unique event ids).
    pub(crate) streams: u64,
}

/// Why a session could not be created.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct TableFull;

#[derive(Debug, Default)]
pub(crate) struct Sessions {
    list: Vec<Session>,
    next_serial: u64,
}

impl Sessions {
    /// Drops sessions idle for `idle_ms` or more; returns their serials.
    pub(crate) fn expire(&mut self, now_ms: u64, idle_ms: u64) -> Vec<u64> {
        let mut gone = Vec::new();
        self.list.retain(|s| {
            let keep = now_ms.saturating_sub(s.last_seen_ms) < idle_ms;
            if !keep {
                gone.push(s.serial);
            }
            keep
        });
        gone
    }

    /// `owner`'s session `id` (another owner's is not found).
    pub(crate) fn get_mut(&mut self, id: &str, owner: Owner) -> Option<&mut Session> {
        self.list
            .iter_mut()
            .find(|s| s.id == id && s.owner == owner)
    }

    pub(crate) fn find_serial(&mut self, serial: u64) -> Option<&mut Session> {
        self.list.iter_mut().find(|s| s.serial == serial)
    }

    /// Ends `owner`'s session `id` (another owner's is not found).
    pub(crate) fn remove(&mut self, id: &str, owner: Owner) -> Option<Session> {
        let i = self
            .list
            .iter()
            .position(|s| s.id == id && s.owner == owner)?;
        Some(self.list.swap_remove(i))
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.list.len()
    }

    /// Creates a session of `owner` with an id from `entropy`. When the owner has its share
    /// of `cap` sessions, or the table is full, one for which `busy` is false is evicted (its
    /// serial is returned; see the module doc for which); if none may go, `TableFull`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn create(
        &mut self,
        cap: usize,
        owner: Owner,
        entropy: &mut dyn FnMut(&mut [u8]),
        version: &'static str,
        client_capabilities: Value,
        now_ms: u64,
        mut busy: impl FnMut(u64) -> bool,
    ) -> Result<(&Session, Option<u64>), TableFull> {
        let share = Share {
            total: cap.max(1),
            per_owner: (cap / 2).max(1),
        };
        // All of an owner's sessions count as one client: past its share an owner evicts
        // its own, it is not let past by the share's equal parts.
        let claim = |s: &Session| s.owner.claim(Client::Session(0));
        let want = owner.claim(Client::Session(0));
        let room = share.admits(want, self.list.iter().map(claim));
        let full = self.list.len() >= share.total;
        let mut evicted = None;
        if room.is_err() || full {
            let own_only = room == Err(Short::Owner);
            let victim = self
                .list
                .iter()
                .enumerate()
                .filter(|(_, s)| {
                    if own_only {
                        s.owner == owner
                    } else {
                        s.owner.rank <= owner.rank
                    }
                })
                .filter(|(_, s)| !busy(s.serial))
                .min_by_key(|(_, s)| (s.returned, s.owner.rank, s.last_seen_ms))
                .map(|(i, _)| i)
                .ok_or(TableFull)?;
            evicted = Some(self.list.swap_remove(victim).serial);
        }
        let serial = self.next_serial;
        self.next_serial += 1;
        let mut bytes = [0u8; 16];
        entropy(&mut bytes);
        // The serial suffix keeps ids unique even if the entropy source repeats itself.
        let mut id = String::with_capacity(40);
        for b in bytes {
            let _ = write!(id, "{b:02x}");
        }
        let _ = write!(id, "-{serial:x}");
        self.list.push(Session {
            id,
            serial,
            version,
            last_seen_ms: now_ms,
            returned: false,
            log_level: None,
            client_capabilities,
            owner,
            streams: 0,
        });
        let s = self.list.last().ok_or(TableFull)?;
        Ok((s, evicted))
    }
}

/// Whether a header value can be a session id: visible ASCII only, bounded.
pub(crate) fn plausible_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 128 && id.bytes().all(|b| (0x21..=0x7e).contains(&b))
}
