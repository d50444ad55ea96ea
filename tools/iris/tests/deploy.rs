//! Deploys an agent can trust, end to end on the real image: the machine says which build it
//! runs; a changed image named in the boot configuration takes at `system.reset` and the new
//! build id answers; an image with the wrong digest, or none at all, is refused and the machine
//! comes back on the last good image, saying why in `status` and on the console.
//!
//! The same over HTTPS: the image comes from a local TLS server whose self-signed certificate
//! the boot configuration pins (`mcp.tls_pin`); another certificate is refused.
//!
//! The kernel's side alone is tested with tiny synthetic modules: a new start of the rig falls
//! back to the last good image it kept on disk when the configured one fails its init.
//!
//! The changed image is the product image built with a build tag (`cargo xtask image
//! --build-tag deploy-test --out target/image/irix7-mcp-deploy.o`, which `cargo xtask test`
//! builds): the same code with another build id, so another digest.

mod support;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use iris::image::{find_repo_root, sha256_hex};
use iris::net::{DEFAULT_GUEST_NETADDR, Forward};
use iris::{Rig, RigError, RigOptions};
use serde_json::{Value, json};
use support::http::{connect, read_response};
use support::image::{CHANGED_TAG as TAG, ProductImage, changed_image};
use support::mcp::{mcp_request, messages, tool_request, with_bearer};
use support::synthetic::{Asm, ModuleObj, hello_module, idle_poll, synthetic_options};
use support::tls::TlsImageServer;

const TOKEN: &str = "deploy-test-token-0123";
/// Server limit: 20 requests per rolling second per client; polling stays well under it.
const PACE: Duration = Duration::from_millis(200);

/// Points the boot configuration at `image` with digest `sha256`, as `cargo xtask deploy` does.
fn configure(config: &Path, image: &Path, sha256: &str) {
    configure_url(config, &format!("file:{}", image.display()), sha256, None);
}

/// The same with any URL and, for `https://`, a certificate pin.
fn configure_url(config: &Path, url: &str, sha256: &str, tls_pin: Option<&str>) {
    let pin = tls_pin.map_or(String::new(), |p| format!("mcp.tls_pin = {p}\n"));
    std::fs::write(
        config,
        format!("mcp.url = {url}\nmcp.sha256 = {sha256}\n{pin}"),
    )
    .unwrap();
}

/// Boots the rig on `config`, with the token and the MCP port forwarded.
fn boot(config: &Path) -> (iris::RigHandle, SocketAddr) {
    let opts = RigOptions {
        root: Some(find_repo_root()),
        config: Some(config.to_path_buf()),
        env: vec![
            format!("netaddr={DEFAULT_GUEST_NETADDR}"),
            format!("mcp.token={TOKEN}"),
            // The suite's requests name the machine in Host (the DNS-rebinding guard).
            format!("mcp.hosts={}", support::guest::HOST),
        ],
        quiet: true,
        no_disk: true,
        forwards: vec![Forward {
            host_port: 0,
            guest_port: 7801,
        }],
        ..RigOptions::default()
    };
    let g = Rig::spawn(opts).expect("the rig boots the product image");
    let addr = g.forward_addrs()[0];
    (g, addr)
}

