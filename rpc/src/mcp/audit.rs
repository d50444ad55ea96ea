//! Audit records: one per call of a tool that is not annotated read-only, and summaries of
//! failed authentications (counted per address and window: see `login_failures`). The server hands each to the [`AuditSink`] in its configuration; what
//! becomes of them (a console line, a ring) is the module's business. A record never carries
//! file data, payloads or tokens: arguments are summarised (see [`summarise_args`]).

use super::error_code::ErrorCode;
use super::request::Cx;
use super::tool::ToolDef;
use crate::json::{Kind, ValueRef};
use alloc::rc::Rc;
use alloc::string::String;
use core::fmt::{self, Write};

/// Receives audit records as they happen.
pub type AuditSink = Rc<dyn Fn(&AuditRecord)>;

/// Bytes of a string shown whole (escaped); a longer one is shown as its head and tail.
pub const MAX_SHOWN_STRING: usize = 64;
/// Bytes of a long string's head and tail as shown: the tail is the longer, as the end of a
/// path names what it is.
const SHOWN_HEAD: usize = 24;
const SHOWN_TAIL: usize = 36;
/// Bytes of one argument summary; the rest is cut at an item boundary and marked `…`.
pub const MAX_SUMMARY: usize = 256;

/// Argument names whose values are data, never shown: only their length is.
const DATA_KEYS: &[&str] = &[
    "data", "content", "contents", "text", "bytes", "base64", "payload", "body", "value", "values",
    "token", "password", "secret", "key",
];

/// Which era and session a call came in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Via {
    /// 2026-07-28: no session.
    Stateless,
    /// A legacy session, named by the first characters of its id (enough to tell sessions
    /// apart in a log, too few to take one over).
    Session(String),
}

impl fmt::Display for Via {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Via::Stateless => f.write_str("stateless"),
            Via::Session(prefix) => write!(f, "session {prefix}"),
        }
    }
}

/// How an audited call ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Ok,
    /// An `isError` result (or a JSON-RPC error of the call) with this code.
    Failed(ErrorCode),
    /// An `isError` result whose text names no known code.
    Error,
    /// Outside `mcp.policy`: the tool never ran.
    RefusedByPolicy,
    /// The client cancelled, or went away before the result was sent.
    Cancelled,
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Outcome::Ok => f.write_str("ok"),
            Outcome::Failed(code) => write!(f, "E_{code}"),
            Outcome::Error => f.write_str("error"),
            Outcome::RefusedByPolicy => f.write_str("refused by policy"),
            Outcome::Cancelled => f.write_str("cancelled"),
        }
    }
}

/// Why authentication failed. The token presented is never recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuthFailure {
    /// No `Authorization` header, or not a bearer one.
    Missing,
    /// A bearer token that is not the machine's.
    Wrong,
    /// Too many failures from this address in the last second: refused unlooked-at.
    Throttled,
}

/// How long failed logins are counted before they are summarised (see `login_failures`).
pub const LOGIN_WINDOW_MS: u64 = 10_000;

/// Failed logins counted over a window (see `login_failures`): in all, and by why.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FailureCount {
    pub failures: u32,
    pub missing: u32,
    pub wrong: u32,
    pub throttled: u32,
}

impl FailureCount {
    pub(crate) fn add(&mut self, why: AuthFailure) {
        self.failures = self.failures.saturating_add(1);
        let by = match why {
            AuthFailure::Missing => &mut self.missing,
            AuthFailure::Wrong => &mut self.wrong,
            AuthFailure::Throttled => &mut self.throttled,
        };
        *by = by.saturating_add(1);
    }

    pub(crate) fn merge(&mut self, other: &FailureCount) {
        self.failures = self.failures.saturating_add(other.failures);
        self.missing = self.missing.saturating_add(other.missing);
        self.wrong = self.wrong.saturating_add(other.wrong);
        self.throttled = self.throttled.saturating_add(other.throttled);
    }
}

