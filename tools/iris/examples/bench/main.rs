//! `cargo xtask bench` runs this: the real module image in the rig, driven in lockstep by a
//! client on the host side of the virtual wire (no host sockets, no threads), so every figure
//! is an exact count of guest instructions for the same exchange of frames.
//!
//! Usage: `bench IMAGE [--profile [FILTER]] [--json FILE]` (the rig's boot config is bypassed:
//! the image is named through the NVRAM environment with its digest). With `--profile`, one
//! more exchange of each measured request whose label (`GET /`, `tools/list`,
//! `tools/call fs.read`, …) contains FILTER is run under the rig's profiler; its top 30
//! functions and its instructions by layer are printed. The figures themselves are always
//! measured without the profiler. `--json FILE` writes every figure as one JSON object.

mod client;
mod report;
mod scaling;
mod small_calls;

use client::{Client, find};
use iris::alloc_count::AllocCounts;
use iris::breakdown;
use iris::image::{find_repo_root, sha256_hex};
use iris::profile::Profile;
use iris::{Rig, RigOptions};
use report::Report;
use rpc::testing::{LEGACY_VERSION, McpRequest};
use std::process::ExitCode;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// `--profile`'s filter: `Some("")` profiles every measured exchange.
static PROFILE: OnceLock<Option<String>> = OnceLock::new();
/// Functions a profile prints.
const PROFILE_TOP: usize = 30;
/// The token the benchmarked machine requires (a machine always requires one, unless
/// `mcp.token=none`); the figures include checking it.
const TOKEN: &str = "bench-token-5e0f27a1";
/// The MCP port.
const PORT: u16 = 7801;

/// The most guest instructions one `irix7_mcp_poll` ran, over every rig the bench booted: how
/// long a single request can keep the machine from everything else.
static MAX_POLL_INSNS: AtomicU64 = AtomicU64::new(0);

/// Budgets (issue 18's acceptance figures, issue 39's request floor, and issue 12's time
/// bound and heap bounds).
mod budget {
    pub const GET_STATUS: f64 = 50_000.0;
    pub const DISCOVER: f64 = 100_000.0;
    pub const TOOLS_LIST: f64 = 200_000.0;
    /// A call that does no work of its own: the floor every call stands on (issue 39).
    pub const ECHO_SMALL: f64 = 50_000.0;
    pub const ECHO_PER_BYTE: f64 = 15.0;
    pub const ALLOCS_GET_STATUS: f64 = 0.0;
    pub const ALLOCS_SMALL_REQUEST: f64 = 2.0;
    /// The small tool calls an agent makes most (`small_calls.rs`).
    pub const STATUS: f64 = 100_000.0;
    pub const FS_STAT: f64 = 100_000.0;
    pub const SERIAL_READ_1K: f64 = 100_000.0;
    pub const FS_LIST_ROOT: f64 = 150_000.0;
    pub const PROC_LIST: f64 = 150_000.0;
    pub const ALLOCS_SMALL_CALL: f64 = 4.0;
    pub const IDLE_HEAP: f64 = 256.0 * 1024.0;
    pub const FS_READ_PER_RESPONSE_BYTE: f64 = 12.0;
    pub const FS_READ_PER_PAYLOAD_BYTE: f64 = 40.0;
    pub const FS_READ_PEAK_ABOVE_IDLE: f64 = 1024.0 * 1024.0;
    pub const THUMBNAIL: f64 = 30_000_000.0;
    /// The default thumbnail's PNG in percent of the same pixels deflated in one piece at zlib
    /// level 1 with every row's filter None (the encoder's settings; [`reference_png_len`]):
    /// a cheaper encoder must not buy its instructions with a larger file. A ratio, not
    /// bytes: the console the rig shows grows with what the module prints at boot (17,249
    /// bytes on 2026-12-02, 19,404 on 2026-12-06 for the same encoder).
    pub const THUMBNAIL_PNG_PERCENT: f64 = 101.0;
    pub const CAPTURE_PEAK_ABOVE_IDLE: f64 = 2.0 * 1024.0 * 1024.0;
    pub const SCREEN_BMP_PER_BYTE: f64 = 12.0;
    pub const LONGEST_POLL: f64 = 10_000_000.0;
}

