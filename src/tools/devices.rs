//! Device, memory, DMA and interrupt tools: `mem.read`/`mem.write` on physical RAM,
//! `mmio.read`/`mmio.write` on the Indy's device windows (`indy::map`), `dev.list`,
//! `irq.list` (kernel ABI ≥ 11) and `dma.list`. Full-root tools: the writes can hang the machine
//! or corrupt the kernel, and say so.

use super::args::{addr, inval, u32_or};
use super::hex;
use super::reach::{MachineFacts, NetFigures, RawBusGrant};
use super::{Ctx, args};
use crate::hil::platform::c_str;
use crate::hil::raw_bus::MmioError;
use crate::hil::raw_bus::RawBus;
use crate::services::phys::{self, PhysError};
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use indy::abi::{IRQ_ENABLED, IRQ_PENDING, IrqInfo, status};
use indy::map::{self, Window};
use indy::regs::{hpc3, rex3};
use rpc::json::ObjectWriter;
use rpc::mcp::{Annotations, ErrorCode, Started, ToolCall, ToolDef, ToolError};

/// Most bytes one `mem.read` returns or one `mem.write` takes.
pub const MEM_MAX: u32 = 64 * 1024;
/// Most registers one `mmio.read` reads.
pub const MMIO_COUNT_MAX: u32 = 256;
/// Most interrupt sources read from the kernel.
pub const IRQ_MAX: usize = 32;

/// The `addr` property every input schema shares.
macro_rules! addr_schema {
    () => {
        r#""addr":{"type":["integer","string"],"description":"Physical address (integer or \"0x…\")"},"#
    };
}

