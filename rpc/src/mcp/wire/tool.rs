//! The tool abstraction. A tool family (in the module's `src/tools/`) declares a table of
//! `ToolDef`s; a call starts with the def's `start` function, which either answers at once or
//! hands back a `ToolRun` that the server advances one bounded step per poll, so a long tool
//! never blocks other clients. Big results are streamed from a `ContentSource` straight into
//! the response body.

use crate::json::{ValueRef, Written};
use crate::mcp::wire::annotations::Annotations;
use crate::mcp::wire::error_code::ErrorCode;
use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;
use irix7_kmem::share::Claim;
use serde_json::{Map, Value, json};

/// How a tool fails: rendered as an `isError` result whose text is `E_<CODE>: message`
/// ([`ErrorCode::InvalidParams`] excepted: a JSON-RPC error).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolError {
    pub code: ErrorCode,
    pub message: String,
}

impl ToolError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ToolError {
            code,
            message: message.into(),
        }
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "E_{}: {}", self.code, self.message)
    }
}

/// Log severities (RFC 5424 order, least severe first).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    Debug,
    Info,
    Notice,
    Warning,
    Error,
    Critical,
    Alert,
    Emergency,
}

impl LogLevel {
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "debug" => LogLevel::Debug,
            "info" => LogLevel::Info,
            "notice" => LogLevel::Notice,
            "warning" => LogLevel::Warning,
            "error" => LogLevel::Error,
            "critical" => LogLevel::Critical,
            "alert" => LogLevel::Alert,
            "emergency" => LogLevel::Emergency,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Notice => "notice",
            LogLevel::Warning => "warning",
            LogLevel::Error => "error",
            LogLevel::Critical => "critical",
            LogLevel::Alert => "alert",
            LogLevel::Emergency => "emergency",
        }
    }
}

/// What a content source reports when asked for bytes.
#[derive(Debug, PartialEq, Eq)]
pub enum SourcePoll {
    /// Bytes were appended; ask again.
    Data,
    /// Nothing yet (e.g. waiting for a disk block); ask on a later poll.
    Pending,
    /// The content is complete (bytes may have been appended in this call too).
    End,
}

/// Raw bytes of one big content block, produced piece by piece. The server JSON-escapes
/// (text) or base64-encodes (binary) them on the fly into the response body.
pub trait ContentSource<C> {
    /// Writes the next raw bytes at the start of `buf` (at most `buf.len()`, at least one
    /// byte long) and says how many. The server reads every piece into the same buffer, so
    /// the bytes are written once, not into room zeroed first.
    fn read(&mut self, ctx: &mut C, buf: &mut [u8]) -> Result<(usize, SourcePoll), ToolError>;
    /// The client went away: release whatever the source holds.
    fn cancel(&mut self, _ctx: &mut C) {}
}

/// Appends `n` zero bytes to `out` and returns them: the room a [`ContentSource`] reads into
/// in place. It copies from a zeroed block, which goes through `memcpy`: `Vec::resize` compiles
/// to a byte-at-a-time loop in the size-optimised image (it never reaches `memset`), several
/// times slower on the hot streaming path of a big `fs.read`.
pub fn append_zeroed(out: &mut Vec<u8>, n: usize) -> &mut [u8] {
    const ZEROS: [u8; 256] = [0; 256];
    let at = out.len();
    out.reserve(n);
    let mut left = n;
    while left > 0 {
        let k = left.min(ZEROS.len());
        out.extend_from_slice(&ZEROS[..k]);
        left -= k;
    }
    out.get_mut(at..).unwrap_or_default()
}

/// Which kind of content block a streamed source fills.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StreamKind {
    /// `{"type":"text","text":…}` from UTF-8 bytes (invalid sequences become U+FFFD).
    Text,
    /// `{"type":"image","mimeType":…,"data":<base64>}`.
    Image { mime_type: String },
    /// `{"type":"audio","mimeType":…,"data":<base64>}`.
    Audio { mime_type: String },
    /// `{"type":"resource","resource":{"uri":…,"mimeType":…,"text":…}}`.
    ResourceText { uri: String, mime_type: String },
    /// `{"type":"resource","resource":{"uri":…,"mimeType":…,"blob":<base64>}}`.
    ResourceBlob { uri: String, mime_type: String },
}

/// One content block of a tool result.
pub enum Content<C> {
    /// `{"type":"text","text":…}`, kept as its text: written straight into the answer.
    Text(String),
    /// A complete block, already in its JSON form (see the constructors).
    Block(Value),
    /// A block whose text or data is streamed from a source.
    Stream(StreamKind, Box<dyn ContentSource<C>>),
}

impl<C> Content<C> {
    pub fn text(text: impl Into<String>) -> Self {
        Content::Text(text.into())
    }