/// Stops `rig` after noting its largest poll in [`MAX_POLL_INSNS`].
fn stop(rig: &mut Rig) {
    MAX_POLL_INSNS.fetch_max(rig.counters().max_poll_insns, Ordering::Relaxed);
    rig.stop().expect("stop");
}

/// What agents' HTTP clients send on `/mcp` (httpx under the Python SDK, Node's fetch,
/// browsers, `curl --compressed`): the module codes a `tools/list` answer `deflate` for them.
const ACCEPT_ENCODING: &str = "gzip, deflate";

fn mcp_request(method: &str, params: serde_json::Value) -> Vec<u8> {
    McpRequest::modern(method, params)
        .header("Accept-Encoding", ACCEPT_ENCODING)
        .http("/mcp", "indy", Some(TOKEN))
}

/// A request that accepts no content coding (`curl` without `--compressed`).
fn identity_request(method: &str, params: serde_json::Value) -> Vec<u8> {
    McpRequest::modern(method, params).http("/mcp", "indy", Some(TOKEN))
}

fn tool_call(name: &str, arguments: serde_json::Value) -> Vec<u8> {
    mcp_request(
        "tools/call",
        serde_json::json!({"name": name, "arguments": arguments}),
    )
}

/// One measured request: mean instructions and allocations per exchange.
struct Measured {
    insns: u64,
    /// Response bytes of the last exchange.
    bytes: usize,
    /// Allocations and bytes allocated per exchange (means over the repetitions).
    allocs: f64,
    alloc_bytes: f64,
    /// The extra exchange under `--profile`, when its label matched.
    profile: Option<Profile>,
}

/// Mean instructions and allocations per exchange over `reps`, after warming up.
fn measure(rig: &mut Rig, c: &mut Client, req: &[u8], reps: u64) -> Measured {
    for _ in 0..3 {
        c.exchange(rig, req, 1);
    }
    let mut total = 0;
    let mut bytes = 0;
    let before = alloc_counts(rig);
    for _ in 0..reps {
        let (i, b) = c.exchange(rig, req, 1);
        total += i;
        bytes = b;
    }
    let a = alloc_counts(rig).since(&before);
    let profile = profile_exchange(rig, c, req);
    Measured {
        insns: total / reps,
        bytes,
        allocs: a.allocs as f64 / reps as f64,
        alloc_bytes: a.bytes as f64 / reps as f64,
        profile,
    }
}

fn alloc_counts(rig: &Rig) -> AllocCounts {
    rig.alloc_counts().expect("allocation counting started")
}

/// What a request is, for `--profile`: the request line for plain HTTP, else the MCP method and
/// tool name from the headers.
fn label(req: &[u8]) -> String {
    let head = String::from_utf8_lossy(&req[..find(req, b"\r\n\r\n").unwrap_or(req.len())]);
    let header = |name: &str| {
        head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case(name).then(|| v.trim().to_string())
        })
    };
    match header("Mcp-Method") {
        Some(m) => match header("Mcp-Name") {
            Some(n) => format!("{m} {n}"),
            None => m,
        },
        None => head
            .lines()
            .next()
            .unwrap_or("")
            .trim_end_matches(" HTTP/1.1")
            .to_string(),
    }
}

