//! What the machine's console (Z85C30 channel B) has transmitted: kept for tests and tools, and
//! echoed to the rig's stdout unless quiet. Shared across threads so a background rig's handle
//! can read it.

use std::io::Write;
use std::sync::Mutex;

/// The log keeps at most this many bytes (the oldest are dropped beyond it).
pub const CONSOLE_LOG_MAX: usize = 16 << 20;

pub struct ConsoleLog {
    inner: Mutex<Inner>,
    echo: bool,
}

struct Inner {
    bytes: Vec<u8>,
    /// Bytes ever transmitted (the log holds the last `bytes.len()` of them).
    total: u64,
}

impl ConsoleLog {
    pub fn new(echo: bool) -> ConsoleLog {
        ConsoleLog {
            inner: Mutex::new(Inner {
                bytes: Vec::new(),
                total: 0,
            }),
            echo,
        }
    }

    pub fn transmit(&self, data: &[u8]) {
        if let Ok(mut g) = self.inner.lock() {
            g.bytes.extend_from_slice(data);
            g.total += data.len() as u64;
            if g.bytes.len() > CONSOLE_LOG_MAX {
                let cut = g.bytes.len() - CONSOLE_LOG_MAX / 2;
                g.bytes.drain(..cut);
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
        self.inner
            .lock()
            .map(|g| {
                let fresh = usize::try_from(g.total.saturating_sub(since)).unwrap_or(usize::MAX);
                let take = fresh.min(max).min(g.bytes.len());
                (g.bytes[g.bytes.len() - take..].to_vec(), g.total)
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
    use super::ConsoleLog;

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
}
