//! `debug.*`: the cell debugger for agents (docs/debug.md), on the same sessions as GDB's door.
//! Attach stops a context of the kernel; breakpoints, continue (waiting for the stop, up to
//! `wait_ms`, and saying why it stopped or that it still runs), interrupt, step, registers by
//! name with the exception decoded, and memory of the context's window; detach undoes it all.
//! One session at a time: an agent's, or one GDB's (`E_BUSY` for the other). The agent session
//! is the machine's administrators', whichever of their tokens drives it.

use super::reach::Debugging;
use super::{Ctx, args, hex};
use crate::services::debug::debugger::{Kernel, exception_name};
use crate::services::debug::session::{Session, Stop};
use alloc::boxed::Box;
use alloc::format;
use alloc::vec::Vec;
use indy::abi::{CTX_MEM_MAX, CtxStop, frame, status};
use rpc::json::ObjectWriter;
use rpc::mcp::{
    Annotations, ErrorCode, Started, Step, StepIo, ToolCall, ToolDef, ToolError, ToolOutput,
    ToolRun,
};

/// The owner of agents' sessions (GDB's are their token's).
const AGENT: u8 = u8::MAX - 1;
/// Default and longest wait for a stop.
const WAIT_DEFAULT_MS: u64 = 1000;
const WAIT_MAX_MS: u64 = 30_000;

/// GDB's names of the 38 integer registers, in frame order.
const NAMES: [&str; 38] = [
    "zero", "at", "v0", "v1", "a0", "a1", "a2", "a3", "t0", "t1", "t2", "t3", "t4", "t5", "t6",
    "t7", "s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "t8", "t9", "k0", "k1", "gp", "sp", "s8",
    "ra", "sr", "lo", "hi", "bad", "cause", "pc",
];

const STOP_SCHEMA: &str = r#"{"type":"object","properties":{
  "state":{"type":"string","enum":["stopped","running","exited"]},
  "reason":{"type":"string","enum":["breakpoint","step","interrupted","exception","exited"]},
  "pc":{"type":"integer"},
  "exception":{"type":"object","properties":{
    "code":{"type":"integer"},"name":{"type":"string"},"bad_address":{"type":"integer"},
    "cause":{"type":"integer"},"delay_slot":{"type":"boolean"}},
    "required":["code","name","bad_address","cause","delay_slot"]}},
  "required":["state"]}"#;

const ADDR_ONLY: &str = r#"{"type":"object","properties":{
  "addr":{"type":["integer","string"],"description":"Address in the context's window (integer or \"0x…\")"}},
  "required":["addr"],"additionalProperties":false}"#;

const NO_ARGS: &str = r#"{"type":"object","properties":{},"additionalProperties":false}"#;

const BREAKPOINTS_SCHEMA: &str = r#"{"type":"object","properties":{
  "addr":{"type":"integer"},"removed":{"type":"boolean"},
  "breakpoints":{"type":"array","items":{"type":"integer"}}},
  "required":["addr","breakpoints"]}"#;

/// What the tools answer beyond `E_INVAL` (no session, a bad address), which any tool may.
const ERRORS: &[ErrorCode] = &[ErrorCode::NoSys, ErrorCode::Busy, ErrorCode::Range];

