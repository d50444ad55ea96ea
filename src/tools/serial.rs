//! Serial tools: `serial.read` reads the kernel's serial ring by absolute offset (see
//! [`crate::services::serial_ring`]), `serial.write` writes to the serial console, and the
//! `irix7://serial` resource is the ring's current content as text.
//!
//! Waiting: with `wait_ms` a read that finds nothing past its offset (or not `until`) becomes a
//! run that looks at the ring's head once a poll and copies the ring only when the head moved,
//! feeding the matcher just the new bytes ([`crate::services::serial_wait`]). Waiters are
//! bounded (`Services::serial_waiters`, E_BUSY past it); the run asks for an event stream so
//! keep-alives flow while it waits.
//!
//! Encoding: by default `data` is text: bytes that are not UTF-8 become U+FFFD, and a
//! multi-byte character cut by `max_bytes` is left for the next read (so `next_offset` never
//! splits one). `encoding: "base64"` returns the exact bytes instead.

use super::{Ctx, args, console};
use crate::services::serial_ring::{self, Chunk, RingError};
use crate::services::serial_wait::{Literal, NEEDLE_MAX, WaiterSlot};
use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use rpc::mcp::{
    Annotations, ErrorCode, ResourceContents, ResourceDef, Started, Step, StepIo, ToolCall,
    ToolDef, ToolError, ToolOutput, ToolRun, WatchDef,
};
use serde_json::json;

/// Default and largest `max_bytes`: the whole ring on the Indy.
const READ_DEFAULT: u64 = 8192;
const READ_MAX: u64 = 65536;
/// Longest `wait_ms`: long enough to wait for a machine to boot again after a reset.
pub const WAIT_MAX_MS: u64 = 300_000;

pub const TOOLS: &[ToolDef<Ctx>] = &[
    ToolDef {
        name: "serial.read",
        title: Some("Read the serial console"),
        description: "Reads the console output the kernel keeps in its 8 KiB serial ring, from \
                      an absolute byte `offset` (default: the oldest byte still held). Pass the \
                      returned `next_offset` to the next call to follow the console; `eof` says \
                      you are caught up. If the ring has moved past `offset`, reading starts at \
                      `oldest` and `lost` counts the bytes missed. `wait_ms` waits (up to 300 \
                      s) until bytes exist past `offset`; with `until` (a literal string) it \
                      waits until that text appears past `offset` instead, and returns the \
                      bytes up to the end of the match with `match_offset` (absolute) and \
                      `matched`. At the deadline it returns what is there (`matched: false`). \
                      Few calls may wait at once (E_BUSY past them).",
        input_schema: r#"{"type":"object","properties":{
  "offset":{"type":"integer","minimum":0,"maximum":4294967295,"description":"Absolute offset to read from (default: oldest held)"},
  "max_bytes":{"type":"integer","minimum":1,"maximum":65536,"default":8192,"description":"Most bytes to return"},
  "encoding":{"type":"string","enum":["text","base64"],"default":"text","description":"text: UTF-8, invalid bytes as U+FFFD; base64: exact bytes"},
  "wait_ms":{"type":"integer","minimum":0,"maximum":300000,"default":0,"description":"Wait up to this long for bytes past `offset` (or for `until`)"},
  "until":{"type":"string","minLength":1,"maxLength":256,"description":"Literal text to wait for past `offset` (at most 256 bytes); the data then ends at the end of the match"}},
  "additionalProperties":false}"#,
        output_schema: Some(
            r#"{"type":"object","properties":{
  "data":{"type":"string"},"encoding":{"type":"string","enum":["text","base64"]},
  "offset":{"type":"integer","description":"Absolute offset of the first byte of data"},
  "bytes":{"type":"integer","description":"Raw bytes returned"},
  "next_offset":{"type":"integer"},"head":{"type":"integer","description":"Bytes ever written"},
  "oldest":{"type":"integer","description":"Oldest offset the ring holds"},
  "lost":{"type":"integer","description":"Bytes between the requested offset and `offset` no longer held"},
  "eof":{"type":"boolean"},
  "matched":{"type":"boolean","description":"With `until`: whether it appeared"},
  "match_offset":{"type":"integer","description":"With `until`: absolute offset of the first byte of the match"}},
  "required":["data","encoding","offset","bytes","next_offset","head","oldest","lost","eof"]}"#,
        ),
        annotations: Annotations::READ_ONLY,
        requires: &[],
        errors: &[ErrorCode::Range, ErrorCode::Busy],
        start: serial_read,
    },
    ToolDef {
        name: "serial.write",
        title: Some("Write to the serial console"),
        description: "Writes a line of text to the serial console (Z85C30 channel B, the \
                      Indy's console); the same path as `console.write`. The text also lands \
                      in the serial ring.",
        input_schema: console::WRITE_INPUT,
        output_schema: Some(console::WRITE_OUTPUT),
        annotations: Annotations::WRITE,
        requires: &[],
        errors: &[],
        start: console::write_text,
    },
];

