use super::*;

fn tree(files: &[(&str, &str)]) -> Vec<Finding> {
    let files: Vec<Source> = files
        .iter()
        .map(|(p, t)| Source {
            path: p.to_string(),
            text: t.to_string(),
        })
        .collect();
    analyse(&files).0
}

/// A small tree in the target layout that follows every rule.
const CLEAN: &[(&str, &str)] = &[
    (
        "src/lib.rs",
        "pub mod board;\npub mod hil;\npub mod tools;\n",
    ),
    (
        "src/board/mod.rs",
        "use crate::{net::Server, tools::Ctx};\npub unsafe fn mmio() {}\n",
    ),
    ("src/hil/mod.rs", "pub trait Bus {}\n"),
    (
        "src/drivers/seeq.rs",
        "use crate::hil::Bus;\nuse smoltcp::phy::Device;\n",
    ),
    (
        "src/services/screen.rs",
        "use crate::hil::{Framebuffer, self};\nuse super::erofs;\n\
         // crate::tools is only mentioned here\n\
         const S: &str = \"crate::tools::Ctx and rpc::Tool\";\n",
    ),
    (
        "src/tools/fs.rs",
        "use crate::services::context::Services;\nuse rpc::mcp::Tool;\nfn f(x: &'static str) -> char { 'a' }\n",
    ),
    (
        "src/net/server.rs",
        "use crate::tools::registry;\nfn g() { let _ = crate::services::x::y(); }\n",
    ),
    ("rpc/src/lib.rs", "#![forbid(unsafe_code)]\n"),
    (
        "tools/xtask/src/x.rs",
        concat!("const A: &str = \"#", "[path = \\\"x\\\"]\";\n"),
    ),
];

#[test]
fn a_clean_tree_passes() {
    assert_eq!(tree(CLEAN), vec![]);
}

fn with(extra: (&'static str, &'static str)) -> Vec<Finding> {
    let mut files = CLEAN.to_vec();
    files.push(extra);
    tree(&files)
}

#[test]
fn services_may_not_import_tools() {
    let f = with(("src/services/fs.rs", "//! x\n\nuse crate::tools::Ctx;\n"));
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!((f[0].path.as_str(), f[0].line), ("src/services/fs.rs", 3));
    assert_eq!(f[0].what, "crate::tools");
    assert_eq!(f[0].rule, "services may import hil");
}

#[test]
fn drivers_may_not_import_services_even_in_a_group_or_inline() {
    let f = with((
        "src/drivers/newport.rs",
        "use crate::{hil::Bus, services::screen};\nfn f() { crate::tools::get(); }\n",
    ));
    let got: Vec<_> = f.iter().map(|f| (f.line, f.what.as_str())).collect();
    assert_eq!(got, [(1, "crate::services"), (2, "crate::tools")]);
}

#[test]
fn hil_imports_nothing_in_the_crate() {
    let f = with(("src/hil/net.rs", "use crate::drivers::seeq;\n"));
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].rule, "hil may import nothing else in the crate");
}

#[test]
fn rpc_stays_above_services() {
    let f = with((
        "src/services/shell.rs",
        "use rpc::mcp::Tool;\nfn f() -> ::rpc::Json { todo!() }\n",
    ));
    let got: Vec<_> = f.iter().map(|f| (f.line, f.what.as_str())).collect();
    assert_eq!(got, [(1, "rpc"), (2, "rpc")]);
}

#[test]
fn a_path_attribute_fails_anywhere() {
    let f = with((
        "tools/iris/src/lib.rs",
        concat!("#", "[path = \"../../x.rs\"]\nmod x;\n"),
    ));
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].line, 1);
    assert_eq!(f[0].what, concat!("#", "[path = \"../../x.rs\"]"));
}

#[test]
fn unsafe_outside_the_board_fails_even_in_a_comment() {
    let f = with((
        "src/tools/mem.rs",
        "// reads are unsafe\nfn f() { unsafe { g() } }\n",
    ));
    let got: Vec<_> = f.iter().map(|f| f.line).collect();
    assert_eq!(got, [1, 2]);
    assert_eq!(f[0].rule, "`unsafe` belongs in src/board/ only");
}

#[test]
fn a_safe_crate_without_forbid_fails() {
    let f = with(("indy/src/lib.rs", "pub fn f() {}\n"));
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].rule, "this crate must forbid `unsafe` at its root");
    let ok = with((
        "indy/src/lib.rs",
        "#![forbid(unsafe_code)]\npub type F = unsafe extern \"C\" fn();\n",
    ));
    assert!(ok.is_empty(), "{ok:?}");
}

#[test]
fn super_chains_that_climb_to_the_crate_root_are_checked() {
    let f = with((
        "src/services/fs/overlay.rs",
        "use super::erofs::Erofs;\nuse super::super::super::tools::Ctx;\n",
    ));
    let got: Vec<_> = f.iter().map(|f| (f.line, f.what.as_str())).collect();
    assert_eq!(got, [(2, "crate::tools")]);
    let f = with((
        "src/drivers/newport/mod.rs",
        "use super::super::{hil::Bus, services::screen};\n",
    ));
    let got: Vec<_> = f.iter().map(|f| f.what.as_str()).collect();
    assert_eq!(got, ["crate::services"]);
}

