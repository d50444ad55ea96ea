//! Boots the real module image in a rig on its own thread, with both server ports forwarded
//! to free host ports, for end-to-end tests that talk TCP to it.

use std::net::SocketAddr;

use iris::image::find_repo_root;
use iris::net::{DEFAULT_GUEST_NETADDR, Forward};
use iris::{Rig, RigHandle, RigOptions};

use super::image::{PrivateImage, ProductImage};

/// The token every guest of the suite requires unless its test sets `mcp.token` itself: each
/// request then goes through the bearer check, as on a real machine (the module would
/// otherwise generate one; `secure_default.rs` tests that path, reading the console).
pub const TOKEN: &str = "iris-suite-token-5d1c08";
/// The name the suite's requests put in `Host` (`mcp_request`, the raw requests), configured
/// as one of the machine's names (`mcp.hosts`) so the DNS-rebinding guard lets it pass.
pub const HOST: &str = "indy";

/// Rig options that boot `image` from `url_path` (a private copy, or the image itself), checked
/// against its digest, with the suite's token and host name, then `extra_env` (which may
/// override them), and the given guest ports forwarded to free host ports: quiet, no disks.
pub fn guest_options(
    url_path: &std::path::Path,
    image: &ProductImage,
    extra_env: &[&str],
    guest_ports: &[u16],
) -> RigOptions {
    let mut env = vec![
        format!("mcp.url=file:{}", url_path.display()),
        format!("mcp.sha256={}", image.sha256()),
        format!("netaddr={DEFAULT_GUEST_NETADDR}"),
        format!("mcp.token={TOKEN}"),
        format!("mcp.hosts={HOST}"),
    ];
    env.extend(extra_env.iter().map(|s| s.to_string()));
    RigOptions {
        root: Some(find_repo_root()),
        env,
        quiet: true,
        no_disk: true,
        forwards: guest_ports
            .iter()
            .map(|&guest_port| Forward {
                host_port: 0,
                guest_port,
            })
            .collect(),
        ..RigOptions::default()
    }
}

/// A running guest and the host addresses of its MCP port and port 80.
pub struct Guest {
    pub rig: RigHandle,
    pub mcp: SocketAddr,
    pub http: SocketAddr,
    _image: PrivateImage,
}

/// Boots the image with extra NVRAM variables, or `None` (with the reason printed) when the
/// image has not been built and no `IRIX7_IMAGE` demands one.
pub fn boot_guest(extra_env: &[&str]) -> Option<Guest> {
    boot_guest_with(extra_env, |_| {}, |_| {})
}

/// Like `boot_guest`, with `disk` attached as SCSI target 2 (the module's data disk; the tests
/// use the fixture image `cargo xtask fixtures` builds).
pub fn boot_guest_with_disk(extra_env: &[&str], disk: std::path::PathBuf) -> Option<Guest> {
    boot_guest_with(
        extra_env,
        move |o| {
            o.no_disk = false;
            o.disks = vec![(2, disk)];
        },
        |_| {},
    )
}

/// Like `boot_guest`, with `tweak` adjusting the rig options (watchdog period, disks) and
/// `before_boot` acting on the built rig (e.g. offering an older ABI table). The guest loads a
/// private copy of the image.
pub fn boot_guest_with(
    extra_env: &[&str],
    tweak: impl FnOnce(&mut RigOptions),
    before_boot: impl FnOnce(&mut Rig) + Send + 'static,
) -> Option<Guest> {
    let image = ProductImage::find_or_skip()?;
    let copy = image.private_copy();
    let mut opts = guest_options(copy.path(), &image, extra_env, &[7801, 80]);
    tweak(&mut opts);
    let rig = Rig::spawn_with(
        opts,
        Box::new(move |r: &mut Rig| {
            before_boot(r);
            Ok(())
        }),
    )
    .expect("the rig boots the image");
    let addrs = rig.forward_addrs().to_vec();
    Some(Guest {
        rig,
        mcp: addrs[0],
        http: addrs[1],
        _image: copy,
    })
}

/// Like [`boot_guest_with`], without the suite's `mcp.token`: what a machine with no token
/// configured does (the module generates one, or on a kernel that could not keep it off the
/// screen, keeps it to itself).
pub fn boot_guest_without_token(
    extra_env: &[&str],
    before_boot: impl FnOnce(&mut Rig) + Send + 'static,
) -> Option<Guest> {
    let suite = format!("mcp.token={TOKEN}");
    boot_guest_with(extra_env, |o| o.env.retain(|e| *e != suite), before_boot)
}

/// The token the module generated, from its line on the serial console (waiting for it).
pub fn generated_admin_token(g: &Guest) -> String {
    assert!(
        g.rig
            .wait_for_console("token generated: ", std::time::Duration::from_secs(30)),
        "no generated token on the console:\n{}",
        g.rig.console_text()
    );
    iris::token::generated_token(&g.rig.console_text()).expect("a token on its line")
}