pub const RESOURCES: &[ResourceDef<Ctx>] = &[ResourceDef {
    uri: "irix7://serial",
    name: "serial",
    title: Some("Serial console"),
    description: "The console output the serial ring still holds (up to 8 KiB), as text. \
                  Subscribable: an update at most every 500 ms while the console prints.",
    mime_type: Some("text/plain"),
    read: read_resource,
}];

/// What a `serial.read` asks for.
struct ReadArgs {
    offset: Option<u64>,
    max: usize,
    base64: bool,
}

fn serial_read(ctx: &mut Ctx, call: &ToolCall<'_>) -> Result<Started<Ctx>, ToolError> {
    let max = args::opt_u64(call, "max_bytes")?
        .unwrap_or(READ_DEFAULT)
        .clamp(1, READ_MAX) as usize;
    let base64 = match args::opt_str(call, "encoding")?.as_deref() {
        None | Some("text") => false,
        Some("base64") => true,
        Some(other) => {
            return Err(ToolError::new(
                ErrorCode::Inval,
                format!("unknown encoding `{other}`: text or base64"),
            ));
        }
    };
    let read = ReadArgs {
        offset: args::opt_u64(call, "offset")?,
        max,
        base64,
    };
    let wait_ms = args::opt_u64(call, "wait_ms")?
        .unwrap_or(0)
        .min(WAIT_MAX_MS);
    let until = match args::opt_str(call, "until")? {
        None => None,
        Some(text) => Some(Literal::new(text.as_bytes()).ok_or_else(|| {
            ToolError::new(
                ErrorCode::Inval,
                format!("`until` must be 1 to {NEEDLE_MAX} bytes"),
            )
        })?),
    };
    if wait_ms == 0 && until.is_none() {
        return answer(ctx, &read, None).map(Started::Done);
    }
    // What the ring holds past `offset` now: scanned once here, then only what arrives.
    let (ring, head) = ring_copy(ctx)?;
    let size = ring.len();
    let mut chunk = serial_ring::read(&ring, head, read.offset, usize::MAX).map_err(range)?;
    drop(ring);
    chunk.discard_overwritten(ctx.platform.serial_head(), size);
    let mut wait = Wait {
        read,
        until,
        scanned: chunk.offset,
        deadline_ms: call.now_ms.saturating_add(wait_ms),
        _slot: None,
    };
    if let Some(done) = wait.look_at(ctx, &chunk)? {
        return Ok(Started::Done(done));
    }
    if wait_ms == 0 {
        return wait.give_up(ctx).map(Started::Done);
    }
    let Some(slot) = ctx.serial_waiters.take() else {
        return Err(ToolError::new(
            ErrorCode::Busy,
            format!(
                "{} calls already wait on the console; retry later",
                ctx.serial_waiters.limit()
            ),
        ));
    };
    wait._slot = Some(slot);
    Ok(Started::Run(Box::new(wait)))
}

