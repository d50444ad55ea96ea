//! The real fixture images read back exactly as the tree they were built from.

use std::fs;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;

use super::fixture::{fixtures, images, mount};
use super::walk::walk_all;
use crate::hil::block::RamDisk;
use crate::services::fs::erofs::{Erofs, INCOMPAT_CHUNKED_FILE, Layout};
use crate::services::fs::overlay::{DEFAULT_OVERLAY_MAX, Overlay};
use crate::services::fs::stat::{FileType, Origin};

fn host_type(ft: fs::FileType) -> FileType {
    if ft.is_symlink() {
        FileType::Symlink
    } else if ft.is_dir() {
        FileType::Directory
    } else if ft.is_file() {
        FileType::Regular
    } else if ft.is_fifo() {
        FileType::Fifo
    } else if ft.is_socket() {
        FileType::Socket
    } else if ft.is_char_device() {
        FileType::CharDevice
    } else {
        assert!(ft.is_block_device());
        FileType::BlockDevice
    }
}

/// Linux `new_encode_dev`, which mkfs.erofs stores in `i_u` for device nodes.
fn erofs_rdev(rdev: u64) -> u32 {
    let major = (((rdev >> 8) & 0xfff) | ((rdev >> 32) & !0xfff)) as u32;
    let minor = ((rdev & 0xff) | ((rdev >> 12) & !0xff)) as u32;
    (minor & 0xff) | (major << 8) | ((minor & !0xff) << 12)
}

/// Reads a whole file through the merged view in `piece`-byte steps.
fn read_all(ov: &mut Overlay<RamDisk>, path: &str, piece: usize) -> Vec<u8> {
    let file = ov.open(path).unwrap_or_else(|e| panic!("open {path}: {e}"));
    let mut out = Vec::new();
    let mut buf = vec![0u8; piece];
    loop {
        let n = ov
            .read_at(&file, out.len() as u64, &mut buf)
            .unwrap_or_else(|e| panic!("{path}: {e}"));
        if n == 0 {
            break;
        }
        out.extend_from_slice(&buf[..n]);
    }
    out
}

/// Compares every entry under `host` with the merged view at `path`; returns entries checked.
fn compare_dir(ov: &mut Overlay<RamDisk>, host: &Path, path: &str) -> usize {
    let mut names: Vec<String> = fs::read_dir(host)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    let listing = ov
        .list(path, 0, usize::MAX)
        .unwrap_or_else(|e| panic!("list {path}: {e}"));
    let listed: Vec<&str> = listing.entries.iter().map(|e| e.name).collect();
    assert_eq!(listed, names, "names in {path}");
    assert_eq!(listing.total, names.len());
    let mut checked = 0;
    for (name, entry) in names.iter().zip(&listing.entries) {
        let hp = host.join(name);
        let p = if path == "/" {
            format!("/{name}")
        } else {
            format!("{path}/{name}")
        };
        let meta = fs::symlink_metadata(&hp).unwrap();
        let st = ov.stat(&p).unwrap_or_else(|e| panic!("stat {p}: {e}"));
        assert_eq!(st, entry.stat, "list and stat agree on {p}");
        assert_eq!(st.file_type, host_type(meta.file_type()), "type of {p}");
        assert_eq!(st.mode, meta.mode(), "mode of {p}");
        assert_eq!((st.uid, st.gid), (0, 0), "owner of {p}");
        assert_eq!(st.origin, Origin::Erofs);
        assert_eq!(st.mtime, 0, "mtime of {p} (-T0)");
        match st.file_type {
            FileType::Regular => {
                assert_eq!(st.size, meta.len(), "size of {p}");
                let want = fs::read(&hp).unwrap();
                // Odd piece sizes cross block and chunk boundaries at every offset class.
                let piece = if want.len() > 65536 { 65521 } else { 1000 };
                assert!(read_all(ov, &p, piece) == want, "contents of {p}");
            }
            FileType::Symlink => {
                let target = fs::read_link(&hp)
                    .unwrap()
                    .into_os_string()
                    .into_string()
                    .unwrap();
                assert_eq!(st.size, target.len() as u64, "size of link {p}");
                assert_eq!(ov.readlink(&p).unwrap(), target, "target of {p}");
            }
            FileType::Directory => checked += compare_dir(ov, &hp, &p),
            FileType::CharDevice | FileType::BlockDevice => {
                assert_eq!(st.rdev, erofs_rdev(meta.rdev()), "rdev of {p}");
            }
            FileType::Fifo | FileType::Socket => assert_eq!(st.size, 0),
        }
        checked += 1;
    }
    checked
}

