//! The merged view: overlay writes, whiteouts, directories and the memory cap.

use super::fixture::{fixtures, mount};
use crate::hil::block::RamDisk;
use crate::services::fs::erofs::Erofs;
use crate::services::fs::error::Errno;
use crate::services::fs::overlay::{
    DEFAULT_OVERLAY_MAX, ENTRY_OVERHEAD, Overlay, WriteMode, parse_overlay_max,
};
use crate::services::fs::stat::{FileType, Origin};

fn empty(cap: usize) -> Overlay<RamDisk> {
    Overlay::new(None, cap)
}

fn over_image() -> Option<Overlay<RamDisk>> {
    Some(Overlay::new(
        Some(mount(&fixtures()?.plain)),
        DEFAULT_OVERLAY_MAX,
    ))
}

fn content(ov: &mut Overlay<RamDisk>, path: &str) -> Vec<u8> {
    let f = ov.open(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut buf = vec![0u8; f.size() as usize];
    let n = ov.read_at(&f, 0, &mut buf).unwrap();
    buf.truncate(n);
    buf
}

fn names(ov: &mut Overlay<RamDisk>, path: &str) -> Vec<String> {
    ov.list(path, 0, usize::MAX)
        .unwrap()
        .entries
        .iter()
        .map(|e| e.name.to_string())
        .collect()
}

#[test]
fn write_modes_create_append_overwrite_truncate() {
    let mut ov = empty(1 << 20);
    let out = ov.write("/a.txt", b"hello", WriteMode::Truncate).unwrap();
    assert_eq!(
        (out.path.as_str(), out.size, out.created),
        ("/a.txt", 5, true)
    );
    assert_eq!(
        ov.write("a.txt", b" world", WriteMode::Append)
            .unwrap()
            .size,
        11
    );
    assert_eq!(content(&mut ov, "/a.txt"), b"hello world");
    ov.write("/a.txt", b"J", WriteMode::At(0)).unwrap();
    assert_eq!(content(&mut ov, "/a.txt"), b"Jello world");
    // Writing past the end leaves a zero-filled gap.
    let out = ov.write("/a.txt", b"!", WriteMode::At(14)).unwrap();
    assert!(!out.created);
    assert_eq!(content(&mut ov, "/a.txt"), b"Jello world\0\0\0!");
    ov.write("/a.txt", b"new", WriteMode::Truncate).unwrap();
    assert_eq!(content(&mut ov, "/a.txt"), b"new");
    // At on a new file starts with zeros.
    ov.write("/b", b"x", WriteMode::At(3)).unwrap();
    assert_eq!(content(&mut ov, "/b"), b"\0\0\0x");
    let st = ov.stat("/a.txt").unwrap();
    assert_eq!(
        (st.file_type, st.mode, st.size, st.uid, st.gid, st.origin),
        (FileType::Regular, 0o100644, 3, 0, 0, Origin::Overlay)
    );
    let mut piece = [0u8; 2];
    assert_eq!(ov.read("/a.txt", 1, &mut piece).unwrap(), 2);
    assert_eq!(&piece, b"ew");
    assert_eq!(ov.read("/a.txt", 3, &mut piece).unwrap(), 0);
    assert_eq!(ov.read("/a.txt", u64::MAX, &mut piece).unwrap(), 0);
}

#[test]
fn parents_must_exist_and_be_directories() {
    let mut ov = empty(1 << 20);
    assert_eq!(
        ov.write("/no/such", b"x", WriteMode::Truncate)
            .unwrap_err()
            .code,
        Errno::NoEnt
    );
    assert_eq!(ov.mkdir("/no/such").unwrap_err().code, Errno::NoEnt);
    ov.write("/f", b"x", WriteMode::Truncate).unwrap();
    assert_eq!(
        ov.write("/f/g", b"x", WriteMode::Truncate)
            .unwrap_err()
            .code,
        Errno::NotDir
    );
    assert_eq!(ov.mkdir("/f").unwrap_err().code, Errno::Exist);
    assert_eq!(ov.mkdir("/").unwrap_err().code, Errno::Exist);
    assert_eq!(ov.mkdir("/d").unwrap(), "/d");
    assert_eq!(ov.mkdir("/d/e/").unwrap(), "/d/e");
    assert_eq!(
        ov.write("/d", b"x", WriteMode::Truncate).unwrap_err().code,
        Errno::IsDir
    );
    assert_eq!(
        ov.write("/d/new/", b"x", WriteMode::Truncate)
            .unwrap_err()
            .code,
        Errno::IsDir
    );
    ov.write("/d/e/f", b"deep", WriteMode::Truncate).unwrap();
    let st = ov.stat("/d").unwrap();
    assert_eq!(
        (st.file_type, st.mode, st.origin),
        (FileType::Directory, 0o040755, Origin::Overlay)
    );
    assert_eq!(names(&mut ov, "/"), ["d", "f"]);
    assert_eq!(names(&mut ov, "/d"), ["e"]);
    assert_eq!(
        ov.write("/x", b"1", WriteMode::At(u64::MAX))
            .unwrap_err()
            .code,
        Errno::Inval
    );
}

#[test]
fn remove_refuses_non_empty_directories_unless_recursive() {
    let mut ov = empty(1 << 20);
    ov.mkdir("/d").unwrap();
    ov.mkdir("/d/sub").unwrap();
    ov.write("/d/sub/f", b"abc", WriteMode::Truncate).unwrap();
    assert_eq!(ov.remove("/d", false).unwrap_err().code, Errno::NotEmpty);
    assert_eq!(ov.remove("/", true).unwrap_err().code, Errno::Inval);
    assert_eq!(ov.remove("/nope", true).unwrap_err().code, Errno::NoEnt);
    ov.remove("/d/sub/f", false).unwrap();
    ov.remove("/d/sub", false).unwrap();
    ov.write("/d/g", b"abc", WriteMode::Truncate).unwrap();
    ov.remove("/d", true).unwrap();
    assert_eq!(ov.stat("/d/g").unwrap_err().code, Errno::NoEnt);
    assert_eq!(ov.usage().used, 0);
    assert_eq!(ov.usage().entries, 0);
}

#[test]
fn memory_cap_refuses_and_changes_nothing() {
    let cap = 1000;
    let mut ov = empty(cap);
    ov.write("/a", &[1; 100], WriteMode::Truncate).unwrap();
    let used = ov.usage().used;
    assert_eq!(used, "/a".len() + ENTRY_OVERHEAD + 100);
    let before = content(&mut ov, "/a");
    for mode in [WriteMode::Append, WriteMode::At(900), WriteMode::Truncate] {
        let err = ov.write("/a", &[2; 1000], mode).unwrap_err();
        assert_eq!(err.code, Errno::NoSpc, "{err}");
        assert!(err.message.contains("mcp.overlay_max"), "{err}");
    }
    let err = ov.write("/b", &[3; 900], WriteMode::Truncate).unwrap_err();
    assert_eq!(err.code, Errno::NoSpc);
    assert_eq!(content(&mut ov, "/a"), before);
    assert_eq!(ov.stat("/b").unwrap_err().code, Errno::NoEnt);
    assert_eq!(ov.usage().used, used);
    // Exactly up to the cap is fine; one more byte is not.
    let room = cap - used - ("/c".len() + ENTRY_OVERHEAD);
    ov.write("/c", &vec![4; room], WriteMode::Truncate).unwrap();
    assert_eq!(ov.usage().used, cap);
    assert_eq!(
        ov.write("/c", b"!", WriteMode::Append).unwrap_err().code,
        Errno::NoSpc
    );
    assert_eq!(ov.mkdir("/dir").unwrap_err().code, Errno::NoSpc);
    // Shrinking a file frees space.
    ov.write("/c", b"", WriteMode::Truncate).unwrap();
    assert_eq!(ov.usage().used, used + "/c".len() + ENTRY_OVERHEAD);
}

#[test]
fn whiteouts_hide_image_entries_and_recreation_works() {
    let Some(mut ov) = over_image() else { return };
    let etc_before = names(&mut ov, "/etc");
    assert!(etc_before.contains(&"motd".to_string()));
    ov.remove("/etc/motd", false).unwrap();
    assert_eq!(ov.stat("/etc/motd").unwrap_err().code, Errno::NoEnt);
    assert_eq!(
        ov.read("/link", 0, &mut [0; 4]).unwrap_err().code,
        Errno::NoEnt
    );
    let etc_after = names(&mut ov, "/etc");
    assert_eq!(etc_after.len(), etc_before.len() - 1);
    assert!(!etc_after.contains(&"motd".to_string()));
    // Recreate after the whiteout: an overlay file, and the link resolves to it again.
    let out = ov
        .write("/etc/motd", b"new motd\n", WriteMode::Append)
        .unwrap();
    assert!(out.created);
    assert_eq!(ov.stat("/etc/motd").unwrap().origin, Origin::Overlay);
    assert_eq!(content(&mut ov, "/link"), b"new motd\n");
    assert_eq!(names(&mut ov, "/etc"), etc_before);
    // Removing it again whites it out again.
    ov.remove("/etc/motd", false).unwrap();
    assert_eq!(ov.stat("/etc/motd").unwrap_err().code, Errno::NoEnt);
}

#[test]
fn image_directories_need_recursive_and_come_back_empty() {
    let Some(mut ov) = over_image() else { return };
    assert_eq!(ov.remove("/usr", false).unwrap_err().code, Errno::NotEmpty);
    ov.write("/usr/bin/extra", b"x", WriteMode::Truncate)
        .unwrap();
    ov.remove("/usr", true).unwrap();
    for p in ["/usr", "/usr/bin/hello.sh", "/usr/bin/extra", "/docs/irix7"] {
        assert_eq!(ov.stat(p).unwrap_err().code, Errno::NoEnt, "{p}");
    }
    assert!(!names(&mut ov, "/").contains(&"usr".to_string()));
    assert_eq!(ov.usage().entries, 1, "only the whiteout is left");
    // mkdir over the whiteout gives an empty directory: nothing of the image shows through.
    ov.mkdir("/usr").unwrap();
    assert!(names(&mut ov, "/usr").is_empty());
    assert_eq!(ov.stat("/usr/bin").unwrap_err().code, Errno::NoEnt);
    ov.remove("/usr", false).unwrap();
    assert_eq!(ov.stat("/usr").unwrap_err().code, Errno::NoEnt);
    // An empty image directory goes without `recursive`.
    ov.remove("/tmp/.keep", false).unwrap();
    ov.remove("/tmp", false).unwrap();
    assert_eq!(ov.stat("/tmp").unwrap_err().code, Errno::NoEnt);
}

#[test]
fn image_files_are_copied_up_on_partial_writes() {
    let Some(mut ov) = over_image() else { return };
    ov.write("/etc/hostname", b"-r4400\n", WriteMode::Append)
        .unwrap();
    assert_eq!(content(&mut ov, "/etc/hostname"), b"indy\n-r4400\n");
    ov.write("/etc/hostname", b"I", WriteMode::At(0)).unwrap();
    assert_eq!(content(&mut ov, "/etc/hostname"), b"Indy\n-r4400\n");
    // Through a symlink: the target is written, and its canonical path reported.
    let out = ov
        .write("/etc/hostname-abs", b"indigo\n", WriteMode::Truncate)
        .unwrap();
    assert_eq!(out.path, "/etc/hostname");
    assert_eq!(content(&mut ov, "/etc/hostname"), b"indigo\n");
    assert_eq!(
        ov.stat("/etc/hostname-abs").unwrap().file_type,
        FileType::Symlink
    );
    assert_eq!(ov.stat("/etc/hostname").unwrap().origin, Origin::Overlay);
    // Removing the link removes the link only.
    ov.remove("/etc/hostname-abs", false).unwrap();
    assert_eq!(content(&mut ov, "/etc/hostname"), b"indigo\n");
    // Special files and directories are not written.
    assert_eq!(
        ov.write("/dev/fifo", b"x", WriteMode::Append)
            .unwrap_err()
            .code,
        Errno::Inval
    );
    assert_eq!(
        ov.write("/etc", b"x", WriteMode::Append).unwrap_err().code,
        Errno::IsDir
    );
    // The 4 MiB file cannot be copied up under the default 4 MiB cap; nothing changes.
    let used = ov.usage();
    let err = ov
        .write("/big/4mib.bin", b"x", WriteMode::Append)
        .unwrap_err();
    assert_eq!(err.code, Errno::NoSpc);
    assert_eq!(ov.usage(), used);
    assert_eq!(ov.stat("/big/4mib.bin").unwrap().origin, Origin::Erofs);
    // Truncating it needs no copy-up.
    ov.write("/big/4mib.bin", b"small", WriteMode::Truncate)
        .unwrap();
    assert_eq!(ov.stat("/big/4mib.bin").unwrap().size, 5);
    assert_eq!(ov.readlink("/etc/hostname").unwrap_err().code, Errno::Inval);
}

#[test]
fn listing_merges_sorts_and_pages() {
    let Some(mut ov) = over_image() else { return };
    ov.write("/etc/aaa", b"1", WriteMode::Truncate).unwrap();
    ov.write(
        "/etc/passwd",
        b"root::0:0::/:/bin/sh\n",
        WriteMode::Truncate,
    )
    .unwrap();
    ov.mkdir("/etc/zz").unwrap();
    ov.remove("/etc/hostname", false).unwrap();
    let all = ov.list("/etc", 0, usize::MAX).unwrap();
    let got: Vec<(&str, Origin)> = all
        .entries
        .iter()
        .map(|e| (e.name, e.stat.origin))
        .collect();
    assert_eq!(
        got,
        [
            ("aaa", Origin::Overlay),
            ("empty", Origin::Erofs),
            ("hostname-abs", Origin::Erofs),
            ("motd", Origin::Erofs),
            ("passwd", Origin::Overlay),
            ("zz", Origin::Overlay),
        ]
    );
    assert_eq!(all.entries.get(4).unwrap().stat.size, 21);
    let page = ov.list("/etc", 2, 2).unwrap();
    assert_eq!(page.total, 6);
    let page: Vec<&str> = page.entries.iter().map(|e| e.name).collect();
    assert_eq!(page, ["hostname-abs", "motd"]);
    assert!(ov.list("/etc", 10, 5).unwrap().entries.is_empty());
    let big = ov.list("/bigdir", 295, 100).unwrap();
    assert_eq!((big.total, big.entries.len()), (300, 5));
    assert_eq!(
        big.entries.get(4).unwrap().name,
        "entry-with-a-rather-long-file-name-0299.txt"
    );
    // Through a symlink to a directory.
    assert_eq!(ov.list("/docs", 0, 10).unwrap().path, "/usr/share/doc");
}

#[test]
fn streaming_a_large_file_through_a_small_buffer() {
    let Some(f) = fixtures() else { return };
    let want = std::fs::read(f.staging.join("big/4mib.bin")).unwrap();
    for image in [&f.plain, &f.chunked] {
        let mut ov = Overlay::new(Some(mount(image)), DEFAULT_OVERLAY_MAX);
        let file = ov.open("/big/4mib.bin").unwrap();
        assert_eq!(file.size(), want.len() as u64);
        assert_eq!(file.origin(), Origin::Erofs);
        let mut buf = [0u8; 1500];
        let mut off = 0usize;
        while off < want.len() {
            let n = ov.read_at(&file, off as u64, &mut buf).unwrap();
            assert!(n > 0);
            assert!(buf[..n] == want[off..off + n], "at {off}");
            off += n;
        }
        assert_eq!(ov.read_at(&file, off as u64, &mut buf).unwrap(), 0);
    }
}

#[test]
fn handles_of_removed_overlay_files_fail_cleanly() {
    let mut ov = empty(1 << 20);
    ov.write("/f", b"abc", WriteMode::Truncate).unwrap();
    let h = ov.open("/f").unwrap();
    ov.remove("/f", false).unwrap();
    assert_eq!(
        ov.read_at(&h, 0, &mut [0; 3]).unwrap_err().code,
        Errno::NoEnt
    );
    assert_eq!(ov.open("/").unwrap_err().code, Errno::IsDir);
}

#[test]
fn overlay_max_values_parse() {
    assert_eq!(parse_overlay_max("4194304").unwrap(), DEFAULT_OVERLAY_MAX);
    assert_eq!(parse_overlay_max(" 4M ").unwrap(), DEFAULT_OVERLAY_MAX);
    assert_eq!(parse_overlay_max("512k").unwrap(), 512 * 1024);
    assert_eq!(parse_overlay_max("0").unwrap(), 0);
    for bad in [
        "",
        "M",
        "-1",
        "4G",
        "1.5M",
        "99999999999999999999",
        "\u{e9}",
    ] {
        assert_eq!(
            parse_overlay_max(bad).unwrap_err().code,
            Errno::Inval,
            "{bad:?}"
        );
    }
}

#[test]
fn an_overlay_without_an_image_is_an_empty_writable_root() {
    let err = Erofs::mount(RamDisk::new(vec![0; 8192]))
        .err()
        .expect("zeros are not an image");
    assert_eq!(err.code, Errno::Corrupt);
    assert!(err.message.contains("magic"), "{err}");
    let mut ov: Overlay<RamDisk> = Overlay::new(None, 1 << 16);
    assert!(ov.lower().is_none());
    assert!(names(&mut ov, "/").is_empty());
    ov.write("/scratch", b"works", WriteMode::Truncate).unwrap();
    assert_eq!(content(&mut ov, "/scratch"), b"works");
    let Some(f) = fixtures() else { return };
    let mut ov = Overlay::new(
        Some(Erofs::mount(RamDisk::new(f.plain.clone())).unwrap()),
        1 << 16,
    );
    // Raw sector access under the filesystem, as block.read uses it.
    use crate::hil::block::BlockDevice;
    let mut sector = [0u8; 512];
    ov.lower_mut()
        .unwrap()
        .device_mut()
        .read(2, 1, &mut sector)
        .unwrap();
    assert_eq!(&sector[..4], &0xE0F5_E1E2u32.to_le_bytes());
}
