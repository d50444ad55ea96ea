//! System tools: `status`, `echo`, `system.reset`, `system.poweroff`, and the
//! `irix7://status`, `irix7://net`, `irix7://mem`, `irix7://audit` resources.

use super::reach::{AuditTrail, BootRecord, PowerSchedule, StatusFigures};
use super::{Ctx, args};
use crate::services::audit;
use crate::services::power::{self, Action};
use crate::services::status::{mem_text, net_text};
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use rpc::json::{Kind, ObjectWriter};
use rpc::mcp::{
    Annotations, AuditRecord, ErrorCode, Privilege, ResourceContents, ResourceDef, Started,
    ToolCall, ToolDef, ToolError, WatchDef,
};

pub const TOOLS: &[ToolDef<Ctx>] = &[
    ToolDef {
        name: "status",
        title: Some("Machine status"),
        description: "The Indy's status: module and OS version, uptime, date, IP and MAC \
                      address, RAM, module heap, open connections, the tool policy \
                      (mcp.policy). Start here.",
        input_schema: r#"{"type":"object","properties":{},"additionalProperties":false}"#,
        output_schema: Some(STATUS_SCHEMA),
        annotations: Annotations::READ_ONLY,
        requires: &[],
        errors: &[],
        start: status,
    },
    ToolDef {
        name: "echo",
        title: Some("Echo"),
        description: "Returns its `text` argument unchanged: a round-trip check of the whole \
                      path (network, HTTP, MCP) to the machine.",
        input_schema: r#"{"type":"object","properties":{"text":{"type":"string","maxLength":65536,
            "description":"Text to send back"}},"required":["text"],"additionalProperties":false}"#,
        output_schema: Some(
            r#"{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}"#,
        ),
        annotations: Annotations::READ_ONLY,
        requires: &[],
        errors: &[],
        start: echo,
    },
    ToolDef {
        name: "system.reset",
        title: Some("Reset the machine"),
        description: "Resets the Indy: answers first, then resets `delay_ms` later (default \
                      250). The module is reloaded at boot and serves again; clients reconnect. \
                      Overlay files written with fs.write are lost.",
        input_schema: DELAY_INPUT,
        output_schema: Some(ACTION_OUTPUT),
        annotations: Annotations::DESTRUCTIVE,
        requires: &[],
        errors: &[ErrorCode::Busy],
        start: reset,
    },
    ToolDef {
        name: "system.poweroff",
        title: Some("Power off the machine"),
        description: "Powers the Indy off: answers first, then powers off `delay_ms` later \
                      (default 250). Nothing answers afterwards until someone powers it on.",
        input_schema: DELAY_INPUT,
        output_schema: Some(ACTION_OUTPUT),
        annotations: Annotations::DESTRUCTIVE,
        requires: &[],
        errors: &[ErrorCode::Busy],
        start: poweroff,
    },
];

const DELAY_INPUT: &str = r#"{"type":"object","properties":{
  "delay_ms":{"type":"integer","minimum":100,"maximum":60000,"default":250,
    "description":"Milliseconds between the answer and the action"}},
  "additionalProperties":false}"#;

const ACTION_OUTPUT: &str = r#"{"type":"object","properties":{
  "action":{"type":"string","enum":["reset","poweroff"]},
  "in_ms":{"type":"integer","description":"Milliseconds until the action"}},
  "required":["action","in_ms"]}"#;

