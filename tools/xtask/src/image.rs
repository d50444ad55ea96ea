//! `cargo xtask image`: builds the module for the R4400 and links it into the loadable image,
//! one ELF32 big-endian relocatable object (see `docs/image.md`).

use crate::cmd::{self, repo_root};
use crate::sizes;
use object::{Object, ObjectSection};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Where `cargo xtask image` puts the product image (what `boot/config.conf` points at).
pub const IMAGE_PATH: &str = "target/image/irix7-mcp.o";
/// The most text+rodata the image may have (896 KiB since the cell debugger: gdbstub and
/// `debug.*` took the last of 768; docs/image.md).
pub const IMAGE_BUDGET: usize = 896 * 1024;
/// The boot configuration the kernel (and the rig) read.
pub const CONFIG_PATH: &str = "boot/config.conf";
/// Where the changed image of the deploy test and the soak goes.
pub const DEPLOY_TEST_IMAGE: &str = "target/image/irix7-mcp-deploy.o";
/// Where the X25519 test image goes (`tools/x25519-image`, `tools/iris/tests/x25519.rs`).
pub const X25519_TEST_IMAGE: &str = "target/image/x25519-test.o";
/// The crate of that image: a workspace of its own, with its own lock file (its crates must not
/// change Cargo.lock, which the product image's build id digests).
pub const X25519_CRATE: TestCrate = TestCrate {
    dir: "tools/x25519-image",
    name: "irix7-x25519-image",
};

/// A crate outside the workspace built into a test image the way the module is.
#[derive(Clone, Copy)]
pub struct TestCrate {
    /// Its directory (holding Cargo.toml and Cargo.lock), relative to the repository root.
    pub dir: &'static str,
    pub name: &'static str,
}
/// The environment variable through which a build-time token reaches the module's build.
const TOKEN_ENV: &str = "IRIX7_MCP_BUILD_TOKEN";
/// The environment variable through which the build id reaches the module's build.
const BUILD_ID_ENV: &str = "IRIX7_MCP_BUILD_ID";
/// What goes into the module image, so what the build id digests: the module's crates, the
/// lock file, the target and toolchain, and how `image` builds and links.
const BUILD_INPUTS: &[&str] = &[
    "src",
    "indy",
    "kmem",
    "rpc",
    "rpc-conformance",
    "Cargo.toml",
    "Cargo.lock",
    "mips-irix7.json",
    "rust-toolchain.toml",
    "tools/xtask/src/image.rs",
    "tools/xtask/src/image.ld",
];
/// Hex digits of the build id's source digest.
const BUILD_ID_DIGITS: usize = 12;

/// How to build one image.
#[derive(Default)]
pub struct Options {
    /// Cargo features of the module (`conformance` for the test image).
    pub features: Vec<String>,
    /// A file outside the repository holding a token to bake into the image.
    pub token_file: Option<PathBuf>,
    /// Overrides the CPU (`mips3` builds the object the ISA audit must reject).
    pub cpu: Option<String>,
    /// Output path, relative to the repo root.
    pub out: PathBuf,
    /// Appended to the build id (`<digest>-<tag>`): a build that differs from the product
    /// image only in its id, as the deploy test needs one.
    pub build_tag: Option<String>,
    /// Another crate than the module (a test image), built and linked the same way.
    pub package: Option<TestCrate>,
}

/// A built image.
pub struct Image {
    pub path: PathBuf,
    /// The build id compiled in (`None` for an image read from disk).
    pub build_id: Option<String>,
    pub bytes: Vec<u8>,
    pub sha256: String,
}

impl Image {
    /// Reads an image already on disk.
    pub fn load(path: &Path) -> Result<Image, String> {
        let bytes =
            std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let sha256 = hex(&Sha256::digest(&bytes));
        Ok(Image {
            path: path.to_path_buf(),
            build_id: None,
            bytes,
            sha256,
        })
    }