/// `<N> failed logins in 10 s (wrong token <n>, missing token <n>, throttled <n>)`.
impl fmt::Display for FailureCount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} failed logins in {} s (wrong token {}, missing token {}, throttled {})",
            self.failures,
            LOGIN_WINDOW_MS / 1000,
            self.wrong,
            self.missing,
            self.throttled
        )
    }
}

/// What happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AuditEvent {
    Call {
        via: Via,
        tool: String,
        /// See [`summarise_args`].
        args: String,
        outcome: Outcome,
    },
    /// The failed logins of one client address in one window, counted.
    LoginFailures(FailureCount),
    /// The failed logins of one window from addresses not summarised one by one: `addresses`
    /// that were counted but past the lines a window writes, and, when `untracked`, more that
    /// the table had no room for.
    LoginFailuresElsewhere {
        count: FailureCount,
        addresses: u32,
        untracked: bool,
    },
}

impl AuditEvent {
    /// Whether the event is a summary of failed logins (anyone can cause one), not a call
    /// that passed the token check.
    pub fn is_login_failures(&self) -> bool {
        !matches!(self, AuditEvent::Call { .. })
    }

    /// Failed logins the event counts.
    pub fn failed_logins(&self) -> u32 {
        match self {
            AuditEvent::Call { .. } => 0,
            AuditEvent::LoginFailures(c) | AuditEvent::LoginFailuresElsewhere { count: c, .. } => {
                c.failures
            }
        }
    }
}

/// One audit record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditRecord {
    /// The monotonic clock, in milliseconds: when the call started, or the failures' window.
    pub at_ms: u64,
    /// The client's IPv4 address.
    pub client: [u8; 4],
    /// Who the caller is beyond its address: the name of the token a call presented, when
    /// the server knows one (`None` today: one token, and failed logins present none).
    pub who: Option<String>,
    pub event: AuditEvent,
}

/// The one-line form: `audit <ms> ms <client> <via> <tool> <args> -> <outcome>`,
/// `audit <ms> ms <client> <N> failed logins in 10 s (…)`, or `audit <ms> ms others <N>
/// failed logins in 10 s (…) from <M> more addresses`. A caller's name, when known, follows
/// the client as `as <who>`.
impl fmt::Display for AuditRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [a, b, c, d] = self.client;
        write!(f, "audit {} ms ", self.at_ms)?;
        match &self.event {
            AuditEvent::LoginFailuresElsewhere { .. } => f.write_str("others ")?,
            _ => write!(f, "{a}.{b}.{c}.{d} ")?,
        }
        if let Some(who) = &self.who {
            write!(f, "as {who} ")?;
        }
        match &self.event {
            AuditEvent::Call {
                via,
                tool,
                args,
                outcome,
            } => write!(f, "{via} {tool} {args} -> {outcome}"),
            AuditEvent::LoginFailures(count) => write!(f, "{count}"),
            AuditEvent::LoginFailuresElsewhere {
                count,
                addresses,
                untracked,
            } => {
                let more = if *untracked { " and others" } else { "" };
                write!(f, "{count} from {addresses} more addresses{more}")
            }
        }
    }
}

/// A short, data-free summary of a call's arguments: `{path="/etc/motd",offset=0,data=<5
/// bytes>}`. Path arguments (`path`, `*_path`) come first and are shown normalised as the
/// filesystem reads them ([`normalise_path`]: `/tmp/./../etc//passwd` is `/etc/passwd`), so
/// padding cannot push the target out of the line. Numbers and booleans are shown; strings
/// are shown quoted and escaped ([`shown_string`]: control, format and separator characters
/// as `\u{..}`, so a line cannot be reordered by U+202E or broken by U+2028), the head and
/// tail of a long one with `…` between; arguments named like data ([`DATA_KEYS`]: `data`,
/// `content`, `token`…) by their length only; arrays and objects by their size. The whole is
/// cut at [`MAX_SUMMARY`] bytes.
pub fn summarise_args(args: ValueRef<'_>) -> String {
    let mut out = String::from("{");
    let mut first = true;
    // Path arguments, then the others.
    for paths in [true, false] {
        for (k, v) in args.members() {
            let k = k.decode().unwrap_or_default();
            let path = named(&k, "path");
            if path != paths {
                continue;
            }
            let item = summarise_arg(&k, v, path, first);
            if out.len() + item.len() + 2 > MAX_SUMMARY {
                out.push_str(",…}");
                return out;
            }
            out.push_str(&item);
            first = false;
        }
    }
    out.push('}');
    out
}