const STATUS_SCHEMA: &str = r#"{"type":"object","properties":{
  "module":{"type":"string"},"module_version":{"type":"string"},
  "build_id":{"type":"string","description":"Digest of the module's sources (`dev`: not built by cargo xtask image)"},
  "image":{"type":"object","description":"The running image as the kernel verified it (absent before kernel ABI 12)",
    "properties":{"sha256":{"type":"string"},"sha256_short":{"type":"string"},
    "deploy":{"type":"string","enum":["ok","sha256 mismatch","fetch failed","load failed","init failed","unknown"],
      "description":"ok: the configured image runs; otherwise why it was refused and the last good image runs"},
    "refused_sha256":{"type":"string","description":"The digest the boot configuration named for the refused image"}},
    "required":["sha256","sha256_short","deploy"]},
  "abi":{"type":"integer"},
  "boot":{"type":"object","description":"Why this boot happened and what survived of the previous one (docs/abi.md)",
    "properties":{"cause":{"type":"string","enum":["power-on","requested","watchdog","panic","refused","unknown"],
      "description":"unknown: the kernel's ABI is older than 13"},
    "boots":{"type":"integer","description":"Boots since power-on, this one included"},
    "requested_by":{"type":"string","description":"Who asked for the reset (system.reset, reboot), from the previous flight record"},
    "deploy":{"type":"boolean","description":"A requested reset that brought up another image"},
    "message":{"type":"string","description":"The kernel's panic message"},
    "previous_sha256":{"type":"string"},"previous_uptime_ms":{"type":"integer"},
    "console":{"type":"string","enum":["ok","absent","corrupt"],"description":"The previous boot's console (serial.read boot=previous)"},
    "flight":{"type":"object","description":"The previous boot's flight record (irix7://flight/previous)",
      "properties":{"state":{"type":"string","enum":["ok","absent","foreign","corrupt"]},
      "build":{"type":"string"},"uptime_ms":{"type":"integer"},
      "calls":{"type":"array","items":{"type":"string"},"description":"Tool calls in flight when it was last written"},
      "panic":{"type":"string"},
      "torn":{"type":"integer","description":"Call slots that did not hold (a write cut short): not read"}},"required":["state"]}},
    "required":["cause","console","flight"]},
  "os_version":{"type":"string"},"uptime_ms":{"type":"integer"},"date":{"type":"string"},
  "unix_time":{"type":"integer"},"ram_bytes":{"type":"integer"},"ip":{"type":"string"},
  "mac":{"type":"string"},"port":{"type":"integer"},"open_connections":{"type":"integer"},
  "policy":{"type":"string","description":"The tool policy in force (mcp.policy)"},
  "requests":{"type":"integer"},
  "heap":{"type":"object","properties":{"used":{"type":"integer"},"peak":{"type":"integer"},
    "size":{"type":"integer"}},"required":["used","peak","size"]},
  "cache":{"type":"object","description":"The filesystem's 16-block LRU (absent without one)",
    "properties":{"hits":{"type":"integer"},"misses":{"type":"integer"},
    "evictions":{"type":"integer"},"block_size":{"type":"integer"},
    "capacity":{"type":"integer"},"resident":{"type":"integer"},
    "direct_blocks":{"type":"integer"}}}},
  "required":["module","module_version","build_id","abi","os_version","uptime_ms","date","ip","mac",
    "ram_bytes","heap"]}"#;

pub const RESOURCES: &[ResourceDef<Ctx>] = &[
    ResourceDef {
        uri: "irix7://status",
        name: "status",
        title: Some("Machine status"),
        description: "The machine's status as plain text (what the `status` tool reports). \
                      Subscribable: an update at most every 5 s when a line other than the \
                      clocks changes.",
        mime_type: Some("text/plain"),
        read: read_status,
    },
    ResourceDef {
        uri: "irix7://net",
        name: "net",
        title: Some("Network"),
        description: "The module's network figures as plain text: address, MAC, ports, \
                      connections, requests served.",
        mime_type: Some("text/plain"),
        read: read_net,
    },
    ResourceDef {
        uri: "irix7://mem",
        name: "mem",
        title: Some("Memory"),
        description: "RAM and the module heap's figures as plain text.",
        mime_type: Some("text/plain"),
        read: read_mem,
    },
    ResourceDef {
        uri: "irix7://audit",
        name: "audit",
        title: Some("Audit trail"),
        description: "The last lines of the audit trail as plain text, oldest first: one line \
                      per call of a tool that is not read-only (time, client, token, session, \
                      tool, a data-free argument summary, outcome), the administrator's in a \
                      ring no lesser token's calls can flush; then, in rings of their own, one \
                      summary per token per 10 s of refused calls and one per address per 10 s \
                      of failed logins, and the machine's events; each part says how many lines \
                      it dropped.",
        mime_type: Some("text/plain"),
        read: read_audit,
    },
    ResourceDef {
        uri: "irix7://flight/previous",
        name: "flight-previous",
        title: Some("Previous boot's flight record"),
        description: "What the module was doing when the previous boot ended, as plain text: \
                      build, uptime, heap, connections, who asked for the reset, a panic's \
                      message, and the tool calls in flight (name, client, era, start). A \
                      torn or foreign record is reported as such and not read; a torn call \
                      slot is counted, the other calls read.",
        mime_type: Some("text/plain"),
        read: read_flight,
    },
];

fn read_flight<C: BootRecord>(ctx: &mut C, uri: &str) -> Result<Vec<ResourceContents>, ToolError> {
    Ok(text_resource(uri, ctx.boot().flight_text()))
}

fn status<C: StatusFigures>(ctx: &mut C, _call: &ToolCall<'_>) -> Result<Started<C>, ToolError> {
    let st = ctx.status();
    let fixed = ctx.fixed_members().of(&st);
    Ok(Started::structured(status_json(&st, fixed)))
}

