//! The fs and block tools through the real MCP server, over the fixture image in memory.

use super::*;
use crate::hil::block::{IoError, RamDisk};
use crate::services::fs::erofs::{self, Erofs};
use crate::services::fs::overlay::Overlay;
use crate::services::fs::read::CHECK_STEP;
use crate::services::fs::tests::fixture::fixtures;
use crate::services::fs::{Disk, Errno};
use crate::tools::Ctx;
use crate::tools::testing::fake;
use crate::tools::testing::harness::{call, request};
use alloc::vec;
use rpc::mcp::McpServer;
use serde_json::{Value, json};
use std::path::PathBuf;

/// The real server as the harness builds it, without the per-second request limit (these
/// tests make many calls at one instant).
fn server_with(ctx: Ctx) -> McpServer<Ctx> {
    let mut config = crate::tools::testing::harness::config();
    config.limits.requests_per_second = 1 << 20;
    let entropy: rpc::mcp::Entropy = Box::new(|buf: &mut [u8]| buf.fill(7));
    let ctx = alloc::rc::Rc::new(core::cell::RefCell::new(ctx));
    let mut s = McpServer::new(config, ctx, entropy);
    crate::tools::register(&mut s).unwrap();
    s
}

/// A context over `image` (mounted at target 2, overlay capped at `cap`).
fn ctx_over(image: &'static [u8], cap: usize) -> Ctx {
    let mut ctx = fake::ctx();
    let disk = Disk(Box::new(RamDisk::new(image.to_vec())));
    ctx.services_mut().fs = Some(Overlay::new(Some(Erofs::mount(disk).unwrap()), cap));
    ctx.services_mut().open_disk = Box::new(move |t| {
        if t == 2 {
            Ok(Disk(Box::new(RamDisk::new(image.to_vec()))))
        } else {
            Err(IoError { status: -19 })
        }
    });
    ctx
}

/// A server over the plain fixture image and the staging tree, or `None` without mkfs.erofs.
fn fixture_server(cap: usize) -> Option<(McpServer<Ctx>, PathBuf)> {
    let f = fixtures()?;
    Some((server_with(ctx_over(&f.plain, cap)), f.staging.clone()))
}

fn ok(s: &mut McpServer<Ctx>, tool: &str, args: Value) -> Value {
    let r = call(s, tool, args.clone());
    assert_ne!(r["isError"], true, "{tool} {args}: {r}");
    r["structuredContent"].clone()
}

/// The error text of a failing call.
fn err(s: &mut McpServer<Ctx>, tool: &str, args: Value) -> String {
    let r = call(s, tool, args.clone());
    assert_eq!(r["isError"], true, "{tool} {args} should fail: {r}");
    r["content"][0]["text"].as_str().unwrap().to_string()
}

/// The data block of an fs.read: (structured metadata, decoded data).
fn read(s: &mut McpServer<Ctx>, args: Value) -> (Value, Vec<u8>) {
    let r = call(s, "fs.read", args.clone());
    assert_ne!(r["isError"], true, "fs.read {args}: {r}");
    let content = r["content"].as_array().unwrap();
    assert_eq!(content.len(), 2, "data block + metadata text: {args}");
    let meta = r["structuredContent"].clone();
    assert_eq!(
        serde_json::from_str::<Value>(content[1]["text"].as_str().unwrap()).unwrap(),
        meta,
        "the second block is the metadata only"
    );
    let data = match meta["encoding"].as_str().unwrap() {
        "base64" => {
            let res = &content[0]["resource"];
            assert_eq!(content[0]["type"], "resource");
            assert_eq!(res["mimeType"], "application/octet-stream");
            assert_eq!(res["uri"], file_uri(meta["path"].as_str().unwrap()));
            STANDARD.decode(res["blob"].as_str().unwrap()).unwrap()
        }
        _ => {
            assert_eq!(content[0]["type"], "text");
            content[0]["text"].as_str().unwrap().as_bytes().to_vec()
        }
    };
    assert_eq!(data.len() as u64, meta["length"].as_u64().unwrap());
    (meta, data)
}

