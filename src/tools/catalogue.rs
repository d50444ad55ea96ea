//! The tool catalogue, rendered from the registry the module really builds: the generated part
//! of `docs/tools.md` (every tool in registration order with its schemas, annotations and
//! errors, the reserved names, the resources) and `docs/tools.json` (the `tools` array exactly
//! as `tools/list` returns it, which the rig test compares with the booted guest's answer).
//! Host tests only: none of this is in the guest image.
//!
//! `cargo xtask docs` rewrites both files (it runs the check below with `IRIX7_BLESS_DOCS=1`).

use super::Ctx;
use super::testing::declared::RESERVED_CODE;
use super::testing::harness;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::fmt::Write;
use rpc::mcp::{ErrorCode, McpServer};
use serde_json::{Value, json};

/// Opening and closing lines of the generated part of `docs/tools.md`.
pub const BEGIN: &str =
    "<!-- catalogue: generated from the tool registry by `cargo xtask docs`; do not edit -->";
pub const END: &str = "<!-- end of catalogue -->";

/// Every page of a list method, concatenated.
fn list_all(s: &mut McpServer<Ctx>, method: &str, key: &str) -> Vec<Value> {
    let mut items = Vec::new();
    let mut params = json!({});
    for _ in 0..100 {
        let r = harness::request(s, method, params);
        let result = &r["result"];
        items.extend(result[key].as_array().cloned().unwrap_or_default());
        match result.get("nextCursor").and_then(Value::as_str) {
            Some(c) => params = json!({ "cursor": c }),
            None => return items,
        }
    }
    panic!("{method} did not end within 100 pages");
}

/// The `tools` array `tools/list` returns, as `docs/tools.json` holds it.
pub fn listing_json(s: &mut McpServer<Ctx>) -> String {
    let tools = list_all(s, "tools/list", "tools");
    let mut text = serde_json::to_string_pretty(&Value::Array(tools)).unwrap_or_default();
    text.push('\n');
    text
}

fn codes(list: &[ErrorCode]) -> String {
    let v: Vec<String> = list.iter().map(|c| format!("`E_{c}`")).collect();
    v.join(", ")
}

/// One word per hint that is set, as the index shows them.
fn hint_words(ann: &Value) -> String {
    let mut w = Vec::new();
    for (key, word) in [
        ("readOnlyHint", "read-only"),
        ("destructiveHint", "destructive"),
        ("idempotentHint", "idempotent"),
        ("openWorldHint", "open-world"),
    ] {
        if ann[key] == true {
            w.push(word);
        }
    }
    if w.is_empty() {
        w.push("write");
    }
    w.join(", ")
}

/// A table cell: `|` and line breaks would end the cell or the row.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// A property's type in a few words: enum values, `array of …`, an object's keys, bounds.
fn type_text(p: &Value) -> String {
    if let Some(values) = p.get("enum").and_then(Value::as_array) {
        let v: Vec<String> = values.iter().map(|v| format!("`{v}`")).collect();
        return v.join(" | ");
    }
    let mut t = match p.get("type").and_then(Value::as_str) {
        Some("array") => format!("array of {}", type_text(&p["items"])),
        Some("object") => match p.get("properties").and_then(Value::as_object) {
            Some(props) if !props.is_empty() => {
                let keys: Vec<&str> = props.keys().map(String::as_str).collect();
                format!("object {{{}}}", keys.join(", "))
            }
            _ => String::from("object"),
        },
        Some(t) => String::from(t),
        None => match p.get("type").and_then(Value::as_array) {
            Some(types) => {
                let t: Vec<&str> = types.iter().filter_map(Value::as_str).collect();
                t.join(" or ")
            }
            None => String::from("any"),
        },
    };
    let bound = |k: &str| p.get(k).map(Value::to_string);
    match (bound("minimum"), bound("maximum")) {
        (Some(lo), Some(hi)) => {
            let _ = write!(t, " {lo} … {hi}");
        }
        (Some(lo), None) => {
            let _ = write!(t, " ≥ {lo}");
        }
        (None, Some(hi)) => {
            let _ = write!(t, " ≤ {hi}");
        }
        (None, None) => {}
    }
    if let Some(n) = bound("maxLength") {
        let _ = write!(t, ", at most {n} characters");
    }
    t
}

/// A schema as a table of its top-level properties (`docs/tools.json` has the exact schema);
/// a schema without properties is shown as compact JSON.
fn schema_table(out: &mut String, heading: &str, schema: &Value) {
    let props = schema.get("properties").and_then(Value::as_object);
    let Some(props) = props.filter(|p| !p.is_empty()) else {
        let _ = match schema.get("type").and_then(Value::as_str) {
            Some("object") if schema.as_object().is_some_and(|o| o.len() <= 3) => {
                writeln!(out, "{heading}: none\n")
            }
            _ => writeln!(out, "{heading}: `{schema}`\n"),
        };
        return;
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "{heading}:\n\n| property | type | required | default | description |\n|---|---|---|---|---|"
    );
    for (name, p) in props {
        let default = p
            .get("default")
            .map(|d| format!("`{d}`"))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "| `{name}` | {} | {} | {} | {} |",
            cell(&type_text(p)),
            if required.contains(&name.as_str()) {
                "yes"
            } else {
                ""
            },
            cell(&default),
            cell(p.get("description").and_then(Value::as_str).unwrap_or("")),
        );
    }
    out.push('\n');
}

