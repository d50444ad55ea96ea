//! What a forwarded tool needs: the machine publishes each tool's privilege in `tools/list`
//! (`_meta: {"irix7/privilege": …}`, the module's [`PRIVILEGE_META`]). A tool that does not say,
//! or says something unknown, needs administer: the gateway fails closed.

use rmcp::model::Tool;
use rpc::mcp::authority::{PRIVILEGE_META, Privilege};

/// What `tool` needs, as its machine published it.
pub fn of_tool(tool: &Tool) -> Privilege {
    tool.meta
        .as_ref()
        .and_then(|m| m.0.get(PRIVILEGE_META))
        .and_then(|v| v.as_str())
        .and_then(Privilege::parse)
        .unwrap_or(Privilege::Administer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::MetaObject;
    use serde_json::{Map, json};

    fn tool(meta: Option<serde_json::Value>) -> Tool {
        let mut t = Tool::new("t", "a tool", Map::new());
        t.meta = meta.and_then(|m| m.as_object().cloned()).map(MetaObject);
        t
    }

    #[test]
    fn read_from_the_listing_failing_closed() {
        let of = |v| of_tool(&tool(v));
        assert_eq!(
            of(Some(json!({PRIVILEGE_META: "observe"}))),
            Privilege::Observe
        );
        assert_eq!(
            of(Some(json!({PRIVILEGE_META: "operate"}))),
            Privilege::Operate
        );
        assert_eq!(of(None), Privilege::Administer, "unsaid: administer");
        assert_eq!(of(Some(json!({"other": 1}))), Privilege::Administer);
        assert_eq!(
            of(Some(json!({PRIVILEGE_META: "Observe"}))),
            Privilege::Administer
        );
        assert_eq!(of(Some(json!({PRIVILEGE_META: 1}))), Privilege::Administer);
    }
}