#[test]
fn file_uris_are_percent_encoded() {
    assert_eq!(file_uri("/big/4mib.bin"), "file:///big/4mib.bin");
    assert_eq!(file_uri("/a b/é%"), "file:///a%20b/%C3%A9%25");
}

#[test]
fn tools_are_listed_with_schemas_and_annotations() {
    let mut s = server_with(fake::ctx());
    let r = request(&mut s, "tools/list", json!({}));
    let tools = r["result"]["tools"].as_array().unwrap();
    for (name, read_only) in [
        ("fs.stat", true),
        ("fs.readlink", true),
        ("fs.read", true),
        ("fs.write", false),
        ("fs.list", true),
        ("fs.remove", false),
        ("fs.mkdir", false),
        ("block.read", true),
    ] {
        let t = tools.iter().find(|t| t["name"] == name).unwrap();
        assert_eq!(t["inputSchema"]["type"], "object", "{name}");
        assert_eq!(t["outputSchema"]["type"], "object", "{name}");
        assert_eq!(t["annotations"]["readOnlyHint"], read_only, "{name}: {t}");
    }
    let remove = tools.iter().find(|t| t["name"] == "fs.remove").unwrap();
    assert_eq!(remove["annotations"]["destructiveHint"], true);
}

#[test]
fn without_a_filesystem_the_tools_say_why() {
    let mut s = server_with(fake::ctx());
    let e = err(&mut s, "fs.stat", json!({"path": "/etc/motd"}));
    assert!(e.starts_with("E_NODEV: "), "{e}");
    let mut ctx = fake::ctx();
    ctx.services_mut().fs_error = Some(FsError::new(Errno::NotSup, "image uses LZ4 compression"));
    let mut s = server_with(ctx);
    for (tool, args) in [
        ("fs.read", json!({"path": "/etc/motd"})),
        ("fs.list", json!({"path": "/"})),
        ("fs.write", json!({"path": "/x", "content": "y"})),
    ] {
        assert_eq!(
            err(&mut s, tool, args),
            "E_NOTSUP: image uses LZ4 compression"
        );
    }
    let e = err(&mut s, "block.read", json!({"lba": 0}));
    assert!(e.starts_with("E_NODEV: SCSI target 2"), "{e}");
}

#[test]
fn stat_and_readlink() {
    let Some((mut s, staging)) = fixture_server(1 << 20) else {
        return;
    };
    let motd = std::fs::read(staging.join("etc/motd")).unwrap();
    let st = ok(&mut s, "fs.stat", json!({"path": "/etc/motd"}));
    assert_eq!(st["type"], "file");
    assert_eq!(st["mode"], "100644");
    assert_eq!(st["size"], motd.len());
    assert_eq!(st["origin"], "erofs");
    assert_eq!((st["uid"].clone(), st["gid"].clone()), (json!(0), json!(0)));
    let st = ok(&mut s, "fs.stat", json!({"path": "/link"}));
    assert_eq!(st["type"], "symlink");
    assert_eq!(st["target"], "etc/motd");
    assert_eq!(st["target_truncated"], false);
    let st = ok(&mut s, "fs.stat", json!({"path": "/longlink"}));
    assert_eq!(st["size"], 608);
    assert_eq!(st["target_truncated"], true);
    assert_eq!(st["target"], "./".repeat(256));
    assert_eq!(
        ok(&mut s, "fs.stat", json!({"path": "/dev/fifo"}))["type"],
        "fifo"
    );
    assert_eq!(
        ok(&mut s, "fs.stat", json!({"path": "/bigdir/"}))["mode"],
        "040755"
    );
    // Symlinks in the middle are followed; the answer names the canonical path.
    assert_eq!(
        ok(&mut s, "fs.stat", json!({"path": "/docs/irix7/README"}))["path"],
        "/usr/share/doc/irix7/README"
    );
    if staging.join("dev/null").exists() {
        let st = ok(&mut s, "fs.stat", json!({"path": "/dev/null"}));
        assert_eq!(
            (st["type"].clone(), st["rdev"].clone()),
            (json!("chardev"), json!({"major": 1, "minor": 3}))
        );
    }

    let l = ok(&mut s, "fs.readlink", json!({"path": "/link"}));
    assert_eq!(
        (l["path"].clone(), l["target"].clone()),
        (json!("/link"), json!("etc/motd"))
    );
    assert_eq!(
        ok(&mut s, "fs.readlink", json!({"path": "/dangling"}))["target"],
        "missing-target"
    );
    let e = err(&mut s, "fs.readlink", json!({"path": "/etc/motd"}));
    assert_eq!(e, "E_INVAL: not a symlink: /etc/motd is a file");
    let e = err(&mut s, "fs.readlink", json!({"path": "/longlink"}));
    assert!(
        e.starts_with("E_NAMETOOLONG: the target of /longlink is 608 bytes"),
        "{e}"
    );
    let e = err(&mut s, "fs.stat", json!({"path": "/nope"}));
    assert!(e.starts_with("E_NOENT: "), "{e}");
    let e = err(&mut s, "fs.stat", json!({"path": "/loop/a/x"}));
    assert!(e.starts_with("E_LOOP: "), "{e}");
}

