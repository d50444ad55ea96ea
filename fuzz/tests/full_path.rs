//! The full-path driver and the heap budget on known inputs: the seeds reach the states they
//! were written for, the token and the budget are enforced, and every kept crash input
//! (`fuzz/regressions/<target>/`) replays clean.
//!
//! The budget counts allocations process-wide, so each test holds [`one_at_a_time`] for its
//! whole run: another test building an input meanwhile would count against the case.

use irix7_fuzz::budget::{self, BUDGET};
use irix7_fuzz::full_path::{self, TOKEN};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

fn one_at_a_time() -> MutexGuard<'static, ()> {
    static ONE: Mutex<()> = Mutex::new(());
    ONE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs one full-path case under the budget, as the fuzz target does.
fn case(data: &[u8]) -> (Vec<u16>, usize) {
    full_path::prepare();
    budget::case(|| full_path::run(data))
}

fn crate_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn seed(name: &str) -> Vec<u8> {
    let p = crate_dir().join("seeds/full_path").join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The files under `dir`, sorted; none when it does not exist.
fn inputs(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.sort();
    files
}

#[test]
fn modern_calls_of_real_tools_answer() {
    let _one = one_at_a_time();
    let (statuses, _) = case(&seed("modern-tools"));
    assert_eq!(
        statuses, [200; 5],
        "tools/list, status, fs.list, fs.read, shell.exec"
    );
}

#[test]
fn a_legacy_session_lives_through_batch_call_cancel_and_delete() {
    let _one = one_at_a_time();
    let (statuses, _) = case(&seed("legacy-session"));
    // initialize, initialized (202), batch, streamed call, cancel (202), DELETE.
    assert_eq!(statuses, [200, 202, 200, 200, 202, 200]);
}

#[test]
fn a_streamed_call_is_cancelled_by_closing_its_connection() {
    let _one = one_at_a_time();
    let (statuses, _) = case(&seed("modern-stream-cancel"));
    // `shell.exec sleep` streaming on connection 0 until its peer closes; a notification; a
    // streamed fs.read on connection 2 after it, answered.
    assert_eq!(statuses.first(), Some(&200), "{statuses:?}");
    assert_eq!(statuses.last(), Some(&200), "{statuses:?}");
    assert_eq!(statuses.len(), 3, "{statuses:?}");
}

#[test]
fn a_wrong_token_is_refused_and_the_other_routes_answer() {
    let _one = one_at_a_time();
    let (statuses, _) = case(&seed("raw-framing"));
    // A chunked body with broken JSON, the status page, the screen without a board, a wrong
    // token from a foreign origin.
    assert_eq!(statuses, [400, 200, 503, 403]);
    let no_token =
        b"\x01POST /mcp\nAuthorization: Basic eA==\nContent-Type: application/json\n\n{}";
    assert_eq!(case(no_token).0, [401]);
    let right = format!("\x01POST /mcp\nAuthorization: Bearer {TOKEN}\n\n{{}}");
    assert_ne!(case(right.as_bytes()).0, [401]);
}

#[test]
fn the_session_placeholder_names_the_session_initialize_opened() {
    let _one = one_at_a_time();
    let data = seed("legacy-2025-11-25");
    let (statuses, _) = case(&data);
    assert_eq!(statuses, [200; 4]);
    // Without the substitution the same requests name no session: 404 (or 400) after init.
    let plain = String::from_utf8(data).unwrap().replace("$SID", "f00d");
    let (statuses, _) = case(plain.as_bytes());
    assert_eq!(statuses[0], 200);
    assert!(statuses[1..].iter().all(|&s| s != 200), "{statuses:?}");
}

#[test]
fn every_seed_stays_within_the_budget() {
    let _one = one_at_a_time();
    for p in inputs(&crate_dir().join("seeds/full_path")) {
        let data = std::fs::read(&p).unwrap();
        let (_, peak) = case(&data);
        assert!(peak <= BUDGET, "{}: {peak} bytes", p.display());
    }
}

#[test]
fn a_case_over_the_budget_fails() {
    let _one = one_at_a_time();
    // The counts are process-wide and the harness's own threads free memory while a case runs
    // (the previous test's captured output, its thread's exit), so the sizes keep a margin
    // rather than sitting one byte from the budget.
    let margin = BUDGET / 8;
    let within = budget::case(|| std::hint::black_box(vec![1u8; BUDGET / 2]).len());
    assert!(within.1 >= BUDGET / 2 - margin, "{} bytes", within.1);
    let over = std::panic::catch_unwind(|| {
        budget::case(|| std::hint::black_box(vec![1u8; BUDGET + margin]).len())
    });
    let message = over.expect_err("a case over the budget must fail");
    let text = message
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    assert!(text.starts_with("heap budget:"), "{text}");
}

/// Kept crash inputs that are fixed: each must replay without a panic and within the budget.
#[test]
fn fixed_regressions_replay_clean() {
    let _one = one_at_a_time();
    for p in inputs(&crate_dir().join("regressions/full_path")) {
        case(&std::fs::read(&p).unwrap());
    }
    for p in inputs(&crate_dir().join("regressions/mcp_dispatch")) {
        let data = std::fs::read(&p).unwrap();
        budget::case(|| rpc::mcp::fuzz::one_input(&data));
    }
}

/// `shell.exec` with the largest `max_output` (1 MiB) over 8 MiB of file: its output streams as
/// it is made, so one such call fits the budget.
#[test]
fn a_shell_call_with_the_largest_output_fits() {
    let _one = one_at_a_time();
    let args = r#"{"command":"cat /big/4mib.bin /big/4mib.bin","max_output":1048576}"#;
    let meta = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"shell.exec","arguments":{args},"_meta":{meta}}}}}"#
    );
    let head = "POST /mcp\nContent-Type: application/json\nAccept: application/json, text/event-stream\nMCP-Protocol-Version: 2026-07-28\nMcp-Method: tools/call\nMcp-Name: shell.exec";
    let (statuses, peak) = case(format!("\x01{head}\n\n{body}").as_bytes());
    assert_eq!(statuses, [200]);
    assert!(peak <= BUDGET, "{peak} bytes");
}

