//! Taking a guest through a reset and reading what the new boot says about the last: `status`
//! once the guest serves again, the previous boot's console, its flight record, the status page,
//! a marker line on the console and a call left in flight when the machine stops; and a boot
//! configuration a test rewrites between boots, as a deploy does.

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant};

use iris::RigOptions;
use serde_json::{Value, json};

use super::guest::{Guest, TOKEN};
use super::http::{connect, read_response, request};
use super::mcp::{mcp_request, messages, tool_ok, tool_request};

/// Between tries while the guest does not answer: well under the module's 20 requests per
/// rolling second per client.
const PACE: Duration = Duration::from_millis(100);
/// How long a reset and the new boot may take on a loaded host.
const COME_BACK: Duration = Duration::from_secs(60);

/// A JSON-RPC message on a fresh connection, or `None` while the guest does not answer.
pub fn try_rpc(addr: SocketAddr, raw: &str) -> Option<Value> {
    let mut s = connect(addr);
    s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    s.write_all(raw.as_bytes()).ok()?;
    let r = read_response(&mut s, &mut Vec::new(), false)?;
    (r.status == 200).then(|| messages(&r.body).pop()).flatten()
}

/// Waits until the rig has reset the machine `resets` times in all; `false` if it has not
/// within a minute.
pub fn wait_for_reset(g: &Guest, resets: u64) -> bool {
    let start = Instant::now();
    while g.rig.counters().resets < resets {
        if start.elapsed() > COME_BACK {
            return false;
        }
        thread::sleep(Duration::from_millis(5));
    }
    true
}

/// `status` once the guest answers again, or `None` if it does not within a minute.
pub fn try_status(g: &Guest) -> Option<Value> {
    let start = Instant::now();
    loop {
        if let Some(m) = try_rpc(g.mcp, &tool_request(1, "status", json!({}))) {
            return Some(m["result"]["structuredContent"].clone());
        }
        if start.elapsed() > COME_BACK {
            return None;
        }
        thread::sleep(PACE);
    }
}

/// `status` once the guest serves after reset number `resets`.
pub fn status_after(g: &Guest, resets: u64) -> Value {
    assert!(wait_for_reset(g, resets), "no reset {resets}");
    try_status(g).expect("the guest serves after the reset")
}

pub fn resource(addr: SocketAddr, uri: &str) -> Value {
    let raw = mcp_request(
        2,
        "resources/read",
        json!({"uri": uri}),
        json!({}),
        "application/json, text/event-stream",
    );
    try_rpc(addr, &raw).expect("resources/read answers")
}

pub fn resource_text(addr: SocketAddr, uri: &str) -> String {
    let v = resource(addr, uri);
    v["result"]["contents"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{uri}: {v}"))
        .to_string()
}

/// The previous boot's console through `serial.read`.
pub fn previous_console(addr: SocketAddr) -> String {
    let r = tool_ok(addr, "serial.read", json!({"boot": "previous"}));
    assert_eq!(r["eof"], true, "{r}");
    r["data"].as_str().unwrap().to_string()
}

/// The details page (behind the token).
pub fn status_page(addr: SocketAddr) -> String {
    let raw = format!(
        "GET / HTTP/1.1\r\nHost: indy\r\nAuthorization: Bearer {TOKEN}\r\nConnection: close\r\n\r\n"
    );
    String::from_utf8_lossy(&request(addr, &raw).body).into_owned()
}

/// Writes a marker line on the console and returns it as the console shows it (a client's
/// lines carry the mark `[mcp] `).
pub fn mark(addr: SocketAddr, text: &str) -> String {
    tool_ok(addr, "console.write", json!({"text": text}));
    format!("[mcp] {text}")
}

/// Starts a `serial.read` that waits for text that never comes, on its own connection: a
/// call in flight when the machine stops.
pub fn call_in_flight(addr: SocketAddr) -> thread::JoinHandle<()> {
    let raw = tool_request(
        9,
        "serial.read",
        json!({"wait_ms": 120_000, "until": "this text is never written"}),
    );
    thread::spawn(move || {
        let mut s = connect(addr);
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let _ = s.write_all(raw.as_bytes());
        let _ = read_response(&mut s, &mut Vec::new(), false);
    })
}

/// A boot configuration of the guest's own and a directory for the images it names: a test
/// rewrites it between boots, as a deploy does, and the kernel reads it again at each reset.
pub struct Deploys {
    dir: PathBuf,
    config: PathBuf,
}

impl Deploys {
    /// An empty directory for one test (`tag` keeps tests of one binary apart).
    pub fn new(tag: &str) -> Deploys {
        let dir = std::env::temp_dir().join(format!("iris-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let config = dir.join("config.conf");
        Deploys { dir, config }
    }

    /// Writes an image into the directory and returns its path.
    pub fn image(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let path = self.dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    }

    /// Names `image` with digest `sha256` in the boot configuration for the next boot.
    pub fn name(&self, image: &Path, sha256: &str) {
        std::fs::write(
            &self.config,
            format!(
                "mcp.url = file:{}\nmcp.sha256 = {sha256}\n",
                image.display()
            ),
        )
        .unwrap();
    }

    /// Makes a guest boot from this configuration instead of the image `guest_options` names.
    pub fn apply(&self, o: &mut RigOptions) {
        o.env
            .retain(|v| !v.starts_with("mcp.url=") && !v.starts_with("mcp.sha256="));
        o.config = Some(self.config.clone());
    }
}

impl Drop for Deploys {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
