//! The EROFS superblock: where it is, what it says, and which images this reader refuses.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use crate::hil::block::{BlockDevice, SECTOR_SIZE};
use crate::services::fs::error::{Errno, FsError, FsResult};

use super::le::Fields;

/// Byte offset of the superblock on the device.
pub const SUPERBLOCK_OFFSET: usize = 1024;
/// `EROFS_SUPER_MAGIC_V1`.
pub const EROFS_MAGIC: u32 = 0xE0F5_E1E2;
/// feature_compat: the superblock carries a CRC32C.
pub const COMPAT_SB_CHKSUM: u32 = 0x1;
/// feature_compat: inodes carry their own mtime.
pub const COMPAT_MTIME: u32 = 0x2;
/// feature_incompat: chunk-based files (supported).
pub const INCOMPAT_CHUNKED_FILE: u32 = 0x4;
/// The incompat bits this reader implements.
pub const SUPPORTED_INCOMPAT: u32 = INCOMPAT_CHUNKED_FILE;

/// What each incompat bit means, for the refusal message.
const INCOMPAT_NAMES: [(u32, &str); 8] = [
    (0x1, "LZ4 compression"),
    (0x2, "compression configs / big physical clusters"),
    (0x8, "a device table (multiple devices)"),
    (0x10, "compressed tail packing"),
    (0x20, "fragments / deduplication"),
    (0x40, "long xattr name prefixes"),
    (0x80, "48-bit block addresses"),
    (0x100, "a metadata box"),
];

/// CRC32C (Castagnoli) as EROFS uses it: the catalogue algorithm's final XOR undone.
const CRC32C: crc::Crc<u32> = crc::Crc::<u32>::new(&crc::CRC_32_ISCSI);

/// The fields of the superblock the reader uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Superblock {
    /// feature_compat bits.
    pub feature_compat: u32,
    /// feature_incompat bits (only supported ones get this far).
    pub feature_incompat: u32,
    /// log2 of the block size (9–12).
    pub blkszbits: u8,
    /// nid of the root directory.
    pub root_nid: u64,
    /// Number of inodes.
    pub inos: u64,
    /// Build time / epoch, seconds; compact inode mtimes are relative to it.
    pub epoch: u64,
    /// Size of the filesystem in blocks.
    pub blocks: u32,
    /// Block where inode metadata starts.
    pub meta_blkaddr: u32,
    /// Filesystem UUID.
    pub uuid: [u8; 16],
    /// Volume name (NUL-trimmed, lossy UTF-8).
    pub volume_name: String,
    /// The stored checksum (meaningful when `feature_compat & COMPAT_SB_CHKSUM`).
    pub checksum: u32,
}

impl Superblock {
    /// Block size in bytes.
    pub fn block_size(&self) -> u32 {
        1 << self.blkszbits
    }

    /// Reads and checks the superblock of `dev`.
    pub fn read<D: BlockDevice>(dev: &mut D) -> FsResult<Superblock> {
        let sectors = dev.block_count();
        let first = (SUPERBLOCK_OFFSET / SECTOR_SIZE) as u32;
        if sectors < first + 1 {
            return Err(FsError::corrupt(format!(
                "device has {sectors} sectors, too small for an EROFS superblock"
            )));
        }
        let mut head = [0u8; SECTOR_SIZE];
        read_sectors(dev, first, &mut head)?;
        let sb = Superblock::parse(&head)?;
        if sb.feature_compat & COMPAT_SB_CHKSUM != 0 {
            let bs = sb.block_size() as usize;
            let len = if bs <= SUPERBLOCK_OFFSET {
                bs
            } else {
                bs - SUPERBLOCK_OFFSET
            };
            let count = len.div_ceil(SECTOR_SIZE) as u32;
            if sectors < first + count {
                return Err(FsError::corrupt(
                    "device ends inside the checksummed superblock",
                ));
            }
            let mut area = Vec::new();
            area.try_reserve_exact(count as usize * SECTOR_SIZE)
                .map_err(|_| FsError::new(Errno::NoSpc, "cannot allocate superblock"))?;
            area.resize(count as usize * SECTOR_SIZE, 0);
            read_sectors(dev, first, &mut area)?;
            area.truncate(len);
            let computed = checksum(&mut area);
            if computed != sb.checksum {
                return Err(FsError::corrupt(format!(
                    "superblock checksum mismatch: stored {:#010x}, computed {computed:#010x}",
                    sb.checksum
                )));
            }
        }
        Ok(sb)
    }