/// The generated part of `docs/tools.md`, markers included.
pub fn render(s: &mut McpServer<Ctx>) -> String {
    let tools = list_all(s, "tools/list", "tools");
    let mut o = String::new();
    let _ = writeln!(o, "{BEGIN}\n\n## Catalogue\n");
    o.push_str(
        "Every tool in the order `tools/list` gives them, as the module registers them. \
         `docs/tools.json` is the same listing as JSON. Errors are `isError` results whose \
         text is `E_<CODE>: message`; each tool lists the codes its own handler answers, and \
         any call can also get:\n\n",
    );
    for code in ErrorCode::GENERIC {
        let _ = writeln!(o, "- `E_{code}`: {}", code.meaning());
    }
    o.push_str(
        "\nA client that names an unknown tool gets JSON-RPC error -32602; one that lacks a \
         capability a tool requires gets -32021. Cancelling a call is JSON-RPC -32800, not an \
         `E_` code.\n\n| tool | title | privilege | hints |\n|---|---|---|---|\n",
    );
    for t in &tools {
        let name = t["name"].as_str().unwrap_or("");
        let title = t["title"].as_str().unwrap_or("");
        let _ = writeln!(
            o,
            "| `{name}` | {title} | {} | {} |",
            t["_meta"]["irix7/privilege"].as_str().unwrap_or(""),
            hint_words(&t["annotations"])
        );
    }
    o.push('\n');
    for t in &tools {
        let name = t["name"].as_str().unwrap_or("");
        let def = s.tools().defs().find(|d| d.name == name).copied();
        let _ = write!(o, "### `{name}`");
        if let Some(title) = t["title"].as_str() {
            let _ = write!(o, " — {title}");
        }
        let _ = writeln!(o, "\n\n{}\n", t["description"].as_str().unwrap_or(""));
        let ann = &t["annotations"];
        let _ = writeln!(
            o,
            "- Hints: readOnly {}, destructive {}, idempotent {}, openWorld {}",
            ann["readOnlyHint"],
            ann["destructiveHint"],
            ann["idempotentHint"],
            ann["openWorldHint"]
        );
        let errors = def.map(|d| d.errors).unwrap_or(&[]);
        let errors = match errors {
            [] => String::from("none of its own"),
            list => codes(list),
        };
        let _ = writeln!(
            o,
            "- Capability: `{}` ({})",
            t["_meta"]["irix7/capability"].as_str().unwrap_or(name),
            t["_meta"]["irix7/privilege"].as_str().unwrap_or("")
        );
        let _ = writeln!(o, "- Errors: {errors}");
        if let Some(req) = def.map(|d| d.requires).filter(|r| !r.is_empty()) {
            let _ = writeln!(o, "- Needs client capabilities: {}", req.join(", "));
        }
        o.push('\n');
        schema_table(&mut o, "Input", &t["inputSchema"]);
        if let Some(out) = t.get("outputSchema") {
            schema_table(&mut o, "Output (`structuredContent`)", out);
        }
    }
    let reserved = s.tools().reserved();
    if !reserved.is_empty() {
        o.push_str("## Reserved names\n\n");
    }
    for r in reserved {
        let names: Vec<String> = r.names.iter().map(|n| format!("`{n}`")).collect();
        let _ = writeln!(
            o,
            "Every name starting with `{}` is {}. Planned: {}. A call to any of them (planned \
             or not) answers `isError` with `E_{RESERVED_CODE}: <name> is {}`; none is in \
             `tools/list`, so agents are not offered tools that cannot work yet.\n",
            r.prefix,
            r.why,
            names.join(", "),
            r.why
        );
    }
    o.push_str("## Resources\n\n| URI | name | type | description |\n|---|---|---|---|\n");
    let resources = list_all(s, "resources/list", "resources");
    let templates = list_all(s, "resources/templates/list", "resourceTemplates");
    for r in resources.iter().chain(&templates) {
        let uri = r["uri"]
            .as_str()
            .or(r["uriTemplate"].as_str())
            .unwrap_or("");
        let _ = writeln!(
            o,
            "| `{uri}` | {} | {} | {} |",
            r["name"].as_str().unwrap_or(""),
            r["mimeType"].as_str().unwrap_or(""),
            r["description"].as_str().unwrap_or("")
        );
    }
    capability_table(&mut o);
    let _ = writeln!(o, "\n{END}");
    o
}

