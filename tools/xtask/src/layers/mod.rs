//! `cargo xtask layers` (and a suite step): keeps the module's dependencies flowing one way.
//!
//! The layers are the first folder under `src/` (`docs/architecture.md` draws them). A
//! `crate::` path, whether in a `use` or inline in code, and a `super::` chain that climbs to the
//! crate root, may only name the same layer or one the table in [`allowed`] lists; the protocol
//! crate `rpc` stays above `services`. Two more rules keep the unsafe code where it can be
//! audited: the word `unsafe` appears under `src/` only in `src/board/`, the crates that must
//! have none forbid it at their root, and no file anywhere pulls in another file with a `path`
//! attribute (that hides one crate's code inside another).

use std::fmt;
use std::path::Path;

use crate::cmd::repo_root;

/// The layers, bottom first.
const LAYERS: &[&str] = &["hil", "drivers", "services", "tools", "net", "board"];

/// Crates whose sources must not contain `unsafe` at all.
const SAFE_CRATES: &[&str] = &["rpc/", "rpc-conformance/", "indy/"];

/// Layers that may not use the protocol crate (no protocol types below the tools).
const NO_RPC: &[&str] = &["hil", "drivers", "services"];

/// The layers `from` may import besides itself; `None` means every layer (the board wires
/// everything together).
fn allowed(from: &str) -> Option<&'static [&'static str]> {
    Some(match from {
        "hil" => &[],
        "drivers" | "services" => &["hil"],
        "tools" => &["hil", "services"],
        "net" => &["hil", "services", "tools"],
        _ => return None,
    })
}

/// One source file: its path relative to the repository root (`/`-separated) and its text.
pub struct Source {
    pub path: String,
    pub text: String,
}

/// One broken rule.
#[derive(Debug, PartialEq, Eq)]
pub struct Finding {
    pub path: String,
    pub line: usize,
    /// What was found, e.g. `crate::tools`.
    pub what: String,
    pub rule: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}: {}: {}",
            self.path, self.line, self.what, self.rule
        )
    }
}

/// Checks the whole tree on disk; prints every finding and fails if there is one.
pub fn run() -> Result<(), String> {
    let root = repo_root();
    let mut files = Vec::new();
    collect(root, root, &mut files)?;
    let findings = check(&files);
    for f in &findings {
        println!("  {f}");
    }
    if findings.is_empty() {
        println!("layers: {} files, no finding", files.len());
        Ok(())
    } else {
        Err(format!(
            "layers: {} findings in {} files (rules in tools/xtask/src/layers.rs)",
            findings.len(),
            files.len()
        ))
    }
}

/// Every `.rs` file under `dir`, skipping build output and hidden folders.
fn collect(root: &Path, dir: &Path, out: &mut Vec<Source>) -> Result<(), String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let path = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            if name != "target" && !name.starts_with('.') {
                collect(root, &path, out)?;
            }
        } else if name.ends_with(".rs") {
            let text =
                std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            let rel = path.strip_prefix(root).unwrap_or(&path);
            out.push(Source {
                path: rel.to_string_lossy().replace('\\', "/"),
                text,
            });
        }
    }
    Ok(())
}

/// All findings in `files`, in file order.
pub fn check(files: &[Source]) -> Vec<Finding> {
    let mut out = Vec::new();
    for f in files {
        let code = strip_comments_and_strings(&f.text);
        for (line, what) in path_attributes(&code, &f.text) {
            out.push(finding(
                f,
                line,
                what,
                "no path attribute: depend on a crate instead of including its files",
            ));
        }
        let in_src = f.path.starts_with("src/");
        if in_src && !f.path.starts_with("src/board/") {
            for line in word_lines(&f.text, "unsafe") {
                let rule = "`unsafe` belongs in src/board/ only";
                out.push(finding(f, line, "unsafe".into(), rule));
            }
        }
        // The safe crates leave the proof to the compiler: their root must forbid unsafe code
        // (a word search would trip over `unsafe extern "C" fn` types, which are not code).
        let safe_root = SAFE_CRATES
            .iter()
            .any(|c| f.path.strip_prefix(c) == Some("src/lib.rs"));
        if safe_root && !code.contains("#![forbid(unsafe_code)]") {
            out.push(finding(
                f,
                1,
                "no #![forbid(unsafe_code)]".into(),
                "this crate must forbid `unsafe` at its root",
            ));
        }
        if in_src && f.path != "src/lib.rs" {
            check_imports(f, &code, &mut out);
        }
    }
    out
}

