//! What both eras know about a request once its envelope is checked: the era, the per-request
//! context [`Cx`] that dispatch works from, and the header and `params` readings both share.

use super::limits::Key;
use super::tool::LogLevel;
use crate::http::Headers;
use crate::jsonrpc::{Id, RpcError};
use alloc::borrow::Cow;
use alloc::string::String;
use base64::Engine;
use serde_json::{Map, Value};

/// Which protocol a request speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Era {
    Modern,
    Legacy(&'static str),
}

/// A request in context.
pub(crate) struct Cx<'a> {
    pub(crate) era: Era,
    pub(crate) id: &'a Id,
    pub(crate) params: &'a Map<String, Value>,
    pub(crate) caps: &'a Value,
    pub(crate) accept_sse: bool,
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

/// A request's `params` as an object: absent means `empty`; any other JSON type is refused
/// (-32602), in both eras.
pub(crate) fn object_params<'a>(
    params: Option<&'a Value>,
    empty: &'a Map<String, Value>,
) -> Result<&'a Map<String, Value>, RpcError> {
    match params {
        None => Ok(empty),
        Some(Value::Object(p)) => Ok(p),
        Some(_) => Err(RpcError::invalid_params(
            "Invalid params: must be an object",
        )),
    }
}

/// Whether the client takes `text/event-stream` responses.
pub(crate) fn accepts_sse(headers: &Headers) -> bool {
    headers.get("Accept").is_some_and(|a| {
        a.split(',').any(|t| {
            let t = t.split(';').next().unwrap_or("").trim();
            t.eq_ignore_ascii_case("text/event-stream")
        })
    })
}
