//! A read-only EROFS reader over a [`BlockDevice`], through the 16-block LRU.
//!
//! Supports uncompressed images (feature_incompat 0) and chunk-based files (CHUNKED_FILE):
//! compact and extended inodes, FLAT_PLAIN (with whole-file holes), FLAT_INLINE tail packing,
//! CHUNK_BASED with both table formats, multi-block directories, symlinks and every file type.
//! Anything else is refused with `E_NOTSUP`; any inconsistency is `E_CORRUPT`, never a panic.
//! See `docs/erofs.md`.

mod data;
mod dir;
mod inode;
mod le;
mod namei;
mod superblock;

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::ops::ControlFlow;

pub use dir::{MAX_NAME_LEN, RawDirent, dirent_type};
pub use inode::{Inode, Layout, NULL_ADDR};
pub use superblock::{
    COMPAT_SB_CHKSUM, EROFS_MAGIC, INCOMPAT_CHUNKED_FILE, SUPERBLOCK_OFFSET, Superblock, checksum,
};

use super::cache::{BlockCache, CacheStats};
use super::error::{Errno, FsError, FsResult};
use super::path::{self, MAX_PATH_LEN, Resolved};
use super::stat::FileType;
use crate::hil::block::BlockDevice;

/// One directory entry with an owned name (lossy UTF-8), as [`Erofs::read_dir`] returns it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirEntry {
    /// The name.
    pub name: String,
    /// The entry's nid.
    pub nid: u64,
    /// The dirent's type byte (1 regular … 7 symlink).
    pub file_type: u8,
}

/// A mounted EROFS image.
pub struct Erofs<D> {
    cache: BlockCache<D>,
    sb: Superblock,
    root: Inode,
}

impl<D: BlockDevice> Erofs<D> {
    /// Checks the superblock and the root directory of `dev`.
    pub fn mount(mut dev: D) -> FsResult<Self> {
        let sb = Superblock::read(&mut dev)?;
        let mut cache = BlockCache::new(dev, sb.blkszbits)?;
        if cache.block_limit() < u64::from(sb.blocks) {
            return Err(FsError::corrupt(format!(
                "image truncated: the superblock says {} blocks, the device holds {}",
                sb.blocks,
                cache.block_limit()
            )));
        }
        cache.restrict_to(u64::from(sb.blocks));
        let root = inode::read_inode(&mut cache, &sb, sb.root_nid)?;
        if root.file_type != FileType::Directory {
            return Err(FsError::corrupt(format!(
                "root inode {} is not a directory",
                sb.root_nid
            )));
        }
        Ok(Erofs { cache, sb, root })
    }

    /// The superblock.
    pub fn superblock(&self) -> &Superblock {
        &self.sb
    }

    /// The block cache's counters.
    pub fn cache_stats(&self) -> CacheStats {
        self.cache.stats()
    }

    /// The device under the cache.
    pub fn device(&self) -> &D {
        self.cache.device()
    }

    /// The device under the cache, for raw sector reads (`block.read`). The device is only
    /// read, so reading it directly cannot make the cache stale.
    pub fn device_mut(&mut self) -> &mut D {
        self.cache.device_mut()
    }

    /// The root directory.
    pub fn root(&self) -> &Inode {
        &self.root
    }

    /// Reads inode `nid`.
    pub fn inode(&mut self, nid: u64) -> FsResult<Inode> {
        inode::read_inode(&mut self.cache, &self.sb, nid)
    }

    /// Looks `name` up in directory `dir`.
    pub fn lookup(&mut self, dir: &Inode, name: &str) -> FsResult<Option<Inode>> {
        match dir::lookup(&mut self.cache, &self.sb, dir, name.as_bytes())? {
            Some((nid, _)) => self.inode(nid).map(Some),
            None => Ok(None),
        }
    }

    /// Calls `f` for each entry of `dir` in on-disk (sorted) order, `.` and `..` included.
    pub fn for_each_entry(
        &mut self,
        dir: &Inode,
        f: impl FnMut(RawDirent<'_>) -> ControlFlow<()>,
    ) -> FsResult<()> {
        dir::for_each(&mut self.cache, &self.sb, dir, f)
    }

    /// All entries of `dir` except `.` and `..`. Memory grows with the directory: callers that
    /// page should use [`Erofs::for_each_entry`].
    pub fn read_dir(&mut self, dir: &Inode) -> FsResult<Vec<DirEntry>> {
        let mut out = Vec::new();
        self.for_each_entry(dir, |e| {
            if e.name != b"." && e.name != b".." {
                out.push(DirEntry {
                    name: String::from_utf8_lossy(e.name).into_owned(),
                    nid: e.nid,
                    file_type: e.file_type,
                });
            }
            ControlFlow::Continue(())
        })?;
        Ok(out)
    }

    /// Reads up to `buf.len()` bytes of `inode`'s data at `offset`; 0 at end of file. Works for
    /// any type with data (regular files, symlinks, directories).
    pub fn read_at(&mut self, inode: &Inode, offset: u64, buf: &mut [u8]) -> FsResult<usize> {
        data::read_at(&mut self.cache, &self.sb, inode, offset, buf)
    }

    /// The target of symlink `inode` (lossy UTF-8).
    pub fn read_link(&mut self, inode: &Inode) -> FsResult<String> {
        if inode.file_type != FileType::Symlink {
            return Err(FsError::new(
                Errno::Inval,
                format!("inode {} is not a symlink", inode.nid),
            ));
        }
        if inode.size > MAX_PATH_LEN as u64 {
            return Err(FsError::new(
                Errno::NameTooLong,
                format!("symlink {} has a {}-byte target", inode.nid, inode.size),
            ));
        }
        let mut buf = alloc::vec![0u8; inode.size as usize];
        let n = self.read_at(inode, 0, &mut buf)?;
        let target = buf.get(..n).unwrap_or(&[]);
        if n != buf.len() || target.contains(&0) {
            return Err(FsError::corrupt(format!(
                "symlink {} has a malformed target",
                inode.nid
            )));
        }
        Ok(String::from_utf8_lossy(target).into_owned())
    }

    /// Resolves `path` to an inode; see [`path::resolve`] for the rules.
    pub fn resolve(&mut self, path: &str, follow_final: bool) -> FsResult<Resolved<Inode>> {
        path::resolve_existing(self, path, follow_final)
    }
}