/// Under `--profile`: one more exchange of `req` with the profiler on; prints its top
/// functions and its instructions by layer (per response byte too for a large response).
fn profile_exchange(rig: &mut Rig, c: &mut Client, req: &[u8]) -> Option<Profile> {
    let what = label(req);
    match PROFILE.get() {
        Some(Some(filter)) if what.contains(filter.as_str()) => {}
        _ => return None,
    }
    rig.profile_start().expect("profiler");
    let (insns, bytes) = c.exchange(rig, req, 1);
    let p = rig.profile_stop().expect("profiler").unwrap_or_default();
    println!("profile of one `{what}` exchange ({insns} insns, {bytes} response bytes):");
    print!("{}", p.report(PROFILE_TOP));
    println!("  by layer (self instructions):");
    print!(
        "{}",
        breakdown::report(&p, (bytes > 100_000).then_some(bytes as u64))
    );
    Some(p)
}

/// The fs benchmark's file: 4 MiB of deterministic bytes in the fixture image.
const FS_FILE: &str = "/big/4mib.bin";

/// A booted rig with the fixture image at SCSI target 2 (the rig's default disk), counting
/// allocations.
fn boot_rig(image_path: &str) -> Rig {
    let image = std::fs::read(image_path).expect("read the image");
    let digest = sha256_hex(&image);
    // The rig's console (and so the screen the thumbnail captures) shows the image's URL: one
    // relative path for every checkout and image keeps the screen the same but for the digest.
    let root = find_repo_root();
    let url = format!("target/bench/image-{}.o", &digest[..8]);
    std::fs::create_dir_all(root.join("target/bench")).expect("target/bench");
    std::fs::write(root.join(&url), &image).expect("copy the image");
    let opts = RigOptions {
        root: Some(root),
        env: vec![
            format!("mcp.url=file:{url}"),
            format!("mcp.sha256={digest}"),
            "netaddr=172.31.77.2/24".into(),
            format!("mcp.token={TOKEN}"),
            // The requests name the machine `indy` in Host.
            "mcp.hosts=indy".into(),
        ],
        quiet: true,
        ..RigOptions::default()
    };
    let mut rig = Rig::new(opts).expect("rig");
    rig.boot().expect("boot");
    rig.alloc_count_start().expect("allocation hooks");
    rig
}

/// The `status` tool's structured result.
fn status_of(rig: &mut Rig, c: &mut Client) -> serde_json::Value {
    c.exchange(rig, &tool_call("status", serde_json::json!({})), 1);
    c.json_body()["result"]["structuredContent"].clone()
}

fn heap_used(status: &serde_json::Value) -> f64 {
    status["heap"]["used"].as_f64().unwrap_or(f64::NAN)
}

/// Heap in use right after init: the first request (a `status` call) on the first connection of
/// a fresh guest, whose own allocations are live when it reads the counter. A guest of its own,
/// so the measured requests see the state they always saw.
fn idle_heap(image_path: &str) -> f64 {
    let mut rig = boot_rig(image_path);
    let mut c = Client::connect(&mut rig, PORT, 40_005);
    let idle = heap_used(&status_of(&mut rig, &mut c));
    stop(&mut rig);
    idle
}

/// `fs.read` of `len` bytes of [`FS_FILE`] from `offset` in base64 (no `offset` argument at
/// 0: the same request bytes as the figures before it existed).
fn fs_read_request(offset: u64, len: u64) -> Vec<u8> {
    let mut args = serde_json::json!({"path": FS_FILE, "encoding": "base64",
        "length": len, "max_output": 8 << 20});
    if offset > 0 {
        args["offset"] = offset.into();
    }
    tool_call("fs.read", args)
}

/// One [`fs_read_request`], checked; (instructions, response bytes).
fn fs_read(rig: &mut Rig, c: &mut Client, offset: u64, len: u64) -> (u64, usize) {
    let req = fs_read_request(offset, len);
    let (insns, bytes) = c.exchange(rig, &req, 1);
    let text = String::from_utf8_lossy(&c.inbox);
    assert!(
        !text.contains("\"isError\":true") && text.contains(&format!("\"length\":{len}")),
        "fs.read failed: {}",
        &text[..text.len().min(600)]
    );
    assert!(
        bytes as u64 > len * 4 / 3,
        "the response is shorter than the data"
    );
    (insns, bytes)
}

