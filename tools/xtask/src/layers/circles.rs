//! File-level import circles in every crate of the tree. A file imports another when one of its
//! paths (`use` or inline, from `crate::`, `super::`, `self::` or a child module) names an item
//! that the other file defines, or when the path as written lands on the other file: a path
//! through a `pub use` ties the file to the re-exporting file as well as to the one that
//! defines the item, so a circle cannot hide behind a re-export. A `pub use` is no import of
//! its own, so a `mod.rs` that gathers its children's names is not a hub that ties them all
//! together. The scope of a `pub(in …)` is a path like any other: an item that names who may
//! see it depends on that module. Inline `#[cfg(test)]` modules are left out: what a test
//! imports is no design dependency. Files that import each other, directly or around a longer
//! loop, form a strongly connected component: each is one circle.

use std::collections::{BTreeSet, HashMap};
use std::ops::Range;

use super::Source;
use super::scan::{
    ident_at, inline_modules, is_ident, line_of, skip_ws, strip_comments_and_strings,
};

/// Folders that hold a crate's module tree (the first one in a file's path): `src/`, the
/// integration tests, the examples, the benchmarks.
const TREES: &[&str] = &["src", "tests", "examples", "benches"];

/// How many re-exports a path is followed through.
const MAX_HOPS: usize = 8;

/// One circle: its files and the imports between them.
#[derive(Debug, PartialEq, Eq)]
pub struct Circle {
    pub files: Vec<String>,
    pub links: Vec<Link>,
}

/// One import inside a circle: `from`'s line `line` (`text`) names an item of `to`.
#[derive(Debug, PartialEq, Eq)]
pub struct Link {
    pub from: String,
    pub line: usize,
    pub text: String,
    pub to: String,
}

/// One file-level import: line `line` of `files[from]` names an item of `files[to]`.
/// `defines` when `to` is the file that defines the item; a path through a re-export also
/// gives an import of the re-exporting file, without it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Import {
    pub from: usize,
    pub line: usize,
    pub to: usize,
    pub defines: bool,
}