/// Reaches nothing: the round trip is the point.
fn echo<C>(_ctx: &mut C, call: &ToolCall<'_>) -> Result<Started<C>, ToolError> {
    // The schema has already required a string of at most 65,536 characters.
    let Some(text) = call.args.get("text").filter(|t| t.kind() == Kind::String) else {
        return Err(ToolError::new(ErrorCode::Inval, "`text` must be a string"));
    };
    // Written as JSON text, the text copied as the client wrote it: one buffer, where a
    // `Value` would take three allocations (map, key, string). The server adds the text block.
    let members = "\"text\":".len() + text.raw().len();
    let mut json = ObjectWriter::new(members);
    json.key("text").value(text);
    Ok(Started::structured(json.finish()))
}

/// Schedules a reset or power-off and answers when it will happen.
fn scheduled<C: PowerSchedule>(
    ctx: &mut C,
    call: &ToolCall<'_>,
    action: Action,
    by: &'static str,
) -> Result<Started<C>, ToolError> {
    let delay = args::opt_u64(call, "delay_ms")?.unwrap_or(power::DEFAULT_DELAY_MS);
    let p = ctx
        .schedule_power(action, call.now_ms, delay, by)
        .map_err(|e| ToolError::new(ErrorCode::Busy, format!("{e}")))?;
    let in_ms = p.at_ms.saturating_sub(call.now_ms);
    let mut json = ObjectWriter::new(40);
    json.key("action").str(action.as_str());
    json.key("in_ms").u64(in_ms);
    Ok(Started::structured(json.finish()))
}

fn reset<C: PowerSchedule>(ctx: &mut C, call: &ToolCall<'_>) -> Result<Started<C>, ToolError> {
    scheduled(ctx, call, Action::Reset, "system.reset")
}

fn poweroff<C: PowerSchedule>(ctx: &mut C, call: &ToolCall<'_>) -> Result<Started<C>, ToolError> {
    scheduled(ctx, call, Action::Poweroff, "system.poweroff")
}

fn text_resource(uri: &str, text: String) -> Vec<ResourceContents> {
    vec![ResourceContents::Text {
        uri: String::from(uri),
        mime_type: Some(String::from("text/plain")),
        text,
    }]
}

/// `irix7://status` can be subscribed: it changes when any line but the clocks (`uptime`,
/// `date`) does — an address, the heap, the connections, a deploy — announced at most once
/// every five seconds.
pub const WATCHES: &[WatchDef<Ctx>] = &[WatchDef {
    uri: "irix7://status",
    interval_ms: 5_000,
    version: status_version,
}];

/// FNV-1a over the status text without its clock lines.
fn status_version<C: StatusFigures>(ctx: &mut C) -> u64 {
    let text = ctx.status().to_text();
    text.lines()
        .filter(|l| !l.starts_with("uptime") && !l.starts_with("date"))
        .flat_map(|l| l.bytes().chain(core::iter::once(b'\n')))
        .fold(0xcbf2_9ce4_8422_2325, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        })
}

fn read_status<C: StatusFigures>(
    ctx: &mut C,
    uri: &str,
) -> Result<Vec<ResourceContents>, ToolError> {
    Ok(text_resource(uri, ctx.status().to_text()))
}

fn read_net<C: StatusFigures>(ctx: &mut C, uri: &str) -> Result<Vec<ResourceContents>, ToolError> {
    Ok(text_resource(uri, net_text(&ctx.status())))
}

fn read_mem<C: StatusFigures>(ctx: &mut C, uri: &str) -> Result<Vec<ResourceContents>, ToolError> {
    Ok(text_resource(uri, mem_text(&ctx.status())))
}

/// The ring of the audit log a record of the MCP server goes to.
pub fn audit_ring(r: &AuditRecord) -> audit::Kind {
    if r.event.is_login_failures() {
        audit::Kind::LoginFailures(r.event.failed_logins())
    } else if r.event.is_refusals() {
        audit::Kind::Refusals
    } else if r.rank == Privilege::Administer {
        audit::Kind::AdministratorCall
    } else {
        audit::Kind::LesserCall
    }
}

fn read_audit<C: AuditTrail>(ctx: &mut C, uri: &str) -> Result<Vec<ResourceContents>, ToolError> {
    let text = ctx
        .audit()
        .try_borrow()
        .map_err(|_| ToolError::new(ErrorCode::Busy, "the audit log is being written"))?
        .text();
    Ok(text_resource(uri, text))
}

#[cfg(test)]
mod tests;

pub mod status_json;
use status_json::status_json;
