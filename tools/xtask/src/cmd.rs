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

/// Runs `cmd` with its stdout printed as it comes and kept: (the outcome as [`run`] gives it,
/// everything printed).
pub fn run_tee(cmd: &mut Command) -> (Result<(), String>, String) {
    use std::io::BufRead;
    let what = describe(cmd);
    let mut child = match cmd.stdout(Stdio::piped()).spawn() {
        Ok(c) => c,
        Err(e) => return (Err(format!("cannot run {what}: {e}")), String::new()),
    };
    let mut kept = String::new();
    if let Some(out) = child.stdout.take() {
        for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            println!("{line}");
            kept.push_str(&line);
            kept.push('\n');
        }
    }
    let outcome = match child.wait() {
        Ok(s) if s.success() => Ok(()),
        Ok(s) => Err(format!("{what} failed ({s})")),
        Err(e) => Err(format!("{what}: {e}")),
    };
    (outcome, kept)
}

fn describe(cmd: &Command) -> String {
    let mut s = cmd.get_program().to_string_lossy().into_owned();
    for a in cmd.get_args() {
        s.push(' ');
        s.push_str(&a.to_string_lossy());
    }
    s
}
