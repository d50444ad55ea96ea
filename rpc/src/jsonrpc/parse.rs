//! Parsing a request body into JSON-RPC messages. Values are only syntax-checked where they are
//! kept raw (the id), so numbers of any size or precision survive untouched.

use super::{INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR, RpcError};
use crate::budget::{Lease, Pool};
use alloc::borrow::Cow;
use alloc::rc::Rc;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::fmt;
use core::marker::PhantomData;
use serde::de::{self, Deserialize, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

/// A request id, kept as the exact JSON text the client sent (a string, number or null).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Id(IdText);

/// Bytes of id text kept inline: ids are nearly always small numbers or short strings.
const INLINE_ID: usize = 22;

/// An id's text: inline when it fits (no allocation per request), else on the heap. Which
/// form a text takes depends only on its length, so equal texts compare equal.
#[derive(Clone, Debug, PartialEq, Eq)]
enum IdText {
    Inline(u8, [u8; INLINE_ID]),
    Heap(String),
}

impl Id {
    /// The JSON `null` id, used when a request's id could not be read.
    pub fn null() -> Self {
        Id::of("null")
    }

    fn of(text: &str) -> Self {
        let mut inline = [0u8; INLINE_ID];
        match (inline.get_mut(..text.len()), u8::try_from(text.len())) {
            (Some(room), Ok(len)) => {
                room.copy_from_slice(text.as_bytes());
                Id(IdText::Inline(len, inline))
            }
            _ => Id(IdText::Heap(text.to_string())),
        }
    }

    /// An id from a JSON value; `None` unless it is a string, number or null.
    pub fn from_value(v: &Value) -> Option<Self> {
        match v {
            Value::String(_) | Value::Number(_) | Value::Null => Some(Id::of(&v.to_string())),
            _ => None,
        }
    }

    /// The id exactly as it appeared in the request.
    pub fn as_json(&self) -> &str {
        match &self.0 {
            // Inline text was copied whole from a `str`, so it is UTF-8.
            IdText::Inline(len, bytes) => bytes
                .get(..usize::from(*len))
                .and_then(|b| core::str::from_utf8(b).ok())
                .unwrap_or("null"),
            IdText::Heap(text) => text,
        }
    }

    /// The id as a JSON value (for comparing with a `requestId` in a notification). Numbers
    /// that do not fit a double come back as `None`.
    pub fn to_value(&self) -> Option<Value> {
        serde_json::from_str(self.as_json()).ok()
    }

    /// The same request id written another way (`1` vs `1.0` are different ids; `"a"` and
    /// `"\u0061"` are the same) is matched by value.
    pub fn matches(&self, v: &Value) -> bool {
        match self.to_value() {
            Some(mine) => &mine == v,
            None => false,
        }
    }

    fn from_raw(raw: &RawValue) -> Option<Self> {
        let text = raw.get();
        match text.as_bytes().first() {
            Some(b'"') | Some(b'-') | Some(b'0'..=b'9') | Some(b'n') => Some(Id::of(text)),
            _ => None,
        }
    }
}

/// The method names this server answers: a request naming one of them holds the name without
/// allocating a copy of it.
const METHODS: [&str; 20] = [
    "tools/call",
    "tools/list",
    "resources/read",
    "initialize",
    "server/discover",
    "tasks/get",
    "tasks/update",
    "tasks/cancel",
    "resources/templates/list",
    "resources/list",
    "prompts/list",
    "prompts/get",
    "notifications/cancelled",
    "notifications/initialized",
    "subscriptions/listen",
    "resources/subscribe",
    "resources/unsubscribe",
    "ping",
    "logging/setLevel",
    "completion/complete",
];

/// One parsed JSON-RPC message.
#[derive(Clone, Debug, PartialEq)]
pub enum Message {
    /// A request: it gets a response echoing `id`.
    Request {
        id: Id,
        method: Cow<'static, str>,
        params: Option<Value>,
    },
    /// A notification: no id, no response.
    Notification {
        method: Cow<'static, str>,
        params: Option<Value>,
    },
    /// A response sent by the client to a request of the server (legacy sessions: answers
    /// to `sampling/createMessage`, `elicitation/create`, `roots/list`).
    Response {
        id: Option<Id>,
        /// `Ok(result)` or `Err(error object)`.
        outcome: Result<Value, Value>,
    },
}

impl Message {
    /// The method name, if this is a request or notification.
    pub fn method(&self) -> Option<&str> {
        match self {
            Message::Request { method, .. } | Message::Notification { method, .. } => Some(method),
            Message::Response { .. } => None,
        }
    }

    /// The params, if any.
    pub fn params(&self) -> Option<&Value> {
        match self {
            Message::Request { params, .. } | Message::Notification { params, .. } => {
                params.as_ref()
            }
            Message::Response { .. } => None,
        }
    }

    /// The id, if this is a request.
    pub fn id(&self) -> Option<&Id> {
        match self {
            Message::Request { id, .. } => Some(id),
            _ => None,
        }
    }
}

/// Why a message could not be taken: the error to send and the id to send it under (the
/// request's id when it could be read, else null).
#[derive(Clone, Debug, PartialEq)]
pub struct ParseFailure {
    pub id: Option<Id>,
    pub error: RpcError,
}

impl ParseFailure {
    fn new(id: Option<Id>, code: i32, message: &str) -> Self {
        ParseFailure {
            id,
            error: RpcError::new(code, message),
        }
    }
}

/// A body: one message, or a batch (JSON array) of them.
#[derive(Debug, PartialEq)]
pub enum Incoming {
    Single(Result<Message, ParseFailure>),
    Batch(Vec<Result<Message, ParseFailure>>),
}

/// Why [`parse_within`] did not parse a body.
#[derive(Debug, PartialEq)]
pub enum Refusal {
    /// The body is unusable (see [`parse`]).
    Invalid(ParseFailure),
    /// The memory its parse would take is not in the budget now; the client may retry.
    OverBudget,
}

/// Heap a parse takes at most per value (the `Value`, its slot in a map or vector) and per
/// byte of body (the strings of `params` are copied into their values; batch items are read
/// in place like a single message, so one of the two is margin).
const COST_PER_VALUE: usize = 64;
const COST_PER_BYTE: usize = 2;

/// Like [`parse`], with the memory the parsed messages hold charged to `pool` before anything
/// is built; the lease must be kept as long as the messages are.
pub fn parse_within(body: &[u8], pool: &Rc<Pool>) -> Result<(Incoming, Lease), Refusal> {
    let shape = check_shape(body).map_err(Refusal::Invalid)?;
    let cost = shape
        .values
        .saturating_mul(COST_PER_VALUE)
        .saturating_add(body.len().saturating_mul(COST_PER_BYTE));
    let lease = pool.take(cost).ok_or(Refusal::OverBudget)?;
    let incoming = parse_checked(body).map_err(Refusal::Invalid)?;
    Ok((incoming, lease))
}

/// Parses a request body. `Err` means the body as a whole is unusable (not JSON: -32700; an
/// empty batch or a JSON scalar: -32600).
pub fn parse(body: &[u8]) -> Result<Incoming, ParseFailure> {
    check_shape(body)?;
    parse_checked(body)
}

/// The pre-scan's verdict: nesting and value count within the limits.
fn check_shape(body: &[u8]) -> Result<Shape, ParseFailure> {
    let shape = shape(body);
    if shape.deepest > MAX_NESTING {
        return Err(ParseFailure::new(
            None,
            INVALID_REQUEST,
            "Invalid Request: nested too deeply",
        ));
    }
    if shape.values > MAX_VALUES {
        return Err(ParseFailure::new(
            None,
            INVALID_REQUEST,
            "Invalid Request: more values than a request may hold",
        ));
    }
    Ok(shape)
}

/// Parses a body whose shape passed [`check_shape`].
fn parse_checked(body: &[u8]) -> Result<Incoming, ParseFailure> {
    let syntax = || ParseFailure::new(None, PARSE_ERROR, "Parse error");
    // JSON text is UTF-8 (RFC 8259): checked once for the whole body, which serde then reads
    // as text, without checking each string again.
    let text = core::str::from_utf8(body).map_err(|_| syntax())?;
    let first = text
        .bytes()
        .find(|b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n'));
    match first {
        Some(b'[') => {
            // Borrowed from the body: no item is copied before it is read.
            let items: Vec<&RawValue> = serde_json::from_str(text).map_err(|_| syntax())?;
            if items.is_empty() {
                return Err(ParseFailure::new(
                    None,
                    INVALID_REQUEST,
                    "Invalid Request: empty batch",
                ));
            }
            Ok(Incoming::Batch(
                items.iter().map(|raw| parse_one(raw.get())).collect(),
            ))
        }
        // Any well-formed object reads as an envelope, so failing to read one is a syntax error.
        Some(b'{') => read_envelope(text).map(Incoming::Single).ok_or_else(syntax),
        _ => match serde_json::from_str::<IgnoredAny>(text) {
            Ok(_) => Err(ParseFailure::new(
                None,
                INVALID_REQUEST,
                "Invalid Request: not an object",
            )),
            Err(_) => Err(syntax()),
        },
    }
}

/// Deepest array/object nesting accepted. MCP messages need a handful of levels; the limit
/// keeps the recursive decoders (serde_json, the schema validator) within a small kernel stack.
pub const MAX_NESTING: usize = 32;

/// Most values (array items, object members, nested or not) in one request. The parsed tree
/// costs tens of bytes per value whatever their text costs (`[]` is 2 bytes of input and a
/// whole `Value`), so this, not the body size, bounds the memory a parse takes. MCP requests
/// hold a few dozen; big inputs (`fs.write`) are one string.
pub const MAX_VALUES: usize = 4096;

/// What the pre-scan sees of a body before serde builds anything from it.
struct Shape {
    /// The deepest bracket nesting.
    deepest: usize,
    /// Values inside containers, counted as opening brackets and commas: at least as many as
    /// serde would build.
    values: usize,
}

/// The shape of `body`, ignoring brackets and commas inside strings. Works on any bytes
/// (malformed JSON is the parser's business). Not inlined into its caller, so that a profile
/// counts this scan as JSON parsing, which it is, not as the caller's own work.
#[inline(never)]
fn shape(body: &[u8]) -> Shape {
    let (mut depth, mut deepest, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    let mut values = 0usize;
    let mut i = 0;
    while let Some(&b) = body.get(i) {
        i += 1;
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                // Most of a big body is string content: skipped four bytes at a time.
                _ => i += quiet_run(body.get(i..).unwrap_or(&[])),
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
                values += 1;
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            b',' => values += 1,
            _ => {}
        }
    }
    Shape { deepest, values }
}

/// How many leading whole words of `bytes` hold neither `"` nor `\`, in bytes. Four words per
/// test and branch (the loop's own instructions shared by 16 bytes): most of a big body is
/// string content, and this is the pre-scan's loop. Inlined there, so its constants are set
/// up once per body rather than once per string.
#[inline(always)]
fn quiet_run(bytes: &[u8]) -> usize {
    const ONES: u32 = 0x0101_0101;
    const HIGH: u32 = 0x8080_8080;
    // A byte's high bit is set here if that byte of `w`, or one below it, is `"` or `\`
    // (a word has a zero byte exactly when `z - ONES & !z` has a high bit set).
    #[inline(always)]
    fn loud(w: u32) -> u32 {
        let (q, b) = (w ^ 0x2222_2222, w ^ 0x5c5c_5c5c);
        (q.wrapping_sub(ONES) & !q) | (b.wrapping_sub(ONES) & !b)
    }
    // Cheaper, and exact for ASCII words: the high bits of `w` itself, and of `x - ONES` for
    // `x` the word xor a quote or a backslash, which for bytes below 0x80 borrows into a
    // byte's high bit only from a zero byte. Text with other bytes takes `loud` as well.
    #[inline(always)]
    fn maybe_loud(w: u32) -> u32 {
        w | (w ^ 0x2222_2222).wrapping_sub(ONES) | (w ^ 0x5c5c_5c5c).wrapping_sub(ONES)
    }
    #[inline(always)]
    fn word(p: &[u8], at: usize) -> Option<u32> {
        match p.get(at..at + 4) {
            Some(&[a, b, c, d]) => Some(u32::from_ne_bytes([a, b, c, d])),
            _ => None,
        }
    }
    // Most strings of an envelope end within a few words: those a word at a time.
    let mut n = 0;
    while n < 16 {
        match word(bytes, n) {
            Some(w) if loud(w) & HIGH == 0 => n += 4,
            _ => return n,
        }
    }
    let rest = bytes.get(16..).unwrap_or(&[]);
    let quiet = rest.chunks_exact(16).position(|p| {
        let w = |at| word(p, at).unwrap_or(0x2222_2222);
        let (a, b, c, d) = (w(0), w(4), w(8), w(12));
        (maybe_loud(a) | maybe_loud(b) | maybe_loud(c) | maybe_loud(d)) & HIGH != 0
            && (loud(a) | loud(b) | loud(c) | loud(d)) & HIGH != 0
    });
    n += 16 * quiet.unwrap_or(rest.len() / 16);
    // The quiet words before the loud one in the last chunk, or the tail's.
    while let Some(w) = word(bytes, n) {
        if loud(w) & HIGH != 0 {
            break;
        }
        n += 4;
    }
    n
}

/// A message's members as raw text borrowed from the body, `params` built or raw: read in one
/// pass, without copying any other member or building a map of them. A member given twice
/// counts as its last occurrence.
#[derive(Default)]
struct Envelope<'a> {
    jsonrpc: Option<&'a RawValue>,
    id: Option<&'a RawValue>,
    method: Option<&'a RawValue>,
    params: Option<Params<'a>>,
    result: Option<&'a RawValue>,
    error: Option<&'a RawValue>,
}

/// A message's `params` as the envelope read them: built already, or raw text to build from.
enum Params<'a> {
    Built(Value),
    Raw(&'a RawValue),
}

/// Reads an [`Envelope`], building its `params` as they are read or keeping them raw.
struct Read {
    build: bool,
}

/// The envelope member a key names, `Other` for any key that is not one.
enum Member {
    Jsonrpc,
    Id,
    Method,
    Params,
    Result,
    Error,
    Other,
}

impl<'de> Deserialize<'de> for Member {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Names;
        impl Visitor<'_> for Names {
            type Value = Member;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a member name")
            }
            // Called with the key's text whether or not it had escapes to undo.
            fn visit_str<E: de::Error>(self, key: &str) -> Result<Member, E> {
                Ok(match key {
                    "jsonrpc" => Member::Jsonrpc,
                    "id" => Member::Id,
                    "method" => Member::Method,
                    "params" => Member::Params,
                    "result" => Member::Result,
                    "error" => Member::Error,
                    _ => Member::Other,
                })
            }
        }
        d.deserialize_identifier(Names)
    }
}

