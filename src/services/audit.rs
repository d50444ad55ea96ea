//! The audit trail's in-module copy: the last lines of the records the MCP server produces
//! (write and destructive calls, failed logins), bounded in lines and bytes, oldest dropped
//! first and counted. `irix7://audit` and the shell's `audit` read it; the board also writes
//! every line to the console, so the kernel's serial ring keeps a longer history.

use alloc::collections::VecDeque;
use alloc::format;
use alloc::string::String;

/// Lines kept.
pub const MAX_LINES: usize = 64;
/// Bytes kept, over all lines.
pub const MAX_BYTES: usize = 8 * 1024;
/// Bytes of one line; a longer one is cut (records are built short, this is a backstop).
pub const MAX_LINE: usize = 512;

#[derive(Debug, Default)]
pub struct AuditLog {
    lines: VecDeque<String>,
    bytes: usize,
    /// Lines dropped to make room since boot.
    dropped: u64,
    /// Lines recorded since boot.
    total: u64,
}

impl AuditLog {
    /// Keeps `line` (without its newline), dropping the oldest lines past the bounds.
    pub fn push(&mut self, line: &str) {
        let mut end = line.len().min(MAX_LINE);
        while !line.is_char_boundary(end) {
            end -= 1;
        }
        let line = line.get(..end).unwrap_or("");
        while !self.lines.is_empty()
            && (self.lines.len() >= MAX_LINES || self.bytes + line.len() > MAX_BYTES)
        {
            if let Some(old) = self.lines.pop_front() {
                self.bytes -= old.len();
                self.dropped += 1;
            }
        }
        self.bytes += line.len();
        self.lines.push_back(String::from(line));
        self.total += 1;
    }

    /// Counts a line that could not be kept (the log was being read when it came).
    pub fn lost(&mut self) {
        self.dropped += 1;
        self.total += 1;
    }

    pub fn len(&self) -> usize {
        self.lines.len()
    }

    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// The kept lines, oldest first, one per line, after a header saying how many were
    /// recorded and dropped.
    pub fn text(&self) -> String {
        let mut out = format!(
            "# {} audit lines since boot, {} kept, {} dropped (oldest first)\n",
            self.total,
            self.lines.len(),
            self.dropped
        );
        out.reserve(self.bytes + self.lines.len());
        for l in &self.lines {
            out.push_str(l);
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_newest_lines_within_both_bounds() {
        let mut log = AuditLog::default();
        assert!(
            log.text()
                .starts_with("# 0 audit lines since boot, 0 kept, 0 dropped")
        );
        for i in 0..100 {
            log.push(&format!("line {i}"));
        }
        assert_eq!(log.len(), MAX_LINES);
        assert_eq!(log.dropped(), 100 - MAX_LINES as u64);
        let text = log.text();
        assert!(
            text.starts_with("# 100 audit lines since boot, 64 kept, 36 dropped"),
            "{text}"
        );
        assert!(text.contains("\nline 36\n") && text.ends_with("line 99\n"));
        assert!(!text.contains("line 35\n"));

        let mut log = AuditLog::default();
        let long = "x".repeat(400);
        for _ in 0..30 {
            log.push(&long);
        }
        assert!(log.bytes <= MAX_BYTES);
        assert_eq!(log.len(), MAX_BYTES / 400);
        assert_eq!(log.dropped(), 30 - (MAX_BYTES / 400) as u64);
    }

    #[test]
    fn overlong_lines_are_cut_on_a_character_boundary() {
        let mut log = AuditLog::default();
        let line = "é".repeat(MAX_LINE);
        log.push(&line);
        let kept = log.lines.front().unwrap();
        assert!(kept.len() <= MAX_LINE && kept.len() >= MAX_LINE - 1);
        log.lost();
        assert_eq!((log.total, log.dropped()), (2, 1));
    }
}