#[test]
fn super_inside_an_inline_module_counts_that_module() {
    let code = "mod tests {\n    use super::super::proc;\n    use super::*;\n}\n";
    assert!(with(("src/services/power.rs", code)).is_empty());
    let out = "mod tests {\n    use super::super::super::tools::Ctx;\n}\n";
    let f = with(("src/services/power.rs", out));
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!((f[0].line, f[0].what.as_str()), (2, "crate::tools"));
}

#[test]
fn a_file_outside_the_layers_is_named() {
    let f = with(("src/fs/erofs.rs", "use crate::hil::Bus;\n"));
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].what, "file outside the layers");
}

#[test]
fn a_non_layer_target_is_named() {
    let f = with(("src/tools/x.rs", "use crate::fs::Overlay;\n"));
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].what, "crate::fs");
}

#[test]
fn comments_strings_and_lifetimes_are_stripped_but_lines_kept() {
    let text = "a /* crate::x\n */ b \"crate::y\" 'c' '\\'' r#\"q\"# &'a str // crate::z\nd";
    let s = strip_comments_and_strings(text);
    assert!(!s.contains("crate"), "{s}");
    assert!(s.contains("&'a str"), "{s}");
    assert_eq!(s.lines().count(), 3);
    assert_eq!(s.len(), text.len());
}

#[test]
fn an_import_circle_on_disk_fails_the_check() {
    let root = std::env::temp_dir().join(format!("xtask-layers-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let write = |path: &str, text: &str| {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write(
        "rpc/src/lib.rs",
        "#![forbid(unsafe_code)]\nmod a;\nmod b;\n",
    );
    write("rpc/src/a.rs", "pub struct A;\n");
    write("rpc/src/b.rs", "use crate::a::A;\npub struct B;\n");
    let found = |root: &Path| {
        let mut files = Vec::new();
        collect(root, root, &mut files).unwrap();
        analyse(&files).0
    };
    assert_eq!(found(&root), vec![]);
    // The deliberate circle: a now needs b as well.
    write("rpc/src/a.rs", "pub struct A;\nfn f(_: super::b::B) {}\n");
    let f = found(&root);
    let _ = std::fs::remove_dir_all(&root);
    let got: Vec<_> = f.iter().map(|f| (f.path.as_str(), f.line)).collect();
    assert_eq!(got, [("rpc/src/a.rs", 2), ("rpc/src/b.rs", 1)]);
    assert_eq!(
        f[0].to_string(),
        "rpc/src/a.rs:2: `fn f(_: super::b::B) {}` imports rpc/src/b.rs: \
         import circle of rpc/src/a.rs, rpc/src/b.rs"
    );
}

/// A small `rpc/src/mcp` in its layers that follows every rule.
const MCP_CLEAN: &[(&str, &str)] = &[
    (
        "rpc/src/mcp/mod.rs",
        "mod wire;\nmod guard;\nmod tools;\nmod server;\npub use wire::tool::ToolDef;\n",
    ),
    ("rpc/src/mcp/wire/mod.rs", "pub mod tool;\n"),
    ("rpc/src/mcp/wire/tool.rs", "pub struct ToolDef;\n"),
    (
        "rpc/src/mcp/guard/mod.rs",
        "pub mod authority;\npub mod request;\n",
    ),
    (
        "rpc/src/mcp/guard/authority/mod.rs",
        "mod table;\npub use table::Cap;\n",
    ),
    (
        "rpc/src/mcp/guard/authority/table.rs",
        "use super::super::super::wire::tool::ToolDef;\npub struct Cap(ToolDef);\n",
    ),
    (
        "rpc/src/mcp/guard/request.rs",
        "use super::authority::Cap;\nuse crate::mcp::wire::tool;\npub struct Cx(Cap);\n",
    ),
    (
        "rpc/src/mcp/tools/mod.rs",
        "use crate::mcp::{guard::request::Cx, wire::tool::ToolDef};\n\
         #[cfg(test)]\nmod tests { use crate::mcp::server::Server; }\n",
    ),
    // A test file may drive the whole server.
    (
        "rpc/src/mcp/tools/tests.rs",
        "use crate::mcp::server::Server;\n",
    ),
    (
        "rpc/src/mcp/server.rs",
        "use super::tools;\npub struct Server;\n",
    ),
];

fn mcp_with(extra: (&'static str, &'static str)) -> Vec<Finding> {
    let mut files = MCP_CLEAN.to_vec();
    files.retain(|(p, _)| *p != extra.0);
    files.push(extra);
    tree(&files)
}

#[test]
fn a_clean_mcp_passes() {
    assert_eq!(tree(MCP_CLEAN), vec![]);
}

#[test]
fn an_upward_import_in_mcp_fails() {
    // The guard reaches up into the tools, by `crate::` and by a `super::` chain.
    let f = mcp_with((
        "rpc/src/mcp/guard/request.rs",
        "use super::authority::Cap;\nuse crate::mcp::tools::registry::Entry;\n\
         fn f(_: super::super::tools::registry::Entry) {}\n",
    ));
    // (The tools import the guard, so the upward import closes a circle too.)
    let got: Vec<_> = f
        .iter()
        .filter(|f| f.rule.starts_with("mcp/"))
        .map(|f| (f.line, f.what.as_str(), f.rule.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            (2, "crate::mcp::tools", "mcp/guard may import wire"),
            (3, "crate::mcp::tools", "mcp/guard may import wire"),
        ]
    );
    // The ground floor may import nothing else of mcp, nor the files on top.
    let f = mcp_with((
        "rpc/src/mcp/wire/tool.rs",
        "use crate::mcp::server::Server;\npub struct ToolDef;\n",
    ));
    let f: Vec<_> = f
        .into_iter()
        .filter(|f| f.rule.starts_with("mcp/"))
        .collect();
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].what, "crate::mcp::server");
}