pub const TOOLS: &[ToolDef<Ctx>] = &[
    ToolDef {
        name: "debug.attach",
        title: Some("Attach the debugger to a cell"),
        description: "Starts the debugging session of a context the kernel runs beside the \
                      module (a cell; 1 is the first) and stops it. One session at a time: \
                      E_BUSY while another debugger (an agent or GDB) holds one; E_NOSYS on a \
                      kernel without debuggable contexts (before ABI 15).",
        input_schema: r#"{"type":"object","properties":{
  "ctx":{"type":"integer","minimum":1,"default":1,"description":"The context"}},
  "additionalProperties":false}"#,
        output_schema: Some(
            r#"{"type":"object","properties":{
  "ctx":{"type":"integer"},"state":{"type":"string"},"pc":{"type":"integer"}},
  "required":["ctx","state","pc"]}"#,
        ),
        annotations: Annotations::WRITE,
        requires: &[],
        errors: ERRORS,
        start: attach,
    },
    ToolDef {
        name: "debug.detach",
        title: Some("Detach the debugger"),
        description: "Ends the session: every breakpoint's word is put back and the context \
                      runs on.",
        input_schema: NO_ARGS,
        output_schema: Some(
            r#"{"type":"object","properties":{"detached":{"type":"boolean"}},"required":["detached"]}"#,
        ),
        annotations: Annotations::WRITE,
        requires: &[],
        errors: ERRORS,
        start: detach,
    },
    ToolDef {
        name: "debug.break",
        title: Some("Set a breakpoint"),
        description: "Sets a software breakpoint (a `break` word, at most 64) at a \
                      word-aligned address of the stopped context's code.",
        input_schema: ADDR_ONLY,
        output_schema: Some(BREAKPOINTS_SCHEMA),
        annotations: Annotations::WRITE,
        requires: &[],
        errors: ERRORS,
        start: set_break,
    },
    ToolDef {
        name: "debug.clear",
        title: Some("Clear a breakpoint"),
        description: "Removes the breakpoint at an address, putting its word back.",
        input_schema: ADDR_ONLY,
        output_schema: Some(BREAKPOINTS_SCHEMA),
        annotations: Annotations::WRITE,
        requires: &[],
        errors: ERRORS,
        start: clear_break,
    },
    ToolDef {
        name: "debug.continue",
        title: Some("Continue and wait for a stop"),
        description: "Lets the stopped context run (stepping over a breakpoint it stands on) \
                      and waits up to `wait_ms` for it to stop: the answer says why it stopped \
                      (breakpoint, step, interrupted, exception with its cause, exited) and \
                      where, or that it still runs (call again to wait more, or \
                      debug.interrupt).",
        input_schema: r#"{"type":"object","properties":{
  "wait_ms":{"type":"integer","minimum":0,"maximum":30000,"default":1000,"description":"Longest wait for the stop"}},
  "additionalProperties":false}"#,
        output_schema: Some(STOP_SCHEMA),
        annotations: Annotations::WRITE,
        requires: &[],
        errors: ERRORS,
        start: resume,
    },
    ToolDef {
        name: "debug.interrupt",
        title: Some("Stop the running context"),
        description: "Stops the context where it runs and says where.",
        input_schema: NO_ARGS,
        output_schema: Some(STOP_SCHEMA),
        annotations: Annotations::WRITE,
        requires: &[],
        errors: ERRORS,
        start: interrupt,
    },
    ToolDef {
        name: "debug.step",
        title: Some("Step one instruction"),
        description: "Runs one instruction of the stopped context (a branch with its delay \
                      slot) and says where it stopped.",
        input_schema: NO_ARGS,
        output_schema: Some(STOP_SCHEMA),
        annotations: Annotations::WRITE,
        requires: &[],
        errors: ERRORS,
        start: step,
    },
    ToolDef {
        name: "debug.regs",
        title: Some("Read the registers"),
        description: "The stopped context's registers by GDB's MIPS names (zero … ra, sr, lo, \
                      hi, bad, cause, pc), and its last exception decoded from cause.",
        input_schema: NO_ARGS,
        output_schema: Some(
            r#"{"type":"object","properties":{
  "pc":{"type":"integer"},
  "registers":{"type":"object","additionalProperties":{"type":"integer"}},
  "exception":{"type":"object","properties":{
    "code":{"type":"integer"},"name":{"type":"string"},"delay_slot":{"type":"boolean"}},
    "required":["code","name","delay_slot"]}},
  "required":["pc","registers","exception"]}"#,
        ),
        annotations: Annotations::READ_ONLY,
        requires: &[],
        errors: ERRORS,
        start: regs,
    },
    ToolDef {
        name: "debug.read",
        title: Some("Read the context's memory"),
        description: "Reads up to 4096 bytes of the context's window, as hex; breakpoints \
                      show the words they replaced.",
        input_schema: r#"{"type":"object","properties":{
  "addr":{"type":["integer","string"],"description":"Address in the context's window (integer or \"0x…\")"},
  "length":{"type":"integer","minimum":1,"maximum":4096}},
  "required":["addr","length"],"additionalProperties":false}"#,
        output_schema: Some(
            r#"{"type":"object","properties":{
  "addr":{"type":"integer"},"length":{"type":"integer"},"data":{"type":"string"}},
  "required":["addr","length","data"]}"#,
        ),
        annotations: Annotations::READ_ONLY,
        requires: &[],
        errors: ERRORS,
        start: read,
    },
    ToolDef {
        name: "debug.write",
        title: Some("Write the context's memory"),
        description: "DESTRUCTIVE: writes up to 4096 bytes (hex) into the stopped context's \
                      window; code it runs next is what was written.",
        input_schema: r#"{"type":"object","properties":{
  "addr":{"type":["integer","string"],"description":"Address in the context's window (integer or \"0x…\")"},
  "data":{"type":"string","description":"Hex, at most 8192 digits"}},
  "required":["addr","data"],"additionalProperties":false}"#,
        output_schema: Some(
            r#"{"type":"object","properties":{
  "addr":{"type":"integer"},"written":{"type":"integer"}},
  "required":["addr","written"]}"#,
        ),
        annotations: Annotations::DESTRUCTIVE,
        requires: &[],
        errors: ERRORS,
        start: write,
    },
];

