//! `proc.list`: the kernel's process list (pid, name, state, CPU time) through the ABI.

use super::Ctx;
use super::reach::MachineFacts;
use crate::hil::platform::c_str;
use crate::services::proc::{processes, state_name};
use rpc::json::ObjectWriter;
use rpc::mcp::{Annotations, Started, ToolCall, ToolDef, ToolError};

pub const TOOLS: &[ToolDef<Ctx>] = &[ToolDef {
    name: "proc.list",
    title: Some("List processes"),
    description: "The kernel's process table: pid, name, state (running, ready, sleeping, \
                  stopped, zombie) and CPU time in milliseconds.",
    input_schema: r#"{"type":"object","properties":{},"additionalProperties":false}"#,
    output_schema: Some(
        r#"{"type":"object","properties":{
  "count":{"type":"integer"},
  "processes":{"type":"array","items":{"type":"object","properties":{
    "pid":{"type":"integer"},"name":{"type":"string"},
    "state":{"type":"string","enum":["running","ready","sleeping","stopped","zombie","unknown"]},
    "cpu_ms":{"type":"integer"}},"required":["pid","name","state","cpu_ms"]}}},
  "required":["count","processes"]}"#,
    ),
    annotations: Annotations::READ_ONLY,
    requires: &[],
    errors: &[],
    start: list,
}];

fn list<C: MachineFacts>(ctx: &mut C, _call: &ToolCall<'_>) -> Result<Started<C>, ToolError> {
    let procs = processes(ctx.machine());
    // About 70 bytes and 9 entries a process.
    let mut w = ObjectWriter::new(32 + procs.len() * 72);
    w.key("count").u64(procs.len() as u64);
    w.key("processes").begin_array();
    for p in procs.iter() {
        w.begin_object().key("cpu_ms").u64(p.cpu_ms.into());
        w.key("name")
            .str(c_str(&p.name))
            .key("pid")
            .u64(p.pid.into());
        w.key("state").str(state_name(p.state)).end_object();
    }
    w.end_array();
    Ok(Started::structured(w.finish()))
}

#[cfg(test)]
mod tests;
