//! The file tools end to end: the real MIPS module in the rig, the fixture images attached as
//! SCSI disks, every request through the rig's port forwarding.
//!
//! Needs `cargo xtask image` and `cargo xtask fixtures` (images and the staging tree under
//! `target/fixtures/`); without them each test says so and returns.

mod support;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use iris::image::find_repo_root;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use support::guest::{Guest, boot_guest_with};
use support::mcp::GuestClient;

fn fixtures_dir() -> PathBuf {
    find_repo_root().join("target/fixtures")
}

/// The fixture staging tree, or `None` (said) when `cargo xtask fixtures` has not run.
fn staging() -> Option<PathBuf> {
    let dir = fixtures_dir();
    let ok = ["rootfs.erofs", "rootfs-chunked.erofs", "rootfs-staging"]
        .iter()
        .all(|f| dir.join(f).exists());
    if !ok {
        println!(
            "skipped: no fixtures under {} (run `cargo xtask fixtures`)",
            dir.display()
        );
        return None;
    }
    Some(dir.join("rootfs-staging"))
}

/// Boots with `disks` attached (none at all when empty) and extra NVRAM variables.
fn boot_disks(env: &[&str], disks: &[(u8, PathBuf)]) -> Option<Guest> {
    let disks = disks.to_vec();
    boot_guest_with(
        env,
        move |o| {
            o.no_disk = disks.is_empty();
            o.disks = disks;
        },
        |_| {},
    )
}

/// A whole file through fs.read in base64 (following `next_offset`).
fn read_all(c: &mut GuestClient, path: &str) -> Vec<u8> {
    let mut out = Vec::new();
    let mut offset = 0u64;
    loop {
        let r = c.call(
            "fs.read",
            json!({"path": path, "encoding": "base64", "offset": offset, "max_output": 8 << 20}),
        );
        assert_ne!(r["isError"], true, "fs.read {path}: {r}");
        let meta = &r["structuredContent"];
        assert_eq!(
            r["content"].as_array().unwrap().len(),
            2,
            "data + metadata blocks"
        );
        let blob = &r["content"][0]["resource"];
        assert_eq!(blob["mimeType"], "application/octet-stream", "{path}");
        out.extend(STANDARD.decode(blob["blob"].as_str().unwrap()).unwrap());
        match meta["next_offset"].as_u64() {
            Some(n) => offset = n,
            None => return out,
        }
    }
}

/// Every name in a directory, through fs.list pages.
fn list_all(c: &mut GuestClient, path: &str) -> Vec<Value> {
    let mut out = Vec::new();
    let mut offset = 0;
    loop {
        let l = c.ok("fs.list", json!({"path": path, "offset": offset}));
        out.extend(l["entries"].as_array().unwrap().iter().cloned());
        match l["next_offset"].as_u64() {
            Some(n) => offset = n,
            None => return out,
        }
    }
}

fn type_of(m: &std::fs::Metadata) -> &'static str {
    let t = m.file_type();
    if t.is_symlink() {
        "symlink"
    } else if t.is_dir() {
        "dir"
    } else if t.is_file() {
        "file"
    } else if t.is_fifo() {
        "fifo"
    } else if t.is_socket() {
        "socket"
    } else if t.is_char_device() {
        "chardev"
    } else {
        "blockdev"
    }
}