    /// Allocated sections and their sizes in bytes, in file order.
    pub fn sections(&self) -> Result<Vec<(String, u64)>, String> {
        let file =
            object::File::parse(&*self.bytes).map_err(|e| format!("not an ELF object: {e}"))?;
        Ok(file
            .sections()
            .filter(|s| {
                matches!(
                    s.name(),
                    Ok(".text" | ".rodata" | ".data" | ".bss" | ".modinfo")
                )
            })
            .map(|s| (s.name().unwrap_or("?").to_string(), s.size()))
            .collect())
    }

    /// The bytes of one section.
    pub fn section_data(&self, name: &str) -> Result<Vec<u8>, String> {
        let file =
            object::File::parse(&*self.bytes).map_err(|e| format!("not an ELF object: {e}"))?;
        let s = file
            .section_by_name(name)
            .ok_or_else(|| format!("image has no {name} section"))?;
        s.data()
            .map(<[u8]>::to_vec)
            .map_err(|e| format!("{name}: {e}"))
    }

    /// Prints path, section sizes and digest.
    pub fn print_summary(&self) -> Result<(), String> {
        println!(
            "image   {}",
            self.path
                .strip_prefix(repo_root())
                .unwrap_or(&self.path)
                .display()
        );
        let mut code = 0;
        for (name, size) in self.sections()? {
            println!("  {name:<9} {size:>8} bytes");
            if name == ".text" || name == ".rodata" {
                code += size;
            }
        }
        println!("  text+rodata {code} bytes (budget {} bytes)", IMAGE_BUDGET);
        println!("  file      {:>8} bytes", self.bytes.len());
        println!("sha256  {}", self.sha256);
        if let Some(id) = &self.build_id {
            println!("build   {id}");
        }
        println!("text+rodata by crate");
        print!("{}", sizes::table(&sizes::crate_sizes(&self.bytes)?));
        Ok(())
    }
}

/// The changed image `tools/iris/tests/deploy.rs` and the soak deploy over the product image:
/// the same code with the build tag `deploy-test`, so another build id and digest.
pub fn build_deploy_test_image() -> Result<(), String> {
    let img = build(&Options {
        out: DEPLOY_TEST_IMAGE.into(),
        build_tag: Some("deploy-test".into()),
        ..Default::default()
    })?;
    println!("{} sha256 {}", DEPLOY_TEST_IMAGE, img.sha256);
    Ok(())
}

/// The X25519 test image: x25519-dalek's field arithmetic, long straight-line blocks on the
/// R4400, computing RFC 7748's first vector in `init` (`tools/iris/tests/x25519.rs`).
pub fn build_x25519_test_image() -> Result<(), String> {
    let img = build(&Options {
        out: X25519_TEST_IMAGE.into(),
        package: Some(X25519_CRATE),
        ..Default::default()
    })?;
    println!("{} sha256 {}", X25519_TEST_IMAGE, img.sha256);
    Ok(())
}

