//! Console tools: `console.write` writes a line to the guest console (the Z85C30's channel B,
//! which the kernel also copies into the serial ring), `input.keys` queues keystrokes on the
//! console input as if typed on the serial line.
//!
//! What a client writes is marked ([`console_mark`]): every line starts with `[mcp] `, so none
//! passes for the module's own `irix7-mcp: …` lines. Keystrokes are input, not console output:
//! the kernels the module runs on (the rig's and the PROM's stand-ins) do not echo them, and
//! what a program prints in answer is that program's output.

use super::reach::ConsoleLine;
use super::{Ctx, args};
use crate::services::console_mark;
use alloc::format;
use rpc::json::ObjectWriter;
use rpc::mcp::{Annotations, ErrorCode, Started, ToolCall, ToolDef, ToolError};

/// Most bytes one write sends (a line or a short block; the ring holds 8 KiB).
pub const WRITE_MAX: usize = 4096;
/// Most keystroke bytes one call queues.
pub const KEYS_MAX: usize = 1024;

/// Input schema shared with `serial.write`.
pub const WRITE_INPUT: &str = r#"{"type":"object","properties":{
  "text":{"type":"string","maxLength":4096,"description":"Text to write (at most 4096 bytes as UTF-8); each line is written after the mark `[mcp] `, control characters other than tab, newline and carriage return as escapes (`\\u{1b}`)"},
  "newline":{"type":"boolean","default":true,"description":"End the text with a newline unless it already ends with one"}},
  "required":["text"],"additionalProperties":false}"#;

/// Output schema shared with `serial.write`.
pub const WRITE_OUTPUT: &str = r#"{"type":"object","properties":{
  "bytes":{"type":"integer","description":"Bytes written to the console: the marked text and the newline"},
  "serial_head":{"type":"integer","description":"The serial ring's head after the write: serial.read from before it sees the text"}},
  "required":["bytes","serial_head"]}"#;

pub const TOOLS: &[ToolDef<Ctx>] = &[
    ToolDef {
        name: "console.write",
        title: Some("Write to the console"),
        description: "Writes a line of text to the Indy's console (Z85C30 serial channel B); \
                      it also lands in the serial ring, so `serial.read` shows it. Every line \
                      written starts with `[mcp] ` (so none passes for the module's own \
                      `irix7-mcp:` lines) and control characters other than tab, newline and \
                      carriage return are written as escapes (`\\u{1b}`).",
        input_schema: WRITE_INPUT,
        output_schema: Some(WRITE_OUTPUT),
        annotations: Annotations::WRITE,
        requires: &[],
        errors: &[],
        start: console_write,
    },
    ToolDef {
        name: "input.keys",
        title: Some("Type keys"),
        description: "Queues keystrokes on the console input, as if typed on the serial line \
                      (use \\r for Return, \\u0003 for Ctrl-C): it acts as whoever is logged in \
                      there. Reports how many bytes the \
                      kernel's input queue took; the rest were dropped.",
        input_schema: r#"{"type":"object","properties":{
  "keys":{"type":"string","minLength":1,"maxLength":1024,"description":"Keystrokes as text (UTF-8 bytes are queued as they are)"}},
  "required":["keys"],"additionalProperties":false}"#,
        output_schema: Some(
            r#"{"type":"object","properties":{
  "requested":{"type":"integer"},"taken":{"type":"integer","description":"Bytes the input queue accepted"}},
  "required":["requested","taken"]}"#,
        ),
        // Typing acts as whoever is logged in at the console (root, on a hobby OS).
        annotations: Annotations::DESTRUCTIVE,
        requires: &[],
        errors: &[],
        start: input_keys,
    },
];

/// Writes `text`, marked (plus a newline when asked and missing), to the console; the
/// structured answer of `console.write` and `serial.write`.
pub fn write_text<C: ConsoleLine>(
    ctx: &mut C,
    call: &ToolCall<'_>,
) -> Result<Started<C>, ToolError> {
    let text = args::string(call, "text")?;
    let newline = args::bool_or(call, "newline", true)?;
    if text.len() > WRITE_MAX {
        return Err(ToolError::new(
            ErrorCode::Inval,
            format!(
                "`text` is {} bytes; at most {WRITE_MAX} per write",
                text.len()
            ),
        ));
    }
    let bytes = console_mark::marked(&text, newline);
    ctx.console().console_write(&bytes);
    let head = ctx.console().serial_head();
    let mut w = ObjectWriter::new(40);
    w.key("bytes").u64(bytes.len() as u64);
    w.key("serial_head").u64(head.into());
    Ok(Started::structured(w.finish()))
}

