//! The `debug.*` names, kept for the GDB stub milestone: a call to any of them (or to any other
//! `debug.` name) answers `E_NOSYS`, and none is listed in `tools/list` so agents are not led
//! to call tools that cannot work yet. `docs/tools.md` lists the planned set.

use rpc::mcp::Reserved;

/// The planned debugger tools: attach to and detach from the kernel stub, set and clear
/// breakpoints, resume, single-step, and read registers and memory of the stopped CPU.
pub const RESERVED: Reserved = Reserved {
    prefix: "debug.",
    names: &[
        "debug.attach",
        "debug.detach",
        "debug.break",
        "debug.clear",
        "debug.continue",
        "debug.step",
        "debug.regs",
        "debug.read",
        "debug.write",
    ],
    why: "reserved for the GDB stub milestone",
};

#[cfg(test)]
mod tests {
    use super::RESERVED;
    use crate::tools::testing::harness;
    use serde_json::json;

    #[test]
    fn every_debug_name_answers_nosys_and_none_is_listed() {
        let mut s = harness::server();
        for name in RESERVED.names.iter().copied().chain(["debug.unplanned"]) {
            let r = harness::call(&mut s, name, json!({}));
            assert_eq!(r["isError"], true, "{name}: {r}");
            assert_eq!(
                r["content"][0]["text"],
                format!("E_NOSYS: {name} is reserved for the GDB stub milestone")
            );
        }
        let list = harness::request(&mut s, "tools/list", json!({}));
        let tools = list["result"]["tools"].as_array().expect("a tool list");
        assert!(!tools.is_empty());
        assert!(
            tools
                .iter()
                .all(|t| !t["name"].as_str().unwrap_or("").starts_with("debug.")),
            "{list}"
        );
    }
}
