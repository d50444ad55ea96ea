//! The capability table: every door into the machine — each tool, resource, template,
//! subscription, HTTP route and shell builtin — and the one capability (with its privilege)
//! it exercises. `mcp.policy`, the tokens' roles, `mcp.confirm` and a gateway's narrowing all
//! act on this table (see `rpc::mcp::authority`), and `docs/tools.md` shows it. A door
//! missing here is refused to everyone; the tests fail when anything reachable is missing.

use super::shell;
use rpc::mcp::authority::{
    Capability, Door, EVENT_STREAM_ROUTE, Opener, Privilege, SESSION_END_ROUTE, Table,
};

use Door::{Builtin, Resource, Route, Template, Tool, Watch};
use Privilege::{Administer, Observe, Operate};

/// The route of the status page's details (the open page needs nothing).
pub const STATUS_DETAILS: &str = "GET /";
/// The whole screen as a BMP.
pub const SCREEN_BMP: &str = "GET /screen.bmp";
/// GDB's remote protocol to the cell debugger (`net::debug_rsp`; its DELETE too).
pub const DEBUG_RSP: &str = "POST /debug/rsp";

/// The table the module's server judges by.
pub const TABLE: Table = Table {
    rows: ROWS,
    openers: &[Opener {
        tool: "shell.exec",
        door: shell::opened_door,
    }],
};

const fn row(name: &'static str, privilege: Privilege, doors: &'static [Door]) -> Capability {
    Capability {
        name,
        privilege,
        doors,
    }
}

const ROWS: &[Capability] = &[
    // Observe: read state.
    row(
        "status",
        Observe,
        &[
            Tool("status"),
            Resource("irix7://status"),
            Resource("irix7://net"),
            Resource("irix7://mem"),
            Watch("irix7://status"),
            Route(STATUS_DETAILS),
            Builtin("uname"),
            Builtin("uptime"),
            Builtin("time"),
            Builtin("status"),
            Builtin("net"),
            Builtin("mem"),
        ],
    ),
    row(
        "echo",
        Observe,
        &[Tool("echo"), Builtin("echo"), Builtin("help")],
    ),
    row(
        "session",
        Observe,
        &[Route(EVENT_STREAM_ROUTE), Route(SESSION_END_ROUTE)],
    ),
    row(
        "audit.read",
        Observe,
        &[Resource("irix7://audit"), Builtin("audit")],
    ),
    row(
        "events.read",
        Observe,
        &[Resource("irix7://events"), Watch("irix7://events")],
    ),
    row(
        "serial.read",
        Observe,
        &[
            Tool("serial.read"),
            Resource("irix7://serial"),
            Resource("irix7://serial/previous"),
            Watch("irix7://serial"),
        ],
    ),
    row(
        "flight.read",
        Observe,
        &[Resource("irix7://flight/previous")],
    ),
    row(
        "screen.capture",
        Observe,
        &[
            Tool("screen.capture"),
            Resource("irix7://screen"),
            Route(SCREEN_BMP),
        ],
    ),
    row(
        "proc.list",
        Observe,
        &[Tool("proc.list"), Resource("irix7://proc"), Builtin("ps")],
    ),
    row(
        "dev.list",
        Observe,
        &[Tool("dev.list"), Resource("irix7://dev")],
    ),
    row("irq.list", Observe, &[Tool("irq.list")]),
    row("dma.list", Observe, &[Tool("dma.list")]),
    row("fs.stat", Observe, &[Tool("fs.stat")]),
    row("fs.readlink", Observe, &[Tool("fs.readlink")]),
    row("fs.list", Observe, &[Tool("fs.list"), Builtin("ls")]),
    row(
        "fs.read",
        Observe,
        &[
            Tool("fs.read"),
            Template("irix7://fs/{+path}"),
            Builtin("cat"),
        ],
    ),
    // Operate: change what a reset undoes.
    row("console.write", Operate, &[Tool("console.write")]),
    row("serial.write", Operate, &[Tool("serial.write")]),
    row("fs.write", Operate, &[Tool("fs.write")]),
    row("fs.mkdir", Operate, &[Tool("fs.mkdir")]),
    row(
        "shell.exec",
        Operate,
        &[Tool("shell.exec"), Builtin("sleep")],
    ),
    // Administer: the rest.
    row("fs.remove", Administer, &[Tool("fs.remove")]),
    // The cell debugger: each agent's tool, and GDB's door (which can do what they all do).
    row("debug.attach", Administer, &[Tool("debug.attach")]),
    row("debug.detach", Administer, &[Tool("debug.detach")]),
    row("debug.break", Administer, &[Tool("debug.break")]),
    row("debug.clear", Administer, &[Tool("debug.clear")]),
    row("debug.continue", Administer, &[Tool("debug.continue")]),
    row("debug.interrupt", Administer, &[Tool("debug.interrupt")]),
    row("debug.step", Administer, &[Tool("debug.step")]),
    row("debug.regs", Administer, &[Tool("debug.regs")]),
    row("debug.read", Administer, &[Tool("debug.read")]),
    row("debug.write", Administer, &[Tool("debug.write")]),
    row("debug.gdb", Administer, &[Route(DEBUG_RSP)]),
    row("input.keys", Administer, &[Tool("input.keys")]),
    row(
        "system.reset",
        Administer,
        &[Tool("system.reset"), Builtin("reboot")],
    ),
    row(
        "system.poweroff",
        Administer,
        &[Tool("system.poweroff"), Builtin("poweroff")],
    ),
    row("mem.read", Administer, &[Tool("mem.read")]),
    row("mem.write", Administer, &[Tool("mem.write")]),
    row("mmio.read", Administer, &[Tool("mmio.read")]),
    row("mmio.write", Administer, &[Tool("mmio.write")]),
    row("block.read", Administer, &[Tool("block.read")]),
];

/// Whether `name` is the name of a `Tool` door in the table (in a constant: see
/// [`tool_doors`]).
pub const fn has_tool_door(name: &str) -> bool {
    let mut r = 0;
    while r < ROWS.len() {
        let doors = ROWS[r].doors;
        let mut d = 0;
        while d < doors.len() {
            if let Tool(door) = doors[d]
                && same(door, name)
            {
                return true;
            }
            d += 1;
        }
        r += 1;
    }
    false
}

/// How many `Tool` doors the table has: `tools` checks, when the image is built, that each
/// of its tools has one and that there are no others, so a tool renamed in its `ToolDef` and
/// not here (or here and not there) fails to compile.
pub const fn tool_doors() -> usize {
    let (mut r, mut n) = (0, 0);
    while r < ROWS.len() {
        let doors = ROWS[r].doors;
        let mut d = 0;
        while d < doors.len() {
            if let Tool(_) = doors[d] {
                n += 1;
            }
            d += 1;
        }
        r += 1;
    }
    n
}

/// Byte equality, in a constant.
const fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

#[cfg(test)]
mod tests;