/// A kernel status as the tool error agents read.
fn error(e: i32) -> ToolError {
    let (code, text) = match e {
        status::E_NOSYS => (
            ErrorCode::NoSys,
            "this kernel has no debuggable contexts (ABI 15)",
        ),
        status::E_BUSY => (
            ErrorCode::Busy,
            "another debugger holds the session, or the context is not stopped",
        ),
        status::E_RANGE => (
            ErrorCode::Range,
            "outside the context's window, or too many breakpoints",
        ),
        status::E_INVAL => (
            ErrorCode::Inval,
            "no such context, no session (debug.attach first), or a bad address",
        ),
        _ => (ErrorCode::Io, "the kernel refused the request"),
    };
    ToolError::new(code, format!("{text} (status {e})"))
}

fn session<C: Debugging>(ctx: &mut C, now_ms: u64) -> Result<&mut Session<Kernel>, ToolError> {
    ctx.debugger().agent(AGENT, now_ms).map_err(error)
}

fn attach<C: Debugging>(ctx: &mut C, call: &ToolCall<'_>) -> Result<Started<C>, ToolError> {
    let id = args::u32_or(call, "ctx", 1)?;
    let s = ctx
        .debugger()
        .attach(AGENT, id, call.now_ms)
        .map_err(error)?;
    let pc = s.regs().map_err(error)?.w[frame::PC];
    let mut w = ObjectWriter::new(64);
    w.key("ctx").u64(id.into());
    w.key("pc").u64(pc.into());
    w.key("state").str("stopped");
    Ok(Started::structured(w.finish()))
}

fn detach<C: Debugging>(ctx: &mut C, _call: &ToolCall<'_>) -> Result<Started<C>, ToolError> {
    ctx.debugger().detach(AGENT).map_err(error)?;
    let mut w = ObjectWriter::new(32);
    w.key("detached").bool(true);
    Ok(Started::structured(w.finish()))
}

fn breakpoints_answer<C>(s: &Session<Kernel>, addr: u32, removed: Option<bool>) -> Started<C> {
    let mut w = ObjectWriter::new(48 + 12 * 64);
    w.key("addr").u64(addr.into());
    w.key("breakpoints").begin_array();
    for at in s.breakpoints() {
        w.u64(at.into());
    }
    w.end_array();
    if let Some(r) = removed {
        w.key("removed").bool(r);
    }
    Started::structured(w.finish())
}