pub const TOOLS: &[ToolDef<Ctx>] = &[
    ToolDef {
        name: "mem.read",
        title: Some("Read physical memory"),
        description: "Reads `length` bytes (at most 65536) of RAM at physical `addr` (0x08000000 \
                      + installed RAM, or the 512 KiB alias at 0), as hex or base64.",
        input_schema: MEM_READ_INPUT,
        output_schema: Some(
            r#"{"type":"object","properties":{"addr":{"type":"integer"},
"length":{"type":"integer"},"encoding":{"type":"string"},"data":{"type":"string"}},
"required":["addr","length","encoding","data"]}"#,
        ),
        annotations: Annotations::READ_ONLY,
        requires: &[],
        errors: &[ErrorCode::Range, ErrorCode::TooLarge],
        start: mem_read,
    },
    ToolDef {
        name: "mem.write",
        title: Some("Write physical memory"),
        description: "DESTRUCTIVE: writes `data` (hex or base64, at most 65536 bytes) to RAM at \
                      physical `addr`. Can corrupt the kernel or this module and hang the machine.",
        input_schema: MEM_WRITE_INPUT,
        output_schema: Some(
            r#"{"type":"object","properties":{"addr":{"type":"integer"},
"length":{"type":"integer"}},"required":["addr","length"]}"#,
        ),
        annotations: Annotations::DESTRUCTIVE,
        requires: &[],
        errors: &[ErrorCode::Range, ErrorCode::TooLarge],
        start: mem_write,
    },
    ToolDef {
        name: "mmio.read",
        title: Some("Read device registers"),
        description: "Reads `count` registers of `width` bytes from physical `addr` upward, \
                      inside one device window (see dev.list). Reads of some registers have side \
                      effects (FIFOs, interrupt acknowledges).",
        input_schema: MMIO_READ_INPUT,
        output_schema: Some(
            r#"{"type":"object","properties":{"device":{"type":"string"},
"addr":{"type":"integer"},"width":{"type":"integer"},
"values":{"type":"array","items":{"type":"integer"}}},
"required":["device","addr","width","values"]}"#,
        ),
        annotations: Annotations::WRITE,
        requires: &[],
        errors: &[ErrorCode::Align, ErrorCode::NoDev, ErrorCode::TooLarge],
        start: mmio_read,
    },
    ToolDef {
        name: "mmio.write",
        title: Some("Write a device register"),
        description: "DESTRUCTIVE: writes `value` to the `width`-byte register at physical \
                      `addr` in a device window. Can stop the network, hang or reset the machine.",
        input_schema: MMIO_WRITE_INPUT,
        output_schema: Some(
            r#"{"type":"object","properties":{"device":{"type":"string"},
"addr":{"type":"integer"},"width":{"type":"integer"},"value":{"type":"integer"}},
"required":["device","addr","width","value"]}"#,
        ),
        annotations: Annotations::DESTRUCTIVE,
        requires: &[],
        errors: &[ErrorCode::Align, ErrorCode::NoDev],
        start: mmio_write,
    },
    ToolDef {
        name: "dev.list",
        title: Some("List devices"),
        description: "The Indy devices the module knows: name, physical base and size, allowed \
                      access widths, and whether each answers a probe.",
        input_schema: NO_INPUT,
        output_schema: Some(
            r#"{"type":"object","properties":{"devices":{"type":"array","items":{
"type":"object","properties":{"name":{"type":"string"},"base":{"type":"integer"},
"size":{"type":"integer"},"widths":{"type":"array","items":{"type":"integer"}},
"state":{"type":"string","enum":["present","absent","unknown"]},
"description":{"type":"string"},"detail":{"type":"string"}},
"required":["name","base","size","widths","state","description"]}}},"required":["devices"]}"#,
        ),
        annotations: Annotations::READ_ONLY,
        requires: &[],
        errors: &[],
        start: dev_list,
    },
    ToolDef {
        name: "irq.list",
        title: Some("List interrupt sources"),
        description: "The kernel's interrupt sources: status register and bit (or CPU line), \
                      enabled, pending, and the count since boot. Needs kernel ABI 11.",
        input_schema: NO_INPUT,
        output_schema: Some(
            r#"{"type":"object","properties":{"sources":{"type":"array","items":{
"type":"object","properties":{"name":{"type":"string"},"reg":{"type":["integer","null"]},
"bit":{"type":"integer"},"cpu_line":{"type":["integer","null"]},
"enabled":{"type":"boolean"},"pending":{"type":"boolean"},"count":{"type":"integer"}},
"required":["name","enabled","pending","count"]}}},"required":["sources"]}"#,
        ),
        annotations: Annotations::READ_ONLY,
        requires: &[],
        errors: &[ErrorCode::NoSys, ErrorCode::Io],
        start: irq_list,
    },
    ToolDef {
        name: "dma.list",
        title: Some("List DMA channels"),
        description: "HPC3 DMA channel registers (Ethernet RX/TX, SCSI 0-1, PBUS 0-7: current \
                      buffer, next descriptor, byte count, control) and the Seeq driver's ring \
                      positions.",
        input_schema: NO_INPUT,
        output_schema: Some(
            r#"{"type":"object","properties":{"channels":{"type":"array","items":{
"type":"object","properties":{"name":{"type":"string"},"cbp":{"type":"integer"},
"ndbp":{"type":"integer"},"bc":{"type":"integer"},"ctrl":{"type":"integer"}},
"required":["name","ctrl"]}},"enet_rings":{"type":"object"}},
"required":["channels","enet_rings"]}"#,
        ),
        annotations: Annotations::READ_ONLY,
        requires: &[],
        errors: &[ErrorCode::Io],
        start: dma_list,
    },
];

const NO_INPUT: &str = r#"{"type":"object","properties":{},"additionalProperties":false}"#;

const MEM_READ_INPUT: &str = concat!(
    r#"{"type":"object","properties":{"#,
    addr_schema!(),
    r#""length":{"type":"integer","minimum":1},"#,
    r#""encoding":{"enum":["hex","base64"],"default":"hex"}},"#,
    r#""required":["addr","length"],"additionalProperties":false}"#
);

const MEM_WRITE_INPUT: &str = concat!(
    r#"{"type":"object","properties":{"#,
    addr_schema!(),
    r#""data":{"type":"string"},"#,
    r#""encoding":{"enum":["hex","base64"],"default":"hex"}},"#,
    r#""required":["addr","data"],"additionalProperties":false}"#
);

const MMIO_READ_INPUT: &str = concat!(
    r#"{"type":"object","properties":{"#,
    addr_schema!(),
    r#""width":{"enum":[1,2,4],"default":4},"#,
    r#""count":{"type":"integer","minimum":1,"default":1}},"#,
    r#""required":["addr"],"additionalProperties":false}"#
);

const MMIO_WRITE_INPUT: &str = concat!(
    r#"{"type":"object","properties":{"#,
    addr_schema!(),
    r#""width":{"enum":[1,2,4],"default":4},"#,
    r#""value":{"type":"integer","minimum":0,"maximum":4294967295}},"#,
    r#""required":["addr","value"],"additionalProperties":false}"#
);

