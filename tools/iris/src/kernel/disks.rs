//! SCSI disks for `block_read`: raw image files of 512-byte blocks, one per target ID.

use std::collections::BTreeMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use indy::abi::BLOCK_SIZE;

/// The root filesystem image another tool builds; attached as `DEFAULT_ROOTFS_TARGET` when it
/// exists and no `--disk`/`--no-disk` says otherwise. Relative to the repository root.
pub const DEFAULT_ROOTFS: &str = "target/fixtures/rootfs.erofs";
pub const DEFAULT_ROOTFS_TARGET: u8 = 2;
/// SCSI IDs on the Indy's bus.
pub const MAX_TARGET: u8 = 7;

pub struct Disk {
    pub path: PathBuf,
    file: File,
    pub blocks: u64,
}

#[derive(Default)]
pub struct Disks {
    targets: BTreeMap<u8, Disk>,
}

/// Why a block read failed (mapped to ABI status codes by the caller).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockError {
    NoDevice,
    Range,
    Io,
}

impl Disks {
    pub fn attach(&mut self, target: u8, path: &Path) -> Result<(), String> {
        if target > MAX_TARGET {
            return Err(format!(
                "SCSI target {target} out of range 0..={MAX_TARGET}"
            ));
        }
        let file =
            File::open(path).map_err(|e| format!("cannot open disk {}: {e}", path.display()))?;
        let len = file
            .metadata()
            .map_err(|e| format!("cannot stat disk {}: {e}", path.display()))?
            .len();
        let blocks = len / u64::from(BLOCK_SIZE);
        self.targets.insert(
            target,
            Disk {
                path: path.to_path_buf(),
                file,
                blocks,
            },
        );
        Ok(())
    }

    pub fn list(&self) -> impl Iterator<Item = (u8, &Disk)> {
        self.targets.iter().map(|(t, d)| (*t, d))
    }

    pub fn blocks(&self, target: u32) -> Result<u64, BlockError> {
        u8::try_from(target)
            .ok()
            .and_then(|t| self.targets.get(&t))
            .map(|d| d.blocks)
            .ok_or(BlockError::NoDevice)
    }

    pub fn read(&self, target: u32, lba: u32, count: u32) -> Result<Vec<u8>, BlockError> {
        let disk = u8::try_from(target)
            .ok()
            .and_then(|t| self.targets.get(&t))
            .ok_or(BlockError::NoDevice)?;
        if u64::from(lba) + u64::from(count) > disk.blocks {
            return Err(BlockError::Range);
        }
        let mut buf = vec![0u8; count as usize * BLOCK_SIZE as usize];
        disk.file
            .read_exact_at(&mut buf, u64::from(lba) * u64::from(BLOCK_SIZE))
            .map_err(|_| BlockError::Io)?;
        Ok(buf)
    }
}

/// Parse `ID=PATH` as `--disk` takes it.
pub fn parse_disk_arg(arg: &str) -> Result<(u8, PathBuf), String> {
    let (id, path) = arg
        .split_once('=')
        .ok_or_else(|| format!("malformed --disk `{arg}` (want ID=PATH)"))?;
    let id: u8 = id
        .trim()
        .parse()
        .map_err(|_| format!("malformed SCSI ID in --disk `{arg}`"))?;
    if id > MAX_TARGET || path.is_empty() {
        return Err(format!(
            "malformed --disk `{arg}` (ID 0..={MAX_TARGET}, non-empty path)"
        ));
    }
    Ok((id, PathBuf::from(path)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_blocks_and_checks_range() {
        let dir = std::env::temp_dir().join(format!("iris-disk-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("d.img");
        let data: Vec<u8> = (0..3 * 512 + 100).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        let mut disks = Disks::default();
        disks.attach(2, &path).unwrap();
        assert_eq!(disks.blocks(2), Ok(3));
        assert_eq!(disks.blocks(3), Err(BlockError::NoDevice));
        assert_eq!(disks.read(2, 1, 2).unwrap(), data[512..1536]);
        assert_eq!(disks.read(2, 2, 2), Err(BlockError::Range));
        assert_eq!(disks.read(9, 0, 1), Err(BlockError::NoDevice));
        assert_eq!(
            parse_disk_arg("2=x.img").unwrap(),
            (2, PathBuf::from("x.img"))
        );
        assert!(parse_disk_arg("8=x.img").is_err());
        assert!(parse_disk_arg("x.img").is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
