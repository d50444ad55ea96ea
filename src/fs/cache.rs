//! The 16-block LRU between the EROFS reader and the block device.
//!
//! Metadata reads (superblock-adjacent inodes, directory blocks, chunk tables) hit the same few
//! blocks again and again; a small cache of filesystem blocks keeps them off the SCSI bus.
//! Memory is fixed at `CACHE_BLOCKS × block size` (at most 64 KiB), allocated once.

use alloc::format;
use alloc::vec::Vec;

use super::block::{BlockDevice, SECTOR_SIZE};
use super::error::{ErrorCode, FsError, FsResult};

/// Number of filesystem blocks the cache holds.
pub const CACHE_BLOCKS: usize = 16;

/// Counters for `status` and the status page.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Block lookups served from the cache.
    pub hits: u64,
    /// Block lookups that went to the device.
    pub misses: u64,
    /// Misses that replaced a cached block.
    pub evictions: u64,
    /// Filesystem block size in bytes.
    pub block_size: u32,
    /// Slots in the cache (always [`CACHE_BLOCKS`]).
    pub capacity: u32,
    /// Slots currently holding a block.
    pub resident: u32,
}

/// A least-recently-used cache of filesystem blocks over a sector device.
pub struct BlockCache<D> {
    dev: D,
    blkbits: u8,
    /// Blocks the cache may read: the smaller of the device and the filesystem's size.
    limit: u64,
    data: Vec<u8>,
    tags: [Option<u64>; CACHE_BLOCKS],
    last_use: [u64; CACHE_BLOCKS],
    tick: u64,
    stats: CacheStats,
}

impl<D: BlockDevice> BlockCache<D> {
    /// A cache of `2^blkbits`-byte blocks (`blkbits` 9–12) over `dev`.
    pub fn new(dev: D, blkbits: u8) -> FsResult<Self> {
        if !(9..=12).contains(&blkbits) {
            return Err(FsError::new(
                ErrorCode::Inval,
                format!("cache block size 2^{blkbits} outside 512..4096"),
            ));
        }
        let blksz = 1usize << blkbits;
        let mut data = Vec::new();
        data.try_reserve_exact(CACHE_BLOCKS * blksz)
            .map_err(|_| FsError::new(ErrorCode::NoSpc, "cannot allocate the block cache"))?;
        data.resize(CACHE_BLOCKS * blksz, 0);
        let limit = u64::from(dev.block_count()) >> (blkbits - 9);
        Ok(BlockCache {
            dev,
            blkbits,
            limit,
            data,
            tags: [None; CACHE_BLOCKS],
            last_use: [0; CACHE_BLOCKS],
            tick: 0,
            stats: CacheStats {
                block_size: blksz as u32,
                capacity: CACHE_BLOCKS as u32,
                ..CacheStats::default()
            },
        })
    }

    /// Block size in bytes.
    pub fn block_size(&self) -> usize {
        1 << self.blkbits
    }

    /// log2 of the block size.
    pub fn block_bits(&self) -> u8 {
        self.blkbits
    }

    /// Number of blocks readable through the cache.
    pub fn block_limit(&self) -> u64 {
        self.limit
    }

    /// Lowers the readable range to `blocks` (the filesystem's own size), never raises it.
    pub fn restrict_to(&mut self, blocks: u64) {
        self.limit = self.limit.min(blocks);
    }

    /// The counters.
    pub fn stats(&self) -> CacheStats {
        let resident = self.tags.iter().filter(|t| t.is_some()).count() as u32;
        CacheStats {
            resident,
            ..self.stats
        }
    }

    /// The device below the cache.
    pub fn device(&self) -> &D {
        &self.dev
    }

    /// Block `blk`, from the cache or the device.
    pub fn block(&mut self, blk: u64) -> FsResult<&[u8]> {
        let slot = self.slot_for(blk)?;
        let bs = self.block_size();
        self.data
            .get(slot * bs..(slot + 1) * bs)
            .ok_or_else(|| FsError::new(ErrorCode::Io, "block cache slot out of range"))
    }

    /// Copies `buf.len()` bytes starting at byte `pos` of the device into `buf`, across blocks.
    pub fn read_bytes(&mut self, pos: u64, buf: &mut [u8]) -> FsResult<()> {
        let bs = self.block_size() as u64;
        let mut done = 0usize;
        while done < buf.len() {
            let at = pos
                .checked_add(done as u64)
                .ok_or_else(|| FsError::corrupt("byte offset overflows"))?;
            let off = (at % bs) as usize;
            let take = (bs as usize - off).min(buf.len() - done);
            let block = self.block(at / bs)?;
            let src = block
                .get(off..off + take)
                .ok_or_else(|| FsError::new(ErrorCode::Io, "block slice out of range"))?;
            if let Some(dst) = buf.get_mut(done..done + take) {
                dst.copy_from_slice(src);
            }
            done += take;
        }
        Ok(())
    }

    /// Finds or fills the slot holding `blk`, updating the LRU order and counters.
    fn slot_for(&mut self, blk: u64) -> FsResult<usize> {
        if blk >= self.limit {
            return Err(FsError::corrupt(format!(
                "block {blk} is beyond the end of the filesystem ({} blocks)",
                self.limit
            )));
        }
        self.tick += 1;
        if let Some(slot) = self.tags.iter().position(|t| *t == Some(blk)) {
            self.stats.hits += 1;
            self.last_use[slot] = self.tick;
            return Ok(slot);
        }
        self.stats.misses += 1;
        let slot = match self.tags.iter().position(Option::is_none) {
            Some(free) => free,
            None => {
                self.stats.evictions += 1;
                (0..CACHE_BLOCKS)
                    .min_by_key(|&i| self.last_use[i])
                    .unwrap_or(0)
            }
        };
        self.tags[slot] = None;
        let bs = self.block_size();
        let spb = (bs / SECTOR_SIZE) as u32;
        let lba = u32::try_from(blk << (self.blkbits - 9))
            .map_err(|_| FsError::corrupt(format!("block {blk} is beyond sector addressing")))?;
        let buf = self
            .data
            .get_mut(slot * bs..(slot + 1) * bs)
            .ok_or_else(|| FsError::new(ErrorCode::Io, "block cache slot out of range"))?;
        self.dev.read(lba, spb, buf).map_err(|e| {
            FsError::new(
                ErrorCode::Io,
                format!("device read of block {blk} failed (status {})", e.status),
            )
        })?;
        self.tags[slot] = Some(blk);
        self.last_use[slot] = self.tick;
        Ok(slot)
    }
}
