//! Serial tools: `serial.read` reads the kernel's serial ring by absolute offset (see
//! [`crate::services::serial_ring`]), `serial.write` writes to the serial console, and the
//! `irix7://serial` resource is the ring's current content as text.
//!
//! Encoding: by default `data` is text: bytes that are not UTF-8 become U+FFFD, and a
//! multi-byte character cut by `max_bytes` is left for the next read (so `next_offset` never
//! splits one). `encoding: "base64"` returns the exact bytes instead.

use super::{Ctx, args, console};
use crate::services::serial_ring::{self, RingError};
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use base64::Engine;
use rpc::mcp::{
    Annotations, ErrorCode, ResourceContents, ResourceDef, Started, ToolCall, ToolDef, ToolError,
    ToolOutput,
};
use serde_json::json;

/// Default and largest `max_bytes`: the whole ring on the Indy.
const READ_DEFAULT: u64 = 8192;
const READ_MAX: u64 = 65536;

pub const TOOLS: &[ToolDef<Ctx>] = &[
    ToolDef {
        name: "serial.read",
        title: Some("Read the serial console"),
        description: "Reads the console output the kernel keeps in its 8 KiB serial ring, from \
                      an absolute byte `offset` (default: the oldest byte still held). Pass the \
                      returned `next_offset` to the next call to follow the console; `eof` says \
                      you are caught up. If the ring has moved past `offset`, reading starts at \
                      `oldest` and `lost` counts the bytes missed.",
        input_schema: r#"{"type":"object","properties":{
  "offset":{"type":"integer","minimum":0,"maximum":4294967295,"description":"Absolute offset to read from (default: oldest held)"},
  "max_bytes":{"type":"integer","minimum":1,"maximum":65536,"default":8192,"description":"Most bytes to return"},
  "encoding":{"type":"string","enum":["text","base64"],"default":"text","description":"text: UTF-8, invalid bytes as U+FFFD; base64: exact bytes"}},
  "additionalProperties":false}"#,
        output_schema: Some(
            r#"{"type":"object","properties":{
  "data":{"type":"string"},"encoding":{"type":"string","enum":["text","base64"]},
  "offset":{"type":"integer","description":"Absolute offset of the first byte of data"},
  "bytes":{"type":"integer","description":"Raw bytes returned"},
  "next_offset":{"type":"integer"},"head":{"type":"integer","description":"Bytes ever written"},
  "oldest":{"type":"integer","description":"Oldest offset the ring holds"},
  "lost":{"type":"integer","description":"Bytes between the requested offset and `offset` no longer held"},
  "eof":{"type":"boolean"}},
  "required":["data","encoding","offset","bytes","next_offset","head","oldest","lost","eof"]}"#,
        ),
        annotations: Annotations::READ_ONLY,
        requires: &[],
        errors: &[ErrorCode::Range],
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
    description: "The console output the serial ring still holds (up to 8 KiB), as text.",
    mime_type: Some("text/plain"),
    read: read_resource,
}];

/// How many trailing bytes form the start of a UTF-8 sequence that continues past the end.
fn incomplete_tail(bytes: &[u8]) -> usize {
    for back in 1..=bytes.len().min(3) {
        let Some(&b) = bytes.get(bytes.len() - back) else {
            break;
        };
        if b & 0xC0 == 0x80 {
            continue;
        }
        let need = match b {
            0xF0.. => 4,
            0xE0.. => 3,
            0xC0.. => 2,
            _ => 1,
        };
        return if need > back { back } else { 0 };
    }
    0
}

fn serial_read(ctx: &mut Ctx, call: &ToolCall<'_>) -> Result<Started<Ctx>, ToolError> {
    let offset = args::opt_u64(call, "offset")?;
    let max = args::opt_u64(call, "max_bytes")?
        .unwrap_or(READ_DEFAULT)
        .clamp(1, READ_MAX) as usize;
    let base64 = match args::opt_str(call, "encoding")? {
        None | Some("text") => false,
        Some("base64") => true,
        Some(other) => {
            return Err(ToolError::new(
                ErrorCode::Inval,
                format!("unknown encoding `{other}`: text or base64"),
            ));
        }
    };
    let (ring, head) = ring_copy(ctx)?;
    let mut chunk = serial_ring::read(&ring, head, offset, max).map_err(|e| match e {
        RingError::Future { offset, head } => ToolError::new(
            ErrorCode::Range,
            format!("offset {offset} is past the head {head}: nothing written there yet"),
        ),
    })?;
    chunk.discard_overwritten(ctx.platform.serial_head(), ring.len());
    // A character cut by `max_bytes` is read whole next time.
    if !base64 && chunk.data.len() == max {
        let keep = chunk.data.len() - incomplete_tail(&chunk.data);
        if keep > 0 {
            chunk.data.truncate(keep);
        }
    }
    let data = if base64 {
        base64::engine::general_purpose::STANDARD.encode(&chunk.data)
    } else {
        String::from_utf8_lossy(&chunk.data).into_owned()
    };
    Ok(Started::Done(ToolOutput::structured(json!({
        "data": data,
        "encoding": if base64 { "base64" } else { "text" },
        "offset": chunk.offset,
        "bytes": chunk.data.len(),
        "next_offset": chunk.next_offset(),
        "head": chunk.head,
        "oldest": chunk.oldest,
        "lost": chunk.lost,
        "eof": chunk.eof(),
    }))))
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

fn read_resource(ctx: &mut Ctx, uri: &str) -> Result<Vec<ResourceContents>, ToolError> {
    Ok(vec![ResourceContents::Text {
        uri: String::from(uri),
        mime_type: Some(String::from("text/plain")),
        text: ring_text(ctx)?,
    }])
}

#[cfg(test)]
mod tests {
    use super::incomplete_tail;
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

    #[test]
    fn incomplete_tails() {
        assert_eq!(incomplete_tail(b"abc"), 0);
        assert_eq!(incomplete_tail("a€".as_bytes()), 0);
        assert_eq!(incomplete_tail(&"a€".as_bytes()[..3]), 2);
        assert_eq!(incomplete_tail(&"a€".as_bytes()[..2]), 1);
        assert_eq!(incomplete_tail(&[0xF0, 0x9F, 0x98]), 3);
        assert_eq!(incomplete_tail(&[0x80, 0x80, 0x80]), 0);
        assert_eq!(incomplete_tail(&[]), 0);
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
