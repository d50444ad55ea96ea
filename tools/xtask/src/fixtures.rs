//! Builds the EROFS fixture images from `tests/fixtures/rootfs/`.
//!
//! Git cannot hold FIFOs, sockets or device nodes and should not hold megabytes of generated
//! data, so the committed tree is copied into a staging directory and the rest is generated
//! there (deterministically) before `mkfs.erofs` runs. Both images are byte-reproducible: fixed
//! timestamps (`-T0`), root ownership, a fixed UUID, no xattrs, and modes set explicitly on every
//! staged file so the umask of the build machine does not leak in.
//!
//! Only std: the module crate's host tests include this file with `#[path]` so that they test
//! exactly the images the project ships.

use std::fs;
use std::io;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Name of the staging tree left in `out_dir`; tests compare the images against it.
pub const STAGING_DIR_NAME: &str = "rootfs-staging";
/// The plain (FLAT_PLAIN / FLAT_INLINE) image.
pub const PLAIN_IMAGE_NAME: &str = "rootfs.erofs";
/// The image whose regular files are chunk-based (`--chunksize`).
pub const CHUNKED_IMAGE_NAME: &str = "rootfs-chunked.erofs";
/// Chunk size of the chunked image: one 4096-byte block per chunk.
pub const CHUNK_SIZE: u32 = 4096;
/// Fixed filesystem UUID so two builds are byte-identical.
pub const FIXTURE_UUID: &str = "1f7e0a11-7d1c-4e5a-9b1d-1a7e0c0ffee7";
/// Number of entries in `/bigdir`, enough to span several 4096-byte directory blocks.
pub const BIGDIR_ENTRIES: usize = 300;
/// Size of `/big/over-1mib.bin`.
pub const OVER_1MIB_SIZE: usize = 1024 * 1024 + 12_345;
/// Size of `/big/4mib.bin` (the streaming benchmark reads it).
pub const FOUR_MIB_SIZE: usize = 4 * 1024 * 1024;

/// Stages the fixture tree and builds both images into `out_dir`.
///
/// Returns the image paths (plain first, then chunked). The staging tree stays in
/// `out_dir/STAGING_DIR_NAME` so callers can compare the images against their source.
pub fn build_fixture_images(repo_root: &Path, out_dir: &Path) -> Result<Vec<PathBuf>, String> {
    let source = repo_root.join("tests/fixtures/rootfs");
    let staging = out_dir.join(STAGING_DIR_NAME);
    fs::create_dir_all(out_dir).map_err(|e| format!("create {}: {e}", out_dir.display()))?;
    stage_rootfs(&source, &staging)?;
    let plain = out_dir.join(PLAIN_IMAGE_NAME);
    let chunked = out_dir.join(CHUNKED_IMAGE_NAME);
    run_mkfs(&plain, &staging, &[])?;
    run_mkfs(&chunked, &staging, &[format!("--chunksize={CHUNK_SIZE}")])?;
    Ok(vec![plain, chunked])
}

/// Copies `source` to `dest` (replacing it) and adds the generated entries.
pub fn stage_rootfs(source: &Path, dest: &Path) -> Result<(), String> {
    if dest.symlink_metadata().is_ok() {
        fs::remove_dir_all(dest).map_err(|e| format!("remove {}: {e}", dest.display()))?;
    }
    copy_tree(source, dest).map_err(|e| format!("copy {}: {e}", source.display()))?;
    add_generated(dest).map_err(|e| format!("generate fixtures in {}: {e}", dest.display()))?;
    Ok(())
}

/// Recursively copies regular files, directories and symlinks, normalising modes.
fn copy_tree(src: &Path, dst: &Path) -> io::Result<()> {
    fs::create_dir(dst)?;
    fs::set_permissions(dst, fs::Permissions::from_mode(0o755))?;
    let mut entries = fs::read_dir(src)?.collect::<Result<Vec<_>, _>>()?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let from = entry.path();
        let to = dst.join(entry.file_name());
        let meta = fs::symlink_metadata(&from)?;
        let ft = meta.file_type();
        if ft.is_symlink() {
            symlink(fs::read_link(&from)?, &to)?;
        } else if ft.is_dir() {
            copy_tree(&from, &to)?;
        } else if ft.is_file() {
            fs::copy(&from, &to)?;
            // Git keeps only the executable bit; everything else is 0644.
            let mode = if meta.permissions().mode() & 0o100 != 0 {
                0o755
            } else {
                0o644
            };
            fs::set_permissions(&to, fs::Permissions::from_mode(mode))?;
        }
    }
    Ok(())
}

/// Deterministic pseudo-random bytes (xorshift64*), so big files need no storage in git.
fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut state = seed | 1;
    let mut out = Vec::with_capacity(len);
    while out.len() < len {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        let word = state.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes();
        let take = (len - out.len()).min(8);
        out.extend_from_slice(&word[..take]);
    }
    out
}