/// Builds the module library for the Indy target and links the image.
pub fn build(opts: &Options) -> Result<Image, String> {
    let root = repo_root();
    let package = opts.package.map_or("irix7-mcp", |c| c.name);
    let variant = if let Some(c) = opts.package {
        c.name
    } else if opts.cpu.is_some() || !opts.features.is_empty() {
        "variant"
    } else if opts.build_tag.is_some() {
        // Its own directory: alternating with the product build would rebuild both each time.
        "tagged"
    } else {
        "product"
    };
    let build_id = build_id(root, opts.build_tag.as_deref())?;
    let target_dir = root.join("target").join("mips").join(match &opts.cpu {
        Some(cpu) => cpu.as_str(),
        None => variant,
    });

    // A panic is a bug (kernel code never panics on input): it traps at once rather than
    // formatting a message, which keeps the formatting machinery out of the image (~16 KB)
    // and lets the kernel report the trapping address and function.
    let mut rustflags: Vec<String> = [
        "-Zlocation-detail=none",
        "-Zunstable-options",
        "-Cpanic=immediate-abort",
    ]
    .map(String::from)
    .to_vec();
    // Paths of this machine must not end up in the image (nor change its digest).
    rustflags.push(format!("--remap-path-prefix={}=/irix7-mcp", root.display()));
    if let Ok(home) =
        std::env::var("CARGO_HOME").or_else(|_| std::env::var("HOME").map(|h| h + "/.cargo"))
    {
        rustflags.push(format!("--remap-path-prefix={home}=/cargo"));
    }
    let sysroot = cmd::output(
        Command::new("rustc")
            .arg("--print")
            .arg("sysroot")
            .current_dir(root),
    )?;
    let sysroot = sysroot.trim();
    rustflags.push(format!("--remap-path-prefix={sysroot}=/rustc"));
    if let Some(cpu) = &opts.cpu {
        rustflags.push(format!("-Ctarget-cpu={cpu}"));
        rustflags.push(format!("-Ctarget-feature=+{cpu}"));
    }

    let mut cargo = Command::new("cargo");
    cargo
        .current_dir(root)
        .env("RUSTC_BOOTSTRAP", "1")
        .env("CARGO_ENCODED_RUSTFLAGS", rustflags.join("\x1f"))
        .env_remove("RUSTFLAGS")
        .args(["rustc", "--quiet"]);
    match opts.package {
        Some(c) => cargo
            .arg("--manifest-path")
            .arg(root.join(c.dir).join("Cargo.toml"))
            .arg("--locked"),
        None => cargo.args(["-p", package]),
    };
    cargo
        .args(["--lib", "--crate-type", "staticlib"])
        .args(["--profile", "image", "--target", "mips-irix7.json"])
        .args(["-Z", "json-target-spec", "-Z", "build-std=core,alloc"])
        // `optimize_for_size` makes core and alloc pick their small algorithms (sorting,
        // formatting): 7.7 KB less text.
        .args([
            "-Z",
            "build-std-features=compiler-builtins-mem,optimize_for_size",
        ])
        .arg("--target-dir")
        .arg(&target_dir);
    if !opts.features.is_empty() {
        cargo.arg("--features").arg(opts.features.join(","));
    }
    cargo.env(BUILD_ID_ENV, &build_id);
    match &opts.token_file {
        Some(path) => {
            cargo.env(TOKEN_ENV, read_token(root, path)?);
        }
        None => {
            cargo.env_remove(TOKEN_ENV);
        }
    }
    cmd::run(&mut cargo)?;

    let lib = target_dir.join(format!(
        "mips-irix7/image/lib{}.a",
        package.replace('-', "_")
    ));
    let out = root.join(&opts.out);
    if let Some(dir) = out.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let script = root.join("tools/xtask/src/image.ld");
    let lld = Path::new(sysroot)
        .join("lib/rustlib")
        .join(host_triple()?)
        .join("bin/rust-lld");
    cmd::run(
        Command::new(&lld)
            .args(["-flavor", "gnu", "-r", "--gc-sections", "--strip-debug"])
            .args([
                "--entry=irix7_mcp_init",
                "-u",
                "irix7_mcp_poll",
                "-u",
                "irix7_mcp_exit",
            ])
            .arg("-T")
            .arg(&script)
            .arg("-o")
            .arg(&out)
            .arg(&lib),
    )?;
    let mut img = Image::load(&out)?;
    img.build_id = Some(build_id);
    Ok(img)
}

/// The build id: the first [`BUILD_ID_DIGITS`] hex digits of a SHA-256 over the path and
/// contents of every file of [`BUILD_INPUTS`] that git tracks or would track, as the working
/// tree has them, except test sources ([`is_test_source`]), then `-<tag>` when given. Not the commit: `boot/config.conf` names the image's
/// digest and is committed, so an id naming the commit could never match its own image. The
/// same sources give the same id (and, the build being reproducible, the same image).
pub fn build_id(root: &Path, tag: Option<&str>) -> Result<String, String> {
    let listing = cmd::output(
        Command::new("git")
            .current_dir(root)
            .args([
                "ls-files",
                "-z",
                "--cached",
                "--others",
                "--exclude-standard",
                "--",
            ])
            .args(BUILD_INPUTS),
    )?;
    let mut files: Vec<&str> = listing
        .split('\0')
        .filter(|f| !f.is_empty() && !is_test_source(f))
        .collect();
    files.sort_unstable();
    files.dedup();
    let mut hash = Sha256::new();
    for f in files {
        // A file deleted from the working tree but still in the index counts as absent.
        let Ok(data) = std::fs::read(root.join(f)) else {
            continue;
        };
        hash.update((f.len() as u64).to_be_bytes());
        hash.update(f.as_bytes());
        hash.update((data.len() as u64).to_be_bytes());
        hash.update(&data);
    }
    let mut id = hex(&hash.finalize());
    id.truncate(BUILD_ID_DIGITS);
    if let Some(tag) = tag {
        if tag.is_empty()
            || tag.len() > 32
            || !tag.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        {
            return Err("a build tag is 1-32 of [A-Za-z0-9-]".into());
        }
        id.push('-');
        id.push_str(tag);
    }
    Ok(id)
}

