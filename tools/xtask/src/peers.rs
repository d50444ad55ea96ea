//! `cargo xtask bench --peers`: the official SDKs side by side with the module (issue 18). Two
//! reference servers in `tools/peers/` (rmcp, the Python SDK) serve the same tool listings,
//! `echo`, and a `status` whose result has the module's shape and size (`tools/peers/
//! status.json`, fixed values); each runs under valgrind's callgrind, which counts the user-space instructions of all
//! its threads exactly, and gets the request bytes the rig bench sends the module. docs/bench.md,
//! "The peers", says how they are configured and what is and isn't counted.

use crate::cmd::repo_root;
use crate::{clients, prereqs};
use rpc::testing::McpRequest;
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The rig bench's token (`tools/iris/examples/bench.rs`): the peers check none, but the bytes
/// they parse are the module's.
const TOKEN: &str = "bench-token-5e0f27a1";
/// The bench names the machine `indy` in `Host`; each peer is told to accept that name.
const HOST: &str = "indy";
/// What the peers' `status` answers: one real result of the module's `status`, its values fixed.
const STATUS_JSON: &str = "tools/peers/status.json";
/// Exchanges before any count, so that lazy initialisation is not charged to a request.
const WARM_UP: usize = 3;
/// Counted exchanges per figure: callgrind's counts are exact, a few give a stable mean.
const REPS: usize = 5;
/// How long a peer may take to listen (Python's imports under callgrind are slow).
const START_TIMEOUT: Duration = Duration::from_secs(1800);
/// How long one response may take under callgrind.
const IO_TIMEOUT: Duration = Duration::from_secs(120);

/// One reference server.
struct Peer {
    /// Key in the JSON result and column of the table.
    key: &'static str,
    /// What it is, for the table's heading.
    what: &'static str,
    /// Its command line before the four arguments `TOOLS_JSON STATUS_JSON PORT HOST`.
    argv: Vec<PathBuf>,
}

/// The module's figures, from the lockstep bench's JSON (`None` where it has none).
#[derive(Default)]
pub struct ModuleFigures {
    pub discover: Option<f64>,
    pub tools_list: Option<f64>,
    pub echo_small: Option<f64>,
    pub status: Option<f64>,
    pub echo_per_byte: Option<f64>,
    pub idle_heap: Option<f64>,
}

impl ModuleFigures {
    /// The module's figures from the lockstep bench's JSON (`bench_json`, the stable keys).
    pub fn from_json(figures: &Value) -> Self {
        let f = |key: &str| figures.get(key).and_then(Value::as_f64);
        ModuleFigures {
            discover: f("discover"),
            tools_list: f("tools_list"),
            echo_small: f("echo_small"),
            status: f("status"),
            echo_per_byte: f("echo_per_byte"),
            idle_heap: f("idle_heap_bytes"),
        }
    }
}

/// The measured requests, built as the rig bench builds them.
struct Requests {
    discover: Vec<u8>,
    tools_list: Vec<u8>,
    echo: Vec<u8>,
    status: Vec<u8>,
    echo_x: Vec<u8>,
    echo_large: Vec<u8>,
}

fn mcp_request(method: &str, params: Value) -> Vec<u8> {
    McpRequest::modern(method, params).http("/mcp", HOST, Some(TOKEN))
}

fn tool_call(name: &str, arguments: Value) -> Vec<u8> {
    mcp_request("tools/call", json!({"name": name, "arguments": arguments}))
}

fn echo_request(text: &str) -> Vec<u8> {
    tool_call("echo", json!({ "text": text }))
}

impl Requests {
    fn new() -> Self {
        Requests {
            discover: mcp_request("server/discover", json!({})),
            tools_list: mcp_request("tools/list", json!({})),
            echo: echo_request("hello"),
            status: tool_call("status", json!({})),
            echo_x: echo_request("x"),
            echo_large: echo_request(&"irix7 ".repeat(10_000)),
        }
    }
}

/// Installs valgrind and the venv, builds the rmcp peer, measures both peers and prints the
/// table beside `module`. Returns the peers' figures as one JSON object
/// (`{"rmcp": {...}, "python": {...}}`).
pub fn run(module: &ModuleFigures) -> Result<Value, String> {
    prereqs::ensure_debian(&["valgrind"])?;
    clients::ensure_venv()?;
    let root = repo_root();
    let rmcp_peer = crate::launch::release_binary("irix7-peer-rmcp", "irix7-peer-rmcp")?;
    let peers = [
        Peer {
            key: "rmcp",
            what: "rmcp 3.11",
            argv: vec![rmcp_peer],
        },
        Peer {
            key: "python",
            what: "Python SDK 2.3",
            argv: vec![
                clients::venv_python(),
                root.join("tools/peers/python_echo.py"),
            ],
        },
    ];
    let requests = Requests::new();
    let mut result = serde_json::Map::new();
    for peer in &peers {
        println!("peer {} ({}):", peer.key, peer.what);
        result.insert(peer.key.into(), measure(peer, &requests)?);
    }
    let result = Value::Object(result);
    print_table(module, &peers, &result);
    Ok(result)
}