fn finding(f: &Source, line: usize, what: String, rule: &str) -> Finding {
    Finding {
        path: f.path.clone(),
        line,
        what,
        rule: rule.to_string(),
    }
}

/// The layer of a file under `src/`, if it is in one.
fn layer_of(path: &str) -> Option<&'static str> {
    let rest = path.strip_prefix("src/")?;
    let (first, _) = rest.split_once('/')?;
    LAYERS.iter().find(|l| **l == first).copied()
}

fn check_imports(f: &Source, code: &str, out: &mut Vec<Finding>) {
    let Some(layer) = layer_of(&f.path) else {
        out.push(finding(
            f,
            1,
            "file outside the layers".into(),
            "every file under src/ (but lib.rs) lives in board/, hil/, drivers/, services/, \
             tools/ or net/",
        ));
        return;
    };
    let may = allowed(layer);
    let mut paths = crate_paths(code);
    paths.extend(super_paths(code, module_depth(&f.path)));
    for (line, target) in paths {
        if target == layer || target == "self" || target == "*" {
            continue;
        }
        let what = format!("crate::{target}");
        if !LAYERS.contains(&target.as_str()) {
            let rule = format!("{layer} may import only layers, and `{target}` is not one");
            out.push(finding(f, line, what, &rule));
        } else if let Some(may) = may
            && !may.contains(&target.as_str())
        {
            let list = if may.is_empty() {
                "nothing else in the crate".to_string()
            } else {
                may.join(", ")
            };
            let rule = format!("{layer} may import {list}");
            out.push(finding(f, line, what, &rule));
        }
    }
    if NO_RPC.contains(&layer) {
        for line in rpc_uses(code) {
            let rule = format!("no protocol types in {layer} (rpc is for tools and above)");
            out.push(finding(f, line, "rpc".into(), &rule));
        }
    }
}

/// Each `crate::` path's first segment with its line; a group `crate::{a, b::c}` gives each
/// member.
fn crate_paths(code: &str) -> Vec<(usize, String)> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    for (at, _) in code.match_indices("crate") {
        let before = at.checked_sub(1).map(|i| b[i]);
        if before.is_some_and(|c| is_ident(c) && c != b'$') || before == Some(b':') {
            continue;
        }
        let mut i = skip_ws(b, at + "crate".len());
        if !code[i..].starts_with("::") {
            continue;
        }
        i = skip_ws(b, i + 2);
        if b.get(i) == Some(&b'{') {
            group_members(code, i + 1, &mut out);
        } else if let Some(seg) = ident_at(code, i) {
            out.push((line_of(code, i), seg));
        }
    }
    out
}

/// How many modules deep a file under `src/` is: `src/tools/fs.rs` is `tools::fs` (2),
/// `src/tools/mod.rs` is `tools` (1).
fn module_depth(path: &str) -> usize {
    let rest = path.strip_prefix("src/").unwrap_or(path);
    let rest = rest.strip_suffix(".rs").unwrap_or(rest);
    let rest = rest.strip_suffix("/mod").unwrap_or(rest);
    rest.split('/').count()
}

