//! The kernel's boot configuration and image checks, through the rig: each problem is one clear
//! error and nothing runs.

mod support;

use iris::image::{ImageError, sha256_hex};
use iris::{Rig, RigError, RigOptions};
use support::synthetic::*;

fn config_of(opts: &RigOptions) -> std::path::PathBuf {
    opts.root.as_ref().unwrap().join("boot/config.conf")
}

#[test]
fn digest_mismatch_refuses_to_load() {
    let image = hello_module("must not run\n", idle_poll()).build();
    let opts = synthetic_options("mismatch", &image);
    let wrong = "ab".repeat(32);
    std::fs::write(
        config_of(&opts),
        format!("mcp.url = file:m.o\nmcp.sha256 = {wrong}\n"),
    )
    .unwrap();
    let mut rig = Rig::new(opts).unwrap();
    let e = rig.boot().unwrap_err();
    let actual = sha256_hex(&image);
    assert_eq!(
        e,
        RigError::Image(ImageError::DigestMismatch {
            expected: wrong.clone(),
            actual: actual.clone()
        })
    );
    assert_eq!(e.exit_code(), 1);
    let msg = e.to_string();
    assert_eq!(
        msg,
        format!("image: sha256 mismatch: refusing to load (expected {wrong}, actual {actual})")
    );
    let console = rig.console_text();
    assert!(
        console.contains(&format!(
            "kernel: sha256 mismatch: refusing to load (expected {wrong}"
        )),
        "{console}"
    );
    assert!(!console.contains("must not run"));
    assert!(rig.image().is_none());
    assert_eq!(rig.counters().total_insns, 0);
}

#[test]
fn missing_and_malformed_config_lines() {
    let image = hello_module("x\n", idle_poll()).build();
    let opts = synthetic_options("noline", &image);
    std::fs::write(config_of(&opts), "mcp.url = file:m.o\n").unwrap();
    let e = boot_synthetic(opts.clone()).err().unwrap();
    assert!(matches!(e, RigError::Config(_)), "{e}");
    assert!(
        e.to_string()
            .ends_with("config.conf: missing `mcp.sha256 = …` line"),
        "{e}"
    );
    assert_eq!(e.exit_code(), 1);

    std::fs::write(
        config_of(&opts),
        format!("mcp.url = file:m.o\nmcp.sha256 {}\n", sha256_hex(&image)),
    )
    .unwrap();
    let e = boot_synthetic(opts.clone()).err().unwrap();
    assert!(
        e.to_string()
            .contains("config.conf:2: malformed line (expected `key = value`)"),
        "{e}"
    );

    std::fs::remove_file(config_of(&opts)).unwrap();
    let e = boot_synthetic(opts).err().unwrap();
    assert!(e.to_string().contains("cannot read boot config"), "{e}");
}

#[test]
fn environment_overrides_url_and_digest() {
    let first = hello_module("first image\n", idle_poll()).build();
    let second = hello_module("second image\n", idle_poll()).build();
    let mut opts = synthetic_options("override", &first);
    let root = opts.root.clone().unwrap();
    std::fs::write(root.join("other.o"), &second).unwrap();
    opts.env.push("mcp.url=file:other.o".into());
    opts.env.push(format!("mcp.sha256={}", sha256_hex(&second)));
    let rig = boot_synthetic(opts).unwrap();
    assert!(rig.console_text().contains("second image"));
    assert!(
        rig.console_text()
            .contains("loading irix7-mcp from file:other.o")
    );
}

#[test]
fn missing_image_and_unsupported_url() {
    let image = hello_module("x\n", idle_poll()).build();
    let mut opts = synthetic_options("noimage", &image);
    opts.env.push("mcp.url=file:nonexistent.o".into());
    let e = boot_synthetic(opts.clone()).err().unwrap();
    assert!(matches!(e, RigError::Image(ImageError::Read { .. })), "{e}");
    opts.env.push("mcp.url=ftp://example/x.o".into());
    let e = boot_synthetic(opts).err().unwrap();
    assert!(
        matches!(e, RigError::Image(ImageError::UnsupportedUrl(_))),
        "{e}"
    );
}

#[test]
fn loader_errors_surface_through_boot() {
    let mut a = Asm::default();
    a.func("irix7_mcp_init").ret(0);
    a.func("irix7_mcp_exit").ret(0);
    let e = boot_synthetic(synthetic_options("noentry", &ModuleObj::new(a).build()))
        .err()
        .unwrap();
    assert_eq!(
        e.to_string(),
        "loader: missing entry symbol `irix7_mcp_poll`"
    );
    assert_eq!(e.exit_code(), 1);
}

#[test]
fn init_failure_is_reported() {
    let mut a = Asm::default();
    a.func("irix7_mcp_init").ret(-12);
    a.func("irix7_mcp_poll").ret(0);
    a.func("irix7_mcp_exit").ret(0);
    let e = boot_synthetic(synthetic_options("initfail", &ModuleObj::new(a).build()))
        .err()
        .unwrap();
    assert_eq!(e, RigError::InitFailed(-12));
    assert_eq!(e.exit_code(), 3);
}

#[test]
fn poll_failure_is_reported() {
    let mut p = Asm::default();
    p.ret(-5);
    let mut rig = boot_synthetic(synthetic_options(
        "pollfail",
        &hello_module("x\n", p).build(),
    ))
    .unwrap();
    assert_eq!(rig.step().unwrap_err(), RigError::PollFailed(-5));
}

#[test]
fn bad_options() {
    let image = hello_module("x\n", idle_poll()).build();
    let e = Rig::new(RigOptions {
        ram_mib: 8,
        ..synthetic_options("ram", &image)
    })
    .err()
    .unwrap();
    assert!(e.to_string().contains("--ram 8 MiB out of range"), "{e}");
    let e = Rig::new(RigOptions {
        env: vec!["novalue".into()],
        ..synthetic_options("env", &image)
    })
    .err()
    .unwrap();
    assert!(
        e.to_string().contains("malformed environment setting"),
        "{e}"
    );
    let e = Rig::new(RigOptions {
        no_disk: false,
        disks: vec![(1, "/nonexistent/disk.img".into())],
        ..synthetic_options("disk", &image)
    })
    .err()
    .unwrap();
    assert!(e.to_string().contains("cannot open disk"), "{e}");
}
