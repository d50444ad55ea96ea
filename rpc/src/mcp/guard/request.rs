//! What both eras know about a request: what it brings down the server before its envelope
//! is read ([`Exchange`]), and once it is checked the era, the per-request context [`Cx`] that
//! dispatch works from, and the header and `params` readings both share.

use crate::http::coding::Packed;
use crate::http::{Field, Headers, Peer};
use crate::json::{Tape, ValueRef};
use crate::jsonrpc::{Id, RpcError};
use crate::mcp::guard::authority::{Authority, Client, Key, Owner};
use crate::mcp::wire::error_code::ErrorCode;
use crate::mcp::wire::tool::{LogLevel, ToolError};
use crate::mcp::wire::version::MODERN_VERSION;
use alloc::borrow::Cow;
use alloc::string::String;
use alloc::vec::Vec;
use base64::Engine;
use core::cell::Cell;
use serde_json::{Map, Value};

/// Which protocol a request speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Era {
    Modern,
    Legacy(&'static str),
}

impl Era {
    /// The protocol version it names (`2026-07-28`, or the legacy session's).
    pub(crate) fn version(self) -> &'static str {
        match self {
            Era::Modern => MODERN_VERSION,
            Era::Legacy(v) => v,
        }
    }
}

/// What one request brings down the server: who sent it and when, what it may do, and the
/// buffers it is lent: the room of its connection's last answer and the server's spare tape.
/// The entry points build one per request and pass it down; the server keeps none of it, so
/// no request can run with another's authority or read another's `params`.
pub(crate) struct Exchange {
    pub(crate) peer: Peer,
    pub(crate) now_ms: u64,
    /// What the request may do (its token's role, the policy, a gateway's narrowing).
    pub(crate) authority: Authority,
    /// Who its part of shared pools is counted to (`authority.owner()`, worked out once).
    pub(crate) owner: Owner,
    /// The connection's last answer buffer (`Request::answer`), lent while this request is
    /// handled: a tool result written at once goes into it instead of a new allocation.
    pub(crate) lent: Cell<Vec<u8>>,
    /// The tape its `params` are read onto: empty, with the room the server keeps between
    /// requests, so reading them allocates nothing.
    pub(crate) tape: Cell<Tape>,
    /// The answer's bulk deflated ahead of time, when the answer may go out coded (a
    /// policy-wide `tools/list`): the entry point codes it as `Accept-Encoding` asks.
    pub(crate) packed: Cell<Option<Packed>>,
    /// Its connection carried a request before it (`Request::earlier`).
    pub(crate) kept: bool,
}

impl Exchange {
    /// Which of its owner's clients a 2026-07-28 request (or an `initialize`) counts as in
    /// its owner's rate window: its connection once that carried a request, else the owner's
    /// fresh connections together, so that a flood of one-request connections is one noisy
    /// client and a client keeping its connection keeps its part (`limits::RateWindow`).
    pub(crate) fn rate_client(&self) -> Client {
        if self.kept {
            Client::Connection(self.peer.addr, self.peer.port)
        } else {
            Client::Fresh
        }
    }
}

/// A request in context.
pub(crate) struct Cx<'a> {
    pub(crate) era: Era,
    pub(crate) id: &'a Id,
    /// The request's `params`, an object read in place.
    pub(crate) params: ValueRef<'a>,
    pub(crate) caps: &'a Value,
    /// The `Accept` field, read when an answer could be an event stream.
    pub(crate) accept: Option<&'a str>,
    pub(crate) progress_token: Option<Value>,
    pub(crate) log_level: Option<LogLevel>,
    pub(crate) key: Key,
    pub(crate) sse_ids: Option<(u64, u64)>,
    pub(crate) sse_retry_ms: Option<u64>,
    pub(crate) now_ms: u64,
    /// The request headers, for `Mcp-Param-*` checks (modern era only).
    pub(crate) headers: Option<&'a Headers>,
    /// The client's address and, for a legacy session, the first bytes of its id: what an
    /// audit record names.
    pub(crate) client: [u8; 4],
    pub(crate) session_tag: Option<[u8; SESSION_TAG]>,
    /// What the request may do (its token's role, the policy, a gateway's narrowing).
    pub(crate) authority: Authority,
    /// The buffer the request's connection lent its answer (see [`Exchange::lent`]).
    pub(crate) lent: &'a Cell<Vec<u8>>,
    /// Where an answer that may go out coded leaves its packed bulk (see [`Exchange::packed`]).
    pub(crate) packed: &'a Cell<Option<Packed>>,
}

