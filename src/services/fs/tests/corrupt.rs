//! Damaged images: every bad byte is an error, never a panic or an endless loop.

use super::fixture::images;
use super::synth::fix_checksum;
use super::walk::walk_all;
use crate::hil::block::RamDisk;
use crate::services::fs::erofs::Erofs;
use crate::services::fs::error::Errno;
use crate::services::fs::overlay::{DEFAULT_OVERLAY_MAX, Overlay};
use irix7_kmem::testing::Lcg;

const SEEDS: u64 = 240;
const STRIDES: [usize; 6] = [5, 31, 257, 1021, 4099, 65_537];
const PATHS: [&str; 6] = [
    "/etc/motd",
    "/bigdir/entry-with-a-rather-long-file-name-0150.txt",
    "/link",
    "/loop/a",
    "/docs/irix7/README",
    "/longlink",
];

#[test]
fn flipped_bytes_never_panic_or_hang() {
    for (label, image) in images() {
        let (mut mounted, mut refused, mut walk_errors) = (0, 0, 0);
        for seed in 0..SEEDS {
            let mut rng = Lcg(seed);
            let mut img = image.to_vec();
            let stride = STRIDES[(seed % STRIDES.len() as u64) as usize];
            // Even seeds hammer the metadata at the front, odd ones the whole image.
            let end = if seed % 2 == 0 {
                img.len().min(96 * 1024)
            } else {
                img.len()
            };
            let start = 1024 + (rng.below(stride));
            for i in (start..end).step_by(stride) {
                img[i] ^= (rng.next_u64() as u8) | 1;
            }
            // Mostly re-seal the superblock so damage behind the checksum gets exercised too.
            if seed % 4 != 0 {
                fix_checksum(&mut img);
            }
            match Erofs::mount(RamDisk::new(img)) {
                Ok(mut fs) => {
                    mounted += 1;
                    walk_errors += walk_all(&mut fs).errors;
                    let mut ov = Overlay::new(Some(fs), DEFAULT_OVERLAY_MAX);
                    for p in PATHS {
                        let _ = ov.stat(p);
                        let _ = ov.read(p, 0, &mut [0u8; 512]);
                        let _ = ov.list(p, 0, 50);
                    }
                    let _ = ov.list("/", 0, 1000);
                    let _ = ov.remove("/etc", true);
                    let _ = ov.write(
                        "/bigdir/new",
                        b"x",
                        crate::services::fs::overlay::WriteMode::Append,
                    );
                }
                Err(e) => {
                    refused += 1;
                    assert!(
                        matches!(e.code, Errno::Corrupt | Errno::NotSup),
                        "{label} seed {seed}: {e}"
                    );
                }
            }
        }
        eprintln!("{label}: {mounted} mounted, {refused} refused, {walk_errors} walk errors");
        // The damage must have reached both the mount checks and the tree behind them.
        assert!(
            mounted > 20 && refused > 20 && walk_errors > 50,
            "{label}: {mounted}/{refused}/{walk_errors}"
        );
    }
}

#[test]
fn truncated_images_are_refused_or_read_safely() {
    for (label, image) in images() {
        for len in [
            0,
            511,
            1024,
            1535,
            4096,
            8191,
            65_536,
            image.len() / 2,
            image.len() - 512,
        ] {
            if let Ok(mut fs) = Erofs::mount(RamDisk::new(image[..len].to_vec())) {
                panic!(
                    "{label}: truncated to {len} but mounted ({:?})",
                    walk_all(&mut fs)
                );
            }
        }
    }
}