#[test]
fn images_match_the_source_tree() {
    let Some(f) = fixtures() else { return };
    for (label, image) in images() {
        let mut ov = Overlay::new(Some(mount(image)), DEFAULT_OVERLAY_MAX);
        let checked = compare_dir(&mut ov, &f.staging, "/");
        let inos = ov.lower().unwrap().superblock().inos;
        // Every inode but the root was compared (the staged tree has no hard links).
        assert_eq!(
            checked as u64 + 1,
            inos,
            "{label}: entries compared vs inodes in image"
        );
        assert!(checked > 330, "{label}: only {checked} entries");
    }
}

#[test]
fn staged_tree_has_every_kind_of_entry() {
    let Some(f) = fixtures() else { return };
    let kinds: Vec<FileType> = [
        "big/4mib.bin",
        "bin/allbytes.bin",
        "etc/empty",
        "dev/fifo",
        "dev/socket",
        "longlink",
        "bigdir",
    ]
    .iter()
    .map(|p| host_type(fs::symlink_metadata(f.staging.join(p)).unwrap().file_type()))
    .collect();
    use FileType::*;
    assert_eq!(
        kinds,
        [Regular, Regular, Regular, Fifo, Socket, Symlink, Directory]
    );
    assert_eq!(
        fs::read(f.staging.join("bin/allbytes.bin")).unwrap(),
        (0..=255u8).collect::<Vec<_>>()
    );
    assert!(
        fs::read_link(f.staging.join("longlink"))
            .unwrap()
            .as_os_str()
            .len()
            > 512
    );
}

#[test]
fn fixture_build_is_reproducible() {
    let Some(f) = fixtures() else { return };
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = std::env::temp_dir().join(format!("irix7-fs-fixtures-again-{}", std::process::id()));
    let again = irix7_fixtures::build_fixture_images(repo, &out).unwrap();
    assert!(
        fs::read(&again[0]).unwrap() == f.plain,
        "plain image differs between builds"
    );
    assert!(
        fs::read(&again[1]).unwrap() == f.chunked,
        "chunked image differs between builds"
    );
    fs::remove_dir_all(&out).unwrap();
}

#[test]
fn layouts_are_the_ones_under_test() {
    let Some(f) = fixtures() else { return };
    let mut plain = mount(&f.plain);
    let mut chunked = mount(&f.chunked);
    assert_eq!(plain.superblock().feature_incompat, 0);
    assert_eq!(chunked.superblock().feature_incompat, INCOMPAT_CHUNKED_FILE);
    assert_eq!(plain.superblock().block_size(), 4096);
    let tail = plain.resolve("/big/tail.bin", true).unwrap().node;
    assert_eq!(tail.layout, Layout::FlatInline);
    let big = plain.resolve("/big/4mib.bin", true).unwrap().node;
    assert_eq!(big.layout, Layout::FlatPlain);
    let big = chunked.resolve("/big/4mib.bin", true).unwrap().node;
    assert_eq!(big.layout, Layout::ChunkBased);
    // /bigdir spans several blocks, so lookups really binary-search across blocks.
    let bigdir = plain.resolve("/bigdir", true).unwrap().node;
    assert!(bigdir.size > 3 * 4096, "bigdir is {} bytes", bigdir.size);
    for i in [0, 1, 77, 150, 298, 299] {
        let p = format!("/bigdir/entry-with-a-rather-long-file-name-{i:04}.txt");
        let ino = plain.resolve(&p, true).unwrap().node;
        let mut buf = [0u8; 32];
        let n = plain.read_at(&ino, 0, &mut buf).unwrap();
        assert_eq!(&buf[..n], format!("entry {i}\n").as_bytes());
    }
    assert!(
        plain
            .resolve("/bigdir/entry-with-a-rather-long-file-name-0300.txt", true)
            .is_err()
    );
    assert!(plain.resolve("/bigdir/a", true).is_err());
    assert!(plain.resolve("/bigdir/zzz", true).is_err());
}

