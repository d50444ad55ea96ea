//! Builds the fixture images once per test process with the code `cargo xtask fixtures` uses
//! (the `irix7-fixtures` crate).

use std::path::PathBuf;
use std::sync::OnceLock;

use crate::hil::block::RamDisk;
use crate::services::fs::erofs::Erofs;

/// The two fixture images and the tree they were built from.
pub struct Fixtures {
    pub staging: PathBuf,
    pub plain: Vec<u8>,
    pub chunked: Vec<u8>,
}

fn mkfs_present() -> bool {
    std::process::Command::new("mkfs.erofs")
        .arg("--help")
        .output()
        .is_ok()
}

/// Per-process output directories in the temp dir: `irix7-fs-fixtures-<pid>`.
const OUT_PREFIX: &str = "irix7-fs-fixtures-";

/// Deletes output directories of earlier test processes that have exited.
fn remove_stale_outputs() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.strip_prefix(OUT_PREFIX)) else {
            continue;
        };
        if pid.parse::<u32>().is_ok() && !std::path::Path::new("/proc").join(pid).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// The fixtures, or `None` (after saying so) when mkfs.erofs is not installed.
pub fn fixtures() -> Option<&'static Fixtures> {
    static CELL: OnceLock<Option<Fixtures>> = OnceLock::new();
    CELL.get_or_init(|| {
        if !mkfs_present() {
            eprintln!("SKIP: mkfs.erofs is not installed (apt-get install -y erofs-utils)");
            return None;
        }
        remove_stale_outputs();
        let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let out = std::env::temp_dir().join(format!("{OUT_PREFIX}{}", std::process::id()));
        let images = irix7_fixtures::build_fixture_images(&repo, &out)
            .unwrap_or_else(|e| panic!("building fixture images: {e}"));
        // The images live in memory from here on; only the staging tree stays on disk.
        let take = |p: &PathBuf| {
            let bytes = std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            std::fs::remove_file(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            bytes
        };
        Some(Fixtures {
            staging: out.join(irix7_fixtures::STAGING_DIR_NAME),
            plain: take(&images[0]),
            chunked: take(&images[1]),
        })
    })
    .as_ref()
}

/// Both images with a label, for tests that run on each.
pub fn images() -> Vec<(&'static str, &'static [u8])> {
    match fixtures() {
        Some(f) => vec![("plain", &f.plain[..]), ("chunked", &f.chunked[..])],
        None => Vec::new(),
    }
}

/// Mounts an image held in memory.
pub fn mount(image: &[u8]) -> Erofs<RamDisk> {
    Erofs::mount(RamDisk::new(image.to_vec())).unwrap_or_else(|e| panic!("mount: {e}"))
}
