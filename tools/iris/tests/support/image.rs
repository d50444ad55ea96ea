//! The product image `cargo xtask image` builds: find it or skip the test, and copy it where a
//! rig can load it undisturbed.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};

use iris::image::{find_repo_root, sha256_hex};

/// Where the product image is: `IRIX7_IMAGE`, or `target/image/irix7-mcp.o` in the repository.
pub fn image_path() -> PathBuf {
    std::env::var_os("IRIX7_IMAGE")
        .map(PathBuf::from)
        .unwrap_or_else(|| find_repo_root().join("target/image/irix7-mcp.o"))
}

/// The product image's bytes and where they came from.
pub struct ProductImage {
    pub path: PathBuf,
    pub bytes: Vec<u8>,
}

impl ProductImage {
    /// The image, or `None` (with the reason printed, so the test reports a skip) when it has
    /// not been built. A missing file that `IRIX7_IMAGE` names explicitly is a failure instead.
    pub fn find_or_skip() -> Option<ProductImage> {
        let path = image_path();
        match std::fs::read(&path) {
            Ok(bytes) => Some(ProductImage {
                path: path.canonicalize().expect("the image path resolves"),
                bytes,
            }),
            Err(_) if std::env::var_os("IRIX7_IMAGE").is_none() => {
                println!(
                    "skipped: no module image at {} (run `cargo xtask image`)",
                    path.display()
                );
                None
            }
            Err(e) => panic!("IRIX7_IMAGE {}: {e}", path.display()),
        }
    }

    pub fn sha256(&self) -> String {
        sha256_hex(&self.bytes)
    }

    /// A private copy for one rig: a reset loads and verifies the image again, and a rebuild of
    /// `target/image` meanwhile must not change what it finds.
    pub fn private_copy(&self) -> PrivateImage {
        static N: AtomicU32 = AtomicU32::new(0);
        let name = format!(
            "iris-guest-{}-{}.o",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        let path = std::env::temp_dir().join(name);
        std::fs::write(&path, &self.bytes).expect("write the image copy");
        PrivateImage(path)
    }
}

/// A copy of the image in the temporary directory, removed on drop.
pub struct PrivateImage(PathBuf);

impl PrivateImage {
    pub fn path(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for PrivateImage {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The build tag of the changed image.
pub const CHANGED_TAG: &str = "deploy-test";

/// The changed image a deploy test or the soak deploys over the product image: the same code
/// built with the build tag [`CHANGED_TAG`] (another build id, so another digest), from
/// `IRIX7_DEPLOY_IMAGE` or `target/image/irix7-mcp-deploy.o` (`cargo xtask test` builds it).
/// `None` (the test is skipped, saying so) when it has not been built and no variable demands it.
pub fn changed_image() -> Option<Vec<u8>> {
    let (path, demanded) = match std::env::var_os("IRIX7_DEPLOY_IMAGE") {
        Some(p) => (PathBuf::from(p), true),
        None => (
            find_repo_root().join("target/image/irix7-mcp-deploy.o"),
            false,
        ),
    };
    match std::fs::read(&path) {
        Ok(b) => Some(b),
        Err(e) if demanded => panic!("IRIX7_DEPLOY_IMAGE {}: {e}", path.display()),
        Err(_) => {
            println!(
                "skipped: no changed image at {} (run `cargo xtask image --build-tag \
                 {CHANGED_TAG} --out target/image/irix7-mcp-deploy.o`)",
                path.display()
            );
            None
        }
    }
}

/// The demo cell's ELF: `IRIX7_CELL`, or `target/cell/cell.elf` in the repository; `None`
/// (the test skips, saying so) when it was not built and no `IRIX7_CELL` demands it.
pub fn cell_elf() -> Option<PathBuf> {
    let path = std::env::var_os("IRIX7_CELL").map_or_else(
        || iris::image::find_repo_root().join("target/cell/cell.elf"),
        PathBuf::from,
    );
    if path.is_file() {
        return Some(path);
    }
    if std::env::var_os("IRIX7_CELL").is_some() {
        panic!("IRIX7_CELL {} does not exist", path.display());
    }
    eprintln!("skipped: {} not built (cargo xtask cell)", path.display());
    None
}