impl<'de> DeserializeSeed<'de> for Read {
    type Value = Envelope<'de>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Envelope<'de>, D::Error> {
        struct Members<'a>(bool, PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for Members<'a> {
            type Value = Envelope<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON-RPC message object")
            }
            fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Envelope<'a>, M::Error> {
                let mut e = Envelope::default();
                while let Some(key) = map.next_key::<Member>()? {
                    let slot = match key {
                        Member::Jsonrpc => &mut e.jsonrpc,
                        Member::Id => &mut e.id,
                        Member::Method => &mut e.method,
                        Member::Params => {
                            e.params = Some(match self.0 {
                                true => Params::Built(map.next_value()?),
                                false => Params::Raw(map.next_value()?),
                            });
                            continue;
                        }
                        Member::Result => &mut e.result,
                        Member::Error => &mut e.error,
                        Member::Other => {
                            map.next_value::<IgnoredAny>()?;
                            continue;
                        }
                    };
                    *slot = Some(map.next_value::<&'de RawValue>()?);
                }
                Ok(e)
            }
        }
        d.deserialize_map(Members(self.build, PhantomData))
    }
}

/// Parses one batch item from well-formed JSON text: invalid unless it is an object.
fn parse_one(text: &str) -> Result<Message, ParseFailure> {
    read_envelope(text).unwrap_or_else(|| {
        Err(ParseFailure::new(
            None,
            INVALID_REQUEST,
            "Invalid Request: not an object",
        ))
    })
}

