//! Legacy-era sessions (`Mcp-Session-Id`): created by `initialize`, ended by `DELETE`, by 30
//! minutes without a request, or by eviction when the table is full.
//!
//! Eviction never refuses a fresh client and spares the ones in use: the victim is an idle
//! session that never came back after its `initialize` if there is one (a client opening
//! sessions in a loop evicts its own abandoned ones), else the least recently used one.

use crate::mcp::guard::limits::RateWindow;
use crate::mcp::wire::tool::LogLevel;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write;
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
    pub(crate) window: RateWindow,
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

    pub(crate) fn get_mut(&mut self, id: &str) -> Option<&mut Session> {
        self.list.iter_mut().find(|s| s.id == id)
    }

    pub(crate) fn find_serial(&mut self, serial: u64) -> Option<&mut Session> {
        self.list.iter_mut().find(|s| s.serial == serial)
    }

    pub(crate) fn remove(&mut self, id: &str) -> Option<Session> {
        let i = self.list.iter().position(|s| s.id == id)?;
        Some(self.list.swap_remove(i))
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.list.len()
    }

    /// Creates a session with an id from `entropy`. When `cap` sessions exist, one for which
    /// `busy` is false is evicted (its serial is returned): the least recently used of those
    /// that never [`Session::returned`], else the least recently used; if all are busy,
    /// `TableFull`.
    pub(crate) fn create(
        &mut self,
        cap: usize,
        entropy: &mut dyn FnMut(&mut [u8]),
        version: &'static str,
        client_capabilities: Value,
        now_ms: u64,
        mut busy: impl FnMut(u64) -> bool,
    ) -> Result<(&Session, Option<u64>), TableFull> {
        let mut evicted = None;
        if self.list.len() >= cap.max(1) {
            let victim = self
                .list
                .iter()
                .enumerate()
                .filter(|(_, s)| !busy(s.serial))
                .min_by_key(|(_, s)| (s.returned, s.last_seen_ms))
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
            window: RateWindow::default(),
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
