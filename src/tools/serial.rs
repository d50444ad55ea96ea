//! Serial tools: `serial.read` reads the kernel's serial ring by absolute offset (see
//! [`crate::services::serial_ring`]), `serial.write` writes to the serial console, and the
//! `irix7://serial` resource is the ring's current content as text.
//!
//! Waiting: with `wait_ms` a read that finds nothing past its offset (or not `until`) becomes a
//! run that looks at the ring's head once a poll and copies the ring only when the head moved,
//! feeding the matcher just the new bytes ([`crate::services::serial_wait`]). Waiters are
//! bounded ([`ConsoleWaiters`], E_BUSY past it); the run asks for an event stream so
//! keep-alives flow while it waits.
//!
//! Secrets: every read (the answer, the bytes `until` is matched against, the resource) takes
//! a [`Secrets`] choice and masks the generated token's bytes when it says so, so neither a
//! window nor a match tells them.
//!
//! Encoding: by default `data` is text: bytes that are not UTF-8 become U+FFFD, and a
//! multi-byte character cut by `max_bytes` is left for the next read (so `next_offset` never
//! splits one). `encoding: "base64"` returns the exact bytes instead.

use super::reach::{BootRecord, ConsoleLine, ConsoleWaiters};
use super::{Ctx, args, console};
use crate::hil::platform::Console;
use crate::services::boot::PreviousSecret;
use crate::services::serial_ring::{self, Chunk, Ring, RingError, Secrets};
use crate::services::serial_wait::{Literal, NEEDLE_MAX, WaiterSlot};
use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use irix7_kmem::share::Short;
use rpc::json::ObjectWriter;
use rpc::mcp::{
    Annotations, ErrorCode, ResourceContents, ResourceDef, Started, Step, StepIo, TaskSupport,
    TaskTool, ToolCall, ToolDef, ToolError, ToolOutput, ToolRun, WatchDef,
};

/// Default and largest `max_bytes`: the whole ring on the Indy.
const READ_DEFAULT: u64 = 8192;
const READ_MAX: u64 = 65536;
/// Longest `wait_ms`: long enough to wait for a machine to boot again after a reset.
pub const WAIT_MAX_MS: u64 = 300_000;

pub const TOOLS: &[ToolDef<Ctx>] = &[
    READ,
    ToolDef {
        name: "serial.write",
        title: Some("Write to the serial console"),
        description: "Writes a line of text to the serial console (Z85C30 channel B, the \
                      Indy's console); the same path as `console.write`, marked the same way \
                      (each line starts with `[mcp] `). The text also lands in the serial ring.",
        input_schema: console::WRITE_INPUT,
        output_schema: Some(console::WRITE_OUTPUT),
        annotations: Annotations::WRITE,
        requires: &[],
        errors: &[],
        start: console::write_text,
    },
];

/// `serial.read` may run as a task (when it does not answer at once).
pub const TASKS: &[TaskTool] = &[TaskTool {
    name: READ.name,
    support: TaskSupport::Optional,
}];

const READ: ToolDef<Ctx> = ToolDef {
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
                  Few calls may wait at once (E_BUSY past them). `boot: \"previous\"` reads \
                  the previous boot's console instead, as the kernel kept it across the \
                  reset (read-only: no waiting; E_NOENT when nothing survived, as after a \
                  power-on; E_IO when it was damaged).",
    input_schema: r#"{"type":"object","properties":{
  "offset":{"type":"integer","minimum":0,"maximum":4294967295,"description":"Absolute offset to read from (default: oldest held)"},
  "max_bytes":{"type":"integer","minimum":1,"maximum":65536,"default":8192,"description":"Most bytes to return"},
  "encoding":{"type":"string","enum":["text","base64"],"default":"text","description":"text: UTF-8, invalid bytes as U+FFFD; base64: exact bytes"},
  "wait_ms":{"type":"integer","minimum":0,"maximum":300000,"default":0,"description":"Wait up to this long for bytes past `offset` (or for `until`)"},
  "until":{"type":"string","minLength":1,"maxLength":256,"description":"Literal text to wait for past `offset` (at most 256 bytes); the data then ends at the end of the match"},
  "boot":{"type":"string","enum":["current","previous"],"default":"current","description":"Which boot's console: this one, or the previous one as the kernel kept it across the reset"}},
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
    errors: &[
        ErrorCode::Range,
        ErrorCode::Busy,
        ErrorCode::NoEnt,
        ErrorCode::Io,
    ],
    start: serial_read,
};

