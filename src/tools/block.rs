//! `block.read`: raw 512-byte sectors from a SCSI target, base64-encoded, for looking at disks
//! the filesystem does not explain (a corrupt image, a partition table, another target).

use super::reach::Disks;
use super::{Ctx, args};
use crate::hil::block::{BlockDevice, SECTOR_SIZE};
use alloc::format;
use alloc::vec;
use rpc::json::ObjectWriter;
use rpc::mcp::{
    Annotations, Content, ErrorCode, Started, TaskSupport, TaskTool, ToolCall, ToolDef, ToolError,
    ToolOutput,
};

/// Most sectors one call reads (64 KiB).
pub const MAX_SECTORS: u64 = 128;
/// Highest SCSI ID on the Indy's bus.
pub const MAX_TARGET: u64 = 7;

pub const TOOLS: &[ToolDef<Ctx>] = &[READ];

/// `block.read` may run as a task (when it does not answer at once).
pub const TASKS: &[TaskTool] = &[TaskTool {
    name: READ.name,
    support: TaskSupport::Optional,
}];

const READ: ToolDef<Ctx> = ToolDef {
    name: "block.read",
    title: Some("Read raw disk blocks"),
    description: "Reads `count` 512-byte blocks (at most 128) from SCSI `target` (default 2, \
                  the root filesystem) starting at block `lba`. The data is the first content \
                  block, base64; structuredContent holds the metadata and the target's size.",
    input_schema: r#"{"type":"object","properties":{
      "target":{"type":"integer","minimum":0,"maximum":7,"default":2,
        "description":"SCSI ID"},
      "lba":{"type":"integer","minimum":0,"maximum":4294967295,
        "description":"First 512-byte block"},
      "count":{"type":"integer","minimum":1,"maximum":128,"default":1,
        "description":"Blocks to read"}},
      "required":["lba"],"additionalProperties":false}"#,
    output_schema: Some(
        r#"{"type":"object","properties":{"target":{"type":"integer"},
        "lba":{"type":"integer"},"count":{"type":"integer"},"bytes":{"type":"integer"},
        "device_blocks":{"type":"integer"},"encoding":{"type":"string","const":"base64"}},
        "required":["target","lba","count","bytes","device_blocks","encoding"]}"#,
    ),
    annotations: Annotations::READ_ONLY,
    requires: &[],
    errors: &[ErrorCode::NoDev, ErrorCode::Range, ErrorCode::Io],
    start: read,
};

fn read<C: Disks>(ctx: &mut C, call: &ToolCall<'_>) -> Result<Started<C>, ToolError> {
    let target = args::opt_u64(call, "target")?.unwrap_or(2);
    let lba = args::opt_u64(call, "lba")?.unwrap_or(0);
    let count = args::opt_u64(call, "count")?.unwrap_or(1);
    if target > MAX_TARGET {
        return Err(ToolError::new(
            ErrorCode::Inval,
            format!("target {target} is not a SCSI ID 0..7"),
        ));
    }
    if !(1..=MAX_SECTORS).contains(&count) {
        return Err(ToolError::new(
            ErrorCode::Inval,
            format!("count must be 1..={MAX_SECTORS}"),
        ));
    }
    let (Ok(lba32), Ok(count32), Ok(target32)) = (
        u32::try_from(lba),
        u32::try_from(count),
        u32::try_from(target),
    ) else {
        return Err(ToolError::new(ErrorCode::Inval, "lba must fit in 32 bits"));
    };
    let mut disk = ctx.open_disk(target32).map_err(|e| {
        ToolError::new(
            ErrorCode::NoDev,
            format!("SCSI target {target} cannot be read (status {})", e.status),
        )
    })?;
    let blocks = disk.block_count();
    if lba + count > u64::from(blocks) {
        return Err(ToolError::new(
            ErrorCode::Range,
            format!(
                "blocks {lba}..{} are past the end of target {target} ({blocks} blocks)",
                lba + count
            ),
        ));
    }
    let mut buf = vec![0u8; count as usize * SECTOR_SIZE];
    disk.read(lba32, count32, &mut buf).map_err(|e| {
        ToolError::new(
            ErrorCode::Io,
            format!(
                "reading target {target} at block {lba} failed (status {})",
                e.status
            ),
        )
    })?;
    let data = rpc::mcp::base64(&buf);
    drop(buf);
    let mut w = ObjectWriter::new(120);
    w.key("bytes").u64((count as usize * SECTOR_SIZE) as u64);
    w.key("count")
        .u64(count)
        .key("device_blocks")
        .u64(blocks.into());
    w.key("encoding").str("base64").key("lba").u64(lba);
    w.key("target").u64(target);
    Ok(Started::Done(ToolOutput {
        content: vec![Content::text(data)],
        structured: Some(w.finish()),
        is_error: false,
    }))
}
