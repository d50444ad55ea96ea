//! A real GDB (`gdb-multiarch`, in batch) debugs the demo cell beside the real module, through
//! the module's own door: `target remote | gdb-bridge`, which carries GDB's protocol to
//! `POST /debug/rsp` with the bearer token. GDB breaks at a function of the cell, continues to
//! it, reads registers, a backtrace and a variable, steps, deletes its breakpoint and detaches;
//! the cell then runs on with its code intact, and `status` answered other clients throughout.
//! Skipped with a note when gdb-multiarch, the image or the cell is missing (the suite installs
//! and builds them).

mod support;

use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use iris::rig::cell_symbol;
use serde_json::json;
use support::guest::{HOST, TOKEN, boot_guest_with};
use support::http::request;
use support::image::cell_elf;
use support::mcp::{call_tool, call_tool_with_token, expect_success, tool_ok, with_bearer};

fn have_gdb() -> bool {
    let ok = Command::new("gdb-multiarch")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("skipped: gdb-multiarch is not installed (cargo xtask prereqs)");
    }
    ok
}

/// The physical word at KSEG0 address `va`, read by the module's `mem.read`.
fn mem_word(m: &Module, va: u32) -> u32 {
    let r = expect_success(
        "mem.read",
        call_tool_with_token(
            m.addr,
            &m.token,
            "mem.read",
            json!({"addr": va - 0x8000_0000, "length": 4}),
        ),
    )["structuredContent"]
        .clone();
    u32::from_str_radix(r["data"].as_str().unwrap(), 16).unwrap()
}

/// The module a GDB session debugs: the rig's, or MAME's (`cargo xtask mame --gdb`).
struct Module {
    addr: SocketAddr,
    token: String,
}

/// The word at `va` in the cell's ELF (its code as built).
fn elf_word(elf: &Path, va: u32) -> u32 {
    let data = std::fs::read(elf).unwrap();
    // The text segment is loaded at its file offset 0x10000 (cell.ld's first segment).
    let file = object::File::parse(&*data).unwrap();
    use object::{Object, ObjectSection};
    let text = file.section_by_name(".text").unwrap();
    let off = (u64::from(va) - text.address()) as usize;
    let bytes = text.data().unwrap();
    u32::from_be_bytes(bytes[off..off + 4].try_into().unwrap())
}

fn hex_after(out: &str, marker: &str) -> u32 {
    let at = out
        .find(marker)
        .unwrap_or_else(|| panic!("no {marker:?} in GDB's output:\n{out}"));
    let rest = &out[at + marker.len()..];
    let word = rest
        .split_whitespace()
        .next()
        .unwrap()
        .trim_start_matches("0x");
    u32::from_str_radix(word, 16).unwrap_or_else(|e| panic!("{marker}{word}: {e}\n{out}"))
}

#[test]
fn gdb_breaks_steps_reads_and_detaches_a_cell_through_the_door() {
    if !have_gdb() {
        return;
    }
    let Some(elf) = cell_elf() else {
        return;
    };
    let cell = elf.clone();
    let Some(g) = boot_guest_with(&[], move |o| o.cell = Some(cell), |_| {}) else {
        return;
    };
    let module = Module {
        addr: g.mcp,
        token: TOKEN.into(),
    };
    gdb_session(&module, &elf);
}

/// The same session against a module that runs elsewhere: MAME's Indy, which `cargo xtask mame
/// --gdb` boots with the demo cell and then runs this test against, inside MAME's network
/// namespace, with `IRIX7_GDB_MODULE` (the module's address and MCP port), `IRIX7_MCP_TOKEN`
/// (an administrator's token) and `IRIX7_CELL` (the cell's ELF) set.
#[test]
#[ignore = "needs a module outside the rig: cargo xtask mame --gdb runs it"]
fn gdb_debugs_the_cell_of_a_module_elsewhere() {
    let addr = std::env::var("IRIX7_GDB_MODULE")
        .expect("IRIX7_GDB_MODULE names the module's address and port")
        .parse()
        .expect("IRIX7_GDB_MODULE is an address:port");
    let token = std::env::var("IRIX7_MCP_TOKEN").expect("IRIX7_MCP_TOKEN holds the token");
    assert!(have_gdb(), "gdb-multiarch is needed");
    let elf = cell_elf().expect("IRIX7_CELL names the cell");
    gdb_session(&Module { addr, token }, &elf);
}