/// One argument's `key=value`, after a comma unless it is the `first`.
fn summarise_arg(k: &str, v: ValueRef<'_>, path: bool, first: bool) -> String {
    let mut item = String::new();
    let key = if valid_key(k) { k } else { "<key>" };
    let _ = write!(item, "{}{key}=", if first { "" } else { "," });
    let data_key = DATA_KEYS.iter().any(|d| named(k, d));
    match v.kind() {
        // A number as it was written: digits, sign, point and exponent only.
        Kind::Null | Kind::Bool => item.push_str(v.raw()),
        Kind::Number if !data_key => item.push_str(v.raw()),
        Kind::Number => item.push_str("<number>"),
        Kind::String => match v.as_str() {
            Some(s) if data_key => {
                let _ = write!(item, "<{} bytes>", s.len());
            }
            Some(s) if path => item.push_str(&shown_string(&normalise_path(&s))),
            Some(s) => item.push_str(&shown_string(&s)),
            None => item.push_str("<unreadable>"),
        },
        Kind::Array => {
            let _ = write!(item, "<{} items>", v.items().count());
        }
        Kind::Object => {
            let _ = write!(item, "<{} keys>", v.members().count());
        }
    }
    item
}

/// `path` resolved on its text as the filesystem resolves it before symlinks: empty and `.`
/// components dropped, `..` taking the one before it (none above the root), relative paths
/// starting at the root; a trailing `/` (which asks for a directory) kept.
pub fn normalise_path(path: &str) -> String {
    let mut parts: alloc::vec::Vec<&str> = alloc::vec::Vec::new();
    for c in path.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            _ => parts.push(c),
        }
    }
    let mut out = String::with_capacity(path.len() + 1);
    for c in &parts {
        out.push('/');
        out.push_str(c);
    }
    if out.is_empty() || (path.ends_with('/') && path.len() > 1) {
        out.push('/');
    }
    out
}

/// A client's string as an audit line shows it: quoted, with `"` and `\` escaped and every
/// character that could hide or rearrange text (control characters, Unicode format characters
/// such as the bidi overrides, line and paragraph separators) written `\u{..}`. Longer than
/// [`MAX_SHOWN_STRING`] bytes so written, its first [`SHOWN_HEAD`] and last [`SHOWN_TAIL`]
/// bytes with `…` between.
pub fn shown_string(s: &str) -> String {
    let total: usize = s.chars().map(escaped_len).sum();
    let mut out = String::with_capacity(total.min(MAX_SHOWN_STRING) + 8);
    out.push('"');
    if total <= MAX_SHOWN_STRING {
        s.chars().for_each(|c| push_escaped(c, &mut out));
    } else {
        let mut head = 0;
        let mut head_end = 0;
        for (i, c) in s.char_indices() {
            if head + escaped_len(c) > SHOWN_HEAD {
                break;
            }
            head += escaped_len(c);
            head_end = i + c.len_utf8();
        }
        let mut tail = 0;
        let mut tail_start = s.len();
        for (i, c) in s.char_indices().rev() {
            if tail + escaped_len(c) > SHOWN_TAIL || i < head_end {
                break;
            }
            tail += escaped_len(c);
            tail_start = i;
        }
        s.get(..head_end)
            .unwrap_or("")
            .chars()
            .for_each(|c| push_escaped(c, &mut out));
        out.push('…');
        s.get(tail_start..)
            .unwrap_or("")
            .chars()
            .for_each(|c| push_escaped(c, &mut out));
    }
    out.push('"');
    out
}

