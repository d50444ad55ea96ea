//! Mapping a file offset to where its bytes are: flat (plain and tail-inline) and chunk-based
//! layouts, holes included, and reading a byte range through that mapping.

use alloc::format;

use super::inode::{Inode, Layout, NULL_ADDR};
use super::le::Fields;
use super::superblock::Superblock;
use crate::hil::block::BlockDevice;
use crate::services::fs::cache::BlockCache;
use crate::services::fs::error::{FsError, FsResult};

/// Chunk format: low bits are log2(chunk size / block size).
const CHUNK_BLKBITS_MASK: u16 = 0x1F;
/// Chunk format: the table holds 8-byte indexes instead of 4-byte block addresses.
const CHUNK_INDEXES: u16 = 0x20;

/// Largest single device read for bulk data, bounding one SCSI transfer.
const MAX_DIRECT_READ: usize = 64 * 1024;

/// Where a run of file bytes starting at some offset lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Extent {
    /// `len` bytes at device byte address `pos`.
    Mapped { pos: u64, len: u64 },
    /// `len` bytes of zeros.
    Hole { len: u64 },
}

/// Maps `offset` (which must be below `inode.size`) to an extent of at least one byte.
pub(crate) fn map<D: BlockDevice>(
    cache: &mut BlockCache<D>,
    sb: &Superblock,
    inode: &Inode,
    offset: u64,
) -> FsResult<Extent> {
    let nid = inode.nid;
    let bad = |what: &str| FsError::corrupt(format!("inode {nid}: {what}"));
    if offset >= inode.size {
        return Err(bad("read past end of file"));
    }
    let bits = u32::from(sb.blkszbits);
    let bs = 1u64 << bits;
    let remaining = inode.size - offset;
    let block_addr = |blk: u32, within: u64| -> FsResult<u64> {
        (u64::from(blk) << bits)
            .checked_add(within)
            .ok_or_else(|| bad("data address overflows"))
    };
    match inode.layout {
        Layout::FlatPlain | Layout::FlatInline => {
            // Bytes stored in whole blocks at startblk: all of a plain file; all blocks but the
            // last (partial or full) one of a tail-packed file. Never overflows: below size.
            let flat_end = match inode.layout {
                Layout::FlatInline => ((inode.size - 1) >> bits) << bits,
                _ => inode.size,
            };
            if offset < flat_end {
                let len = (flat_end - offset).min(remaining);
                if inode.raw_u == NULL_ADDR {
                    return Ok(Extent::Hole { len });
                }
                return Ok(Extent::Mapped {
                    pos: block_addr(inode.raw_u, offset)?,
                    len,
                });
            }
            // The tail: it follows the inode and its xattrs, within the same block.
            let tail_start = inode.inline_pos()?;
            let tail_len = inode.size - flat_end;
            if (tail_start % bs) + tail_len > bs {
                return Err(bad("inline tail crosses a block boundary"));
            }
            let pos = tail_start
                .checked_add(offset - flat_end)
                .ok_or_else(|| bad("inline tail address overflows"))?;
            Ok(Extent::Mapped {
                pos,
                len: remaining,
            })
        }
        Layout::ChunkBased => {
            let format = inode.raw_u as u16;
            if format & !(CHUNK_BLKBITS_MASK | CHUNK_INDEXES) != 0 {
                return Err(bad(&format!("unknown chunk format bits {format:#06x}")));
            }
            let chunk_bits = bits + u32::from(format & CHUNK_BLKBITS_MASK);
            let chunk_size = 1u64 << chunk_bits;
            let index = offset >> chunk_bits;
            let chunk_start = index << chunk_bits;
            let len = chunk_start
                .saturating_add(chunk_size)
                .saturating_sub(offset)
                .min(remaining);
            let entry_size = if format & CHUNK_INDEXES != 0 { 8u64 } else { 4 };
            let table = inode.inline_pos()?.next_multiple_of(entry_size);
            let entry_pos = index
                .checked_mul(entry_size)
                .and_then(|o| table.checked_add(o))
                .ok_or_else(|| bad("chunk table address overflows"))?;
            let mut raw = [0u8; 8];
            let entry = raw.get_mut(..entry_size as usize).unwrap_or(&mut []);
            cache.read_bytes(entry_pos, entry)?;
            let f = Fields(&raw);
            let blk = if entry_size == 8 {
                let device = f.u16(2)?;
                let blk = f.u32(4)?;
                if blk != NULL_ADDR && device != 0 {
                    return Err(bad(&format!(
                        "chunk {index} is on extra device {device}, but the image has no device table"
                    )));
                }
                blk
            } else {
                f.u32(0)?
            };
            if blk == NULL_ADDR {
                return Ok(Extent::Hole { len });
            }
            Ok(Extent::Mapped {
                pos: block_addr(blk, offset - chunk_start)?,
                len,
            })
        }
    }
}

/// Reads up to `buf.len()` bytes of the file at `offset`; returns how many (0 at or past EOF).
pub(crate) fn read_at<D: BlockDevice>(
    cache: &mut BlockCache<D>,
    sb: &Superblock,
    inode: &Inode,
    offset: u64,
    buf: &mut [u8],
) -> FsResult<usize> {
    if offset >= inode.size {
        return Ok(0);
    }
    let bs = 1u64 << sb.blkszbits;
    let want = (inode.size - offset).min(buf.len() as u64) as usize;
    let mut done = 0usize;
    while done < want {
        let extent = map(cache, sb, inode, offset + done as u64)?;
        let (len, pos) = match extent {
            Extent::Mapped { pos, len } => (len, Some(pos)),
            Extent::Hole { len } => (len, None),
        };
        if len == 0 {
            return Err(FsError::corrupt(format!(
                "inode {}: empty extent",
                inode.nid
            )));
        }
        let mut take = len.min((want - done) as u64) as usize;
        let dst = buf
            .get_mut(done..done + take)
            .ok_or_else(|| FsError::corrupt("extent outside the read buffer"))?;
        match pos {
            // Whole aligned blocks of file data go around the cache, in bounded device reads.
            Some(pos) if pos.is_multiple_of(bs) && take >= bs as usize => {
                take = (take - take % bs as usize).min(MAX_DIRECT_READ);
                let whole = dst.get_mut(..take).unwrap_or(&mut []);
                cache.read_direct(pos, whole)?;
            }
            Some(pos) => cache.read_bytes(pos, dst)?,
            None => dst.fill(0),
        }
        done += take;
    }
    Ok(done)
}
