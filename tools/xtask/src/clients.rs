//! Real MCP clients against the rig: installs them (a Python venv with the `mcp` SDK and pytest,
//! Node 22, the TypeScript SDK v2 client and the two conformance suites, all under `target/`), and runs the
//! pytest suite in `tests/python/` against rigs booted with the product and the conformance
//! images.

use crate::cmd::{self, repo_root};
use crate::launch::{self, Rig, Spec};
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// The Python SDK the client tests pin (`docs/mcp.md` says which clients are tested).
const PY_MCP: &str = "2.3.0";
/// Node major version the conformance suites need.
const NODE_MAJOR: &str = "v22.";

/// One npm package installed into its own prefix under `target/node/`.
pub struct NpmPackage {
    /// Directory name under `target/node/`.
    pub dir: &'static str,
    /// npm spec (`name@version`).
    pub spec: &'static str,
    /// Package name (its path under `node_modules/`).
    pub name: &'static str,
    /// The exact version a working install reports; `None` accepts the spec's range.
    pub version: Option<&'static str>,
}

pub const NODE: NpmPackage = NpmPackage {
    dir: "node22",
    spec: "node@22",
    name: "node",
    version: None,
};
pub const CONFORMANCE_2026: NpmPackage = NpmPackage {
    dir: "conformance-0.2.0-alpha.12",
    spec: "@modelcontextprotocol/conformance@0.2.0-alpha.12",
    name: "@modelcontextprotocol/conformance",
    version: Some("0.2.0-alpha.12"),
};
pub const CONFORMANCE_LEGACY: NpmPackage = NpmPackage {
    dir: "conformance-0.1.16",
    spec: "@modelcontextprotocol/conformance@0.1.16",
    name: "@modelcontextprotocol/conformance",
    version: Some("0.1.16"),
};
/// The TypeScript SDK v2 client `examples/agent_loop.cjs` uses (it brings
/// `@modelcontextprotocol/core`), on its own where a developer's `NODE_PATH` can point: the
/// first TypeScript SDK that speaks 2026-07-28 as well as the session era.
pub const TS_CLIENT: NpmPackage = NpmPackage {
    dir: "mcp-client-2.4.0",
    spec: "@modelcontextprotocol/client@2.4.0",
    name: "@modelcontextprotocol/client",
    version: Some("2.4.0"),
};

impl NpmPackage {
    pub fn prefix(&self) -> PathBuf {
        repo_root().join("target/node").join(self.dir)
    }

    /// The installed package's directory.
    pub fn dir(&self) -> PathBuf {
        self.prefix().join("node_modules").join(self.name)
    }

    fn installed_version(&self) -> Option<String> {
        let text = std::fs::read_to_string(self.dir().join("package.json")).ok()?;
        let at = text.find("\"version\"")?;
        let rest = &text[at + "\"version\"".len()..];
        let start = rest.find('"')? + 1;
        let len = rest[start..].find('"')?;
        Some(rest[start..start + len].to_string())
    }

    fn ensure(&self) -> Result<(), String> {
        let ok = match (self.installed_version(), self.version) {
            (Some(have), Some(want)) => have == want,
            (Some(_), None) => true,
            (None, _) => false,
        };
        if ok {
            return Ok(());
        }
        println!(
            "prereqs: npm install {} into target/node/{}",
            self.spec, self.dir
        );
        let prefix = self.prefix();
        std::fs::create_dir_all(&prefix).map_err(|e| format!("{}: {e}", prefix.display()))?;
        cmd::run(
            Command::new("npm")
                .arg("install")
                .arg("--prefix")
                .arg(&prefix)
                .args(["--no-audit", "--no-fund", "--loglevel=error", self.spec]),
        )
    }
}

/// The Node 22 binary from the `node@22` package.
pub fn node_bin() -> PathBuf {
    NODE.prefix().join("node_modules/.bin/node")
}

/// The venv's Python.
pub fn venv_python() -> PathBuf {
    repo_root().join("target/venv/bin/python")
}

