//! Hand-built images for what mkfs.erofs 1.5 never writes: 8-byte chunk indexes, chunk holes,
//! whole-file holes, extended inodes, 512-byte blocks, forbidden feature bits.

use crate::hil::block::RamDisk;
use crate::services::fs::erofs::{Erofs, NULL_ADDR, SUPERBLOCK_OFFSET, checksum};
use crate::services::fs::error::Errno;
use crate::services::fs::stat::FileType;

/// Builds an image: superblock, an inode area, data blocks.
pub struct Synth {
    bits: u32,
    meta_blk: u32,
    img: Vec<u8>,
    next_slot: u64,
    next_blk: u32,
}

pub const LAYOUT_PLAIN: u16 = 0;
pub const LAYOUT_INLINE: u16 = 2;
pub const LAYOUT_CHUNK: u16 = 4;

impl Synth {
    /// `bits`: log2 block size; 4 blocks of inodes follow the superblock.
    pub fn new(bits: u32) -> Self {
        let bs = 1usize << bits;
        let meta_blk = (2048usize.div_ceil(bs)) as u32;
        Synth {
            bits,
            meta_blk,
            img: vec![0; bs * (meta_blk as usize + 4)],
            next_slot: 0,
            next_blk: meta_blk + 4,
        }
    }

    fn bs(&self) -> usize {
        1 << self.bits
    }

    /// Reserves `slots` 32-byte inode slots; returns the first nid.
    pub fn alloc_nid(&mut self, slots: u64) -> u64 {
        let nid = self.next_slot;
        self.next_slot += slots;
        assert!(
            self.next_slot * 32 <= 4 * self.bs() as u64,
            "inode area full"
        );
        nid
    }

    fn iloc(&self, nid: u64) -> usize {
        self.meta_blk as usize * self.bs() + nid as usize * 32
    }

    /// Appends data blocks holding `data`; returns the first block address.
    pub fn add_blocks(&mut self, data: &[u8]) -> u32 {
        let blk = self.next_blk;
        let n = data.len().div_ceil(self.bs()).max(1);
        self.img.resize((blk as usize + n) * self.bs(), 0);
        let at = blk as usize * self.bs();
        self.img[at..at + data.len()].copy_from_slice(data);
        self.next_blk += n as u32;
        blk
    }

    /// Writes a compact inode at `nid`, returning its byte address.
    pub fn compact(&mut self, nid: u64, layout: u16, mode: u16, size: u32, i_u: u32) -> usize {
        let at = self.iloc(nid);
        let b = &mut self.img[at..at + 32];
        b.fill(0);
        b[0..2].copy_from_slice(&(layout << 1).to_le_bytes());
        b[4..6].copy_from_slice(&mode.to_le_bytes());
        b[6..8].copy_from_slice(&1u16.to_le_bytes());
        b[8..12].copy_from_slice(&size.to_le_bytes());
        b[16..20].copy_from_slice(&i_u.to_le_bytes());
        b[20..24].copy_from_slice(&(nid as u32).to_le_bytes());
        at
    }

    /// Writes an extended FLAT_INLINE inode at `nid` (two slots), gid 7 and nlink 3.
    pub fn extended(&mut self, nid: u64, mode: u16, size: u64, i_u: u32, uid: u32, mtime: u64) {
        let at = self.iloc(nid);
        let b = &mut self.img[at..at + 64];
        b.fill(0);
        b[0..2].copy_from_slice(&((LAYOUT_INLINE << 1) | 1).to_le_bytes());
        b[4..6].copy_from_slice(&mode.to_le_bytes());
        b[8..16].copy_from_slice(&size.to_le_bytes());
        b[16..20].copy_from_slice(&i_u.to_le_bytes());
        b[24..28].copy_from_slice(&uid.to_le_bytes());
        b[28..32].copy_from_slice(&7u32.to_le_bytes());
        b[32..40].copy_from_slice(&mtime.to_le_bytes());
        b[44..48].copy_from_slice(&3u32.to_le_bytes());
    }