/// A peer's figures: idle RSS from a plain run, instructions from a callgrind run.
fn measure(peer: &Peer, req: &Requests) -> Result<Value, String> {
    let rss = {
        let mut server = Server::start(peer, &[])?;
        let rss = server.idle_rss(req);
        server.stop();
        rss?
    };
    println!("  idle RSS after warm-up: {rss} bytes (without valgrind)");
    let dir = repo_root().join("target/bench/peers").join(peer.key);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let out = dir.join("callgrind.out");
    let valgrind = [
        "valgrind".into(),
        "--tool=callgrind".into(),
        format!("--callgrind-out-file={}", out.display()),
    ];
    let mut server = Server::start(peer, &valgrind)?;
    let figures = server.counts(req, &out);
    server.stop();
    let (discover, tools_list, echo_small, status, per_byte) = figures?;
    Ok(json!({
        "discover": discover,
        "tools_list": tools_list,
        "echo_small": echo_small,
        "status": status,
        "echo_per_byte": per_byte,
        "idle_rss_bytes": rss,
    }))
}

/// A running peer (the child this command started) and its port.
struct Server {
    child: Child,
    port: u16,
}

impl Server {
    /// Starts `peer` (behind `wrapper`, e.g. valgrind) on a free port and waits until it listens.
    fn start(peer: &Peer, wrapper: &[String]) -> Result<Server, String> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| format!("no free port: {e}"))?
            .port();
        let argv: Vec<&std::ffi::OsStr> = wrapper
            .iter()
            .map(|s| s.as_ref())
            .chain(peer.argv.iter().map(|p| p.as_os_str()))
            .collect();
        let mut child = Command::new(argv[0])
            .args(&argv[1..])
            .arg(repo_root().join("docs/tools.json"))
            .arg(repo_root().join(STATUS_JSON))
            .arg(port.to_string())
            .arg(HOST)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", argv[0].to_string_lossy()))?;
        let start = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Ok(Some(status)) = child.try_wait() {
                return Err(format!("peer {} exited ({status})", peer.key));
            }
            if start.elapsed() > START_TIMEOUT {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("peer {} did not listen on {port}", peer.key));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        Ok(Server { child, port })
    }

    fn stop(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    fn connect(&self) -> Result<TcpStream, String> {
        let s = TcpStream::connect(("127.0.0.1", self.port)).map_err(|e| e.to_string())?;
        s.set_read_timeout(Some(IO_TIMEOUT))
            .map_err(|e| e.to_string())?;
        s.set_nodelay(true).map_err(|e| e.to_string())?;
        Ok(s)
    }

    /// Every request a few times, then the resident set.
    fn idle_rss(&mut self, req: &Requests) -> Result<u64, String> {
        let mut conn = self.connect()?;
        for r in [
            &req.discover,
            &req.tools_list,
            &req.echo,
            &req.status,
            &req.echo_x,
            &req.echo_large,
        ] {
            for _ in 0..WARM_UP {
                exchange(&mut conn, r)?;
            }
        }
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .map_err(|e| format!("/proc/{}/status: {e}", self.child.id()))?;
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map(|kb| kb * 1024)
            .ok_or_else(|| "no VmRSS in /proc/PID/status".into())
    }

    /// (discover, tools/list, small echo, status, echo per byte) under callgrind, whose dumps go
    /// to `out.1`, `out.2`, ….
    fn counts(&mut self, req: &Requests, out: &Path) -> Result<(f64, f64, f64, f64, f64), String> {
        let mut dumps = 0;
        let mut figure = |what: &str, r: &[u8]| -> Result<(f64, usize), String> {
            dumps += 1;
            let (insns, bytes) = self.count(r, out, dumps)?;
            println!("  {what:<24} {insns:>14.1} insns/request  ({bytes} response bytes)");
            Ok((insns, bytes))
        };
        let (discover, _) = figure("server/discover", &req.discover)?;
        let (tools_list, _) = figure("tools/list", &req.tools_list)?;
        let (echo, _) = figure("tools/call echo", &req.echo)?;
        let (status, _) = figure("tools/call status", &req.status)?;
        let (i_small, b_small) = figure("echo \"x\"", &req.echo_x)?;
        let (i_large, b_large) = figure("echo 60 KB", &req.echo_large)?;
        let per_byte = (i_large - i_small) / (b_large - b_small) as f64;
        println!("  {:<24} {per_byte:>14.1} insns/byte", "echo byte");
        Ok((discover, tools_list, echo, status, per_byte))
    }

    /// Mean instructions of [`REPS`] exchanges of `r` on one kept-alive connection (opened and
    /// warmed before the count), from callgrind's `dump`-th dump; and the response's size.
    fn count(&mut self, r: &[u8], out: &Path, dump: usize) -> Result<(f64, usize), String> {
        let mut conn = self.connect()?;
        for _ in 0..WARM_UP {
            exchange(&mut conn, r)?;
        }
        let pid = self.child.id().to_string();
        callgrind_control("--zero", &pid)?;
        let mut bytes = 0;
        for _ in 0..REPS {
            bytes = exchange(&mut conn, r)?;
        }
        callgrind_control("--dump", &pid)?;
        let file = PathBuf::from(format!("{}.{dump}", out.display()));
        let total = dump_total(&file)?;
        Ok((total as f64 / REPS as f64, bytes))
    }
}