/// The message in an object's text, `None` if the text is not a JSON object. The `params`
/// are built as they are read, so their text is scanned once; only when that fails (a
/// syntax error, or a value serde cannot hold, such as `1e999`) is the text read again with
/// the params kept raw, to tell the two apart and answer under the request's id.
fn read_envelope(text: &str) -> Option<Result<Message, ParseFailure>> {
    let map = read(text, true).or_else(|_| read(text, false)).ok()?;
    Some(message(map))
}

/// One read of an object's text into an [`Envelope`].
fn read(text: &str, build: bool) -> serde_json::Result<Envelope<'_>> {
    let mut d = serde_json::Deserializer::from_str(text);
    let map = Read { build }.deserialize(&mut d)?;
    d.end().map(|()| map)
}

/// The message an envelope holds, or why it holds none.
fn message(map: Envelope<'_>) -> Result<Message, ParseFailure> {
    let id = match map.id {
        None => None,
        Some(raw) => match Id::from_raw(raw) {
            Some(id) => Some(id),
            None => {
                return Err(ParseFailure::new(
                    None,
                    INVALID_REQUEST,
                    "Invalid Request: id must be a string, number or null",
                ));
            }
        },
    };
    // The version as sent is nearly always the plain `"2.0"`: compared without decoding it.
    let version_ok = map.jsonrpc.is_some_and(|raw| {
        raw.get() == "\"2.0\""
            || serde_json::from_str::<String>(raw.get()).is_ok_and(|v| v == "2.0")
    });
    if !version_ok {
        return Err(ParseFailure::new(
            id,
            INVALID_REQUEST,
            "Invalid Request: jsonrpc must be \"2.0\"",
        ));
    }
    let Some(raw_method) = map.method else {
        let value = |raw: Option<&RawValue>| {
            raw.and_then(|raw| serde_json::from_str::<Value>(raw.get()).ok())
        };
        if let Some(result) = value(map.result) {
            return Ok(Message::Response {
                id,
                outcome: Ok(result),
            });
        }
        if let Some(error) = value(map.error) {
            return Ok(Message::Response {
                id,
                outcome: Err(error),
            });
        }
        return Err(ParseFailure::new(
            id,
            INVALID_REQUEST,
            "Invalid Request: no method",
        ));
    };
    // A method name is nearly always plain ASCII in quotes: taken as it is, without decoding.
    let text = raw_method.get();
    let plain = text
        .strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .filter(|t| t.bytes().all(|b| b != b'\\' && b != b'"'));
    let decoded = match plain {
        Some(name) => Ok(match METHODS.iter().find(|m| **m == name) {
            Some(known) => Cow::Borrowed(*known),
            None => Cow::Owned(String::from(name)),
        }),
        None => serde_json::from_str::<String>(text).map(Cow::Owned),
    };
    let Ok(method) = decoded else {
        return Err(ParseFailure::new(
            id,
            INVALID_REQUEST,
            "Invalid Request: method must be a string",
        ));
    };
    let params = match map.params {
        None => None,
        Some(p) => match match p {
            Params::Built(v) => Ok(v),
            Params::Raw(raw) => serde_json::from_str::<Value>(raw.get()),
        } {
            Ok(v @ (Value::Object(_) | Value::Array(_))) => Some(v),
            Ok(_) => {
                return Err(ParseFailure::new(
                    id,
                    INVALID_REQUEST,
                    "Invalid Request: params must be an object or array",
                ));
            }
            Err(_) => {
                return Err(ParseFailure::new(
                    id,
                    INVALID_PARAMS,
                    "Invalid params: unreadable value",
                ));
            }
        },
    };
    Ok(match id {
        Some(id) => Message::Request { id, method, params },
        None => Message::Notification { method, params },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::String;

    #[test]
    fn many_tiny_values_are_refused_before_any_tree_is_built() {
        let mut body =
            String::from("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":{\"x\":[");
        for i in 0..MAX_VALUES {
            body.push_str(if i == 0 { "[]" } else { ",[]" });
        }
        body.push_str("]}}");
        let e = parse(body.as_bytes()).unwrap_err();
        assert_eq!(e.error.code, INVALID_REQUEST);
        assert!(e.error.message.contains("more values"));
        // A long string is one value, whatever its commas.
        let text = ",".repeat(100_000);
        let body = alloc::format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":{{\"x\":\"{text}\"}}}}"
        );
        assert!(matches!(
            parse(body.as_bytes()),
            Ok(Incoming::Single(Ok(_)))
        ));
    }

    #[test]
    fn params_serde_cannot_hold_are_invalid_params_under_the_request_s_id() {
        // Read in the same pass as the envelope; a number out of range fails that pass, and the
        // second read (params raw) still tells it from a syntax error and finds the id after it.
        let bad = r#"{"jsonrpc":"2.0","method":"m","params":{"x":1e999},"id":7}"#;
        let Ok(Incoming::Single(Err(f))) = parse(bad.as_bytes()) else {
            panic!("{bad}");
        };
        assert_eq!(
            (f.error.code, f.id.as_ref().map(Id::as_json)),
            (INVALID_PARAMS, Some("7"))
        );
        let broken = r#"{"jsonrpc":"2.0","method":"m","params":{"x":1e999,},"id":7}"#;
        assert_eq!(
            parse(broken.as_bytes()).unwrap_err().error.code,
            PARSE_ERROR
        );
        // The same in a batch, next to a good item, and a later `params` replaces an earlier.
        let batch = alloc::format!(
            r#"[{bad},{{"jsonrpc":"2.0","id":8,"method":"m","params":{{"x":1e999}},"params":[2]}}]"#
        );
        let Ok(Incoming::Batch(items)) = parse(batch.as_bytes()) else {
            panic!("{batch}");
        };
        assert_eq!(items[0].as_ref().unwrap_err().error.code, INVALID_PARAMS);
        let good = items[1].as_ref().unwrap();
        assert_eq!(good.params(), Some(&serde_json::json!([2])));
        assert_eq!(good.method(), Some("m"));
    }

    #[test]
    fn method_names_are_decoded_whether_plain_or_escaped() {
        for (text, want) in [
            (r#""tools/list""#, Some("tools/list")),
            (r#""tools\/list""#, Some("tools/list")),
            (r#""\u0074ools/list""#, Some("tools/list")),
            (r#""""#, Some("")),
            ("7", None),
        ] {
            let body = alloc::format!("{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":{text}}}");
            let Ok(Incoming::Single(m)) = parse(body.as_bytes()) else {
                panic!("{body}");
            };
            assert_eq!(m.as_ref().ok().and_then(Message::method), want, "{body}");
        }
        // A name the server answers is held without a copy; any other name is copied.
        for (name, borrowed) in [("tools/call", true), ("tools/calls", false), ("m", false)] {
            let body = alloc::format!("{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"{name}\"}}");
            let Ok(Incoming::Single(Ok(Message::Request { method, .. }))) = parse(body.as_bytes())
            else {
                panic!("{body}");
            };
            assert_eq!(
                (&*method, matches!(method, Cow::Borrowed(_))),
                (name, borrowed)
            );
        }
    }

    #[test]
    fn ids_short_and_long_keep_their_text() {
        // The longest text kept inline, and one byte more.
        let fits = alloc::format!("\"{}\"", "x".repeat(INLINE_ID - 2));
        let over = alloc::format!("\"{}\"", "x".repeat(INLINE_ID - 1));
        for text in ["1", "null", "\"é\"", "-1.5e3", &fits, &over] {
            let body = alloc::format!("{{\"jsonrpc\":\"2.0\",\"id\":{text},\"method\":\"m\"}}");
            let Ok(Incoming::Single(Ok(m))) = parse(body.as_bytes()) else {
                panic!("{body}");
            };
            assert_eq!(m.id().map(Id::as_json), Some(text));
            assert_eq!(m.id(), Some(&Id::of(text)));
        }
    }

    #[test]
    fn the_word_scan_agrees_with_a_byte_scan() {
        // Quotes, escapes and brackets at every offset from a word boundary.
        for pad in 0..8 {
            let text = "x".repeat(pad);
            let body = alloc::format!(
                r#"{{"a":"{text}\"[{text}\\","b":[1,{{"c":"{text}]\\\"{text}"}}],"d":"{text}"}}"#
            );
            let s = shape(body.as_bytes());
            assert_eq!((s.deepest, s.values), (3, 6), "{body}");
        }
        assert_eq!(quiet_run(b"abcdefgh\"ij"), 8);
        assert_eq!(quiet_run(b"abc\\defgh"), 0);
        assert_eq!(quiet_run(b"abcdefg"), 4);
        // Every byte value as filler, a quote or backslash at every offset of two 16-byte
        // chunks and a tail: the run is the whole words before it.
        for fill in 0..=255u8 {
            let quiet = fill != b'"' && fill != b'\\';
            for at in 0..37 {
                for loud in [b'"', b'\\'] {
                    let mut bytes = [fill; 37];
                    bytes[at] = loud;
                    let want = if quiet { at / 4 * 4 } else { 0 };
                    assert_eq!(quiet_run(&bytes), want, "{fill:#x} {at}");
                }
            }
        }
    }

    #[test]
    fn nesting_ignores_strings_and_is_limited() {
        let s = shape(br#"{"a":[1,{"b":"[[[{{{\",\"]"}]}"#);
        assert_eq!((s.deepest, s.values), (3, 4));
        let deep = |n: usize| {
            let mut s =
                String::from("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":{\"x\":");
            for _ in 0..n {
                s.push('[');
            }
            for _ in 0..n {
                s.push(']');
            }
            s.push_str("}}");
            s
        };
        assert!(parse(deep(MAX_NESTING - 2).as_bytes()).is_ok());
        let err = parse(deep(MAX_NESTING).as_bytes()).unwrap_err();
        assert_eq!(err.error.code, INVALID_REQUEST);
    }
}