/// `super::…` chains that climb out of the file to the crate root, as the first segment they
/// name there (what `crate::` would have named). `depth` is the file's module depth; inline
/// `mod x { … }` blocks around a chain add theirs.
fn super_paths(code: &str, depth: usize) -> Vec<(usize, String)> {
    let b = code.as_bytes();
    let inline = inline_modules(code);
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(found) = code[at..].find("super") {
        let start = at + found;
        at = start + "super".len();
        let before = start.checked_sub(1).map(|i| b[i]);
        if before.is_some_and(is_ident) || before == Some(b':') {
            continue;
        }
        // Count `super::` links; `i` ends on the segment after the chain.
        let mut supers = 0;
        let mut i = start;
        while code[i..].starts_with("super") && !b.get(i + 5).copied().is_some_and(is_ident) {
            let j = skip_ws(b, i + 5);
            if !code[j..].starts_with("::") {
                break;
            }
            supers += 1;
            i = skip_ws(b, j + 2);
        }
        at = at.max(i);
        let enclosing = inline.iter().filter(|r| r.contains(&start)).count();
        if supers == 0 || supers < depth + enclosing {
            continue;
        }
        if b.get(i) == Some(&b'{') {
            group_members(code, i + 1, &mut out);
        } else if let Some(seg) = ident_at(code, i) {
            out.push((line_of(code, i), seg));
        }
    }
    out
}

/// The byte ranges of inline `mod name { … }` blocks.
fn inline_modules(code: &str) -> Vec<std::ops::Range<usize>> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    for (at, _) in code.match_indices("mod") {
        if at > 0 && is_ident(b[at - 1]) || b.get(at + 3).copied().is_some_and(is_ident) {
            continue;
        }
        let i = skip_ws(b, at + 3);
        let Some(name) = ident_at(code, i) else {
            continue;
        };
        let open = skip_ws(b, i + name.len());
        if b.get(open) != Some(&b'{') {
            continue;
        }
        let mut depth = 0;
        for (k, &c) in b.iter().enumerate().skip(open) {
            match c {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        out.push(open..k);
                        break;
                    }
                }
                _ => {}
            }
        }
    }
    out
}

/// The first segment of each member of the group opening just before `start`.
fn group_members(code: &str, start: usize, out: &mut Vec<(usize, String)>) {
    let b = code.as_bytes();
    let mut i = start;
    let mut expect_member = true;
    let mut depth = 0;
    while i < b.len() {
        match b[i] {
            b'{' => depth += 1,
            b'}' if depth == 0 => return,
            b'}' => depth -= 1,
            b',' if depth == 0 => expect_member = true,
            c if expect_member && depth == 0 && (is_ident(c) || c == b'*') => {
                let seg = if c == b'*' {
                    "*".to_string()
                } else {
                    ident_at(code, i).unwrap_or_default()
                };
                out.push((line_of(code, i), seg.clone()));
                expect_member = false;
                i += seg.len();
                continue;
            }
            _ => {}
        }
        i += 1;
    }
}

/// Lines that use the external `rpc` crate (`rpc::…` not behind another path segment).
fn rpc_uses(code: &str) -> Vec<usize> {
    let b = code.as_bytes();
    let mut lines = Vec::new();
    for (at, _) in code.match_indices("rpc") {
        let mut j = at;
        while j > 0 && b[j - 1] == b':' {
            j -= 1;
        }
        let qualified = j < at && j > 0 && is_ident(b[j - 1]);
        let joined = j == at && at > 0 && is_ident(b[at - 1]);
        let after = skip_ws(b, at + 3);
        let extern_crate = code[..at].trim_end().ends_with("extern crate");
        if !qualified && !joined && (code[after..].starts_with("::") || extern_crate) {
            let line = line_of(code, at);
            if lines.last() != Some(&line) {
                lines.push(line);
            }
        }
    }
    lines
}

/// Lines with a `path` attribute in `code` (the stripped `text`) and the attribute as
/// written.
fn path_attributes(code: &str, text: &str) -> Vec<(usize, String)> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    for (at, _) in code.match_indices('#') {
        let i = skip_ws(b, at + 1);
        if b.get(i) != Some(&b'[') {
            continue;
        }
        let j = skip_ws(b, i + 1);
        if ident_at(code, j).as_deref() == Some("path") {
            let end = code[at..].find(']').map_or(code.len(), |e| at + e + 1);
            out.push((line_of(code, at), text[at..end].to_string()));
        }
    }
    out
}