/// Whether `c` is written escaped: a control character (Cc), a format character (Cf: soft
/// hyphen, bidi marks, embeddings, overrides and isolates, zero-width characters, the BOM,
/// tags…), or a line or paragraph separator (Zl, Zp).
fn hidden(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{ad}'
                | '\u{600}'..='\u{605}'
                | '\u{61c}'
                | '\u{6dd}'
                | '\u{70f}'
                | '\u{890}'..='\u{891}'
                | '\u{8e2}'
                | '\u{180e}'
                | '\u{200b}'..='\u{200f}'
                | '\u{2028}'..='\u{202e}'
                | '\u{2060}'..='\u{2064}'
                | '\u{2066}'..='\u{206f}'
                | '\u{feff}'
                | '\u{fff9}'..='\u{fffb}'
                | '\u{110bd}'
                | '\u{110cd}'
                | '\u{13430}'..='\u{1343f}'
                | '\u{1bca0}'..='\u{1bca3}'
                | '\u{1d173}'..='\u{1d17a}'
                | '\u{e0001}'
                | '\u{e0020}'..='\u{e007f}'
        )
}

fn escaped_len(c: char) -> usize {
    match c {
        '"' | '\\' => 2,
        c if hidden(c) => 4 + hex_digits(c),
        c => c.len_utf8(),
    }
}

fn hex_digits(c: char) -> usize {
    let v = u32::from(c);
    (1..8).find(|&n| v >> (4 * n) == 0).unwrap_or(8)
}

fn push_escaped(c: char, out: &mut String) {
    match c {
        '"' | '\\' => {
            out.push('\\');
            out.push(c);
        }
        c if hidden(c) => {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        }
        c => out.push(c),
    }
}

/// Whether argument `k` is `word` or ends with `_<word>` (ASCII case ignored).
fn named(k: &str, word: &str) -> bool {
    let (k, d) = (k.as_bytes(), word.as_bytes());
    let Some(at) = k.len().checked_sub(d.len()) else {
        return false;
    };
    k[at..].eq_ignore_ascii_case(d) && (at == 0 || k[at - 1] == b'_')
}