pub const RESOURCES: &[ResourceDef<Ctx>] = &[
    ResourceDef {
        uri: "irix7://serial",
        name: "serial",
        title: Some("Serial console"),
        description: "The console output the serial ring still holds (up to 8 KiB), as text. \
                      Subscribable: an update at most every 500 ms while the console prints.",
        mime_type: Some("text/plain"),
        read: read_resource,
    },
    ResourceDef {
        uri: "irix7://serial/previous",
        name: "serial-previous",
        title: Some("Previous boot's console"),
        description: "The previous boot's console as the kernel kept it across the reset (up to \
                      8 KiB), as text, its generated token masked; E_NOENT when nothing survived \
                      (after a power-on), E_IO when it was damaged, E_PERM when its flight \
                      record did not survive to say where the token is (serial.read with boot \
                      previous serves it to the administrator). `status` says why the machine \
                      reset.",
        mime_type: Some("text/plain"),
        read: read_previous_resource,
    },
];

/// What a `serial.read` asks for.
struct ReadArgs {
    offset: Option<u64>,
    max: usize,
    base64: bool,
    secrets: Secrets,
}

fn serial_read<C: ConsoleLine + ConsoleWaiters + BootRecord>(
    ctx: &mut C,
    call: &ToolCall<'_>,
) -> Result<Started<C>, ToolError> {
    // Only the administrator sees the generated token in the console.
    let secrets = if call.sees_secrets {
        Secrets::Reveal
    } else {
        Secrets::Mask
    };
    match args::opt_str(call, "boot")?.as_deref() {
        None | Some("current") => read_console(ctx, call, secrets),
        Some("previous") => read_previous(ctx, call, secrets).map(Started::Done),
        Some(other) => Err(ToolError::new(
            ErrorCode::Inval,
            format!("unknown boot `{other}`: current or previous"),
        )),
    }
}

/// The read arguments every form shares: `max_bytes`, `encoding`, `offset`.
fn read_args(call: &ToolCall<'_>, secrets: Secrets) -> Result<ReadArgs, ToolError> {
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
    Ok(ReadArgs {
        offset: args::opt_u64(call, "offset")?,
        max,
        base64,
        secrets,
    })
}

/// `serial.read` with `boot: "previous"`: the same window rules over the ring the kernel
/// kept, which does not move, so there is nothing to wait for.
fn read_previous<C: BootRecord>(
    ctx: &C,
    call: &ToolCall<'_>,
    secrets: Secrets,
) -> Result<ToolOutput<C>, ToolError> {
    if args::opt_u64(call, "wait_ms")?.unwrap_or(0) > 0 || args::opt_str(call, "until")?.is_some() {
        return Err(ToolError::new(
            ErrorCode::Inval,
            "the previous boot's console does not change: no `wait_ms` or `until`",
        ));
    }
    let read = read_args(call, secrets)?;
    let chunk = previous_read(ctx, read.offset, read.max, secrets)?;
    render(chunk, &read, None)
}