fn have_command(name: &str) -> bool {
    Command::new(name)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Everything the client tests and the conformance runner need; quick when all is there.
pub fn ensure() -> Result<(), String> {
    // The images and the rig need the base prerequisites too (quick when they are there).
    crate::prereqs::ensure()?;
    // A fresh Debian machine may lack npm or curl; a machine whose Node came from elsewhere
    // (nodesource, nvm) has npm without the Debian package, so look for the command first.
    let mut debian = Vec::new();
    if !have_command("npm") {
        debian.push("npm");
    }
    if !have_command("curl") {
        debian.push("curl");
    }
    if !debian.is_empty() {
        crate::prereqs::ensure_debian(&debian)?;
    }
    ensure_venv()?;
    NODE.ensure()?;
    let v = cmd::output(Command::new(node_bin()).arg("--version"))?;
    if !v.trim().starts_with(NODE_MAJOR) {
        return Err(format!(
            "{} is {}, want Node 22",
            node_bin().display(),
            v.trim()
        ));
    }
    CONFORMANCE_2026.ensure()?;
    CONFORMANCE_LEGACY.ensure()?;
    TS_CLIENT.ensure()
}

fn venv_versions() -> Option<(String, String)> {
    let out = Command::new(venv_python())
        .args([
            "-c",
            "import importlib.metadata as m; print(m.version('mcp'), m.version('pytest'))",
        ])
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let mut it = text.split_whitespace();
    Some((it.next()?.to_string(), it.next()?.to_string()))
}

/// `pip install` of `packages` into the client venv, saying so.
pub fn pip_install(packages: &[&str]) -> Result<(), String> {
    println!(
        "prereqs: pip install {} into target/venv",
        packages.join(" ")
    );
    cmd::run(
        Command::new(venv_python())
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
            ])
            .args(packages),
    )
}

/// The venv with the Python MCP SDK and pytest (`target/venv`).
pub fn ensure_venv() -> Result<(), String> {
    if venv_versions().is_some_and(|(mcp, _)| mcp == PY_MCP) {
        return Ok(());
    }
    let root = repo_root();
    let venv = root.join("target/venv");
    if !venv_python().exists() {
        println!("prereqs: python3 -m venv target/venv");
        // --clear: a half-made venv (interrupted earlier) is rebuilt, not reused.
        cmd::run(
            Command::new("python3")
                .args(["-m", "venv", "--clear"])
                .arg(&venv),
        )?;
    }
    pip_install(&[&format!("mcp=={PY_MCP}"), "pytest"])?;
    match venv_versions() {
        Some((mcp, _)) if mcp == PY_MCP => Ok(()),
        other => Err(format!(
            "target/venv has mcp/pytest {other:?} after pip install"
        )),
    }
}

/// pytest from the venv, run from the repository root, its cache under `target/`.
pub fn pytest() -> Command {
    let mut c = Command::new(venv_python());
    c.current_dir(repo_root()).args([
        "-m",
        "pytest",
        "-o",
        "cache_dir=target/clients/pytest-cache",
    ]);
    c
}

/// `cargo xtask clients [PYTEST ARGS]`: boots three rigs (the product open by choice,
/// `mcp.token=none`; the product as a machine boots by default, with the token it generates;
/// the conformance image open) and runs `tests/python` against them.
pub fn run(pytest_args: &[String]) -> Result<(), String> {
    ensure()?;
    let product = launch::product_image()?;
    let fixtures = launch::conformance_image()?;
    let bin = launch::rig_binary()?;
    let mut open = Rig::start(
        &bin,
        &Spec {
            name: "product",
            image: &product,
            env: vec!["mcp.token=none".into()],
        },
    )?;
    let mut locked = Rig::start(
        &bin,
        &Spec {
            name: "token",
            image: &product,
            env: vec![],
        },
    )?;
    let token = locked.generated_token()?;
    let mut slow = Rig::start(
        &bin,
        &Spec {
            name: "fixtures",
            image: &fixtures,
            env: vec!["mcp.token=none".into()],
        },
    )?;
    // Positional arguments choose the tests; without any, the whole directory runs.
    let mut args: Vec<String> = pytest_args.to_vec();
    if !args.iter().any(|a| !a.starts_with('-')) {
        args.insert(0, "tests/python".into());
        // The lab's tests need the lab (`cargo xtask lab --test`), and the browser console's a
        // rig of its own (`cargo xtask console`), not these rigs.
        args.insert(1, "--ignore=tests/python/test_lab.py".into());
        args.insert(2, "--ignore=tests/python/test_console.py".into());
    }
    let result = cmd::run(
        pytest()
            .env("IRIX7_URL", open.mcp_url())
            .env("IRIX7_TOKEN_URL", locked.mcp_url())
            .env("IRIX7_TOKEN", &token)
            .env("IRIX7_FIXTURES_URL", slow.mcp_url())
            .env("IRIX7_NODE", node_bin())
            .env(
                "IRIX7_TS_CLIENT_PATH",
                TS_CLIENT.prefix().join("node_modules"),
            )
            .args(&args),
    );
    // A rig that died during the run explains the failures better than the test output.
    for rig in [&mut open, &mut locked, &mut slow] {
        rig.check_alive()?;
    }
    result
}