/// `callgrind_control WHAT PID`, quietly (it narrates every command on stderr).
fn callgrind_control(what: &str, pid: &str) -> Result<(), String> {
    let out = Command::new("callgrind_control")
        .args([what, pid])
        .output()
        .map_err(|e| format!("cannot run callgrind_control: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "callgrind_control {what} {pid} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// The instruction total of a callgrind dump (all threads: callgrind's default
/// `--separate-threads=no` sums them); waits for the file to be complete.
fn dump_total(file: &Path) -> Result<u64, String> {
    let start = Instant::now();
    loop {
        if let Ok(text) = std::fs::read_to_string(file)
            && let Some(total) = text
                .lines()
                .find_map(|l| l.strip_prefix("totals:"))
                .and_then(|v| v.trim().parse().ok())
        {
            return Ok(total);
        }
        if start.elapsed() > IO_TIMEOUT {
            return Err(format!("callgrind wrote no totals to {}", file.display()));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Sends `request` and reads one whole response; checks it is a JSON-RPC result, not an error,
/// and returns its size in bytes (head and body, as the rig bench counts).
fn exchange(conn: &mut TcpStream, request: &[u8]) -> Result<usize, String> {
    conn.write_all(request).map_err(|e| format!("send: {e}"))?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 65536];
    let (head_end, body_len) = loop {
        let n = conn.read(&mut chunk).map_err(|e| format!("receive: {e}"))?;
        if n == 0 {
            return Err("the peer closed the connection".into());
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(h) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..h]).to_ascii_lowercase();
            let len = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok())
                .ok_or_else(|| format!("a response without Content-Length: {head}"))?;
            break (h + 4, len);
        }
    };
    while buf.len() < head_end + body_len {
        let n = conn.read(&mut chunk).map_err(|e| format!("receive: {e}"))?;
        if n == 0 {
            return Err("the peer closed the connection mid-response".into());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let body: Value = serde_json::from_slice(&buf[head_end..])
        .map_err(|e| format!("a response that is not JSON: {e}"))?;
    let failed = body["result"]["isError"] == true || body.get("result").is_none();
    if !buf.starts_with(b"HTTP/1.1 200") || failed {
        let text = String::from_utf8_lossy(&buf);
        return Err(format!("the peer failed: {}", &text[..text.len().min(600)]));
    }
    Ok(buf.len())
}

/// figure | module | each peer and its ratio to the module.
fn print_table(module: &ModuleFigures, peers: &[Peer], result: &Value) {
    let rows = [
        ("server/discover", "discover", module.discover),
        ("tools/list", "tools_list", module.tools_list),
        ("tools/call echo", "echo_small", module.echo_small),
        ("tools/call status", "status", module.status),
        (
            "echo, per byte in and out",
            "echo_per_byte",
            module.echo_per_byte,
        ),
        (
            "idle memory (module heap, peer RSS)",
            "idle_rss_bytes",
            module.idle_heap,
        ),
    ];
    let fmt = |v: Option<f64>| match v {
        Some(v) if v >= 100.0 => format!("{v:.0}"),
        Some(v) => format!("{v:.1}"),
        None => "—".into(),
    };
    print!("| figure | module (R4400, all of it) |");
    for p in peers {
        print!(" {} (x86-64, user space) | ratio |", p.what);
    }
    println!();
    print!("|---|---|");
    for _ in peers {
        print!("---|---|");
    }
    println!();
    for (label, key, m) in rows {
        print!("| {label} | {} |", fmt(m));
        for p in peers {
            let v = result[p.key][key].as_f64();
            let ratio = match (v, m) {
                (Some(v), Some(m)) if m > 0.0 => format!("{:.2}", v / m),
                _ => "—".into(),
            };
            print!(" {} | {ratio} |", fmt(v));
        }
        println!();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_figures_are_read_from_the_bench_json() {
        let figures = json!({"discover": 137264.0, "tools_list": 349683, "echo_small": 154738.0,
            "status": 335862, "echo_per_byte": 53.8, "idle_heap_bytes": 262000});
        let m = ModuleFigures::from_json(&figures);
        assert_eq!(m.discover, Some(137264.0));
        assert_eq!(m.tools_list, Some(349683.0));
        assert_eq!(m.echo_small, Some(154738.0));
        assert_eq!(m.status, Some(335862.0));
        assert_eq!(m.echo_per_byte, Some(53.8));
        assert_eq!(m.idle_heap, Some(262000.0));
        assert_eq!(ModuleFigures::from_json(&json!({})).discover, None);
    }
}