/// The `arguments` of `tools/call` and `prompts/get`: an object, or `{}` when absent or null.
pub(crate) fn arguments(params: ValueRef<'_>) -> Result<ValueRef<'_>, RpcError> {
    match params.get("arguments").filter(|a| !a.is_null()) {
        None => Ok(ValueRef::empty_object()),
        Some(a) if a.is_object() => Ok(a),
        Some(_) => Err(RpcError::invalid_params(
            "Invalid params: arguments must be an object",
        )),
    }
}

/// `inputResponses` and `requestState` of a request retried after `InputRequired` (built
/// only when a retry carries them).
pub(crate) type Retry<'a> = (Option<Map<String, Value>>, Option<Cow<'a, str>>);

pub(crate) fn retry_params(params: ValueRef<'_>) -> Result<Retry<'_>, RpcError> {
    let responses = match params.get("inputResponses") {
        None => None,
        Some(m) if m.is_object() && m.members().all(|(_, v)| v.is_object()) => match m.to_value() {
            Some(Value::Object(m)) => Some(m),
            _ => None,
        },
        Some(_) => {
            let msg = "Invalid params: inputResponses must map keys to objects";
            return Err(RpcError::invalid_params(msg));
        }
    };
    let state = match params.get("requestState").map(|s| s.as_str()) {
        None => None,
        Some(Some(s)) => Some(s),
        Some(None) => {
            let msg = "Invalid params: requestState must be a string";
            return Err(RpcError::invalid_params(msg));
        }
    };
    Ok((responses, state))
}

/// The answer to a request that needs client input where it cannot be asked for (a legacy
/// client that does not take SSE, or a prompt).
pub(crate) fn input_unsupported() -> ToolError {
    ToolError::new(
        ErrorCode::NotSup,
        "this needs client input: use protocol 2026-07-28, or accept text/event-stream",
    )
}

/// Bytes of a session id an audit record shows.
pub(crate) const SESSION_TAG: usize = 8;

/// The first [`SESSION_TAG`] bytes of a session id (ids are longer, and ASCII).
pub(crate) fn session_tag(id: &str) -> [u8; SESSION_TAG] {
    let mut tag = [b'?'; SESSION_TAG];
    for (t, b) in tag.iter_mut().zip(id.bytes()) {
        *t = b;
    }
    tag
}

/// A header value as compared with the body: optional whitespace trimmed, `=?base64?…?=`
/// decoded (only that form is copied). `None` if the encoded form does not decode to UTF-8.
pub(crate) fn header_text(raw: &str) -> Option<Cow<'_, str>> {
    let v = raw.trim_matches(|c| c == ' ' || c == '\t');
    if let Some(inner) = v
        .strip_prefix("=?base64?")
        .and_then(|r| r.strip_suffix("?="))
    {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(inner)
            .ok()?;
        return String::from_utf8(bytes).ok().map(Cow::Owned);
    }
    Some(Cow::Borrowed(v))
}

/// A request's `params` as an object: absent means `{}`; any other JSON type is refused
/// (-32602), in both eras.
pub(crate) fn object_params(params: Option<ValueRef<'_>>) -> Result<ValueRef<'_>, RpcError> {
    match params {
        None => Ok(ValueRef::empty_object()),
        Some(p) if p.is_object() => Ok(p),
        Some(_) => Err(RpcError::invalid_params(
            "Invalid params: must be an object",
        )),
    }
}

impl Cx<'_> {
    /// Whether the client takes `text/event-stream` responses.
    pub(crate) fn accept_sse(&self) -> bool {
        accepts_sse(self.accept)
    }
}