    /// Writes raw bytes at a byte address.
    pub fn poke(&mut self, at: usize, bytes: &[u8]) {
        self.img[at..at + bytes.len()].copy_from_slice(bytes);
    }

    /// Writes directory `nid` (FLAT_PLAIN) whose entries are `(name, nid, type)`; `.` and `..`
    /// are added. One block per `per_block` entries.
    pub fn dir(&mut self, nid: u64, parent: u64, entries: &[(&str, u64, u8)], per_block: usize) {
        let mut all: Vec<(Vec<u8>, u64, u8)> =
            vec![(b".".to_vec(), nid, 2), (b"..".to_vec(), parent, 2)];
        all.extend(
            entries
                .iter()
                .map(|(n, i, t)| (n.as_bytes().to_vec(), *i, *t)),
        );
        all.sort();
        let mut data = Vec::new();
        for chunk in all.chunks(per_block) {
            let mut block = vec![0u8; self.bs()];
            let mut nameoff = chunk.len() * 12;
            for (i, (name, ino, ft)) in chunk.iter().enumerate() {
                block[i * 12..i * 12 + 8].copy_from_slice(&ino.to_le_bytes());
                block[i * 12 + 8..i * 12 + 10].copy_from_slice(&(nameoff as u16).to_le_bytes());
                block[i * 12 + 10] = *ft;
                block[nameoff..nameoff + name.len()].copy_from_slice(name);
                nameoff += name.len();
            }
            data.extend_from_slice(&block);
        }
        let blk = self.add_blocks(&data);
        let last_len = data.len() - self.bs() + {
            let chunk = all.chunks(per_block).last().unwrap();
            chunk.len() * 12 + chunk.iter().map(|c| c.0.len()).sum::<usize>()
        };
        self.compact(nid, LAYOUT_PLAIN, 0o040755, last_len as u32, blk);
    }

    /// The finished image with root `root_nid`, incompat bits and (if `csum`) a checksum.
    pub fn finish(&self, root_nid: u16, incompat: u32, csum: bool) -> Vec<u8> {
        let mut img = self.img.clone();
        let sb = &mut img[SUPERBLOCK_OFFSET..SUPERBLOCK_OFFSET + 128];
        sb[0..4].copy_from_slice(&0xE0F5_E1E2u32.to_le_bytes());
        sb[8..12].copy_from_slice(&(u32::from(csum)).to_le_bytes());
        sb[12] = self.bits as u8;
        sb[14..16].copy_from_slice(&root_nid.to_le_bytes());
        sb[16..24].copy_from_slice(&self.next_slot.to_le_bytes());
        sb[36..40].copy_from_slice(&self.next_blk.to_le_bytes());
        sb[40..44].copy_from_slice(&self.meta_blk.to_le_bytes());
        sb[80..84].copy_from_slice(&incompat.to_le_bytes());
        if csum {
            fix_checksum(&mut img);
        }
        img
    }
}

