//! What a stat, an open and a listing allocate: the calls agents make most take no memory per
//! path component or per entry. Counted per thread by the `allocation-counter` crate's test
//! allocator, so that tests running beside these do not disturb the counts.

use super::fixture::{fixtures, mount};
use crate::services::fs::overlay::{DEFAULT_OVERLAY_MAX, Overlay, WriteMode};

/// Allocations (and reallocations) `f` makes on this thread, counted by the
/// `allocation-counter` crate's test allocator.
fn allocations<T>(f: impl FnOnce() -> T) -> (usize, T) {
    let mut out = None;
    let info = allocation_counter::measure(|| out = Some(f()));
    (
        info.count_total as usize,
        out.expect("measure runs its closure"),
    )
}

#[test]
fn stat_open_and_list_allocate_once_per_result() {
    let Some(f) = fixtures() else { return };
    let mut ov = Overlay::new(Some(mount(&f.plain)), DEFAULT_OVERLAY_MAX);
    // The first calls fill the block cache; the figures are for a warm one, as on the Indy.
    ov.stat("/usr/share/doc/irix7/README").unwrap();
    ov.list("/", 0, 48).unwrap();

    // The canonical path is the one allocation, however deep the path.
    let (n, st) = allocations(|| ov.stat("/etc/motd"));
    assert!(st.is_ok());
    assert_eq!(n, 1, "stat /etc/motd");
    let (n, r) = allocations(|| ov.resolve("/usr/share/doc/irix7/README", true));
    assert_eq!(r.unwrap().path, "/usr/share/doc/irix7/README");
    assert_eq!(n, 1, "a five-component path");
    let (n, file) = allocations(|| ov.open("/etc/motd"));
    assert!(file.is_ok());
    assert_eq!(n, 1, "open /etc/motd");
    // `..` keeps the directories above, in one more allocation.
    let (n, r) = allocations(|| ov.resolve("/usr/bin/../share/doc", true));
    assert_eq!(r.unwrap().path, "/usr/share/doc");
    assert!(n <= 2, "`..` took {n} allocations");

    // A listing: its path, its names and its stats, whatever the number of entries.
    let (n, l) = allocations(|| ov.list("/", 0, 48));
    let l = l.unwrap();
    assert!(l.entries.len() > 10);
    assert_eq!(n, 3, "list /");

    // Overlay entries beside the image's take nothing more to merge.
    ov.write("/etc/zz", b"x", WriteMode::Truncate).unwrap();
    ov.mkdir("/etc.d").unwrap();
    let (n, l) = allocations(|| ov.list("/etc", 0, 48));
    let names: Vec<&str> = l.as_ref().unwrap().entries.iter().map(|e| e.name).collect();
    assert_eq!(names.last(), Some(&"zz"), "{names:?}");
    assert!(!names.contains(&"etc.d"), "{names:?}");
    assert_eq!(n, 3, "list /etc");
}