    /// Parses the superblock from the sector holding it (`raw` starts at byte 1024).
    pub fn parse(raw: &[u8]) -> FsResult<Superblock> {
        let f = Fields(raw);
        let magic = f.u32(0)?;
        if magic != EROFS_MAGIC {
            return Err(FsError::corrupt(format!(
                "not an EROFS image: magic {magic:#010x} at byte 1024, expected {EROFS_MAGIC:#010x}"
            )));
        }
        let blkszbits = f.u8(12)?;
        if !(9..=12).contains(&blkszbits) {
            let code = if (13..=16).contains(&blkszbits) {
                Errno::NotSup
            } else {
                Errno::Corrupt
            };
            return Err(FsError::new(
                code,
                format!("block size 2^{blkszbits} is outside the supported 512..4096 bytes"),
            ));
        }
        let feature_incompat = f.u32(80)?;
        let unsupported = feature_incompat & !SUPPORTED_INCOMPAT;
        if unsupported != 0 {
            return Err(FsError::new(Errno::NotSup, incompat_message(unsupported)));
        }
        let dirblkbits = f.u8(90)?;
        if dirblkbits != 0 {
            return Err(FsError::new(
                Errno::NotSup,
                format!(
                    "image uses directory blocks larger than data blocks (dirblkbits {dirblkbits})"
                ),
            ));
        }
        let blocks = f.u32(36)?;
        if blocks == 0 {
            return Err(FsError::corrupt(
                "superblock says the filesystem has 0 blocks",
            ));
        }
        let mut uuid = [0u8; 16];
        uuid.copy_from_slice(f.bytes(48, 16)?);
        let name = f.bytes(64, 16)?;
        let name_len = name.iter().position(|&b| b == 0).unwrap_or(name.len());
        let volume_name = String::from_utf8_lossy(name.get(..name_len).unwrap_or(&[])).into_owned();
        Ok(Superblock {
            feature_compat: f.u32(8)?,
            feature_incompat,
            blkszbits,
            root_nid: u64::from(f.u16(14)?),
            inos: f.u64(16)?,
            epoch: f.u64(24)?,
            blocks,
            meta_blkaddr: f.u32(40)?,
            uuid,
            volume_name,
            checksum: f.u32(4)?,
        })
    }
}

/// The EROFS superblock checksum of `area` (starting at byte 1024), with its checksum field
/// zeroed in place first.
pub fn checksum(area: &mut [u8]) -> u32 {
    if let Some(field) = area.get_mut(4..8) {
        field.fill(0);
    }
    !CRC32C.checksum(area)
}

/// "image uses X (feature_incompat 0x..)" for every unsupported bit.
fn incompat_message(bits: u32) -> String {
    let mut parts = Vec::new();
    for bit in (0..32).map(|i| 1u32 << i).filter(|b| bits & b != 0) {
        let name = INCOMPAT_NAMES
            .iter()
            .find(|(b, _)| *b == bit)
            .map_or("an unknown feature", |(_, n)| n);
        parts.push(format!("{name} (feature_incompat {bit:#x})"));
    }
    format!(
        "image uses {}; this reader supports uncompressed images, optionally with chunk-based files",
        parts.join(", ")
    )
}

fn read_sectors<D: BlockDevice>(dev: &mut D, lba: u32, buf: &mut [u8]) -> FsResult<()> {
    let count = (buf.len() / SECTOR_SIZE) as u32;
    dev.read(lba, count, buf).map_err(|e| {
        FsError::new(
            Errno::Io,
            format!("reading the superblock failed (status {})", e.status),
        )
    })
}
