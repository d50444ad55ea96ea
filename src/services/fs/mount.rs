//! The boot-time mount of the root filesystem: which SCSI target, how big the RAM overlay may
//! grow, and what to say on the console when either setting or the disk is wrong.

use super::erofs::Erofs;
use super::error::{Errno, FsError};
use super::overlay::{self, Overlay};
use super::{Disk, Fs};
use crate::hil::block::IoError;
use alloc::format;
use alloc::string::String;

/// SCSI target of the root filesystem unless `mcp.disk` names another.
pub const DEFAULT_ROOT_TARGET: u32 = 2;

/// The outcome of mounting the root filesystem at init.
pub struct Mounted {
    pub fs: Option<Fs>,
    /// Why there is no filesystem (what the fs tools answer).
    pub error: Option<FsError>,
    /// One console line saying what happened.
    pub line: String,
}

/// Where the root filesystem is and how big its overlay may grow: `mcp.disk` and
/// `mcp.overlay_max`, each falling back to its default with a note for the console line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RootSettings {
    pub target: u32,
    pub overlay_max: usize,
    /// What was refused, as the console line's tail (`; …`), or empty.
    pub notes: String,
}

impl RootSettings {
    pub fn from_env(disk_env: Option<&str>, overlay_max_env: Option<&str>) -> RootSettings {
        let mut notes = String::new();
        let target = match disk_env.map(|v| v.trim().parse::<u32>()) {
            None => DEFAULT_ROOT_TARGET,
            Some(Ok(t)) if t <= 7 => t,
            Some(_) => {
                notes.push_str("; mcp.disk is not a SCSI ID 0..7, using 2");
                DEFAULT_ROOT_TARGET
            }
        };
        let overlay_max = match overlay_max_env.map(overlay::parse_overlay_max) {
            None => overlay::DEFAULT_OVERLAY_MAX,
            Some(Ok(c)) => c,
            Some(Err(e)) => {
                notes.push_str(&format!("; {e}; using the default"));
                overlay::DEFAULT_OVERLAY_MAX
            }
        };
        RootSettings {
            target,
            overlay_max,
            notes,
        }
    }
}

/// Mounts the root filesystem as `settings` say. A missing disk or a refused image leaves no
/// filesystem and an error for the fs tools.
pub fn mount_root(
    settings: &RootSettings,
    open: impl FnOnce(u32) -> Result<Disk, IoError>,
) -> Mounted {
    let (target, cap, notes) = (settings.target, settings.overlay_max, &settings.notes);
    let dev = match open(target) {
        Ok(d) => d,
        Err(e) => {
            let err = FsError::new(
                Errno::NoDev,
                format!(
                    "no filesystem: SCSI target {target} cannot be read (status {})",
                    e.status
                ),
            );
            return Mounted {
                line: format!("fs: {}{notes}", err.message),
                fs: None,
                error: Some(err),
            };
        }
    };
    match Erofs::mount(dev) {
        Ok(erofs) => {
            let sb = erofs.superblock();
            let line = format!(
                "fs: EROFS on SCSI target {target}: {} blocks of {} bytes, overlay cap {cap} \
                 bytes{notes}",
                sb.blocks,
                sb.block_size()
            );
            Mounted {
                fs: Some(Overlay::new(Some(erofs), cap)),
                error: None,
                line,
            }
        }
        Err(err) => Mounted {
            line: format!("fs: SCSI target {target} not mounted: {err}{notes}"),
            fs: None,
            error: Some(err),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hil::block::RamDisk;
    use crate::services::fs::erofs;
    use crate::services::fs::tests::fixture::fixtures;
    use alloc::boxed::Box;
    use alloc::vec;

    #[test]
    fn mount_root_reports_each_outcome() {
        let m = mount_root(&RootSettings::from_env(None, None), |_| {
            Err(IoError { status: -19 })
        });
        assert!(m.fs.is_none());
        assert_eq!(m.error.unwrap().code, Errno::NoDev);
        assert_eq!(
            m.line,
            "fs: no filesystem: SCSI target 2 cannot be read (status -19)"
        );
        let m = mount_root(&RootSettings::from_env(Some("9"), Some("lots")), |t| {
            assert_eq!(t, 2);
            Ok(Disk(Box::new(RamDisk::new(vec![0; 4096]))))
        });
        assert!(m.fs.is_none());
        assert!(
            m.line.contains("not mounted: E_CORRUPT")
                && m.line.contains("mcp.disk is not a SCSI ID"),
            "{}",
            m.line
        );
        assert!(m.line.contains("mcp.overlay_max \"lots\""), "{}", m.line);
        let Some(f) = fixtures() else {
            return;
        };
        let m = mount_root(&RootSettings::from_env(Some("3"), Some("64K")), |t| {
            assert_eq!(t, 3);
            Ok(Disk(Box::new(RamDisk::new(f.plain.clone()))))
        });
        assert!(
            m.line.starts_with("fs: EROFS on SCSI target 3: "),
            "{}",
            m.line
        );
        assert!(m.line.contains("overlay cap 65536 bytes"), "{}", m.line);
        assert_eq!(m.fs.unwrap().usage().cap, 65536);

        // An image with an incompat feature the reader lacks is refused by name.
        let mut img = f.plain.clone();
        let sb = erofs::SUPERBLOCK_OFFSET;
        let incompat = u32::from_le_bytes(img[sb + 80..sb + 84].try_into().unwrap()) | 0x1;
        img[sb + 80..sb + 84].copy_from_slice(&incompat.to_le_bytes());
        let area = &mut img[sb..sb + 4096 - sb % 4096];
        let sum = erofs::checksum(area);
        img[sb + 4..sb + 8].copy_from_slice(&sum.to_le_bytes());
        let m = mount_root(&RootSettings::from_env(None, None), |_| {
            Ok(Disk(Box::new(RamDisk::new(img))))
        });
        let e = m.error.unwrap();
        assert_eq!(e.code, Errno::NotSup);
        assert!(e.message.contains("LZ4 compression"), "{e}");
    }
}
