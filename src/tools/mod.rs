//! The MCP surface: one file per tool family, each a table of `ToolDef`s with schemas and
//! handlers generic over what their family may reach ([`reach`]), instantiated with the
//! [`Ctx`]. Arguments, JSON and error codes live here; what the tools do lives in `services`.

pub mod args;
pub mod block;
pub mod capabilities;
#[cfg(test)]
pub mod catalogue;
pub mod console;
pub mod context;
pub mod debug;
pub mod devices;
pub mod events;
pub mod fs;
pub mod hex;
pub mod proc;
pub mod reach;
pub mod screen;
pub mod serial;
pub mod shell;
pub mod system;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod tool_resources;

pub use context::Ctx;

use alloc::string::String;
use alloc::vec::Vec;
use rpc::mcp::{McpServer, RegistryError, TaskTool, ToolDef};

/// A tool family: its table, which of its tools may run as tasks, and what it is for, in the
/// words the instructions use.
struct Family {
    tools: &'static [ToolDef<Ctx>],
    /// The calls that may run long enough to be worth a task (the tasks extension): each
    /// becomes one only when it does not answer at once (a small `fs.read`, a `serial.read`
    /// without a wait stay plain results).
    tasks: &'static [TaskTool],
    about: &'static str,
}

/// Every family, in the order `tools/list` shows them.
const FAMILIES: &[Family] = &[
    Family {
        tools: system::TOOLS,
        tasks: &[],
        about: "start here (uptime, address, memory), reset, power-off",
    },
    Family {
        tools: serial::TOOLS,
        tasks: serial::TASKS,
        about: "the serial console",
    },
    Family {
        tools: console::TOOLS,
        tasks: &[],
        about: "the screen's console and keyboard",
    },
    Family {
        tools: shell::TOOLS,
        tasks: shell::TASKS,
        about: "a small shell (`help`)",
    },
    Family {
        tools: proc::TOOLS,
        tasks: &[],
        about: "processes",
    },
    Family {
        tools: fs::TOOLS,
        tasks: fs::TASKS,
        about: "the root filesystem, EROFS + RAM overlay (writes do not survive a reset)",
    },
    Family {
        tools: block::TOOLS,
        tasks: block::TASKS,
        about: "raw disk sectors",
    },
    Family {
        tools: screen::TOOLS,
        tasks: screen::TASKS,
        about: "the screen as PNG",
    },
    Family {
        tools: devices::TOOLS,
        tasks: &[],
        about: "physical memory and registers, as root (writes can hang the machine)",
    },
    Family {
        tools: debug::TOOLS,
        tasks: &[],
        about: "the debugger of the kernel's cells (breakpoints, steps, registers)",
    },
];

// Every tool of every family has its `Tool` door in the capability table, and the table no
// other: a tool renamed in its `ToolDef` alone (or in the table alone) fails to compile here.
const _: () = {
    let (mut f, mut tools) = (0, 0);
    while f < FAMILIES.len() {
        let defs = FAMILIES[f].tools;
        let mut t = 0;
        while t < defs.len() {
            assert!(
                capabilities::has_tool_door(defs[t].name),
                "a tool has no Tool door in the capability table (tools/capabilities.rs)"
            );
            t += 1;
        }
        tools += defs.len();
        f += 1;
    }
    assert!(
        tools == capabilities::tool_doors(),
        "a Tool door of the capability table names no tool (tools/capabilities.rs)"
    );
};

/// Registers every tool family and resource in a stable order.
pub fn register(server: &mut McpServer<Ctx>) -> Result<(), RegistryError> {
    for f in FAMILIES {
        server.register_tools(f.tools)?;
        server.add_task_tools(f.tasks);
    }
    server.register_resources(system::RESOURCES);
    server.register_resources(events::RESOURCES);
    server.register_resources(serial::RESOURCES);
    server.register_watches(serial::WATCHES);
    server.register_watches(system::WATCHES);
    server.register_watches(events::WATCHES);
    server.register_resources(screen::RESOURCES);
    server.register_resource_streams(&[rpc::mcp::StreamDef {
        uri: "irix7://screen",
        open: screen::open_resource,
    }]);
    // Each request sees only what its authority allows (see `capabilities`).
    server.register_templates(fs::resource::TEMPLATES);
    server.register_template_streams(fs::resource::STREAMS);
    server.register_resources(tool_resources::RESOURCES);
    Ok(())
}

/// The `instructions` every client gets: what the machine is, then each family's tools and
/// purpose, from the same table [`register`] uses, so no family is ever left out.
pub fn instructions() -> String {
    let mut text = String::from(
        "This server is the control plane of an SGI Indy (MIPS R4400, big-endian) running \
         IRIX 7; it runs inside the kernel. Tools:",
    );
    for (i, f) in FAMILIES.iter().enumerate() {
        text.push_str(if i == 0 { " " } else { "; " });
        text.push_str(&names(f.tools).join(", "));
        text.push_str(": ");
        text.push_str(f.about);
    }
    text.push_str(". Destructive tools are annotated; prefer read-only ones while exploring.");
    text
}

/// A family's tool names, `prefix.*` where a prefix has several.
fn names(tools: &[ToolDef<Ctx>]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for t in tools {
        let name = match t.name.split_once('.') {
            Some((prefix, _))
                if tools.iter().filter(|o| o.name.starts_with(prefix)).count() > 1 =>
            {
                alloc::format!("{prefix}.*")
            }
            _ => String::from(t.name),
        };
        if !out.contains(&name) {
            out.push(name);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_instructions_name_every_registered_tool() {
        let text = instructions();
        let server = testing::harness::server();
        for tool in server.tools().defs() {
            let name = tool.name;
            let family = name.split_once('.').map(|(p, _)| alloc::format!("{p}.*"));
            assert!(
                text.contains(name) || family.is_some_and(|f| text.contains(&f)),
                "{name} is not in the instructions: {text}"
            );
        }
        assert!(text.contains("fs.*: the root filesystem"), "{text}");
        assert!(
            text.contains("mem.*, mmio.*, dev.list, irq.list, dma.list"),
            "{text}"
        );
    }
}
