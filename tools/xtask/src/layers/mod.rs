//! `cargo xtask layers` (and a suite step): keeps the module's dependencies flowing one way.
//!
//! The layers are the first folder under `src/` (`docs/architecture.md` draws them). A
//! `crate::` path, whether in a `use` or inline in code, and a `super::` chain that climbs to the
//! crate root, may only name the same layer or one the table in [`allowed`] lists; the protocol
//! crate `rpc` stays above `services`. Two more rules keep the unsafe code where it can be
//! audited: the word `unsafe` appears under `src/` only in `src/board/`, the crates that must
//! have none forbid it at their root, and no file anywhere pulls in another file with a `path`
//! attribute (that hides one crate's code inside another). The protocol's MCP module,
//! `rpc/src/mcp/`, is layered the same way: its folders ([`MCP_LAYERS`]) each import only
//! themselves and those below, never the files on top nor names through the `mcp` façade.
//! No files of any crate import each other in a circle ([`circles`]), not even through a
//! re-export or a `pub(in …)` path: a file a newcomer reads should lead down, not back. Last,
//! the longest chain of file imports inside `rpc/src/mcp/` ([`chain`]) may not outgrow
//! [`MCP_CHAIN_MAX`] files: a reader should reach the bottom in a few steps.

use std::fmt;
use std::path::Path;

use crate::cmd::repo_root;
use scan::{ident_at, inline_modules, is_ident, line_of, skip_ws, strip_comments_and_strings};

mod chain;
mod circles;
mod scan;

/// The layers, bottom first.
const LAYERS: &[&str] = &["hil", "drivers", "services", "tools", "net", "board"];

/// The layers of the protocol's MCP module, `rpc/src/mcp/`, bottom first: each folder may
/// import itself and the folders before it. The files at the top (`server.rs`, `dispatch.rs`,
/// the fuzzing entry and the façade `mod.rs`) may import them all.
const MCP: &str = "rpc/src/mcp/";
const MCP_LAYERS: &[&str] = &["wire", "guard", "tools", "resources", "eras"];

/// The most files a chain of imports inside `rpc/src/mcp/` may pass through, the top file and
/// the bottom one included (tests left out).
const MCP_CHAIN_MAX: usize = 7;

/// Crates whose sources must not contain `unsafe` at all.
const SAFE_CRATES: &[&str] = &["rpc/", "rpc-conformance/", "indy/", "loader/"];

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

