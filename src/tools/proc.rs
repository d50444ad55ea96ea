//! `proc.list`: the kernel's process list (pid, name, state, CPU time) through the ABI.

use super::Ctx;
use super::caps::MachineFacts;
use crate::hil::platform::c_str;
use crate::services::proc::{processes, state_name};
use alloc::vec::Vec;
use rpc::mcp::{Annotations, Started, ToolCall, ToolDef, ToolError, ToolOutput};
use serde_json::{Value, json};

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
    let procs: Vec<Value> = processes(ctx.machine())
        .iter()
        .map(|p| {
            json!({
                "pid": p.pid,
                "name": c_str(&p.name),
                "state": state_name(p.state),
                "cpu_ms": p.cpu_ms,
            })
        })
        .collect();
    Ok(Started::Done(ToolOutput::structured(json!({
        "count": procs.len(),
        "processes": procs,
    }))))
}

#[cfg(test)]
mod tests;
