//! Starts the iris rig in the background for end-to-end tests: one module image, its NVRAM
//! environment, one forwarded host port; waits until the guest answers `GET /` and kills the rig
//! when the handle is dropped (also when a test fails or panics).

use crate::cmd::{self, repo_root};
use crate::image::{self, Image};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The guest port the module serves MCP on.
const GUEST_PORT: u16 = 7801;
/// The rig's default `netaddr` (docs/network.md), passed explicitly so tests do not depend on it.
const NETADDR: &str = "172.31.77.2/24";
/// Boot plus network bring-up takes about a second on the release rig; a debug rig is slower.
const READY_TIMEOUT: Duration = Duration::from_secs(90);

/// What to boot.
pub struct Spec<'a> {
    /// A short name for logs (`product`, `token`, `conformance`).
    pub name: &'a str,
    pub image: &'a Image,
    /// Extra NVRAM variables (`KEY=VALUE`), e.g. `mcp.token=…`.
    pub env: Vec<String>,
}

/// A rig running in the background; dropping it kills the rig.
pub struct Rig {
    child: Child,
    port: u16,
    log: PathBuf,
    name: String,
}

/// The product image (default features): built now, or the prebuilt file named by
/// `IRIX7_PRODUCT_IMAGE` (for iterating on tests while the module tree does not build).
pub fn product_image() -> Result<Image, String> {
    prebuilt_or("IRIX7_PRODUCT_IMAGE", image::Options::default())
}

/// The conformance test image (product tools plus the everything-server fixtures), or the
/// prebuilt file named by `IRIX7_CONFORMANCE_IMAGE`.
pub fn conformance_image() -> Result<Image, String> {
    prebuilt_or(
        "IRIX7_CONFORMANCE_IMAGE",
        image::Options {
            features: vec!["conformance".into()],
            out: "target/image/irix7-mcp-conformance.o".into(),
            ..Default::default()
        },
    )
}

fn prebuilt_or(var: &str, mut opts: image::Options) -> Result<Image, String> {
    if let Some(p) = std::env::var_os(var) {
        let p = repo_root().join(p);
        println!("{var}: using {}", p.display());
        return Image::load(&p);
    }
    if opts.out.as_os_str().is_empty() {
        opts.out = image::IMAGE_PATH.into();
    }
    image::build(&opts)
}

/// The rig binary: `IRIS_BIN` if set, else a release build made now (what `cargo iris` runs).
pub fn rig_binary() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("IRIS_BIN") {
        return Ok(PathBuf::from(p));
    }
    // The rig links the fixed Unicorn (built by the prerequisites): without it its build stops.
    crate::prereqs::ensure()?;
    release_binary("iris", "iris")
}

/// Builds `package` (release) now and returns the path of its binary `bin`.
pub fn release_binary(package: &str, bin: &str) -> Result<PathBuf, String> {
    let root = repo_root();
    cmd::run(Command::new("cargo").current_dir(root).args([
        "build",
        "--quiet",
        "--release",
        "-p",
        package,
    ]))?;
    let target = match std::env::var_os("CARGO_TARGET_DIR") {
        Some(d) => root.join(d),
        None => root.join("target"),
    };
    Ok(target.join("release").join(bin))
}

/// A port nobody listens on right now (the rig binds it a moment later).
fn free_port() -> Result<u16, String> {
    let l = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("no free port: {e}"))?;
    l.local_addr()
        .map(|a| a.port())
        .map_err(|e| format!("no free port: {e}"))
}

impl Rig {
    /// Boots `spec` on the rig binary `bin` and waits until `GET /` answers.
    pub fn start(bin: &Path, spec: &Spec<'_>) -> Result<Rig, String> {
        Rig::start_with_args(bin, spec, &[])
    }

    /// Like `start`, with extra rig flags (e.g. `--no-disk`).
    pub fn start_with_args(bin: &Path, spec: &Spec<'_>, args: &[&str]) -> Result<Rig, String> {
        // Another program may take the free port before the rig binds it: pick another.
        let mut attempt = 0;
        loop {
            match Rig::start_once(bin, spec, args) {
                Err(e) if attempt < 2 && e.contains("in use") => attempt += 1,
                other => return other,
            }
        }
    }

