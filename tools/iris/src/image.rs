//! Fetching the module image named by the boot configuration and verifying its SHA-256, and
//! finding the repository root that relative paths are resolved against.

use std::fmt;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// Largest image the kernel will fetch (the module area is smaller still).
pub const MAX_IMAGE_BYTES: u64 = 64 << 20;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImageError {
    UnsupportedUrl(String),
    Read { path: PathBuf, error: String },
    TooBig { path: PathBuf, size: u64 },
    DigestMismatch { expected: String, actual: String },
}

impl fmt::Display for ImageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ImageError::UnsupportedUrl(u) => {
                write!(
                    f,
                    "unsupported image URL `{u}` (use file:PATH or a path relative to the repository)"
                )
            }
            ImageError::Read { path, error } => {
                write!(f, "cannot read image {}: {error}", path.display())
            }
            ImageError::TooBig { path, size } => {
                write!(
                    f,
                    "image {} is {size} bytes, over the {MAX_IMAGE_BYTES}-byte limit",
                    path.display()
                )
            }
            ImageError::DigestMismatch { expected, actual } => write!(
                f,
                "sha256 mismatch: refusing to load (expected {expected}, actual {actual})"
            ),
        }
    }
}

impl std::error::Error for ImageError {}

/// The file a `file:` URL or plain path names, relative paths taken from `root`.
pub fn resolve_url(url: &str, root: &Path) -> Result<PathBuf, ImageError> {
    let path = if let Some(rest) = url.strip_prefix("file://") {
        if !rest.starts_with('/') {
            return Err(ImageError::UnsupportedUrl(url.into()));
        }
        PathBuf::from(rest)
    } else if let Some(rest) = url.strip_prefix("file:") {
        PathBuf::from(rest)
    } else if url.contains("://") {
        return Err(ImageError::UnsupportedUrl(url.into()));
    } else {
        PathBuf::from(url)
    };
    Ok(if path.is_absolute() {
        path
    } else {
        root.join(path)
    })
}

/// Read the image a URL names.
pub fn fetch(url: &str, root: &Path) -> Result<Vec<u8>, ImageError> {
    let path = resolve_url(url, root)?;
    let read_err = |e: std::io::Error| ImageError::Read {
        path: path.clone(),
        error: e.to_string(),
    };
    let size = std::fs::metadata(&path).map_err(read_err)?.len();
    if size > MAX_IMAGE_BYTES {
        return Err(ImageError::TooBig { path, size });
    }
    std::fs::read(&path).map_err(read_err)
}

/// Lower-case hex SHA-256 of `data`.
pub fn sha256_hex(data: &[u8]) -> String {
    Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Refuse an image whose digest is not the expected one.
pub fn verify(data: &[u8], expected: &str) -> Result<String, ImageError> {
    let actual = sha256_hex(data);
    if actual.eq_ignore_ascii_case(expected) {
        Ok(actual)
    } else {
        Err(ImageError::DigestMismatch {
            expected: expected.to_ascii_lowercase(),
            actual,
        })
    }
}

/// The repository root: the first ancestor of the current directory that holds
/// `tools/iris/Cargo.toml`, else the root this rig was built from.
pub fn find_repo_root() -> PathBuf {
    if let Ok(cwd) = std::env::current_dir() {
        for dir in cwd.ancestors() {
            if dir.join("tools/iris/Cargo.toml").is_file() {
                return dir.to_path_buf();
            }
        }
    }
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap_or_else(|_| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digest_of_abc() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert!(verify(b"abc", &sha256_hex(b"abc").to_uppercase()).is_ok());
        let e = verify(b"abd", &sha256_hex(b"abc")).unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains("expected ba7816bf") && text.contains(&sha256_hex(b"abd")),
            "{text}"
        );
    }

    #[test]
    fn urls() {
        let root = Path::new("/r");
        assert_eq!(
            resolve_url("file:target/x.o", root).unwrap(),
            PathBuf::from("/r/target/x.o")
        );
        assert_eq!(
            resolve_url("file:///abs/x.o", root).unwrap(),
            PathBuf::from("/abs/x.o")
        );
        assert_eq!(
            resolve_url("target/x.o", root).unwrap(),
            PathBuf::from("/r/target/x.o")
        );
        assert!(resolve_url("http://h/x.o", root).is_err());
    }

    #[test]
    fn repo_root_has_the_rig() {
        assert!(find_repo_root().join("tools/iris/Cargo.toml").is_file());
    }
}