/// Module heap while one fresh guest serves one `fs.read` of `len` bytes: (in use before, peak
/// before, peak after, how far above what was in use the read took the heap). The last is the
/// allocator hooks' count (bytes asked for), not the module's peak counter, which also covers
/// boot and its packing of the coded answers, higher than any read.
fn fs_read_peak(image_path: &str, len: u64) -> (f64, f64, f64, f64) {
    let mut rig = boot_rig(image_path);
    rig.alloc_count_start().expect("allocation hooks");
    let mut c = Client::connect(&mut rig, PORT, 40_002);
    let before = status_of(&mut rig, &mut c);
    let idle = heap_used(&before);
    let peak_before = before["heap"]["peak"].as_f64().unwrap_or(f64::NAN);
    let above = above_now(&mut rig, |rig| fs_read(rig, &mut c, 0, len));
    let after = status_of(&mut rig, &mut c);
    stop(&mut rig);
    let peak = after["heap"]["peak"].as_f64().unwrap_or(f64::NAN);
    (idle, peak_before, peak, above)
}

/// How many bytes above what is live now `work` took the module's heap at its highest, by the
/// allocator hooks.
fn above_now<T>(rig: &mut Rig, work: impl FnOnce(&mut Rig) -> T) -> f64 {
    rig.alloc_peak_mark();
    let start = alloc_counts(rig);
    work(rig);
    alloc_counts(rig).since(&start).live_peak as f64
}

/// The default thumbnail's request.
fn screen_capture_request() -> Vec<u8> {
    tool_call("screen.capture", serde_json::json!({}))
}

/// One `screen.capture` at the default scale; (instructions, response bytes, the PNG), or
/// `None` when the module has no graphics board (`E_NODEV`).
fn screen_capture(rig: &mut Rig, c: &mut Client) -> Option<(u64, usize, Vec<u8>)> {
    let (insns, bytes) = c.exchange(rig, &screen_capture_request(), 1);
    let text = String::from_utf8_lossy(&c.inbox);
    if text.contains("E_NODEV") {
        return None;
    }
    assert!(
        !text.contains("\"isError\":true") && text.contains("\"width\":640"),
        "screen.capture failed: {}",
        &text[..text.len().min(600)]
    );
    let body = c.json_body();
    let png = body["result"]["content"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == "image"))
        .and_then(|c| c["data"].as_str())
        .map(|d| {
            use base64::Engine;
            base64::engine::general_purpose::STANDARD
                .decode(d)
                .expect("the thumbnail's base64")
        })
        .expect("an image content item");
    Some((insns, bytes, png))
}

/// The size of `png`'s pixels as a PNG of the module's own settings written in one piece: its
/// rows (8-bit RGB, each with filter byte 0) deflated at once by `miniz_oxide` at level 1, in
/// one IDAT, with the signature, IHDR and IEND.
fn reference_png_len(png: &[u8]) -> usize {
    let mut reader = png::Decoder::new(std::io::Cursor::new(png))
        .read_info()
        .expect("the thumbnail's PNG header");
    let mut pixels = vec![0; reader.output_buffer_size().expect("a thumbnail's size")];
    let frame = reader
        .next_frame(&mut pixels)
        .expect("the thumbnail's pixels");
    assert_eq!(
        (frame.color_type, frame.bit_depth),
        (png::ColorType::Rgb, png::BitDepth::Eight),
        "the thumbnail is 8-bit RGB"
    );
    let rows: Vec<u8> = pixels[..frame.buffer_size()]
        .chunks(frame.line_size)
        .flat_map(|row| std::iter::once(0).chain(row.iter().copied()))
        .collect();
    let idat = miniz_oxide::deflate::compress_to_vec_zlib(&rows, 1).len();
    // Signature 8, IHDR 25, one IDAT's length, type and CRC 12, IEND 12.
    8 + 25 + 12 + idat + 12
}

