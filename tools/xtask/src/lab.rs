//! `cargo xtask lab N`: N rigs of the product image (each with the token it generates) behind
//! one `irix7-gateway` on 127.0.0.1; prints the one URL and token to give an agent and runs
//! until interrupted. `--test` runs `tests/python/test_lab.py` against three of them instead
//! (what `cargo xtask test` does; docs/gateway.md).

use crate::cmd::{self, repo_root};
use crate::launch::{self, Rig, Spec};
use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Most rigs one lab starts: each is an emulated Indy taking a core while it boots.
const RIGS_MAX: usize = 16;
/// The gateway answers within a second of starting; a cold build is not counted here.
const GATEWAY_READY: Duration = Duration::from_secs(20);

/// A running lab: dropping it stops the gateway and the rigs.
pub struct Lab {
    pub rigs: Vec<Rig>,
    gateway: Child,
    pub url: String,
    pub token: String,
    pub lab_file: PathBuf,
    pub names: Vec<String>,
}

impl Drop for Lab {
    fn drop(&mut self) {
        let _ = self.gateway.kill();
        let _ = self.gateway.wait();
    }
}

/// The gateway binary, built (release) now.
pub fn gateway_binary() -> Result<PathBuf, String> {
    crate::launch::release_binary("irix7-gateway", "irix7-gateway")
}

/// A TOML string literal of a path.
fn toml_path(p: &Path) -> String {
    let s = p.display().to_string();
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// Boots `n` rigs and the gateway listening on `port` (0: any free port), with its lab file,
/// token and audit log in `dir`.
pub fn start(n: usize, port: u16, dir: &Path) -> Result<Lab, String> {
    if n == 0 || n > RIGS_MAX {
        return Err(format!("a lab has 1 to {RIGS_MAX} rigs"));
    }
    let product = launch::product_image()?;
    let bin = launch::rig_binary()?;
    let gateway = gateway_binary()?;
    let mut rigs = Vec::new();
    let mut names = Vec::new();
    for i in 1..=n {
        let name = format!("rig{i}");
        let rig = Rig::start(
            &bin,
            &Spec {
                name: &format!("lab-{name}"),
                image: &product,
                env: vec![],
            },
        )?;
        // The token the module generated: the gateway reads the same file.
        rig.generated_token()?;
        rigs.push(rig);
        names.push(name);
    }
    let port = match port {
        0 => TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .map_err(|e| format!("no free port: {e}"))?,
        p => p,
    };
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let root = repo_root();
    let mut text = format!(
        "# Written by `cargo xtask lab`: the rigs it started, and any other rig that registers.\n\
         listen = \"127.0.0.1:{port}\"\n\
         token_file = {}\naudit_log = {}\nrigs = {}\n",
        toml_path(&dir.join("token")),
        toml_path(&dir.join("audit.log")),
        toml_path(&root.join("target/iris/rigs")),
    );
    for (name, rig) in names.iter().zip(&rigs) {
        text.push_str(&format!(
            "\n[machines.{name}]\nurl = \"{}\"\ntoken_file = {}\n\
             # A powered-off rig ends its process: the lab could not bring it back. The gateway\n\
             # sends this deny to the rig on every request, which refuses the capability\n\
             # through every door (the shell's `poweroff` too).\n\
             deny = [\"system.poweroff\"]\n",
            rig.mcp_url(),
            toml_path(&rig.token_path()),
        ));
    }
    let lab_file = dir.join("lab.toml");
    std::fs::write(&lab_file, &text).map_err(|e| format!("{}: {e}", lab_file.display()))?;
    let log = dir.join("gateway.log");
    let out = std::fs::File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
    let err = out.try_clone().map_err(|e| e.to_string())?;
    let child = Command::new(&gateway)
        .current_dir(root)
        .arg("serve")
        .arg(&lab_file)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", gateway.display()))?;
    let mut lab = Lab {
        rigs,
        gateway: child,
        url: format!("http://127.0.0.1:{port}/mcp"),
        token: String::new(),
        lab_file,
        names,
    };
    let start = Instant::now();
    loop {
        if let Ok(Some(status)) = lab.gateway.try_wait() {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            return Err(format!("irix7-gateway exited ({status}):\n{text}"));
        }
        let token = std::fs::read_to_string(dir.join("token")).unwrap_or_default();
        if !token.trim().is_empty() && TcpStream::connect(("127.0.0.1", port)).is_ok() {
            lab.token = token.trim().to_string();
            return Ok(lab);
        }
        if start.elapsed() > GATEWAY_READY {
            return Err(format!(
                "irix7-gateway did not listen on {port} within {} s",
                GATEWAY_READY.as_secs()
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `cargo xtask lab N`: start, print, wait for Ctrl-C (which stops the rigs and the gateway
/// with this process).
pub fn run(n: usize, port: u16) -> Result<(), String> {
    crate::prereqs::ensure()?;
    let lab = start(n, port, &repo_root().join("target/gateway"))?;
    println!(
        "\nThe lab: {n} rig{} behind irix7-gateway ({})",
        if n == 1 { "" } else { "s" },
        lab.names.join(", ")
    );
    println!("  URL    {}", lab.url);
    println!("  token  {}", lab.token);
    println!(
        "  (lab file {}; the token is also in target/gateway/token)",
        lab.lab_file.display()
    );
    println!("Ctrl-C stops the lab.");
    let _ = std::io::stdout().flush();
    let mut lab = lab;
    loop {
        std::thread::sleep(Duration::from_secs(1));
        for r in &mut lab.rigs {
            r.check_alive()?;
        }
        if let Ok(Some(status)) = lab.gateway.try_wait() {
            return Err(format!("irix7-gateway exited ({status})"));
        }
    }
}

/// `cargo xtask lab 3 --test`: the lab's Python SDK test (`tests/python/test_lab.py`).
pub fn test(pytest_args: &[String]) -> Result<(), String> {
    // The venv with the SDK, and curl for the README's block (quick when all is there).
    crate::clients::ensure()?;
    let dir = repo_root().join("target/gateway/test");
    // A fresh token and audit log each run.
    let _ = std::fs::remove_dir_all(&dir);
    let lab = start(3, 0, &dir)?;
    let token_files: Vec<String> = lab
        .rigs
        .iter()
        .map(|r| r.token_path().display().to_string())
        .collect();
    let pids: Vec<String> = lab
        .names
        .iter()
        .zip(&lab.rigs)
        .map(|(n, r)| format!("{n}={}", r.pid()))
        .collect();
    let mut args = vec!["tests/python/test_lab.py".to_string()];
    args.extend(pytest_args.iter().cloned());
    let t = Instant::now();
    let r = cmd::run(
        crate::clients::pytest()
            .env("IRIX7_LAB_URL", &lab.url)
            .env("IRIX7_LAB_TOKEN", &lab.token)
            .env("IRIX7_LAB_MACHINES", lab.names.join(","))
            .env("IRIX7_LAB_TOKEN_FILES", token_files.join(","))
            .env("IRIX7_LAB_PIDS", pids.join(","))
            .env("IRIX7_LAB_AUDIT", dir.join("audit.log"))
            .env("IRIX7_LAB_FILE", &lab.lab_file)
            .env("IRIX7_LAB_GATEWAY", gateway_binary()?)
            .args(&args),
    );
    println!("lab tests: {:.1} s", t.elapsed().as_secs_f64());
    r
}
