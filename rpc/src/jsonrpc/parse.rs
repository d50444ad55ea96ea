//! Parsing a request body into JSON-RPC messages, in one reading pass (`read`). Values are only
//! syntax-checked where they are kept raw (the id), so numbers of any size or precision survive
//! untouched.

use super::{INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR, RpcError};
use crate::json::{self, COST_PER_BYTE, Reader, Repeat, Tape, ValueRef};
use alloc::borrow::Cow;
use alloc::format;
use alloc::rc::Rc;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use irix7_kmem::budget::{Lease, Pool};
use serde_json::Value;

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
        json::read_value(self.as_json())
    }

    /// The same request id written another way (`1` vs `1.0` are different ids; `"a"` and
    /// `"\u0061"` are the same) is matched by value.
    pub fn matches(&self, v: &Value) -> bool {
        match self.to_value() {
            Some(mine) => &mine == v,
            None => false,
        }
    }

    fn from_raw(text: &str) -> Option<Self> {
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

/// One parsed JSON-RPC message, its `params` read in place in the body.
#[derive(Clone, Debug, PartialEq)]
pub enum Message<'a> {
    /// A request: it gets a response echoing `id`.
    Request {
        id: Id,
        method: Cow<'static, str>,
        params: Option<ValueRef<'a>>,
    },
    /// A notification: no id, no response.
    Notification {
        method: Cow<'static, str>,
        params: Option<ValueRef<'a>>,
    },
    /// A response sent by the client to a request of the server (legacy sessions: answers
    /// to `sampling/createMessage`, `elicitation/create`, `roots/list`).
    Response {
        id: Option<Id>,
        /// `Ok(result)` or `Err(error object)`.
        outcome: Result<Value, Value>,
    },
}

impl<'a> Message<'a> {
    /// The method name, if this is a request or notification.
    pub fn method(&self) -> Option<&str> {
        match self {
            Message::Request { method, .. } | Message::Notification { method, .. } => Some(method),
            Message::Response { .. } => None,
        }
    }

