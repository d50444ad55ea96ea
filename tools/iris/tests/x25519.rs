//! A module with long straight-line blocks: the X25519 test image (`tools/x25519-image`,
//! built by `cargo xtask x25519-image` and by `cargo xtask test`) computes RFC 7748's first
//! test vector with x25519-dalek in its `init`. On the R4400 curve25519-dalek's 32-bit field
//! multiplication is one straight run of about 1,600 instructions, which stock Unicorn 2.1.5's
//! translator could not take (docs/rig.md, "Which Unicorn"). Skipped with a note when the image
//! has not been built; a file `IRIX7_X25519_IMAGE` names must exist.

mod support;

use std::path::PathBuf;

use iris::image::find_repo_root;
use support::synthetic::{boot_synthetic, synthetic_options};

/// RFC 7748, section 5.2: X25519(a546e36b…449ac4, e6db6867…ab1c4c).
const EXPECTED: &str = "c3da55379de9c6908e94ea4df28d084f32eccf03491c71f754b4075577a28552";

fn image() -> Option<Vec<u8>> {
    let named = std::env::var_os("IRIX7_X25519_IMAGE").map(PathBuf::from);
    let path = named
        .clone()
        .unwrap_or_else(|| find_repo_root().join("target/image/x25519-test.o"));
    match std::fs::read(&path) {
        Ok(bytes) => Some(bytes),
        Err(e) if named.is_some() => panic!("IRIX7_X25519_IMAGE {}: {e}", path.display()),
        Err(_) => {
            println!(
                "skipped: no X25519 test image at {} (run `cargo xtask x25519-image`)",
                path.display()
            );
            None
        }
    }
}

#[test]
fn the_x25519_image_computes_the_rfc_7748_vector_in_the_rig() {
    let Some(bytes) = image() else { return };
    let rig = boot_synthetic(synthetic_options("x25519", &bytes)).expect("the image boots");
    let console = rig.console_text();
    let line = console
        .lines()
        .find_map(|l| l.strip_prefix("x25519: "))
        .unwrap_or_else(|| panic!("no result on the console:\n{console}"));
    assert_eq!(line, EXPECTED);
    println!(
        "X25519 in {} guest instructions (init)",
        rig.counters().init_insns
    );
}
