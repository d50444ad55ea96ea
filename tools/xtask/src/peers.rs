//! `cargo xtask bench --peers`: the official SDKs side by side with the module (issues 18 and 39).
//! Two reference servers in `tools/peers/` (rmcp, the Python SDK) serve the same tool listings,
//! `echo`, and the small calls the rig bench measures (`status`, `fs.stat`, `serial.read`,
//! `fs.list`, `proc.list`) answering results of the module's shape and size
//! (`tools/peers/results.json`, one real result of each from the rig bench, fixed values); each
//! runs under valgrind's callgrind, which counts the user-space instructions of all its threads
//! exactly, and gets the request bytes the rig bench sends the module. The command fails when
//! the module is not at least [`FACTOR`] times below rmcp on every small call. docs/bench.md,
//! "The peers", says how they are configured and what is and isn't counted.

use crate::cmd::repo_root;
use crate::{clients, prereqs};
use rpc::testing::McpRequest;
use serde_json::{Map, Value, json};
use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The rig bench's token (`tools/iris/examples/bench/main.rs`): the peers check none, but the
/// bytes they parse are the module's.
const TOKEN: &str = "bench-token-5e0f27a1";
/// The bench names the machine `indy` in `Host`; each peer is told to accept that name.
const HOST: &str = "indy";
/// The rig bench's `Accept-Encoding` on `/mcp` (what agents' HTTP clients send); neither peer
/// codes its answers.
const ACCEPT_ENCODING: &str = "gzip, deflate";
/// What the peers' small calls answer, and with which arguments they are called: one real
/// result of each call of the rig bench, as `--update-peer-fixtures` takes them.
pub const RESULTS_JSON: &str = "tools/peers/results.json";
/// Where the rig bench writes each small call's tool, arguments and result
/// (`tools/iris/examples/bench/small_calls.rs`).
pub const BENCH_RESULTS: &str = "target/bench/small-calls.json";
/// Exchanges before any count, so that lazy initialisation is not charged to a request.
const WARM_UP: usize = 3;
/// Counted exchanges per figure: callgrind's counts are exact, a few give a stable mean.
const REPS: usize = 5;
/// How long a peer may take to listen (Python's imports under callgrind are slow).
const START_TIMEOUT: Duration = Duration::from_secs(1800);
/// How long one response may take under callgrind.
const IO_TIMEOUT: Duration = Duration::from_secs(120);
/// On every small call the module must take at most 1/FACTOR of rmcp's instructions.
pub const FACTOR: f64 = 2.0;

/// One reference server.
struct Peer {
    /// Key in the JSON result and column of the table.
    key: &'static str,
    /// What it is, for the table's heading.
    what: &'static str,
    /// Its command line before the four arguments `TOOLS_JSON RESULTS_JSON PORT HOST`.
    argv: Vec<PathBuf>,
}

/// One row of the table: its label, the peers' key and the module's key (the rig bench's JSON),
/// and whether it is a small call, which the module must be [`FACTOR`] times below rmcp on.
struct Row {
    label: &'static str,
    peer_key: &'static str,
    module_key: &'static str,
    small: bool,
}

const fn row(label: &'static str, key: &'static str, small: bool) -> Row {
    Row {
        label,
        peer_key: key,
        module_key: key,
        small,
    }
}

/// The table, in order. The small calls' keys are the rig bench's (`small_calls.rs`).
const ROWS: &[Row] = &[
    row("server/discover", "discover", false),
    row("tools/list", "tools_list", false),
    row("tools/call echo", "echo_small", true),
    row("tools/call status", "status", true),
    row("tools/call fs.stat /etc/motd", "fs_stat", true),
    row("tools/call serial.read 1 KiB", "serial_read_1k", true),
    row("tools/call fs.list /", "fs_list_root", true),
    row("tools/call proc.list", "proc_list", true),
    row("echo, per byte in and out", "echo_per_byte", false),
    Row {
        label: "idle memory (module heap, peer RSS)",
        peer_key: "idle_rss_bytes",
        module_key: "idle_heap_bytes",
        small: false,
    },
];