#[test]
fn lru_counts_hits_misses_and_evictions_on_a_real_image() {
    let Some(f) = fixtures() else { return };
    let mut fs: Erofs<RamDisk> = mount(&f.plain);
    let after_mount = fs.cache_stats();
    assert_eq!(after_mount.capacity, 16);
    assert_eq!(after_mount.block_size, 4096);
    // The same small file twice: the second time is all hits.
    let motd = fs.resolve("/etc/motd", true).unwrap().node;
    let mut buf = [0u8; 64];
    fs.read_at(&motd, 0, &mut buf).unwrap();
    let once = fs.cache_stats();
    fs.read_at(&motd, 0, &mut buf).unwrap();
    let twice = fs.cache_stats();
    assert_eq!(twice.misses, once.misses);
    assert!(twice.hits > once.hits);
    // Streaming 4 MiB in block-sized pieces goes around the cache: metadata stays cached.
    let big = fs.resolve("/big/4mib.bin", true).unwrap().node;
    let mut chunk = vec![0u8; 8192];
    let mut off = 0;
    while off < big.size {
        off += fs.read_at(&big, off, &mut chunk).unwrap() as u64;
    }
    let direct = fs.cache_stats();
    assert_eq!(direct.direct_blocks, 1024, "{direct:?}");
    assert_eq!(direct.misses, twice.misses, "{direct:?}");
    fs.read_at(&motd, 0, &mut buf).unwrap();
    assert_eq!(fs.cache_stats().misses, twice.misses, "motd still cached");
    // Unaligned small reads go through the cache, which then evicts but stays at 16 blocks.
    let mut small = vec![0u8; 1000];
    let mut off = 1;
    while off < big.size {
        off += fs.read_at(&big, off, &mut small).unwrap() as u64;
    }
    let streamed = fs.cache_stats();
    assert!(streamed.misses >= twice.misses + 1024, "{streamed:?}");
    assert!(streamed.evictions >= 1024 - 16, "{streamed:?}");
    assert_eq!(streamed.resident, 16);
}

#[test]
fn walk_of_clean_images_finds_no_errors() {
    for (label, image) in images() {
        let stats = walk_all(&mut mount(image));
        assert_eq!(stats.errors, 0, "{label}: {stats:?}");
        assert!(stats.nodes > 330, "{label}: {stats:?}");
    }
}

#[test]
fn real_lz4_image_is_refused_naming_the_feature() {
    let Some(f) = fixtures() else { return };
    let out = std::env::temp_dir().join(format!("irix7-fs-lz4-{}.erofs", std::process::id()));
    let status = std::process::Command::new("mkfs.erofs")
        .args(["-T0", "--all-root", "-x-1", "--quiet", "-zlz4hc"])
        .arg(&out)
        .arg(f.staging.join("etc"))
        .status()
        .unwrap();
    assert!(status.success());
    let image = fs::read(&out).unwrap();
    fs::remove_file(&out).unwrap();
    let err = Erofs::mount(RamDisk::new(image))
        .err()
        .expect("lz4 image must be refused");
    assert_eq!(
        err.to_string(),
        "E_NOTSUP: image uses LZ4 compression (feature_incompat 0x1); \
this reader supports uncompressed images, optionally with chunk-based files"
    );
}