fn write_file(path: &Path, data: &[u8], mode: u32) -> io::Result<()> {
    if let Some(parent) = path.parent()
        && !parent.exists()
    {
        fs::create_dir_all(parent)?;
        fs::set_permissions(parent, fs::Permissions::from_mode(0o755))?;
    }
    fs::write(path, data)?;
    fs::set_permissions(path, fs::Permissions::from_mode(mode))
}

fn make_dir(path: &Path) -> io::Result<()> {
    fs::create_dir_all(path)?;
    fs::set_permissions(path, fs::Permissions::from_mode(0o755))
}

/// Runs a helper command, mapping a non-zero exit to an error.
fn run(cmd: &mut Command) -> io::Result<()> {
    let out = cmd.output()?;
    if out.status.success() {
        Ok(())
    } else {
        Err(io::Error::other(format!(
            "{cmd:?} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

fn add_generated(root: &Path) -> io::Result<()> {
    // Big files: one just over 1 MiB, one of exactly 4 MiB, a block-aligned file with a
    // zero-filled middle (chunk holes), and a file that ends in an inline tail.
    write_file(
        &root.join("big/over-1mib.bin"),
        &pattern(OVER_1MIB_SIZE, 1),
        0o644,
    )?;
    write_file(
        &root.join("big/4mib.bin"),
        &pattern(FOUR_MIB_SIZE, 4),
        0o644,
    )?;
    let mut sparse = pattern(16 * 4096, 7);
    sparse[4096..12 * 4096].fill(0);
    write_file(&root.join("big/zero-middle.bin"), &sparse, 0o644)?;
    write_file(
        &root.join("big/tail.bin"),
        &pattern(2 * 4096 + 100, 9),
        0o644,
    )?;

    // Every byte value once, and an empty file.
    let all: Vec<u8> = (0..=255u8).collect();
    write_file(&root.join("bin/allbytes.bin"), &all, 0o644)?;
    write_file(&root.join("etc/empty"), b"", 0o644)?;

    // A symlink whose target is longer than 512 bytes and still resolves (to /etc/motd).
    let long_target = format!("{}etc/motd", "./".repeat(300));
    symlink(long_target, root.join("longlink"))?;
    // A symlink loop, for E_LOOP.
    make_dir(&root.join("loop"))?;
    symlink("b", root.join("loop/a"))?;
    symlink("a", root.join("loop/b"))?;

    // A directory spanning several blocks: 300 entries with longish names.
    make_dir(&root.join("bigdir"))?;
    for i in 0..BIGDIR_ENTRIES {
        let name = format!("entry-with-a-rather-long-file-name-{i:04}.txt");
        write_file(
            &root.join("bigdir").join(name),
            format!("entry {i}\n").as_bytes(),
            0o644,
        )?;
    }

    // Special files git cannot hold. A FIFO and a socket need no privileges; device nodes need
    // root and are skipped without it (the tests compare against what was actually staged).
    make_dir(&root.join("dev"))?;
    let fifo = root.join("dev/fifo");
    run(Command::new("mkfifo").arg("-m").arg("0644").arg(&fifo))?;
    fs::set_permissions(&fifo, fs::Permissions::from_mode(0o644))?;
    let sock = root.join("dev/socket");
    drop(std::os::unix::net::UnixListener::bind(&sock)?);
    fs::set_permissions(&sock, fs::Permissions::from_mode(0o755))?;
    for (name, kind, major, minor) in [("null", "c", "1", "3"), ("sda", "b", "8", "0")] {
        let node = root.join("dev").join(name);
        let made = Command::new("mknod")
            .args(["-m", "0644"])
            .arg(&node)
            .args([kind, major, minor])
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false);
        if made {
            fs::set_permissions(&node, fs::Permissions::from_mode(0o644))?;
        }
    }
    Ok(())
}

/// Runs `mkfs.erofs` with the reproducibility flags plus `extra`.
fn run_mkfs(image: &Path, tree: &Path, extra: &[String]) -> Result<(), String> {
    if image.exists() {
        fs::remove_file(image).map_err(|e| format!("remove {}: {e}", image.display()))?;
    }
    let mut cmd = Command::new("mkfs.erofs");
    cmd.arg("-T0")
        .arg("--all-root")
        .arg(format!("-U{FIXTURE_UUID}"))
        .arg("-x-1")
        .arg("--quiet")
        .args(extra)
        .arg(image)
        .arg(tree);
    let out = cmd.output().map_err(|e| {
        format!("cannot run mkfs.erofs ({e}); install it with `apt-get install -y erofs-utils`")
    })?;
    if !out.status.success() {
        return Err(format!(
            "mkfs.erofs for {} failed: {}{}",
            image.display(),
            String::from_utf8_lossy(&out.stdout).trim(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(())
}
