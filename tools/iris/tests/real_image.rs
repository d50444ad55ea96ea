//! Boots the real irix7-mcp image (`cargo xtask image`) when it has been built: the module's
//! banner must reach the console and the serial ring. Skipped, with the reason printed, when the
//! image is absent. `IRIX7_IMAGE` names another image file.

mod support;

use iris::image::find_repo_root;
use iris::{Rig, RigOptions, RunEnd};
use support::image::ProductImage;
use support::synthetic::temp_root;

#[test]
fn real_image_boots_and_prints_its_banner() {
    let Some(image) = ProductImage::find_or_skip() else {
        return;
    };
    // A config naming this very file, so a stale boot/config.conf does not hide a bad image.
    let root = temp_root("real");
    std::fs::write(
        root.join("boot/config.conf"),
        format!(
            "mcp.url = file:{}\nmcp.sha256 = {}\n",
            image.path.display(),
            image.sha256()
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
    // The banner also says which build runs: the id and the digest the kernel verified.
    let line = console.lines().find(|l| l.contains(&banner)).unwrap();
    assert!(
        line.contains(", build ")
            && line.ends_with(&format!("image sha256 {}", &image.sha256()[..12])),
        "{line}"
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
    // Every pointer the module handed the kernel was one it could use (an empty slice's
    // dangling pointer included).
    assert_eq!(rig.kernel_stats().bad_pointers, 0);
    rig.stop().unwrap();
}
