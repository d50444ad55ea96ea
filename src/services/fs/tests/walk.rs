//! A bounded walk over a possibly corrupt image: every directory, inode, link and the start of
//! every file, counting errors instead of stopping. Bounds guard against directory cycles.

use std::ops::ControlFlow;

use crate::hil::block::RamDisk;
use crate::services::fs::erofs::Erofs;
use crate::services::fs::stat::FileType;

const MAX_DEPTH: usize = 12;
const MAX_NODES: usize = 4000;
const READ_BYTES: usize = 16 * 1024;

#[derive(Debug, Default)]
pub struct WalkStats {
    pub nodes: usize,
    pub errors: usize,
    pub bytes: u64,
}

pub fn walk_all(fs: &mut Erofs<RamDisk>) -> WalkStats {
    let mut stats = WalkStats::default();
    let mut stack = vec![(fs.root().clone(), 0usize)];
    let mut buf = vec![0u8; 3000];
    while let Some((inode, depth)) = stack.pop() {
        if stats.nodes >= MAX_NODES {
            break;
        }
        stats.nodes += 1;
        match inode.file_type {
            FileType::Directory if depth < MAX_DEPTH => {
                let mut children = Vec::new();
                let listed = fs.for_each_entry(&inode, |e| {
                    if e.name != b"." && e.name != b".." && children.len() < MAX_NODES {
                        children.push((e.name.to_vec(), e.nid));
                    }
                    ControlFlow::Continue(())
                });
                stats.errors += usize::from(listed.is_err());
                for (name, nid) in children {
                    let name = String::from_utf8_lossy(&name).into_owned();
                    // Lookup exercises the binary search on the same (maybe corrupt) blocks.
                    stats.errors += usize::from(fs.lookup(&inode, &name).is_err());
                    match fs.inode(nid) {
                        Ok(child) => stack.push((child, depth + 1)),
                        Err(_) => stats.errors += 1,
                    }
                }
            }
            FileType::Symlink => stats.errors += usize::from(fs.read_link(&inode).is_err()),
            _ => {
                let mut offset = 0u64;
                while offset < READ_BYTES as u64 {
                    match fs.read_at(&inode, offset, &mut buf) {
                        Ok(0) => break,
                        Ok(n) => {
                            offset += n as u64;
                            stats.bytes += n as u64;
                        }
                        Err(_) => {
                            stats.errors += 1;
                            break;
                        }
                    }
                }
            }
        }
    }
    stats
}