/// A legacy (2025-03-26) session's `initialize`, then `body` in that session.
fn in_legacy_session(body: &str) -> Vec<u8> {
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"fuzz","version":"1"}}}"#;
    let head =
        "POST /mcp\nContent-Type: application/json\nAccept: application/json, text/event-stream";
    format!(
        "\x01{head}\n\n{init}\n--\n{head}\nMcp-Session-Id: $SID\nMCP-Protocol-Version: 2025-03-26\n\n{body}"
    )
    .into_bytes()
}

/// Issue 12's amplification inputs, which held 95 MB (the batch) and 36 MB (the array) on
/// this host before the module's memory plan: each must be answered within the budget.
mod amplification {
    use super::*;

    fn within_budget(name: &str, data: &[u8]) {
        let (statuses, peak) = case(data);
        assert_eq!(
            statuses.len(),
            2,
            "{name}: initialize and one answer: {statuses:?}"
        );
        assert!(peak <= BUDGET, "{name}: {peak} bytes");
    }

    #[test]
    fn a_legacy_batch_of_tools_list() {
        let _one = one_at_a_time();
        let items: Vec<String> = (0..1600)
            .map(|i| format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/list"}}"#))
            .collect();
        within_budget(
            "batch",
            &in_legacy_session(&format!("[{}]", items.join(","))),
        );
    }

    #[test]
    fn a_body_of_a_tiny_array() {
        let _one = one_at_a_time();
        let zeros = vec!["0"; 500_000].join(",");
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"status","arguments":{{"x":[{zeros}]}}}}}}"#
        );
        within_budget("array", &in_legacy_session(&body));
    }
}