/// Recomputes the superblock checksum of a 4096-byte- or smaller-block image in place.
pub fn fix_checksum(img: &mut [u8]) {
    let bits = img[SUPERBLOCK_OFFSET + 12];
    let bs = 1usize << bits.clamp(9, 12);
    let len = if bs <= SUPERBLOCK_OFFSET {
        bs
    } else {
        bs - SUPERBLOCK_OFFSET
    };
    let mut area = img[SUPERBLOCK_OFFSET..SUPERBLOCK_OFFSET + len].to_vec();
    let sum = checksum(&mut area);
    img[SUPERBLOCK_OFFSET + 4..SUPERBLOCK_OFFSET + 8].copy_from_slice(&sum.to_le_bytes());
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

/// An image with one file per interesting layout; returns it and the files' expected contents.
fn layouts_image(bits: u32) -> (Vec<u8>, Vec<(&'static str, Vec<u8>)>) {
    let mut s = Synth::new(bits);
    let bs = 1usize << bits;
    let root = s.alloc_nid(1);
    let mut files = Vec::new();
    let mut entries = Vec::new();

    // Chunk-based, 8-byte indexes, chunks of 2 blocks, chunk 1 a hole, last chunk partial.
    let d0 = pattern(2 * bs, 1);
    let d2 = pattern(bs + 100, 2);
    let size = 4 * bs + bs + 100;
    let (c0, c2) = (s.add_blocks(&d0), s.add_blocks(&d2));
    let nid = s.alloc_nid(2);
    let at = s.compact(nid, LAYOUT_CHUNK, 0o100644, size as u32, 0x20 | 1);
    for (i, blk) in [c0, NULL_ADDR, c2].into_iter().enumerate() {
        let mut e = [0u8; 8];
        e[4..8].copy_from_slice(&blk.to_le_bytes());
        s.poke(at + 32 + i * 8, &e);
    }
    let mut want = d0.clone();
    want.extend(vec![0; 2 * bs]);
    want.extend(&d2);
    files.push(("indexed", want));
    entries.push(("indexed", nid, 1));

    // Chunk-based, 4-byte block map, one-block chunks, a hole in the middle.
    let b0 = s.add_blocks(&pattern(bs, 3));
    let b2 = s.add_blocks(&pattern(bs, 4));
    let nid = s.alloc_nid(2);
    let at = s.compact(nid, LAYOUT_CHUNK, 0o100600, 3 * bs as u32, 0);
    for (i, blk) in [b0, NULL_ADDR, b2].into_iter().enumerate() {
        s.poke(at + 32 + i * 4, &blk.to_le_bytes());
    }
    let mut want = pattern(bs, 3);
    want.extend(vec![0; bs]);
    want.extend(pattern(bs, 4));
    files.push(("blockmap", want));
    entries.push(("blockmap", nid, 1));

    // FLAT_PLAIN whole-file hole.
    let nid = s.alloc_nid(1);
    s.compact(nid, LAYOUT_PLAIN, 0o100644, 3 * bs as u32 + 5, NULL_ADDR);
    files.push(("sparse", vec![0; 3 * bs + 5]));
    entries.push(("sparse", nid, 1));

    // FLAT_INLINE: one block out of line, a 10-byte tail after an extended inode.
    let blk = s.add_blocks(&pattern(bs, 5));
    let nid = s.alloc_nid(3);
    s.extended(nid, 0o100755, bs as u64 + 10, blk, 70_000, 1_700_000_000);
    let at = s.iloc(nid) + 64;
    s.poke(at, b"tail bytes");
    let mut want = pattern(bs, 5);
    want.extend(b"tail bytes");
    files.push(("inline", want));
    entries.push(("inline", nid, 1));

    // A device node and a symlink with an inline target.
    let nid_dev = s.alloc_nid(1);
    s.compact(nid_dev, LAYOUT_PLAIN, 0o020644, 0, 0x0103);
    entries.push(("null", nid_dev, 3));
    let nid_link = s.alloc_nid(2);
    s.compact(nid_link, LAYOUT_INLINE, 0o120777, 7, 0);
    s.poke(s.iloc(nid_link) + 32, b"indexed");
    entries.push(("tolink", nid_link, 7));

    s.dir(root, root, &entries, 3);
    (s.finish(root as u16, 0x4, true), files)
}

fn mount(img: Vec<u8>) -> Erofs<RamDisk> {
    Erofs::mount(RamDisk::new(img)).unwrap_or_else(|e| panic!("mount: {e}"))
}

#[test]
fn every_layout_reads_back_at_every_block_size() {
    for bits in 9..=12 {
        let (img, files) = layouts_image(bits);
        let mut fs = mount(img);
        assert_eq!(fs.superblock().block_size(), 1 << bits);
        for (name, want) in &files {
            let ino = fs.resolve(&format!("/{name}"), true).unwrap().node;
            assert_eq!(ino.size, want.len() as u64, "{name} at 2^{bits}");
            // Read in 333-byte pieces from every offset class, then one unaligned middle read.
            let mut got = Vec::new();
            let mut buf = [0u8; 333];
            loop {
                let n = fs.read_at(&ino, got.len() as u64, &mut buf).unwrap();
                if n == 0 {
                    break;
                }
                got.extend_from_slice(&buf[..n]);
            }
            assert!(got == *want, "{name} at 2^{bits}");
            let mut mid = vec![0u8; want.len() / 2];
            let n = fs.read_at(&ino, 7, &mut mid).unwrap();
            assert_eq!(&mid[..n], &want[7..7 + n]);
        }
        // Multi-block directory (3 entries per block) with binary search, both ways.
        let names: Vec<String> = fs
            .read_dir(&fs.root().clone())
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
        assert_eq!(
            names,
            ["blockmap", "indexed", "inline", "null", "sparse", "tolink"]
        );
        let root = fs.root().clone();
        assert!(fs.lookup(&root, "nothing").unwrap().is_none());
        assert!(fs.lookup(&root, "a").unwrap().is_none());
        assert!(fs.lookup(&root, "zzz").unwrap().is_none());
        let ext = fs.resolve("/inline", true).unwrap().node;
        assert!(ext.extended);
        let st = ext.stat();
        assert_eq!(
            (st.uid, st.gid, st.nlink, st.mtime, st.mode),
            (70_000, 7, 3, 1_700_000_000, 0o100755)
        );
        let dev = fs.resolve("/null", false).unwrap().node;
        assert_eq!((dev.file_type, dev.rdev), (FileType::CharDevice, 0x0103));
        assert_eq!(fs.resolve("/tolink", true).unwrap().path, "/indexed");
        assert_eq!(fs.cache_stats().block_size, 1 << bits);
    }
}

#[test]
fn forbidden_features_are_refused_by_name() {
    let (img, _) = layouts_image(12);
    let cases = [
        (0x1, "LZ4 compression (feature_incompat 0x1)"),
        (0x2, "compression configs"),
        (0x8, "device table"),
        (0x10, "tail packing"),
        (0x20, "fragments"),
        (0x40, "xattr name prefixes"),
        (0x80, "48-bit"),
        (0x100, "metadata box"),
        (
            0x4000_0000,
            "an unknown feature (feature_incompat 0x40000000)",
        ),
    ];
    for (bit, words) in cases {
        let mut bad = img.clone();
        bad[SUPERBLOCK_OFFSET + 80..SUPERBLOCK_OFFSET + 84]
            .copy_from_slice(&(0x4 | bit as u32).to_le_bytes());
        fix_checksum(&mut bad);
        let err = Erofs::mount(RamDisk::new(bad)).err().expect("must refuse");
        assert_eq!(err.code, Errno::NotSup, "{err}");
        assert!(err.message.contains(words), "{err}");
        assert!(
            err.to_string().starts_with("E_NOTSUP: image uses "),
            "{err}"
        );
    }
}

#[test]
fn bad_superblocks_are_refused() {
    let (img, _) = layouts_image(12);
    let patch = |off: usize, bytes: &[u8], fix: bool| {
        let mut bad = img.clone();
        bad[SUPERBLOCK_OFFSET + off..SUPERBLOCK_OFFSET + off + bytes.len()].copy_from_slice(bytes);
        if fix {
            fix_checksum(&mut bad);
        }
        Erofs::mount(RamDisk::new(bad)).err().expect("must refuse")
    };
    assert_eq!(patch(0, &[0; 4], true).code, Errno::Corrupt);
    assert_eq!(patch(12, &[13], true).code, Errno::NotSup);
    assert_eq!(patch(12, &[8], true).code, Errno::Corrupt);
    assert_eq!(patch(12, &[200], true).code, Errno::Corrupt);
    let dirblk = patch(90, &[1], true);
    assert_eq!(dirblk.code, Errno::NotSup, "{dirblk}");
    let sum = patch(100, &[0x55], false);
    assert_eq!(sum.code, Errno::Corrupt);
    assert!(sum.message.contains("checksum"), "{sum}");
    let root_not_dir = patch(14, &1u16.to_le_bytes(), true);
    assert_eq!(root_not_dir.code, Errno::Corrupt, "{root_not_dir}");
    let too_big = patch(36, &u32::MAX.to_le_bytes(), true);
    assert!(too_big.message.contains("truncated"), "{too_big}");
    // A tiny or empty device.
    for len in [0, 100, 1100] {
        let err = Erofs::mount(RamDisk::new(img[..len].to_vec()))
            .err()
            .unwrap();
        assert_eq!(err.code, Errno::Corrupt, "{len}: {err}");
    }
}

#[test]
fn chunk_on_an_extra_device_is_corrupt() {
    let mut s = Synth::new(12);
    let root = s.alloc_nid(1);
    let blk = s.add_blocks(&[1; 4096]);
    let nid = s.alloc_nid(1);
    let at = s.compact(nid, LAYOUT_CHUNK, 0o100644, 4096, 0x20);
    let mut e = [0u8; 8];
    e[2..4].copy_from_slice(&1u16.to_le_bytes());
    e[4..8].copy_from_slice(&blk.to_le_bytes());
    s.poke(at + 32, &e);
    s.dir(root, root, &[("f", nid, 1)], 10);
    let mut fs = mount(s.finish(root as u16, 0x4, true));
    let ino = fs.resolve("/f", true).unwrap().node;
    let err = fs.read_at(&ino, 0, &mut [0; 16]).unwrap_err();
    assert_eq!(err.code, Errno::Corrupt, "{err}");
}

#[test]
fn directory_cycles_and_self_links_stay_bounded() {
    // A subdirectory entry that points back at the root: paths through it are finite, and the
    // resolver never loops on its own.
    let mut s = Synth::new(12);
    let root = s.alloc_nid(1);
    let link = s.alloc_nid(2);
    s.compact(link, LAYOUT_INLINE, 0o120777, 4, 0);
    s.poke(s.iloc(link) + 32, b"self");
    s.dir(root, root, &[("again", root, 2), ("self", link, 7)], 10);
    let mut fs = mount(s.finish(root as u16, 0, true));
    let deep = "/again".repeat(200);
    assert_eq!(fs.resolve(&deep, true).unwrap().node.nid, root);
    assert_eq!(fs.resolve("/self", true).unwrap_err().code, Errno::Loop);
    let stats = super::walk::walk_all(&mut fs);
    assert!(stats.nodes > 10, "{stats:?}");
}

#[test]
fn huge_sizes_and_offsets_never_overflow() {
    let layouts = [
        (LAYOUT_PLAIN, NULL_ADDR),
        (LAYOUT_PLAIN, 5),
        (LAYOUT_INLINE, 5),
        (LAYOUT_INLINE, NULL_ADDR),
        (LAYOUT_CHUNK, 0),
        (LAYOUT_CHUNK, 0x20 | 31),
        (LAYOUT_CHUNK, 31),
    ];
    for (layout, i_u) in layouts {
        for size in [u64::MAX, u64::MAX - 1, 1 << 63, (1 << 44) + 1, 4097] {
            let mut s = Synth::new(12);
            let root = s.alloc_nid(1);
            let nid = s.alloc_nid(4);
            s.extended(nid, 0o100644, size, i_u, 0, 0);
            let at = s.iloc(nid);
            s.poke(at, &((layout << 1) | 1).to_le_bytes());
            s.dir(root, root, &[("f", nid, 1)], 10);
            let mut fs = mount(s.finish(root as u16, 0x4, true));
            let ino = fs.resolve("/f", true).unwrap().node;
            assert_eq!(ino.size, size);
            let mut buf = vec![0u8; 8192];
            for off in [0, 4095, size / 2, size - 4097, size - 1, size, u64::MAX] {
                if let Ok(n) = fs.read_at(&ino, off, &mut buf) {
                    assert!(n as u64 <= size.saturating_sub(off));
                    // A flat file with a NULL start block is one hole.
                    if layout != LAYOUT_CHUNK && i_u == NULL_ADDR && off < size - 4096 {
                        assert!(
                            buf[..n].iter().all(|&b| b == 0),
                            "{layout} {i_u:#x} {size} {off}"
                        );
                    }
                }
            }
        }
    }
}
