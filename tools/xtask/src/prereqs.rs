//! Installs what the build and the tests need, idempotently: a fresh machine (or CI) runs
//! `cargo xtask test` and gets everything; a machine that has it all spends no time here.

use crate::cmd;
use std::process::{Command, Stdio};

/// Debian packages: cmake builds the rig's fixed Unicorn (`unicorn.rs`) and libclang-dev the
/// crate's bindings to it (bindgen); binutils-mips-linux-gnu gives
/// the ISA audit its disassembler; erofs-utils builds the fixture images; python3-venv holds
/// the Python MCP client tests; mame is the independent Indy model `cargo xtask mame` boots, and
/// iproute2 addresses the tap MAME opens in its network namespace; gdb-multiarch is the real
/// GDB the debugger test drives against a cell (`tools/iris/tests/gdb.rs`, docs/debug.md).
pub const DEBIAN: &[&str] = &[
    "cmake",
    "libclang-dev",
    "binutils-mips-linux-gnu",
    "erofs-utils",
    "python3-venv",
    "mame",
    "iproute2",
    "gdb-multiarch",
];

/// Makes sure rust-src, the Debian packages and the rig's fixed Unicorn are there.
pub fn ensure() -> Result<(), String> {
    ensure_rust_src()?;
    ensure_debian(DEBIAN)?;
    crate::unicorn::ensure()
}

fn ensure_rust_src() -> Result<(), String> {
    let sysroot = cmd::output(Command::new("rustc").args(["--print", "sysroot"]))?;
    let src = std::path::Path::new(sysroot.trim()).join("lib/rustlib/src/rust/library");
    if src.is_dir() {
        return Ok(());
    }
    println!("prereqs: installing rust-src");
    cmd::run(Command::new("rustup").args(["component", "add", "rust-src"]))
}

fn installed(pkg: &str) -> bool {
    Command::new("dpkg-query")
        .args(["-W", "-f=${Status}", pkg])
        .stderr(Stdio::null())
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("install ok installed"))
}

pub fn ensure_debian(pkgs: &[&str]) -> Result<(), String> {
    let missing: Vec<&str> = pkgs.iter().copied().filter(|p| !installed(p)).collect();
    if missing.is_empty() {
        return Ok(());
    }
    println!("prereqs: installing Debian packages {}", missing.join(" "));
    let root = cmd::output(Command::new("id").arg("-u"))
        .map(|s| s.trim() == "0")
        .unwrap_or(false);
    let sudo = |c: &str| {
        let mut cmd = if root {
            Command::new(c)
        } else {
            Command::new("sudo")
        };
        if !root {
            cmd.arg(c);
        }
        cmd.env("DEBIAN_FRONTEND", "noninteractive");
        cmd
    };
    cmd::run(sudo("apt-get").args(["update", "-qq"]))?;
    cmd::run(
        sudo("apt-get")
            .args(["install", "-y", "-qq"])
            .args(&missing),
    )
}