#[test]
fn bad_paths_get_clear_errors() {
    let Some((mut s, _)) = fixture_server(1 << 20) else {
        return;
    };
    for (path, want) in [
        (String::new(), "E_INVAL: the path is empty"),
        (
            "/etc\0/motd".into(),
            "E_INVAL: the path has a NUL byte at byte 4",
        ),
        ("/etc//motd".into(), "E_INVAL: empty component"),
        ("/..".into(), "E_INVAL: \"..\" goes above the root"),
        (
            "/etc/../../motd".into(),
            "E_INVAL: \"..\" goes above the root",
        ),
        (
            format!("/{}", "n".repeat(4096)),
            "E_NAMETOOLONG: the path is 4097 bytes",
        ),
        (
            format!("/{}", "n".repeat(256)),
            "E_NAMETOOLONG: a component of 256 bytes",
        ),
    ] {
        for tool in ["fs.stat", "fs.read", "fs.list", "fs.remove", "fs.mkdir"] {
            let e = err(&mut s, tool, json!({"path": path}));
            assert!(e.starts_with(want), "{tool} {path:?}: {e}");
        }
    }
    // What stays allowed: the root, a trailing slash, `.` and `..` within the tree.
    assert_eq!(ok(&mut s, "fs.stat", json!({"path": "/"}))["type"], "dir");
    assert_eq!(
        ok(&mut s, "fs.stat", json!({"path": "/etc/"}))["path"],
        "/etc"
    );
    assert_eq!(
        ok(
            &mut s,
            "fs.stat",
            json!({"path": "/usr/./bin/../../etc/motd"})
        )["path"],
        "/etc/motd"
    );
}

