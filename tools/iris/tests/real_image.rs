//! Boots the real irix7-mcp image (`cargo xtask image`) when it has been built: the module's
//! banner must reach the console and the serial ring. Skipped, with the reason printed, when the
//! image is absent. `IRIX7_IMAGE` names another image file.

mod common;

use std::path::PathBuf;

use iris::image::{find_repo_root, sha256_hex};
use iris::{Rig, RigOptions, RunEnd};

fn image_path() -> PathBuf {
    std::env::var_os("IRIX7_IMAGE")
        .map(PathBuf::from)
        .unwrap_or_else(|| find_repo_root().join("target/image/irix7-mcp.o"))
}

#[test]
fn real_image_boots_and_prints_its_banner() {
    let path = image_path();
    let Ok(image) = std::fs::read(&path) else {
        println!(
            "skipped: no module image at {} (run `cargo xtask image`)",
            path.display()
        );
        return;
    };
    // A config naming this very file, so a stale boot/config.conf does not hide a bad image.
    let root = common::temp_root("real");
    let abs = path.canonicalize().unwrap();
    std::fs::write(
        root.join("boot/config.conf"),
        format!(
            "mcp.url = file:{}\nmcp.sha256 = {}\n",
            abs.display(),
            sha256_hex(&image)
        ),
    )
    .unwrap();
    let opts = RigOptions {
        root: Some(find_repo_root()),
        config: Some(root.join("boot/config.conf")),
        quiet: true,
        no_disk: true,
        ..RigOptions::default()
    };
    let mut rig = Rig::new(opts).unwrap();
    rig.boot().unwrap();
    let info = rig.image().unwrap().modinfo.clone();
    assert_eq!(info.name, "irix7-mcp");
    // The banner names the ABI the kernel offers; `.modinfo` names the oldest the image runs on.
    assert_eq!(info.abi, 10);
    let banner = format!("irix7-mcp {}, ABI {}", info.version, indy::abi::ABI_VERSION);
    let console = rig.console_text();
    assert!(
        console.contains(&banner),
        "no banner `{banner}` in:\n{console}"
    );
    let (head, ring) = rig.serial_ring();
    assert!(String::from_utf8_lossy(&ring).contains(&banner));
    assert_eq!(head as usize, console.len());
    let init = rig.counters().init_insns;
    assert!(init > 0);
    println!("irix7_mcp_init ran {init} guest instructions");
    assert_eq!(rig.run_for(200).unwrap(), RunEnd::TimeLimit);
    let c = rig.counters();
    assert!(c.polls > 0, "{c:?}");
    println!("{} polls, {} instructions in polls", c.polls, c.poll_insns);
    rig.stop().unwrap();
}
