//! Resources that show what a read-only tool answers: `irix7://proc` is `proc.list`,
//! `irix7://dev` is `dev.list`, as the JSON of their structured results. Each is the same
//! capability as its tool (`capabilities`), so a resource never shows what a tool hides.
//! They start those tools through their table rows, so they hold the whole [`Ctx`] the rows
//! are instantiated with; of their own they read only the clock.

use super::Ctx;
use super::reach::MachineFacts;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use rpc::json::ValueRef;
use rpc::mcp::{
    Content, ErrorCode, ResourceContents, ResourceDef, Started, ToolCall, ToolDef, ToolError,
};
use serde_json::Value;

/// The views, each shown by [`read`] from the tool [`shown_tool`] names.
pub const RESOURCES: &[ResourceDef<Ctx>] = &[
    ResourceDef {
        uri: "irix7://proc",
        name: "proc",
        title: Some("Processes"),
        description: "The kernel's process table as JSON (what `proc.list` answers).",
        mime_type: Some("application/json"),
        read,
    },
    ResourceDef {
        uri: "irix7://dev",
        name: "dev",
        title: Some("Devices"),
        description: "The Indy devices the module knows, as JSON (what `dev.list` answers).",
        mime_type: Some("application/json"),
        read,
    },
];

/// The tool a view shows.
fn shown_tool(uri: &str) -> Option<&'static str> {
    match uri {
        "irix7://proc" => Some("proc.list"),
        "irix7://dev" => Some("dev.list"),
        _ => None,
    }
}

/// The tool named `name`, from every family's table.
fn tool(name: &str) -> Option<&'static ToolDef<Ctx>> {
    super::FAMILIES
        .iter()
        .flat_map(|f| f.tools)
        .find(|t| t.name == name)
}

fn read(ctx: &mut Ctx, uri: &str) -> Result<Vec<ResourceContents>, ToolError> {
    let def = shown_tool(uri).and_then(tool);
    let Some(def) = def else {
        return Err(ToolError::new(
            ErrorCode::NotFound,
            format!("no resource {uri}"),
        ));
    };
    let call = ToolCall {
        args: ValueRef::empty_object(),
        now_ms: ctx.machine().clock_ms(),
        client_capabilities: &Value::Null,
        input_responses: None,
        request_state: None,
        // The views show lists, never the console, and wait on nothing.
        sees_secrets: false,
        holder: ToolCall::MACHINE,
    };
    let out = match (def.start)(ctx, &call)? {
        Started::Done(out) => out,
        _ => {
            return Err(ToolError::new(
                ErrorCode::Internal,
                format!("{} did not answer at once", def.name),
            ));
        }
    };
    let text = match (out.is_error, out.structured) {
        (false, Some(json)) => json.into_text(),
        _ => {
            let why = out.content.iter().find_map(|c| match c {
                Content::Text(t) => Some(t.clone()),
                Content::Block(b) => b.get("text")?.as_str().map(String::from),
                Content::Stream(..) => None,
            });
            return Err(ToolError::new(
                ErrorCode::Internal,
                why.unwrap_or_else(|| format!("{} failed", def.name)),
            ));
        }
    };
    Ok(alloc::vec![ResourceContents::Text {
        uri: String::from(uri),
        mime_type: Some(String::from("application/json")),
        text,
    }])
}

#[cfg(test)]
mod tests {
    use crate::tools::testing::harness::{request, server_with_files as server};
    use alloc::string::String;
    use alloc::vec::Vec;
    use serde_json::{Value, json};

    fn read(s: &mut rpc::mcp::McpServer<crate::tools::Ctx>, uri: &str) -> Value {
        request(s, "resources/read", json!({"uri": uri}))
    }

    fn uris(s: &mut rpc::mcp::McpServer<crate::tools::Ctx>) -> (Vec<String>, Vec<String>) {
        let list = request(s, "resources/list", json!({}));
        let fixed = list["result"]["resources"].as_array().unwrap().iter();
        let t = request(s, "resources/templates/list", json!({}));
        let templates = t["result"]["resourceTemplates"].as_array().unwrap().iter();
        (
            fixed
                .map(|r| String::from(r["uri"].as_str().unwrap()))
                .collect(),
            templates
                .map(|r| String::from(r["uriTemplate"].as_str().unwrap()))
                .collect(),
        )
    }

    #[test]
    fn proc_and_dev_show_their_tools_results() {
        let mut s = server("full");
        let c = &read(&mut s, "irix7://proc")["result"]["contents"][0];
        assert_eq!(c["mimeType"], "application/json");
        let v: Value = serde_json::from_str(c["text"].as_str().unwrap()).unwrap();
        let tool = crate::tools::testing::harness::call(&mut s, "proc.list", json!({}));
        assert_eq!(v, tool["structuredContent"]);
        let c = &read(&mut s, "irix7://dev")["result"]["contents"][0];
        let v: Value = serde_json::from_str(c["text"].as_str().unwrap()).unwrap();
        assert!(v["devices"].as_array().unwrap().len() > 3, "{v}");
    }

    #[test]
    fn the_policy_hides_the_resources_of_the_tools_it_hides() {
        let mut s = server("full");
        let (fixed, templates) = uris(&mut s);
        assert!(fixed.iter().any(|u| u == "irix7://proc"));
        assert!(fixed.iter().any(|u| u == "irix7://dev"));
        assert_eq!(templates, ["irix7://fs/{+path}"]);
        let mut s = server("status, proc.*");
        let (fixed, templates) = uris(&mut s);
        assert!(fixed.iter().any(|u| u == "irix7://proc"));
        assert!(!fixed.iter().any(|u| u == "irix7://dev"));
        assert!(templates.is_empty());
        let r = read(&mut s, "irix7://fs/etc/motd");
        assert_eq!(r["error"]["code"], -32602, "not offered: not found");
    }
}
