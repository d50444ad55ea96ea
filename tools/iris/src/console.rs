//! What the machine's console (Z85C30 channel B) has transmitted: kept for tests and tools, and
//! echoed to the rig's stdout unless quiet. Shared across threads so a background rig's handle
//! can read it.

use std::collections::VecDeque;
use std::io::Write;
use std::sync::Mutex;

/// The log keeps at most this many bytes (the oldest are dropped beyond it).
pub const CONSOLE_LOG_MAX: usize = 16 << 20;
/// Spans of serial-only bytes kept at most (adjacent ones merge; the module writes one a boot).
const SERIAL_ONLY_SPANS_MAX: usize = 1024;

/// Who sees console output: everyone (the serial line and the console the kernel draws on the
/// screen), or only the serial line (ABI `serial_write`: the generated token).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seen {
    Everywhere,
    SerialOnly,
}

pub struct ConsoleLog {
    inner: Mutex<Inner>,
    echo: bool,
}

struct Inner {
    bytes: Vec<u8>,
    /// Bytes ever transmitted (the log holds the last `bytes.len()` of them).
    total: u64,
    /// The `[start, end)` spans, in bytes ever transmitted, the screen's console does not draw.
    serial_only: VecDeque<(u64, u64)>,
}

impl ConsoleLog {
    pub fn new(echo: bool) -> ConsoleLog {
        ConsoleLog {
            inner: Mutex::new(Inner {
                bytes: Vec::new(),
                total: 0,
                serial_only: VecDeque::new(),
            }),
            echo,
        }
    }

    pub fn transmit(&self, data: &[u8]) {
        self.transmit_seen(data, Seen::Everywhere)
    }

    /// Transmits `data`, which the screen's console draws only if `seen` is everywhere.
    pub fn transmit_seen(&self, data: &[u8], seen: Seen) {
        if let Ok(mut g) = self.inner.lock() {
            let start = g.total;
            g.bytes.extend_from_slice(data);
            g.total += data.len() as u64;
            if g.bytes.len() > CONSOLE_LOG_MAX {
                let cut = g.bytes.len() - CONSOLE_LOG_MAX / 2;
                g.bytes.drain(..cut);
            }
            if seen == Seen::SerialOnly && !data.is_empty() {
                let end = g.total;
                match g.serial_only.back_mut() {
                    Some(last) if last.1 == start => last.1 = end,
                    _ => g.serial_only.push_back((start, end)),
                }
                let held_from = g.total - g.bytes.len() as u64;
                while g.serial_only.front().is_some_and(|&(_, e)| e <= held_from)
                    || g.serial_only.len() > SERIAL_ONLY_SPANS_MAX
                {
                    g.serial_only.pop_front();
                }
            }
        }
        if self.echo {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(data);
            let _ = out.flush();
        }
    }

    pub fn bytes(&self) -> Vec<u8> {
        self.inner
            .lock()
            .map(|g| g.bytes.clone())
            .unwrap_or_default()
    }

    /// The bytes transmitted after the first `since` ever sent, at most the last `max` of them
    /// (and only what the log still holds), with the count of bytes ever sent they end at: what
    /// a viewer that has shown `since` bytes draws next.
    pub fn since(&self, since: u64, max: usize) -> (Vec<u8>, u64) {
        self.tail(since, max, false)
    }

    /// Like [`since`](Self::since), without the bytes only the serial line carries: what the
    /// console drawn on the screen shows next. `max` counts transmitted bytes, hidden or not.
    pub fn screen_since(&self, since: u64, max: usize) -> (Vec<u8>, u64) {
        self.tail(since, max, true)
    }

    /// The last `max` bytes after `since`, without the serial-only ones for the `screen`.
    fn tail(&self, since: u64, max: usize, screen: bool) -> (Vec<u8>, u64) {
        self.inner
            .lock()
            .map(|g| {
                let fresh = usize::try_from(g.total.saturating_sub(since)).unwrap_or(usize::MAX);
                let take = fresh.min(max).min(g.bytes.len());
                let first = g.total - take as u64;
                let tail = &g.bytes[g.bytes.len() - take..];
                if !screen {
                    return (tail.to_vec(), g.total);
                }
                let hidden: Vec<_> = g.serial_only.iter().filter(|&&(_, e)| e > first).collect();
                let shown = tail
                    .iter()
                    .zip(first..)
                    .filter(|&(_, at)| !hidden.iter().any(|&&(s, e)| (s..e).contains(&at)))
                    .map(|(&b, _)| b)
                    .collect();
                (shown, g.total)
            })
            .unwrap_or((Vec::new(), since))
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes()).into_owned()
    }

    pub fn total(&self) -> u64 {
        self.inner.lock().map(|g| g.total).unwrap_or(0)
    }

    pub fn contains(&self, needle: &str) -> bool {
        let n = needle.as_bytes();
        self.inner
            .lock()
            .map(|g| n.is_empty() || g.bytes.windows(n.len()).any(|w| w == n))
            .unwrap_or(false)
    }
}

#[cfg(test)]
mod tests {
    use super::{ConsoleLog, Seen};

    #[test]
    fn since_returns_only_what_a_viewer_has_not_shown() {
        let log = ConsoleLog::new(false);
        log.transmit(b"hello ");
        let (first, total) = log.since(0, 1024);
        assert_eq!((first.as_slice(), total), (&b"hello "[..], 6));
        log.transmit(b"world");
        assert_eq!(log.since(total, 1024), (b"world".to_vec(), 11));
        assert_eq!(log.since(total, 3), (b"rld".to_vec(), 11));
        assert_eq!(log.since(11, 1024), (Vec::new(), 11));
    }

    #[test]
    fn the_screen_never_sees_serial_only_bytes() {
        let log = ConsoleLog::new(false);
        log.transmit(b"token: ");
        log.transmit_seen(b"0123", Seen::SerialOnly);
        log.transmit_seen(b"abcd", Seen::SerialOnly);
        log.transmit(b" (serial line)\n");
        assert_eq!(log.text(), "token: 0123abcd (serial line)\n");
        assert_eq!(
            log.screen_since(0, 1024),
            (b"token:  (serial line)\n".to_vec(), 30)
        );
        // A viewer that drew part of the line, or replays only its tail, skips them too.
        assert_eq!(
            log.screen_since(9, 1024),
            (b" (serial line)\n".to_vec(), 30)
        );
        assert_eq!(log.screen_since(0, 20), (b" (serial line)\n".to_vec(), 30));
        assert_eq!(log.screen_since(0, 13), (b"serial line)\n".to_vec(), 30));
    }
}
