//! The audit trail's in-module copy: the last lines of the records the MCP server produces,
//! and of the machine's own events (`services::events`), in rings so that one kind, or one
//! rank of caller, cannot push out another:
//! - calls of the administrator (of tools that are not read-only), which no lesser token's
//!   traffic can evict;
//! - calls of lesser tokens (operate, or a gateway's narrowing of the administrator);
//! - summaries of refused calls (one per token per 10 s: any token can be refused as fast as
//!   its rate allows);
//! - summaries of failed logins (anyone who reaches the port can cause them);
//! - machine events (a boot, a requested reset): few, and each matters.
//!
//! Each ring is bounded in lines and bytes, drops its oldest lines first and counts them. `irix7://audit` and the shell's `audit` read it; the board also writes every
//! line to the console, so the kernel's serial ring keeps a longer history.

use alloc::collections::VecDeque;
use alloc::string::String;
use core::fmt::Write;

/// Lines of calls kept, in each of the two rings of calls.
pub const MAX_LINES: usize = 64;
/// Bytes of calls kept, over all the lines of one ring.
pub const MAX_BYTES: usize = 8 * 1024;
/// Lines of refusal summaries kept (the server writes at most 17 a window of 10 s).
pub const MAX_REFUSAL_LINES: usize = 32;
/// Bytes of refusal summaries kept.
pub const MAX_REFUSAL_BYTES: usize = 4 * 1024;
/// Lines of failed-login summaries kept (the server writes at most 9 a window of 10 s).
pub const MAX_LOGIN_LINES: usize = 16;
/// Bytes of failed-login summaries kept.
pub const MAX_LOGIN_BYTES: usize = 2 * 1024;
/// Lines of machine events kept.
pub const MAX_EVENT_LINES: usize = 16;
/// Bytes of machine events kept.
pub const MAX_EVENT_BYTES: usize = 4 * 1024;
/// Bytes of one line; a longer one is cut (records are built short, this is a backstop).
pub const MAX_LINE: usize = 512;

/// Lines of one kind, the newest within bounds.
#[derive(Debug)]
struct Ring {
    lines: VecDeque<String>,
    bytes: usize,
    max_lines: usize,
    max_bytes: usize,
    /// Lines dropped to make room since boot.
    dropped: u64,
    /// Lines recorded since boot.
    total: u64,
}

impl Ring {
    fn new(max_lines: usize, max_bytes: usize) -> Self {
        Ring {
            lines: VecDeque::new(),
            bytes: 0,
            max_lines,
            max_bytes,
            dropped: 0,
            total: 0,
        }
    }

    fn push(&mut self, line: &str) {
        let end = line.floor_char_boundary(MAX_LINE);
        let line = line.get(..end).unwrap_or("");
        while !self.lines.is_empty()
            && (self.lines.len() >= self.max_lines || self.bytes + line.len() > self.max_bytes)
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

    /// A header line (`# <what> since boot: <total>, <kept> kept, <dropped> dropped`), then
    /// the lines, oldest first.
    fn write(&self, what: &str, out: &mut String) {
        let _ = writeln!(
            out,
            "# {what} since boot: {}, {} kept, {} dropped (oldest first)",
            self.total,
            self.lines.len(),
            self.dropped
        );
        for l in &self.lines {
            out.push_str(l);
            out.push('\n');
        }
    }
}

/// Which ring a line goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A call of the administrator (its token, not narrowed).
    AdministratorCall,
    /// A call of a lesser token.
    LesserCall,
    /// A summary of a token's refused calls.
    Refusals,
    /// A summary of failed logins, counting this many.
    LoginFailures(u32),
    /// One of the machine's events.
    Event,
}

#[derive(Debug)]
pub struct AuditLog {
    calls: Ring,
    lesser_calls: Ring,
    refusals: Ring,
    logins: Ring,
    events: Ring,
    /// Failed logins the summaries recorded since boot counted.
    failed_logins: u64,
}