/// A fresh directory for one test's images and configuration.
fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("iris-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A tool call with the token on a fresh connection: the JSON-RPC message, or `None` when the
/// guest does not answer (yet).
fn try_call(addr: SocketAddr, raw: &str) -> Option<Value> {
    use std::io::Write;
    let mut s = connect(addr);
    s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    s.write_all(with_bearer(raw, TOKEN).as_bytes()).ok()?;
    let r = read_response(&mut s, &mut Vec::new(), false)?;
    (r.status == 200).then(|| messages(&r.body).pop()).flatten()
}

/// `status` once the guest answers, within `within`.
fn status(addr: SocketAddr, within: Duration) -> Value {
    let start = Instant::now();
    loop {
        if let Some(m) = try_call(addr, &tool_request(1, "status", json!({}))) {
            return m["result"]["structuredContent"].clone();
        }
        assert!(
            start.elapsed() < within,
            "the guest did not answer within {within:?}"
        );
        std::thread::sleep(PACE);
    }
}

/// `serverInfo.version` as the modern era reports it on `server/discover`.
fn server_version(addr: SocketAddr) -> String {
    let raw = mcp_request(
        2,
        "server/discover",
        json!({}),
        json!({}),
        "application/json, text/event-stream",
    );
    let m = try_call(addr, &raw).expect("server/discover answers");
    m["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["version"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Asks the machine to reset and waits until the rig has reset it `resets` times in all.
fn reset(g: &iris::RigHandle, addr: SocketAddr, resets: u64) {
    let m = try_call(
        addr,
        &tool_request(3, "system.reset", json!({"delay_ms": 100})),
    )
    .expect("system.reset answers");
    assert_eq!(
        m["result"]["structuredContent"],
        json!({"action": "reset", "in_ms": 100}),
        "{m}"
    );
    let start = Instant::now();
    while g.counters().resets < resets {
        assert!(start.elapsed() < Duration::from_secs(30), "no reset");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_changed_image_takes_and_a_refused_one_falls_back_to_the_last_good() {
    let Some(product) = ProductImage::find_or_skip() else {
        return;
    };
    let Some(changed) = changed_image() else {
        return;
    };
    let (sha_a, sha_b) = (product.sha256(), sha256_hex(&changed));
    assert_ne!(sha_a, sha_b, "the changed image must differ");

    let dir = scratch("deploy");
    let (a, b, config) = (dir.join("a.o"), dir.join("b.o"), dir.join("config.conf"));
    std::fs::write(&a, &product.bytes).unwrap();
    std::fs::write(&b, &changed).unwrap();
    configure(&config, &a, &sha_a);
    let (g, addr) = boot(&config);

    // Boot: the machine says which build it runs.
    let before = status(addr, Duration::from_secs(20));
    let id_a = before["build_id"].as_str().unwrap().to_string();
    assert_eq!(before["image"]["sha256"], sha_a.as_str(), "{before}");
    assert_eq!(before["image"]["sha256_short"], &sha_a[..12]);
    assert_eq!(before["image"]["deploy"], "ok");
    assert!(!id_a.ends_with(TAG), "{id_a}");
    assert_eq!(
        server_version(addr),
        format!(
            "{}+{id_a}.{}",
            before["module_version"].as_str().unwrap(),
            &sha_a[..12]
        )
    );

    // Deploy the changed image: name it in the configuration, reset, see the new build answer.
    configure(&config, &b, &sha_b);
    reset(&g, addr, 1);
    let after = status(addr, Duration::from_secs(30));
    let id_b = after["build_id"].as_str().unwrap().to_string();
    assert_eq!(after["image"]["sha256"], sha_b.as_str(), "{after}");
    assert_eq!(after["image"]["deploy"], "ok");
    assert_eq!(
        id_b,
        format!("{id_a}-{TAG}"),
        "both images must be built from the same sources (rebuild the stale one)"
    );
    assert!(server_version(addr).contains(&format!("+{id_b}.{}", &sha_b[..12])));

    // Deploy a corrupt image (one byte changed, the digest of the real one): the kernel refuses
    // it and the machine comes back on the last good image, the changed one, saying why.
    let mut corrupt = product.bytes.clone();
    let mid = corrupt.len() / 2;
    corrupt[mid] ^= 0x40;
    let c = dir.join("c.o");
    std::fs::write(&c, &corrupt).unwrap();
    configure(&config, &c, &sha_a);
    reset(&g, addr, 2);
    let fallen = status(addr, Duration::from_secs(30));
    assert_eq!(fallen["build_id"], id_b.as_str(), "{fallen}");
    assert_eq!(fallen["image"]["sha256"], sha_b.as_str());
    assert_eq!(fallen["image"]["deploy"], "sha256 mismatch");
    assert_eq!(fallen["image"]["refused_sha256"], sha_a.as_str());
    let line = format!("deploy of {sha_a} refused: sha256 mismatch; running last good {sha_b}");
    assert!(
        g.wait_for_console(&line, Duration::from_secs(5)),
        "no `{line}`"
    );

    // An image that is not there at all: refused as a failed fetch, same fallback.
    configure(&config, &dir.join("missing.o"), &sha_a);
    reset(&g, addr, 3);
    let fallen = status(addr, Duration::from_secs(30));
    assert_eq!(fallen["image"]["sha256"], sha_b.as_str(), "{fallen}");
    assert_eq!(fallen["image"]["deploy"], "fetch failed");
    assert!(g.wait_for_console(
        &format!("deploy of {sha_a} refused: fetch failed; running last good {sha_b}"),
        Duration::from_secs(5)
    ));

    // Fixed: the configured image runs again and the refusal is gone.
    configure(&config, &a, &sha_a);
    reset(&g, addr, 4);
    let back = status(addr, Duration::from_secs(30));
    assert_eq!(back["build_id"], id_a.as_str(), "{back}");
    assert_eq!(back["image"]["deploy"], "ok");
    assert!(back["image"].get("refused_sha256").is_none());

    g.stop().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_new_rig_boots_the_last_good_image_it_kept_when_the_configured_one_fails_init() {
    let good = hello_module("the good module is up\n", idle_poll()).build();
    let mut opts = synthetic_options("last-good", &good);
    let root = opts.root.clone().unwrap();
    opts.last_good_file = Some("target/iris/last-good.o".into());
    let mut rig = Rig::new(opts.clone()).unwrap();
    rig.boot().unwrap();
    rig.stop().unwrap();
    let kept = root.join("target/iris/last-good.o");
    assert_eq!(
        std::fs::read(&kept).unwrap(),
        good,
        "kept for the next start"
    );

    // The next deploy's init fails.
    let mut a = Asm::default();
    a.func("irix7_mcp_init").ret(-12);
    a.func("irix7_mcp_poll").ret(0);
    a.func("irix7_mcp_exit").ret(0);
    let bad = ModuleObj::new(a).build();
    let (sha_good, sha_bad) = (sha256_hex(&good), sha256_hex(&bad));
    std::fs::write(root.join("bad.o"), &bad).unwrap();
    configure(&root.join("boot/config.conf"), Path::new("bad.o"), &sha_bad);

    let mut rig = Rig::new(opts.clone()).unwrap();
    rig.boot().unwrap();
    let console = rig.console_text();
    assert!(
        console.contains("kernel: irix7_mcp_init failed with status -12"),
        "{console}"
    );
    let line = format!("deploy of {sha_bad} refused: init failed; running last good {sha_good}\n");
    assert!(console.contains(&line), "{console}");
    assert!(console.ends_with("the good module is up\n"), "{console}");
    // What the module reads through `image_info`: the good digest, why, the refused digest.
    let info = rig
        .read_phys(
            u64::from(indy::map::RAM_PHYS + iris::memmap::IMAGE_INFO_OFF),
            68,
        )
        .unwrap();
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    assert_eq!(hex(&info[..32]), sha_good);
    assert_eq!(info[32..36], indy::abi::DEPLOY_INIT_FAILED.to_be_bytes());
    assert_eq!(hex(&info[36..]), sha_bad);
    rig.stop().unwrap();

    // Without a kept image the same deploy stops the machine, as before.
    std::fs::remove_file(&kept).unwrap();
    let e = Rig::new(opts).unwrap().boot().unwrap_err();
    assert_eq!(e, RigError::InitFailed(-12));
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn an_https_deploy_from_a_server_with_a_pinned_self_signed_certificate() {
    let Some(product) = ProductImage::find_or_skip() else {
        return;
    };
    let Some(changed) = changed_image() else {
        return;
    };
    let (sha_a, sha_b) = (product.sha256(), sha256_hex(&changed));
    let server = TlsImageServer::start(changed);
    let dir = scratch("deploy-https");
    let (a, config) = (dir.join("a.o"), dir.join("config.conf"));
    std::fs::write(&a, &product.bytes).unwrap();
    configure(&config, &a, &sha_a);
    let (g, addr) = boot(&config);
    let before = status(addr, Duration::from_secs(20));
    assert_eq!(before["image"]["sha256"], sha_a.as_str(), "{before}");

    // The changed image over HTTPS, the server's certificate pinned: it takes.
    let url = server.url("irix7-mcp.o");
    configure_url(&config, &url, &sha_b, Some(&server.cert_sha256));
    reset(&g, addr, 1);
    let after = status(addr, Duration::from_secs(30));
    assert_eq!(after["image"]["sha256"], sha_b.as_str(), "{after}");
    assert_eq!(after["image"]["deploy"], "ok");
    assert!(
        after["build_id"].as_str().unwrap().ends_with(TAG),
        "{after}"
    );
    assert!(
        g.console_text()
            .contains(&format!("loading irix7-mcp from {url}"))
    );
    assert_eq!(server.served.load(std::sync::atomic::Ordering::SeqCst), 1);

    // Another pin: the kernel refuses the server, and the machine stays on the last good image.
    let wrong = "0".repeat(64);
    configure_url(&config, &url, &sha_a, Some(&wrong));
    reset(&g, addr, 2);
    let fallen = status(addr, Duration::from_secs(30));
    assert_eq!(fallen["image"]["sha256"], sha_b.as_str(), "{fallen}");
    assert_eq!(fallen["image"]["deploy"], "fetch failed");
    let console = g.console_text();
    assert!(
        console.contains(&format!("is not the pinned {wrong}")),
        "{console}"
    );
    g.stop().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn https_fetch_trusts_only_the_pinned_certificate() {
    let server = TlsImageServer::start(b"an image".to_vec());
    let url = server.url("x.o");
    let pin = server.cert_sha256.clone();
    let fetch = |pin: Option<&str>| iris::image::fetch(&url, Path::new("/"), pin);
    assert_eq!(fetch(Some(&pin)).unwrap(), b"an image");
    assert_eq!(
        fetch(Some(&pin.to_uppercase())).unwrap(),
        b"an image",
        "the pin in either case"
    );
    let e = fetch(Some(&"ab".repeat(32))).unwrap_err().to_string();
    assert!(
        e.contains(&format!("certificate sha256 {pin} is not the pinned")),
        "{e}"
    );
    // Without a pin the web's roots decide, and a self-signed certificate is not among them.
    let e = fetch(None).unwrap_err().to_string();
    assert!(e.contains("UnknownIssuer"), "{e}");
    assert_eq!(server.served.load(std::sync::atomic::Ordering::SeqCst), 2);
}