/// An argument name worth printing: short and of name characters (a client chooses it).
fn valid_key(k: &str) -> bool {
    (1..=32).contains(&k.len())
        && k.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// A call's record, waiting for its outcome: a call whose result streams ends later, and its
/// line is written then (with the time the call started).
pub(crate) struct PendingAudit {
    sink: AuditSink,
    record: AuditRecord,
}

impl PendingAudit {
    /// The record a call of `def` starts, if calls of it are audited: those of tools not
    /// annotated read-only, when the configuration has a sink.
    pub(crate) fn of_call<C>(
        sink: Option<&AuditSink>,
        cx: &Cx<'_>,
        def: &ToolDef<C>,
    ) -> Option<PendingAudit> {
        if def.annotations.read_only {
            return None;
        }
        let sink = sink?.clone();
        let via = match cx.session_tag {
            Some(tag) => Via::Session(String::from_utf8_lossy(&tag).into_owned()),
            None => Via::Stateless,
        };
        let args = cx.params.get("arguments");
        let args = args
            .filter(ValueRef::is_object)
            .unwrap_or(ValueRef::empty_object());
        Some(PendingAudit::new(
            sink, cx.now_ms, cx.client, via, def.name, args,
        ))
    }

    pub(crate) fn new(
        sink: AuditSink,
        at_ms: u64,
        client: [u8; 4],
        via: Via,
        tool: &str,
        args: ValueRef<'_>,
    ) -> Self {
        PendingAudit {
            sink,
            record: AuditRecord {
                at_ms,
                client,
                who: None,
                event: AuditEvent::Call {
                    via,
                    tool: String::from(tool),
                    args: summarise_args(args),
                    outcome: Outcome::Ok,
                },
            },
        }
    }

    /// Hands the record, with its outcome, to the sink.
    pub(crate) fn finish(mut self, outcome: Outcome) {
        if let AuditEvent::Call { outcome: o, .. } = &mut self.record.event {
            *o = outcome;
        }
        (self.sink)(&self.record);
    }
}

/// The `E_<CODE>` a tool's text starts with, if it names a known code.
pub(crate) fn code_of_text(text: &str) -> Option<ErrorCode> {
    let rest = text.strip_prefix("E_")?;
    let (code, _) = rest.split_once(':')?;
    ErrorCode::parse(code)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;
    use alloc::string::ToString;
    use serde_json::json;

    fn summary(v: serde_json::Value) -> String {
        let text = v.to_string();
        summarise_args(crate::json::Tape::default().read(&text).unwrap())
    }

    #[test]
    fn summaries_keep_paths_and_numbers_and_hide_data() {
        let s = summary(json!({
            "path": "/tmp/notes.txt",
            "offset": 4096,
            "append": true,
            "data": "c2VjcmV0IGZpbGUgZGF0YQ==",
            "text": "hello",
            "mcp_token": "hunter2hunter2hunter2",
        }));
        assert!(s.contains("path=\"/tmp/notes.txt\""), "{s}");
        assert!(s.contains("offset=4096"), "{s}");
        assert!(s.contains("append=true"), "{s}");
        assert!(s.contains("data=<24 bytes>"), "{s}");
        assert!(s.contains("text=<5 bytes>"), "{s}");
        assert!(s.contains("mcp_token=<21 bytes>"), "{s}");
        for secret in ["c2Vj", "hello", "hunter2"] {
            assert!(!s.contains(secret), "{s}");
        }
    }

    #[test]
    fn long_strings_nested_values_and_odd_keys_are_summarised() {
        let long = format!("{}{}", "x".repeat(MAX_SHOWN_STRING), "-the-end");
        let s = summary(json!({
            "name": long,
            "list": [1, 2, 3],
            "obj": {"a": 1},
            "line": "a\nb",
            "quoted": "a\"b\\",
            "Auth_Token": "xy",
            "tokens": "ab",
            "we ird\"key": 1,
        }));
        let shown = format!(
            "name=\"{}…{}-the-end\"",
            "x".repeat(SHOWN_HEAD),
            "x".repeat(28)
        );
        assert!(s.contains(&shown), "{s}");
        assert!(s.contains("list=<3 items>"), "{s}");
        assert!(s.contains("obj=<1 keys>"), "{s}");
        assert!(s.contains("line=\"a\\u{a}b\""), "{s}");
        assert!(s.contains("quoted=\"a\\\"b\\\\\""), "{s}");
        assert!(s.contains("Auth_Token=<2 bytes>"), "{s}");
        assert!(s.contains("tokens=\"ab\""), "{s}");
        assert!(s.contains("<key>=1"), "{s}");
    }

    #[test]
    fn paths_are_shown_normalised_first_and_whole_at_the_end() {
        let padded = format!("{}/../etc/passwd", "/.".repeat(40));
        let s = summary(json!({"recursive": true, "path": padded}));
        assert_eq!(s, "{path=\"/etc/passwd\",recursive=true}");
        for (raw, want) in [
            ("/", "/"),
            ("", "/"),
            ("//", "/"),
            ("/tmp//x/./y/", "/tmp/x/y/"),
            ("tmp/x", "/tmp/x"),
            ("/tmp/x/..", "/tmp"),
            ("/../../etc", "/etc"),
            ("/a/b/../../c/./d/..", "/c"),
            ("/tmp/...", "/tmp/..."),
        ] {
            assert_eq!(normalise_path(raw), want, "{raw:?}");
        }
        // A long path keeps its end, where the name of what is acted on is.
        let deep = format!("/tmp/{}/victim.txt", "d/".repeat(60));
        let s = summary(json!({"dest_path": deep, "path": "/x"}));
        let want = format!(
            "{{dest_path=\"/tmp{}…{}victim.txt\",path=\"/x\"}}",
            "/d".repeat(10),
            "d/".repeat(13)
        );
        assert_eq!(s, want);
        // Many decoy arguments before it do not push a path out of the line.
        let mut m = serde_json::Map::new();
        for i in 0..30 {
            m.insert(format!("decoy{i:02}"), json!("/tmp/harmless/file"));
        }
        m.insert("path".into(), json!("/boot/unix"));
        let s = summary(serde_json::Value::Object(m));
        assert!(s.starts_with("{path=\"/boot/unix\",decoy00="), "{s}");
    }

    #[test]
    fn format_and_separator_characters_are_escaped_like_control_characters() {
        let s = summary(json!({
            "path": "/tmp/\u{202e}txt.exe",
            "name": "a\u{2028}b\u{2029}c\u{200b}d\u{feff}e\u{e0041}f\u{7}g",
            "plain": "caf\u{e9} \u{65e5}\u{672c}",
        }));
        assert!(s.contains("path=\"/tmp/\\u{202e}txt.exe\""), "{s}");
        assert!(
            s.contains("name=\"a\\u{2028}b\\u{2029}c\\u{200b}d\\u{feff}e\\u{e0041}f\\u{7}g\""),
            "{s}"
        );
        assert!(s.contains("plain=\"caf\u{e9} \u{65e5}\u{672c}\""), "{s}");
        for c in [
            '\u{202e}', '\u{2028}', '\u{2029}', '\u{200b}', '\u{feff}', '\u{7}',
        ] {
            assert!(!s.contains(c), "{c:?} in {s}");
        }
        // Escapes count against the bound: a long string of them is cut between escapes.
        let s = shown_string(&"\u{202e}".repeat(100));
        assert!(s.len() <= SHOWN_HEAD + SHOWN_TAIL + 5, "{s}");
        assert!(
            s.starts_with("\"\\u{202e}\\u{202e}\\u{202e}…\\u{202e}"),
            "{s}"
        );
    }

    #[test]
    fn lines_name_client_session_tool_and_outcome() {
        let r = AuditRecord {
            at_ms: 1234,
            client: [10, 0, 2, 2],
            who: None,
            event: AuditEvent::Call {
                via: Via::Session("3fa9c1d2".into()),
                tool: "fs.write".into(),
                args: "{path=\"/x\"}".into(),
                outcome: Outcome::Failed(ErrorCode::NoSpc),
            },
        };
        assert_eq!(
            r.to_string(),
            "audit 1234 ms 10.0.2.2 session 3fa9c1d2 fs.write {path=\"/x\"} -> E_NOSPC"
        );
        let count = FailureCount {
            failures: 200,
            missing: 1,
            wrong: 19,
            throttled: 180,
        };
        let r = AuditRecord {
            at_ms: 5,
            client: [192, 168, 1, 9],
            who: None,
            event: AuditEvent::LoginFailures(count),
        };
        assert_eq!(
            r.to_string(),
            "audit 5 ms 192.168.1.9 200 failed logins in 10 s \
             (wrong token 19, missing token 1, throttled 180)"
        );
        let r = AuditRecord {
            at_ms: 5,
            client: [0; 4],
            who: None,
            event: AuditEvent::LoginFailuresElsewhere {
                count,
                addresses: 3,
                untracked: true,
            },
        };
        assert!(
            r.to_string()
                .starts_with("audit 5 ms others 200 failed logins in 10 s")
        );
        assert!(r.to_string().ends_with(" from 3 more addresses and others"));
        // A caller's name, once the server knows one, follows the address.
        let r = AuditRecord {
            at_ms: 7,
            client: [10, 0, 2, 2],
            who: Some("agent".into()),
            event: AuditEvent::Call {
                via: Via::Stateless,
                tool: "fs.write".into(),
                args: "{}".into(),
                outcome: Outcome::Ok,
            },
        };
        assert_eq!(
            r.to_string(),
            "audit 7 ms 10.0.2.2 as agent stateless fs.write {} -> ok"
        );
        assert_eq!(
            code_of_text("E_NOENT: no such file"),
            Some(ErrorCode::NoEnt)
        );
        assert_eq!(code_of_text("E_WHAT: x"), None);
        assert_eq!(code_of_text("fine"), None);
    }
}
