//! System tools: `status` and `echo`, and the `irix7://status` resource.

use super::Ctx;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use rpc::mcp::{
    Annotations, ResourceContents, ResourceDef, Started, ToolCall, ToolDef, ToolError, ToolOutput,
};
use serde_json::Value;

/// Longest text `echo` accepts (the schema says so too).
const ECHO_MAX: usize = 65536;

pub const TOOLS: &[ToolDef<Ctx>] = &[
    ToolDef {
        name: "status",
        title: Some("Machine status"),
        description: "The Indy's status: module and OS version, uptime, date, IP and MAC \
                      address, RAM, module heap, open connections. Start here.",
        input_schema: r#"{"type":"object","properties":{},"additionalProperties":false}"#,
        output_schema: Some(STATUS_SCHEMA),
        annotations: Annotations::READ_ONLY,
        requires: &[],
        start: status,
    },
    ToolDef {
        name: "echo",
        title: Some("Echo"),
        description: "Returns its `text` argument unchanged: a round-trip check of the whole \
                      path (network, HTTP, MCP) to the machine.",
        input_schema: r#"{"type":"object","properties":{"text":{"type":"string","maxLength":65536,
            "description":"Text to send back"}},"required":["text"],"additionalProperties":false}"#,
        output_schema: Some(
            r#"{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}"#,
        ),
        annotations: Annotations::READ_ONLY,
        requires: &[],
        start: echo,
    },
];

const STATUS_SCHEMA: &str = r#"{"type":"object","properties":{
  "module":{"type":"string"},"module_version":{"type":"string"},"abi":{"type":"integer"},
  "os_version":{"type":"string"},"uptime_ms":{"type":"integer"},"date":{"type":"string"},
  "unix_time":{"type":"integer"},"ram_bytes":{"type":"integer"},"ip":{"type":"string"},
  "mac":{"type":"string"},"port":{"type":"integer"},"open_connections":{"type":"integer"},
  "requests":{"type":"integer"},
  "heap":{"type":"object","properties":{"used":{"type":"integer"},"peak":{"type":"integer"},
    "size":{"type":"integer"}},"required":["used","peak","size"]}},
  "required":["module","module_version","abi","os_version","uptime_ms","date","ip","mac",
    "ram_bytes","heap"]}"#;

pub const RESOURCES: &[ResourceDef<Ctx>] = &[ResourceDef {
    uri: "irix7://status",
    name: "status",
    title: Some("Machine status"),
    description: "The machine's status as plain text (what the `status` tool reports).",
    mime_type: Some("text/plain"),
    read: read_status,
}];

fn status(ctx: &mut Ctx, _call: &ToolCall<'_>) -> Result<Started<Ctx>, ToolError> {
    Ok(Started::Done(ToolOutput::structured(
        ctx.status().to_json(),
    )))
}

fn echo(_ctx: &mut Ctx, call: &ToolCall<'_>) -> Result<Started<Ctx>, ToolError> {
    // The schema has already required a string of at most ECHO_MAX characters.
    let text = match call.args.get("text") {
        Some(Value::String(s)) if s.len() <= ECHO_MAX * 4 => s.clone(),
        _ => return Err(ToolError::new("INVAL", "`text` must be a string")),
    };
    let mut out = ToolOutput::structured(serde_json::json!({ "text": text }));
    out.content = vec![rpc::mcp::Content::text(text)];
    Ok(Started::Done(out))
}

fn read_status(ctx: &mut Ctx, uri: &str) -> Result<Vec<ResourceContents>, ToolError> {
    Ok(vec![ResourceContents::Text {
        uri: String::from(uri),
        mime_type: Some(String::from("text/plain")),
        text: ctx.status().to_text(),
    }])
}

#[cfg(test)]
mod tests {
    use crate::tools::harness::{call, request, server};
    use serde_json::json;

    #[test]
    fn status_reports_the_machine() {
        let mut s = server();
        let r = call(&mut s, "status", json!({}));
        let st = &r["structuredContent"];
        assert_eq!(st["module"], "irix7-mcp");
        assert_eq!(st["abi"], 10);
        assert_eq!(st["os_version"], "7.0.0");
        assert_eq!(st["uptime_ms"], 12_345);
        assert_eq!(st["ip"], "172.31.77.2");
        assert_eq!(st["date"], "2026-11-30 00:53:20 UTC");
        assert_eq!(st["heap"]["peak"], 2000);
        // The same JSON as text, for clients that read only text.
        let text = r["content"][0]["text"].as_str().unwrap();
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(text).unwrap(),
            *st
        );
    }

    #[test]
    fn echo_returns_its_text() {
        let mut s = server();
        let r = call(&mut s, "echo", json!({"text": "hello, Indy ✓"}));
        assert_eq!(r["content"][0]["text"], "hello, Indy ✓");
        assert_eq!(r["structuredContent"]["text"], "hello, Indy ✓");
        assert_ne!(r["isError"], true);
    }

    #[test]
    fn echo_without_text_is_a_tool_error() {
        // Schema violations are tool errors, so the model sees them and can correct the call.
        let mut s = server();
        let r = call(&mut s, "echo", json!({}));
        assert_eq!(r["isError"], true);
        let text = r["content"][0]["text"].as_str().unwrap();
        assert!(
            text.starts_with("E_INVALID_ARGUMENT: ") && text.contains("text"),
            "{text}"
        );
    }

    #[test]
    fn status_resource_is_text() {
        let mut s = server();
        let r = request(
            &mut s,
            "resources/read",
            Some("irix7://status"),
            json!({"uri": "irix7://status"}),
        );
        let c = &r["result"]["contents"][0];
        assert_eq!(c["mimeType"], "text/plain");
        assert!(
            c["text"]
                .as_str()
                .unwrap()
                .contains("ip          172.31.77.2")
        );
    }

    #[test]
    fn tools_are_listed_in_order() {
        let mut s = server();
        let r = request(&mut s, "tools/list", None, json!({}));
        let names: std::vec::Vec<&str> = r["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["status", "echo"]);
    }
}
