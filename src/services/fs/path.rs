//! Path resolution shared by the EROFS reader and the merged view: validation, `.` and `..`
//! (never above the root), symlinks with a loop limit, and a canonical path for the result.
//!
//! Resolution keeps the chain of directories it walked through; `..` pops that chain, so after
//! following a symlink `..` goes to the parent of where the link led, as on Unix.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use super::error::{Errno, FsError, FsResult};
use super::stat::FileType;

/// Longest path accepted, in bytes (Linux `PATH_MAX` less the NUL).
pub const MAX_PATH_LEN: usize = 4095;
/// Longest single component, in bytes.
pub const MAX_NAME_LEN: usize = 255;
/// Symlinks followed in one resolution before giving up with `E_LOOP`.
pub const MAX_SYMLINKS: usize = 40;

/// What resolution needs from a filesystem.
pub trait Namespace {
    /// A resolved entry.
    type Node: Clone;
    /// The root directory.
    fn root(&mut self) -> FsResult<Self::Node>;
    /// The type of `node`.
    fn file_type(&self, node: &Self::Node) -> FileType;
    /// Looks `name` up in the directory `dir`, whose canonical path is `dir_path`.
    fn lookup(
        &mut self,
        dir: &Self::Node,
        dir_path: &str,
        name: &str,
    ) -> FsResult<Option<Self::Node>>;
    /// The target of the symlink `node`.
    fn read_link(&mut self, node: &Self::Node) -> FsResult<String>;
}

/// A resolved entry and its canonical absolute path (no symlinks, `.` or `..`).
#[derive(Clone, Debug)]
pub struct Resolved<N> {
    /// Canonical path; `/` for the root.
    pub path: String,
    /// The entry.
    pub node: N,
}

/// The outcome of a resolution that tolerates a missing last component.
#[derive(Clone, Debug)]
pub enum Lookup<N> {
    /// The path exists.
    Found(Resolved<N>),
    /// Everything but the last component exists; `parent` is a directory.
    Missing {
        /// The directory that would hold the entry.
        parent: Resolved<N>,
        /// The missing last component.
        name: String,
        /// The path ended in `/`, so only a directory could be meant.
        trailing_slash: bool,
    },
}

/// Checks a user-supplied path: not empty, no NUL, not too long, no component over 255 bytes.
pub fn validate(path: &str) -> FsResult<()> {
    if path.is_empty() {
        return Err(FsError::new(Errno::Inval, "empty path"));
    }
    if path.contains('\0') {
        return Err(FsError::new(Errno::Inval, "path contains a NUL byte"));
    }
    if path.len() > MAX_PATH_LEN {
        return Err(FsError::new(
            Errno::NameTooLong,
            format!("path is {} bytes, longer than {MAX_PATH_LEN}", path.len()),
        ));
    }
    if let Some(long) = path.split('/').find(|c| c.len() > MAX_NAME_LEN) {
        return Err(FsError::new(
            Errno::NameTooLong,
            format!(
                "path component of {} bytes is longer than {MAX_NAME_LEN}",
                long.len()
            ),
        ));
    }
    Ok(())
}

/// Joins a canonical directory path and a name.
pub fn join(dir: &str, name: &str) -> String {
    if dir == "/" {
        format!("/{name}")
    } else {
        format!("{dir}/{name}")
    }
}

/// The canonical parent path and last name of a canonical path (`None` for the root).
pub fn split_last(path: &str) -> Option<(&str, &str)> {
    let cut = path.rfind('/')?;
    let name = path.get(cut + 1..)?;
    if name.is_empty() {
        return None;
    }
    let parent = if cut == 0 { "/" } else { path.get(..cut)? };
    Some((parent, name))
}