    /// An image from raw bytes (base64-encoded here).
    pub fn image(data: &[u8], mime_type: &str) -> Self {
        Content::Block(json!({"type": "image", "data": b64(data), "mimeType": mime_type}))
    }

    /// Audio from raw bytes (base64-encoded here).
    pub fn audio(data: &[u8], mime_type: &str) -> Self {
        Content::Block(json!({"type": "audio", "data": b64(data), "mimeType": mime_type}))
    }

    /// An embedded text resource.
    pub fn resource_text(uri: &str, mime_type: &str, text: impl Into<String>) -> Self {
        Content::Block(json!({"type": "resource",
            "resource": {"uri": uri, "mimeType": mime_type, "text": text.into()}}))
    }

    /// A link to a resource the client may read later (e.g. a full-size screen capture).
    pub fn resource_link(uri: &str, name: &str, mime_type: Option<&str>) -> Self {
        let mut v = json!({"type": "resource_link", "uri": uri, "name": name});
        if let (Some(m), Value::Object(o)) = (mime_type, &mut v) {
            o.insert("mimeType".into(), Value::from(m));
        }
        Content::Block(v)
    }

    /// A streamed block.
    pub fn stream(kind: StreamKind, source: Box<dyn ContentSource<C>>) -> Self {
        Content::Stream(kind, source)
    }
}

fn b64(data: &[u8]) -> String {
    crate::mcp::wire::base64::base64(data)
}

/// A finished tool result.
pub struct ToolOutput<C> {
    pub content: Vec<Content<C>>,
    /// Structured result, written as JSON text ([`crate::json::ObjectWriter`]); must
    /// conform to the tool's `outputSchema`. The server also sends its text as a final text
    /// block, for clients that read only text.
    pub structured: Option<Written>,
    /// A failure the model should see (rather than a protocol error).
    pub is_error: bool,
}

impl<C> ToolOutput<C> {
    /// A single text block.
    pub fn text(text: impl Into<String>) -> Self {
        ToolOutput {
            content: alloc::vec![Content::text(text)],
            structured: None,
            is_error: false,
        }
    }

    /// A structured result (the server adds the text block).
    pub fn structured(json: Written) -> Self {
        ToolOutput {
            content: Vec::new(),
            structured: Some(json),
            is_error: false,
        }
    }

    /// Content blocks.
    pub fn content(content: Vec<Content<C>>) -> Self {
        ToolOutput {
            content,
            structured: None,
            is_error: false,
        }
    }

    /// A failure result: `isError: true`, text `E_<CODE>: message`.
    pub fn error(err: &ToolError) -> Self {
        use alloc::string::ToString;
        ToolOutput {
            content: alloc::vec![Content::text(err.to_string())],
            structured: None,
            is_error: true,
        }
    }
}

/// A notice a running tool emits; sent to the client only on an SSE response.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Notice {
    Progress {
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    },
    Log {
        level: LogLevel,
        data: Value,
    },
}

/// What a running tool can see and say during one step.
pub struct StepIo<'a> {
    pub(crate) now_ms: u64,
    pub(crate) notices: &'a mut Vec<Notice>,
    /// Progress notices reach the client (an SSE response to a call with a progress token).
    pub(crate) heard: bool,
}

impl StepIo<'_> {
    /// The monotonic clock, in milliseconds.
    pub fn now_ms(&self) -> u64 {
        self.now_ms
    }

    /// Whether progress notices reach the client: a tool that streams what it produces as
    /// progress messages need not pace itself for a client that will never see them.
    pub fn progress_heard(&self) -> bool {
        self.heard
    }

    /// Reports progress. Values that do not increase are dropped (clients require strictly
    /// increasing progress).
    pub fn progress(&mut self, progress: f64, total: Option<f64>, message: Option<&str>) {
        self.notices.push(Notice::Progress {
            progress,
            total,
            message: message.map(String::from),
        });
    }

    /// Logs a message; it reaches the client only if it asked for this level or lower.
    pub fn log(&mut self, level: LogLevel, data: Value) {
        self.notices.push(Notice::Log { level, data });
    }
}

/// What one step of a running tool produced.
pub enum Step<C> {
    /// More work remains: step again on a later poll.
    Pending,
    /// Finished with a result (possibly with streamed content).
    Done(ToolOutput<C>),
    /// Failed: sent as an `isError` result.
    Failed(ToolError),
    /// Failed outside the tool's own terms (an internal fault): a JSON-RPC error, and a
    /// task's `failed` status (the tasks extension keeps `isError` results `completed`).
    Aborted(ToolError),
}

