//! Audit records: one per call of a tool that is not annotated read-only, and one per failed
//! authentication. The server hands each to the [`AuditSink`] in its configuration; what
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

/// Strings longer than this are summarised by their length.
pub const MAX_SHOWN_STRING: usize = 64;
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
    /// Too many failures from this address in the last second: refused unlooked-at. Recorded
    /// once per address per second, so a flood leaves a handful of lines, not thousands.
    Throttled,
}

impl AuthFailure {
    pub fn as_str(self) -> &'static str {
        match self {
            AuthFailure::Missing => "missing token",
            AuthFailure::Wrong => "wrong token",
            AuthFailure::Throttled => "throttled",
        }
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
    AuthFailed(AuthFailure),
}

/// One audit record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditRecord {
    /// The monotonic clock, in milliseconds.
    pub at_ms: u64,
    /// The client's IPv4 address.
    pub client: [u8; 4],
    pub event: AuditEvent,
}

/// The one-line form: `audit <ms> <client> <via> <tool> <args> -> <outcome>`, or
/// `audit <ms> <client> auth failed: <reason>`.
impl fmt::Display for AuditRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [a, b, c, d] = self.client;
        write!(f, "audit {} ms {a}.{b}.{c}.{d} ", self.at_ms)?;
        match &self.event {
            AuditEvent::Call {
                via,
                tool,
                args,
                outcome,
            } => write!(f, "{via} {tool} {args} -> {outcome}"),
            AuditEvent::AuthFailed(why) => write!(f, "auth failed: {}", why.as_str()),
        }
    }
}

/// A short, data-free summary of a call's arguments: `{path="/etc/motd",offset=0,data=<5
/// bytes>}`. Numbers and booleans are shown; strings up to [`MAX_SHOWN_STRING`] bytes are
/// shown quoted unless their argument is named like data ([`DATA_KEYS`]: `data`, `content`,
/// `token`…) or they hold control characters, and are otherwise replaced by `<N bytes>`;
/// arrays and objects by their size. The whole is cut at [`MAX_SUMMARY`] bytes.
pub fn summarise_args(args: ValueRef<'_>) -> String {
    let mut out = String::from("{");
    for (i, (k, v)) in args.members().enumerate() {
        let mut item = String::new();
        let k = k.decode().unwrap_or_default();
        let key = if valid_key(&k) { &*k } else { "<key>" };
        let _ = write!(item, "{}{key}=", if i == 0 { "" } else { "," });
        let data_key = DATA_KEYS.iter().any(|d| names_data(&k, d));
        match v.kind() {
            // A number as it was written: digits, sign, point and exponent only.
            Kind::Null | Kind::Bool => item.push_str(v.raw()),
            Kind::Number if !data_key => item.push_str(v.raw()),
            Kind::Number => item.push_str("<number>"),
            Kind::String => match v.as_str() {
                // Shown quoted as they are: those with a quote, a backslash or a control
                // character would need escaping, and are summarised instead.
                Some(s)
                    if !data_key
                        && s.len() <= MAX_SHOWN_STRING
                        && !s.chars().any(|c| c.is_control() || c == '"' || c == '\\') =>
                {
                    let _ = write!(item, "\"{s}\"");
                }
                s => {
                    let len = s.map_or(0, |s| s.len());
                    let _ = write!(item, "<{len} bytes>");
                }
            },
            Kind::Array => {
                let _ = write!(item, "<{} items>", v.items().count());
            }
            Kind::Object => {
                let _ = write!(item, "<{} keys>", v.members().count());
            }
        }
        if out.len() + item.len() + 2 > MAX_SUMMARY {
            out.push_str(",…");
            break;
        }
        out.push_str(&item);
    }
    out.push('}');
    out
}

/// Whether argument `k` is `data_key` or ends with `_<data_key>` (ASCII case ignored).
fn names_data(k: &str, data_key: &str) -> bool {
    let (k, d) = (k.as_bytes(), data_key.as_bytes());
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
        let long = "x".repeat(MAX_SHOWN_STRING + 1);
        let s = summary(json!({
            "path": long,
            "list": [1, 2, 3],
            "obj": {"a": 1},
            "line": "a\nb",
            "quoted": "a\"b",
            "Auth_Token": "xy",
            "tokens": "ab",
            "we ird\"key": 1,
        }));
        assert!(s.contains("path=<65 bytes>"), "{s}");
        assert!(s.contains("list=<3 items>"), "{s}");
        assert!(s.contains("obj=<1 keys>"), "{s}");
        assert!(s.contains("line=<3 bytes>"), "{s}");
        assert!(s.contains("quoted=<3 bytes>"), "{s}");
        assert!(s.contains("Auth_Token=<2 bytes>"), "{s}");
        assert!(s.contains("tokens=\"ab\""), "{s}");
        assert!(s.contains("<key>=1"), "{s}");
        assert!(!s.contains("xxxx"), "{s}");
    }

    #[test]
    fn summaries_are_bounded() {
        let mut m = serde_json::Map::new();
        for i in 0..200 {
            m.insert(format!("k{i:03}"), json!("a path of some length"));
        }
        let s = summary(serde_json::Value::Object(m));
        assert!(s.len() <= MAX_SUMMARY + 4, "{}", s.len());
        assert!(s.ends_with(",…}"), "{s}");
    }

    #[test]
    fn lines_name_client_session_tool_and_outcome() {
        let r = AuditRecord {
            at_ms: 1234,
            client: [10, 0, 2, 2],
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
        let r = AuditRecord {
            at_ms: 5,
            client: [192, 168, 1, 9],
            event: AuditEvent::AuthFailed(AuthFailure::Wrong),
        };
        assert_eq!(
            r.to_string(),
            "audit 5 ms 192.168.1.9 auth failed: wrong token"
        );
        assert_eq!(
            code_of_text("E_NOENT: no such file"),
            Some(ErrorCode::NoEnt)
        );
        assert_eq!(code_of_text("E_WHAT: x"), None);
        assert_eq!(code_of_text("fine"), None);
    }
}
