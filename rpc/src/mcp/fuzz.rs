//! A fuzzing entry: raw header text and body bytes of one or more requests in, the whole
//! responses (streamed bodies drained) out. The `fuzz/` crate calls `one_input`.

use crate::http::{Headers, Method, Peer};
use crate::mcp::guard::config::Config;
use crate::mcp::server::McpServer;
use crate::mcp::wire::annotations::Annotations;
use crate::mcp::wire::tool::{
    Content, ContentSource, SourcePoll, Started, Step, StepIo, StreamKind, ToolCall, ToolDef,
    ToolError, ToolOutput, ToolRun,
};
use crate::testing::{drain, find};
use alloc::boxed::Box;
use alloc::rc::Rc;
use alloc::string::String;
use alloc::vec::Vec;
use core::cell::RefCell;

fn echo_start(_: &mut (), call: &ToolCall<'_>) -> Result<Started<()>, ToolError> {
    let text = call
        .args
        .get("text")
        .and_then(|v| v.as_str())
        .unwrap_or_default();
    Ok(Started::Done(ToolOutput::text(text)))
}

struct Countdown(u32);

impl ToolRun<()> for Countdown {
    fn step(&mut self, _: &mut (), io: &mut StepIo<'_>) -> Step<()> {
        if self.0 == 0 {
            return Step::Done(ToolOutput::content(alloc::vec![Content::stream(
                StreamKind::Text,
                Box::new(Bytes(64))
            )]));
        }
        io.progress(f64::from(4 - self.0), Some(4.0), None);
        self.0 -= 1;
        Step::Pending
    }
}

struct Bytes(usize);

impl ContentSource<()> for Bytes {
    fn read(&mut self, _: &mut (), buf: &mut [u8]) -> Result<(usize, SourcePoll), ToolError> {
        let n = self.0.min(buf.len()).min(16);
        buf[..n].fill(b'"');
        self.0 -= n;
        Ok((
            n,
            if self.0 == 0 {
                SourcePoll::End
            } else {
                SourcePoll::Data
            },
        ))
    }
}

fn slow_start(_: &mut (), _: &ToolCall<'_>) -> Result<Started<()>, ToolError> {
    Ok(Started::Run(Box::new(Countdown(4))))
}

const TOOLS: [ToolDef<()>; 2] = [
    ToolDef {
        name: "echo",
        title: None,
        description: "echo",
        input_schema: r#"{"type":"object","properties":{"text":{"type":"string","maxLength":64}},"additionalProperties":false}"#,
        output_schema: None,
        annotations: Annotations::READ_ONLY,
        requires: &[],
        errors: &[],
        start: echo_start,
    },
    ToolDef {
        name: "slow",
        title: None,
        description: "slow",
        input_schema: r#"{"type":"object"}"#,
        output_schema: None,
        annotations: Annotations::READ_ONLY,
        requires: &[],
        errors: &[],
        start: slow_start,
    },
];

/// Separates the requests of one fuzz case.
pub const NEXT: &[u8] = b"\n--\n";

/// Requests per case at most, so one input stays quick.
const MAX_REQUESTS: usize = 8;

/// In a header value, stands for the session id the last `initialize` answer named, so a case
/// can reach a legacy session's later states.
pub const SESSION: &str = "$SID";

/// One fuzz case: requests separated by [`NEXT`], each `METHOD\nName: value\n…\n\nbody`
/// (a case without a separator is one request). They run in order against one fresh server
/// (two small tools, no token), 100 ms apart, each response drained before the next request.
/// Returns the responses' HTTP statuses.
pub fn one_input(data: &[u8]) -> Vec<u16> {
    let mut server = McpServer::new(
        Config::new("0.0", None),
        Rc::new(RefCell::new(())),
        Box::new(|b: &mut [u8]| b.fill(7)),
    );
    if server.register_tools(&TOOLS).is_err() {
        return Vec::new();
    }
    let peer = Peer {
        addr: [127, 0, 0, 1],
        port: 1,
    };
    let mut session: Option<String> = None;
    let mut statuses = Vec::new();
    let mut now_ms = 1000;
    let mut rest = data;
    while statuses.len() < MAX_REQUESTS {
        let (part, next) = match find(rest, NEXT) {
            Some(at) => (&rest[..at], rest.get(at + NEXT.len()..)),
            None => (rest, None),
        };
        let (method, headers, body) = parse(part, session.as_deref());
        let mut resp = server.handle_parts(&method, &headers, body, peer, now_ms);
        if let Some(sid) = resp.headers.get("Mcp-Session-Id") {
            session = Some(String::from(sid));
        }
        statuses.push(resp.status);
        let _ = drain(&mut resp, now_ms, 64);
        now_ms += 100;
        match next {
            Some(n) => rest = n,
            None => break,
        }
    }
    statuses
}

/// One request of a case: the method line, up to 32 header lines (with [`SESSION`] replaced
/// by `session`), and the body after the blank line.
fn parse<'a>(part: &'a [u8], session: Option<&str>) -> (Method, Headers, &'a [u8]) {
    let split = find(part, b"\n\n").unwrap_or(part.len());
    let (head, body) = part.split_at(split);
    let body = body.get(2..).unwrap_or(&[]);
    let head = String::from_utf8_lossy(head);
    let mut lines = head.lines();
    let method = match lines.next().unwrap_or("POST") {
        "GET" => Method::Get,
        "DELETE" => Method::Delete,
        _ => Method::Post,
    };
    let mut headers = Headers::default();
    for line in lines.take(32) {
        if let Some((n, v)) = line.split_once(':') {
            let v = v.trim();
            match session {
                Some(sid) if v.contains(SESSION) => headers.push(n.trim(), v.replace(SESSION, sid)),
                _ => headers.push(n.trim(), v),
            }
        }
    }
    (method, headers, body)
}
