//! `irix7://events`: the machine's events since boot (`services::events`) as JSON, oldest
//! first, and subscribable, so an agent hears of a boot, a requested reset or a near miss of
//! the watchdog without polling.

use super::Ctx;
use super::reach::{BootRecord, MachineEvents, MachineFacts};
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use rpc::json::ObjectWriter;
use rpc::mcp::{ResourceContents, ResourceDef, ToolError, WatchDef};

pub const URI: &str = "irix7://events";

pub const RESOURCES: &[ResourceDef<Ctx>] = &[ResourceDef {
    uri: URI,
    name: "events",
    title: Some("Machine events"),
    description: "The machine's events since boot as JSON, oldest first (newest last): \
                  `events` ({seq, at_ms, kind, detail}; kinds boot, reset-requested, \
                  shutdown-requested, deploy-refused, watchdog-near-miss, address, context), the boot's \
                  `boot_cause`, `total` recorded, `dropped` from the ring of 64, and \
                  `uptime_ms` now. Subscribable: an update at most every 250 ms when an event \
                  is added. Events do not survive a reset: after one, `seq` starts at 1 with \
                  the new boot.",
    mime_type: Some("application/json"),
    read: read_events,
}];

/// Changes with every event recorded; looked at most every 250 ms, and only while watched.
pub const WATCHES: &[WatchDef<Ctx>] = &[WatchDef {
    uri: URI,
    interval_ms: 250,
    version: events_version,
}];

fn events_version<C: MachineEvents>(ctx: &mut C) -> u64 {
    ctx.events().total()
}

/// The JSON text, members in key order.
pub fn events_json<C: MachineEvents + MachineFacts + BootRecord>(ctx: &C) -> String {
    let ev = ctx.events();
    let bytes = ev.iter().map(|e| e.detail.len() + 80).sum::<usize>() + 128;
    let mut w = ObjectWriter::new(bytes);
    w.key("boot_cause").str(ctx.boot().cause_name());
    w.key("dropped").u64(ev.dropped());
    w.key("events").begin_array();
    for e in ev.iter() {
        w.begin_object();
        w.key("at_ms").u64(e.at_ms).key("detail").str(&e.detail);
        w.key("kind").str(e.kind.as_str()).key("seq").u64(e.seq);
        w.end_object();
    }
    w.end_array();
    w.key("total").u64(ev.total());
    w.key("uptime_ms").u64(ctx.machine().clock_ms());
    w.finish().into_text()
}

fn read_events<C: MachineEvents + MachineFacts + BootRecord>(
    ctx: &mut C,
    uri: &str,
) -> Result<Vec<ResourceContents>, ToolError> {
    Ok(vec![ResourceContents::Text {
        uri: String::from(uri),
        mime_type: Some(String::from("application/json")),
        text: events_json(ctx),
    }])
}

#[cfg(test)]
mod tests;