/// A `serial.read` waiting for bytes past its offset, or for `until` to appear.
struct Wait {
    read: ReadArgs,
    until: Option<Literal>,
    /// The absolute offset up to which the console has been looked at.
    scanned: u32,
    deadline_ms: u64,
    /// Its place among the console's waiters, given back when the wait ends.
    _slot: Option<WaiterSlot>,
}

impl Wait {
    /// Looks at bytes that arrived (`chunk`, from `scanned` on): the answer when the wait is
    /// over, else `None` (and `scanned` moves past them).
    fn look_at(
        &mut self,
        ctx: &mut Ctx,
        chunk: &Chunk,
    ) -> Result<Option<ToolOutput<Ctx>>, ToolError> {
        let scanned = core::mem::replace(&mut self.scanned, chunk.next_offset());
        let Some(m) = self.until.as_mut() else {
            if chunk.data.is_empty() {
                return Ok(None);
            }
            return answer(ctx, &self.read, None).map(Some);
        };
        if chunk.offset != scanned {
            // The ring moved past bytes not looked at: a partial match is no longer one.
            m.restart();
        }
        if let Some(at) = m.feed(chunk.offset, &chunk.data) {
            let found = Found {
                at,
                end: at.saturating_add(m.len() as u32),
            };
            return answer(ctx, &self.read, Some(Some(found))).map(Some);
        }
        Ok(None)
    }

    /// The answer at the deadline: what is there, and no match.
    fn give_up(&self, ctx: &mut Ctx) -> Result<ToolOutput<Ctx>, ToolError> {
        answer(ctx, &self.read, self.until.as_ref().map(|_| None))
    }
}

impl ToolRun<Ctx> for Wait {
    fn step(&mut self, ctx: &mut Ctx, io: &mut StepIo<'_>) -> Step<Ctx> {
        let done = if ctx.platform.serial_head() == self.scanned {
            // Nothing new: the whole cost of an idle waiter's poll is this one load.
            Ok(None)
        } else {
            self.look(ctx)
        };
        let done = match done {
            Ok(None) if io.now_ms() >= self.deadline_ms => self.give_up(ctx).map(Some),
            other => other,
        };
        match done {
            Ok(None) => Step::Pending,
            Ok(Some(out)) => Step::Done(out),
            Err(e) => Step::Failed(e),
        }
    }

    fn waits(&self) -> bool {
        true
    }
}

impl Wait {
    /// Copies the ring and looks at what arrived since `scanned`.
    fn look(&mut self, ctx: &mut Ctx) -> Result<Option<ToolOutput<Ctx>>, ToolError> {
        let (ring, head) = ring_copy(ctx)?;
        let size = ring.len();
        // `scanned` past the head (the 4 GiB counter wrapped): look from the oldest byte.
        let from = (self.scanned <= head).then_some(u64::from(self.scanned));
        let mut chunk = serial_ring::read(&ring, head, from, usize::MAX).map_err(range)?;
        drop(ring);
        chunk.discard_overwritten(ctx.platform.serial_head(), size);
        self.look_at(ctx, &chunk)
    }
}

/// Where `until` matched: the absolute offsets of its first byte and just past its last.
#[derive(Clone, Copy)]
struct Found {
    at: u32,
    end: u32,
}

fn range(e: RingError) -> ToolError {
    match e {
        RingError::Future { offset, head } => ToolError::new(
            ErrorCode::Range,
            format!("offset {offset} is past the head {head}: nothing written there yet"),
        ),
    }
}

