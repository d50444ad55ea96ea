//! How a result is written for the era it goes to: `resultType`, the cache hints and
//! `_meta.serverInfo` in 2026-07-28, and the members written straight into the response body
//! for the small answers sent most.

use crate::http::Response;
use crate::json::{escape_str, write_value};
use crate::jsonrpc::{self, RpcError};
use crate::mcp::guard::config::Config;
use crate::mcp::guard::request::{Cx, Era};
use crate::mcp::wire::reply;
use crate::mcp::wire::version::{META_SERVER_INFO, SERVER_NAME, TASKS_EXTENSION};
use alloc::string::String;
use alloc::vec::Vec;
use serde_json::{Map, Value, json};

/// Results that carry `ttlMs`/`cacheScope` in the modern era.
const CACHEABLE: [&str; 6] = [
    "server/discover",
    "tools/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "prompts/list",
];

/// A member of a result that [`finish_members`] writes.
pub(crate) enum Json<'a> {
    /// A value, serialised.
    Value(&'a Value),
    /// JSON text, copied.
    Raw(&'a [u8]),
    /// An array of the comma-joined JSON items given.
    Items(&'a [u8]),
    /// A string, escaped.
    Str(&'a str),
    /// An array of strings.
    Strs(&'a [&'a str]),
    /// The server's capabilities (modern era).
    Capabilities(Offers),
    /// The `_meta` of a modern result.
    Meta,
}

/// What the server offers beyond the capabilities every server of this kind has.
#[derive(Clone, Copy)]
pub(crate) struct Offers {
    /// Some tool runs as a task (the tasks extension).
    pub(crate) tasks: bool,
    /// Some resource can be subscribed to.
    pub(crate) subscribe: bool,
}

/// The server's capabilities as JSON, written out: `server/discover` sends them with
/// every answer.
pub(crate) fn write_capabilities(offers: Offers, modern: bool, out: &mut Vec<u8>) {
    out.extend_from_slice(b"{\"completions\":{},");
    if modern && offers.tasks {
        out.extend_from_slice(b"\"extensions\":{\"");
        out.extend_from_slice(TASKS_EXTENSION.as_bytes());
        out.extend_from_slice(b"\":{}},");
    }
    out.extend_from_slice(b"\"logging\":{},\"prompts\":{},\"resources\":");
    // Legacy: on the session's GET stream; modern: on `subscriptions/listen` streams.
    if offers.subscribe {
        out.extend_from_slice(b"{\"subscribe\":true}");
    } else {
        out.extend_from_slice(b"{}");
    }
    out.extend_from_slice(b",\"tools\":{}}");
}

fn server_info(version: &str) -> Value {
    json!({"name": SERVER_NAME, "version": version})
}

/// The answer `result` of `method` makes, stamped for the era (see [`stamp_modern`]).
pub(crate) fn finish(config: &Config, cx: &Cx<'_>, method: &str, result: Value) -> Response {
    let Value::Object(mut r) = result else {
        return reply::result(cx.id, &result);
    };
    stamp_modern(config, cx, method, &mut r);
    reply::result(cx.id, &Value::Object(r))
}

/// Adds what a 2026-07-28 result carries besides the method's own members: `resultType`
/// (unless the method set one), the cache hints of cacheable methods, and the server's
/// info in `_meta`. A legacy result is left as it is.
fn stamp_modern(config: &Config, cx: &Cx<'_>, method: &str, r: &mut Map<String, Value>) {
    if cx.era != Era::Modern {
        return;
    }
    r.entry("resultType")
        .or_insert_with(|| Value::from("complete"));
    if CACHEABLE.contains(&method) {
        r.insert("ttlMs".into(), Value::from(config.limits.cache_ttl_ms));
        r.insert("cacheScope".into(), Value::from("private"));
    }
    let meta = r
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(m) = meta {
        m.insert(META_SERVER_INFO.into(), server_info(&config.version));
    }
}

/// Like [`finish`] for a result given as its `members`, sorted by name: they and
/// the members [`stamp_modern`] would add are written straight into the response
/// body in the order a `Map` serialises them, so no `Map` is built, stamped and serialised
/// for the small cacheable answers sent most. `size` is about the bytes the members take.
pub(crate) fn finish_members(
    config: &Config,
    cx: &Cx<'_>,
    method: &str,
    members: &[(&str, Json<'_>)],
    size: usize,
) -> Response {
    let ttl = Value::from(config.limits.cache_ttl_ms);
    let cacheable = CACHEABLE.contains(&method);
    let modern = cx.era == Era::Modern;
    let own_result_type = members.iter().any(|(k, _)| *k == "resultType");
    let own_meta = members.iter().any(|(k, _)| *k == "_meta");
    let stamps = [
        ("_meta", Json::Meta, modern && !own_meta),
        ("cacheScope", Json::Str("private"), modern && cacheable),
        (
            "resultType",
            Json::Str("complete"),
            modern && !own_result_type,
        ),
        ("ttlMs", Json::Value(&ttl), modern && cacheable),
    ];
    let mut stamps = stamps
        .iter()
        .filter(|s| s.2)
        .map(|(k, v, _)| (*k, v))
        .peekable();
    let mut own = members.iter().map(|(k, v)| (*k, v)).peekable();
    let mut out = Vec::with_capacity(size + 320);
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    out.extend_from_slice(cx.id.as_json().as_bytes());
    out.extend_from_slice(b",\"result\":{");
    let mut first = true;
    loop {
        let next = match (own.peek(), stamps.peek()) {
            (Some(a), Some(b)) if b.0 < a.0 => stamps.next(),
            (Some(_), _) => own.next(),
            (None, _) => stamps.next(),
        };
        let Some((key, json)) = next else { break };
        if !first {
            out.push(b',');
        }
        first = false;
        out.push(b'"');
        escape_str(key, &mut out);
        out.extend_from_slice(b"\":");
        write_json(&config.version, json, &mut out);
    }
    out.extend_from_slice(b"}}");
    reply::json(200, out)
}

fn write_json(version: &str, json: &Json<'_>, out: &mut Vec<u8>) {
    match json {
        Json::Value(v) => write_value(out, v),
        Json::Raw(raw) => out.extend_from_slice(raw),
        Json::Items(items) => {
            out.push(b'[');
            out.extend_from_slice(items);
            out.push(b']');
        }
        Json::Str(s) => {
            out.push(b'"');
            escape_str(s, out);
            out.push(b'"');
        }
        Json::Strs(items) => {
            out.push(b'[');
            for (i, s) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_json(version, &Json::Str(s), out);
            }
            out.push(b']');
        }
        Json::Capabilities(offers) => write_capabilities(*offers, true, out),
        Json::Meta => write_meta(version, out),
    }
}

/// The error answer to a request, with the HTTP status its era gives that error.
pub(crate) fn fail(cx: &Cx<'_>, err: RpcError) -> Response {
    let status = match (cx.era, err.code) {
        (Era::Modern, jsonrpc::METHOD_NOT_FOUND) => 404,
        (Era::Modern, reply::MISSING_CAPABILITY | reply::HEADER_MISMATCH) => 400,
        _ => 200,
    };
    reply::error(status, Some(cx.id), &err)
}

/// `{"io.modelcontextprotocol/serverInfo":{"name":…,"version":…}}`, the `_meta` of every
/// modern result.
fn write_meta(version: &str, out: &mut Vec<u8>) {
    out.extend_from_slice(b"{\"");
    out.extend_from_slice(META_SERVER_INFO.as_bytes());
    out.extend_from_slice(b"\":{\"name\":\"");
    escape_str(SERVER_NAME, out);
    out.extend_from_slice(b"\",\"version\":\"");
    escape_str(version, out);
    out.extend_from_slice(b"\"}}");
}

/// The JSON members an era adds to every tool result (none in legacy), written out rather
/// than built as a `Map` and serialised. They depend on the configured version only: the
/// server writes the modern era's once, when it is made, and copies them into each result.
pub(crate) fn result_extra(era: Era, version: &str) -> Vec<u8> {
    let mut out = Vec::new();
    if let Era::Modern = era {
        out.reserve(110 + version.len());
        out.extend_from_slice(b",\"resultType\":\"complete\",\"_meta\":");
        write_meta(version, &mut out);
    }
    out
}
