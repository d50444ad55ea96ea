//! The image's SHA-256 against the digest the boot configuration names: a kernel refuses an
//! image whose digest differs (`docs/abi.md`, "Last good image").

use alloc::string::String;
use core::fmt;
use sha2::{Digest, Sha256};

/// Lower-case hex SHA-256 of `data`.
pub fn sha256_hex(data: &[u8]) -> String {
    let mut out = String::with_capacity(64);
    for b in Sha256::digest(data) {
        for nib in [b >> 4, b & 0xF] {
            out.push(char::from(b"0123456789abcdef"[usize::from(nib)]));
        }
    }
    out
}

/// The image's digest is not the configured one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DigestMismatch {
    /// The configured digest, lower-cased.
    pub expected: String,
    pub actual: String,
}

impl fmt::Display for DigestMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "sha256 mismatch: refusing to load (expected {}, actual {})",
            self.expected, self.actual
        )
    }
}

impl core::error::Error for DigestMismatch {}

/// The image's digest (lower-case hex) when it is `expected` (any case), else the mismatch.
pub fn verify(data: &[u8], expected: &str) -> Result<String, DigestMismatch> {
    let actual = sha256_hex(data);
    if actual.eq_ignore_ascii_case(expected) {
        Ok(actual)
    } else {
        Err(DigestMismatch {
            expected: expected.to_ascii_lowercase(),
            actual,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ABC: &str = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

    #[test]
    fn digest_of_abc() {
        assert_eq!(sha256_hex(b"abc"), ABC);
    }

    #[test]
    fn verify_accepts_any_case_and_names_both_digests_on_a_mismatch() {
        assert_eq!(
            verify(b"abc", &ABC.to_ascii_uppercase()).as_deref(),
            Ok(ABC)
        );
        let e = verify(b"abd", ABC).unwrap_err();
        assert_eq!(e.expected, ABC);
        assert_ne!(e.actual, ABC);
        assert!(alloc::format!("{e}").starts_with("sha256 mismatch: refusing to load"));
    }
}