#[test]
fn read_text_binary_ranges_and_cuts() {
    let Some((mut s, staging)) = fixture_server(1 << 20) else {
        return;
    };
    let motd = std::fs::read(staging.join("etc/motd")).unwrap();
    let (meta, data) = read(&mut s, json!({"path": "/link"}));
    assert_eq!(data, motd);
    assert_eq!(meta["path"], "/etc/motd");
    assert_eq!(meta["truncated"], false);
    assert!(meta.get("next_offset").is_none());
    let (meta, data) = read(
        &mut s,
        json!({"path": "/etc/motd", "offset": 5, "length": 10}),
    );
    assert_eq!(data, motd[5..15]);
    assert_eq!(
        (meta["offset"].clone(), meta["truncated"].clone()),
        (json!(5), json!(false))
    );
    let (meta, data) = read(&mut s, json!({"path": "/etc/motd", "max_output": 7}));
    assert_eq!(data, motd[..7]);
    assert_eq!(
        (meta["truncated"].clone(), meta["next_offset"].clone()),
        (json!(true), json!(7))
    );
    let (_, data) = read(&mut s, json!({"path": "/etc/motd", "offset": motd.len()}));
    assert!(data.is_empty());
    let e = err(
        &mut s,
        "fs.read",
        json!({"path": "/etc/motd", "offset": motd.len() + 1}),
    );
    assert!(e.starts_with("E_INVAL: offset"), "{e}");

    // Binary data: refused as UTF-8 with a pointer to base64, exact as base64.
    let all = std::fs::read(staging.join("bin/allbytes.bin")).unwrap();
    let e = err(&mut s, "fs.read", json!({"path": "/bin/allbytes.bin"}));
    assert_eq!(
        e,
        "E_ENCODING: /bin/allbytes.bin is not UTF-8 text (invalid byte sequence at byte \
         128); read it with encoding \"base64\""
    );
    let (_, data) = read(
        &mut s,
        json!({"path": "/bin/allbytes.bin", "encoding": "base64"}),
    );
    assert_eq!(data, all);
    // Every base64 length remainder, at odd offsets.
    for len in [1, 2, 3, 4, 5, 100] {
        let args =
            json!({"path": "/bin/allbytes.bin", "encoding": "base64", "offset": 7, "length": len});
        assert_eq!(read(&mut s, args).1, all[7..7 + len]);
    }
    let e = err(&mut s, "fs.read", json!({"path": "/etc"}));
    assert!(e.starts_with("E_ISDIR: "), "{e}");
    let e = err(&mut s, "fs.read", json!({"path": "/dev/fifo"}));
    assert!(e.starts_with("E_INVAL: not a regular file"), "{e}");

    // A cut in the middle of a character moves back to its start.
    ok(
        &mut s,
        "fs.write",
        json!({"path": "/tmp/u.txt", "content": "aé€😀z"}),
    );
    for (max, want) in [
        (1, "a"),
        (2, "a"),
        (3, "aé"),
        (5, "aé"),
        (6, "aé€"),
        (9, "aé€"),
        (10, "aé€😀"),
    ] {
        let (meta, data) = read(&mut s, json!({"path": "/tmp/u.txt", "max_output": max}));
        assert_eq!(String::from_utf8(data).unwrap(), want, "max {max}");
        assert_eq!(meta["next_offset"], want.len(), "max {max}");
    }
    // Invalid UTF-8 past the first check step is found too.
    let mut late = vec![b'a'; CHECK_STEP * 2 + 10];
    late[CHECK_STEP + 3] = 0xff;
    ok(
        &mut s,
        "fs.write",
        json!({"path": "/tmp/late", "content": STANDARD.encode(&late), "encoding": "base64"}),
    );
    let e = err(&mut s, "fs.read", json!({"path": "/tmp/late"}));
    assert!(e.contains(&format!("at byte {}", CHECK_STEP + 3)), "{e}");
}

#[test]
fn big_reads_stream_whole_files_in_both_encodings() {
    let Some(f) = fixtures() else {
        return;
    };
    for image in [&f.plain, &f.chunked] {
        let mut s = server_with(ctx_over(image, 1 << 20));
        let big = std::fs::read(f.staging.join("big/4mib.bin")).unwrap();
        let (meta, data) = read(
            &mut s,
            json!({"path": "/big/4mib.bin", "encoding": "base64", "max_output": READ_MAX}),
        );
        assert_eq!(data.len(), big.len());
        assert!(data == big, "4 MiB file differs");
        assert_eq!(meta["truncated"], false);
        // Default cap: 1 MiB, and the rest follows from next_offset.
        let (meta, data) = read(
            &mut s,
            json!({"path": "/big/over-1mib.bin", "encoding": "base64"}),
        );
        let over = std::fs::read(f.staging.join("big/over-1mib.bin")).unwrap();
        assert_eq!(data, over[..1 << 20]);
        let next = meta["next_offset"].as_u64().unwrap();
        let (meta, rest) = read(
            &mut s,
            json!({"path": "/big/over-1mib.bin", "encoding": "base64", "offset": next}),
        );
        assert_eq!(rest, over[1 << 20..]);
        assert_eq!(meta["truncated"], false);
        let text = std::fs::read(f.staging.join("usr/share/doc/irix7/README")).unwrap();
        assert_eq!(read(&mut s, json!({"path": "/docs/irix7/README"})).1, text);
    }
}

