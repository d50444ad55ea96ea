//! The three privileges a machine's capabilities need (observe < operate < administer): the
//! role the lab gives the gateway's agent token, and what each forwarded tool needs, which the
//! machine publishes per tool in `tools/list` (`_meta: {"irix7/privilege": …}`). A tool that
//! does not say needs administer: the gateway fails closed.

use rmcp::model::Tool;
use serde::Deserialize;

/// The key a machine's tool listing carries the tool's privilege under.
pub const META_KEY: &str = "irix7/privilege";

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Privilege {
    /// Read state: status, console, screen, files, lists.
    Observe,
    /// Change state that a reset undoes: writes, input, harmless builtins.
    Operate,
    /// Reset, power, raw memory and registers, removal.
    Administer,
}

impl Privilege {
    /// The keyword, as the lab file, the machine's `_meta` and the narrowing header spell it.
    pub fn name(self) -> &'static str {
        match self {
            Privilege::Observe => "observe",
            Privilege::Operate => "operate",
            Privilege::Administer => "administer",
        }
    }

    fn parse(s: &str) -> Option<Privilege> {
        [
            Privilege::Observe,
            Privilege::Operate,
            Privilege::Administer,
        ]
        .into_iter()
        .find(|p| p.name() == s)
    }

    /// What `tool` needs, as its machine published it; administer when it did not say or said
    /// something unknown.
    pub fn of_tool(tool: &Tool) -> Privilege {
        tool.meta
            .as_ref()
            .and_then(|m| m.0.get(META_KEY))
            .and_then(|v| v.as_str())
            .and_then(Privilege::parse)
            .unwrap_or(Privilege::Administer)
    }
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
    fn ordered_and_read_from_the_listing_failing_closed() {
        assert!(Privilege::Observe < Privilege::Operate);
        assert!(Privilege::Operate < Privilege::Administer);
        let of = |v| Privilege::of_tool(&tool(v));
        assert_eq!(of(Some(json!({META_KEY: "observe"}))), Privilege::Observe);
        assert_eq!(of(Some(json!({META_KEY: "operate"}))), Privilege::Operate);
        assert_eq!(of(None), Privilege::Administer, "unsaid: administer");
        assert_eq!(of(Some(json!({"other": 1}))), Privilege::Administer);
        assert_eq!(
            of(Some(json!({META_KEY: "Observe"}))),
            Privilege::Administer
        );
        assert_eq!(of(Some(json!({META_KEY: 1}))), Privilege::Administer);
    }
}