/// The result of a read from `read.offset`. `until` is `None` when the call had no `until`,
/// `Some(None)` when it did not match, `Some(Some(found))` when it did: the data then ends
/// at the end of the match (or sooner, at `max_bytes`).
fn answer(
    ctx: &Ctx,
    read: &ReadArgs,
    until: Option<Option<Found>>,
) -> Result<ToolOutput<Ctx>, ToolError> {
    let (ring, head) = ring_copy(ctx)?;
    let mut chunk = serial_ring::read(&ring, head, read.offset, read.max).map_err(range)?;
    chunk.discard_overwritten(ctx.platform.serial_head(), ring.len());
    drop(ring);
    if let Some(Some(found)) = until {
        let keep = found.end.saturating_sub(chunk.offset) as usize;
        chunk.data.truncate(keep);
    }
    // A character cut by `max_bytes` is read whole next time.
    if !read.base64 && chunk.data.len() == read.max {
        let keep = irix7_kmem::complete_utf8(&chunk.data);
        if keep > 0 {
            chunk.data.truncate(keep);
        }
    }
    let data = if read.base64 {
        rpc::mcp::base64(&chunk.data)
    } else {
        String::from_utf8_lossy(&chunk.data).into_owned()
    };
    let mut v = json!({
        "data": data,
        "encoding": if read.base64 { "base64" } else { "text" },
        "offset": chunk.offset,
        "bytes": chunk.data.len(),
        "next_offset": chunk.next_offset(),
        "head": chunk.head,
        "oldest": chunk.oldest,
        "lost": chunk.lost,
        "eof": chunk.eof(),
    });
    if let Some(found) = until {
        v["matched"] = found.is_some().into();
        if let Some(f) = found {
            v["match_offset"] = f.at.into();
        }
    }
    Ok(ToolOutput::structured(v))
}

/// A copy of the kernel's ring and its head, or `E_BUSY` when the heap has no room for it now.
fn ring_copy(ctx: &Ctx) -> Result<(Vec<u8>, u32), ToolError> {
    ctx.platform.serial_ring().ok_or_else(|| {
        ToolError::new(
            ErrorCode::Busy,
            "no memory for a copy of the serial ring; retry later",
        )
    })
}

