//! The check every host test's tool call goes through: an error result carries a code its
//! tool declares (`ToolDef.errors`), one the server adds to any call, or the reserved names'
//! code, so `docs/tools.md`'s lists of errors are the whole truth.

use crate::tools::Ctx;
use rpc::mcp::{ErrorCode, McpServer};
use serde_json::Value;

/// The code a reserved name answers.
pub const RESERVED_CODE: ErrorCode = ErrorCode::NoSys;

/// The `E_<CODE>` of an `isError` result: the last text block that starts with a known code (a
/// streamed result's error follows its data blocks).
pub fn error_code(result: &Value) -> Option<ErrorCode> {
    let blocks = result.get("content")?.as_array()?;
    blocks.iter().rev().find_map(|b| {
        let rest = b.get("text")?.as_str()?.strip_prefix("E_")?;
        let (code, _) = rest.split_once(": ")?;
        ErrorCode::parse(code)
    })
}

/// Fails the test when `result` is an error whose code `tool` does not declare, or the error
/// the server gives a structured result that does not match the tool's output schema: every
/// host test that calls a tool through the harness checks the catalogue this way, and the
/// schema check (made in debug builds only, `rpc`'s `CHECK_RESULTS`) proves every result these
/// tests provoke.
pub fn assert_declared(s: &McpServer<Ctx>, tool: &str, result: &Value) {
    if result.get("isError") != Some(&Value::Bool(true)) {
        return;
    }
    let text = result["content"][0]["text"].as_str().unwrap_or("");
    assert!(
        !text.contains("does not match outputSchema"),
        "{tool}: its result does not match its output schema: {text}"
    );
    let Some(code) = error_code(result) else {
        panic!("{tool}: an isError result without an E_<CODE> text: {result}");
    };
    if ErrorCode::GENERIC.contains(&code) {
        return;
    }
    if s.tools().reserved_for(tool).is_some() && code == RESERVED_CODE {
        return;
    }
    let declared = s
        .tools()
        .defs()
        .find(|d| d.name == tool)
        .map(|d| d.errors)
        .unwrap_or(&[]);
    assert!(
        declared.contains(&code),
        "{tool} answered E_{code}, which its ToolDef.errors {declared:?} does not list"
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::testing::harness;
    use serde_json::json;
    extern crate std;

    /// One failing call per tool family the fake machine can provoke; each answer's code must
    /// be declared (the harness checks, as it does for every other test's calls).
    #[test]
    fn provoked_errors_are_declared() {
        let mut s = harness::server();
        // 3000 characters (within the schema's maxLength) but 6000 bytes (over the handler's).
        let long = "é".repeat(3000);
        let cases = [
            ("serial.read", json!({"offset": 1_000_000}), "RANGE"),
            ("console.write", json!({ "text": long }), "INVAL"),
            ("serial.write", json!({ "text": long }), "INVAL"),
            ("shell.exec", json!({"command": "nosuch"}), "NOT_FOUND"),
            ("shell.exec", json!({"command": "echo 'open"}), "INVAL"),
            ("fs.stat", json!({"path": "/etc"}), "NODEV"),
            ("fs.read", json!({"path": "/etc/motd"}), "NODEV"),
            ("fs.write", json!({"path": "/x", "content": "y"}), "NODEV"),
            ("fs.list", json!({"path": "/"}), "NODEV"),
            ("fs.remove", json!({"path": "/x"}), "NODEV"),
            ("fs.mkdir", json!({"path": "/x"}), "NODEV"),
            ("fs.readlink", json!({"path": "/x"}), "NODEV"),
            ("block.read", json!({"target": 3, "lba": 0}), "NODEV"),
            ("system.reset", json!({}), "BUSY"),
            ("debug.attach", json!({}), "NOSYS"),
        ];
        // The first reset is scheduled; the second (in the table) is refused.
        let first = harness::call(&mut s, "system.reset", json!({}));
        assert_ne!(first["isError"], true, "{first}");
        for (tool, args, want) in cases {
            let r = harness::call(&mut s, tool, args);
            assert_eq!(
                error_code(&r).map(ErrorCode::as_str),
                Some(want),
                "{tool}: {r}"
            );
        }
    }

    #[test]
    fn an_undeclared_code_fails_the_check() {
        let s = harness::server();
        let r = json!({"isError": true, "content": [{"type": "text", "text": "E_EXIST: x"}]});
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            assert_declared(&s, "echo", &r)
        }));
        assert!(caught.is_err());
        let generic = json!({"isError": true,
            "content": [{"type": "text", "text": "E_INVAL: $.text: expected string"}]});
        assert_declared(&s, "echo", &generic);
        let data_then_error = json!({"isError": true, "content": [
            {"type": "text", "text": "E_NOTE: data that looks like a code"},
            {"type": "text", "text": "E_INVAL: the real error"}]});
        assert_eq!(error_code(&data_then_error), Some(ErrorCode::Inval));
    }
}
