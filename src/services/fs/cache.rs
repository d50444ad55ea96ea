//! The 16-block LRU between the EROFS reader and the block device.
//!
//! Metadata reads (superblock-adjacent inodes, directory blocks, chunk tables) hit the same few
//! blocks again and again; a small cache of filesystem blocks keeps them off the SCSI bus.
//! Memory is at most `CACHE_BLOCKS × block size` (64 KiB), taken a block at a time as blocks
//! are first read: an idle module holds only what mounting read, the memory plan reserves the
//! rest ([`CacheStats::room`]), and a block the heap cannot give replaces the least recently
//! used one instead.

use alloc::boxed::Box;
use alloc::format;
use alloc::vec::Vec;

use super::error::{Errno, FsError, FsResult};
use crate::hil::block::{BlockDevice, SECTOR_SIZE};

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
    /// Slots with memory taken from the heap (a slot keeps it once it has held a block).
    pub allocated: u32,
    /// Blocks of bulk file data read around the cache (see [`BlockCache::read_direct`]).
    pub direct_blocks: u64,
}

impl CacheStats {
    /// Bytes the cache may still take from the heap as it fills.
    pub fn room(&self) -> usize {
        self.capacity.saturating_sub(self.allocated) as usize * self.block_size as usize
    }
}

/// A least-recently-used cache of filesystem blocks over a sector device.
pub struct BlockCache<D> {
    dev: D,
    blkbits: u8,
    /// Blocks the cache may read: the smaller of the device and the filesystem's size.
    limit: u64,
    /// One buffer per slot that has held a block; never more than [`CACHE_BLOCKS`].
    slots: Vec<Box<[u8]>>,
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
                Errno::Inval,
                format!("cache block size 2^{blkbits} outside 512..4096"),
            ));
        }
        let blksz = 1usize << blkbits;
        let mut slots = Vec::new();
        slots
            .try_reserve_exact(CACHE_BLOCKS)
            .map_err(|_| FsError::new(Errno::NoSpc, "cannot allocate the block cache"))?;
        let limit = u64::from(dev.block_count()) >> (blkbits - 9);
        Ok(BlockCache {
            dev,
            blkbits,
            limit,
            slots,
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

    /// The device below the cache, mutable for raw reads.
    pub fn device_mut(&mut self) -> &mut D {
        &mut self.dev
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
            allocated: self.slots.len() as u32,
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
        self.slots
            .get(slot)
            .map(|b| &b[..])
            .ok_or_else(|| FsError::new(Errno::Io, "block cache slot out of range"))
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
                .ok_or_else(|| FsError::new(Errno::Io, "block slice out of range"))?;
            if let Some(dst) = buf.get_mut(done..done + take) {
                dst.copy_from_slice(src);
            }
            done += take;
        }
        Ok(())
    }

    /// Reads whole blocks starting at the block-aligned byte `pos` straight into `buf` (a
    /// multiple of the block size), bypassing the cache: streaming a big file through the 16
    /// slots would evict every metadata block for data that is read once, and one large device
    /// read is cheaper than many small ones.
    pub fn read_direct(&mut self, pos: u64, buf: &mut [u8]) -> FsResult<()> {
        let bs = self.block_size();
        if !pos.is_multiple_of(bs as u64) || !buf.len().is_multiple_of(bs) {
            return Err(FsError::new(Errno::Inval, "unaligned direct read"));
        }
        let first = pos >> self.blkbits;
        let count = (buf.len() / bs) as u64;
        if first.checked_add(count).is_none_or(|end| end > self.limit) {
            return Err(FsError::corrupt(format!(
                "blocks {first}..+{count} are beyond the end of the filesystem ({} blocks)",
                self.limit
            )));
        }
        let shift = self.blkbits - 9;
        let lba = u32::try_from(first << shift)
            .map_err(|_| FsError::corrupt(format!("block {first} is beyond sector addressing")))?;
        let sectors = u32::try_from(count << shift)
            .map_err(|_| FsError::new(Errno::Inval, "direct read too large"))?;
        self.dev.read(lba, sectors, buf).map_err(|e| {
            FsError::new(
                Errno::Io,
                format!(
                    "device read of blocks {first}..+{count} failed (status {})",
                    e.status
                ),
            )
        })?;
        self.stats.direct_blocks += count;
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
        let held = self.slots.len();
        let slot = match self.tags[..held].iter().position(Option::is_none) {
            Some(free) => free,
            None if held < CACHE_BLOCKS && self.grow() => held,
            None if held == 0 => {
                return Err(FsError::new(
                    Errno::NoSpc,
                    "no memory for a block of the cache",
                ));
            }
            None => {
                self.stats.evictions += 1;
                (0..held).min_by_key(|&i| self.last_use[i]).unwrap_or(0)
            }
        };
        self.tags[slot] = None;
        let bs = self.block_size();
        let spb = (bs / SECTOR_SIZE) as u32;
        let lba = u32::try_from(blk << (self.blkbits - 9))
            .map_err(|_| FsError::corrupt(format!("block {blk} is beyond sector addressing")))?;
        let buf = self
            .slots
            .get_mut(slot)
            .ok_or_else(|| FsError::new(Errno::Io, "block cache slot out of range"))?;
        self.dev.read(lba, spb, &mut buf[..]).map_err(|e| {
            FsError::new(
                Errno::Io,
                format!("device read of block {blk} failed (status {})", e.status),
            )
        })?;
        self.tags[slot] = Some(blk);
        self.last_use[slot] = self.tick;
        Ok(slot)
    }

    /// Takes memory for one more slot; false when the heap has none to give.
    fn grow(&mut self) -> bool {
        let mut block = Vec::new();
        if block.try_reserve_exact(self.block_size()).is_err() {
            return false;
        }
        block.resize(self.block_size(), 0);
        self.slots.push(block.into_boxed_slice());
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hil::block::IoError;

    /// A device whose sector `n` is filled with `n as u8`, counting reads and failing on demand.
    struct Counting {
        sectors: u32,
        reads: usize,
        fail: bool,
    }

    impl BlockDevice for Counting {
        fn read(&mut self, lba: u32, count: u32, buf: &mut [u8]) -> Result<(), IoError> {
            self.reads += 1;
            if self.fail {
                return Err(IoError { status: -5 });
            }
            assert_eq!(buf.len(), count as usize * SECTOR_SIZE);
            for (i, sector) in buf.chunks_mut(SECTOR_SIZE).enumerate() {
                sector.fill((lba as usize + i) as u8);
            }
            Ok(())
        }
        fn block_count(&self) -> u32 {
            self.sectors
        }
    }

    fn cache(bits: u8) -> BlockCache<Counting> {
        BlockCache::new(
            Counting {
                sectors: 4096,
                reads: 0,
                fail: false,
            },
            bits,
        )
        .unwrap()
    }

    #[test]
    fn lru_evicts_the_least_recently_used_block() {
        let mut c = cache(12);
        for b in 0..16 {
            c.block(b).unwrap();
        }
        assert_eq!(
            (c.stats().misses, c.stats().hits, c.stats().evictions),
            (16, 0, 0)
        );
        // Touch 0 so 1 becomes the oldest; block 16 must evict 1, not 0.
        c.block(0).unwrap();
        c.block(16).unwrap();
        assert_eq!(c.stats().evictions, 1);
        let reads = c.device().reads;
        c.block(0).unwrap();
        assert_eq!(c.device().reads, reads, "block 0 stayed cached");
        c.block(1).unwrap();
        assert_eq!(c.device().reads, reads + 1, "block 1 was evicted");
        let s = c.stats();
        assert_eq!(
            (s.hits, s.misses, s.evictions, s.resident, s.capacity),
            (2, 18, 2, 16, 16)
        );
    }

    #[test]
    fn memory_is_taken_a_block_at_a_time_and_kept() {
        let mut c = cache(12);
        assert_eq!((c.stats().allocated, c.stats().room()), (0, 16 * 4096));
        c.block(5).unwrap();
        c.block(5).unwrap();
        c.block(7).unwrap();
        assert_eq!((c.stats().allocated, c.stats().room()), (2, 14 * 4096));
        // A failed read leaves its slot's memory in place for the next block.
        c.device_mut().fail = true;
        assert!(c.block(9).is_err());
        c.device_mut().fail = false;
        assert_eq!((c.stats().resident, c.stats().allocated), (2, 3));
        c.block(9).unwrap();
        assert_eq!((c.stats().resident, c.stats().allocated), (3, 3));
        for b in 0..40 {
            c.block(b).unwrap();
        }
        assert_eq!((c.stats().allocated, c.stats().room()), (16, 0));
    }

    #[test]
    fn blocks_hold_the_right_sectors_at_every_size() {
        for bits in 9..=12u8 {
            let mut c = cache(bits);
            let spb = 1usize << (bits - 9);
            let block = c.block(3).unwrap();
            assert_eq!(block.len(), 1 << bits);
            assert_eq!(block[0], (3 * spb) as u8);
            assert_eq!(block[block.len() - 1], (3 * spb + spb - 1) as u8);
            // A read spanning a block boundary.
            let bs = 1u64 << bits;
            let mut buf = [0u8; 4];
            c.read_bytes(bs * 5 - 2, &mut buf).unwrap();
            let last = (5 * spb - 1) as u8;
            assert_eq!(buf, [last, last, (5 * spb) as u8, (5 * spb) as u8]);
            assert_eq!(c.stats().block_size, 1 << bits);
        }
        assert_eq!(
            BlockCache::new(
                Counting {
                    sectors: 8,
                    reads: 0,
                    fail: false
                },
                13
            )
            .err()
            .unwrap()
            .code,
            Errno::Inval
        );
    }

    #[test]
    fn direct_reads_bypass_the_slots() {
        let mut c = cache(10);
        let mut buf = [0u8; 3 * 1024];
        c.read_direct(4 * 1024, &mut buf).unwrap();
        assert_eq!((buf[0], buf[1024], buf[3 * 1024 - 1]), (8, 10, 13));
        let s = c.stats();
        assert_eq!((s.direct_blocks, s.misses, s.resident), (3, 0, 0));
        assert_eq!(c.read_direct(512, &mut buf).unwrap_err().code, Errno::Inval);
        assert_eq!(
            c.read_direct(0, &mut buf[..100]).unwrap_err().code,
            Errno::Inval
        );
        c.restrict_to(6);
        assert_eq!(
            c.read_direct(4 * 1024, &mut buf).unwrap_err().code,
            Errno::Corrupt
        );
    }

    #[test]
    fn failures_and_out_of_range_blocks_are_errors() {
        let mut c = cache(12);
        c.restrict_to(10);
        assert_eq!(c.block(10).unwrap_err().code, Errno::Corrupt);
        assert_eq!(c.block(u64::MAX).unwrap_err().code, Errno::Corrupt);
        c.dev.fail = true;
        assert_eq!(c.block(2).unwrap_err().code, Errno::Io);
        // A failed read leaves no stale block behind.
        c.dev.fail = false;
        assert_eq!(c.block(2).unwrap()[0], 16);
        assert_eq!(c.stats().resident, 1);
    }
}