#[test]
fn overlay_through_the_tools() {
    let Some((mut s, _)) = fixture_server(64 * 1024) else {
        return;
    };
    // Write, overwrite, append, write at an offset, read back.
    let w = ok(
        &mut s,
        "fs.write",
        json!({"path": "/tmp/a.txt", "content": "hello"}),
    );
    assert_eq!(
        w,
        json!({"path": "/tmp/a.txt", "size": 5, "written": 5, "created": true})
    );
    ok(
        &mut s,
        "fs.write",
        json!({"path": "/tmp/a.txt", "content": "HELLO world"}),
    );
    ok(
        &mut s,
        "fs.write",
        json!({"path": "/tmp/a.txt", "content": "!", "append": true}),
    );
    let w = ok(
        &mut s,
        "fs.write",
        json!({"path": "/tmp/a.txt", "content": "W", "offset": 6}),
    );
    assert_eq!(
        (w["size"].clone(), w["created"].clone()),
        (json!(12), json!(false))
    );
    assert_eq!(
        read(&mut s, json!({"path": "/tmp/a.txt"})).1,
        b"HELLO World!"
    );
    let st = ok(&mut s, "fs.stat", json!({"path": "/tmp/a.txt"}));
    assert_eq!(
        (st["mode"].clone(), st["origin"].clone()),
        (json!("100644"), json!("overlay"))
    );
    let e = err(
        &mut s,
        "fs.write",
        json!({"path": "/tmp/a.txt", "content": "x", "append": true, "offset": 1}),
    );
    assert!(e.starts_with("E_INVAL: give either"), "{e}");
    let e = err(
        &mut s,
        "fs.write",
        json!({"path": "/tmp/b", "content": "@@", "encoding": "base64"}),
    );
    assert!(e.starts_with("E_INVAL: content is not valid base64"), "{e}");
    // Overwriting an image file copies it up; the listing shows the overlay entry.
    ok(
        &mut s,
        "fs.write",
        json!({"path": "/etc/motd", "content": "new motd\n"}),
    );
    assert_eq!(read(&mut s, json!({"path": "/link"})).1, b"new motd\n");
    let l = ok(&mut s, "fs.list", json!({"path": "/etc"}));
    let motd = l["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "motd")
        .unwrap()
        .clone();
    assert_eq!(
        motd,
        json!({"name": "motd", "type": "file", "size": 9, "mode": "100644", "origin": "overlay"})
    );

    // mkdir, list, remove.
    assert_eq!(
        ok(&mut s, "fs.mkdir", json!({"path": "/tmp/d"}))["path"],
        "/tmp/d"
    );
    let e = err(&mut s, "fs.mkdir", json!({"path": "/tmp/d"}));
    assert!(e.starts_with("E_EXIST: "), "{e}");
    let e = err(&mut s, "fs.mkdir", json!({"path": "/nope/d"}));
    assert!(e.starts_with("E_NOENT: "), "{e}");
    ok(
        &mut s,
        "fs.write",
        json!({"path": "/tmp/d/f", "content": "x"}),
    );
    let l = ok(&mut s, "fs.list", json!({"path": "/tmp"}));
    let names: Vec<&str> = l["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, [".keep", "a.txt", "d"]);
    let e = err(&mut s, "fs.remove", json!({"path": "/tmp/d"}));
    assert!(e.starts_with("E_NOTEMPTY: "), "{e}");
    let r = ok(
        &mut s,
        "fs.remove",
        json!({"path": "/tmp/d", "recursive": true}),
    );
    assert_eq!(
        r,
        json!({"path": "/tmp/d", "type": "dir", "origin": "overlay", "whiteout": false})
    );
    ok(&mut s, "fs.remove", json!({"path": "/tmp/a.txt"}));
    assert_eq!(ok(&mut s, "fs.list", json!({"path": "/tmp"}))["total"], 1);

    // An image file: whited out, gone from the listing, then recreated in the overlay.
    let r = ok(&mut s, "fs.remove", json!({"path": "/etc/passwd"}));
    assert_eq!(r["whiteout"], true);
    assert!(err(&mut s, "fs.stat", json!({"path": "/etc/passwd"})).starts_with("E_NOENT"));
    let l = ok(&mut s, "fs.list", json!({"path": "/etc"}));
    assert!(
        !l["entries"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["name"] == "passwd")
    );
    ok(
        &mut s,
        "fs.write",
        json!({"path": "/etc/passwd", "content": "root::0:0::/:/bin/sh\n"}),
    );
    assert_eq!(
        ok(&mut s, "fs.stat", json!({"path": "/etc/passwd"}))["origin"],
        "overlay"
    );
    // Removing a symlink removes the link, not its target.
    let r = ok(&mut s, "fs.remove", json!({"path": "/link"}));
    assert_eq!(
        (r["type"].clone(), r["origin"].clone()),
        (json!("symlink"), json!("erofs"))
    );
    assert_eq!(
        ok(&mut s, "fs.stat", json!({"path": "/etc/motd"}))["size"],
        9
    );
    let e = err(&mut s, "fs.remove", json!({"path": "/"}));
    assert!(e.starts_with("E_INVAL: "), "{e}");

    // The cap: a write past it fails and changes nothing.
    let e = err(
        &mut s,
        "fs.write",
        json!({"path": "/tmp/huge", "content": "x".repeat(70 * 1024)}),
    );
    assert!(e.starts_with("E_NOSPC: overlay full"), "{e}");
    assert!(err(&mut s, "fs.stat", json!({"path": "/tmp/huge"})).starts_with("E_NOENT"));
    let e = err(
        &mut s,
        "fs.write",
        json!({"path": "/big/4mib.bin", "content": "x", "append": true}),
    );
    assert!(e.starts_with("E_NOSPC: "), "copy-up past the cap: {e}");
}

#[test]
fn list_pages_through_a_big_directory() {
    let Some((mut s, staging)) = fixture_server(1 << 20) else {
        return;
    };
    let mut want: Vec<String> = std::fs::read_dir(staging.join("bigdir"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    want.sort();
    let mut got = Vec::new();
    let mut offset = 0;
    loop {
        let l = ok(
            &mut s,
            "fs.list",
            json!({"path": "/bigdir", "offset": offset, "limit": 128}),
        );
        assert_eq!(l["total"], want.len());
        got.extend(
            l["entries"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e["name"].as_str().unwrap().to_string()),
        );
        match l["next_offset"].as_u64() {
            Some(n) => offset = n,
            None => break,
        }
    }
    assert_eq!(got, want);
    let e = err(&mut s, "fs.list", json!({"path": "/etc/motd"}));
    assert!(e.starts_with("E_NOTDIR: "), "{e}");
    let r = call(&mut s, "fs.list", json!({"path": "/", "limit": 5000}));
    assert!(
        r["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("E_INVAL"),
        "{r}"
    );
}

#[test]
fn block_read_gives_raw_sectors() {
    let Some((mut s, _)) = fixture_server(1 << 20) else {
        return;
    };
    let image = &fixtures().unwrap().plain;
    let r = call(&mut s, "block.read", json!({"lba": 2, "count": 2}));
    assert_ne!(r["isError"], true, "{r}");
    let data = STANDARD
        .decode(r["content"][0]["text"].as_str().unwrap())
        .unwrap();
    assert_eq!(data, image[1024..2048]);
    assert_eq!(&data[..4], &erofs::EROFS_MAGIC.to_le_bytes());
    let meta = &r["structuredContent"];
    assert_eq!(meta["device_blocks"], image.len() / 512);
    assert_eq!(meta["bytes"], 1024);
    let last = image.len() / 512 - 1;
    assert!(ok(&mut s, "block.read", json!({"lba": last}))["count"] == 1);
    let e = err(&mut s, "block.read", json!({"lba": last, "count": 2}));
    assert!(e.starts_with("E_RANGE: "), "{e}");
    let e = err(&mut s, "block.read", json!({"target": 3, "lba": 0}));
    assert!(e.starts_with("E_NODEV: SCSI target 3"), "{e}");
    let r = call(&mut s, "block.read", json!({"lba": 0, "count": 129}));
    assert!(
        r["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("E_INVAL"),
        "{r}"
    );
}

#[test]
fn status_shows_the_cache() {
    let Some((mut s, _)) = fixture_server(1 << 20) else {
        return;
    };
    read(&mut s, json!({"path": "/etc/motd"}));
    let st = ok(&mut s, "status", json!({}));
    let c = &st["cache"];
    assert_eq!(
        (c["capacity"].clone(), c["block_size"].clone()),
        (json!(16), json!(4096))
    );
    assert!(
        c["misses"].as_u64().unwrap() > 0 && c["hits"].as_u64().unwrap() > 0,
        "{c}"
    );
    let text = crate::tools::testing::harness::request(
        &mut s,
        "resources/read",
        json!({"uri": "irix7://status"}),
    );
    let text = text["result"]["contents"][0]["text"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        text.contains("disk cache  ") && text.contains("% hits"),
        "{text}"
    );
    let status = fake::ctx().services().status();
    assert!(
        status
            .to_text()
            .contains("disk cache  no filesystem mounted")
    );
}

/// A RAM-only filesystem with `n` files in `/d`.
fn ctx_with_dir(n: usize) -> Ctx {
    let mut ctx = fake::ctx();
    let mut fs = Overlay::new(None, 1 << 20);
    fs.mkdir("/d").unwrap();
    for i in 0..n {
        let name = format!("/d/f{i:03}");
        fs.write(
            &name,
            b"x",
            crate::services::fs::overlay::WriteMode::Truncate,
        )
        .unwrap();
    }
    ctx.services_mut().fs = Some(fs);
    ctx
}

#[test]
fn a_long_listing_is_gathered_over_several_polls() {
    let mut s = server_with(ctx_with_dir(150));
    let mut r = rpc::testing::McpRequest::modern(
        "tools/call",
        json!({"name": "fs.list", "arguments": {"path": "/d", "limit": 500}}),
    )
    .send(&mut s, 0);
    let rpc::http::Body::Stream(src) = &mut r.body else {
        panic!("a listing of 150 runs across polls");
    };
    let (mut body, mut polls) = (Vec::new(), 0);
    while src.poll(&mut body, 1 << 16, 0) != rpc::http::BodyPoll::End {
        polls += 1;
        assert!(polls < 100);
    }
    // 48 entries when the call starts, then 48 a poll: two more polls gather the rest.
    assert!(polls >= 3, "{polls} polls");
    let v = rpc::testing::last_message(&body).unwrap();
    let l = &v["result"]["structuredContent"];
    let names: Vec<&str> = l["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    let want: Vec<String> = (0..150).map(|i| format!("f{i:03}")).collect();
    assert_eq!(names, want);
    assert_eq!(
        (l["total"].as_u64(), l.get("next_offset")),
        (Some(150), None)
    );
}

#[test]
fn a_directory_that_changes_while_listed_is_busy() {
    let mut s = server_with(ctx_with_dir(150));
    let mut r = rpc::testing::McpRequest::modern(
        "tools/call",
        json!({"name": "fs.list", "arguments": {"path": "/d", "limit": 500}}),
    )
    .send(&mut s, 0);
    let rpc::http::Body::Stream(src) = &mut r.body else {
        panic!("a listing of 150 runs across polls");
    };
    let mut body = Vec::new();
    assert_eq!(
        src.poll(&mut body, 1 << 16, 0),
        rpc::http::BodyPoll::Pending
    );
    ok(
        &mut s,
        "fs.write",
        json!({"path": "/d/new", "content": "y"}),
    );
    let rpc::http::Body::Stream(src) = &mut r.body else {
        unreachable!()
    };
    while src.poll(&mut body, 1 << 16, 0) != rpc::http::BodyPoll::End {}
    let v = rpc::testing::last_message(&body).unwrap();
    let text = v["result"]["content"][0]["text"].as_str().unwrap();
    assert_eq!(
        text,
        "E_BUSY: /d changed while it was listed; list it again"
    );
}
