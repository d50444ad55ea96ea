//! `cargo xtask docs`: regenerates the tool catalogue (the generated part of `docs/tools.md`
//! and `docs/tools.json`) from the module's tool registry. The renderer is a host test of the
//! module crate (`tools::catalogue`), so it sees exactly the tables the image registers and
//! stays out of the image; this runs that test in its rewrite mode.

use crate::cmd::{repo_root, run};
use std::process::Command;

/// The test that checks the catalogue, and rewrites it when `IRIX7_BLESS_DOCS` is set.
const TEST: &str = "tools::catalogue::tests::docs_match_the_registry";

pub fn run_docs() -> Result<(), String> {
    let mut c = Command::new("cargo");
    c.current_dir(repo_root())
        .args(["test", "-p", "irix7-mcp", "--lib", "--", "--exact", TEST])
        .env("IRIX7_BLESS_DOCS", "1");
    run(&mut c)?;
    println!("docs/tools.md and docs/tools.json now match the tool registry");
    Ok(())
}
