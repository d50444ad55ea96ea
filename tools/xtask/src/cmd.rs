//! Running child processes with clear errors: every failure names the command.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The repository root (xtask lives in `tools/xtask`).
pub fn repo_root() -> &'static Path {
    static ROOT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    ROOT.get_or_init(|| {
        let dir = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
        dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf())
    })
}

/// Runs `cmd`, inheriting stdio; an error names the command and its exit status.
pub fn run(cmd: &mut Command) -> Result<(), String> {
    let what = describe(cmd);
    let status = cmd
        .status()
        .map_err(|e| format!("cannot run {what}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{what} failed ({status})"))
    }
}

/// Runs `cmd` and returns its stdout; stderr passes through.
pub fn output(cmd: &mut Command) -> Result<String, String> {
    let what = describe(cmd);
    let out = cmd
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run {what}: {e}"))?;
    if !out.status.success() {
        return Err(format!("{what} failed ({})", out.status));
    }
    String::from_utf8(out.stdout).map_err(|_| format!("{what} printed non-UTF-8 output"))
}

fn describe(cmd: &Command) -> String {
    let mut s = cmd.get_program().to_string_lossy().into_owned();
    for a in cmd.get_args() {
        s.push(' ');
        s.push_str(&a.to_string_lossy());
    }
    s
}

/// The linker rustup ships beside rustc (the one `cargo xtask image` links with).
pub fn rust_lld() -> Result<PathBuf, String> {
    let sysroot = output(Command::new("rustc").args(["--print", "sysroot"]))?;
    let vv = output(Command::new("rustc").arg("-vV"))?;
    let host = vv
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .ok_or("rustc -vV printed no host triple")?;
    Ok(Path::new(sysroot.trim())
        .join("lib/rustlib")
        .join(host)
        .join("bin/rust-lld"))
}