/// GDB breaks at `cell_mix`, continues to it, reads registers, a backtrace and a variable,
/// writes the variable, steps, finishes, deletes its breakpoint and detaches; the cell then runs on with its code
/// intact, and `status` answered other clients throughout.
fn gdb_session(m: &Module, elf: &Path) {
    let mix = cell_symbol(elf, "cell_mix").unwrap();
    let tick = cell_symbol(elf, "cell_tick").unwrap();
    let ticks = cell_symbol(elf, "CELL_TICKS").unwrap();
    let original = elf_word(elf, mix);
    assert_eq!(mem_word(m, mix), original);

    let bridge = env!("CARGO_BIN_EXE_gdb-bridge");
    let script = std::env::temp_dir().join(format!("iris-gdb-{}.gdb", std::process::id()));
    // `break *cell_mix` is an expression, looked up in the language of the frame where the
    // attach stopped the cell: in Rust's, inside code inlined from `core` (MAME stopped it in
    // `wrapping_mul`), `cell_mix` is "not in current context". In C's it is the global symbol.
    std::fs::write(
        &script,
        format!(
            "set pagination off\n\
             set confirm off\n\
             set remotetimeout 20\n\
             set substitute-path /irix7-mcp {root}\n\
             target remote | {bridge} --addr {ip} --port {port} --host-name {HOST}\n\
             set language c\n\
             break *cell_mix\n\
             set language auto\n\
             continue\n\
             echo ==pc-at-break==\\n\n\
             printf \"PC=%x\\n\", $pc\n\
             echo ==registers==\\n\n\
             info registers\n\
             echo ==bt==\\n\n\
             bt\n\
             echo ==ticks==\\n\n\
             x/1xw &CELL_TICKS\n\
             set language c\n\
             set var *(unsigned int *)&CELL_TICKS = *(unsigned int *)&CELL_TICKS + 0x100000\n\
             set language auto\n\
             echo ==ticks-set==\\n\n\
             x/1xw &CELL_TICKS\n\
             echo ==stepi==\\n\n\
             stepi\n\
             printf \"PC=%x\\n\", $pc\n\
             echo ==next==\\n\n\
             next\n\
             printf \"PC=%x\\n\", $pc\n\
             echo ==finish==\\n\n\
             finish\n\
             printf \"PC=%x\\n\", $pc\n\
             delete\n\
             detach\n\
             echo ==done==\\n\n",
            ip = m.addr.ip(),
            port = m.addr.port(),
            root = iris::image::find_repo_root().display(),
        ),
    )
    .unwrap();
    let mut gdb = Command::new("gdb-multiarch")
        .args(["-nx", "-batch", "-x"])
        .arg(&script)
        .arg(elf)
        .env("IRIX7_MCP_TOKEN", &m.token)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("gdb-multiarch runs");

    // Other clients are served while GDB debugs.
    let started = Instant::now();
    let mut statuses = 0;
    while gdb.try_wait().unwrap().is_none() {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "GDB did not finish in 120 s"
        );
        let s = call_tool_with_token(m.addr, &m.token, "status", json!({}));
        assert_ne!(
            s["isError"],
            json!(true),
            "status failed while GDB ran: {s}"
        );
        statuses += 1;
        // Two a second: within the module's 20 requests a second per client even where its
        // second lasts four of the host's (MAME without its recompiler ran the Indy at a
        // quarter to three fifths of real time on a busy two-core host).
        std::thread::sleep(Duration::from_millis(500));
    }
    let out = gdb.wait_with_output().unwrap();
    let _ = std::fs::remove_file(&script);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if std::env::var_os("IRIX7_GDB_SHOW").is_some() {
        eprintln!("{text}");
    }
    assert!(out.status.success(), "GDB failed:\n{text}");
    assert!(statuses > 0);

    // The breakpoint: the symbol's address in pc.
    assert!(text.contains("Breakpoint 1, "), "{text}");
    // With the sources found (the cell's debug information names them under /irix7-mcp).
    assert!(text.contains("pub extern \"C\" fn cell_mix"), "{text}");
    let at_break = hex_after(&text[text.find("==pc-at-break==").unwrap()..], "PC=");
    assert_eq!(at_break, mix, "{text}");
    // Registers by GDB's MIPS names, pc among them.
    let regs = &text[text.find("==registers==").unwrap()..text.find("==bt==").unwrap()];
    for name in ["zero", "ra", "sr", "lo", "hi", "bad", "cause", "pc"] {
        assert!(regs.contains(name), "no {name} in:\n{regs}");
    }
    // The caller in the backtrace.
    let bt = &text[text.find("==bt==").unwrap()..text.find("==ticks==").unwrap()];
    assert!(bt.contains("#0") && bt.contains("cell_mix"), "{bt}");
    assert!(bt.contains("#1") && bt.contains("cell_tick"), "{bt}");
    // The variable as the machine's memory holds it (the cell is stopped: it holds still).
    let x = &text[text.find("==ticks==").unwrap()..text.find("==ticks-set==").unwrap()];
    let seen = hex_after(x, ":\t");
    assert!(seen > 0, "{x}");
    // `set var` writes it (GDB probes binary writes with the address sign-extended).
    let x = &text[text.find("==ticks-set==").unwrap()..text.find("==stepi==").unwrap()];
    let seen = seen + 0x10_0000;
    assert_eq!(hex_after(x, ":\t"), seen, "{x}");
    // stepi: cell_mix's first instruction is no branch.
    let after_stepi = &text[text.find("==stepi==").unwrap()..text.find("==next==").unwrap()];
    assert_eq!(hex_after(after_stepi, "PC="), mix + 4, "{after_stepi}");
    // next: on to a later line of cell_mix (it calls nothing), before cell_tick.
    let after_next = &text[text.find("==next==").unwrap()..text.find("==finish==").unwrap()];
    let next_pc = hex_after(after_next, "PC=");
    assert!(next_pc > mix + 4 && next_pc < tick, "{after_next}");
    // finish: back in cell_tick, after the call and its delay slot.
    let after_finish = &text[text.find("==finish==").unwrap()..text.find("==done==").unwrap()];
    assert!(after_finish.contains("Value returned is"), "{after_finish}");
    let back = hex_after(after_finish, "PC=");
    assert!(back > tick && back < tick + 0x64, "{after_finish}");
    let call = back - 8;
    assert_eq!(
        elf_word(elf, call) & 0xFC1F_F83F,
        0x0000_F809,
        "a jalr before the slot ahead of {back:#x}"
    );
    assert!(text.contains("detached"), "{text}");

    // Detached: the code is as built and the cell counts again.
    assert_eq!(mem_word(m, mix), original, "the breakpoint's word is back");
    let t0 = mem_word(m, ticks);
    assert!(t0 >= seen);
    std::thread::sleep(Duration::from_millis(300));
    assert!(mem_word(m, ticks) > t0, "the cell runs on after detach");
}