/// The small calls besides `echo`, by the rig bench's key: each must be in [`RESULTS_JSON`].
const SMALL_CALLS: &[&str] = &[
    "status",
    "fs_stat",
    "serial_read_1k",
    "fs_list_root",
    "proc_list",
];

/// One small call of [`RESULTS_JSON`]: the rig bench's key, the tool, its arguments and the
/// module's result.
#[derive(Debug)]
struct SmallCall {
    key: String,
    tool: String,
    arguments: Value,
    result: Value,
}

/// The entries of a results file (`[{"key", "tool", "arguments", "result"}, …]`); every one of
/// [`SMALL_CALLS`] must be there, with object arguments and an object result.
fn small_calls(text: &str) -> Result<Vec<SmallCall>, String> {
    let entries: Vec<Map<String, Value>> =
        serde_json::from_str(text).map_err(|e| format!("not a JSON array of objects: {e}"))?;
    let mut calls = Vec::new();
    for mut e in entries {
        let mut take = |k: &str| e.remove(k).unwrap_or(Value::Null);
        let (key, tool, arguments, result) =
            (take("key"), take("tool"), take("arguments"), take("result"));
        match (key, tool) {
            (Value::String(key), Value::String(tool))
                if arguments.is_object() && result.is_object() =>
            {
                calls.push(SmallCall {
                    key,
                    tool,
                    arguments,
                    result,
                })
            }
            (key, _) => {
                return Err(format!(
                    "entry {key}: needs a key, a tool, object arguments and an object result"
                ));
            }
        }
    }
    for key in SMALL_CALLS {
        if !calls.iter().any(|c| c.key == *key) {
            return Err(format!(
                "no {key} (the rig bench skips fs.stat and fs.list without the fixture disk)"
            ));
        }
    }
    Ok(calls)
}

/// `cargo xtask bench --update-peer-fixtures`: the small calls' results the rig bench just
/// wrote ([`BENCH_RESULTS`]) become the peers' ([`RESULTS_JSON`]).
pub fn update_fixtures() -> Result<(), String> {
    let root = repo_root();
    let from = root.join(BENCH_RESULTS);
    let text = std::fs::read_to_string(&from).map_err(|e| format!("{}: {e}", from.display()))?;
    small_calls(&text).map_err(|e| format!("{BENCH_RESULTS}: {e}"))?;
    std::fs::write(root.join(RESULTS_JSON), text).map_err(|e| format!("{RESULTS_JSON}: {e}"))?;
    println!("peers: {RESULTS_JSON} now holds the results of {BENCH_RESULTS}");
    Ok(())
}

/// Every path of `v`'s members with its JSON type (`heap.used:number`, `entries[].name:string`;
/// an array's elements merged): what must match for a fixture to have the module's shape.
fn shape(v: &Value) -> BTreeSet<String> {
    fn walk(v: &Value, path: &str, out: &mut BTreeSet<String>) {
        let kind = match v {
            Value::Null => "null",
            Value::Bool(_) => "bool",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(items) => {
                for item in items {
                    walk(item, &format!("{path}[]"), out);
                }
                "array"
            }
            Value::Object(members) => {
                for (k, m) in members {
                    let p = if path.is_empty() {
                        k.clone()
                    } else {
                        format!("{path}.{k}")
                    };
                    walk(m, &p, out);
                }
                "object"
            }
        };
        out.insert(format!("{path}:{kind}"));
    }
    let mut out = BTreeSet::new();
    walk(v, "", &mut out);
    out
}