impl Default for AuditLog {
    fn default() -> Self {
        AuditLog {
            calls: Ring::new(MAX_LINES, MAX_BYTES),
            lesser_calls: Ring::new(MAX_LINES, MAX_BYTES),
            refusals: Ring::new(MAX_REFUSAL_LINES, MAX_REFUSAL_BYTES),
            logins: Ring::new(MAX_LOGIN_LINES, MAX_LOGIN_BYTES),
            events: Ring::new(MAX_EVENT_LINES, MAX_EVENT_BYTES),
            failed_logins: 0,
        }
    }
}

impl AuditLog {
    /// Keeps `line` (without its newline) in the ring of its kind, dropping that ring's
    /// oldest lines past its bounds.
    pub fn push(&mut self, kind: Kind, line: &str) {
        self.count(kind);
        self.ring(kind).push(line);
    }

    fn count(&mut self, kind: Kind) {
        if let Kind::LoginFailures(n) = kind {
            self.failed_logins = self.failed_logins.saturating_add(u64::from(n));
        }
    }

    fn ring(&mut self, kind: Kind) -> &mut Ring {
        match kind {
            Kind::AdministratorCall => &mut self.calls,
            Kind::LesserCall => &mut self.lesser_calls,
            Kind::Refusals => &mut self.refusals,
            Kind::LoginFailures(_) => &mut self.logins,
            Kind::Event => &mut self.events,
        }
    }

    fn rings(&self) -> [&Ring; 5] {
        [
            &self.calls,
            &self.lesser_calls,
            &self.refusals,
            &self.logins,
            &self.events,
        ]
    }

    /// Lines of calls kept.
    pub fn len(&self) -> usize {
        self.calls.lines.len() + self.lesser_calls.lines.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rings().iter().all(|r| r.lines.is_empty())
    }

    /// Lines of calls dropped.
    pub fn dropped(&self) -> u64 {
        self.calls.dropped + self.lesser_calls.dropped
    }