/// The capability table (`capabilities.rs`): every door into the machine and what it needs.
fn capability_table(o: &mut String) {
    o.push_str(
        "\n## Capabilities\n\nEvery door into the machine exercises one capability, and each \
         capability has one privilege (observe < operate < administer). `mcp.policy`, a \
         token's role (`mcp.tokens`), `mcp.confirm` (administer asks) and a gateway's \
         `Irix7-Policy` act on these names, so a capability refused one way is refused every \
         way (docs/security.md).\n\n| capability | privilege | doors |\n|---|---|---|\n",
    );
    for c in super::capabilities::TABLE.rows {
        let doors: Vec<String> = c
            .doors
            .iter()
            .map(|d| format!("{} `{}`", d.kind(), d.name()))
            .collect();
        let _ = writeln!(
            o,
            "| `{}` | {} | {} |",
            c.name,
            c.privilege,
            doors.join(", ")
        );
    }
}

/// `doc` with its generated part replaced by `generated`; `None` without both markers.
pub fn splice(doc: &str, generated: &str) -> Option<String> {
    let start = doc.find(BEGIN)?;
    let end = doc[start..].find(END)? + start + END.len();
    let end = end + usize::from(doc[end..].starts_with('\n'));
    Some(format!("{}{generated}{}", &doc[..start], &doc[end..]))
}

#[cfg(test)]
mod tests {
    use super::*;
    extern crate std;
    use std::path::PathBuf;

    fn docs_dir() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs")
    }

    /// Fails when the checked-in catalogue differs from the registry; with
    /// `IRIX7_BLESS_DOCS=1` (what `cargo xtask docs` sets) rewrites it instead.
    #[test]
    fn docs_match_the_registry() {
        let mut s = harness::server();
        let md_path = docs_dir().join("tools.md");
        let json_path = docs_dir().join("tools.json");
        let doc = std::fs::read_to_string(&md_path).expect("docs/tools.md is readable");
        let want_md = splice(&doc, &render(&mut s)).expect("docs/tools.md has the markers");
        let want_json = listing_json(&mut s);
        if std::env::var_os("IRIX7_BLESS_DOCS").is_some() {
            std::fs::write(&md_path, &want_md).expect("docs/tools.md is writable");
            std::fs::write(&json_path, &want_json).expect("docs/tools.json is writable");
            return;
        }
        let json = std::fs::read_to_string(&json_path).unwrap_or_default();
        assert!(
            doc == want_md && json == want_json,
            "docs/tools.md or docs/tools.json differs from the tool registry: \
             run `cargo xtask docs` and commit the result"
        );
    }

    #[test]
    fn the_catalogue_shows_every_tool_with_its_errors() {
        let mut s = harness::server();
        let md = render(&mut s);
        let names: Vec<&str> = s.tools().defs().map(|d| d.name).collect();
        assert!(names.len() >= 18, "{names:?}");
        let mut at = 0;
        for d in s.tools().defs() {
            let head = format!("### `{}`", d.name);
            let pos = md[at..].find(&head).map(|p| p + at);
            let pos = pos.unwrap_or_else(|| panic!("{} missing or out of order", d.name));
            at = pos + head.len();
            let section = &md[pos..];
            let section = &section[..section[3..].find("\n### ").map_or(section.len(), |e| e + 3)];
            for code in d.errors {
                assert!(
                    section.contains(&format!("`E_{code}`")),
                    "{}: {code}",
                    d.name
                );
            }
            assert!(section.contains("Input"), "{}", d.name);
            assert_eq!(
                section.contains("Output (`structuredContent`)"),
                d.output_schema.is_some()
            );
        }
        assert!(md.contains("### `debug.attach`") && md.contains("### `debug.step`"));
        assert!(md.contains("`irix7://serial`") && md.contains("`irix7://status`"));
    }

    #[test]
    fn property_types_read_as_words() {
        let cases = [
            (
                json!({"type": "integer", "minimum": 1, "maximum": 8}),
                "integer 1 … 8",
            ),
            (json!({"type": ["integer", "string"]}), "integer or string"),
            (json!({"enum": [1, 2, 4]}), "`1` | `2` | `4`"),
            (
                json!({"type": "array", "items": {"type": "object",
                    "properties": {"pid": {}, "name": {}}}}),
                "array of object {name, pid}",
            ),
            (
                json!({"type": "string", "maxLength": 9}),
                "string, at most 9 characters",
            ),
            (json!({}), "any"),
        ];
        for (schema, want) in cases {
            assert_eq!(type_text(&schema), want, "{schema}");
        }
        assert_eq!(cell("a|b\nc"), "a\\|b c");
    }

    #[test]
    fn splice_replaces_only_the_generated_part() {
        let doc = format!("# T\nprose\n{BEGIN}\nold\n{END}\nmore prose\n");
        let new = format!("{BEGIN}\nnew\n{END}\n");
        assert_eq!(
            splice(&doc, &new).as_deref(),
            Some(format!("# T\nprose\n{BEGIN}\nnew\n{END}\nmore prose\n").as_str())
        );
        assert_eq!(splice("no markers", &new), None);
    }
}
