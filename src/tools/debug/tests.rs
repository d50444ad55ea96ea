//! The `debug.*` family on the fake machine, which has no debuggable contexts: every tool is
//! listed, administer, and answers `E_NOSYS` (attach) or `E_INVAL` (no session) rather than
//! anything a session would. The tools' work on a real cell is `tools/iris/tests/debug.rs`.

use crate::tools::testing::harness;
use serde_json::json;

#[test]
fn every_debug_tool_is_listed() {
    let mut s = harness::server();
    let list = harness::request(&mut s, "tools/list", json!({}));
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .expect("a tool list")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .filter(|n| n.starts_with("debug."))
        .collect();
    assert_eq!(names.len(), super::TOOLS.len(), "{names:?}");
}

#[test]
fn without_contexts_attach_is_nosys_and_the_rest_need_a_session() {
    let mut s = harness::server();
    let r = harness::call(&mut s, "debug.attach", json!({}));
    assert_eq!(r["isError"], true, "{r}");
    assert!(
        r["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("E_NOSYS: "),
        "{r}"
    );
    for (name, args) in [
        ("debug.detach", json!({})),
        ("debug.regs", json!({})),
        ("debug.break", json!({"addr": "0x88700000"})),
        ("debug.read", json!({"addr": 0x8870_0000u32, "length": 4})),
        ("debug.continue", json!({"wait_ms": 0})),
    ] {
        let r = harness::call(&mut s, name, args);
        assert_eq!(r["isError"], true, "{name}: {r}");
        assert!(
            r["content"][0]["text"]
                .as_str()
                .unwrap()
                .starts_with("E_INVAL: "),
            "{name}: {r}"
        );
    }
}
