//! `cargo xtask soak [--cycles N]`: the rig soak (`tools/iris/tests/soak.rs`) at a count of
//! one's choosing, on freshly built images: one rig through N resets of every kind mixed, its
//! figures printed. `cargo xtask test` runs the same test at [`SUITE_CYCLES`].

use crate::cmd::{self, repo_root};
use crate::image;
use std::process::Command;

/// The soak's count in `cargo xtask test`: each kind of reset once, and one more (about 10 s
/// of the suite on a quiet host).
pub const SUITE_CYCLES: usize = 6;

/// The soak's one test, by its name.
const TEST: &str = "many_resets_in_a_row_lose_nothing_the_boot_contract_promises";

pub fn run(cycles: usize) -> Result<(), String> {
    if cycles == 0 {
        return Err("--cycles must be at least 1".into());
    }
    crate::prereqs::ensure()?;
    image::build(&image::Options {
        out: image::IMAGE_PATH.into(),
        ..Default::default()
    })?;
    image::build_deploy_test_image()?;
    let root = repo_root();
    cmd::run(
        Command::new("cargo")
            .current_dir(root)
            .env("IRIX7_IMAGE", root.join(image::IMAGE_PATH))
            .env("IRIX7_DEPLOY_IMAGE", root.join(image::DEPLOY_TEST_IMAGE))
            .env("IRIX7_SOAK_CYCLES", cycles.to_string())
            .args(["test", "-p", "iris", "--all-features", "--test", "soak"])
            .args(["--", "--exact", TEST, "--nocapture"]),
    )
}