#[test]
fn an_mcp_import_through_the_facade_fails() {
    // `ToolDef` is re-exported by `mcp/mod.rs`; naming it there hides which folder it is from.
    let f = mcp_with((
        "rpc/src/mcp/guard/request.rs",
        "use super::authority::Cap;\nuse crate::mcp::ToolDef;\npub struct Cx(Cap);\n",
    ));
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!((f[0].line, f[0].what.as_str()), (2, "crate::mcp::ToolDef"));
    assert!(
        f[0].rule.contains("not through mcp's façade"),
        "{}",
        f[0].rule
    );
    // A glob of the façade too, whether by `crate::` or by `super::` (from the folder's root).
    for text in ["use crate::mcp::*;\n", "use super::*;\n"] {
        let f = mcp_with(("rpc/src/mcp/wire/mod.rs", text));
        let f: Vec<_> = f.iter().filter(|f| f.rule.starts_with("mcp/")).collect();
        assert_eq!(f.len(), 1, "{text}: {f:?}");
        assert_eq!(f[0].what, "crate::mcp::*");
    }
}

#[test]
fn a_circle_through_a_re_export_fails() {
    // `authority/mod.rs` imports `table.rs` and re-exports `Door` from `door.rs`; `table.rs`
    // takes `Door` through that re-export. `door.rs`, which defines it, imports nothing, but
    // the path as written ties `table.rs` to `mod.rs`: a circle.
    let mut files = MCP_CLEAN.to_vec();
    files.retain(|(p, _)| !p.starts_with("rpc/src/mcp/guard/authority/"));
    files.push((
        "rpc/src/mcp/guard/authority/mod.rs",
        "mod door;\nmod table;\npub use door::Door;\nuse table::Cap;\npub struct Authority(Cap);\n",
    ));
    files.push(("rpc/src/mcp/guard/authority/door.rs", "pub struct Door;\n"));
    files.push((
        "rpc/src/mcp/guard/authority/table.rs",
        "pub struct Cap(super::Door);\n",
    ));
    let f = tree(&files);
    let got: Vec<_> = f.iter().map(|f| (f.path.as_str(), f.line)).collect();
    assert_eq!(
        got,
        [
            ("rpc/src/mcp/guard/authority/mod.rs", 4),
            ("rpc/src/mcp/guard/authority/table.rs", 1),
        ]
    );
    assert!(
        f.iter().all(|f| f.rule.starts_with("import circle of")),
        "{f:?}"
    );
    // Naming `door.rs` itself is no circle.
    files.pop();
    files.push((
        "rpc/src/mcp/guard/authority/table.rs",
        "pub struct Cap(super::door::Door);\n",
    ));
    assert_eq!(tree(&files), vec![]);
}

#[test]
fn an_mcp_import_chain_longer_than_the_bound_fails() {
    // `wire/f0.rs` imports `f1.rs`, which imports `f2.rs`, … : `files` files in a row.
    let chain = |files: usize| {
        let mut tree = vec![(
            "rpc/src/mcp/wire/mod.rs".to_string(),
            (0..files)
                .map(|i| format!("mod f{i};\n"))
                .collect::<String>(),
        )];
        for i in 0..files {
            let text = if i + 1 < files {
                format!("pub struct F{i}(super::f{}::F{});\n", i + 1, i + 1)
            } else {
                format!("pub struct F{i};\n")
            };
            tree.push((format!("rpc/src/mcp/wire/f{i}.rs"), text));
        }
        let tree: Vec<(&str, &str)> = tree.iter().map(|(p, t)| (&p[..], &t[..])).collect();
        self::tree(&tree)
    };
    assert_eq!(chain(MCP_CHAIN_MAX), vec![]);
    let f = chain(MCP_CHAIN_MAX + 1);
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(
        (f[0].path.as_str(), f[0].line),
        ("rpc/src/mcp/wire/f0.rs", 1)
    );
    let want = format!(
        "import chain of {} files: rpc/src/mcp/wire/f0.rs → ",
        MCP_CHAIN_MAX + 1
    );
    assert!(f[0].what.starts_with(&want), "{}", f[0].what);
}
