//! Path resolution shared by the EROFS reader and the merged view: validation, `.` and `..`
//! (never above the root), symlinks with a loop limit, and a canonical path for the result.
//!
//! Resolution builds the canonical path of the directories it walked through; `..` goes back one
//! directory in it, so after following a symlink `..` goes to the parent of where the link led,
//! as on Unix.

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
    /// Looks `name` up in the directory `dir`; `path` is the canonical path the entry would
    /// have (the directory's and the name joined).
    fn lookup(&mut self, dir: &Self::Node, path: &str, name: &str) -> FsResult<Option<Self::Node>>;
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
    // One pass over the bytes for both the NUL and the longest component.
    let (mut nul, mut run, mut longest) = (false, 0usize, 0usize);
    for &b in path.as_bytes() {
        match b {
            0 => nul = true,
            b'/' => run = 0,
            _ => {}
        }
        if b != b'/' {
            run += 1;
            longest = longest.max(run);
        }
    }
    if nul {
        return Err(FsError::new(Errno::Inval, "path contains a NUL byte"));
    }
    if path.len() > MAX_PATH_LEN {
        return Err(FsError::new(
            Errno::NameTooLong,
            format!("path is {} bytes, longer than {MAX_PATH_LEN}", path.len()),
        ));
    }
    if longest > MAX_NAME_LEN {
        let len = path
            .split('/')
            .find(|c| c.len() > MAX_NAME_LEN)
            .map_or(longest, str::len);
        return Err(FsError::new(
            Errno::NameTooLong,
            format!("path component of {len} bytes is longer than {MAX_NAME_LEN}"),
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
///
/// The walk borrows its components from `path`, and the canonical path it builds is the one
/// allocation of a resolution that follows no symlink and takes no `..` (a symlink's target is
/// read into a `String`, the rest of the walk appended to it). The directories above the current
/// one are kept only when a `..` is still to come.
pub fn resolve<NS: Namespace>(
    ns: &mut NS,
    path: &str,
    follow_final: bool,
) -> FsResult<Lookup<NS::Node>> {
    validate(path)?;
    let trailing_slash = path.len() > 1 && path.ends_with('/');
    let follow_final = follow_final || trailing_slash;
    // The canonical path walked so far: empty at the root, else `/a/b`.
    let mut canon = String::with_capacity(path.len() + 1);
    let mut dir = ns.root()?;
    // The directories above `dir`, root first, while `..` may need them.
    let mut above: Option<Vec<NS::Node>> = has_dotdot(path).then(Vec::new);
    // The text still walked from byte `at`: `path`, or a symlink's target and what followed it.
    let mut expanded: Option<String> = None;
    let mut at = 0usize;
    let mut links = 0usize;
    loop {
        let text = expanded.as_deref().unwrap_or(path);
        let Some((name, next)) = next_component(text, at) else {
            break;
        };
        at = next;
        if name == "." {
            continue;
        }
        if name == ".." {
            if let Some(cut) = canon.rfind('/') {
                canon.truncate(cut);
                dir = match above.as_mut().and_then(Vec::pop) {
                    Some(parent) => parent,
                    None => walk(ns, &canon, None)?,
                };
            }
            continue;
        }
        let is_last = next_component(text, at).is_none();
        let dir_len = canon.len();
        canon.push('/');
        canon.push_str(name);
        let Some(node) = ns.lookup(&dir, &canon, name)? else {
            if is_last {
                let name = String::from(name);
                canon.truncate(dir_len);
                return Ok(Lookup::Missing {
                    parent: Resolved {
                        path: root_if_empty(canon),
                        node: dir,
                    },
                    name,
                    trailing_slash,
                });
            }
            return Err(FsError::new(
                Errno::NoEnt,
                format!("no such file or directory: {canon}"),
            ));
        };
        match ns.file_type(&node) {
            FileType::Directory => {
                let parent = core::mem::replace(&mut dir, node);
                if let Some(above) = above.as_mut() {
                    above.push(parent);
                }
            }
            FileType::Symlink if !is_last || follow_final => {
                links += 1;
                if links > MAX_SYMLINKS {
                    return Err(FsError::new(
                        Errno::Loop,
                        format!("more than {MAX_SYMLINKS} symlinks while resolving {path}"),
                    ));
                }
                let mut target = ns.read_link(&node)?;
                if target.is_empty() || target.contains('\0') {
                    return Err(FsError::new(
                        Errno::NoEnt,
                        format!("symlink {canon} has an unusable target"),
                    ));
                }
                if let Some(long) = target.split('/').find(|c| c.len() > MAX_NAME_LEN) {
                    return Err(FsError::new(
                        Errno::NameTooLong,
                        format!("symlink target component of {} bytes", long.len()),
                    ));
                }
                canon.truncate(dir_len);
                if target.starts_with('/') {
                    canon.clear();
                    dir = ns.root()?;
                    if let Some(above) = above.as_mut() {
                        above.clear();
                    }
                }
                if above.is_none() && has_dotdot(&target) {
                    let mut kept = Vec::new();
                    walk(ns, &canon, Some(&mut kept))?;
                    above = Some(kept);
                }
                if let Some(rest) = text.get(at..).filter(|r| !r.is_empty()) {
                    target.push('/');
                    target.push_str(rest);
                }
                expanded = Some(target);
                at = 0;
            }
            _ if is_last => {
                if trailing_slash {
                    return Err(FsError::new(
                        Errno::NotDir,
                        format!("not a directory: {canon}"),
                    ));
                }
                return Ok(Lookup::Found(Resolved { path: canon, node }));
            }
            _ => {
                return Err(FsError::new(
                    Errno::NotDir,
                    format!("not a directory: {canon}"),
                ));
            }
        }
    }
    Ok(Lookup::Found(Resolved {
        path: root_if_empty(canon),
        node: dir,
    }))
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

/// The first non-empty component of `text` at or after byte `at`, and the byte after it
/// (`a//b` is `a`, `b`).
fn next_component(text: &str, at: usize) -> Option<(&str, usize)> {
    let bytes = text.as_bytes();
    let start = at + bytes.get(at..)?.iter().position(|&b| b != b'/')?;
    let tail = bytes.get(start..)?;
    let end = start + tail.iter().position(|&b| b == b'/').unwrap_or(tail.len());
    Some((text.get(start..end)?, end))
}

/// Whether `text` has a `..` component.
fn has_dotdot(text: &str) -> bool {
    let mut at = 0usize;
    while let Some((name, end)) = next_component(text, at) {
        if name == ".." {
            return true;
        }
        at = end;
    }
    false
}

/// The canonical path of the root is `/`.
fn root_if_empty(mut canon: String) -> String {
    if canon.is_empty() {
        canon.push('/');
    }
    canon
}

/// Walks the canonical directory path `canon` (empty or `/a/b`) again from the root and returns
/// its directory, pushing the directories above it onto `above`, root first: for a `..` whose
/// directories were not kept because none was expected.
fn walk<NS: Namespace>(
    ns: &mut NS,
    canon: &str,
    mut above: Option<&mut Vec<NS::Node>>,
) -> FsResult<NS::Node> {
    let mut node = ns.root()?;
    let mut at = 0usize;
    while let Some((name, end)) = next_component(canon, at) {
        at = end;
        let path = canon.get(..end).unwrap_or(canon);
        let child = ns.lookup(&node, path, name)?.ok_or_else(|| {
            FsError::corrupt(format!("{path} went away while a path was resolved"))
        })?;
        let parent = core::mem::replace(&mut node, child);
        if let Some(above) = above.as_mut() {
            above.push(parent);
        }
    }
    Ok(node)
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