/// `hex` (default) or `base64`.
fn encoding_arg(call: &ToolCall<'_>) -> Result<bool, ToolError> {
    match args::opt_str(call, "encoding")?.as_deref() {
        None | Some("hex") => Ok(false),
        Some("base64") => Ok(true),
        Some(other) => Err(inval(format!("unknown encoding `{other}` (hex or base64)"))),
    }
}

fn raw(ctx: &impl RawBusGrant) -> Result<&dyn RawBus, ToolError> {
    ctx.raw()
        .0
        .as_deref()
        .ok_or_else(|| ToolError::new(ErrorCode::NoSys, "this machine gives no raw bus access"))
}

/// A refusal of the physical-memory policy, as a tool error.
fn phys_error(e: PhysError) -> ToolError {
    match e {
        PhysError::HighRam { phys } => ToolError::new(
            ErrorCode::Range,
            format!("{phys:#x} is high RAM (at 0x20000000), which KSEG0/KSEG1 cannot reach"),
        ),
        PhysError::NotRam { phys, len, ram } => ToolError::new(
            ErrorCode::Range,
            format!(
                "{len} bytes at {phys:#x} are not all RAM: RAM is 0x08000000+{:#x} and the \
                 alias 0+0x80000",
                ram.min(map::LOW_RAM_MAX)
            ),
        ),
        PhysError::RamNoAnswer { at } => ToolError::new(
            ErrorCode::Range,
            format!("RAM at {at:#x} does not answer (bus error)"),
        ),
        PhysError::Access { phys, width, error } => mmio_error(error, phys, width),
        PhysError::NoWindow {
            phys,
            span,
            nearest: n,
        } => ToolError::new(
            ErrorCode::NoDev,
            format!(
                "no known device holds {span} bytes at {phys:#x}; nearest is {} at {:#x}+{:#x}",
                n.name, n.base, n.size
            ),
        ),
        PhysError::WidthNotAllowed { window, width } => inval(format!(
            "{} does not take {width}-byte accesses (see dev.list)",
            window.name
        )),
        PhysError::Absent { window, phys } => ToolError::new(
            ErrorCode::NoDev,
            format!("{} at {phys:#x} does not answer (bus error)", window.name),
        ),
    }
}

/// Checks `len` bytes of RAM at `phys` against the installed size and the kernel's probe.
fn check_ram<C: MachineFacts + RawBusGrant>(ctx: &C, phys: u32, len: u32) -> Result<(), ToolError> {
    let ram = ctx.machine().machine_status().ram_bytes;
    phys::check_ram(raw(ctx)?, phys, len, ram).map_err(phys_error)
}

fn mmio_error(e: MmioError, phys: u32, width: u32) -> ToolError {
    match e {
        MmioError::Width => inval(format!("width {width} is not 1, 2 or 4")),
        MmioError::Align => ToolError::new(
            ErrorCode::Align,
            format!("{phys:#x} is not aligned to {width} bytes"),
        ),
        MmioError::Range => ToolError::new(ErrorCode::Range, format!("{phys:#x} is above 512 MiB")),
    }
}

fn mem_read<C: MachineFacts + RawBusGrant>(
    ctx: &mut C,
    call: &ToolCall<'_>,
) -> Result<Started<C>, ToolError> {
    let phys = addr(call)?;
    let len = u32_or(call, "length", 0)?;
    let b64 = encoding_arg(call)?;
    if len == 0 {
        return Err(inval(String::from("`length` must be at least 1")));
    }
    if len > MEM_MAX {
        return Err(ToolError::new(
            ErrorCode::TooLarge,
            format!("length {len} is over the {MEM_MAX}-byte limit; read in pieces"),
        ));
    }
    check_ram(ctx, phys, len)?;
    let mut buf = vec![0u8; len as usize];
    raw(ctx)?
        .mem_read(phys, &mut buf)
        .map_err(|e| mmio_error(e, phys, 1))?;
    let data = if b64 {
        rpc::mcp::base64(&buf)
    } else {
        hex::encode(&buf)
    };
    let mut w = ObjectWriter::new(64 + data.len());
    w.key("addr").u64(phys.into()).key("data").str(&data);
    w.key("encoding").str(if b64 { "base64" } else { "hex" });
    w.key("length").u64(len.into());
    Ok(Started::structured(w.finish()))
}