/// At most `max` bytes of the previous boot's ring from `offset`, its secret masked when
/// `secrets` says so.
fn previous_read(
    ctx: &impl BootRecord,
    offset: Option<u64>,
    max: usize,
    secrets: Secrets,
) -> Result<Chunk, ToolError> {
    let ring = match &ctx.boot().ring {
        Some(Ok(ring)) => ring,
        Some(Err(_)) => {
            return Err(ToolError::new(
                ErrorCode::Io,
                "the previous boot's console was damaged across the reset (its checksum does \
                 not hold); not served",
            ));
        }
        None => {
            return Err(ToolError::new(
                ErrorCode::NoEnt,
                "no previous boot's console: nothing survived (a power-on, or a kernel before \
                 ABI 13)",
            ));
        }
    };
    let span = match (ring.secret, secrets) {
        (PreviousSecret::Known(span), _) => span,
        (PreviousSecret::Unknown, Secrets::Reveal) => None,
        (PreviousSecret::Unknown, Secrets::Mask) => {
            return Err(ToolError::new(
                ErrorCode::Perm,
                "the previous boot's flight record did not survive, so where it printed a \
                 generated token is unknown: its console is served only to the \
                 administrator's token, not narrowed",
            ));
        }
    };
    let mut chunk = serial_ring::read(&ring.bytes[..], ring.head, offset, max).map_err(range)?;
    chunk.hide(secrets, span);
    Ok(chunk)
}

fn read_previous_resource<C: BootRecord>(
    ctx: &mut C,
    uri: &str,
) -> Result<Vec<ResourceContents>, ToolError> {
    let bytes = previous_read(ctx, None, usize::MAX, Secrets::Mask)?.data;
    Ok(vec![ResourceContents::Text {
        uri: String::from(uri),
        mime_type: Some(String::from("text/plain")),
        text: String::from_utf8_lossy(&bytes).into_owned(),
    }])
}