/// A tool call in progress. Each `step` must do a bounded amount of work.
pub trait ToolRun<C> {
    fn step(&mut self, ctx: &mut C, io: &mut StepIo<'_>) -> Step<C>;
    /// The run may wait long for something outside it (the console): it is answered as an
    /// event stream whenever the client accepts one, so keep-alives can flow while it waits.
    fn waits(&self) -> bool {
        false
    }
    /// The call was cancelled (client closed the stream or sent `notifications/cancelled`):
    /// stop the work. No further `step` follows.
    fn cancel(&mut self, _ctx: &mut C) {}
}

/// How a call starts.
pub enum Started<C> {
    /// Answered at once.
    Done(ToolOutput<C>),
    /// Runs across polls.
    Run(Box<dyn ToolRun<C>>),
    /// Needs input from the client first (2026-07-28 only; a legacy client gets an
    /// `E_NOTSUP` error result).
    InputRequired(InputRequired),
}

impl<C> Started<C> {
    /// A structured result, answered at once: what most tools answer (the server adds its
    /// text block).
    pub fn structured(json: Written) -> Self {
        Started::Done(ToolOutput::structured(json))
    }
}

/// A 2026-07-28 `InputRequiredResult`: the client answers `input_requests` (a map of key to
/// `{method, params}`, e.g. `elicitation/create`) and repeats the request with
/// `inputResponses` and `requestState`. The server keeps nothing: all state travels in
/// `request_state`, which the handler must integrity-protect if it matters.
#[derive(Clone, Debug, PartialEq)]
pub struct InputRequired {
    pub input_requests: Value,
    pub request_state: Option<String>,
}

impl InputRequired {
    pub(crate) fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("resultType".into(), Value::from("input_required"));
        m.insert("inputRequests".into(), self.input_requests.clone());
        if let Some(s) = &self.request_state {
            m.insert("requestState".into(), Value::from(s.as_str()));
        }
        Value::Object(m)
    }
}

/// A call as the tool sees it. `args` are already validated against the input schema.
pub struct ToolCall<'a> {
    /// An object, read where it lies in the request (or in the copy a retry keeps).
    pub args: ValueRef<'a>,
    pub now_ms: u64,
    /// The client's declared capabilities (`sampling`, `elicitation`, `roots`, …).
    pub client_capabilities: &'a Value,
    /// Answers to an earlier `InputRequired` (each value an object).
    pub input_responses: Option<&'a Map<String, Value>>,
    /// The `request_state` of that earlier `InputRequired`, echoed by the client.
    pub request_state: Option<&'a str>,
    /// The caller holds the administrator's token, not narrowed: it may see the secrets the
    /// machine printed (the generated token, in the console). Every other caller gets them
    /// masked.
    pub sees_secrets: bool,
    /// Who what the call takes from the machine's shared pools (a console waiter's place) is
    /// counted to: its owner (a token at its rank, as a number) and its client, under the
    /// rules of `irix7_kmem::share`. [`ToolCall::MACHINE`] for a call the module makes itself.
    pub holder: Claim<u64>,
}

impl ToolCall<'_> {
    /// The holder of a call the module makes for itself (a resource that shows a tool's view):
    /// no client's, of the lowest rank.
    pub const MACHINE: Claim<u64> = Claim {
        owner: u64::MAX,
        rank: 0,
        client: 0,
    };
}

/// Starts a call of a tool.
pub type StartFn<C> = fn(&mut C, &ToolCall<'_>) -> Result<Started<C>, ToolError>;

/// One row of a tool family's table.
pub struct ToolDef<C> {
    /// Stable, lower-case, dot-separated (`fs.read`).
    pub name: &'static str,
    pub title: Option<&'static str>,
    pub description: &'static str,
    /// JSON Schema text (`{"type":"object",…}`); parsed once at registration.
    pub input_schema: &'static str,
    /// JSON Schema text of `structuredContent`, for tools with structured results.
    pub output_schema: Option<&'static str>,
    pub annotations: Annotations,
    /// Client capabilities the tool needs (e.g. `"sampling"`); a client that did not declare
    /// them gets -32021.
    pub requires: &'static [&'static str],
    /// The `E_<CODE>` codes (without `E_`) the tool's own handler can answer, published in
    /// `docs/tools.md` so an agent knows which failures to expect. The codes the server adds to
    /// any call ([`ErrorCode::GENERIC`]) are listed once there, not per tool.
    pub errors: &'static [ErrorCode],
    pub start: StartFn<C>,
}

impl<C> Clone for ToolDef<C> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<C> Copy for ToolDef<C> {}

#[cfg(test)]
mod tests {
    use super::append_zeroed;

    #[test]
    fn append_zeroed_returns_exactly_the_new_zero_bytes() {
        let mut v = alloc::vec![7u8; 3];
        let room = append_zeroed(&mut v, 600);
        assert_eq!(room.len(), 600);
        room[599] = 1;
        assert_eq!(v.len(), 603);
        assert_eq!(&v[..3], &[7, 7, 7]);
        assert!(v[3..602].iter().all(|&b| b == 0));
        assert_eq!(v[602], 1);
        assert!(append_zeroed(&mut v, 0).is_empty());
        assert_eq!(v.len(), 603);
    }
}