fn mem_write<C: MachineFacts + RawBusGrant>(
    ctx: &mut C,
    call: &ToolCall<'_>,
) -> Result<Started<C>, ToolError> {
    let phys = addr(call)?;
    let text = args::string(call, "data")?;
    let b64 = encoding_arg(call)?;
    let encoded_max = if b64 {
        MEM_MAX.div_ceil(3) * 4
    } else {
        MEM_MAX * 2
    };
    if text.len() > encoded_max as usize {
        return Err(ToolError::new(
            ErrorCode::TooLarge,
            format!("more than {MEM_MAX} bytes of data; write in pieces"),
        ));
    }
    let data = if b64 {
        STANDARD.decode(text.as_bytes()).ok()
    } else {
        hex::decode(&text)
    }
    .ok_or_else(|| inval(String::from("`data` is not valid for its encoding")))?;
    if data.is_empty() {
        return Err(inval(String::from("`data` is empty")));
    }
    check_ram(ctx, phys, data.len() as u32)?;
    raw(ctx)?
        .mem_write(phys, &data)
        .map_err(|e| mmio_error(e, phys, 1))?;
    let mut w = ObjectWriter::new(40);
    w.key("addr")
        .u64(phys.into())
        .key("length")
        .u64(data.len() as u64);
    Ok(Started::structured(w.finish()))
}

fn window_for(
    ctx: &impl RawBusGrant,
    phys: u32,
    width: u32,
    count: u32,
) -> Result<&'static Window, ToolError> {
    phys::window_for(raw(ctx)?, phys, width, count).map_err(phys_error)
}

/// The widths a window allows, as the JSON list `dev.list` shows.
fn widths(w: &Window) -> impl Iterator<Item = u32> + '_ {
    [1, 2, 4].into_iter().filter(|&n| w.allows(n))
}

fn mmio_read<C: RawBusGrant>(ctx: &mut C, call: &ToolCall<'_>) -> Result<Started<C>, ToolError> {
    let phys = addr(call)?;
    let width = u32_or(call, "width", 4)?;
    let count = u32_or(call, "count", 1)?;
    if count == 0 {
        return Err(inval(String::from("`count` must be at least 1")));
    }
    if count > MMIO_COUNT_MAX {
        return Err(ToolError::new(
            ErrorCode::TooLarge,
            format!("count {count} is over the limit of {MMIO_COUNT_MAX}"),
        ));
    }
    let w = window_for(ctx, phys, width, count)?;
    let mut values = Vec::with_capacity(count as usize);
    for i in 0..count {
        let a = phys + i * width;
        let v = raw(ctx)?
            .mmio_read(a, width)
            .map_err(|e| mmio_error(e, a, width))?;
        values.push(v);
    }
    let mut json = ObjectWriter::new(64 + values.len() * 11);
    json.key("addr").u64(phys.into()).key("device").str(w.name);
    json.key("values").begin_array();
    for v in values {
        json.u64(v.into());
    }
    json.end_array().key("width").u64(width.into());
    Ok(Started::structured(json.finish()))
}

fn mmio_write<C: RawBusGrant>(ctx: &mut C, call: &ToolCall<'_>) -> Result<Started<C>, ToolError> {
    let phys = addr(call)?;
    let width = u32_or(call, "width", 4)?;
    let value = u32_or(call, "value", 0)?;
    if width < 4 && value >> (width * 8) != 0 {
        return Err(inval(format!(
            "value {value:#x} does not fit {width} byte(s)"
        )));
    }
    let w = window_for(ctx, phys, width, 1)?;
    raw(ctx)?
        .mmio_write(phys, width, value)
        .map_err(|e| mmio_error(e, phys, width))?;
    let mut json = ObjectWriter::new(72);
    json.key("addr").u64(phys.into()).key("device").str(w.name);
    json.key("value")
        .u64(value.into())
        .key("width")
        .u64(width.into());
    Ok(Started::structured(json.finish()))
}