/// The ring's content as text (what `serial.read` with no offset and no limit returns).
pub fn ring_text(ctx: &Ctx) -> Result<String, ToolError> {
    let (ring, head) = ring_copy(ctx)?;
    let bytes: Vec<u8> = serial_ring::read(&ring, head, None, ring.len())
        .map(|c| c.data)
        .unwrap_or_default();
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// `irix7://serial` can be subscribed: it changes when the ring's head moves, announced at
/// most twice a second however fast the console prints.
pub const WATCHES: &[WatchDef<Ctx>] = &[WatchDef {
    uri: "irix7://serial",
    interval_ms: 500,
    version: ring_version,
}];

fn ring_version(ctx: &mut Ctx) -> u64 {
    u64::from(ctx.platform.serial_head())
}

fn read_resource(ctx: &mut Ctx, uri: &str) -> Result<Vec<ResourceContents>, ToolError> {
    Ok(vec![ResourceContents::Text {
        uri: String::from(uri),
        mime_type: Some(String::from("text/plain")),
        text: ring_text(ctx)?,
    }])
}

#[cfg(test)]
mod tests {
    use crate::tools::testing::fake;
    use crate::tools::testing::harness::{call, request, server_with};
    use alloc::vec::Vec;
    use base64::Engine;
    use serde_json::json;

    /// A 16-byte ring after `text` was written through it.
    fn ring_with(text: &[u8]) -> (Vec<u8>, u32) {
        let mut ring = alloc::vec![0u8; 16];
        for (n, &b) in text.iter().enumerate() {
            ring[n % 16] = b;
        }
        (ring, text.len() as u32)
    }

    #[test]
    fn reads_follow_the_console_across_a_wrap() {
        let (ring, head) = ring_with(b"boot ok\nirix7-mcp 0.1.0\nready\n");
        assert_eq!(head, 30);
        let (ctx, state) = fake::ctx_with_ring(ring, head);
        let mut s = server_with(ctx);
        // Offset 0 is older than the ring: 14 bytes lost, reading starts at 14.
        let r = call(&mut s, "serial.read", json!({"offset": 0, "max_bytes": 6}));
        let st = &r["structuredContent"];
        assert_eq!(st["data"], "mcp 0.");
        assert_eq!(
            (st["offset"].as_u64(), st["lost"].as_u64()),
            (Some(14), Some(14))
        );
        assert_eq!(
            (st["oldest"].as_u64(), st["next_offset"].as_u64()),
            (Some(14), Some(20))
        );
        assert_eq!(st["eof"], false);
        let r = call(&mut s, "serial.read", json!({"offset": 20}));
        let st = &r["structuredContent"];
        assert_eq!(st["data"], "1.0\nready\n");
        assert_eq!(
            (st["lost"].as_u64(), st["eof"].as_bool()),
            (Some(0), Some(true))
        );
        assert_eq!(st["next_offset"], 30);
        // Nothing new yet; then the head moves on.
        let r = call(&mut s, "serial.read", json!({"offset": 30}));
        assert_eq!(r["structuredContent"]["data"], "");
        assert_eq!(r["structuredContent"]["eof"], true);
        state.serial_head.set(31);
        let r = call(&mut s, "serial.read", json!({"offset": 30}));
        assert_eq!(r["structuredContent"]["bytes"], 1);
        assert_eq!(r["structuredContent"]["eof"], true);
    }

    #[test]
    fn default_offset_is_the_oldest_byte() {
        let (ring, head) = ring_with(b"0123456789abcdefXYZ");
        let (ctx, _) = fake::ctx_with_ring(ring, head);
        let mut s = server_with(ctx);
        let st = call(&mut s, "serial.read", json!({}))["structuredContent"].clone();
        assert_eq!(st["data"], "3456789abcdefXYZ");
        assert_eq!(
            (st["offset"].as_u64(), st["lost"].as_u64()),
            (Some(3), Some(0))
        );
    }

    #[test]
    fn bytes_the_kernel_overwrites_during_the_read_count_as_lost() {
        let (ring, head) = ring_with(b"0123456789abcdefXYZ");
        let (ctx, state) = fake::ctx_with_ring(ring, head);
        // The kernel writes 5 bytes while the tool copies: 3..8 may be torn.
        state.serial_head_bump.set(5);
        let mut s = server_with(ctx);
        let st = call(&mut s, "serial.read", json!({"offset": 0}))["structuredContent"].clone();
        assert_eq!(st["data"], "89abcdefXYZ");
        assert_eq!(
            (st["offset"].as_u64(), st["lost"].as_u64()),
            (Some(8), Some(8))
        );
        assert_eq!(
            (st["oldest"].as_u64(), st["head"].as_u64()),
            (Some(8), Some(24))
        );
        assert_eq!(st["next_offset"], 19);
        assert_eq!(st["eof"], false, "5 more bytes arrived meanwhile");
    }

    #[test]
    fn an_offset_past_the_head_is_an_error() {
        let (ring, head) = ring_with(b"abc");
        let (ctx, _) = fake::ctx_with_ring(ring, head);
        let mut s = server_with(ctx);
        let r = call(&mut s, "serial.read", json!({"offset": 4}));
        assert_eq!(r["isError"], true);
        assert_eq!(
            r["content"][0]["text"],
            "E_RANGE: offset 4 is past the head 3: nothing written there yet"
        );
    }

    #[test]
    fn text_keeps_characters_whole_and_base64_is_exact() {
        let text = "ab€\u{ff}".as_bytes(); // € is 3 bytes, ÿ is 2
        let mut bytes = text.to_vec();
        bytes.push(0xFF); // not UTF-8
        let (ring, head) = ring_with(&bytes);
        let (ctx, _) = fake::ctx_with_ring(ring, head);
        let mut s = server_with(ctx);
        // A limit inside € returns "ab" and continues at the €.
        let st =
            call(&mut s, "serial.read", json!({"offset": 0, "max_bytes": 4}))["structuredContent"]
                .clone();
        assert_eq!(
            (st["data"].as_str(), st["next_offset"].as_u64()),
            (Some("ab"), Some(2))
        );
        let st = call(&mut s, "serial.read", json!({"offset": 2}))["structuredContent"].clone();
        assert_eq!(st["data"], "€ÿ\u{fffd}");
        let st = call(
            &mut s,
            "serial.read",
            json!({"offset": 0, "encoding": "base64"}),
        )["structuredContent"]
            .clone();
        let raw = base64::engine::general_purpose::STANDARD
            .decode(st["data"].as_str().unwrap())
            .unwrap();
        assert_eq!(raw, bytes);
        assert_eq!(st["encoding"], "base64");
    }

    use rpc::http::{Body, BodyPoll, Response};
    use rpc::mcp::McpServer;
    use rpc::testing::{McpRequest, drain, last_message};
    use serde_json::Value;

    /// Starts a `serial.read` at `now` (2026-07-28, JSON only): the response, to poll.
    fn start_read(s: &mut McpServer<crate::tools::Ctx>, args: Value, now: u64) -> Response {
        McpRequest::modern(
            "tools/call",
            json!({"name": "serial.read", "arguments": args}),
        )
        .accept("application/json")
        .send(s, now)
    }

    /// One poll of a waiting read: its result once it answered.
    fn poll(r: &mut Response, now: u64) -> Option<Value> {
        match &mut r.body {
            Body::Full(b) => Some(serde_json::from_slice::<Value>(b).unwrap()["result"].clone()),
            Body::Stream(src) => {
                let mut out = Vec::new();
                let mut p = src.poll(&mut out, 1 << 16, now);
                // The answer goes out over the polls after the one that found it.
                while p != BodyPoll::End && !out.is_empty() {
                    p = src.poll(&mut out, 1 << 16, now);
                }
                (p == BodyPoll::End).then(|| last_message(&out).unwrap()["result"].clone())
            }
            Body::Empty | Body::Spliced(..) => panic!("no answer of a tool call is spliced"),
        }
    }

    #[test]
    fn until_already_on_the_console_answers_at_once_up_to_the_match() {
        let (ring, head) = ring_with(b"PROM ok\nlogin: \nmore");
        let (ctx, _) = fake::ctx_with_ring(ring, head);
        let mut s = server_with(ctx);
        let r = call(
            &mut s,
            "serial.read",
            json!({"until": "login:", "wait_ms": 5000}),
        );
        let st = &r["structuredContent"];
        assert_eq!(st["data"], " ok\nlogin:", "the 16-byte ring lost `PROM`");
        assert_eq!(
            (st["matched"].as_bool(), st["match_offset"].as_u64()),
            (Some(true), Some(8))
        );
        assert_eq!(st["next_offset"], 14);
        // Without waiting, a miss answers at once too.
        let st = call(&mut s, "serial.read", json!({"until": "nope"}))["structuredContent"].clone();
        assert_eq!(st["matched"], false);
        assert!(st.get("match_offset").is_none());
        assert_eq!(st["data"], " ok\nlogin: \nmore");
    }

    #[test]
    fn a_wait_answers_in_the_poll_after_the_text_completes_across_looks() {
        // The ring already holds what the kernel "will write": the head reveals it.
        let (ring, _) = ring_with(b"boot: READY\n");
        let (ctx, state) = fake::ctx_with_ring(ring, 4);
        let mut s = server_with(ctx);
        let mut r = start_read(
            &mut s,
            json!({"offset": 0, "until": "READY", "wait_ms": 60_000}),
            1000,
        );
        assert_eq!(poll(&mut r, 1000), None);
        state.serial_head.set(9); // "boot: REA"
        assert_eq!(poll(&mut r, 1010), None, "half the text is no match");
        assert_eq!(poll(&mut r, 1020), None);
        state.serial_head.set(11); // "…DY"
        let st =
            poll(&mut r, 1030).expect("answered in the next poll")["structuredContent"].clone();
        assert_eq!(st["data"], "boot: READY");
        assert_eq!(
            (st["match_offset"].as_u64(), st["next_offset"].as_u64()),
            (Some(6), Some(11))
        );
    }

    #[test]
    fn a_wait_ends_at_its_deadline_with_what_is_there() {
        let (ring, _) = ring_with(b"abcdef");
        let (ctx, state) = fake::ctx_with_ring(ring, 3);
        let mut s = server_with(ctx);
        let mut r = start_read(
            &mut s,
            json!({"offset": 3, "until": "zz", "wait_ms": 2000}),
            1000,
        );
        assert_eq!(poll(&mut r, 1000), None);
        state.serial_head.set(6);
        assert_eq!(poll(&mut r, 2999), None);
        let st = poll(&mut r, 3000).unwrap()["structuredContent"].clone();
        assert_eq!(
            (st["matched"].as_bool(), st["data"].as_str()),
            (Some(false), Some("def"))
        );
        // Without `until`, bytes past the offset end the wait.
        let mut r = start_read(&mut s, json!({"offset": 6, "wait_ms": 2000}), 4000);
        assert_eq!(poll(&mut r, 4000), None);
        assert_eq!(poll(&mut r, 4500), None);
        state.serial_head.set(7);
        let st = poll(&mut r, 4510).unwrap()["structuredContent"].clone();
        assert_eq!(
            (st["offset"].as_u64(), st["bytes"].as_u64()),
            (Some(6), Some(1))
        );
        assert!(st.get("matched").is_none());
    }

    #[test]
    fn waiters_past_the_limit_are_busy_and_a_finished_one_frees_its_place() {
        // The fake allows 2 waiters.
        let (ring, head) = ring_with(b"abc");
        let (ctx, _) = fake::ctx_with_ring(ring, head);
        let mut s = server_with(ctx);
        let args = json!({"offset": 3, "wait_ms": 1000});
        let mut a = start_read(&mut s, args.clone(), 1000);
        let _b = start_read(&mut s, args.clone(), 1000);
        let mut c = start_read(&mut s, args.clone(), 1000);
        let refused = poll(&mut c, 1000).unwrap();
        assert_eq!(refused["isError"], true);
        assert_eq!(
            refused["content"][0]["text"],
            "E_BUSY: 2 calls already wait on the console; retry later"
        );
        assert!(poll(&mut a, 2000).is_some(), "deadline");
        drop(a);
        let mut d = start_read(&mut s, args, 2000);
        assert_eq!(poll(&mut d, 2000), None, "waits again");
        // A closed connection gives its place back too.
        drop(d);
        let mut e = start_read(&mut s, json!({"offset": 3, "wait_ms": 1000}), 2000);
        assert_eq!(poll(&mut e, 2000), None);
        let (_, ended) = drain(&mut e, 2000, 1000);
        assert!(ended);
    }

    #[test]
    fn until_is_bounded() {
        let (ctx, _) = fake::ctx_and_state();
        let mut s = server_with(ctx);
        let r = call(&mut s, "serial.read", json!({"until": "é".repeat(200)}));
        assert_eq!(r["isError"], true);
        assert_eq!(
            r["content"][0]["text"],
            "E_INVAL: `until` must be 1 to 256 bytes"
        );
    }

    #[test]
    fn serial_write_reaches_the_console() {
        let (ctx, state) = fake::ctx_and_state();
        let mut s = server_with(ctx);
        let r = call(&mut s, "serial.write", json!({"text": "hi"}));
        assert_eq!(r["structuredContent"]["bytes"], 3);
        assert_eq!(&state.console.borrow()[..], b"hi\n");
    }

    #[test]
    fn the_serial_resource_changes_when_the_ring_head_moves() {
        let (mut ctx, state) = fake::ctx_and_state();
        let before = super::ring_version(&mut ctx);
        assert_eq!(before, super::ring_version(&mut ctx));
        state.serial_head.set(state.serial_head.get() + 3);
        assert_ne!(before, super::ring_version(&mut ctx));
    }

    #[test]
    fn the_serial_resource_is_the_ring_as_text() {
        let (ring, head) = ring_with(b"0123456789abcdefXYZ");
        let (ctx, _) = fake::ctx_with_ring(ring, head);
        let mut s = server_with(ctx);
        let r = request(&mut s, "resources/read", json!({"uri": "irix7://serial"}));
        let c = &r["result"]["contents"][0];
        assert_eq!(c["mimeType"], "text/plain");
        assert_eq!(c["text"], "3456789abcdefXYZ");
    }
}
