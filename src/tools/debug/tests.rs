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