/// The fixtures beside the results the module gave in this run (`bench` lines of the same
/// keys): one line per call with both sizes, and what differs in shape. Returns the lines.
fn compare_fixtures(fixtures: &[SmallCall], bench: &[SmallCall]) -> Vec<String> {
    let size = |v: &Value| serde_json::to_string(v).map_or(0, |s| s.len());
    let mut lines = Vec::new();
    for f in fixtures {
        let Some(b) = bench.iter().find(|b| b.key == f.key) else {
            lines.push(format!("{}: not measured in this run", f.key));
            continue;
        };
        let (fs, bs) = (shape(&f.result), shape(&b.result));
        let mut line = format!(
            "{}: fixture {} bytes of JSON, the module's result in this run {} bytes",
            f.key,
            size(&f.result),
            size(&b.result)
        );
        if fs != bs || f.arguments != b.arguments {
            let only_fixture: Vec<_> = fs.difference(&bs).cloned().collect();
            let only_module: Vec<_> = bs.difference(&fs).cloned().collect();
            line += &format!(
                "; SHAPE DIFFERS (only in the fixture: {only_fixture:?}; only in the module's: \
                 {only_module:?}; arguments {} vs {}): run `cargo xtask bench --update-peer-fixtures`",
                f.arguments, b.arguments
            );
        }
        lines.push(line);
    }
    lines
}

/// The measured requests, built as the rig bench builds them: label, peer key, bytes.
struct Requests {
    measured: Vec<(&'static str, &'static str, Vec<u8>)>,
    echo_x: Vec<u8>,
    echo_large: Vec<u8>,
}

fn mcp_request(method: &str, params: Value) -> Vec<u8> {
    McpRequest::modern(method, params)
        .header("Accept-Encoding", ACCEPT_ENCODING)
        .http("/mcp", HOST, Some(TOKEN))
}

fn tool_call(name: &str, arguments: Value) -> Vec<u8> {
    mcp_request("tools/call", json!({"name": name, "arguments": arguments}))
}

fn echo_request(text: &str) -> Vec<u8> {
    tool_call("echo", json!({ "text": text }))
}

impl Requests {
    fn new(calls: &[SmallCall]) -> Self {
        let mut measured = vec![
            (
                "server/discover",
                "discover",
                mcp_request("server/discover", json!({})),
            ),
            (
                "tools/list",
                "tools_list",
                mcp_request("tools/list", json!({})),
            ),
            ("tools/call echo", "echo_small", echo_request("hello")),
        ];
        for r in ROWS.iter().filter(|r| r.small) {
            if let Some(c) = calls.iter().find(|c| c.key == r.peer_key) {
                measured.push((r.label, r.peer_key, tool_call(&c.tool, c.arguments.clone())));
            }
        }
        Requests {
            measured,
            echo_x: echo_request("x"),
            echo_large: echo_request(&"irix7 ".repeat(10_000)),
        }
    }

    fn all(&self) -> impl Iterator<Item = &[u8]> {
        self.measured
            .iter()
            .map(|(_, _, r)| r.as_slice())
            .chain([self.echo_x.as_slice(), self.echo_large.as_slice()])
    }
}

