//! EROFS directories: blocks of 12-byte dirents followed by their names, sorted byte-wise across
//! the whole directory, so a lookup is a binary search over blocks and then within one block.

use alloc::format;
use alloc::vec::Vec;
use core::cmp::Ordering;
use core::ops::ControlFlow;

use super::data;
use super::inode::Inode;
use super::le::{Fields, Whole};
use super::superblock::Superblock;
use crate::hil::block::BlockDevice;
use crate::services::fs::cache::BlockCache;
use crate::services::fs::error::{Errno, FsError, FsResult};
use crate::services::fs::stat::FileType;

/// Longest name EROFS (and this reader) allows for one entry.
pub const MAX_NAME_LEN: usize = 255;
/// Size of one on-disk dirent.
const DIRENT_SIZE: usize = 12;

/// One directory entry as stored: name bytes, target nid and the dirent's type byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawDirent<'a> {
    /// The name (not NUL-terminated, 1..=255 bytes).
    pub name: &'a [u8],
    /// The entry's nid.
    pub nid: u64,
    /// The dirent's `file_type` byte (1 regular … 7 symlink).
    pub file_type: u8,
}

/// The dirent `file_type` byte for a type, as mkfs writes it.
pub fn dirent_type(ft: FileType) -> u8 {
    match ft {
        FileType::Regular => 1,
        FileType::Directory => 2,
        FileType::CharDevice => 3,
        FileType::BlockDevice => 4,
        FileType::Fifo => 5,
        FileType::Socket => 6,
        FileType::Symlink => 7,
    }
}

/// One loaded directory block.
struct Block<'a> {
    data: &'a [u8],
    count: usize,
}

impl<'a> Block<'a> {
    /// Checks the block header: the first nameoff gives the entry count.
    fn parse(data: &'a [u8], nid: u64, index: u64) -> FsResult<Self> {
        let nameoff0 = usize::from(Fields(data).u16(8)?);
        if nameoff0 < DIRENT_SIZE || nameoff0 > data.len() {
            return Err(FsError::corrupt(format!(
                "directory {nid} block {index}: first name offset {nameoff0} out of range"
            )));
        }
        Ok(Block {
            data,
            count: nameoff0 / DIRENT_SIZE,
        })
    }

    /// Entry `i` of the block, with its name bounds checked.
    fn entry(&self, i: usize) -> FsResult<RawDirent<'a>> {
        let f = Fields(self.data);
        let base = i * DIRENT_SIZE;
        let d = Whole(f.array::<DIRENT_SIZE>(base)?);
        let nid = d.u64(0);
        let start = usize::from(d.u16(8));
        let file_type = d.u8(10);
        let end = if i + 1 < self.count {
            usize::from(f.u16(base + DIRENT_SIZE + 8)?)
        } else {
            // The last name runs to the first NUL or the end of the block's data.
            let tail = self.data.get(start..).unwrap_or(&[]);
            start + tail.iter().position(|&b| b == 0).unwrap_or(tail.len())
        };
        let name = self
            .data
            .get(start..end)
            .filter(|n| {
                start >= self.count * DIRENT_SIZE && !n.is_empty() && n.len() <= MAX_NAME_LEN
            })
            .ok_or_else(|| {
                FsError::corrupt(format!("dirent {i}: bad name bounds {start}..{end}"))
            })?;
        Ok(RawDirent {
            name,
            nid,
            file_type,
        })
    }
}

/// Number of blocks in directory `dir`, after checking its size is plausible.
fn block_count<D: BlockDevice>(cache: &BlockCache<D>, dir: &Inode) -> FsResult<u64> {
    if dir.file_type != FileType::Directory {
        return Err(FsError::new(
            Errno::NotDir,
            format!("inode {} is not a directory", dir.nid),
        ));
    }
    let bits = cache.block_bits();
    if dir.size > cache.block_limit() << bits {
        return Err(FsError::corrupt(format!(
            "directory {} is larger ({} bytes) than the filesystem",
            dir.nid, dir.size
        )));
    }
    Ok(dir.size.div_ceil(1 << bits))
}

/// Directory block `index` of `dir`, borrowed from the block cache when it lies within one
/// filesystem block (every directory mkfs writes): a lookup or a listing then neither allocates
/// nor copies. Anything else (a hole, a block split across extents of a damaged image) is read
/// into `buf`.
fn load<'b, D: BlockDevice>(
    cache: &'b mut BlockCache<D>,
    sb: &Superblock,
    dir: &Inode,
    index: u64,
    buf: &'b mut Vec<u8>,
) -> FsResult<&'b [u8]> {
    let bits = cache.block_bits();
    let bs = cache.block_size() as u64;
    let pos = index << bits;
    let want = dir.size.saturating_sub(pos).min(bs);
    if want > 0
        && let data::Extent::Mapped { pos: at, len } = data::map(cache, sb, dir, pos)?
        && len >= want
        && at % bs + want <= bs
    {
        let off = (at % bs) as usize;
        return cache
            .block(at >> bits)?
            .get(off..off + want as usize)
            .ok_or_else(|| FsError::corrupt("directory block outside its cache block"));
    }
    buf.resize(bs as usize, 0);
    let n = data::read_at(cache, sb, dir, pos, buf)?;
    buf.get(..n)
        .ok_or_else(|| FsError::corrupt("directory block read overran"))
}

/// Finds `name` in `dir` by binary search; returns the entry's nid and dirent type.
pub(crate) fn lookup<D: BlockDevice>(
    cache: &mut BlockCache<D>,
    sb: &Superblock,
    dir: &Inode,
    name: &[u8],
) -> FsResult<Option<(u64, u8)>> {
    let mut lo = 0u64;
    let mut hi = block_count(cache, dir)?;
    let mut buf = Vec::new();
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let data = load(cache, sb, dir, mid, &mut buf)?;
        let block = Block::parse(data, dir.nid, mid)?;
        let first = block.entry(0)?;
        let last = block.entry(block.count - 1)?;
        if name < first.name {
            hi = mid;
            continue;
        }
        if name > last.name {
            lo = mid + 1;
            continue;
        }
        let (mut a, mut b) = (0usize, block.count);
        while a < b {
            let m = a + (b - a) / 2;
            let e = block.entry(m)?;
            match name.cmp(e.name) {
                Ordering::Less => b = m,
                Ordering::Greater => a = m + 1,
                Ordering::Equal => return Ok(Some((e.nid, e.file_type))),
            }
        }
        return Ok(None);
    }
    Ok(None)
}

/// Calls `f` for every entry of `dir` (including `.` and `..`) in on-disk order until it
/// breaks.
pub(crate) fn for_each<D: BlockDevice>(
    cache: &mut BlockCache<D>,
    sb: &Superblock,
    dir: &Inode,
    mut f: impl FnMut(RawDirent<'_>) -> ControlFlow<()>,
) -> FsResult<()> {
    let blocks = block_count(cache, dir)?;
    let mut buf = Vec::new();
    for index in 0..blocks {
        let data = load(cache, sb, dir, index, &mut buf)?;
        let block = Block::parse(data, dir.nid, index)?;
        for i in 0..block.count {
            if f(block.entry(i)?).is_break() {
                return Ok(());
            }
        }
    }
    Ok(())
}
