//! The `iris` binary: flags, exit statuses, one-line errors, console on stdout.

mod support;

use std::process::Command;

use iris::image::sha256_hex;
use support::synthetic::*;

fn iris() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_iris"));
    // No port forwards: tests run in parallel and must not fight over host ports.
    c.arg("--no-forward");
    c
}

#[test]
fn help_lists_the_flags() {
    let out = Command::new(env!("CARGO_BIN_EXE_iris"))
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for flag in [
        "--config",
        "--env <KEY=VALUE>",
        "--env-file",
        "--ram",
        "--disk <ID=PATH>",
        "--no-disk",
        "--watchdog-ms",
        "--quiet",
        "--run-ms",
    ] {
        assert!(help.contains(flag), "{flag} missing from:\n{help}");
    }
}

#[test]
fn runs_a_module_and_exits_zero() {
    let image = hello_module("hello over stdout\n", idle_poll()).build();
    let opts = synthetic_options("cli-ok", &image);
    let out = iris()
        .args(["--no-disk", "--run-ms", "100", "--root"])
        .arg(opts.root.unwrap())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("IRIX 7 kernel"), "{stdout}");
    assert!(stdout.contains("hello over stdout\n"), "{stdout}");
    assert!(stdout.ends_with("kernel: module exited\n"), "{stdout}");
}

#[test]
fn digest_mismatch_exits_one_with_one_line() {
    let image = hello_module("x\n", idle_poll()).build();
    let opts = synthetic_options("cli-mismatch", &image);
    let root = opts.root.unwrap();
    let out = iris()
        .args([
            "--quiet",
            "--no-disk",
            "--env",
            &format!("mcp.sha256={}", "0".repeat(64)),
            "--root",
        ])
        .arg(&root)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr,
        format!(
            "iris: image: sha256 mismatch: refusing to load (expected {}, actual {})\n",
            "0".repeat(64),
            sha256_hex(&image)
        )
    );
}

#[test]
fn bad_config_and_bad_flags() {
    let out = iris()
        .args(["--quiet", "--config", "/nonexistent/config.conf"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("iris: config: cannot read boot config /nonexistent/config.conf"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    let out = iris().args(["--disk", "nine=x.img"]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("malformed SCSI ID"));
}

#[test]
fn guest_crash_exits_two() {
    let mut p = Asm::default();
    p.ops(&[BREAK, jr(RA), NOP]);
    let image = hello_module("x\n", p).build();
    let root = synthetic_options("cli-crash", &image).root.unwrap();
    let out = iris()
        .args(["--quiet", "--no-disk", "--root"])
        .arg(&root)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("iris: guest crash in irix7_mcp_poll: break, intno 18 at pc 0x"),
        "{stderr}"
    );
}