/// Resolves `path` (relative paths start at the root). With `follow_final` a symlink in the
/// last position is followed; a trailing `/` always follows and requires a directory.
pub fn resolve<NS: Namespace>(
    ns: &mut NS,
    path: &str,
    follow_final: bool,
) -> FsResult<Lookup<NS::Node>> {
    validate(path)?;
    let trailing_slash = path.len() > 1 && path.ends_with('/');
    let follow_final = follow_final || trailing_slash;
    // Components still to walk, last one first so `pop` yields them in order.
    let mut pending: Vec<String> = components(path).rev().map(String::from).collect();
    let root = ns.root()?;
    // The directories walked so far: (name, node); the root has an empty name.
    let mut chain: Vec<(String, NS::Node)> = Vec::new();
    chain.push((String::new(), root));
    let mut links = 0usize;
    while let Some(name) = pending.pop() {
        if name == "." {
            continue;
        }
        if name == ".." {
            if chain.len() > 1 {
                chain.pop();
            }
            continue;
        }
        let is_last = pending.is_empty();
        let dir_path = chain_path(&chain);
        let (_, dir) = chain
            .last()
            .ok_or_else(|| FsError::corrupt("empty resolution chain"))?;
        let dir = dir.clone();
        let Some(node) = ns.lookup(&dir, &dir_path, &name)? else {
            if is_last {
                return Ok(Lookup::Missing {
                    parent: Resolved {
                        path: dir_path,
                        node: dir,
                    },
                    name,
                    trailing_slash,
                });
            }
            return Err(FsError::new(
                Errno::NoEnt,
                format!("no such file or directory: {}", join(&dir_path, &name)),
            ));
        };
        match ns.file_type(&node) {
            FileType::Directory => chain.push((name, node)),
            FileType::Symlink if !is_last || follow_final => {
                links += 1;
                if links > MAX_SYMLINKS {
                    return Err(FsError::new(
                        Errno::Loop,
                        format!("more than {MAX_SYMLINKS} symlinks while resolving {path}"),
                    ));
                }
                let target = ns.read_link(&node)?;
                if target.is_empty() || target.contains('\0') {
                    return Err(FsError::new(
                        Errno::NoEnt,
                        format!("symlink {} has an unusable target", join(&dir_path, &name)),
                    ));
                }
                if let Some(long) = target.split('/').find(|c| c.len() > MAX_NAME_LEN) {
                    return Err(FsError::new(
                        Errno::NameTooLong,
                        format!("symlink target component of {} bytes", long.len()),
                    ));
                }
                if target.starts_with('/') {
                    chain.truncate(1);
                }
                pending.extend(components(&target).rev().map(String::from));
            }
            _ if is_last => {
                let path = join(&dir_path, &name);
                if trailing_slash {
                    return Err(FsError::new(
                        Errno::NotDir,
                        format!("not a directory: {path}"),
                    ));
                }
                return Ok(Lookup::Found(Resolved { path, node }));
            }
            _ => {
                return Err(FsError::new(
                    Errno::NotDir,
                    format!("not a directory: {}", join(&dir_path, &name)),
                ));
            }
        }
    }
    let path = chain_path(&chain);
    let (_, node) = chain
        .pop()
        .ok_or_else(|| FsError::corrupt("empty resolution chain"))?;
    Ok(Lookup::Found(Resolved { path, node }))
}

/// Resolves `path`, which must exist.
pub fn resolve_existing<NS: Namespace>(
    ns: &mut NS,
    path: &str,
    follow_final: bool,
) -> FsResult<Resolved<NS::Node>> {
    match resolve(ns, path, follow_final)? {
        Lookup::Found(found) => Ok(found),
        Lookup::Missing { parent, name, .. } => Err(FsError::new(
            Errno::NoEnt,
            format!("no such file or directory: {}", join(&parent.path, &name)),
        )),
    }
}

/// Non-empty components of a path (`a//b` is `a`, `b`).
fn components(path: &str) -> impl DoubleEndedIterator<Item = &str> {
    path.split('/').filter(|c| !c.is_empty())
}

/// The canonical path of a directory chain.
fn chain_path<N>(chain: &[(String, N)]) -> String {
    if chain.len() <= 1 {
        return String::from("/");
    }
    let mut out = String::new();
    for (name, _) in chain.iter().skip(1) {
        out.push('/');
        out.push_str(name);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_and_helpers() {
        assert_eq!(validate("").unwrap_err().code, Errno::Inval);
        assert_eq!(validate("a\0b").unwrap_err().code, Errno::Inval);
        assert!(validate("a//b").is_ok());
        assert!(validate(&"x".repeat(MAX_NAME_LEN)).is_ok());
        assert_eq!(
            validate(&"x".repeat(MAX_NAME_LEN + 1)).unwrap_err().code,
            Errno::NameTooLong
        );
        assert_eq!(
            validate(&"/a".repeat(2048)).unwrap_err().code,
            Errno::NameTooLong
        );
        assert_eq!(join("/", "a"), "/a");
        assert_eq!(join("/a", "b"), "/a/b");
        assert_eq!(split_last("/a/b"), Some(("/a", "b")));
        assert_eq!(split_last("/a"), Some(("/", "a")));
        assert_eq!(split_last("/"), None);
    }
}
