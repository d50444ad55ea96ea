//! EROFS inodes: compact (32-byte) and extended (64-byte) on-disk inodes, checked and decoded.

use alloc::format;

use super::le::Whole;
use super::superblock::{COMPAT_MTIME, Superblock};
use crate::hil::block::BlockDevice;
use crate::services::fs::cache::BlockCache;
use crate::services::fs::error::{Errno, FsError, FsResult};
use crate::services::fs::stat::{FileType, Origin, Stat};

/// Size of a compact inode and the unit of nids.
pub const INODE_SLOT: u64 = 32;
/// `EROFS_NULL_ADDR`: a block address meaning "hole".
pub const NULL_ADDR: u32 = u32::MAX;

/// How an inode's data is laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// `ceil(size / blksz)` contiguous blocks at `startblk` (or a hole when it is NULL).
    FlatPlain,
    /// Like plain, but the last partial block is stored right after the inode.
    FlatInline,
    /// Fixed-size chunks, each mapped by an entry of a table after the inode.
    ChunkBased,
}

/// A decoded inode. Cheap to clone: it is the handle the reader passes around.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Inode {
    /// The inode's nid (its address in 32-byte slots from `meta_blkaddr`).
    pub nid: u64,
    /// Entry type, from the mode.
    pub file_type: FileType,
    /// Full mode (type and permission bits).
    pub mode: u32,
    /// Data layout.
    pub layout: Layout,
    /// Whether the on-disk inode is the 64-byte extended form.
    pub extended: bool,
    /// Size in bytes.
    pub size: u64,
    /// Link count.
    pub nlink: u32,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// Modification time in seconds since the epoch.
    pub mtime: u64,
    /// The on-disk inode number.
    pub ino: u32,
    /// Device number (device nodes only).
    pub rdev: u32,
    /// `i_u`: the start block of a flat inode, the chunk format of a chunk-based inode.
    pub(crate) raw_u: u32,
    /// Byte address of the inode.
    pub(crate) iloc: u64,
    /// Bytes of inode plus inline xattrs: inline data or the chunk table starts after them.
    pub(crate) meta_len: u64,
}

impl Inode {
    /// The stat of this inode, as the merged view reports it.
    pub fn stat(&self) -> Stat {
        Stat {
            file_type: self.file_type,
            mode: self.mode,
            size: self.size,
            uid: self.uid,
            gid: self.gid,
            nlink: self.nlink,
            mtime: self.mtime,
            ino: self.nid,
            rdev: self.rdev,
            origin: Origin::Erofs,
        }
    }

    /// Byte address just after the inode and its xattrs.
    pub(crate) fn inline_pos(&self) -> FsResult<u64> {
        self.iloc.checked_add(self.meta_len).ok_or_else(|| {
            FsError::corrupt(format!("inode {} lies beyond addressable space", self.nid))
        })
    }
}

/// Reads and checks the inode `nid`.
pub(crate) fn read_inode<D: BlockDevice>(
    cache: &mut BlockCache<D>,
    sb: &Superblock,
    nid: u64,
) -> FsResult<Inode> {
    let bad = |what: &str| FsError::corrupt(format!("inode {nid}: {what}"));
    let iloc = u64::from(sb.meta_blkaddr)
        .checked_mul(u64::from(sb.block_size()))
        .and_then(|base| {
            nid.checked_mul(INODE_SLOT)
                .and_then(|off| base.checked_add(off))
        })
        .ok_or_else(|| bad("address overflows"))?;
    let mut raw = [0u8; 64];
    let (compact, _) = raw.split_at_mut(32);
    cache.read_bytes(iloc, compact)?;
    let format = Whole(&raw).u16(0);
    if format >> 5 != 0 {
        return Err(bad(&format!("unknown i_format bits {format:#06x}")));
    }
    let extended = format & 1 != 0;
    if extended {
        let (_, rest) = raw.split_at_mut(32);
        cache.read_bytes(iloc + 32, rest)?;
    }
    let f = Whole(&raw);
    let layout = match (format >> 1) & 0x7 {
        0 => Layout::FlatPlain,
        2 => Layout::FlatInline,
        4 => Layout::ChunkBased,
        1 | 3 => {
            return Err(FsError::new(
                Errno::NotSup,
                format!("inode {nid} is compressed; compressed files are not supported"),
            ));
        }
        other => return Err(bad(&format!("unknown data layout {other}"))),
    };
    let xattr_icount = u64::from(f.u16(2));
    let mode = u32::from(f.u16(4));
    let file_type =
        FileType::from_mode(mode).ok_or_else(|| bad(&format!("invalid mode {mode:#o}")))?;
    let raw_u = f.u32(16);
    let ino = f.u32(20);
    let (size, nlink, uid, gid, mtime) = if extended {
        (f.u64(8), f.u32(44), f.u32(24), f.u32(28), f.u64(32))
    } else {
        let flag = format & 0x10 != 0;
        // Bit 4 on a compact non-directory means nlink = 1 with i_nb holding startblk_hi,
        // which only 48-bit images (refused at mount) use.
        let nlink = if flag && file_type != FileType::Directory {
            if f.u16(6) != 0 {
                return Err(bad("high start block bits without the 48BIT feature"));
            }
            1
        } else {
            u32::from(f.u16(6))
        };
        let mtime = if sb.feature_compat & COMPAT_MTIME != 0 {
            sb.epoch.saturating_add(u64::from(f.u32(12)))
        } else {
            sb.epoch
        };
        (
            u64::from(f.u32(8)),
            nlink,
            u32::from(f.u16(24)),
            u32::from(f.u16(26)),
            mtime,
        )
    };
    let isize = if extended { 64 } else { 32 };
    let xsize = if xattr_icount == 0 {
        0
    } else {
        12 + 4 * (xattr_icount - 1)
    };
    let rdev = match file_type {
        FileType::CharDevice | FileType::BlockDevice => raw_u,
        _ => 0,
    };
    Ok(Inode {
        nid,
        file_type,
        mode,
        layout,
        extended,
        size,
        nlink,
        uid,
        gid,
        mtime,
        ino,
        rdev,
        raw_u,
        iloc,
        meta_len: isize + xsize,
    })
}