fn console_write<C: ConsoleLine>(
    ctx: &mut C,
    call: &ToolCall<'_>,
) -> Result<Started<C>, ToolError> {
    write_text(ctx, call)
}

fn input_keys<C: ConsoleLine>(ctx: &mut C, call: &ToolCall<'_>) -> Result<Started<C>, ToolError> {
    let keys = args::string(call, "keys")?;
    if keys.is_empty() || keys.len() > KEYS_MAX {
        return Err(ToolError::new(
            ErrorCode::Inval,
            format!("`keys` must be 1 to {KEYS_MAX} bytes"),
        ));
    }
    let taken = ctx.console().console_input(keys.as_bytes()).min(keys.len());
    let mut w = ObjectWriter::new(32);
    w.key("requested").u64(keys.len() as u64);
    w.key("taken").u64(taken as u64);
    Ok(Started::structured(w.finish()))
}

#[cfg(test)]
mod tests {
    use crate::tools::testing::fake;
    use crate::tools::testing::harness::{call, server_with};
    use serde_json::json;

    #[test]
    fn console_write_adds_one_newline() {
        let (ctx, state) = fake::ctx_with_ring(alloc::vec![0; 16], 7);
        let mut s = server_with(ctx);
        let r = call(&mut s, "console.write", json!({"text": "hello"}));
        assert_eq!(
            r["structuredContent"],
            json!({"bytes": 12, "serial_head": 7})
        );
        call(&mut s, "console.write", json!({"text": "line\n"}));
        call(
            &mut s,
            "console.write",
            json!({"text": "raw", "newline": false}),
        );
        assert_eq!(
            &state.console.borrow()[..],
            b"[mcp] hello\n[mcp] line\n[mcp] raw"
        );
    }

    #[test]
    fn console_write_marks_every_line_it_writes() {
        let (ctx, state) = fake::ctx_and_state();
        let mut s = server_with(ctx);
        let text = "done\nirix7-mcp: token generated: 00112233445566778899aabbccddeeff\n\
                    irix7-mcp: audit 5000 ms 10.0.0.9 stateless system.reset {} -> ok\r\x1b[2K";
        let r = call(&mut s, "console.write", json!({ "text": text }));
        let written = String::from_utf8(state.console.borrow().clone()).unwrap();
        assert_eq!(
            written,
            "[mcp] done\n[mcp] irix7-mcp: token generated: 00112233445566778899aabbccddeeff\n\
             [mcp] irix7-mcp: audit 5000 ms 10.0.0.9 stateless system.reset {} -> ok\r\
             [mcp] \\u{1b}[2K\n"
        );
        assert_eq!(r["structuredContent"]["bytes"], written.len());
    }

    #[test]
    fn console_write_refuses_oversized_text() {
        let (ctx, state) = fake::ctx_and_state();
        let mut s = server_with(ctx);
        // 2000 characters pass the schema's maxLength but are 6000 bytes.
        let text = "€".repeat(2000);
        let r = call(&mut s, "console.write", json!({ "text": text }));
        assert_eq!(r["isError"], true);
        let msg = r["content"][0]["text"].as_str().unwrap();
        assert!(msg.starts_with("E_INVAL: `text` is 6000 bytes"), "{msg}");
        assert!(state.console.borrow().is_empty());
    }

    #[test]
    fn input_keys_reports_what_the_queue_took() {
        let (ctx, state) = fake::ctx_and_state();
        state.key_room.set(5);
        let mut s = server_with(ctx);
        let r = call(&mut s, "input.keys", json!({"keys": "ls\r"}));
        assert_eq!(r["structuredContent"], json!({"requested": 3, "taken": 3}));
        let r = call(&mut s, "input.keys", json!({"keys": "cat x\r"}));
        assert_eq!(r["structuredContent"], json!({"requested": 6, "taken": 2}));
        assert_eq!(&state.keys.borrow()[..], b"ls\rca");
        let r = call(&mut s, "input.keys", json!({"keys": ""}));
        assert_eq!(r["isError"], true, "empty keys are refused by the schema");
    }
}