/// The request of one full-screen BMP.
fn screen_bmp_request() -> Vec<u8> {
    format!("GET /screen.bmp HTTP/1.1\r\nHost: indy\r\nAuthorization: Bearer {TOKEN}\r\n\r\n")
        .into_bytes()
}

/// One `GET /screen.bmp`; (instructions, response bytes).
fn screen_bmp(rig: &mut Rig, c: &mut Client) -> (u64, usize) {
    let req = screen_bmp_request();
    let (insns, bytes) = c.exchange(rig, &req, 1);
    assert!(
        bytes > 1280 * 1024 * 3 && c.inbox.starts_with(b"HTTP/1.1 200"),
        "GET /screen.bmp failed: {}",
        String::from_utf8_lossy(&c.inbox[..c.inbox.len().min(300)])
    );
    profile_exchange(rig, c, &req);
    (insns, bytes)
}

/// Module heap while one fresh guest serves one default `screen.capture`: (in use before, peak
/// before, peak after, how far above what was in use the capture took the heap), measured
/// like [`fs_read_peak`].
fn screen_peak(image_path: &str) -> (f64, f64, f64, f64) {
    let mut rig = boot_rig(image_path);
    rig.alloc_count_start().expect("allocation hooks");
    let mut c = Client::connect(&mut rig, PORT, 40_003);
    let before = status_of(&mut rig, &mut c);
    let idle = heap_used(&before);
    let peak_before = before["heap"]["peak"].as_f64().unwrap_or(f64::NAN);
    let above = above_now(&mut rig, |rig| {
        screen_capture(rig, &mut c).expect("a graphics board")
    });
    let after = status_of(&mut rig, &mut c);
    stop(&mut rig);
    let peak = after["heap"]["peak"].as_f64().unwrap_or(f64::NAN);
    (idle, peak_before, peak, above)
}

