//! `shell.exec`: runs one builtin of the module's shell ([`crate::services::shell`]) and returns its
//! output and exit status. Quick builtins answer at once; `sleep`, `cat` and `ls` run across
//! polls, report progress (to a client that sent a progress token, over SSE) and stop when the
//! call is cancelled.
//!
//! Streaming: for a client that hears progress, a running command's output goes out as it is
//! printed, as `notifications/progress` whose `message` is the next piece of output and whose
//! `progress` counts the output bytes sent (docs/mcp.md says why progress and not log
//! messages); the final result still carries the whole output.
//!
//! Result: the output is the first content block (text; bytes that are not UTF-8 become
//! U+FFFD), streamed from memory so it is never escaped into one big string. The structured
//! result carries `exit_status`, `truncated`, `output_bytes`, and `output` itself when it is at
//! most [`INLINE_MAX`] bytes.
//!
//! Memory: a call keeps at most `max_output` bytes ([`OUTPUT_MAX`] at most), and every running
//! call's output draws on one shared pool (`Services::shell_output`, an eighth of the heap)
//! until its answer has streamed out; a call that would go past it is refused with `E_BUSY`.

use super::reach::ShellHost;
use super::{Ctx, args};
use crate::services::shell::output::Output;
use crate::services::shell::{self, Exit, Job, JobStep, ShellError};
use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::vec;
use rpc::json::{ObjectWriter, ValueRef};
use rpc::mcp::{
    Annotations, Content, ContentSource, Door, ErrorCode, SourcePoll, Started, Step, StepIo,
    StreamKind, TaskSupport, TaskTool, ToolCall, ToolDef, ToolError, ToolOutput, ToolRun,
};

/// Default and largest `max_output`: a seventh of the shared budget on the rig's 56 MiB heap,
/// all of it on an 8 MiB one.
pub const OUTPUT_DEFAULT: u64 = 1 << 20;
pub const OUTPUT_MAX: u64 = 1 << 20;
/// Output up to this size is also in the structured result.
pub const INLINE_MAX: usize = 16 * 1024;
/// Least time between two progress notices.
const PROGRESS_EVERY_MS: u64 = 100;
/// Most output bytes in one progress message (one a poll): the call's pending notices stay
/// this small however fast a command prints.
const STREAM_PIECE: usize = 4096;

pub const TOOLS: &[ToolDef<Ctx>] = &[EXEC];

/// `shell.exec` may run as a task (when it does not answer at once).
pub const TASKS: &[TaskTool] = &[TaskTool {
    name: EXEC.name,
    support: TaskSupport::Optional,
}];

const EXEC: ToolDef<Ctx> = ToolDef {
    name: "shell.exec",
    title: Some("Run a shell command"),
    description: "Runs one command of the module's builtin shell: help, echo, uname, uptime, \
                  time, status, net, mem, audit, ps, ls, cat, sleep, reboot, poweroff. Words \
                  split like sh ('…', \"…\", \\); no pipes, redirections or lists. Returns \
                  the output and the exit status (0 ok, 1 failed, 2 usage). `sleep`, `cat`, \
                  `ls` report progress and can be cancelled; with a progress token their \
                  output also streams as it is printed (progress messages). `reboot`/`poweroff` act after \
                  answering.",
    input_schema: r#"{"type":"object","properties":{
  "command":{"type":"string","minLength":1,"maxLength":4096,"description":"The command line, e.g. `ls -l /etc`"},
  "max_output":{"type":"integer","minimum":1,"maximum":1048576,"default":1048576,"description":"Most output bytes returned; the rest is dropped and `truncated` set. All running calls share one output budget (an eighth of the module's heap): a call that would exceed it fails with E_BUSY"}},
  "required":["command"],"additionalProperties":false}"#,
    output_schema: Some(
        r#"{"type":"object","properties":{
  "command":{"type":"string"},
  "exit_status":{"type":"integer"},
  "output":{"type":"string","description":"The output, when at most 16384 bytes (it is always the first content block)"},
  "output_bytes":{"type":"integer"},
  "truncated":{"type":"boolean"}},
  "required":["command","exit_status","output_bytes","truncated"]}"#,
    ),
    annotations: Annotations::DESTRUCTIVE,
    requires: &[],
    errors: &[ErrorCode::NotFound, ErrorCode::Busy],
    start,
};