    /// The params, if any (an object or an array).
    pub fn params(&self) -> Option<ValueRef<'a>> {
        match self {
            Message::Request { params, .. } | Message::Notification { params, .. } => *params,
            Message::Response { .. } => None,
        }
    }

    /// Points the params at the tape they were read onto, once it is complete.
    fn attach(&mut self, tape: &'a Tape) {
        if let Message::Request { params, .. } | Message::Notification { params, .. } = self
            && let Some(p) = params
        {
            p.attach(tape);
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
pub enum Incoming<'a> {
    Single(Result<Message<'a>, ParseFailure>),
    Batch(Vec<Result<Message<'a>, ParseFailure>>),
}

/// Why [`parse_within`] did not parse a body.
#[derive(Debug, PartialEq)]
pub enum Refusal {
    /// The body is unusable: not JSON (-32700); an empty batch or a JSON scalar, nesting or
    /// values past the limits (-32600).
    Invalid(ParseFailure),
    /// The memory its parse would take is not in the budget now; the client may retry.
    OverBudget,
}

/// Parses a request body, each message's `params` onto `tape` (emptied first), with the
/// memory the parsed messages hold charged to `pool` before it is built (the body's bytes at once, the values a batch at a time as they are read); the lease
/// must be kept as long as the messages are.
pub fn parse_within<'a>(
    body: &'a [u8],
    pool: &Rc<Pool>,
    tape: &'a mut Tape,
) -> Result<(Incoming<'a>, Lease), Refusal> {
    let lease = pool
        .take(body.len().saturating_mul(COST_PER_BYTE))
        .ok_or(Refusal::OverBudget)?;
    match read_body(body, Some(lease), tape) {
        Ok((incoming, Some(lease))) => Ok((incoming, lease)),
        Ok((_, None)) | Err(Fault::Read(json::Fault::OverBudget)) => Err(Refusal::OverBudget),
        Err(fault) => Err(Refusal::Invalid(failure(fault))),
    }
}

/// Parses a request body without a budget, each message's `params` onto `tape` (emptied
/// first), for tests. `Err` means the body as a whole is unusable (see [`parse_within`]).
#[cfg(test)]
pub(crate) fn parse<'a>(body: &'a [u8], tape: &'a mut Tape) -> Result<Incoming<'a>, ParseFailure> {
    read_body(body, None, tape)
        .map(|(incoming, _)| incoming)
        .map_err(failure)
}

/// Why a whole body is refused.
enum Fault {
    Read(json::Fault),
    EmptyBatch,
    NotObject,
}

impl From<json::Fault> for Fault {
    fn from(f: json::Fault) -> Self {
        Fault::Read(f)
    }
}

fn failure(fault: Fault) -> ParseFailure {
    let (code, message) = match fault {
        Fault::Read(json::Fault::Deep) => (INVALID_REQUEST, "Invalid Request: nested too deeply"),
        Fault::Read(json::Fault::Many) => (
            INVALID_REQUEST,
            "Invalid Request: more values than a request may hold",
        ),
        Fault::EmptyBatch => (INVALID_REQUEST, "Invalid Request: empty batch"),
        Fault::NotObject => (INVALID_REQUEST, "Invalid Request: not an object"),
        Fault::Read(json::Fault::Syntax | json::Fault::OverBudget) => (PARSE_ERROR, "Parse error"),
    };
    ParseFailure::new(None, code, message)
}

/// Reads a whole body in one pass: each message's envelope read and its `params` put on
/// `tape`, every other member checked and stepped over.
fn read_body<'a>(
    body: &'a [u8],
    lease: Option<Lease>,
    tape: &'a mut Tape,
) -> Result<(Incoming<'a>, Option<Lease>), Fault> {
    tape.clear();
    // JSON text is UTF-8 (RFC 8259): checked once for the whole body, which is then read as
    // text without checking each string again. Bodies are nearly all ASCII, which kmem's word
    // loop tells at half the cost of core's validator; only other bodies go through that.
    let text = irix7_kmem::ascii(body)
        .or_else(|| core::str::from_utf8(body).ok())
        .ok_or(json::Fault::Syntax)?;
    let mut r = Reader::new(text, lease);
    let incoming = match r.peek() {
        Some(b'[') => {
            let mut items = Vec::new();
            r.enter()?;
            r.items(0, |r, inner| {
                let item = match r.peek() {
                    Some(b'{') => message(envelope(r, inner, tape)?),
                    _ => {
                        r.skip(inner, tape)?;
                        Err(failure(Fault::NotObject))
                    }
                };
                items.push(item);
                Ok(())
            })?;
            if items.is_empty() {
                r.end()?;
                return Err(Fault::EmptyBatch);
            }
            Incoming::Batch(items)
        }
        Some(b'{') => Incoming::Single(message(envelope(&mut r, 0, tape)?)),
        _ => {
            r.skip(0, tape)?;
            r.end()?;
            return Err(Fault::NotObject);
        }
    };
    r.end()?;
    // The tape is written: the params can point at it.
    let tape: &'a Tape = tape;
    let mut incoming = incoming;
    match &mut incoming {
        Incoming::Single(m) => attach_checked(m, tape),
        Incoming::Batch(items) => items.iter_mut().for_each(|m| attach_checked(m, tape)),
    }
    Ok((incoming, r.into_lease()))
}

/// Points a message's params at the written tape, and refuses them if an object in them
/// gives a key twice: a tool would act on one value while its audit line and consent
/// question showed another.
fn attach_checked<'a>(m: &mut Result<Message<'a>, ParseFailure>, tape: &'a Tape) {
    let Ok(msg) = m else {
        return;
    };
    msg.attach(tape);
    let why = match msg.params().map(|p| p.repeated_key()) {
        None | Some(Repeat::None) => return,
        Some(Repeat::Key(key)) => format!("Invalid params: the key {} is given twice", shown(&key)),
        Some(Repeat::NoRoom) => {
            String::from("Invalid params: no memory to check them for repeated keys; retry")
        }
    };
    let id = msg.id().cloned();
    *m = Err(ParseFailure::new(id, INVALID_PARAMS, &why));
}

/// A key named in an error: quoted and escaped, cut to 64 bytes (a client chooses it).
fn shown(key: &str) -> String {
    let end = key.floor_char_boundary(64);
    let more = if end < key.len() { "…" } else { "" };
    format!("{:?}{more}", key.get(..end).unwrap_or(""))
}

/// A client's `result` or `error` (its answer to a request of the server), read whole. `None`
/// if no `Value` holds it; refused if an object in it gives a key twice.
fn client_value(raw: &str, member: &str, id: &Option<Id>) -> Result<Option<Value>, ParseFailure> {
    let mut tape = Tape::default();
    let Some(v) = tape.read(raw) else {
        return Ok(None);
    };
    match v.repeated_key() {
        Repeat::None => Ok(v.to_value()),
        Repeat::Key(key) => {
            let why = format!(
                "Invalid Request: the key {} is given twice in {member}",
                shown(&key)
            );
            Err(ParseFailure::new(id.clone(), INVALID_REQUEST, &why))
        }
        Repeat::NoRoom => Err(ParseFailure::new(
            id.clone(),
            INVALID_REQUEST,
            "Invalid Request: no memory to check it for repeated keys; retry",
        )),
    }
}