/// Every file-level import between `files` (indexes into `files`), sorted.
pub fn imports(files: &[Source]) -> Vec<Import> {
    let tree = Tree::new(files);
    let mut out = Vec::new();
    for (from, file) in tree.files.iter().enumerate() {
        for r in &file.refs {
            // The file the path lands on as written (a re-export's file included) and the
            // file that defines the item: a path through a re-export depends on both.
            let written = tree.resolve(from, r.module.clone(), &r.segs, MAX_HOPS);
            let defined = tree.resolve(from, r.module.clone(), &r.segs, 0);
            for (to, defines) in [(written, written == defined), (defined, true)] {
                if let Some(to) = to
                    && to != from
                {
                    out.push(Import {
                        from: file.source,
                        line: r.line,
                        to: tree.files[to].source,
                        defines,
                    });
                }
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Every circle that `imports` (of `files`) close, each listing its files and links in path
/// order.
pub fn circles(files: &[Source], imports: &[Import]) -> Vec<Circle> {
    let mut links: Vec<(usize, usize, usize)> =
        imports.iter().map(|i| (i.from, i.line, i.to)).collect();
    links.dedup();
    let mut next = vec![Vec::new(); files.len()];
    for &(from, _, to) in &links {
        next[from].push(to);
    }
    let mut out = Vec::new();
    for component in components(&next) {
        if component.len() < 2 {
            continue;
        }
        let inside: BTreeSet<usize> = component.iter().copied().collect();
        let mut names: Vec<String> = inside.iter().map(|&f| files[f].path.clone()).collect();
        names.sort();
        let mut circle_links: Vec<Link> = links
            .iter()
            .filter(|(f, _, t)| inside.contains(f) && inside.contains(t))
            .map(|&(f, line, t)| Link {
                from: files[f].path.clone(),
                line,
                text: files[f]
                    .text
                    .lines()
                    .nth(line - 1)
                    .unwrap_or("")
                    .trim()
                    .to_string(),
                to: files[t].path.clone(),
            })
            .collect();
        circle_links.sort_by(|a, b| (&a.from, a.line).cmp(&(&b.from, b.line)));
        circle_links.dedup_by(|a, b| a.from == b.from && a.line == b.line && a.to == b.to);
        out.push(Circle {
            files: names,
            links: circle_links,
        });
    }
    out.sort_by(|a, b| a.files.cmp(&b.files));
    out
}

/// A path a file names at `line`, from module `module` (the file's, plus the inline modules
/// around it).
struct Ref {
    line: usize,
    module: Vec<String>,
    segs: Vec<String>,
}

/// What a `pub use` makes a module export.
struct Export {
    /// The name it is known by here; `None` for a glob.
    name: Option<String>,
    module: Vec<String>,
    segs: Vec<String>,
}

struct File {
    source: usize,
    /// The folder its crate's module tree starts at, e.g. `rpc/src`.
    tree: String,
    module: Vec<String>,
    code: String,
    refs: Vec<Ref>,
    exports: Vec<Export>,
}

struct Tree {
    files: Vec<File>,
    /// (tree, module path) → the files that are that module (several crate roots share the
    /// empty path in `tests/`).
    modules: HashMap<(String, String), Vec<usize>>,
}

impl Tree {
    fn new(sources: &[Source]) -> Tree {
        let mut files = Vec::new();
        for (i, s) in sources.iter().enumerate() {
            let Some((tree, module)) = module_of(&s.path) else {
                continue;
            };
            let code = strip_comments_and_strings(&s.text);
            let (refs, exports) = references(&code, &module);
            files.push(File {
                source: i,
                tree,
                module,
                code,
                refs,
                exports,
            });
        }
        let mut modules: HashMap<(String, String), Vec<usize>> = HashMap::new();
        for (i, f) in files.iter().enumerate() {
            let key = (f.tree.clone(), f.module.join("::"));
            modules.entry(key).or_default().push(i);
        }
        Tree { files, modules }
    }

    /// The one file that is `module` in `from`'s tree (for the crate root: `from` itself when
    /// it is one, else the only root there is).
    fn file_of(&self, from: usize, module: &[String]) -> Option<usize> {
        let key = (self.files[from].tree.clone(), module.join("::"));
        let found = self.modules.get(&key)?;
        if found.contains(&from) {
            return Some(from);
        }
        (found.len() == 1).then(|| found[0])
    }

    /// The file that defines what `segs` names, seen from module `module` of file `from`.
    fn resolve(
        &self,
        from: usize,
        module: Vec<String>,
        segs: &[String],
        hops: usize,
    ) -> Option<usize> {
        let first = segs.first()?;
        let mut full = match first.as_str() {
            "crate" => Vec::new(),
            "self" => module.clone(),
            "super" => {
                let ups = segs.iter().take_while(|s| *s == "super").count();
                module.get(..module.len().checked_sub(ups)?)?.to_vec()
            }
            // A child module of this one (a path in a `use`); anything else is another crate.
            child => {
                let mut m = module.clone();
                m.push(child.to_string());
                self.file_of(from, &m)?;
                module.clone()
            }
        };
        let skip = match first.as_str() {
            "super" => segs.iter().take_while(|s| *s == "super").count(),
            "crate" | "self" => 1,
            _ => 0,
        };
        full.extend(segs[skip..].iter().filter(|s| *s != "self").cloned());
        // The longest prefix that is a file, and what is left to name in it.
        let (file, at) = (0..=full.len())
            .rev()
            .find_map(|n| self.file_of(from, &full[..n]).map(|f| (f, n)))?;
        let rest = &full[at..];
        if hops < MAX_HOPS
            && let Some(name) = rest.first()
        {
            let f = &self.files[file];
            let named = f.exports.iter().find(|e| e.name.as_deref() == Some(name));
            if let Some(e) = named {
                let mut segs = e.segs.clone();
                segs.extend(rest[1..].iter().cloned());
                // `None`: the item is another crate's.
                return self.resolve(file, e.module.clone(), &segs, hops + 1);
            }
            if !defines(&f.code, name) {
                for e in f.exports.iter().filter(|e| e.name.is_none()) {
                    let mut segs = e.segs.clone();
                    segs.extend(rest.iter().cloned());
                    if let Some(t) = self.resolve(file, e.module.clone(), &segs, hops + 1)
                        && t != file
                    {
                        return Some(t);
                    }
                }
            }
        }
        Some(file)
    }
}

/// The folder a file's module tree starts at and the module the file is there (`[]` for a
/// crate root). The integration tests of a package share one tree (`tests/support/` is a module
/// of each); an example or test with a folder of its own (`examples/bench/`) is its own tree.
fn module_of(path: &str) -> Option<(String, Vec<String>)> {
    let parts: Vec<&str> = path.strip_suffix(".rs")?.split('/').collect();
    let at = parts.iter().position(|p| TREES.contains(p))?;
    let kind = parts[at];
    let mut tree = parts[..=at].join("/");
    let mut module: Vec<String> = parts[at + 1..].iter().map(|s| s.to_string()).collect();
    let root = if kind == "src" {
        module == ["lib"] || module == ["main"]
    } else if module.len() == 1 {
        true
    } else if kind != "tests" || module.len() == 2 && module[1] == "main" {
        tree = format!("{tree}/{}", module.remove(0));
        module == ["main"]
    } else {
        false
    };
    if root {
        module.clear();
    } else if module.last().is_some_and(|m| m == "mod") {
        module.pop();
    }
    Some((tree, module))
}

/// Whether `code` defines an item called `name`.
fn defines(code: &str, name: &str) -> bool {
    const KINDS: &[&str] = &[
        "fn",
        "struct",
        "enum",
        "trait",
        "type",
        "const",
        "static",
        "mod",
        "union",
        "macro_rules!",
    ];
    let b = code.as_bytes();
    code.match_indices(name).any(|(at, _)| {
        let end = at + name.len();
        if at > 0 && is_ident(b[at - 1]) || b.get(end).copied().is_some_and(is_ident) {
            return false;
        }
        let before = code[..at].trim_end();
        KINDS.iter().any(|k| {
            before
                .strip_suffix(k)
                .is_some_and(|rest| !rest.as_bytes().last().copied().is_some_and(is_ident))
        })
    })
}

/// Every path `code` names from the module tree (its `use` leaves and the inline `crate::`,
/// `super::` and `self::` paths), and what its `pub use`s export.
fn references(code: &str, module: &[String]) -> (Vec<Ref>, Vec<Export>) {
    let inline = inline_modules(code);
    let module_at = |at: usize| {
        let mut m = module.to_vec();
        let mut around: Vec<&(String, Range<usize>)> =
            inline.iter().filter(|(_, r)| r.contains(&at)).collect();
        around.sort_by_key(|(_, r)| r.start);
        m.extend(around.iter().map(|(n, _)| n.clone()));
        m
    };
    let tests = test_modules(code, &inline);
    let in_tests = |at: usize| tests.iter().any(|r| r.contains(&at));
    let mut refs = Vec::new();
    let mut exports = Vec::new();
    let mut in_use: Vec<Range<usize>> = Vec::new();
    for (at, end, public) in use_statements(code) {
        in_use.push(at..end);
        let mut leaves = Vec::new();
        use_tree(code, at + 3, end, &mut Vec::new(), &mut leaves);
        let m = module_at(at);
        for leaf in leaves {
            if public {
                exports.push(Export {
                    name: leaf.name,
                    module: m.clone(),
                    segs: leaf.segs,
                });
            } else if !in_tests(leaf.at) {
                refs.push(Ref {
                    line: line_of(code, leaf.at),
                    module: m.clone(),
                    segs: leaf.segs,
                });
            }
        }
    }
    let b = code.as_bytes();
    for word in ["crate", "super", "self"] {
        for (at, _) in code.match_indices(word) {
            let before = at.checked_sub(1).map(|i| b[i]);
            let after = skip_ws(b, at + word.len());
            if before.is_some_and(|c| is_ident(c) || c == b':')
                || b.get(at + word.len()).copied().is_some_and(is_ident)
                || !code[after..].starts_with("::")
                || in_use.iter().any(|r| r.contains(&at))
                || in_tests(at)
            {
                continue;
            }
            let mut segs = vec![word.to_string()];
            let mut i = after;
            while code[i..].starts_with("::") {
                let j = skip_ws(b, i + 2);
                let Some(seg) = ident_at(code, j) else { break };
                i = skip_ws(b, j + seg.len());
                segs.push(seg);
            }
            refs.push(Ref {
                line: line_of(code, at),
                module: module_at(at),
                segs,
            });
        }
    }
    (refs, exports)
}

/// The byte ranges of the inline modules that only tests build (`#[cfg(test)] mod … { … }`).
pub(super) fn test_modules(code: &str, inline: &[(String, Range<usize>)]) -> Vec<Range<usize>> {
    inline
        .iter()
        .filter(|(_, r)| {
            let Some(keyword) = code[..r.start].rfind("mod") else {
                return false;
            };
            // The attributes just before the `mod` (and a visibility).
            let mut before = code[..keyword].trim_end();
            before = before.strip_suffix("pub").unwrap_or(before).trim_end();
            while let Some(attr) = before.strip_suffix(']') {
                let Some(open) = attr.rfind("#[") else {
                    return false;
                };
                if attr[open..].replace(' ', "").contains("cfg(test)") {
                    return true;
                }
                before = attr[..open].trim_end();
            }
            false
        })
        .map(|(_, r)| r.clone())
        .collect()
}

/// The `use` statements of `code`: where each starts (at `use`), where it ends (at `;`), and
/// whether it is a `pub use` (of any reach).
fn use_statements(code: &str) -> Vec<(usize, usize, bool)> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    for (at, _) in code.match_indices("use") {
        if at > 0 && is_ident(b[at - 1]) || !b.get(at + 3).is_some_and(|c| c.is_ascii_whitespace())
        {
            continue;
        }
        let before = code[..at].trim_end();
        // `pub`, `pub(crate)`, `pub(in path)` …
        let visibility = match before.strip_suffix(')') {
            Some(v) => v.rfind('(').map(|open| v[..open].trim_end()),
            None => Some(before),
        };
        let public = visibility.is_some_and(|v| {
            v.strip_suffix("pub")
                .is_some_and(|r| !r.as_bytes().last().copied().is_some_and(is_ident))
        });
        let statement = before.is_empty() || before.ends_with([';', '{', '}', ']']);
        if !statement && !public {
            continue;
        }
        if let Some(end) = code[at..].find(';') {
            out.push((at, at + end, public));
        }
    }
    out
}

/// One leaf of a use tree: its full path, the name it brings in (`None` for a glob), where it
/// is written.
struct Leaf {
    segs: Vec<String>,
    name: Option<String>,
    at: usize,
}

/// Parses the use tree in `code[i..end]` under `prefix`, one [`Leaf`] per imported name;
/// returns where it stopped.
fn use_tree(
    code: &str,
    mut i: usize,
    end: usize,
    prefix: &mut Vec<String>,
    out: &mut Vec<Leaf>,
) -> usize {
    let b = code.as_bytes();
    let depth = prefix.len();
    i = skip_ws(b, i);
    if code[i..].starts_with("::") {
        i = skip_ws(b, i + 2);
    }
    loop {
        if i >= end {
            break;
        }
        match b[i] {
            b'{' => {
                i += 1;
                loop {
                    i = skip_ws(b, i);
                    if i >= end || b[i] == b'}' {
                        i += 1;
                        break;
                    }
                    if b[i] == b',' {
                        i += 1;
                        continue;
                    }
                    let before = i;
                    i = use_tree(code, i, end, prefix, out);
                    if i == before {
                        i += 1;
                    }
                }
                break;
            }
            b'*' => {
                out.push(Leaf {
                    segs: prefix.clone(),
                    name: None,
                    at: i,
                });
                i += 1;
                break;
            }
            _ => {
                let Some(seg) = ident_at(code, i) else { break };
                let seg_at = i;
                i = skip_ws(b, i + seg.len());
                prefix.push(seg);
                if code[i..].starts_with("::") {
                    i = skip_ws(b, i + 2);
                    continue;
                }
                let mut name = prefix.last().cloned();
                if code[i..].starts_with("as") && !b.get(i + 2).copied().is_some_and(is_ident) {
                    let j = skip_ws(b, i + 2);
                    name = ident_at(code, j);
                    i = skip_ws(b, j + name.as_ref().map_or(0, String::len));
                }
                let mut segs = prefix.clone();
                if segs.len() > 1 && segs.last().is_some_and(|s| s == "self") {
                    segs.pop();
                    name = segs.last().cloned();
                }
                out.push(Leaf {
                    segs,
                    name,
                    at: seg_at,
                });
                break;
            }
        }
    }
    prefix.truncate(depth);
    i
}

/// The strongly connected components of the graph `next` (Tarjan's algorithm, iterative).
fn components(next: &[Vec<usize>]) -> Vec<Vec<usize>> {
    let n = next.len();
    let mut index = vec![usize::MAX; n];
    let mut low = vec![0; n];
    let mut on_stack = vec![false; n];
    let mut stack = Vec::new();
    let mut out = Vec::new();
    let mut counter = 0;
    for start in 0..n {
        if index[start] != usize::MAX {
            continue;
        }
        let mut work = vec![(start, 0)];
        while let Some(&mut (v, ref mut edge)) = work.last_mut() {
            if *edge == 0 && index[v] == usize::MAX {
                index[v] = counter;
                low[v] = counter;
                counter += 1;
                stack.push(v);
                on_stack[v] = true;
            }
            if let Some(&w) = next[v].get(*edge) {
                *edge += 1;
                if index[w] == usize::MAX {
                    work.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            work.pop();
            if let Some(&(parent, _)) = work.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == index[v] {
                let mut component = Vec::new();
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    component.push(w);
                    if w == v {
                        break;
                    }
                }
                out.push(component);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests;
