//! The browser console's end-to-end test (`tests/python/test_console.py`): installs headless
//! Chromium and its WebDriver (Debian's `chromium`, `chromium-driver`) and Selenium in the
//! client venv, boots one rig of its own (the test resets it) with an administrator token and
//! a read-only one, and runs the test; its screenshots land in `target/console/`.

use crate::clients::{ensure_venv, pip_install, pytest, venv_python};
use crate::cmd;
use crate::launch::{self, Rig, Spec};
use std::process::{Command, Stdio};

/// Debian's browser and its WebDriver (/usr/bin/chromium, /usr/bin/chromedriver).
const DEBIAN: &[&str] = &["chromium", "chromium-driver"];
/// The Selenium the test pins.
const SELENIUM: &str = "4.51.0";
/// Where the screenshots go.
const SHOTS: &str = "target/console";

/// Chromium, chromedriver and Selenium; quick when they are there.
pub fn ensure() -> Result<(), String> {
    crate::prereqs::ensure()?;
    crate::prereqs::ensure_debian(DEBIAN)?;
    ensure_venv()?;
    let have = Command::new(venv_python())
        .args(["-c", "import selenium; print(selenium.__version__)"])
        .stderr(Stdio::null())
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    if have == SELENIUM {
        return Ok(());
    }
    pip_install(&[&format!("selenium=={SELENIUM}")])
}

/// A fresh secret for one run (the rig's log, mode 0600, is the only place it is written).
fn secret(what: &str) -> Result<String, String> {
    let mut bytes = [0u8; 16];
    let mut f = std::fs::File::open("/dev/urandom").map_err(|e| format!("{what}: {e}"))?;
    std::io::Read::read_exact(&mut f, &mut bytes).map_err(|e| format!("{what}: {e}"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// `cargo xtask console [PYTEST ARGS]`.
pub fn run(pytest_args: &[String]) -> Result<(), String> {
    ensure()?;
    let product = launch::product_image()?;
    let bin = launch::rig_binary()?;
    let admin = secret("administrator token")?;
    let watcher = secret("watcher token")?;
    let mut rig = Rig::start(
        &bin,
        &Spec {
            name: "console",
            image: &product,
            env: vec![
                format!("mcp.token={admin}"),
                format!("mcp.tokens=watcher:observe:{watcher}"),
            ],
        },
    )?;
    let mut args: Vec<String> = vec!["tests/python/test_console.py".into()];
    args.extend(pytest_args.iter().cloned());
    let result = cmd::run(
        pytest()
            .env("IRIX7_CONSOLE_URL", rig.base_url())
            .env("IRIX7_CONSOLE_TOKEN", &admin)
            .env("IRIX7_CONSOLE_WATCHER", &watcher)
            .env("IRIX7_CONSOLE_SHOTS", SHOTS)
            .args(&args),
    );
    rig.check_alive()?;
    result
}