/// A message's members as raw text borrowed from the body, `params` on a tape: read in one
/// pass, without copying any member or building a map of them. A member given twice refuses
/// the message (which of the two counts is not for a reader to guess).
#[derive(Default)]
struct Envelope<'a> {
    /// The first member given twice.
    repeated: Option<&'static str>,
    jsonrpc: Option<&'a str>,
    id: Option<&'a str>,
    method: Option<&'a str>,
    /// Where it starts on the tape, whether it is an object or array, and whether every
    /// value in it is one serde_json can hold (not `1e999`).
    params: Option<(ValueRef<'a>, bool, bool)>,
    result: Option<&'a str>,
    error: Option<&'a str>,
}

/// Reads the object that starts here as an [`Envelope`].
fn envelope<'a>(
    r: &mut Reader<'a>,
    depth: usize,
    tape: &mut Tape,
) -> Result<Envelope<'a>, json::Fault> {
    let mut e = Envelope::default();
    let mut repeated = None;
    r.enter()?;
    r.members(depth, |r, key, inner| {
        let name = match key.decode() {
            Some(name) => name,
            None => return r.skip(inner, tape),
        };
        let (member, slot) = match &*name {
            "jsonrpc" => ("jsonrpc", &mut e.jsonrpc),
            "id" => ("id", &mut e.id),
            "method" => ("method", &mut e.method),
            "params" => {
                if e.params.is_some() {
                    repeated.get_or_insert("params");
                }
                let (at, container) = (tape.len(), matches!(r.peek(), Some(b'{' | b'[')));
                let readable = r.tape(inner, tape)?;
                e.params = Some((ValueRef::detached(r.text(), at), container, readable));
                return Ok(());
            }
            "result" => ("result", &mut e.result),
            "error" => ("error", &mut e.error),
            _ => return r.skip(inner, tape),
        };
        if slot.is_some() {
            repeated.get_or_insert(member);
        }
        *slot = Some(r.raw(inner, tape)?);
        Ok(())
    })?;
    e.repeated = repeated;
    Ok(e)
}

/// The string a member's raw text holds, decoded; `None` if it is not a string.
fn string_of(raw: &str) -> Option<Cow<'_, str>> {
    let mut r = Reader::new(raw, None);
    match r.peek() {
        Some(b'"') => r.string().ok()?.decode(),
        _ => None,
    }
}