fn dev_list<C: RawBusGrant>(ctx: &mut C, _call: &ToolCall<'_>) -> Result<Started<C>, ToolError> {
    let bus = raw(ctx)?;
    let n = map::WINDOWS.len();
    let mut json = ObjectWriter::new(n * 200);
    json.key("devices").begin_array();
    for w in map::WINDOWS {
        let state = match bus.bus_probe(w.base, 4) {
            Ok(()) => "present",
            Err(status::E_NOSYS) => "unknown",
            Err(_) => "absent",
        };
        let detail = if *w == map::SEEQ {
            Some(String::from("driven by irix7-mcp"))
        } else if *w == map::REX3 && state == "present" {
            bus.mmio_read(rex3::phys(rex3::STATUS), 4)
                .ok()
                .and_then(rex3::version)
                .map(|v| format!("REX3 version {v}"))
        } else {
            None
        };
        json.begin_object().key("base").u64(w.base.into());
        json.key("description").str(w.description);
        if let Some(text) = detail {
            json.key("detail").str(&text);
        }
        json.key("name").str(w.name).key("size").u64(w.size.into());
        json.key("state").str(state).key("widths").begin_array();
        for n in widths(w) {
            json.u64(n.into());
        }
        json.end_array().end_object();
    }
    json.end_array();
    Ok(Started::structured(json.finish()))
}

fn irq_json(w: &mut ObjectWriter, i: &IrqInfo) {
    let cpu = i.reg == 0;
    w.begin_object().key("bit").u64(i.bit.into());
    w.key("count").u64(i.count.into()).key("cpu_line");
    match cpu {
        true => w.u64(i.bit.into()),
        false => w.null(),
    };
    w.key("enabled").bool(i.flags & IRQ_ENABLED != 0);
    w.key("name").str(c_str(&i.name));
    w.key("pending").bool(i.flags & IRQ_PENDING != 0).key("reg");
    match cpu {
        true => w.null(),
        false => w.u64(i.reg.into()),
    };
    w.end_object();
}

fn irq_list<C: MachineFacts>(ctx: &mut C, _call: &ToolCall<'_>) -> Result<Started<C>, ToolError> {
    let list = ctx.machine().irqs(IRQ_MAX).map_err(|code| match code {
        status::E_NOSYS => ToolError::new(
            ErrorCode::NoSys,
            format!(
                "the kernel offers ABI {}; irq_list needs ABI 11",
                ctx.abi_version()
            ),
        ),
        other => ToolError::new(
            ErrorCode::Io,
            format!("the kernel's irq_list failed ({other})"),
        ),
    })?;
    let mut w = ObjectWriter::new(16 + list.len() * 120);
    w.key("sources").begin_array();
    for i in list.iter() {
        irq_json(&mut w, i);
    }
    w.end_array();
    Ok(Started::structured(w.finish()))
}

fn dma_list<C: RawBusGrant + NetFigures>(
    ctx: &mut C,
    _call: &ToolCall<'_>,
) -> Result<Started<C>, ToolError> {
    let n = hpc3::CHANNELS.len();
    let mut w = ObjectWriter::new(300 + n * 100);
    w.key("channels").begin_array();
    for c in hpc3::CHANNELS {
        // Read in the order the registers are, written in key order.
        let mut regs = [None; 4];
        for (slot, a) in regs
            .iter_mut()
            .zip([Some(c.cbp), Some(c.ndbp), c.bc, Some(c.ctrl)])
        {
            let Some(a) = a else { continue };
            let v = raw(ctx)?
                .mmio_read(a, 4)
                .map_err(|_| ToolError::new(ErrorCode::Io, format!("reading {a:#x} failed")))?;
            *slot = Some(v);
        }
        let [cbp, ndbp, bc, ctrl] = regs;
        w.begin_object();
        for (key, v) in [("bc", bc), ("cbp", cbp), ("ctrl", ctrl)] {
            if let Some(v) = v {
                w.key(key).u64(v.into());
            }
        }
        w.key("name").str(c.name);
        if let Some(v) = ndbp {
            w.key("ndbp").u64(v.into());
        }
        w.end_object();
    }
    w.end_array();
    let r = ctx.net().rings;
    w.key("enet_rings").begin_object();
    for (key, v) in [
        ("rx_next", r.rx_next),
        ("rx_ring_phys", r.rx_ring_phys),
        ("rx_size", r.rx_size),
        ("tx_in_flight", r.tx_in_flight),
        ("tx_next", r.tx_next),
        ("tx_oldest", r.tx_oldest),
        ("tx_ring_phys", r.tx_ring_phys),
        ("tx_size", r.tx_size),
    ] {
        w.key(key).u64(v.into());
    }
    w.end_object();
    Ok(Started::structured(w.finish()))
}

pub mod raw_access;
#[cfg(test)]
mod tests;
