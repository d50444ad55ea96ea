//! The longest chain of file imports inside the MCP module: how many floors a reader climbs
//! down from the top file to the last one it leans on. A file imports another when it names
//! an item the other defines (the imports [`circles`](super::circles) finds, without the
//! landings on a re-exporting file); tests are left out, as they are for the layer rules.

use super::Source;
use super::circles::Import;

/// One link of a chain: `from`'s line `line` names an item of `to`.
#[derive(Debug, PartialEq, Eq)]
pub struct Step {
    pub from: String,
    pub line: usize,
    pub to: String,
}

/// The longest chain of imports between the files of `files` under `prefix` that are not
/// tests, as its links from the top down (the first of several as long); empty when no such
/// file imports another. A file met again on the way (a circle, which the circle check
/// reports) ends the chain there.
pub fn longest(files: &[Source], imports: &[Import], prefix: &str) -> Vec<Step> {
    let inside = |f: usize| {
        let path = &files[f].path;
        path.starts_with(prefix) && !path.split('/').any(|p| p == "tests" || p == "tests.rs")
    };
    let mut next: Vec<Vec<(usize, usize)>> = vec![Vec::new(); files.len()];
    for i in imports {
        if i.defines && inside(i.from) && inside(i.to) {
            next[i.from].push((i.to, i.line));
        }
    }
    let mut below: Vec<Option<Below>> = vec![None; files.len()];
    let mut on_path = vec![false; files.len()];
    for f in 0..files.len() {
        depth(f, &next, &mut below, &mut on_path);
    }
    let Some(top) =
        (0..files.len()).max_by_key(|&f| (below[f].map_or(0, |b| b.files), usize::MAX - f))
    else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut at = top;
    while let Some(Below {
        first: Some((to, line)),
        ..
    }) = below[at]
    {
        out.push(Step {
            from: files[at].path.clone(),
            line,
            to: files[to].path.clone(),
        });
        at = to;
    }
    out
}

/// The longest chain from a file down.
#[derive(Clone, Copy)]
struct Below {
    /// How many files it passes through, the file itself included.
    files: usize,
    /// Its first link: the file imported and the line that imports it.
    first: Option<(usize, usize)>,
}

/// Fills `below[f]` (and below it), depth first; `next[f]` lists what `f` imports, and the
/// line.
fn depth(
    f: usize,
    next: &[Vec<(usize, usize)>],
    below: &mut [Option<Below>],
    on_path: &mut [bool],
) -> usize {
    if let Some(b) = below[f] {
        return b.files;
    }
    if on_path[f] {
        return 0;
    }
    on_path[f] = true;
    let mut best = Below {
        files: 1,
        first: None,
    };
    for &(to, line) in &next[f] {
        let n = depth(to, next, below, on_path) + 1;
        if n > best.files {
            best = Below {
                files: n,
                first: Some((to, line)),
            };
        }
    }
    on_path[f] = false;
    below[f] = Some(best);
    best.files
}

#[cfg(test)]
mod tests;