/// Whether a build input is a test source: a `tests.rs` (the project's `#[cfg(test)] mod
/// tests;`) or a file under a `tests/` folder. None is compiled into the image, so a change to
/// tests alone leaves the build id, the image and `boot/config.conf` as they were. Were one
/// compiled in after all, the image's digest would still change and CI's config check fail.
fn is_test_source(path: &str) -> bool {
    let mut parts = path.split('/');
    let name = parts.next_back().unwrap_or("");
    name == "tests.rs" || parts.any(|dir| dir == "tests")
}

fn host_triple() -> Result<String, String> {
    let v = cmd::output(Command::new("rustc").arg("-vV"))?;
    v.lines()
        .find_map(|l| l.strip_prefix("host: "))
        .map(str::to_string)
        .ok_or_else(|| "rustc -vV printed no host triple".to_string())
}

/// Reads a token file, refusing one inside the repository (the token must never be committed).
fn read_token(root: &Path, path: &Path) -> Result<String, String> {
    let abs = path
        .canonicalize()
        .map_err(|e| format!("token file {}: {e}", path.display()))?;
    if abs.starts_with(root) {
        return Err("the token file must live outside the repository".into());
    }
    let text = std::fs::read_to_string(&abs).map_err(|e| format!("token file: {e}"))?;
    let token = text.trim();
    // The module refuses a shorter token at boot (src/net/access.rs, TOKEN_MIN).
    if token.len() < 16 || token.len() > 256 || !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err("the token file must hold 16-256 visible ASCII characters".into());
    }
    Ok(token.to_string())
}

/// The `mcp.sha256` value in `boot/config.conf`.
pub fn config_digest() -> Result<Option<String>, String> {
    let path = repo_root().join(CONFIG_PATH);
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{CONFIG_PATH}: {e}"))?;
    Ok(text.lines().find_map(|l| {
        let (k, v) = l.split_once('=')?;
        (k.trim() == "mcp.sha256").then(|| v.trim().to_string())
    }))
}

/// Rewrites the `mcp.sha256` line of `boot/config.conf` (appending it if missing).
pub fn update_config(sha256: &str) -> Result<(), String> {
    let path = repo_root().join(CONFIG_PATH);
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{CONFIG_PATH}: {e}"))?;
    let mut found = false;
    let mut out = String::new();
    for line in text.lines() {
        let is_digest = line
            .split_once('=')
            .is_some_and(|(k, _)| k.trim() == "mcp.sha256");
        if is_digest {
            out.push_str(&format!("mcp.sha256 = {sha256}\n"));
            found = true;
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    if !found {
        out.push_str(&format!("mcp.sha256 = {sha256}\n"));
    }
    std::fs::write(&path, out).map_err(|e| format!("{CONFIG_PATH}: {e}"))
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::is_test_source;

    #[test]
    fn test_sources_are_told_from_the_image_s() {
        for test in [
            "src/net/server/tests.rs",
            "src/net/server/tests/door.rs",
            "rpc/tests/schema.rs",
            "rpc/src/http/connection/tests/framing.rs",
        ] {
            assert!(is_test_source(test), "{test}");
        }
        for image in [
            "src/net/server.rs",
            "rpc/src/mcp/tools/registry.rs",
            "src/testsuite.rs",
            "Cargo.lock",
        ] {
            assert!(!is_test_source(image), "{image}");
        }
    }
}
