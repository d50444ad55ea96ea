//! The last good image: the last image that was fetched, verified and initialised, which the
//! kernel boots when a deploy is refused (`docs/abi.md`, "Last good image"). The rig keeps it in
//! memory across resets and, when [`super::RigOptions::last_good_file`] names a file (the CLI's
//! default, `target/iris/last-good.o`), on disk for the next start of the rig.

use std::path::PathBuf;

use crate::error::RigError;
use crate::image::sha256_hex;

/// Why the configured image was refused: the `ImageInfo::deploy` code, the digest the boot
/// configuration named and the error the kernel saw.
pub(super) struct Refusal {
    pub deploy: u32,
    pub digest: String,
    /// Boxed: the error is large and a refusal travels in a `Result`.
    pub error: Box<RigError>,
}

impl Refusal {
    pub fn new(deploy: u32, digest: &str, error: RigError) -> Refusal {
        Refusal {
            deploy,
            digest: digest.to_string(),
            error: Box::new(error),
        }
    }
}

/// The 32 bytes of a 64-digit hex digest (zeros where it is not hex; the boot configuration's
/// parser already refused malformed digests).
pub(super) fn digest_bytes(hex: &str) -> [u8; 32] {
    let mut out = [0u8; 32];
    for (i, b) in out.iter_mut().enumerate() {
        *b = hex
            .get(2 * i..2 * i + 2)
            .and_then(|h| u8::from_str_radix(h, 16).ok())
            .unwrap_or(0);
    }
    out
}

/// The image to fall back to.
#[derive(Default)]
pub(super) struct LastGood {
    /// Bytes and lower-case hex digest, once an image has initialised in this rig.
    image: Option<(Vec<u8>, String)>,
    /// Where a copy is kept for the next start of the rig.
    file: Option<PathBuf>,
    /// The digest of what `file` holds, once this rig wrote it.
    saved: Option<String>,
}

impl LastGood {
    pub fn new(file: Option<PathBuf>) -> LastGood {
        LastGood {
            file,
            ..LastGood::default()
        }
    }

    /// An image initialised: it is the one to fall back to from now on.
    pub fn remember(&mut self, data: Vec<u8>, digest: String) {
        if let Some(file) = &self.file
            && self.saved.as_deref() != Some(digest.as_str())
        {
            // Written aside and renamed, so a rig starting meanwhile never reads half an
            // image; a failure costs only the fallback of the next start.
            let tmp = file.with_extension(format!("tmp{}", std::process::id()));
            let written = file
                .parent()
                .map_or(Ok(()), std::fs::create_dir_all)
                .and_then(|()| std::fs::write(&tmp, &data))
                .and_then(|()| std::fs::rename(&tmp, file));
            match written {
                Ok(()) => self.saved = Some(digest.clone()),
                Err(e) => eprintln!(
                    "iris: cannot keep the last good image in {}: {e}",
                    file.display()
                ),
            }
        }
        self.image = Some((data, digest));
    }

    /// The image to fall back to: the one initialised in this rig, else the one a previous
    /// start left on disk (its digest is computed from what the file holds now).
    pub fn recall(&self) -> Option<(Vec<u8>, String)> {
        if let Some(image) = &self.image {
            return Some(image.clone());
        }
        let data = std::fs::read(self.file.as_ref()?).ok()?;
        let digest = sha256_hex(&data);
        Some((data, digest))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_parse() {
        let hex = "00ff10".to_string() + &"ab".repeat(29);
        let b = digest_bytes(&hex);
        assert_eq!(&b[..4], &[0x00, 0xff, 0x10, 0xab]);
        assert_eq!(digest_bytes("zz"), [0; 32]);
    }

    #[test]
    fn memory_first_then_the_file() {
        let dir = std::env::temp_dir().join(format!("iris-last-good-{}", std::process::id()));
        let file = dir.join("last-good.o");
        let _ = std::fs::remove_dir_all(&dir);
        assert!(LastGood::new(Some(file.clone())).recall().is_none());
        let mut a = LastGood::new(Some(file.clone()));
        a.remember(b"image one".to_vec(), sha256_hex(b"image one"));
        assert_eq!(a.recall().unwrap().0, b"image one");
        // A new rig finds it on disk.
        let b = LastGood::new(Some(file.clone()));
        assert_eq!(
            b.recall(),
            Some((b"image one".to_vec(), sha256_hex(b"image one")))
        );
        // Without a file, only memory.
        let mut c = LastGood::new(None);
        assert!(c.recall().is_none());
        c.remember(b"two".to_vec(), sha256_hex(b"two"));
        assert_eq!(c.recall().unwrap().1, sha256_hex(b"two"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
