//! Which build is running: the module's version, the build id `cargo xtask image` compiles in,
//! and the image's SHA-256 as the kernel verified it (`image_info`, ABI ≥ 12), with the outcome
//! of the last deploy. The banner, `status`, `irix7://status`, the status page and MCP
//! `serverInfo` all say it, so an agent can tell that its redeploy took.

use alloc::format;
use alloc::string::String;
use indy::abi::{DEPLOY_OK, ImageInfo, deploy_reason};
use irix7_kmem::hex_byte;

/// The module's version, from Cargo: in the banner, `status`, `.modinfo` and the status page.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The build id: a digest of the module's sources (and a tag, for test builds) that `cargo
/// xtask image` passes in `IRIX7_MCP_BUILD_ID`; `dev` for a build that did not go through it.
pub const BUILD_ID: &str = match option_env!("IRIX7_MCP_BUILD_ID") {
    Some(id) => id,
    None => "dev",
};

/// Hex digits of the short form of a digest.
pub const SHORT_DIGITS: usize = 12;
// Whole bytes of the digest.
const _: () = assert!(SHORT_DIGITS.is_multiple_of(2) && SHORT_DIGITS <= 64);

/// The running build as the kernel and the build describe it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Identity {
    /// What the kernel says about the image; `None` on a kernel before ABI 12.
    pub image: Option<ImageInfo>,
}

impl Identity {
    /// Lower-case hex of the running image's SHA-256, when the kernel says it.
    pub fn sha256(&self) -> Option<String> {
        self.image.map(|i| hex(&i.sha256))
    }

    /// The first [`SHORT_DIGITS`] hex digits of the SHA-256.
    pub fn sha256_short(&self) -> Option<String> {
        let digits = self.sha256_short_digits()?;
        Some(String::from(core::str::from_utf8(&digits).unwrap_or("")))
    }

    /// [`Identity::sha256_short`] without an allocation (the status page's every request).
    pub fn sha256_short_digits(&self) -> Option<[u8; SHORT_DIGITS]> {
        let i = self.image?;
        let mut digits = [0u8; SHORT_DIGITS];
        for (pair, &b) in digits.chunks_exact_mut(2).zip(&i.sha256) {
            pair.copy_from_slice(&hex_byte(b));
        }
        Some(digits)
    }

    /// Why the kernel runs the last good image instead of the configured one: the reason and
    /// the refused digest. `None` when it runs the configured image (or cannot say).
    pub fn refused(&self) -> Option<(&'static str, String)> {
        let i = self.image?;
        (i.deploy != DEPLOY_OK).then(|| (deploy_reason(i.deploy), hex(&i.refused_sha256)))
    }

    /// `serverInfo.version`: the module version with the build and image as semver build
    /// metadata, e.g. `0.1.0+3f2a9c1e07b4.5ba7ce9aca1a`.
    pub fn server_version(&self) -> String {
        match self.sha256_short() {
            Some(short) => format!("{VERSION}+{BUILD_ID}.{short}"),
            None => format!("{VERSION}+{BUILD_ID}"),
        }
    }

    /// The banner's part: `build <id>, image sha256 <short>`.
    pub fn line(&self) -> String {
        let sha = self.sha256_short();
        format!(
            "build {BUILD_ID}, image sha256 {}",
            sha.as_deref().unwrap_or("unknown (kernel ABI < 12)")
        )
    }

    /// The console and status line of a refused deploy, if any.
    pub fn refused_line(&self) -> Option<String> {
        let (why, digest) = self.refused()?;
        Some(format!(
            "deploy of {digest} refused: {why}; running the last good image"
        ))
    }
}

/// Lower-case hex digits of a digest (32 bytes at most), on the stack: `status` writes up to
/// three on every call, and `core::fmt` would cost it a call per piece.
pub struct HexDigits {
    digits: [u8; 64],
    len: usize,
}

impl HexDigits {
    /// The digits of `bytes`' first 32 bytes.
    pub fn of(bytes: &[u8]) -> HexDigits {
        let mut digits = [0u8; 64];
        let mut len = 0;
        for (pair, &b) in digits.chunks_exact_mut(2).zip(bytes) {
            pair.copy_from_slice(&hex_byte(b));
            len += 2;
        }
        HexDigits { digits, len }
    }

    /// The digits, for a writer that takes ASCII as bytes (no UTF-8 check).
    pub fn as_bytes(&self) -> &[u8] {
        self.digits.get(..self.len).unwrap_or(&[])
    }
}

/// Lower-case hex digits, two a byte, into one allocation: the status page and `status` show
/// a digest on every request, and formatting each byte cost an allocation and ~500
/// instructions.
fn hex(bytes: &[u8]) -> String {
    let mut s = alloc::vec::Vec::with_capacity(bytes.len() * 2);
    for &b in bytes {
        s.extend_from_slice(&hex_byte(b));
    }
    String::from_utf8(s).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use indy::abi::DEPLOY_SHA256_MISMATCH;

    fn info(deploy: u32) -> ImageInfo {
        let mut sha256 = [0u8; 32];
        sha256[0] = 0x5b;
        sha256[1] = 0xa7;
        ImageInfo {
            sha256,
            deploy,
            refused_sha256: if deploy == DEPLOY_OK {
                [0; 32]
            } else {
                [0xee; 32]
            },
        }
    }

    #[test]
    fn a_kernel_without_image_info() {
        let id = Identity { image: None };
        assert_eq!(id.sha256(), None);
        assert_eq!(id.server_version(), format!("{VERSION}+{BUILD_ID}"));
        assert!(id.line().ends_with("unknown (kernel ABI < 12)"));
        assert_eq!(id.refused_line(), None);
    }

    #[test]
    fn the_configured_image() {
        let id = Identity {
            image: Some(info(DEPLOY_OK)),
        };
        let full = id.sha256().unwrap();
        assert_eq!(full.len(), 64);
        assert!(full.starts_with("5ba7") && full.ends_with("00"));
        assert_eq!(id.sha256_short().unwrap(), "5ba700000000");
        assert_eq!(
            id.server_version(),
            format!("{VERSION}+{BUILD_ID}.5ba700000000")
        );
        assert_eq!(id.refused(), None);
    }

    #[test]
    fn the_last_good_image() {
        let id = Identity {
            image: Some(info(DEPLOY_SHA256_MISMATCH)),
        };
        let line = id.refused_line().unwrap();
        assert_eq!(
            line,
            format!(
                "deploy of {} refused: sha256 mismatch; running the last good image",
                "ee".repeat(32)
            )
        );
    }
}