/// The builtin a call's `command` runs: the door the gates judge (a `poweroff` needs what
/// `system.poweroff` needs, whoever asks through the shell).
pub fn opened_door(args: ValueRef<'_>) -> Option<Door> {
    let command = args.get("command")?.as_str()?;
    shell::builtin_of(&command).map(Door::Builtin)
}

/// Reaches the whole machine ([`ShellHost`]): the builtins read the status, the processes and
/// the filesystem, and `reboot`/`poweroff` schedule the power slot.
fn start<C: ShellHost>(ctx: &mut C, call: &ToolCall<'_>) -> Result<Started<C>, ToolError> {
    let command = args::string(call, "command")?;
    if command.len() > 4 * 4096 {
        return Err(ToolError::new(ErrorCode::Inval, "`command` is too long"));
    }
    let cap = args::opt_u64(call, "max_output")?
        .unwrap_or(OUTPUT_DEFAULT)
        .clamp(1, OUTPUT_MAX) as usize;
    let mut out = Output::with_budget(cap, &ctx.host().shell_output);
    match shell::run(ctx.host(), &command, &mut out, call.now_ms) {
        Err(e) => Err(shell_error(&e)),
        Ok(Exit::Status(status)) => finish(&command, status, out).map(Started::Done),
        Ok(Exit::Job(job)) => Ok(Started::Run(Box::new(ShellRun {
            command: command.into_owned(),
            job,
            out: Some(out),
            last_progress_ms: None,
            streamed: 0,
            exit: None,
        }))),
    }
}

/// The tool result for a finished command, or the refusal of one the budget stopped.
fn finish<C>(command: &str, status: i32, out: Output) -> Result<ToolOutput<C>, ToolError> {
    if out.refused() {
        let pool = out.pool().cloned();
        // Given back first, so the figures are what the other calls hold.
        drop(out);
        let (used, limit) = pool.map_or((0, 0), |p| (p.usage().used, p.limit()));
        return Err(ToolError::new(
            ErrorCode::Busy,
            format!(
                "shell output budget exhausted: running commands hold {used} of {limit} bytes; \
                 retry when they finish or lower max_output"
            ),
        ));
    }
    let bytes = out.bytes();
    let inline = bytes.len() <= INLINE_MAX;
    let mut w = ObjectWriter::new(96 + command.len() + if inline { bytes.len() } else { 0 });
    w.key("command")
        .str(command)
        .key("exit_status")
        .i64(status.into());
    if inline {
        w.key("output").str(&String::from_utf8_lossy(bytes));
    }
    w.key("output_bytes").u64(bytes.len() as u64);
    w.key("truncated").bool(out.truncated());
    let structured = w.finish();
    Ok(ToolOutput {
        content: vec![Content::stream(
            StreamKind::Text,
            Box::new(BytesSource { out, pos: 0 }),
        )],
        structured: Some(structured),
        is_error: false,
    })
}

/// A command running across polls.
struct ShellRun {
    command: String,
    job: Box<dyn Job>,
    out: Option<Output>,
    last_progress_ms: Option<u64>,
    /// Output bytes already sent as progress messages.
    streamed: usize,
    /// The exit status of a command that ended while output was still to be streamed.
    exit: Option<i32>,
}

impl ShellRun {
    /// Sends the next piece of output not yet streamed, as a progress message whose
    /// `progress` is the output bytes sent so far. A piece ends on a character boundary.
    fn stream_output(&mut self, io: &mut StepIo<'_>) {
        let Some(out) = self.out.as_ref() else {
            return;
        };
        let rest = out.bytes().get(self.streamed..).unwrap_or(&[]);
        if rest.is_empty() {
            return;
        }
        let piece = next_piece(rest, self.exit.is_some());
        if piece.is_empty() {
            return;
        }
        self.streamed += piece.len();
        let text = String::from_utf8_lossy(piece);
        io.progress(self.streamed as f64, None, Some(&text));
    }

    /// The result once the command ended and its output went out.
    fn done<C>(&mut self, status: i32) -> Step<C> {
        let out = self.out.take().unwrap_or_else(|| Output::new(0));
        match finish(&self.command, status, out) {
            Ok(done) => Step::Done(done),
            Err(e) => Step::Failed(e),
        }
    }
}