/// Lines where `word` occurs as a whole word.
fn word_lines(text: &str, word: &str) -> Vec<usize> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| {
            l.match_indices(word).any(|(at, _)| {
                let b = l.as_bytes();
                let before = at.checked_sub(1).map(|i| b[i]);
                let after = b.get(at + word.len()).copied();
                !before.is_some_and(is_ident) && !after.is_some_and(is_ident)
            })
        })
        .map(|(n, _)| n + 1)
        .collect()
}

/// `text` with comments (doc comments too) and the contents of string and character literals
/// replaced by spaces, newlines kept, so byte offsets and line numbers still match.
fn strip_comments_and_strings(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    let mut i = 0;
    while i < b.len() {
        let rest = &b[i..];
        if rest.starts_with(b"//") {
            let end = text[i..].find('\n').map_or(b.len(), |e| i + e);
            blank(&mut out, i, end);
            i = end;
        } else if rest.starts_with(b"/*") {
            let mut depth = 0;
            let mut j = i;
            while j < b.len() {
                if b[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if b[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            blank(&mut out, i, j);
            i = j;
        } else if let Some(hashes) = raw_string_start(b, i) {
            let open = text[i..].find('"').map_or(b.len(), |q| i + q + 1);
            let close = format!("\"{}", "#".repeat(hashes));
            let end = text[open..]
                .find(&close)
                .map_or(b.len(), |e| open + e + close.len());
            blank(&mut out, open, end.saturating_sub(close.len()));
            i = end;
        } else if b[i] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            let j = j.min(b.len());
            blank(&mut out, i + 1, j);
            i = j + 1;
        } else if b[i] == b'\'' {
            i = char_literal_end(text, i).map_or(i + 1, |end| {
                blank(&mut out, i + 1, end - 1);
                end
            });
        } else {
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `Some(number of #)` when a raw string (`r"`, `r#"`, `br"`) starts at `i`.
fn raw_string_start(b: &[u8], i: usize) -> Option<usize> {
    let start = if b[i] == b'b' { i + 1 } else { i };
    if b.get(start) != Some(&b'r') || (i > 0 && is_ident(b[i - 1])) {
        return None;
    }
    let hashes = b[start + 1..].iter().take_while(|c| **c == b'#').count();
    (b.get(start + 1 + hashes) == Some(&b'"')).then_some(hashes)
}

/// The end (past the closing quote) of a character literal starting at `i`; `None` for a
/// lifetime or label.
fn char_literal_end(text: &str, i: usize) -> Option<usize> {
    let rest = &text[i + 1..];
    if let Some(escape) = rest.strip_prefix('\\') {
        // Past the backslash and the escaped character, then to the closing quote.
        let escaped = escape.chars().next()?;
        let from = i + 2 + escaped.len_utf8();
        return text[from..].find('\'').map(|e| from + e + 1);
    }
    let c = rest.chars().next()?;
    rest[c.len_utf8()..]
        .starts_with('\'')
        .then(|| i + 1 + c.len_utf8() + 1)
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'$'
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

fn ident_at(code: &str, i: usize) -> Option<String> {
    let len = code.as_bytes()[i.min(code.len())..]
        .iter()
        .take_while(|c| is_ident(**c))
        .count();
    (len > 0).then(|| code[i..i + len].to_string())
}

fn line_of(code: &str, at: usize) -> usize {
    code[..at].bytes().filter(|c| *c == b'\n').count() + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &str)]) -> Vec<Finding> {
        let files: Vec<Source> = files
            .iter()
            .map(|(p, t)| Source {
                path: p.to_string(),
                text: t.to_string(),
            })
            .collect();
        check(&files)
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
}