fn set_break<C: Debugging>(ctx: &mut C, call: &ToolCall<'_>) -> Result<Started<C>, ToolError> {
    let addr = args::addr(call)?;
    let s = session(ctx, call.now_ms)?;
    s.add_breakpoint(addr).map_err(error)?;
    Ok(breakpoints_answer(s, addr, None))
}

fn clear_break<C: Debugging>(ctx: &mut C, call: &ToolCall<'_>) -> Result<Started<C>, ToolError> {
    let addr = args::addr(call)?;
    let s = session(ctx, call.now_ms)?;
    let removed = s.remove_breakpoint(addr).map_err(error)?;
    Ok(breakpoints_answer(s, addr, Some(removed)))
}

fn resume<C: Debugging>(ctx: &mut C, call: &ToolCall<'_>) -> Result<Started<C>, ToolError> {
    let wait = args::opt_u64(call, "wait_ms")?
        .unwrap_or(WAIT_DEFAULT_MS)
        .min(WAIT_MAX_MS);
    let s = session(ctx, call.now_ms)?;
    if !s.running() {
        s.resume().map_err(error)?;
    }
    wait_for_stop(ctx, call.now_ms, wait)
}

fn interrupt<C: Debugging>(ctx: &mut C, call: &ToolCall<'_>) -> Result<Started<C>, ToolError> {
    let s = session(ctx, call.now_ms)?;
    if !s.running() {
        return Err(error(status::E_BUSY));
    }
    s.interrupt().map_err(error)?;
    wait_for_stop(ctx, call.now_ms, WAIT_DEFAULT_MS)
}

fn step<C: Debugging>(ctx: &mut C, call: &ToolCall<'_>) -> Result<Started<C>, ToolError> {
    let s = session(ctx, call.now_ms)?;
    if s.running() {
        return Err(error(status::E_BUSY));
    }
    s.step().map_err(error)?;
    wait_for_stop(ctx, call.now_ms, WAIT_DEFAULT_MS)
}

/// The stop now, or a run that waits for it until `now + wait_ms`.
fn wait_for_stop<C: Debugging>(
    ctx: &mut C,
    now_ms: u64,
    wait_ms: u64,
) -> Result<Started<C>, ToolError> {
    let mut w = Wait {
        deadline_ms: now_ms.saturating_add(wait_ms),
    };
    match w.look(ctx, now_ms)? {
        Some(out) => Ok(Started::Done(out)),
        None => Ok(Started::Run(Box::new(w))),
    }
}

/// A `debug.continue`, `debug.step` or `debug.interrupt` waiting for the context's stop.
struct Wait {
    deadline_ms: u64,
}

impl Wait {
    /// The answer when the context stopped or the wait is over; `None` while it runs.
    fn look<C: Debugging>(
        &mut self,
        ctx: &mut C,
        now_ms: u64,
    ) -> Result<Option<ToolOutput<C>>, ToolError> {
        let s = session(ctx, now_ms)?;
        let stop = s.poll().map_err(error)?;
        let running = s.running();
        let answer = match stop {
            Some(stop) => stop_answer(stop, s),
            None if !running => return Err(error(status::E_BUSY)),
            None if now_ms >= self.deadline_ms => {
                let mut w = ObjectWriter::new(32);
                w.key("state").str("running");
                w.finish()
            }
            None => return Ok(None),
        };
        Ok(Some(ToolOutput::structured(answer)))
    }
}

