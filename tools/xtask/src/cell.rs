//! `cargo xtask cell`: builds the demo cell (`tools/cell`), the R4400 program the rig runs
//! beside the module for debugging (docs/debug.md), into `target/cell/cell.elf`: a static
//! executable linked in the cell window, with its symbols, debug information and unwind tables
//! (what GDB's `break`, `bt` and `x` need).

use crate::cmd::{self, repo_root};
use std::path::PathBuf;
use std::process::Command;

/// Where the cell goes (what `iris --cell` and the debug tests load).
pub const CELL_ELF: &str = "target/cell/cell.elf";
/// Its crate: a workspace of its own, like the X25519 test image, so its build never touches
/// the product image's Cargo.lock.
pub const CELL_DIR: &str = "tools/cell";

/// Builds the cell and links it; returns the ELF's path.
pub fn build_cell() -> Result<PathBuf, String> {
    let root = repo_root();
    let target_dir = root.join("target/mips/cell");
    let mut rustflags: Vec<String> = [
        "-Zlocation-detail=none",
        "-Cforce-frame-pointers=yes",
        "-Cforce-unwind-tables=yes",
    ]
    .map(String::from)
    .to_vec();
    // Paths of this machine must not end up in the cell's debug information.
    rustflags.push(format!("--remap-path-prefix={}=/irix7-mcp", root.display()));
    cmd::run(
        Command::new("cargo")
            .current_dir(root)
            .env("RUSTC_BOOTSTRAP", "1")
            .env("CARGO_ENCODED_RUSTFLAGS", rustflags.join("\x1f"))
            .env_remove("RUSTFLAGS")
            .args(["rustc", "--quiet", "--release", "--locked", "--lib"])
            .arg("--manifest-path")
            .arg(root.join(CELL_DIR).join("Cargo.toml"))
            .arg("--target")
            .arg(root.join("mips-irix7.json"))
            .args(["-Z", "json-target-spec", "-Z", "build-std=core"])
            .args(["-Z", "build-std-features=compiler-builtins-mem"])
            .arg("--target-dir")
            .arg(&target_dir),
    )?;
    let lib = target_dir.join("mips-irix7/release/libirix7_cell.a");
    let out = root.join(CELL_ELF);
    if let Some(dir) = out.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    cmd::run(
        Command::new(cmd::rust_lld()?)
            .args(["-flavor", "gnu", "--gc-sections", "-e", "cell_main"])
            .arg("-T")
            .arg(root.join(CELL_DIR).join("cell.ld"))
            .arg("-o")
            .arg(&out)
            .arg(&lib),
    )?;
    println!("{CELL_ELF}");
    Ok(out)
}