fn read_console<C: ConsoleLine + ConsoleWaiters>(
    ctx: &mut C,
    call: &ToolCall<'_>,
    secrets: Secrets,
) -> Result<Started<C>, ToolError> {
    let read = read_args(call, secrets)?;
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
    let chunk = ring_read(ctx, read.offset, usize::MAX, secrets)?;
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
    let slot = match ctx.serial_waiters().take(call.holder) {
        Ok(slot) => slot,
        Err(Short::Tier) => {
            let n = ctx.serial_waiters().held();
            let why = format!("{n} calls already wait on the console; retry later");
            return Err(ToolError::new(ErrorCode::Busy, why));
        }
        Err(Short::Owner) => {
            let why = "this token's calls already wait on the console as many times as it \
                       may; retry later";
            return Err(ToolError::new(ErrorCode::Busy, why));
        }
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
    fn look_at<C: ConsoleLine>(
        &mut self,
        ctx: &mut C,
        chunk: &Chunk,
    ) -> Result<Option<ToolOutput<C>>, ToolError> {
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
    fn give_up<C: ConsoleLine>(&self, ctx: &mut C) -> Result<ToolOutput<C>, ToolError> {
        answer(ctx, &self.read, self.until.as_ref().map(|_| None))
    }
}

impl<C: ConsoleLine> ToolRun<C> for Wait {
    fn step(&mut self, ctx: &mut C, io: &mut StepIo<'_>) -> Step<C> {
        let done = if ctx.console().serial_head() == self.scanned {
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
    fn look<C: ConsoleLine>(&mut self, ctx: &mut C) -> Result<Option<ToolOutput<C>>, ToolError> {
        // `scanned` past the head (the 4 GiB counter wrapped): look from the oldest byte.
        let from = (self.scanned <= ctx.console().serial_head()).then_some(u64::from(self.scanned));
        let chunk = ring_read(ctx, from, usize::MAX, self.read.secrets)?;
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
        RingError::NoMemory => ToolError::new(
            ErrorCode::Busy,
            "no memory for the bytes of the serial ring asked for; retry later",
        ),
    }
}

/// The kernel's live ring, read through the platform: only the bytes a read returns are
/// copied out of it.
impl Ring for dyn Console + '_ {
    fn size(&self) -> usize {
        self.serial_ring_size()
    }

    fn copy(&self, at: usize, out: &mut [u8]) {
        self.serial_ring_copy(at, out);
    }
}

/// The result of a read from `read.offset`. `until` is `None` when the call had no `until`,
/// `Some(None)` when it did not match, `Some(Some(found))` when it did: the data then ends
/// at the end of the match (or sooner, at `max_bytes`).
fn answer<C: ConsoleLine>(
    ctx: &C,
    read: &ReadArgs,
    until: Option<Option<Found>>,
) -> Result<ToolOutput<C>, ToolError> {
    let chunk = ring_read(ctx, read.offset, read.max, read.secrets)?;
    render(chunk, read, until)
}

/// A read's result: the window's data in the asked encoding and where it lies.
fn render<C>(
    mut chunk: Chunk,
    read: &ReadArgs,
    until: Option<Option<Found>>,
) -> Result<ToolOutput<C>, ToolError> {
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
    // The data's escaped text, then a dozen numbers: ~32 entries.
    let mut w = ObjectWriter::new(chunk.data.len() * 4 / 3 + 240);
    w.key("bytes").u64(chunk.data.len() as u64);
    match read.base64 {
        true => w.key("data").str(&rpc::mcp::base64(&chunk.data)),
        // A console is ASCII as a rule, told four aligned words at a test (kmem); other text
        // is read as UTF-8, an invalid sequence replaced (borrowed when there is none).
        false => match irix7_kmem::ascii(&chunk.data) {
            Some(text) => w.key("data").str(text),
            None => w.key("data").str(&String::from_utf8_lossy(&chunk.data)),
        },
    };
    w.key("encoding")
        .str(if read.base64 { "base64" } else { "text" });
    w.key("eof")
        .bool(chunk.eof())
        .key("head")
        .u64(chunk.head.into());
    w.key("lost").u64(chunk.lost.into());
    if let Some(found) = until {
        if let Some(f) = found {
            w.key("match_offset").u64(f.at.into());
        }
        w.key("matched").bool(found.is_some());
    }
    w.key("next_offset").u64(chunk.next_offset().into());
    w.key("offset").u64(chunk.offset.into());
    w.key("oldest").u64(chunk.oldest.into());
    Ok(ToolOutput::structured(w.finish()))
}

/// At most `max` bytes of the ring from `offset` (default: the oldest held), none of them
/// overwritten while copied, the secret's bytes masked when `secrets` says so. Every read of
/// the console goes through here. `E_BUSY` when the heap has no room for the copy now.
fn ring_read(
    ctx: &impl ConsoleLine,
    offset: Option<u64>,
    max: usize,
    secrets: Secrets,
) -> Result<Chunk, ToolError> {
    let console = ctx.console();
    let head = console.serial_head();
    let mut chunk = serial_ring::read(console, head, offset, max).map_err(range)?;
    chunk.discard_overwritten(console.serial_head(), console.serial_ring_size());
    chunk.hide(secrets, ctx.console_secret());
    Ok(chunk)
}

/// The ring's content as text (what `serial.read` with no offset and no limit returns).
fn ring_text(ctx: &impl ConsoleLine, secrets: Secrets) -> Result<String, ToolError> {
    let bytes = ring_read(ctx, None, usize::MAX, secrets)?.data;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// `irix7://serial` can be subscribed: it changes when the ring's head moves, announced at
/// most twice a second however fast the console prints.
pub const WATCHES: &[WatchDef<Ctx>] = &[WatchDef {
    uri: "irix7://serial",
    interval_ms: 500,
    version: ring_version,
}];

fn ring_version<C: ConsoleLine>(ctx: &mut C) -> u64 {
    u64::from(ctx.console().serial_head())
}

fn read_resource<C: ConsoleLine>(
    ctx: &mut C,
    uri: &str,
) -> Result<Vec<ResourceContents>, ToolError> {
    // A resource reader is not told who reads: the generated token is always masked here
    // (the administrator reads it with `serial.read`).
    let secrets = Secrets::Mask;
    Ok(vec![ResourceContents::Text {
        uri: String::from(uri),
        mime_type: Some(String::from("text/plain")),
        text: ring_text(ctx, secrets)?,
    }])
}

#[cfg(test)]
mod tests;