/// A stop as the tools say it.
fn stop_answer(stop: Stop, s: &Session<Kernel>) -> rpc::json::Written {
    let mut w = ObjectWriter::new(256);
    let (reason, pc, exc): (&str, Option<u32>, Option<CtxStop>) = match stop {
        Stop::Breakpoint(pc) => ("breakpoint", Some(pc), None),
        Stop::Step(pc) => ("step", Some(pc), None),
        Stop::Interrupted(pc) => ("interrupted", Some(pc), None),
        Stop::Exception(c) => ("exception", Some(c.pc), Some(c)),
        Stop::Exited => ("exited", None, None),
    };
    w.key("reason").str(reason);
    w.key("state").str(if stop == Stop::Exited {
        "exited"
    } else {
        "stopped"
    });
    if let Some(pc) = pc.or_else(|| s.regs().ok().map(|f| f.w[frame::PC])) {
        w.key("pc").u64(pc.into());
    }
    if let Some(c) = exc {
        w.key("exception").begin_object();
        w.key("bad_address").u64(c.bad.into());
        w.key("cause").u64(c.cause.into());
        w.key("code").u64(c.exc_code.into());
        w.key("delay_slot").bool(c.cause & (1 << 31) != 0);
        w.key("name").str(exception_name(c.exc_code));
        w.end_object();
    }
    w.finish()
}

impl<C: Debugging> ToolRun<C> for Wait {
    fn step(&mut self, ctx: &mut C, io: &mut StepIo<'_>) -> Step<C> {
        match self.look(ctx, io.now_ms()) {
            Ok(None) => Step::Pending,
            Ok(Some(out)) => Step::Done(out),
            Err(e) => Step::Failed(e),
        }
    }

    fn waits(&self) -> bool {
        true
    }
}

fn regs<C: Debugging>(ctx: &mut C, call: &ToolCall<'_>) -> Result<Started<C>, ToolError> {
    let f = session(ctx, call.now_ms)?.regs().map_err(error)?;
    let mut w = ObjectWriter::new(64 + 38 * 24 + 96);
    let cause = f.w[frame::CAUSE];
    let code = (cause >> 2) & 31;
    w.key("exception").begin_object();
    w.key("code").u64(code.into());
    w.key("delay_slot").bool(cause & (1 << 31) != 0);
    w.key("name").str(exception_name(code));
    w.end_object();
    w.key("pc").u64(f.w[frame::PC].into());
    w.key("registers").begin_object();
    for (name, v) in NAMES.iter().zip(f.w.iter()) {
        w.key(name).u64((*v).into());
    }
    w.end_object();
    Ok(Started::structured(w.finish()))
}

fn read<C: Debugging>(ctx: &mut C, call: &ToolCall<'_>) -> Result<Started<C>, ToolError> {
    let addr = args::addr(call)?;
    let len = args::u32_or(call, "length", 0)? as usize;
    if len == 0 || len > CTX_MEM_MAX {
        return Err(ToolError::new(
            ErrorCode::Range,
            format!("`length` must be 1 to {CTX_MEM_MAX}"),
        ));
    }
    let mut buf = Vec::new();
    buf.try_reserve_exact(len)
        .map_err(|_| ToolError::new(ErrorCode::Busy, "no heap for the read; retry later"))?;
    buf.resize(len, 0);
    session(ctx, call.now_ms)?
        .read(addr, &mut buf)
        .map_err(error)?;
    let mut w = ObjectWriter::new(64 + 2 * len);
    w.key("addr").u64(addr.into());
    w.key("data").str(&hex::encode(&buf));
    w.key("length").u64(len as u64);
    Ok(Started::structured(w.finish()))
}

fn write<C: Debugging>(ctx: &mut C, call: &ToolCall<'_>) -> Result<Started<C>, ToolError> {
    let addr = args::addr(call)?;
    let text = args::string(call, "data")?;
    if text.len() > 2 * CTX_MEM_MAX {
        return Err(ToolError::new(
            ErrorCode::Range,
            format!("`data` holds at most {CTX_MEM_MAX} bytes"),
        ));
    }
    let data = hex::decode(&text)
        .ok_or_else(|| args::inval("`data` must be an even number of hex digits".into()))?;
    session(ctx, call.now_ms)?
        .write(addr, &data)
        .map_err(error)?;
    let mut w = ObjectWriter::new(48);
    w.key("addr").u64(addr.into());
    w.key("written").u64(data.len() as u64);
    Ok(Started::structured(w.finish()))
}

#[cfg(test)]
mod tests;