/// Installs valgrind and the venv, builds the rmcp peer, measures both peers and prints the
/// table beside `module` (the rig bench's figures). Returns the peers' figures as one JSON object
/// (`{"rmcp": {...}, "python": {...}, "factor": 2, "not_below_rmcp": [...]}`) and whether the
/// module is [`FACTOR`] times below rmcp on every small call (`Err` naming each one it is not).
pub fn run(module: &Value) -> Result<(Value, Result<(), String>), String> {
    prereqs::ensure_debian(&["valgrind"])?;
    clients::ensure_venv()?;
    let root = repo_root();
    let fixtures_text = std::fs::read_to_string(root.join(RESULTS_JSON))
        .map_err(|e| format!("{RESULTS_JSON}: {e}"))?;
    let fixtures = small_calls(&fixtures_text).map_err(|e| format!("{RESULTS_JSON}: {e}"))?;
    println!("peers' results ({RESULTS_JSON}) beside the module's in this run ({BENCH_RESULTS}):");
    match std::fs::read_to_string(root.join(BENCH_RESULTS))
        .map_err(|e| e.to_string())
        .and_then(|t| small_calls(&t))
    {
        Ok(bench) => {
            for line in compare_fixtures(&fixtures, &bench) {
                println!("  {line}");
            }
        }
        Err(e) => println!("  no results of this run to compare ({BENCH_RESULTS}: {e})"),
    }
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
                root.join("tools/peers/python_peer.py"),
            ],
        },
    ];
    let requests = Requests::new(&fixtures);
    let mut result = Map::new();
    for peer in &peers {
        println!("peer {} ({}):", peer.key, peer.what);
        result.insert(peer.key.into(), measure(peer, &requests)?);
    }
    let short = not_below_rmcp(module, &result["rmcp"]);
    result.insert("factor".into(), json!(FACTOR));
    result.insert(
        "not_below_rmcp".into(),
        json!(short.iter().map(|(k, _)| k).collect::<Vec<_>>()),
    );
    let result = Value::Object(result);
    print!("{}", table(module, &peers, &result));
    let verdict = if short.is_empty() {
        println!("the module is at least {FACTOR}x below rmcp on every small call");
        Ok(())
    } else {
        println!("the module is NOT at least {FACTOR}x below rmcp on:");
        for (_, why) in &short {
            println!("  {why}");
        }
        let why: Vec<_> = short.into_iter().map(|(_, why)| why).collect();
        Err(format!(
            "the module is not {FACTOR}x below rmcp on every small call: {}",
            why.join("; ")
        ))
    };
    Ok((result, verdict))
}

