//! Path resolution rules, on the real image through the merged view.

use super::fixture::{fixtures, mount};
use crate::hil::block::RamDisk;
use crate::services::fs::error::Errno;
use crate::services::fs::overlay::{DEFAULT_OVERLAY_MAX, Overlay};
use crate::services::fs::stat::FileType;

fn view() -> Option<Overlay<RamDisk>> {
    let f = fixtures()?;
    Some(Overlay::new(Some(mount(&f.plain)), DEFAULT_OVERLAY_MAX))
}

fn code(r: Result<impl std::fmt::Debug, crate::services::fs::FsError>) -> Errno {
    r.expect_err("expected an error").code
}

fn canonical(ov: &mut Overlay<RamDisk>, path: &str, follow: bool) -> String {
    ov.resolve(path, follow)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .path
}

#[test]
fn dots_empty_components_and_root_bounds() {
    let Some(mut ov) = view() else { return };
    assert_eq!(canonical(&mut ov, "/", true), "/");
    assert_eq!(canonical(&mut ov, "etc//motd", true), "/etc/motd");
    assert_eq!(canonical(&mut ov, "/./etc/./motd", true), "/etc/motd");
    assert_eq!(canonical(&mut ov, "/../../../etc/motd", true), "/etc/motd");
    assert_eq!(canonical(&mut ov, "/usr/bin/../../etc/../..", true), "/");
    assert_eq!(canonical(&mut ov, "///", true), "/");
    assert_eq!(canonical(&mut ov, "/etc/", true), "/etc");
}

#[test]
fn invalid_paths_are_refused_clearly() {
    let Some(mut ov) = view() else { return };
    assert_eq!(code(ov.stat("")), Errno::Inval);
    let nul = ov.stat("/etc/mo\0td").unwrap_err();
    assert_eq!(nul.code, Errno::Inval);
    assert!(nul.message.contains("NUL"), "{nul}");
    let long_name = "x".repeat(256);
    assert_eq!(
        code(ov.stat(&format!("/etc/{long_name}"))),
        Errno::NameTooLong
    );
    assert_eq!(code(ov.stat(&"y".repeat(4096))), Errno::NameTooLong);
    assert_eq!(code(ov.stat(&"/a".repeat(2100))), Errno::NameTooLong);
    // 255 bytes is allowed and simply absent.
    assert_eq!(
        code(ov.stat(&format!("/etc/{}", "x".repeat(255)))),
        Errno::NoEnt
    );
    assert_eq!(
        code(ov.write("", b"x", crate::services::fs::overlay::WriteMode::Truncate)),
        Errno::Inval
    );
}

#[test]
fn missing_and_non_directory_components() {
    let Some(mut ov) = view() else { return };
    assert_eq!(code(ov.stat("/nope")), Errno::NoEnt);
    assert_eq!(code(ov.stat("/nope/deeper")), Errno::NoEnt);
    assert_eq!(code(ov.stat("/etc/motd/x")), Errno::NotDir);
    assert_eq!(code(ov.stat("/etc/motd/")), Errno::NotDir);
    assert_eq!(code(ov.stat("/etc/motd/..")), Errno::NotDir);
    assert_eq!(code(ov.list("/etc/motd", 0, 10)), Errno::NotDir);
    assert_eq!(code(ov.read("/etc", 0, &mut [0; 4])), Errno::IsDir);
    assert_eq!(code(ov.read("/dev/fifo", 0, &mut [0; 4])), Errno::Inval);
}

#[test]
fn symlinks_are_followed_except_in_final_position_for_stat() {
    let Some(mut ov) = view() else { return };
    assert_eq!(ov.stat("/link").unwrap().file_type, FileType::Symlink);
    assert_eq!(ov.readlink("/link").unwrap(), "etc/motd");
    assert_eq!(canonical(&mut ov, "/link", true), "/etc/motd");
    let mut buf = [0u8; 20];
    let n = ov.read("/link", 0, &mut buf).unwrap();
    assert_eq!(&buf[..n], b"Welcome to IRIX 7 on");
    // A relative link with `..`, an absolute link, a link to a directory and `..` after it.
    assert_eq!(canonical(&mut ov, "/usr/bin/motd-link", true), "/etc/motd");
    assert_eq!(
        canonical(&mut ov, "/etc/hostname-abs", true),
        "/etc/hostname"
    );
    assert_eq!(
        canonical(&mut ov, "/docs/irix7/README", true),
        "/usr/share/doc/irix7/README"
    );
    assert_eq!(canonical(&mut ov, "/docs/..", true), "/usr/share");
    assert_eq!(canonical(&mut ov, "/docs/", false), "/usr/share/doc");
    assert_eq!(canonical(&mut ov, "/docs", false), "/docs");
    // The >512-byte target of /longlink is 300 `./` then etc/motd.
    assert!(ov.readlink("/longlink").unwrap().len() > 512);
    assert_eq!(canonical(&mut ov, "/longlink", true), "/etc/motd");
    assert_eq!(code(ov.read("/dangling", 0, &mut buf)), Errno::NoEnt);
    assert_eq!(ov.stat("/dangling").unwrap().file_type, FileType::Symlink);
    assert_eq!(code(ov.readlink("/etc/motd")), Errno::Inval);
}

#[test]
fn symlink_loops_end_in_e_loop() {
    let Some(mut ov) = view() else { return };
    let err = ov.read("/loop/a", 0, &mut [0; 4]).unwrap_err();
    assert_eq!(err.code, Errno::Loop, "{err}");
    assert_eq!(code(ov.stat("/loop/a/x")), Errno::Loop);
    assert_eq!(ov.stat("/loop/a").unwrap().file_type, FileType::Symlink);
}
