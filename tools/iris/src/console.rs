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
