//! A fuzzing entry: raw header text and body bytes in, the whole response (streamed bodies
//! drained) out. The `fuzz/` crate calls `one_input`.

use super::{
    Annotations, Config, Content, ContentSource, McpServer, SourcePoll, Started, Step, StepIo,
    StreamKind, ToolCall, ToolDef, ToolError, ToolOutput, ToolRun,
};
use crate::http::{Headers, Method, Peer};
use crate::testing::drain;
use alloc::boxed::Box;
use alloc::rc::Rc;
use alloc::string::String;
use alloc::vec::Vec;
use core::cell::RefCell;

fn echo_start(_: &mut (), call: &ToolCall<'_>) -> Result<Started<()>, ToolError> {
    let text = call.args.get("text").and_then(|v| v.as_str()).unwrap_or("");
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
    fn read(&mut self, _: &mut (), out: &mut Vec<u8>, max: usize) -> Result<SourcePoll, ToolError> {
        let n = self.0.min(max).min(16);
        out.extend(core::iter::repeat_n(b'"', n));
        self.0 -= n;
        Ok(if self.0 == 0 {
            SourcePoll::End
        } else {
            SourcePoll::Data
        })
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

/// One fuzz case: `data` is `METHOD\nName: value\n…\n\nbody`. Runs it against a fresh server
/// (two small tools, no token) and drains the response.
pub fn one_input(data: &[u8]) {
    let split = data
        .windows(2)
        .position(|w| w == b"\n\n")
        .unwrap_or(data.len());
    let (head, body) = data.split_at(split);
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
            headers.push(n.trim(), v.trim());
        }
    }
    let mut server = McpServer::new(
        Config::new("0.0", None),
        Rc::new(RefCell::new(())),
        Box::new(|b: &mut [u8]| b.fill(7)),
    );
    if server.register_tools(&TOOLS).is_err() {
        return;
    }
    let peer = Peer {
        addr: [127, 0, 0, 1],
        port: 1,
    };
    let mut resp = server.handle_parts(&method, &headers, body, peer, 1000);
    let _ = drain(&mut resp, 1000, 64);
}
