//! A command's output: bytes up to a cap, then only counted, so a command can never take more
//! memory than the caller allowed. Growth goes through `try_reserve`: a heap that cannot hold
//! more ends the output as truncated instead of aborting the module.

use alloc::vec::Vec;

#[derive(Debug)]
pub struct Output {
    buf: Vec<u8>,
    cap: usize,
    truncated: bool,
}

impl Output {
    /// An empty output that keeps at most `cap` bytes.
    pub fn new(cap: usize) -> Self {
        Output {
            buf: Vec::new(),
            cap,
            truncated: false,
        }
    }

    /// Appends what fits; the rest is dropped and the output marked truncated.
    pub fn push(&mut self, bytes: &[u8]) {
        let n = bytes.len().min(self.room());
        if n < bytes.len() {
            self.truncated = true;
        }
        let Some(part) = bytes.get(..n) else {
            return;
        };
        // Grow by doubling, but never past the cap: an 8 MiB output never reserves 16 MiB.
        if self.buf.capacity() - self.buf.len() < n {
            let grow = n.max(self.buf.len()).min(self.room());
            if self.buf.try_reserve_exact(grow).is_err() {
                self.truncated = true;
                self.cap = self.buf.len();
                return;
            }
        }
        self.buf.extend_from_slice(part);
    }

    pub fn push_str(&mut self, s: &str) {
        self.push(s.as_bytes());
    }

    /// Bytes that still fit.
    pub fn room(&self) -> usize {
        self.cap.saturating_sub(self.buf.len())
    }

    /// Records that output was dropped without pushing it (e.g. a file not read to its end).
    pub fn mark_truncated(&mut self) {
        self.truncated = true;
    }

    pub fn truncated(&self) -> bool {
        self.truncated
    }

    pub fn len(&self) -> usize {
        self.buf.len()
    }

    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// The bytes kept and whether any were dropped.
    pub fn into_parts(self) -> (Vec<u8>, bool) {
        (self.buf, self.truncated)
    }
}

impl core::fmt::Write for Output {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        self.push_str(s);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::fmt::Write;

    #[test]
    fn keeps_up_to_the_cap_then_marks_truncated() {
        let mut o = Output::new(10);
        o.push_str("hello ");
        assert!(!o.truncated());
        assert_eq!(o.room(), 4);
        let n = 2;
        write!(o, "world{}", "!".repeat(n)).unwrap();
        assert!(o.truncated());
        assert_eq!(o.room(), 0);
        o.push(b"more");
        let (bytes, truncated) = o.into_parts();
        assert_eq!((&bytes[..], truncated), (&b"hello worl"[..], true));
    }

    #[test]
    fn never_reserves_past_the_cap() {
        let mut o = Output::new(1000);
        for _ in 0..100 {
            o.push(&[b'x'; 7]);
        }
        assert_eq!(o.len(), 700);
        o.push(&[b'y'; 500]);
        assert_eq!(o.len(), 1000);
        let (bytes, truncated) = o.into_parts();
        assert!(truncated);
        assert!(bytes.capacity() <= 1000, "capacity {}", bytes.capacity());
    }

    #[test]
    fn exactly_full_is_not_truncated() {
        let mut o = Output::new(3);
        o.push(b"abc");
        o.push(b"");
        assert!(!o.truncated());
        assert_eq!(o.len(), 3);
        o.mark_truncated();
        assert!(o.truncated());
    }
}