/// The allocation hooks read the layout's size from a register; this checks them against the
/// module's own counter: between two `status` calls, bytes allocated minus bytes freed as the
/// hooks saw them must equal the change of `heap.used` (each call reads the counter at the
/// same point of the same work, so that work cancels out) over `n` exchanges of `work`.
/// Returns whether they agree.
fn alloc_hooks_agree(rig: &mut Rig, c: &mut Client, work: &[u8], n: usize) -> bool {
    status_of(rig, c);
    let a0 = alloc_counts(rig);
    let s0 = status_of(rig, c);
    for _ in 0..n {
        c.exchange(rig, work, 1);
    }
    let a1 = alloc_counts(rig);
    let s1 = status_of(rig, c);
    let d = a1.since(&a0);
    let hooks = d.bytes as f64 - d.freed_bytes as f64;
    let module = heap_used(&s1) - heap_used(&s0);
    let ok = hooks == module;
    println!(
        "  allocation hooks: {} allocs, {} frees, net {hooks} bytes; module's heap.used {module:+} bytes: {}",
        d.allocs,
        d.frees,
        if ok { "agree" } else { "DISAGREE" }
    );
    ok
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let profile = args.iter().position(|a| a == "--profile").map(|i| {
        args.get(i + 1)
            .filter(|f| !f.starts_with("--") && !f.ends_with(".o"))
            .cloned()
            .unwrap_or_default()
    });
    let json = args
        .iter()
        .position(|a| a == "--json")
        .and_then(|i| args.get(i + 1))
        .cloned();
    let _ = PROFILE.set(profile.clone());
    let Some(image_path) = args
        .iter()
        .find(|a| !a.starts_with("--") && Some(*a) != profile.as_ref() && Some(*a) != json.as_ref())
        .cloned()
    else {
        eprintln!("usage: bench IMAGE [--profile [FILTER]] [--json FILE]");
        return ExitCode::FAILURE;
    };
    let started = std::time::Instant::now();
    let mut r = Report::default();
    let agree = run(&image_path, &mut r);
    println!("time bound:");
    r.figure(
        "longest_poll",
        "largest single poll (every rig of the bench)",
        MAX_POLL_INSNS.load(Ordering::Relaxed) as f64,
        "insns",
        Some(budget::LONGEST_POLL),
    );
    println!(
        "bench ran {:.0} s of host time",
        started.elapsed().as_secs_f64()
    );
    if let Some(path) = json {
        let text = serde_json::to_string_pretty(&r.json()).expect("figures as JSON");
        if let Err(e) = std::fs::write(&path, text + "\n") {
            eprintln!("bench: writing {path}: {e}");
            return ExitCode::FAILURE;
        }
    }
    if !r.over.is_empty() {
        println!("over budget: {}", r.over.join(", "));
    }
    if r.over.is_empty() && agree {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Every measurement; returns whether the allocation hooks agree with the module's counter.
fn run(image_path: &str, r: &mut Report) -> bool {
    let mut rig = boot_rig(image_path);
    println!("guest instructions (exact, block hook):");
    r.figure(
        "init",
        "irix7_mcp_init",
        rig.counters().init_insns as f64,
        "insns",
        None,
    );

    let mut c = Client::connect(&mut rig, PORT, 40_001);

    let get = b"GET / HTTP/1.1\r\nHost: indy\r\n\r\n";
    let m = measure(&mut rig, &mut c, get, 20);
    r.figure(
        "get_status",
        "GET / (kept-alive connection)",
        m.insns as f64,
        "insns/request",
        Some(budget::GET_STATUS),
    );
    // Each request's allocations, with the budget issue 18 sets (GET / and the small echo).
    let mut allocs = vec![("get_status", "GET /", m, Some(budget::ALLOCS_GET_STATUS))];

    let echo_hello = tool_call("echo", serde_json::json!({"text": "hello"}));
    let discover_req = mcp_request("server/discover", serde_json::json!({}));
    let list_req = mcp_request("tools/list", serde_json::json!({}));
    let list_identity = identity_request("tools/list", serde_json::json!({}));
    let mut small = Vec::new();
    for (key, what, req, budget, alloc_budget) in [
        (
            "discover",
            "server/discover",
            &discover_req,
            budget::DISCOVER,
            None,
        ),
        (
            "tools_list",
            "tools/list",
            &list_req,
            budget::TOOLS_LIST,
            None,
        ),
        (
            "echo_small",
            "tools/call echo",
            &echo_hello,
            budget::ECHO_SMALL,
            Some(budget::ALLOCS_SMALL_REQUEST),
        ),
        (
            "tools_list_identity",
            "tools/list, identity (curl without --compressed)",
            &list_identity,
            budget::TOOLS_LIST,
            None,
        ),
    ] {
        let m = measure(&mut rig, &mut c, req, 10);
        r.figure(key, what, m.insns as f64, "insns/request", Some(budget));
        small.push((key, m.insns as f64));
        allocs.push((key, what, m, alloc_budget));
    }
    let discover = small[0].1;
    let tools_list_identity = small[3].1;

    println!("heap allocations per request (kept-alive connection, allocator hooks):");
    for (key, what, m, budget) in &allocs {
        r.figure(
            &format!("allocations_{key}"),
            &format!("{what}: allocations"),
            m.allocs,
            "allocs/request",
            *budget,
        );
        r.figure(
            &format!("alloc_bytes_{key}"),
            &format!("{what}: bytes allocated"),
            m.alloc_bytes,
            "bytes/request",
            None,
        );
    }
    r.figure(
        "allocations_per_small_request",
        "small echo: allocations (the acceptance figure)",
        allocs[3].2.allocs,
        "allocs/request",
        Some(budget::ALLOCS_SMALL_REQUEST),
    );
    // Two legacy sessions: lasting allocations, so the check compares a change that is not 0.
    let init = McpRequest::initialize(LEGACY_VERSION).http("/mcp", "indy", Some(TOKEN));
    let agree = alloc_hooks_agree(&mut rig, &mut c, &init, 2);

    small_calls::run(image_path, r);

    // A large echo against a small one: both directions carry the text, so this is the cost of
    // a byte in and out (parse, unescape, escape, send).
    println!("per byte:");
    let x = tool_call("echo", serde_json::json!({"text": "x"}));
    let text: String = "irix7 ".repeat(10_000);
    let large = tool_call("echo", serde_json::json!({"text": text}));
    let ms = measure(&mut rig, &mut c, &x, 5);
    let ml = measure(&mut rig, &mut c, &large, 5);
    let extra = (ml.bytes - ms.bytes) as u64;
    r.figure(
        "echo_per_byte",
        &format!("echo byte ({} KB in and out)", ml.bytes / 1000),
        (ml.insns - ms.insns) as f64 / extra as f64,
        "insns/byte",
        Some(budget::ECHO_PER_BYTE),
    );
    if let (Some(pl), Some(ps)) = (&ml.profile, &ms.profile) {
        println!("  echo byte by layer (large minus small echo, self instructions per byte):");
        for (cat, per) in breakdown::per_byte_difference(pl, ps, extra) {
            println!("  {cat:<20} {per:>8.2} insns/byte");
        }
    }

    scaling::tools_list(&mut rig, &mut c, r, tools_list_identity);

    println!("module heap:");
    r.figure(
        "idle_heap_bytes",
        "in use at the first request after init",
        idle_heap(image_path),
        "bytes",
        Some(budget::IDLE_HEAP),
    );
    let status = status_of(&mut rig, &mut c);
    r.figure(
        "heap_after_bench_bytes",
        "in use after the requests above",
        heap_used(&status),
        "bytes",
        None,
    );
    r.figure(
        "heap_peak_bytes",
        "peak since boot",
        status["heap"]["peak"].as_f64().unwrap_or(f64::NAN),
        "bytes",
        None,
    );

    screen(&mut rig, &mut c, r, image_path);
    let fs = fs_figures(&mut rig, &mut c, r, image_path);

    println!("how cost grows with work:");
    if fs {
        scaling::fs_positions(&mut rig, &mut c, r, image_path);
    }
    scaling::sessions(&mut rig, &mut c, r, discover, 2);
    scaling::stalled(&mut rig, &mut c, r, &echo_hello);
    stop(&mut rig);
    agree
}

/// The default thumbnail and the full BMP from the rig's Newport.
fn screen(rig: &mut Rig, c: &mut Client, r: &mut Report, image_path: &str) {
    println!("screen (the rig's Newport, 1280x1024):");
    let Some((insns, bytes, png)) = screen_capture(rig, c) else {
        println!("  the module found no graphics board: screen figures skipped");
        return;
    };
    profile_exchange(rig, c, &screen_capture_request());
    r.figure(
        "thumbnail",
        "screen.capture default thumbnail (640x512 PNG)",
        insns as f64,
        "insns",
        Some(budget::THUMBNAIL),
    );
    r.figure(
        "thumbnail_png_bytes",
        "  its PNG",
        png.len() as f64,
        "bytes",
        None,
    );
    r.figure(
        "thumbnail_png_percent",
        "  its PNG, of the same pixels deflated in one piece",
        100.0 * png.len() as f64 / reference_png_len(&png) as f64,
        "%",
        Some(budget::THUMBNAIL_PNG_PERCENT),
    );
    r.figure(
        "thumbnail_response_bytes",
        "  response bytes (base64 PNG in JSON)",
        bytes as f64,
        "bytes",
        None,
    );
    let (insns, bytes) = screen_bmp(rig, c);
    r.figure(
        "screen_bmp",
        "GET /screen.bmp (1280x1024, 24-bit)",
        insns as f64,
        "insns",
        None,
    );
    r.figure(
        "screen_bmp_per_byte",
        "  per response byte",
        insns as f64 / bytes as f64,
        "insns/byte",
        Some(budget::SCREEN_BMP_PER_BYTE),
    );
    let (idle, peak_before, peak, above) = screen_peak(image_path);
    r.figure(
        "capture_heap_before",
        "capture: heap in use before",
        idle,
        "bytes",
        None,
    );
    r.figure(
        "capture_peak_before",
        "capture: peak before",
        peak_before,
        "bytes",
        None,
    );
    r.figure(
        "capture_peak_after",
        "capture: peak after",
        peak,
        "bytes",
        None,
    );
    r.figure(
        "capture_peak_above_idle",
        "capture: peak above idle",
        above,
        "bytes",
        Some(budget::CAPTURE_PEAK_ABOVE_IDLE),
    );
}

/// `fs.read` of the whole 4 MiB file and the heap it takes; false without a filesystem.
fn fs_figures(rig: &mut Rig, c: &mut Client, r: &mut Report, image_path: &str) -> bool {
    println!("fs.read {FS_FILE} (base64, fixture image at SCSI target 2):");
    let before = status_of(rig, c);
    if before.get("cache").is_none() {
        println!("  no filesystem mounted (run `cargo xtask fixtures`): fs figures skipped");
        return false;
    }
    let full = 4u64 << 20;
    let (insns, bytes) = fs_read(rig, c, 0, full);
    profile_exchange(rig, c, &fs_read_request(0, full));
    // A small request, a large response, everything counted.
    r.figure(
        "fs_read_per_response_byte",
        &format!("response byte (this read's {} MB)", bytes / 1_000_000),
        insns as f64 / bytes as f64,
        "insns/byte",
        Some(budget::FS_READ_PER_RESPONSE_BYTE),
    );
    let after = status_of(rig, c);
    r.figure(
        "fs_read_per_payload_byte",
        "guest instructions per payload byte",
        insns as f64 / full as f64,
        "insns/byte",
        Some(budget::FS_READ_PER_PAYLOAD_BYTE),
    );
    r.figure(
        "fs_read_response_bytes",
        "  response bytes",
        bytes as f64,
        "bytes",
        None,
    );
    let cache = |v: &serde_json::Value, k: &str| v["cache"][k].as_f64().unwrap_or(0.0);
    let (hits, misses) = (
        cache(&after, "hits") - cache(&before, "hits"),
        cache(&after, "misses") - cache(&before, "misses"),
    );
    r.figure(
        "fs_read_lru_hit_percent",
        "LRU hit rate during the read",
        100.0 * hits / (hits + misses).max(1.0),
        "%",
        None,
    );
    r.figure(
        "fs_read_lru_lookups",
        "  LRU lookups (hits + misses)",
        hits + misses,
        "blocks",
        None,
    );
    r.figure(
        "fs_read_direct_blocks",
        "  blocks read around the LRU (bulk data)",
        cache(&after, "direct_blocks") - cache(&before, "direct_blocks"),
        "blocks",
        None,
    );
    println!("module heap during one fs.read of {FS_FILE} (a fresh guest each):");
    for (key, what, len) in [("1mib", "1 MiB", 1u64 << 20), ("4mib", "4 MiB", 4 << 20)] {
        let (idle, peak_before, peak, above) = fs_read_peak(image_path, len);
        r.figure(
            &format!("fs_read_{key}_heap_before"),
            &format!("{what}: in use before the read"),
            idle,
            "bytes",
            None,
        );
        r.figure(
            &format!("fs_read_{key}_peak_before"),
            &format!("{what}: peak before the read"),
            peak_before,
            "bytes",
            None,
        );
        r.figure(
            &format!("fs_read_{key}_peak_after"),
            &format!("{what}: peak after the read"),
            peak,
            "bytes",
            None,
        );
        r.figure(
            &format!("fs_read_{key}_peak_above_idle"),
            &format!("{what}: peak above idle"),
            above,
            "bytes",
            Some(budget::FS_READ_PEAK_ABOVE_IDLE),
        );
    }
    true
}