/// Whether an `Accept` field takes `text/event-stream` responses.
pub(crate) fn accepts_sse(accept: Option<&str>) -> bool {
    accept.is_some_and(|a| {
        a.split(',').any(|t| {
            let t = t.split(';').next().unwrap_or("").trim_ascii();
            t.eq_ignore_ascii_case("text/event-stream")
        })
    })
}

/// The header fields every request to `/mcp` is judged by, each the first field of its name
/// (as [`Headers::get`] finds it), read through the index [`Headers`] built as the fields were
/// added: no name is compared here.
#[derive(Clone, Copy)]
pub(crate) struct Head<'a>(&'a Headers);

impl<'a> Head<'a> {
    pub(crate) fn of(headers: &'a Headers) -> Self {
        Head(headers)
    }

    pub(crate) fn origin(&self) -> Option<&'a str> {
        self.0.field(Field::Origin)
    }
    pub(crate) fn host(&self) -> Option<&'a str> {
        self.0.field(Field::Host)
    }
    pub(crate) fn authorization(&self) -> Option<&'a str> {
        self.0.field(Field::Authorization)
    }
    pub(crate) fn content_type(&self) -> Option<&'a str> {
        self.0.field(Field::ContentType)
    }
    pub(crate) fn accept(&self) -> Option<&'a str> {
        self.0.field(Field::Accept)
    }
    pub(crate) fn version(&self) -> Option<&'a str> {
        self.0.field(Field::McpProtocolVersion)
    }
    pub(crate) fn method(&self) -> Option<&'a str> {
        self.0.field(Field::McpMethod)
    }
    pub(crate) fn name(&self) -> Option<&'a str> {
        self.0.field(Field::McpName)
    }
    pub(crate) fn session(&self) -> Option<&'a str> {
        self.0.field(Field::McpSessionId)
    }
    /// A gateway's narrowing of the request's authority (`Irix7-Policy`).
    pub(crate) fn narrowing(&self) -> Option<&'a str> {
        self.0.field(Field::Irix7Policy)
    }
}

#[cfg(test)]
mod tests {
    use super::{Head, Headers};

    #[test]
    fn a_head_holds_the_first_field_of_each_name_whatever_its_case() {
        let mut h = Headers::default();
        for (name, value) in [
            ("host", "indy"),
            ("X-Other", "x"),
            ("ACCEPT", "text/event-stream"),
            ("Host", "evil"),
            ("mcp-protocol-version", "2026-07-28"),
            ("Mcp-Names", "not Mcp-Name"),
        ] {
            h.push(name, value);
        }
        let head = Head::of(&h);
        assert_eq!(head.host(), Some("indy"));
        assert_eq!(head.host(), h.get("Host"));
        assert_eq!(head.accept(), Some("text/event-stream"));
        assert_eq!(head.version(), Some("2026-07-28"));
        assert_eq!(head.name(), None);
        assert_eq!(head.origin(), None);
        assert_eq!(head.authorization(), None);
        // Every field is found under its own name, in any case.
        let mut all = Headers::default();
        let names = [
            "origin",
            "host",
            "authorization",
            "content-type",
            "accept",
            "mcp-protocol-version",
            "mcp-method",
            "mcp-name",
            "mcp-session-id",
        ];
        for (i, name) in names.iter().enumerate() {
            all.push(name.to_ascii_uppercase(), alloc::format!("{i}"));
        }
        let head = Head::of(&all);
        let read = [
            head.origin(),
            head.host(),
            head.authorization(),
            head.content_type(),
            head.accept(),
            head.version(),
            head.method(),
            head.name(),
            head.session(),
        ];
        for (i, value) in read.iter().enumerate() {
            assert_eq!(*value, Some(alloc::format!("{i}").as_str()));
        }
    }
}