#[test]
fn the_door_wants_the_administrators_token() {
    let Some(elf) = cell_elf() else {
        return;
    };
    let Some(g) = boot_guest_with(
        &["mcp.tokens=watch:observe:watcher-token-0123456789,op:operate:operator-token-0123456789"],
        move |o| o.cell = Some(elf),
        |_| {},
    ) else {
        return;
    };
    let ask = |bearer: Option<&str>| {
        let raw = format!(
            "POST /debug/rsp HTTP/1.1\r\nHost: {HOST}\r\nContent-Type: application/octet-stream\r\n\
             Content-Length: 8\r\nConnection: close\r\n\r\n$?#3f+++"
        );
        let raw = match bearer {
            Some(t) => with_bearer(&raw, t),
            None => raw,
        };
        request(g.mcp, &raw)
    };
    assert_eq!(ask(None).status, 401);
    assert_eq!(ask(Some("watcher-token-0123456789")).status, 403);
    assert_eq!(ask(Some("operator-token-0123456789")).status, 403);
    let admin = ask(Some(TOKEN));
    assert_eq!(admin.status, 200, "{}", admin.text());
    assert!(
        admin.text().contains("$S05") || admin.text().contains("$T05"),
        "{}",
        admin.text()
    );
    // The session is the administrator's: another token's GDB is refused while it lasts, and
    // a DELETE ends it.
    let raw_delete = format!(
        "DELETE /debug/rsp HTTP/1.1\r\nHost: {HOST}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    );
    assert_eq!(request(g.mcp, &with_bearer(&raw_delete, TOKEN)).status, 204);
    // The session's start and end are in the audit trail (and so on the console).
    for what in [
        "POST /debug/rsp ctx=1 -> attached",
        "POST /debug/rsp -> detached",
    ] {
        assert!(
            g.rig.wait_for_console(what, Duration::from_secs(5)),
            "no audit line {what:?}:\n{}",
            g.rig.console_text()
        );
    }
    // A wrong Origin is refused as on /mcp.
    let raw = format!(
        "POST /debug/rsp HTTP/1.1\r\nHost: {HOST}\r\nOrigin: http://evil.example\r\n\
         Content-Length: 0\r\nConnection: close\r\n\r\n"
    );
    assert_eq!(request(g.mcp, &with_bearer(&raw, TOKEN)).status, 403);
}

#[test]
fn a_flooding_debugger_that_never_reads_costs_bounded_polls() {
    let Some(elf) = cell_elf() else {
        return;
    };
    let Some(g) = boot_guest_with(&[], move |o| o.cell = Some(elf), |_| {}) else {
        return;
    };
    use std::io::Write;
    // More than an exchange may carry: refused before the body is read.
    let big = format!(
        "POST /debug/rsp HTTP/1.1\r\nHost: {HOST}\r\nContent-Length: 1048576\r\nConnection: close\r\n\r\n"
    );
    assert_eq!(request(g.mcp, &with_bearer(&big, TOKEN)).status, 413);
    // Exchanges of 8 KiB of `g` requests each (a reply of 585 bytes apiece), on connections
    // that never read a byte of the answers.
    let packet = b"$g#67";
    let body: Vec<u8> = packet.iter().copied().cycle().take(8190).collect();
    let head = with_bearer(
        &format!(
            "POST /debug/rsp HTTP/1.1\r\nHost: {HOST}\r\nContent-Length: {}\r\n\r\n",
            body.len()
        ),
        TOKEN,
    );
    let mut socks = Vec::new();
    for _ in 0..3 {
        let mut s = std::net::TcpStream::connect(g.mcp).unwrap();
        for _ in 0..8 {
            if s.write_all(head.as_bytes())
                .and_then(|_| s.write_all(&body))
                .is_err()
            {
                break;
            }
        }
        socks.push(s);
    }
    let polls = g.rig.counters().polls;
    std::thread::sleep(Duration::from_secs(2));
    let c = g.rig.counters();
    eprintln!(
        "flood: {} polls in 2 s, the longest {} instructions",
        c.polls - polls,
        c.max_poll_insns
    );
    assert!(
        c.polls > polls + 10,
        "the module keeps polling: {polls} then {} ({c:?})",
        c.polls
    );
    assert!(
        c.max_poll_insns < 10_000_000,
        "a poll ran {} instructions",
        c.max_poll_insns
    );
    // Everyone else is served meanwhile.
    let s = call_tool(g.mcp, "status", json!({}));
    assert_ne!(s["isError"], json!(true), "{s}");
    let heap = tool_ok(g.mcp, "status", json!({}));
    assert!(heap.is_object());
    drop(socks);
}

#[test]
fn the_bridge_reads_the_token_the_rig_wrote() {
    let Some(elf) = cell_elf() else {
        return;
    };
    let suite = format!("mcp.token={TOKEN}");
    let Some(g) = boot_guest_with(
        &[],
        move |o| {
            o.env.retain(|e| *e != suite);
            o.cell = Some(elf);
        },
        |_| {},
    ) else {
        return;
    };
    // The module generated the administrator's token; the rig wrote it to its file.
    let token = support::guest::generated_admin_token(&g);
    let file = iris::token::token_path(&iris::image::find_repo_root(), g.mcp.port());
    assert_eq!(std::fs::read_to_string(&file).unwrap().trim(), token);
    let mut bridge = Command::new(env!("CARGO_BIN_EXE_gdb-bridge"))
        .args(["--port", &g.mcp.port().to_string(), "--host-name", HOST])
        .arg("--token-file")
        .arg(&file)
        .env_remove("IRIX7_MCP_TOKEN")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = bridge.stdin.take().unwrap();
        stdin.write_all(b"+$?#3f").unwrap();
        std::thread::sleep(Duration::from_millis(500));
    }
    // Closing its input ends the session (DELETE) and the bridge.
    let out = bridge.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said} {err}");
    assert!(
        said.contains("$S05") || said.contains("$T05"),
        "{said} {err}"
    );
    assert!(
        g.rig
            .wait_for_console("POST /debug/rsp -> detached", Duration::from_secs(5)),
        "the bridge ended the session"
    );
}