    /// Each ring's lines after a header saying how many were recorded, kept and dropped: the
    /// administrator's calls, the lesser tokens' calls, the refusal summaries, the
    /// failed-login summaries, the machine events.
    pub fn text(&self) -> String {
        let bytes: usize = self.rings().iter().map(|r| r.bytes).sum();
        let mut out = String::with_capacity(bytes + 640);
        self.calls.write("audit lines of calls", &mut out);
        self.lesser_calls
            .write("audit lines of lesser tokens' calls", &mut out);
        self.refusals
            .write("refused-call summaries (one per token per 10 s)", &mut out);
        let what = alloc::format!(
            "failed-login summaries (one per address per 10 s; {} failed logins)",
            self.failed_logins
        );
        self.logins.write(&what, &mut out);
        self.events.write("machine events", &mut out);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;

    #[test]
    fn keeps_the_newest_lines_within_both_bounds() {
        let mut log = AuditLog::default();
        assert!(
            log.text()
                .starts_with("# audit lines of calls since boot: 0, 0 kept, 0 dropped")
        );
        for i in 0..100 {
            log.push(Kind::AdministratorCall, &format!("line {i}"));
        }
        assert_eq!(log.len(), MAX_LINES);
        assert_eq!(log.dropped(), 100 - MAX_LINES as u64);
        let text = log.text();
        assert!(
            text.starts_with("# audit lines of calls since boot: 100, 64 kept, 36 dropped"),
            "{text}"
        );
        assert!(text.contains("\nline 36\n") && text.contains("line 99\n# audit lines of lesser"));
        assert!(!text.contains("line 35\n"));

        let mut log = AuditLog::default();
        let long = "x".repeat(400);
        for _ in 0..30 {
            log.push(Kind::AdministratorCall, &long);
        }
        assert!(log.calls.bytes <= MAX_BYTES);
        assert_eq!(log.len(), MAX_BYTES / 400);
        assert_eq!(log.dropped(), 30 - (MAX_BYTES / 400) as u64);
    }

    #[test]
    fn failed_logins_never_push_out_calls() {
        let mut log = AuditLog::default();
        log.push(
            Kind::AdministratorCall,
            "audit 1 ms 10.0.2.2 stateless fs.remove {path=\"/x\"} -> ok",
        );
        for i in 0..1000 {
            log.push(
                Kind::LoginFailures(200),
                &format!("audit {i} ms 10.0.0.9 200 failed logins in 10 s"),
            );
        }
        let text = log.text();
        assert!(text.contains("fs.remove {path=\"/x\"} -> ok\n"), "{text}");
        assert!(text.starts_with("# audit lines of calls since boot: 1, 1 kept, 0 dropped"));
        let header = format!(
            "# failed-login summaries (one per address per 10 s; 200000 failed logins) \
             since boot: 1000, {MAX_LOGIN_LINES} kept, {} dropped",
            1000 - MAX_LOGIN_LINES
        );
        assert!(text.contains(&header), "{text}");
        assert!(text.ends_with(
            "audit 999 ms 10.0.0.9 200 failed logins in 10 s\n\
             # machine events since boot: 0, 0 kept, 0 dropped (oldest first)\n"
        ));
        assert!(!text.contains("audit 983 ms"));
        assert!(text.len() < MAX_BYTES + MAX_LOGIN_BYTES + 640 + 64);
    }

    #[test]
    fn calls_never_push_out_machine_events() {
        let mut log = AuditLog::default();
        log.push(
            Kind::Event,
            "audit 5 ms machine event 1 boot: cause watchdog",
        );
        for i in 0..200 {
            log.push(
                Kind::AdministratorCall,
                &format!("audit {i} ms 10.0.2.2 stateless fs.write -> ok"),
            );
        }
        let text = log.text();
        assert!(
            text.ends_with(
                "# machine events since boot: 1, 1 kept, 0 dropped (oldest first)\n\
                 audit 5 ms machine event 1 boot: cause watchdog\n"
            ),
            "{text}"
        );
        for i in 0..100 {
            log.push(Kind::Event, &format!("event {i}"));
        }
        let text = log.text();
        let header = format!(
            "# machine events since boot: 101, {MAX_EVENT_LINES} kept, {} dropped",
            101 - MAX_EVENT_LINES
        );
        assert!(text.contains(&header), "{text}");
        assert!(text.contains("audit 199 ms") && text.ends_with("event 99\n"));
    }

    #[test]
    fn lesser_tokens_calls_and_refusals_never_push_out_the_administrators() {
        let mut log = AuditLog::default();
        log.push(
            Kind::AdministratorCall,
            "audit 1 ms 10.0.2.2 as admin stateless fs.write {path=\"/x\"} -> ok",
        );
        for i in 0..500 {
            log.push(
                Kind::LesserCall,
                &format!("audit {i} ms as ci console.write -> ok"),
            );
            log.push(
                Kind::Refusals,
                &format!("audit {i} ms as watcher 320 refused calls"),
            );
        }
        let text = log.text();
        assert!(
            text.starts_with(
                "# audit lines of calls since boot: 1, 1 kept, 0 dropped (oldest first)\n\
                 audit 1 ms 10.0.2.2 as admin stateless fs.write {path=\"/x\"} -> ok\n"
            ),
            "{text}"
        );
        let header = format!(
            "# refused-call summaries (one per token per 10 s) since boot: 500, \
             {MAX_REFUSAL_LINES} kept, {} dropped",
            500 - MAX_REFUSAL_LINES
        );
        assert!(text.contains(&header), "{text}");
        assert_eq!(log.dropped(), 500 - MAX_LINES as u64);
    }

    #[test]
    fn overlong_lines_are_cut_on_a_character_boundary() {
        let mut log = AuditLog::default();
        let line = "é".repeat(MAX_LINE);
        log.push(Kind::AdministratorCall, &line);
        let kept = log.calls.lines.front().unwrap();
        assert!(kept.len() <= MAX_LINE && kept.len() >= MAX_LINE - 1);
    }
}