/// Checks the whole tree on disk; prints every finding and the longest import chain in
/// `rpc/src/mcp/`, and fails if there is a finding.
pub fn run() -> Result<(), String> {
    let root = repo_root();
    let mut files = Vec::new();
    collect(root, root, &mut files)?;
    let (findings, chain) = analyse(&files);
    for f in &findings {
        println!("  {f}");
    }
    println!(
        "layers: the longest import chain in {MCP} has {} files (at most {MCP_CHAIN_MAX}):",
        chain.len() + 1
    );
    for step in &chain {
        println!("  {}:{} → {}", step.from, step.line, step.to);
    }
    if findings.is_empty() {
        println!("layers: {} files, no finding", files.len());
        Ok(())
    } else {
        Err(format!(
            "layers: {} findings in {} files (rules in tools/xtask/src/layers/)",
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

/// All findings in `files`, in file order, and the longest import chain in `rpc/src/mcp/`.
fn analyse(files: &[Source]) -> (Vec<Finding>, Vec<chain::Step>) {
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
        check_mcp_imports(f, &code, &mut out);
    }
    let imports = circles::imports(files);
    for circle in circles::circles(files, &imports) {
        let rule = format!("import circle of {}", circle.files.join(", "));
        for link in circle.links {
            out.push(Finding {
                path: link.from,
                line: link.line,
                what: format!("`{}` imports {}", link.text, link.to),
                rule: rule.clone(),
            });
        }
    }
    let chain = chain::longest(files, &imports, MCP);
    if chain.len() + 1 > MCP_CHAIN_MAX {
        let files: Vec<&str> = chain
            .iter()
            .map(|s| s.from.as_str())
            .chain(chain.last().map(|s| s.to.as_str()))
            .collect();
        out.push(Finding {
            path: chain[0].from.clone(),
            line: chain[0].line,
            what: format!(
                "import chain of {} files: {}",
                files.len(),
                files.join(" → ")
            ),
            rule: format!(
                "a chain of imports in {MCP} passes through at most {MCP_CHAIN_MAX} files"
            ),
        });
    }
    (out, chain)
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

/// The MCP layer of a file under `rpc/src/mcp/`, and how many modules deep it is under `mcp`
/// (`guard/audit.rs` is 2, `guard/authority/mod.rs` is 2, `guard/authority/table.rs` is 3).
/// `None` for the files on top and for tests (a test may drive the whole server).
fn mcp_layer_of(path: &str) -> Option<(&'static str, usize)> {
    let rest = path.strip_prefix(MCP)?;
    let (first, _) = rest.split_once('/')?;
    let layer = MCP_LAYERS.iter().find(|l| **l == first).copied()?;
    let test = rest.split('/').any(|p| p == "tests" || p == "tests.rs");
    (!test).then(|| (layer, module_depth(&format!("src/{rest}"))))
}

/// A file in an MCP layer may name, under `crate::mcp::` or through `super::` chains that climb
/// to `mcp`, only its own layer and those below; never the façade's re-exports (a name
/// imported from `mcp` itself would hide the folder it comes from) nor the files on top.
fn check_mcp_imports(f: &Source, code: &str, out: &mut Vec<Finding>) {
    let Some((layer, depth)) = mcp_layer_of(&f.path) else {
        return;
    };
    let at = MCP_LAYERS.iter().position(|l| *l == layer).unwrap_or(0);
    let tests = circles::test_modules(code, &inline_modules(code));
    let mut paths = mcp_paths(code);
    paths.extend(super_paths_exact(code, depth));
    for (pos, target) in paths {
        if tests.iter().any(|r| r.contains(&pos)) {
            continue;
        }
        let line = line_of(code, pos);
        let what = format!("crate::mcp::{target}");
        match MCP_LAYERS.iter().position(|l| *l == target) {
            Some(i) if i <= at => {}
            Some(_) => {
                let below = MCP_LAYERS[..at].join(", ");
                let may = if below.is_empty() {
                    "nothing else of mcp".to_string()
                } else {
                    below
                };
                let rule = format!("mcp/{layer} may import {may}");
                out.push(finding(f, line, what, &rule));
            }
            None => {
                let rule = format!(
                    "mcp/{layer} imports from the folder that defines a name, not through \
                     mcp's façade or the files on top"
                );
                out.push(finding(f, line, what, &rule));
            }
        }
    }
}

/// The segment after each `crate::mcp::` (each member of a group after `crate::mcp::{`), with
/// its byte offset.
fn mcp_paths(code: &str) -> Vec<(usize, String)> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    for mut i in after_crate(code) {
        if ident_at(code, i).as_deref() != Some("mcp") {
            continue;
        }
        i = skip_ws(b, i + 3);
        if !code[i..].starts_with("::") {
            continue;
        }
        segment_or_group(code, skip_ws(b, i + 2), &mut out);
    }
    out
}

/// `super::` chains of exactly `depth` links (plus one per inline module around them): the
/// segment they name in `mcp`, with its byte offset.
fn super_paths_exact(code: &str, depth: usize) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for chain in super_chains(code) {
        if chain.supers > 0 && chain.supers == depth + chain.enclosing {
            segment_or_group(code, chain.after, &mut out);
        }
    }
    out
}

/// One `super::` chain in a file: how many links, how many inline modules enclose it, and
/// where the segment after it starts.
struct SuperChain {
    supers: usize,
    enclosing: usize,
    after: usize,
}

/// Every `super::` chain of `code` (comments and strings already blanked).
fn super_chains(code: &str) -> Vec<SuperChain> {
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
        let enclosing = inline.iter().filter(|(_, r)| r.contains(&start)).count();
        out.push(SuperChain {
            supers,
            enclosing,
            after: i,
        });
    }
    out
}

/// The segment at `i`, or each member's first segment when a group opens there.
fn segment_or_group(code: &str, i: usize, out: &mut Vec<(usize, String)>) {
    let b = code.as_bytes();
    if b.get(i) == Some(&b'{') {
        let mut members = Vec::new();
        group_members(code, i + 1, &mut members);
        // `group_members` gives lines; find each member's offset again for the test ranges.
        let end = code[i..].find('}').map_or(code.len(), |e| i + e);
        for (_, seg) in members {
            let pos = code[i..end].find(seg.as_str()).map_or(i, |p| i + p);
            out.push((pos, seg));
        }
    } else if let Some(seg) = ident_at(code, i) {
        out.push((i, seg));
    } else if b.get(i) == Some(&b'*') {
        out.push((i, "*".to_string()));
    }
}

/// Where each `crate::` path's first segment starts (`$crate::` included).
fn after_crate(code: &str) -> Vec<usize> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    for (at, _) in code.match_indices("crate") {
        let before = at.checked_sub(1).map(|i| b[i]);
        if before.is_some_and(|c| is_ident(c) && c != b'$') || before == Some(b':') {
            continue;
        }
        let i = skip_ws(b, at + "crate".len());
        if code[i..].starts_with("::") {
            out.push(skip_ws(b, i + 2));
        }
    }
    out
}

/// Each `crate::` path's first segment with its line; a group `crate::{a, b::c}` gives each
/// member.
fn crate_paths(code: &str) -> Vec<(usize, String)> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    for i in after_crate(code) {
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
    let mut out = Vec::new();
    for chain in super_chains(code) {
        if chain.supers == 0 || chain.supers < depth + chain.enclosing {
            continue;
        }
        let i = chain.after;
        if b.get(i) == Some(&b'{') {
            group_members(code, i + 1, &mut out);
        } else if let Some(seg) = ident_at(code, i) {
            out.push((line_of(code, i), seg));
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

#[cfg(test)]
mod tests;