/// The small calls on which the module is not [`FACTOR`] times below rmcp (rmcp / module <
/// FACTOR), or either has no figure: (key, why) in the table's order.
fn not_below_rmcp(module: &Value, rmcp: &Value) -> Vec<(&'static str, String)> {
    let mut short = Vec::new();
    for r in ROWS.iter().filter(|r| r.small) {
        let m = module.get(r.module_key).and_then(Value::as_f64);
        let p = rmcp.get(r.peer_key).and_then(Value::as_f64);
        match (m, p) {
            (Some(m), Some(p)) if m > 0.0 && p / m >= FACTOR => {}
            (Some(m), Some(p)) if m > 0.0 => short.push((
                r.peer_key,
                format!(
                    "{}: module {m:.0}, rmcp {p:.0} (ratio {:.2})",
                    r.label,
                    p / m
                ),
            )),
            _ => short.push((
                r.peer_key,
                format!("{}: no figure (module {m:?}, rmcp {p:?})", r.label),
            )),
        }
    }
    short
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
    let mut figures = figures?;
    figures.insert("idle_rss_bytes".into(), json!(rss));
    Ok(Value::Object(figures))
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
            .arg(repo_root().join(RESULTS_JSON))
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
        for r in req.all() {
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

    /// Instructions per request of every measured request, and the echo's per byte, under
    /// callgrind, whose dumps go to `out.1`, `out.2`, …; by the peers' keys.
    fn counts(&mut self, req: &Requests, out: &Path) -> Result<Map<String, Value>, String> {
        let mut dumps = 0;
        let mut figure = |what: &str, r: &[u8]| -> Result<(f64, usize), String> {
            dumps += 1;
            let (insns, bytes) = self.count(r, out, dumps)?;
            println!("  {what:<32} {insns:>14.1} insns/request  ({bytes} response bytes)");
            Ok((insns, bytes))
        };
        let mut figures = Map::new();
        for (label, key, r) in &req.measured {
            let (insns, _) = figure(label, r)?;
            figures.insert((*key).into(), json!(insns));
        }
        let (i_small, b_small) = figure("echo \"x\"", &req.echo_x)?;
        let (i_large, b_large) = figure("echo 60 KB", &req.echo_large)?;
        let per_byte = (i_large - i_small) / (b_large - b_small) as f64;
        println!("  {:<32} {per_byte:>14.1} insns/byte", "echo byte");
        figures.insert("echo_per_byte".into(), json!(per_byte));
        Ok(figures)
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

/// figure | module | each peer and its ratio to the module, as a Markdown table.
fn table(module: &Value, peers: &[Peer], result: &Value) -> String {
    let fmt = |v: Option<f64>| match v {
        Some(v) if v >= 100.0 => format!("{v:.0}"),
        Some(v) => format!("{v:.1}"),
        None => "—".into(),
    };
    let mut t = String::from("| figure | module (R4400, all of it) |");
    for p in peers {
        t += &format!(" {} (x86-64, user space) | ratio |", p.what);
    }
    t += "\n|---|---|";
    for _ in peers {
        t += "---|---|";
    }
    t += "\n";
    for r in ROWS {
        let m = module.get(r.module_key).and_then(Value::as_f64);
        t += &format!("| {} | {} |", r.label, fmt(m));
        for p in peers {
            let v = result[p.key][r.peer_key].as_f64();
            let ratio = match (v, m) {
                (Some(v), Some(m)) if m > 0.0 => format!("{:.2}", v / m),
                _ => "—".into(),
            };
            t += &format!(" {} | {ratio} |", fmt(v));
        }
        t += "\n";
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixtures() -> String {
        json!([
            {"key": "status", "tool": "status", "arguments": {}, "result": {"abi": 12, "heap": {"used": 5}}},
            {"key": "fs_stat", "tool": "fs.stat", "arguments": {"path": "/etc/motd"}, "result": {"size": 1}},
            {"key": "serial_read_1k", "tool": "serial.read", "arguments": {"offset": 9, "max_bytes": 1024},
             "result": {"data": "x"}},
            {"key": "fs_list_root", "tool": "fs.list", "arguments": {"path": "/"},
             "result": {"entries": [{"name": "etc"}, {"name": "big", "size": 3}]}},
            {"key": "proc_list", "tool": "proc.list", "arguments": {}, "result": {"count": 0}},
        ])
        .to_string()
    }

    #[test]
    fn the_results_file_needs_every_small_call() {
        let calls = small_calls(&fixtures()).unwrap();
        assert_eq!(calls.len(), 5);
        assert_eq!(calls[2].tool, "serial.read");
        assert_eq!(calls[2].arguments["max_bytes"], 1024);
        // Without the fixture disk the rig bench has no fs calls.
        let mut v: Vec<Value> = serde_json::from_str(&fixtures()).unwrap();
        v.retain(|e| e["key"] != "fs_stat");
        let e = small_calls(&Value::from(v).to_string()).unwrap_err();
        assert!(e.contains("no fs_stat"), "{e}");
        assert!(
            small_calls(
                r#"[{"key": "status", "tool": "status", "arguments": {}, "result": null}]"#
            )
            .is_err()
        );
        assert!(small_calls("{}").is_err());
    }

    #[test]
    fn requests_are_the_rig_benchs_bytes() {
        let req = Requests::new(&small_calls(&fixtures()).unwrap());
        let keys: Vec<_> = req.measured.iter().map(|(_, k, _)| *k).collect();
        assert_eq!(
            keys,
            [
                "discover",
                "tools_list",
                "echo_small",
                "status",
                "fs_stat",
                "serial_read_1k",
                "fs_list_root",
                "proc_list"
            ]
        );
        let serial = String::from_utf8(req.measured[5].2.clone()).unwrap();
        assert!(serial.contains("Mcp-Name: serial.read"), "{serial}");
        assert!(
            serial.contains("Accept-Encoding: gzip, deflate"),
            "{serial}"
        );
        assert!(
            serial.contains(r#""arguments":{"max_bytes":1024,"offset":9}"#),
            "{serial}"
        );
    }

    #[test]
    fn shapes_name_every_member_and_merge_array_elements() {
        let s = shape(&json!({"entries": [{"name": "a"}, {"name": "b", "size": 1}], "n": null}));
        let s: Vec<_> = s.iter().map(String::as_str).collect();
        assert_eq!(
            s,
            [
                ":object",
                "entries:array",
                "entries[].name:string",
                "entries[].size:number",
                "entries[]:object",
                "n:null"
            ]
        );
    }

    #[test]
    fn fixtures_are_compared_with_this_runs_results() {
        let f = small_calls(&fixtures()).unwrap();
        let mut b: Vec<Value> = serde_json::from_str(&fixtures()).unwrap();
        b[0]["result"]["heap"]["used"] = json!(123456);
        b[4]["result"]["count"] = json!("many");
        b.retain(|e| e["key"] != "fs_stat");
        let b: Vec<SmallCall> = serde_json::from_value::<Vec<Value>>(Value::from(b))
            .unwrap()
            .into_iter()
            .map(|e| SmallCall {
                key: e["key"].as_str().unwrap().into(),
                tool: e["tool"].as_str().unwrap().into(),
                arguments: e["arguments"].clone(),
                result: e["result"].clone(),
            })
            .collect();
        let lines = compare_fixtures(&f, &b);
        assert_eq!(lines.len(), 5);
        assert_eq!(
            lines[0],
            "status: fixture 28 bytes of JSON, the module's result in this run 33 bytes"
        );
        assert_eq!(lines[1], "fs_stat: not measured in this run");
        assert!(!lines[3].contains("SHAPE"), "{}", lines[3]);
        assert!(
            lines[4].contains(r#"SHAPE DIFFERS (only in the fixture: ["count:number"]; only in the module's: ["count:string"]"#),
            "{}",
            lines[4]
        );
    }

    fn figures(echo: f64, status: f64) -> Value {
        json!({"echo_small": echo, "status": status, "fs_stat": 90000, "serial_read_1k": 120000,
            "fs_list_root": 150000, "proc_list": 100000})
    }

    #[test]
    fn the_module_must_be_twice_below_rmcp_on_every_small_call() {
        let rmcp = json!({"echo_small": 160000.0, "status": 240000.0, "fs_stat": 180000.0,
            "serial_read_1k": 240000.0, "fs_list_root": 300000.0, "proc_list": 200000.0,
            "discover": 1.0});
        // Exactly twice below passes; discover is not a small call.
        assert!(not_below_rmcp(&figures(80000.0, 120000.0), &rmcp).is_empty());
        let short = not_below_rmcp(&figures(80001.0, 130000.0), &rmcp);
        let keys: Vec<_> = short.iter().map(|(k, _)| *k).collect();
        assert_eq!(keys, ["echo_small", "status"]);
        assert_eq!(
            short[1].1,
            "tools/call status: module 130000, rmcp 240000 (ratio 1.85)"
        );
        // A figure missing on either side fails the check rather than passing it.
        let mut m = figures(1.0, 1.0);
        m.as_object_mut().unwrap().remove("fs_stat");
        let short = not_below_rmcp(&m, &rmcp);
        assert_eq!(short.len(), 1);
        assert!(short[0].1.contains("no figure"), "{}", short[0].1);
        assert_eq!(not_below_rmcp(&figures(1.0, 1.0), &json!({})).len(), 6);
    }

    #[test]
    fn the_table_has_a_row_per_figure_and_ratios_peer_over_module() {
        let peers = [Peer {
            key: "rmcp",
            what: "rmcp 3.11",
            argv: vec![],
        }];
        let module = json!({"status": 100000, "idle_heap_bytes": 250000});
        let result = json!({"rmcp": {"status": 250000.0, "idle_rss_bytes": 7000000}});
        let t = table(&module, &peers, &result);
        let lines: Vec<_> = t.lines().collect();
        assert_eq!(lines.len(), 2 + ROWS.len());
        assert_eq!(
            lines[0],
            "| figure | module (R4400, all of it) | rmcp 3.11 (x86-64, user space) | ratio |"
        );
        assert!(lines.contains(&"| tools/call status | 100000 | 250000 | 2.50 |"));
        assert!(lines.contains(&"| tools/call fs.list / | — | — | — |"));
        assert!(
            lines.contains(&"| idle memory (module heap, peer RSS) | 250000 | 7000000 | 28.00 |")
        );
    }
}