/// The message an envelope holds, or why it holds none.
fn message(map: Envelope<'_>) -> Result<Message<'_>, ParseFailure> {
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
    if let Some(member) = map.repeated {
        // Which id to answer under is as unsure as the rest.
        let id = if member == "id" { None } else { id };
        let why = format!("Invalid Request: the member \"{member}\" is given twice");
        return Err(ParseFailure::new(id, INVALID_REQUEST, &why));
    }
    let version_ok = map.jsonrpc.and_then(string_of).is_some_and(|v| v == "2.0");
    if !version_ok {
        return Err(ParseFailure::new(
            id,
            INVALID_REQUEST,
            "Invalid Request: jsonrpc must be \"2.0\"",
        ));
    }
    let Some(raw_method) = map.method else {
        let value = |member, raw: Option<&str>| match raw {
            Some(raw) => client_value(raw, member, &id),
            None => Ok(None),
        };
        if let Some(result) = value("result", map.result)? {
            return Ok(Message::Response {
                id,
                outcome: Ok(result),
            });
        }
        if let Some(error) = value("error", map.error)? {
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
    // A name the server answers is held without a copy.
    let method = match string_of(raw_method) {
        Some(name) => match METHODS.iter().find(|m| **m == name) {
            Some(known) => Cow::Borrowed(*known),
            None => Cow::Owned(name.into_owned()),
        },
        None => {
            return Err(ParseFailure::new(
                id,
                INVALID_REQUEST,
                "Invalid Request: method must be a string",
            ));
        }
    };
    let params = match map.params {
        None => None,
        Some((params, true, true)) => Some(params),
        Some((_, false, true)) => {
            return Err(ParseFailure::new(
                id,
                INVALID_REQUEST,
                "Invalid Request: params must be an object or array",
            ));
        }
        Some((_, _, false)) => {
            return Err(ParseFailure::new(
                id,
                INVALID_PARAMS,
                "Invalid params: unreadable value",
            ));
        }
    };
    Ok(match id {
        Some(id) => Message::Request { id, method, params },
        None => Message::Notification { method, params },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::{MAX_NESTING, MAX_VALUES};
    use alloc::string::String;

    #[test]
    fn many_tiny_values_are_refused() {
        let mut tape = Tape::default();
        let mut body =
            String::from("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":{\"x\":[");
        for i in 0..MAX_VALUES {
            body.push_str(if i == 0 { "[]" } else { ",[]" });
        }
        body.push_str("]}}");
        let e = parse(body.as_bytes(), &mut tape).unwrap_err();
        assert_eq!(e.error.code, INVALID_REQUEST);
        assert!(e.error.message.contains("more values"));
        // A long string is one value, whatever its commas.
        let text = ",".repeat(100_000);
        let body = alloc::format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":{{\"x\":\"{text}\"}}}}"
        );
        assert!(matches!(
            parse(body.as_bytes(), &mut tape),
            Ok(Incoming::Single(Ok(_)))
        ));
    }

    #[test]
    fn params_serde_cannot_hold_are_invalid_params_under_the_request_s_id() {
        let mut tape = Tape::default();
        // Read in the same pass as the envelope: a number out of range is well-formed JSON, so
        // the read goes on, tells it from a syntax error and finds the id after it.
        let bad = r#"{"jsonrpc":"2.0","method":"m","params":{"x":1e999},"id":7}"#;
        let Ok(Incoming::Single(Err(f))) = parse(bad.as_bytes(), &mut tape) else {
            panic!("{bad}");
        };
        assert_eq!(
            (f.error.code, f.id.as_ref().map(Id::as_json)),
            (INVALID_PARAMS, Some("7"))
        );
        let broken = r#"{"jsonrpc":"2.0","method":"m","params":{"x":1e999,},"id":7}"#;
        assert_eq!(
            parse(broken.as_bytes(), &mut tape).unwrap_err().error.code,
            PARSE_ERROR
        );
        // The same in a batch, next to a good item.
        let batch =
            alloc::format!(r#"[{bad},{{"jsonrpc":"2.0","id":8,"method":"m","params":[2]}}]"#);
        let Ok(Incoming::Batch(items)) = parse(batch.as_bytes(), &mut tape) else {
            panic!("{batch}");
        };
        assert_eq!(items[0].as_ref().unwrap_err().error.code, INVALID_PARAMS);
        let good = items[1].as_ref().unwrap();
        assert_eq!(
            good.params().and_then(|p| p.to_value()),
            Some(serde_json::json!([2]))
        );
        assert_eq!(good.method(), Some("m"));
    }

    /// The failure of a one-message body.
    fn refused(body: &str) -> ParseFailure {
        let mut tape = Tape::default();
        match parse(body.as_bytes(), &mut tape) {
            Ok(Incoming::Single(Err(f))) => f,
            other => panic!("{body}: {other:?}"),
        }
    }

    #[test]
    fn a_key_given_twice_anywhere_refuses_the_message_naming_it() {
        // In params, at any depth: -32602 under the request's id, the key named.
        let f = refused(
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"fs.remove","arguments":{"path":"/tmp/a","path":"/boot/unix"}}}"#,
        );
        assert_eq!(
            (f.error.code, f.id.as_ref().map(Id::as_json)),
            (INVALID_PARAMS, Some("3"))
        );
        assert_eq!(
            f.error.message,
            "Invalid params: the key \"path\" is given twice"
        );
        let f = refused(
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"a","name":"b"}}"#,
        );
        assert!(f.error.message.contains("\"name\""), "{}", f.error.message);
        // A long or strange key is named escaped and cut.
        let key = alloc::format!("{}\\u202e\\n", "k".repeat(100));
        let body = alloc::format!(
            r#"{{"jsonrpc":"2.0","id":5,"method":"m","params":{{"{key}":1,"{key}":2}}}}"#
        );
        let f = refused(&body);
        assert!(
            f.error.message.ends_with("kkk\"… is given twice"),
            "{}",
            f.error.message
        );
        // In the envelope: -32600, under the id unless the id is what is repeated.
        for (body, member, id) in [
            (
                r#"{"jsonrpc":"2.0","id":6,"method":"ping","method":"tools/call"}"#,
                "method",
                Some("6"),
            ),
            (
                r#"{"jsonrpc":"2.0","id":6,"id":7,"method":"ping"}"#,
                "id",
                None,
            ),
            (
                r#"{"jsonrpc":"2.0","id":8,"method":"m","params":{"x":1},"params":[2]}"#,
                "params",
                Some("8"),
            ),
            (
                r#"{"jsonrpc":"2.0","jsonrpc":"2.0","id":9,"method":"ping"}"#,
                "jsonrpc",
                Some("9"),
            ),
        ] {
            let f = refused(body);
            assert_eq!(f.error.code, INVALID_REQUEST, "{body}");
            assert_eq!(f.id.as_ref().map(Id::as_json), id, "{body}");
            let want = alloc::format!("the member \"{member}\" is given twice");
            assert!(
                f.error.message.contains(&want),
                "{body}: {}",
                f.error.message
            );
        }
        // In a client's answer to a request of the server.
        let f =
            refused(r#"{"jsonrpc":"2.0","id":10,"result":{"action":"decline","action":"accept"}}"#);
        assert_eq!(f.error.code, INVALID_REQUEST);
        assert!(
            f.error
                .message
                .contains("\"action\" is given twice in result")
        );
        // In a batch, only the item that repeats a key is refused.
        let mut tape = Tape::default();
        let batch = r#"[{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1,"a":1}},{"jsonrpc":"2.0","id":2,"method":"m","params":{"a":1,"b":{"a":2}}}]"#;
        let Ok(Incoming::Batch(items)) = parse(batch.as_bytes(), &mut tape) else {
            panic!("{batch}");
        };
        assert_eq!(items[0].as_ref().unwrap_err().error.code, INVALID_PARAMS);
        assert!(items[1].is_ok());
        // Members the envelope does not read may repeat: nothing acts on them.
        let mut tape = Tape::default();
        let body = r#"{"jsonrpc":"2.0","id":1,"method":"ping","x":1,"x":{"y":1,"y":2}}"#;
        assert!(matches!(
            parse(body.as_bytes(), &mut tape),
            Ok(Incoming::Single(Ok(_)))
        ));
    }

    #[test]
    fn method_names_are_decoded_whether_plain_or_escaped() {
        let mut tape = Tape::default();
        for (text, want) in [
            (r#""tools/list""#, Some("tools/list")),
            (r#""tools\/list""#, Some("tools/list")),
            (r#""\u0074ools/list""#, Some("tools/list")),
            (r#""""#, Some("")),
            ("7", None),
        ] {
            let body = alloc::format!("{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":{text}}}");
            let Ok(Incoming::Single(m)) = parse(body.as_bytes(), &mut tape) else {
                panic!("{body}");
            };
            assert_eq!(m.as_ref().ok().and_then(Message::method), want, "{body}");
        }
        // A name the server answers is held without a copy; any other name is copied.
        for (name, borrowed) in [("tools/call", true), ("tools/calls", false), ("m", false)] {
            let body = alloc::format!("{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"{name}\"}}");
            let Ok(Incoming::Single(Ok(Message::Request { method, .. }))) =
                parse(body.as_bytes(), &mut tape)
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
        let mut tape = Tape::default();
        // The longest text kept inline, and one byte more.
        let fits = alloc::format!("\"{}\"", "x".repeat(INLINE_ID - 2));
        let over = alloc::format!("\"{}\"", "x".repeat(INLINE_ID - 1));
        for text in ["1", "null", "\"é\"", "-1.5e3", &fits, &over] {
            let body = alloc::format!("{{\"jsonrpc\":\"2.0\",\"id\":{text},\"method\":\"m\"}}");
            let Ok(Incoming::Single(Ok(m))) = parse(body.as_bytes(), &mut tape) else {
                panic!("{body}");
            };
            assert_eq!(m.id().map(Id::as_json), Some(text));
            assert_eq!(m.id(), Some(&Id::of(text)));
        }
    }

    #[test]
    fn nesting_ignores_strings_and_is_limited() {
        let mut tape = Tape::default();
        let deep = |n: usize| {
            let mut s = String::from(
                "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":{\"s\":\"[[{{\",\"x\":",
            );
            for _ in 0..n {
                s.push('[');
            }
            for _ in 0..n {
                s.push(']');
            }
            s.push_str("}}");
            s
        };
        assert!(parse(deep(MAX_NESTING - 2).as_bytes(), &mut tape).is_ok());
        let err = parse(deep(MAX_NESTING).as_bytes(), &mut tape).unwrap_err();
        assert_eq!(err.error.code, INVALID_REQUEST);
    }
}