impl<C: ShellHost> ToolRun<C> for ShellRun {
    fn step(&mut self, ctx: &mut C, io: &mut StepIo<'_>) -> Step<C> {
        let now = io.now_ms();
        let heard = io.progress_heard();
        if let Some(status) = self.exit {
            // The command ended: the output it left goes out a piece a poll, then the result.
            self.stream_output(io);
            let left = self.out.as_ref().map_or(0, Output::len);
            if self.streamed < left {
                return Step::Pending;
            }
            return self.done(status);
        }
        let Some(out) = self.out.as_mut() else {
            return Step::Failed(ToolError::new(ErrorCode::Internal, "stepped after the end"));
        };
        let step = self.job.step(ctx.host(), out, now);
        if out.refused() {
            // Stop reading at once: nothing more can be kept.
            let out = self.out.take().unwrap_or_else(|| Output::new(0));
            return match finish(&self.command, 1, out) {
                Ok(done) => Step::Done(done),
                Err(e) => Step::Failed(e),
            };
        }
        // Once there is output for a client that hears progress, progress is the output.
        let streaming = heard && !out.is_empty();
        let unsent = out.len() > self.streamed;
        match step {
            JobStep::Pending if streaming => {
                self.stream_output(io);
                Step::Pending
            }
            JobStep::Pending => {
                let due = self
                    .last_progress_ms
                    .is_none_or(|t| now.saturating_sub(t) >= PROGRESS_EVERY_MS);
                if let (true, Some((done, total))) = (due, self.job.progress()) {
                    io.progress(done, Some(total), None);
                    self.last_progress_ms = Some(now);
                }
                Step::Pending
            }
            JobStep::Done(status) if streaming && unsent => {
                self.exit = Some(status);
                self.stream_output(io);
                Step::Pending
            }
            JobStep::Done(status) => self.done(status),
        }
    }

    fn cancel(&mut self, _ctx: &mut C) {
        // Dropping the output releases its memory now rather than when the call is dropped.
        self.out = None;
    }
}

/// The next piece of output to stream from `rest` (the output not sent yet): at most
/// [`STREAM_PIECE`] bytes, ending on a character boundary. A character cut by the piece, or
/// not yet printed whole, waits for the next piece; once the command has `ended`, the output is
/// what it is and goes out whole.
fn next_piece(rest: &[u8], ended: bool) -> &[u8] {
    let piece = rest.get(..rest.len().min(STREAM_PIECE)).unwrap_or(&[]);
    if ended && piece.len() == rest.len() {
        return piece;
    }
    let cut = irix7_kmem::complete_utf8(piece);
    match (cut, ended) {
        (0, false) => &[],
        (0, true) => piece,
        _ => piece.get(..cut).unwrap_or(piece),
    }
}

/// Streams the output bytes into the response's text block; the output (and its share of the
/// budget) is held until the last byte has gone or the client went away.
struct BytesSource {
    out: Output,
    pos: usize,
}

impl<C> ContentSource<C> for BytesSource {
    fn read(&mut self, _ctx: &mut C, buf: &mut [u8]) -> Result<(usize, SourcePoll), ToolError> {
        let rest = self.out.bytes().get(self.pos..).unwrap_or(&[]);
        let n = rest.len().min(buf.len());
        if let (Some(to), Some(from)) = (buf.get_mut(..n), rest.get(..n)) {
            to.copy_from_slice(from);
        }
        self.pos += n;
        Ok((
            n,
            if self.pos >= self.out.len() {
                self.out.release();
                SourcePoll::End
            } else {
                SourcePoll::Data
            },
        ))
    }

    fn cancel(&mut self, _ctx: &mut C) {
        self.out.release();
    }
}

#[cfg(test)]
mod tests;

/// A line the shell cannot run, as a tool error.
fn shell_error(e: &ShellError) -> ToolError {
    let code = match e {
        ShellError::Words(_) | ShellError::Empty => ErrorCode::Inval,
        ShellError::Unknown(_) => ErrorCode::NotFound,
    };
    ToolError::new(code, format!("{e}"))
}