/// Walks the whole tree through the tools and compares it with the staging tree; returns the
/// number of entries compared.
fn compare_tree(c: &mut GuestClient, staging: &Path) -> usize {
    let mut compared = 0;
    let mut dirs = vec![String::from("/")];
    while let Some(dir) = dirs.pop() {
        let host_dir = staging.join(dir.trim_start_matches('/'));
        let want: BTreeSet<String> = std::fs::read_dir(&host_dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        let listed = list_all(c, &dir);
        let got: BTreeSet<String> = listed
            .iter()
            .map(|e| e["name"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(got, want, "names in {dir}");
        for e in &listed {
            let name = e["name"].as_str().unwrap();
            let path = if dir == "/" {
                format!("/{name}")
            } else {
                format!("{dir}/{name}")
            };
            let host = host_dir.join(name);
            let m = std::fs::symlink_metadata(&host).unwrap();
            let st = c.ok("fs.stat", json!({"path": path}));
            let ty = type_of(&m);
            assert_eq!(st["type"], ty, "{path}");
            assert_eq!(e["type"], ty, "{path} (list)");
            assert_eq!(st["mode"], format!("{:06o}", m.mode()), "{path}");
            assert_eq!(e["mode"], st["mode"], "{path} (list)");
            assert_eq!(st["origin"], "erofs", "{path}");
            assert_eq!(
                (st["uid"].as_u64(), st["gid"].as_u64()),
                (Some(0), Some(0)),
                "{path}"
            );
            if ty != "dir" {
                assert_eq!(st["size"], m.len(), "{path}");
                assert_eq!(e["size"], m.len(), "{path} (list)");
            }
            match ty {
                "dir" => dirs.push(path.clone()),
                "file" => {
                    let data = read_all(c, &path);
                    assert!(data == std::fs::read(&host).unwrap(), "content of {path}");
                }
                "symlink" => {
                    let target = std::fs::read_link(&host)
                        .unwrap()
                        .into_os_string()
                        .into_string()
                        .unwrap();
                    if target.len() <= 512 {
                        assert_eq!(st["target"], target, "{path}");
                        assert_eq!(st["target_truncated"], false, "{path}");
                        assert_eq!(
                            c.ok("fs.readlink", json!({"path": path}))["target"],
                            target,
                            "{path}"
                        );
                    } else {
                        assert_eq!(st["target"], target[..512], "{path}");
                        assert_eq!(st["target_truncated"], true, "{path}");
                        let e = c.err("fs.readlink", json!({"path": path}));
                        assert!(e.starts_with("E_NAMETOOLONG: "), "{path}: {e}");
                    }
                }
                "chardev" | "blockdev" => {
                    let rdev = m.rdev();
                    let (major, minor) = (
                        (rdev >> 8) & 0xfff,
                        (rdev & 0xff) | ((rdev >> 12) & 0xfff00),
                    );
                    assert_eq!(
                        st["rdev"],
                        json!({"major": major, "minor": minor}),
                        "{path}"
                    );
                }
                _ => {}
            }
            compared += 1;
        }
    }
    compared
}

fn walk_matches_staging(image: &str) {
    let Some(staging) = staging() else { return };
    let Some(g) = boot_disks(&[], &[(2, fixtures_dir().join(image))]) else {
        return;
    };
    assert!(
        g.rig.wait_for_console(
            "fs: EROFS on SCSI target 2",
            std::time::Duration::from_secs(20)
        ),
        "mount line: {}",
        g.rig.console_text()
    );
    let mut c = GuestClient::new(&g);
    let n = compare_tree(&mut c, &staging);
    assert!(n > 330, "only {n} entries compared");
    let st = c.ok("status", json!({}));
    assert!(st["cache"]["misses"].as_u64().unwrap() > 0, "{st}");
    drop(c);
    g.rig.stop().unwrap();
}

#[test]
fn whole_plain_image_matches_the_source_tree() {
    walk_matches_staging("rootfs.erofs");
}

#[test]
fn whole_chunked_image_matches_the_source_tree() {
    walk_matches_staging("rootfs-chunked.erofs");
}

#[test]
fn overlay_write_remove_recreate_and_the_cap() {
    let Some(staging) = staging() else { return };
    let disks = [(2, fixtures_dir().join("rootfs.erofs"))];
    let Some(g) = boot_disks(&["mcp.overlay_max=64K"], &disks) else {
        return;
    };
    let mut c = GuestClient::new(&g);
    // Write, overwrite, read back.
    let w = c.ok("fs.write", json!({"path": "/tmp/note", "content": "first"}));
    assert_eq!(
        w,
        json!({"path": "/tmp/note", "size": 5, "written": 5, "created": true})
    );
    c.ok(
        "fs.write",
        json!({"path": "/tmp/note", "content": "second version"}),
    );
    let r = c.call("fs.read", json!({"path": "/tmp/note"}));
    assert_eq!(r["content"][0]["text"], "second version");
    let bin: Vec<u8> = (0..=255u8).rev().collect();
    c.ok(
        "fs.write",
        json!({"path": "/tmp/bin", "content": STANDARD.encode(&bin), "encoding": "base64"}),
    );
    assert_eq!(read_all(&mut c, "/tmp/bin"), bin);
    // Overwrite an image file: copied up, the image is untouched below.
    c.ok(
        "fs.write",
        json!({"path": "/etc/hostname", "content": "indy2\n"}),
    );
    assert_eq!(read_all(&mut c, "/etc/hostname"), b"indy2\n");
    // List shows the merged view.
    let names = |c: &mut GuestClient, p: &str| -> Vec<(String, String)> {
        list_all(c, p)
            .iter()
            .map(|e| {
                (
                    e["name"].as_str().unwrap().to_string(),
                    e["origin"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    };
    let tmp = names(&mut c, "/tmp");
    assert!(
        tmp.contains(&("note".into(), "overlay".into()))
            && tmp.contains(&("bin".into(), "overlay".into())),
        "{tmp:?}"
    );
    assert!(names(&mut c, "/etc").contains(&("hostname".into(), "overlay".into())));
    // Remove an image file (whiteout) and an overlay file.
    let r = c.ok("fs.remove", json!({"path": "/etc/passwd"}));
    assert_eq!(
        (r["origin"].clone(), r["whiteout"].clone()),
        (json!("erofs"), json!(true))
    );
    assert!(
        c.err("fs.stat", json!({"path": "/etc/passwd"}))
            .starts_with("E_NOENT: ")
    );
    assert!(!names(&mut c, "/etc").iter().any(|(n, _)| n == "passwd"));
    let r = c.ok("fs.remove", json!({"path": "/tmp/note"}));
    assert_eq!(
        (r["origin"].clone(), r["whiteout"].clone()),
        (json!("overlay"), json!(false))
    );
    assert!(
        c.err("fs.read", json!({"path": "/tmp/note"}))
            .starts_with("E_NOENT: ")
    );
    // Recreate after the whiteout.
    let w = c.ok(
        "fs.write",
        json!({"path": "/etc/passwd", "content": "root::0:0:root:/:/bin/sh\n"}),
    );
    assert_eq!(w["created"], true);
    assert_eq!(
        c.ok("fs.stat", json!({"path": "/etc/passwd"}))["origin"],
        "overlay"
    );
    // Directories: mkdir, refuse a non-empty remove, recursive remove of an image directory.
    c.ok("fs.mkdir", json!({"path": "/tmp/d"}));
    c.ok("fs.write", json!({"path": "/tmp/d/f", "content": "x"}));
    assert!(
        c.err("fs.remove", json!({"path": "/tmp/d"}))
            .starts_with("E_NOTEMPTY: ")
    );
    assert!(
        c.err("fs.remove", json!({"path": "/usr"}))
            .starts_with("E_NOTEMPTY: ")
    );
    c.ok("fs.remove", json!({"path": "/usr", "recursive": true}));
    assert!(
        c.err("fs.stat", json!({"path": "/usr/bin/hello.sh"}))
            .starts_with("E_NOENT: ")
    );
    // The cap (64 KiB here): a write past it fails and changes nothing.
    let used_before = read_all(&mut c, "/etc/hostname");
    let e = c.err(
        "fs.write",
        json!({"path": "/tmp/big", "content": "y".repeat(70_000)}),
    );
    assert!(e.starts_with("E_NOSPC: overlay full"), "{e}");
    assert!(
        c.err("fs.stat", json!({"path": "/tmp/big"}))
            .starts_with("E_NOENT: ")
    );
    let e = c.err(
        "fs.write",
        json!({"path": "/etc/hostname", "content": "z".repeat(70_000)}),
    );
    assert!(e.starts_with("E_NOSPC: "), "{e}");
    assert_eq!(read_all(&mut c, "/etc/hostname"), used_before);
    // Malformed paths get errors that say what is wrong.
    let long = format!("/{}", "n".repeat(4096));
    for (path, want) in [
        ("/etc\0/motd", "E_INVAL: the path has a NUL byte"),
        ("/etc//motd", "E_INVAL: empty component"),
        (long.as_str(), "E_NAMETOOLONG: the path is 4097 bytes"),
        ("/etc/../..", "E_INVAL: \"..\" goes above the root"),
    ] {
        let e = c.err("fs.stat", json!({ "path": path }));
        assert!(e.starts_with(want), "{path:?}: {e}");
    }
    // The image itself still reads as built.
    let motd = std::fs::read(staging.join("etc/motd")).unwrap();
    assert_eq!(read_all(&mut c, "/link"), motd);
    drop(c);
    g.rig.stop().unwrap();
}

/// A copy of the plain fixture with `bits` set in feature_incompat and the checksum re-sealed.
fn with_incompat(bits: u32, name: &str) -> PathBuf {
    let mut img = std::fs::read(fixtures_dir().join("rootfs.erofs")).unwrap();
    let sb = irix7_mcp::services::fs::erofs::SUPERBLOCK_OFFSET;
    let old = u32::from_le_bytes(img[sb + 80..sb + 84].try_into().unwrap());
    img[sb + 80..sb + 84].copy_from_slice(&(old | bits).to_le_bytes());
    reseal(&mut img);
    let path = std::env::temp_dir().join(format!("iris-fs-{}-{name}.erofs", std::process::id()));
    std::fs::write(&path, img).unwrap();
    path
}

/// Recomputes the superblock checksum (4 KiB blocks: the rest of block 0 after byte 1024).
fn reseal(img: &mut [u8]) {
    let sb = irix7_mcp::services::fs::erofs::SUPERBLOCK_OFFSET;
    let mut area = img[sb..4096].to_vec();
    let sum = irix7_mcp::services::fs::erofs::checksum(&mut area);
    img[sb + 4..sb + 8].copy_from_slice(&sum.to_le_bytes());
}

#[test]
fn compressed_and_unknown_features_are_refused_by_name() {
    let Some(_) = staging() else { return };
    for (bits, name, want) in [
        (0x1, "lz4", "LZ4 compression (feature_incompat 0x1)"),
        (
            0x4000,
            "unknown",
            "an unknown feature (feature_incompat 0x4000)",
        ),
    ] {
        let path = with_incompat(bits, name);
        let Some(g) = boot_disks(&[], &[(2, path.clone())]) else {
            return;
        };
        assert!(
            g.rig
                .wait_for_console("not mounted: E_NOTSUP", std::time::Duration::from_secs(20)),
            "{}",
            g.rig.console_text()
        );
        let mut c = GuestClient::new(&g);
        for tool in ["fs.stat", "fs.read", "fs.list"] {
            let e = c.err(tool, json!({"path": "/etc/motd"}));
            assert!(
                e.starts_with("E_NOTSUP: image uses ") && e.contains(want),
                "{tool}: {e}"
            );
        }
        // The raw disk is still readable, and status says there is no cache.
        let r = c.call("block.read", json!({"lba": 2}));
        let sector = STANDARD
            .decode(r["content"][0]["text"].as_str().unwrap())
            .unwrap();
        assert_eq!(
            &sector[..4],
            &irix7_mcp::services::fs::erofs::EROFS_MAGIC.to_le_bytes()
        );
        assert!(c.ok("status", json!({})).get("cache").is_none());
        drop(c);
        g.rig.stop().unwrap();
        let _ = std::fs::remove_file(path);
    }
}

#[test]
fn no_disk_answers_enodev_and_block_read_reaches_other_targets() {
    let Some(_) = staging() else { return };
    let Some(g) = boot_disks(&[], &[]) else {
        return;
    };
    assert!(g.rig.wait_for_console(
        "fs: no filesystem: SCSI target 2",
        std::time::Duration::from_secs(20)
    ));
    let mut c = GuestClient::new(&g);
    let e = c.err("fs.stat", json!({"path": "/"}));
    assert!(e.starts_with("E_NODEV: "), "{e}");
    assert!(
        c.err("block.read", json!({"lba": 0}))
            .starts_with("E_NODEV: SCSI target 2")
    );
    drop(c);
    g.rig.stop().unwrap();

    // mcp.disk picks another target; block.read reaches any attached one.
    let chunked = fixtures_dir().join("rootfs-chunked.erofs");
    let plain = fixtures_dir().join("rootfs.erofs");
    let Some(g) = boot_disks(&["mcp.disk=5"], &[(5, chunked.clone()), (2, plain.clone())]) else {
        return;
    };
    assert!(g.rig.wait_for_console(
        "fs: EROFS on SCSI target 5",
        std::time::Duration::from_secs(20)
    ));
    let mut c = GuestClient::new(&g);
    assert_eq!(
        c.ok("fs.stat", json!({"path": "/etc/motd"}))["type"],
        "file"
    );
    let want = std::fs::read(&plain).unwrap();
    let r = c.call("block.read", json!({"target": 2, "lba": 8, "count": 128}));
    let meta = &r["structuredContent"];
    assert_eq!(meta["device_blocks"], want.len() / 512);
    let data = STANDARD
        .decode(r["content"][0]["text"].as_str().unwrap())
        .unwrap();
    assert!(data == want[8 * 512..136 * 512]);
    let last = std::fs::metadata(&chunked).unwrap().len() / 512;
    assert!(
        c.err("block.read", json!({"target": 5, "lba": last}))
            .starts_with("E_RANGE: ")
    );
    assert!(
        c.err("block.read", json!({"target": 6, "lba": 0}))
            .starts_with("E_NODEV: ")
    );
    let r = c.call("block.read", json!({"lba": 0, "count": 129}));
    assert!(
        r["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("E_INVAL")
    );
    drop(c);
    g.rig.stop().unwrap();
}

/// Paths of the staging tree (the first 20 of `/bigdir`), for walking an image whose
/// directories may no longer list them.
fn staging_paths(staging: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut dirs = vec![(staging.to_path_buf(), String::new())];
    while let Some((host, path)) = dirs.pop() {
        let mut names: Vec<String> = std::fs::read_dir(&host)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        for name in names
            .into_iter()
            .take(if path == "/bigdir" { 20 } else { usize::MAX })
        {
            let p = format!("{path}/{name}");
            if std::fs::symlink_metadata(host.join(&name))
                .unwrap()
                .is_dir()
            {
                dirs.push((host.join(&name), p.clone()));
            }
            out.push(p);
        }
    }
    out
}

/// Walks a (possibly corrupt) image through the tools: whatever fs.list shows from the root
/// (bounded), then every known path; returns (answers without error, error answers).
fn walk_anything(c: &mut GuestClient, known: &[String]) -> (usize, usize) {
    let (mut ok, mut errors) = (0, 0);
    let mut count = |r: Value| {
        if r["isError"] == true {
            errors += 1;
        } else {
            ok += 1;
        }
    };
    let mut paths: Vec<String> = Vec::new();
    let mut dirs = vec![(String::from("/"), 0)];
    while let Some((dir, depth)) = dirs.pop() {
        let l = c.call("fs.list", json!({"path": dir, "limit": 64}));
        let entries = l["structuredContent"]["entries"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        count(l);
        for e in entries {
            let name = e["name"].as_str().unwrap_or("?");
            let path = if dir == "/" {
                format!("/{name}")
            } else {
                format!("{dir}/{name}")
            };
            if e["type"] == "dir" && depth < 6 && paths.len() < 150 {
                dirs.push((path.clone(), depth + 1));
            }
            paths.push(path);
        }
    }
    paths.truncate(150);
    paths.extend(known.iter().cloned());
    for path in &paths {
        for (tool, args) in [
            ("fs.stat", json!({"path": path})),
            ("fs.readlink", json!({"path": path})),
            ("fs.list", json!({"path": path, "limit": 16})),
            (
                "fs.read",
                json!({"path": path, "encoding": "base64", "max_output": 65536}),
            ),
        ] {
            count(c.call(tool, args));
        }
    }
    (ok, errors)
}

#[test]
fn corrupted_images_never_stop_the_module() {
    let Some(staging) = staging() else { return };
    let known = staging_paths(&staging);
    let clean = std::fs::read(fixtures_dir().join("rootfs.erofs")).unwrap();
    // The superblock and the root inode stay intact in most seeds, so the image mounts and the
    // walk meets the damage in inodes, directories and data; the last seed breaks the
    // superblock checksum (mount refused).
    let sb = irix7_mcp::services::fs::erofs::SUPERBLOCK_OFFSET;
    let root_nid = u16::from_le_bytes([clean[sb + 14], clean[sb + 15]]) as usize;
    let meta = u32::from_le_bytes(clean[sb + 40..sb + 44].try_into().unwrap()) as usize;
    let root = meta * 4096 + root_nid * 32;
    let keep = |i: usize| (sb..sb + 128).contains(&i) || (root..root + 64).contains(&i);
    let mut walked = 0;
    for (seed, (start, stride, mounts)) in [
        (1200usize, 61usize, true),
        (4096, 509, true),
        (4100, 97, true),
        (1100, 4093, true),
        (1024, 7, false),
    ]
    .into_iter()
    .enumerate()
    {
        let mut img = clean.clone();
        let mut i = start;
        while i < img.len() {
            if !mounts || !keep(i) {
                img[i] ^= 0x5a ^ (i as u8);
            }
            i += stride;
        }
        if mounts {
            reseal(&mut img);
        }
        let path =
            std::env::temp_dir().join(format!("iris-fs-{}-flip{seed}.erofs", std::process::id()));
        std::fs::write(&path, &img).unwrap();
        let Some(g) = boot_disks(&[], &[(2, path.clone())]) else {
            return;
        };
        assert!(
            g.rig
                .wait_for_console("fs: ", std::time::Duration::from_secs(20))
        );
        let mounted = g
            .rig
            .wait_for_console("fs: EROFS on", std::time::Duration::from_secs(1));
        assert_eq!(mounted, mounts, "seed {seed}: {}", g.rig.console_text());
        let mut c = GuestClient::new(&g);
        let (ok, errors) = walk_anything(&mut c, &known);
        println!("flip seed {seed}: {ok} answers, {errors} errors");
        walked += ok;
        // Still serving: a plain tool answers and the rig did not stop.
        assert_eq!(c.ok("echo", json!({"text": "alive"}))["text"], "alive");
        assert!(c.ok("status", json!({}))["heap"]["used"].as_u64().is_some());
        assert!(
            !g.rig.is_finished(),
            "the rig stopped: {}",
            g.rig.console_text()
        );
        drop(c);
        g.rig.stop().unwrap();
        let _ = std::fs::remove_file(path);
    }
    // Enough of each mounted tree survived to be walked and compared against nothing but "the
    // module answered".
    assert!(
        walked > 300,
        "the corrupted trees were hardly walked ({walked} answers)"
    );
}
