//! What every event stream of the protocol shares, a call's and the GET stream alike: how long
//! one may stay silent, and the sink its lines are formatted into.

use alloc::vec::Vec;
use core::fmt::Write;

/// Longest silence on an event stream: then a comment line goes out, which keeps proxies and
/// tunnels from dropping it.
pub(crate) const KEEP_ALIVE_MS: u64 = 5_000;

/// `core::fmt::Write` into a byte buffer: an event's lines formatted straight into what is
/// sent.
pub(crate) struct Utf8Sink<'a>(pub(crate) &'a mut Vec<u8>);

impl Write for Utf8Sink<'_> {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}