    fn start_once(bin: &Path, spec: &Spec<'_>, args: &[&str]) -> Result<Rig, String> {
        let root = repo_root();
        let logs = root.join("target/clients");
        std::fs::create_dir_all(&logs).map_err(|e| format!("{}: {e}", logs.display()))?;
        let log = logs.join(format!("rig-{}.log", spec.name));
        // The console in it shows the token the module generates.
        let out = crate::private::create(&log)?;
        let err = out
            .try_clone()
            .map_err(|e| format!("{}: {e}", log.display()))?;
        let port = free_port()?;
        // Relative to the root the rig runs in, when the image is under it: the console the
        // module prints (and screenshots of it) then names no machine's paths.
        let image = spec
            .image
            .path
            .strip_prefix(root)
            .unwrap_or(&spec.image.path);
        let mut c = Command::new(bin);
        c.current_dir(root)
            .arg("--env")
            .arg(format!("mcp.url=file:{}", image.display()))
            .arg("--env")
            .arg(format!("mcp.sha256={}", spec.image.sha256))
            .arg("--env")
            .arg(format!("netaddr={NETADDR}"));
        for e in &spec.env {
            c.arg("--env").arg(e);
        }
        c.args(args)
            .arg("--forward")
            .arg(format!("{port}:{GUEST_PORT}"))
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err);
        let child = c
            .spawn()
            .map_err(|e| format!("cannot start the rig {}: {e}", bin.display()))?;
        let mut rig = Rig {
            child,
            port,
            log,
            name: spec.name.to_string(),
        };
        rig.wait_ready()?;
        println!(
            "rig {}: {} ({}), log {}",
            rig.name,
            rig.base_url(),
            spec.image.path.display(),
            rig.log.display()
        );
        Ok(rig)
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The MCP endpoint.
    pub fn mcp_url(&self) -> String {
        format!("{}/mcp", self.base_url())
    }

    /// The token the module generated at boot (booted without `mcp.token`), from the file the
    /// rig writes for its forwarded port (`target/iris/token-<port>`).
    pub fn generated_token(&self) -> Result<String, String> {
        let path = self.token_path();
        let start = Instant::now();
        loop {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            if !text.trim().is_empty() {
                return Ok(text.trim().to_string());
            }
            if start.elapsed() > Duration::from_secs(10) {
                return Err(format!(
                    "rig {}: no token in {}:\n{}",
                    self.name,
                    path.display(),
                    self.log_tail()
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The rig's process id (the lab test kills one rig by it).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Where the rig writes the token its module generated (`target/iris/token-<port>`).
    pub fn token_path(&self) -> PathBuf {
        repo_root()
            .join("target/iris")
            .join(format!("token-{}", self.port))
    }

    /// The last lines of the rig's console and notes, for a failure message.
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    /// Fails if the rig has exited (a crash during the tests would otherwise look like
    /// connection errors only).
    pub fn check_alive(&mut self) -> Result<(), String> {
        match self.child.try_wait() {
            Ok(None) => Ok(()),
            Ok(Some(status)) => Err(format!(
                "rig {} exited ({status}):\n{}",
                self.name,
                self.log_tail()
            )),
            Err(e) => Err(format!("rig {}: {e}", self.name)),
        }
    }

    fn wait_ready(&mut self) -> Result<(), String> {
        let start = Instant::now();
        loop {
            self.check_alive()?;
            if get_root(self.port).is_ok() {
                return Ok(());
            }
            if start.elapsed() > READY_TIMEOUT {
                return Err(format!(
                    "rig {}: GET / did not answer within {} s:\n{}",
                    self.name,
                    READY_TIMEOUT.as_secs(),
                    self.log_tail()
                ));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        // Killed, the rig cannot remove its token file or its registration for the lab
        // gateway itself.
        let _ = std::fs::remove_file(self.token_path());
        let _ = std::fs::remove_file(
            repo_root()
                .join("target/iris/rigs")
                .join(format!("{}.json", self.port)),
        );
    }
}

/// One `GET /` with a short deadline; Ok when an HTTP status line comes back.
fn get_root(port: u16) -> Result<(), String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    let t = Some(Duration::from_secs(3));
    s.set_read_timeout(t).map_err(|e| e.to_string())?;
    s.set_write_timeout(t).map_err(|e| e.to_string())?;
    s.write_all(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .map_err(|e| e.to_string())?;
    let mut head = [0u8; 12];
    s.read_exact(&mut head).map_err(|e| e.to_string())?;
    if head.starts_with(b"HTTP/1.1 ") {
        Ok(())
    } else {
        Err("not HTTP".into())
    }
}
