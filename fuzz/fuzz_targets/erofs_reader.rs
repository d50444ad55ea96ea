//! Arbitrary bytes as an EROFS image: mount, walk the whole tree, read every file and link,
//! resolve paths and use the merged view on top. Nothing may panic or run away.
//!
//! Each input is tried twice: as given (so the superblock checksum check is fuzzed) and with
//! the checksum recomputed (so mutations behind the checksum reach the rest of the reader),
//! under the heap budget (`irix7_fuzz::budget`).

#![no_main]

use core::ops::ControlFlow;
use std::collections::HashSet;

use irix7_mcp::hil::block::RamDisk;
use irix7_mcp::services::fs::erofs::{Erofs, SUPERBLOCK_OFFSET, checksum};
use irix7_mcp::services::fs::overlay::{Overlay, WriteMode};
use irix7_mcp::services::fs::stat::FileType;
use libfuzzer_sys::fuzz_target;

/// Bounds on the walk: corrupt directories can form cycles.
const MAX_NODES: usize = 2000;
const MAX_DEPTH: usize = 16;
const READ_LIMIT: u64 = 64 * 1024;
/// Children looked up by name at each end of a directory.
const LOOKUPS: usize = 4;

const PATHS: [&str; 8] = [
    "/",
    "/etc/motd",
    "/link",
    "/docs/irix7/README",
    "/usr/bin/motd-link",
    "/../etc//./hostname",
    "/dangling",
    "/etc/hostname-abs/",
];

fuzz_target!(|data: &[u8]| {
    irix7_fuzz::budget::case(|| {
        exercise(data.to_vec());
        if let Some(resealed) = reseal(data) {
            exercise(resealed);
        }
    });
});

/// Recomputes the superblock checksum the way mkfs.erofs writes it.
fn reseal(data: &[u8]) -> Option<Vec<u8>> {
    let bits = *data.get(SUPERBLOCK_OFFSET + 12)?;
    let bs = 1usize << bits.clamp(9, 12);
    let len = if bs <= SUPERBLOCK_OFFSET {
        bs
    } else {
        bs - SUPERBLOCK_OFFSET
    };
    let mut area = data
        .get(SUPERBLOCK_OFFSET..SUPERBLOCK_OFFSET + len)?
        .to_vec();
    let sum = checksum(&mut area);
    let mut out = data.to_vec();
    out.get_mut(SUPERBLOCK_OFFSET + 4..SUPERBLOCK_OFFSET + 8)?
        .copy_from_slice(&sum.to_le_bytes());
    Some(out)
}

fn exercise(image: Vec<u8>) {
    let Ok(mut fs) = Erofs::mount(RamDisk::new(image)) else {
        return;
    };
    walk(&mut fs);
    let mut ov = Overlay::new(Some(fs), 64 * 1024);
    let mut buf = [0u8; 1024];
    for p in PATHS {
        let _ = ov.stat(p);
        let _ = ov.readlink(p);
        let _ = ov.read(p, 0, &mut buf);
        let _ = ov.list(p, 0, 64);
    }
    let _ = ov.write("/etc/motd", b"fuzz", WriteMode::Append);
    let _ = ov.mkdir("/etc/new");
    let _ = ov.remove("/usr", true);
    let _ = ov.list("/", 0, 1000);
}

fn walk(fs: &mut Erofs<RamDisk>) {
    let mut stack = vec![(fs.root().clone(), 0usize)];
    let mut nodes = 0usize;
    let mut buf = [0u8; 4096];
    // An inode reached again (a corrupt tree with cycles or shared children) reads the same
    // way each time: visiting it once keeps a case's cost to the image's distinct inodes.
    let mut seen = HashSet::new();
    while let Some((inode, depth)) = stack.pop() {
        if !seen.insert(inode.nid) {
            continue;
        }
        nodes += 1;
        if nodes > MAX_NODES {
            return;
        }
        match inode.file_type {
            FileType::Directory if depth < MAX_DEPTH => {
                let mut children = Vec::new();
                let _ = fs.for_each_entry(&inode, |e| {
                    if e.name != b"." && e.name != b".." && children.len() < MAX_NODES {
                        children.push((String::from_utf8_lossy(e.name).into_owned(), e.nid));
                    }
                    ControlFlow::Continue(())
                });
                // Looking every child up would cost the square of a huge corrupt directory
                // per case; the first and last few and one absent name reach the same code.
                let n = children.len();
                for (i, (name, nid)) in children.into_iter().enumerate() {
                    if i < LOOKUPS || i + LOOKUPS >= n {
                        let _ = fs.lookup(&inode, &name);
                    }
                    if let Ok(child) = fs.inode(nid) {
                        stack.push((child, depth + 1));
                    }
                }
                let _ = fs.lookup(&inode, "~absent~");
            }
            FileType::Symlink => {
                let _ = fs.read_link(&inode);
            }
            _ => {
                let mut offset = 0u64;
                while offset < READ_LIMIT {
                    match fs.read_at(&inode, offset, &mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => offset += n as u64,
                    }
                }
            }
        }
    }
}
