//! The RAM overlay above the EROFS image, and the merged view every file tool uses.
//!
//! Upper entries live in a map keyed by canonical path: a file stores its contents, a directory
//! is a marker (always opaque: nothing of the image shows through it), a whiteout hides the image
//! entry at its path and everything below it. The image itself is never written.
//!
//! Memory is capped (`mcp.overlay_max`, default [`DEFAULT_OVERLAY_MAX`]): each upper entry costs
//! its path length + [`ENTRY_OVERHEAD`] + its contents. An operation that would exceed the cap
//! fails with `E_NOSPC` and changes nothing.

use alloc::borrow::Cow;
use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::ops::{Bound, ControlFlow};

use super::erofs::{Erofs, Inode};
use super::error::{Errno, FsError, FsResult};
use super::listing::{ListEntries, Listing};
use super::path::{self, Lookup, Namespace, Resolved};
use super::stat::{FileType, Origin, Stat};
use crate::hil::block::BlockDevice;

/// Default overlay memory cap when `mcp.overlay_max` is unset: 4 MiB.
pub const DEFAULT_OVERLAY_MAX: usize = 4 * 1024 * 1024;
/// Bookkeeping charged per upper entry on top of its path and contents.
pub const ENTRY_OVERHEAD: usize = 64;
/// Mode reported for overlay files.
pub const UPPER_FILE_MODE: u32 = 0o100_644;
/// Mode reported for overlay directories.
pub const UPPER_DIR_MODE: u32 = 0o040_755;
/// Entries a listing makes room for at once; a longer page grows as it fills.
const LIST_ROOM: usize = 64;

/// Parses a `mcp.overlay_max` value: bytes in decimal, optionally with a `K` or `M` suffix
/// (KiB, MiB). Zero is allowed (a read-only view).
pub fn parse_overlay_max(value: &str) -> FsResult<usize> {
    let v = value.trim();
    let head = v.get(..v.len().saturating_sub(1)).unwrap_or("");
    let (digits, unit) = match v.as_bytes().last() {
        Some(b'k' | b'K') => (head, 1024usize),
        Some(b'm' | b'M') => (head, 1024 * 1024),
        _ => (v, 1),
    };
    digits
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_mul(unit))
        .ok_or_else(|| {
            FsError::new(
                Errno::Inval,
                format!(
                    "mcp.overlay_max {value:?} is not a size in bytes (e.g. 4194304, 4096K, 4M)"
                ),
            )
        })
}

/// An upper-layer entry.
enum Upper {
    File(Vec<u8>),
    Dir,
    Whiteout,
}

impl Upper {
    fn cost(&self, key: &str) -> usize {
        let data = match self {
            Upper::File(c) => c.len(),
            Upper::Dir | Upper::Whiteout => 0,
        };
        key.len() + ENTRY_OVERHEAD + data
    }
}

/// A resolved entry of the merged view.
#[derive(Clone, Debug)]
pub enum Node {
    /// An entry of the image, visible through the overlay.
    Lower(Inode),
    /// An overlay file.
    UpperFile,
    /// An overlay directory.
    UpperDir,
}

/// How [`Overlay::write`] combines `data` with an existing file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteMode {
    /// Replace the whole contents with `data`.
    Truncate,
    /// Add `data` at the end.
    Append,
    /// Overwrite at this byte offset, keeping the rest; a gap past the end reads as zeros.
    At(u64),
}

/// What a successful write did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteOutcome {
    /// Canonical path of the file written (after following symlinks).
    pub path: String,
    /// The file's size afterwards.
    pub size: u64,
    /// Whether the file did not exist before.
    pub created: bool,
}

/// An open regular file, for streaming reads in pieces without resolving the path each time.
#[derive(Clone, Debug)]
pub struct FileHandle {
    path: String,
    lower: Option<Inode>,
    size: u64,
}

impl FileHandle {
    /// Canonical path of the file.
    pub fn path(&self) -> &str {
        &self.path
    }
    /// Size when opened.
    pub fn size(&self) -> u64 {
        self.size
    }
    /// Which layer the file is read from.
    pub fn origin(&self) -> Origin {
        if self.lower.is_some() {
            Origin::Erofs
        } else {
            Origin::Overlay
        }
    }
}

/// Overlay memory use, for `status`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OverlayUsage {
    /// Bytes charged.
    pub used: usize,
    /// The cap.
    pub cap: usize,
    /// Upper entries (files, directories, whiteouts).
    pub entries: usize,
}

/// A child seen while merging a directory.
#[derive(Clone, Copy)]
enum Child {
    Lower(u64),
    UpperFile(u64),
    UpperDir,
}

/// The merged view: an optional EROFS image below, the RAM overlay above.
pub struct Overlay<D> {
    lower: Option<Erofs<D>>,
    upper: BTreeMap<String, Upper>,
    used: usize,
    cap: usize,
}

impl<D: BlockDevice> Overlay<D> {
    /// A merged view over `lower` (or over nothing: an empty root directory) holding at most
    /// `cap` bytes of overlay data.
    pub fn new(lower: Option<Erofs<D>>, cap: usize) -> Self {
        Overlay {
            lower,
            upper: BTreeMap::new(),
            used: 0,
            cap,
        }
    }

    /// Lowers the cap to `cap` if it is above it: the memory plan's share of the heap, which a
    /// small heap makes smaller than `mcp.overlay_max`. Nothing stored yet is dropped.
    pub fn limit_cap(&mut self, cap: usize) {
        self.cap = self.cap.min(cap);
    }

    /// The image below, for its superblock and cache counters.
    pub fn lower(&self) -> Option<&Erofs<D>> {
        self.lower.as_ref()
    }

    /// The image below, mutable (raw device reads for `block.read`).
    pub fn lower_mut(&mut self) -> Option<&mut Erofs<D>> {
        self.lower.as_mut()
    }

    /// Memory use and cap.
    pub fn usage(&self) -> OverlayUsage {
        OverlayUsage {
            used: self.used,
            cap: self.cap,
            entries: self.upper.len(),
        }
    }

    /// Resolves `path` in the merged view.
    pub fn resolve(&mut self, path: &str, follow_final: bool) -> FsResult<Resolved<Node>> {
        path::resolve_existing(self, path, follow_final)
    }

    /// Metadata of `path`; a final symlink is not followed.
    pub fn stat(&mut self, path: &str) -> FsResult<Stat> {
        let r = self.resolve(path, false)?;
        Ok(self.node_stat(&r))
    }

    /// The target of the symlink at `path`.
    pub fn readlink(&mut self, path: &str) -> FsResult<String> {
        let r = self.resolve(path, false)?;
        match &r.node {
            Node::Lower(inode) if inode.file_type == FileType::Symlink => {
                self.lower_fs()?.read_link(inode)
            }
            _ => Err(FsError::new(
                Errno::Inval,
                format!("not a symlink: {}", r.path),
            )),
        }
    }

    /// Opens the regular file at `path` (symlinks followed) for [`Overlay::read_at`].
    pub fn open(&mut self, path: &str) -> FsResult<FileHandle> {
        let r = self.resolve(path, true)?;
        match (self.file_type(&r.node), r.node) {
            (FileType::Regular, Node::Lower(inode)) => Ok(FileHandle {
                path: r.path,
                size: inode.size,
                lower: Some(inode),
            }),
            (FileType::Regular, _) => {
                let size = self.upper_len(&r.path);
                Ok(FileHandle {
                    path: r.path,
                    lower: None,
                    size,
                })
            }
            (FileType::Directory, _) => Err(FsError::new(
                Errno::IsDir,
                format!("is a directory: {}", r.path),
            )),
            _ => Err(FsError::new(
                Errno::Inval,
                format!("not a regular file: {}", r.path),
            )),
        }
    }

    /// Reads up to `buf.len()` bytes of an open file at `offset`; 0 at end of file.
    pub fn read_at(&mut self, file: &FileHandle, offset: u64, buf: &mut [u8]) -> FsResult<usize> {
        if let Some(inode) = &file.lower {
            return self.lower_fs()?.read_at(inode, offset, buf);
        }
        let Some(Upper::File(content)) = self.upper.get(&file.path) else {
            return Err(FsError::new(
                Errno::NoEnt,
                format!("file was removed: {}", file.path),
            ));
        };
        let start = usize::try_from(offset)
            .unwrap_or(usize::MAX)
            .min(content.len());
        let src = content.get(start..).unwrap_or(&[]);
        let n = src.len().min(buf.len());
        if let (Some(dst), Some(src)) = (buf.get_mut(..n), src.get(..n)) {
            dst.copy_from_slice(src);
        }
        Ok(n)
    }

    /// Opens `path` and reads up to `buf.len()` bytes at `offset`.
    pub fn read(&mut self, path: &str, offset: u64, buf: &mut [u8]) -> FsResult<usize> {
        let file = self.open(path)?;
        self.read_at(&file, offset, buf)
    }

    /// Writes `data` to the file at `path` (symlinks followed), creating it if its parent
    /// directory exists. A file of the image is copied up first unless `mode` is
    /// [`WriteMode::Truncate`].
    pub fn write(&mut self, path: &str, data: &[u8], mode: WriteMode) -> FsResult<WriteOutcome> {
        let (key, lower, created) = match path::resolve(self, path, true)? {
            Lookup::Found(r) => match r.node {
                Node::UpperFile => (r.path, None, false),
                Node::Lower(inode) if inode.file_type == FileType::Regular => {
                    (r.path, Some(inode), false)
                }
                Node::Lower(inode) if inode.file_type != FileType::Directory => {
                    return Err(FsError::new(
                        Errno::Inval,
                        format!("not a regular file: {}", r.path),
                    ));
                }
                _ => {
                    return Err(FsError::new(
                        Errno::IsDir,
                        format!("is a directory: {}", r.path),
                    ));
                }
            },
            Lookup::Missing {
                parent,
                name,
                trailing_slash,
            } => {
                let key = path::join(&parent.path, &name);
                if trailing_slash {
                    return Err(FsError::new(
                        Errno::IsDir,
                        format!("path names a directory: {key}/"),
                    ));
                }
                (key, None, true)
            }
        };
        let old_len = match &lower {
            Some(inode) => inode.size,
            None => self.upper_len(&key),
        };
        let data_len = data.len() as u64;
        let new_len = match mode {
            WriteMode::Truncate => Some(data_len),
            WriteMode::Append => old_len.checked_add(data_len),
            WriteMode::At(off) => off.checked_add(data_len).map(|end| end.max(old_len)),
        }
        .ok_or_else(|| FsError::new(Errno::Inval, "write offset overflows"))?;
        let old_cost = self.upper.get(&key).map_or(0, |u| u.cost(&key));
        let new_cost = (key.len() + ENTRY_OVERHEAD) as u64 + new_len;
        self.check_space(old_cost, new_cost)?;
        let new_len = new_len as usize; // fits: it is below the cap, a usize.

        // Nothing in the map changes until everything that can fail has succeeded.
        let nospc = |_| FsError::new(Errno::NoSpc, "out of memory for the overlay");
        let size = if let Some(Upper::File(content)) = self.upper.get_mut(&key) {
            content
                .try_reserve(new_len.saturating_sub(content.len()))
                .map_err(nospc)?;
            apply_write(content, mode, data);
            content.len()
        } else {
            let mut content = Vec::new();
            content.try_reserve_exact(new_len).map_err(nospc)?;
            if let (Some(inode), false) = (&lower, mode == WriteMode::Truncate) {
                content.resize(inode.size as usize, 0);
                let n = self.lower_fs()?.read_at(inode, 0, &mut content)?;
                if n != content.len() {
                    return Err(FsError::new(
                        Errno::Io,
                        format!("copy-up of {key} came up short"),
                    ));
                }
            }
            apply_write(&mut content, mode, data);
            let size = content.len();
            self.upper.insert(key.clone(), Upper::File(content));
            size
        };
        self.used = self.used.saturating_sub(old_cost) + (key.len() + ENTRY_OVERHEAD + size);
        Ok(WriteOutcome {
            path: key,
            size: size as u64,
            created,
        })
    }

    /// Creates the directory `path`; its parent must exist and `path` must not.
    pub fn mkdir(&mut self, path: &str) -> FsResult<String> {
        match path::resolve(self, path, false)? {
            Lookup::Found(r) => Err(FsError::new(
                Errno::Exist,
                format!("already exists: {}", r.path),
            )),
            Lookup::Missing { parent, name, .. } => {
                let key = path::join(&parent.path, &name);
                let old_cost = self.upper.get(&key).map_or(0, |u| u.cost(&key));
                let new_cost = Upper::Dir.cost(&key);
                self.check_space(old_cost, new_cost as u64)?;
                self.used = self.used.saturating_sub(old_cost) + new_cost;
                self.upper.insert(key.clone(), Upper::Dir);
                Ok(key)
            }
        }
    }

    /// Removes `path` (a final symlink itself, not its target). Overlay entries are dropped,
    /// image entries are whited out. A non-empty directory needs `recursive`.
    pub fn remove(&mut self, path: &str, recursive: bool) -> FsResult<()> {
        let r = self.resolve(path, false)?;
        let Some((parent_path, name)) = path::split_last(&r.path) else {
            return Err(FsError::new(
                Errno::Inval,
                "cannot remove the root directory",
            ));
        };
        if self.is_dir(&r.node) && !recursive && !self.is_empty_dir(&r)? {
            return Err(FsError::new(
                Errno::NotEmpty,
                format!("directory not empty: {}", r.path),
            ));
        }
        // The image entry shows through unless whited out when the parent is an image directory
        // holding this name.
        let needs_whiteout = match &r.node {
            Node::Lower(_) => true,
            Node::UpperFile | Node::UpperDir => {
                let parent = self.resolve(parent_path, true)?;
                match &parent.node {
                    Node::Lower(dir) => self.lower_fs()?.lookup(dir, name)?.is_some(),
                    _ => false,
                }
            }
        };
        let prefix = format!("{}/", r.path);
        let below: Vec<String> = self
            .upper
            .range::<str, _>((Bound::Included(prefix.as_str()), Bound::Unbounded))
            .take_while(|(k, _)| k.starts_with(prefix.as_str()))
            .map(|(k, _)| k.clone())
            .collect();
        let mut freed: usize = below
            .iter()
            .filter_map(|k| self.upper.get(k).map(|u| u.cost(k)))
            .sum();
        freed += self.upper.get(&r.path).map_or(0, |u| u.cost(&r.path));
        let added = if needs_whiteout {
            Upper::Whiteout.cost(&r.path)
        } else {
            0
        };
        self.check_space(freed, added as u64)?;
        for k in &below {
            self.upper.remove(k);
        }
        if needs_whiteout {
            self.upper.insert(r.path.clone(), Upper::Whiteout);
        } else {
            self.upper.remove(&r.path);
        }
        self.used = self.used.saturating_sub(freed) + added;
        Ok(())
    }

    /// Lists the directory at `path` (symlinks followed): entries `offset .. offset + limit` of
    /// the merged listing, sorted by name, plus the total count.
    pub fn list(&mut self, path: &str, offset: usize, limit: usize) -> FsResult<Listing> {
        let dir = self.resolve(path, true)?;
        if !self.is_dir(&dir.node) {
            return Err(FsError::new(
                Errno::NotDir,
                format!("not a directory: {}", dir.path),
            ));
        }
        let mut entries = ListEntries::with_capacity(limit.min(LIST_ROOM));
        let mut total = 0usize;
        self.merged_children(&dir, |name, child| {
            if total >= offset && entries.len() < limit {
                // An image entry's stat is read once the walk is over (the walk borrows the
                // cache); until then it holds only the inode's nid, in `ino`.
                let stat = match child {
                    Child::Lower(nid) => Stat {
                        ino: nid,
                        origin: Origin::Erofs,
                        ..upper_file_stat(0)
                    },
                    Child::UpperFile(len) => upper_file_stat(len),
                    Child::UpperDir => upper_dir_stat(),
                };
                entries.push(name, stat);
            }
            total += 1;
            ControlFlow::Continue(())
        })?;
        for stat in entries.stats_mut() {
            if stat.origin == Origin::Erofs {
                *stat = self.lower_fs()?.inode(stat.ino)?.stat();
            }
        }
        Ok(Listing {
            path: dir.path,
            entries,
            total,
        })
    }

    /// Metadata of a resolved node.
    pub fn node_stat(&self, r: &Resolved<Node>) -> Stat {
        match &r.node {
            Node::Lower(inode) => inode.stat(),
            Node::UpperFile => upper_file_stat(self.upper_len(&r.path)),
            Node::UpperDir => upper_dir_stat(),
        }
    }

    fn is_dir(&self, node: &Node) -> bool {
        match node {
            Node::Lower(inode) => inode.file_type == FileType::Directory,
            Node::UpperDir => true,
            Node::UpperFile => false,
        }
    }

    fn is_empty_dir(&mut self, dir: &Resolved<Node>) -> FsResult<bool> {
        let mut empty = true;
        self.merged_children(dir, |_, _| {
            empty = false;
            ControlFlow::Break(())
        })?;
        Ok(empty)
    }

    fn upper_len(&self, key: &str) -> u64 {
        match self.upper.get(key) {
            Some(Upper::File(c)) => c.len() as u64,
            _ => 0,
        }
    }

    fn lower_fs(&mut self) -> FsResult<&mut Erofs<D>> {
        self.lower.as_mut().ok_or_else(no_image)
    }

    /// Fails with `E_NOSPC` unless replacing `old_cost` bytes by `new_cost` fits the cap.
    fn check_space(&self, old_cost: usize, new_cost: u64) -> FsResult<()> {
        let base = (self.used - old_cost.min(self.used)) as u64;
        let after = base.saturating_add(new_cost);
        if after > self.cap as u64 {
            return Err(FsError::new(
                Errno::NoSpc,
                format!(
                    "overlay full: this needs {after} bytes, the cap (mcp.overlay_max) is {}; {} in use",
                    self.cap, self.used
                ),
            ));
        }
        Ok(())
    }

    /// Calls `f` with each visible child of `dir`, merged and sorted by name.
    fn merged_children(
        &mut self,
        dir: &Resolved<Node>,
        mut f: impl FnMut(&str, Child) -> ControlFlow<()>,
    ) -> FsResult<()> {
        let mut uppers = upper_children(&self.upper, &dir.path).peekable();
        let mut stopped = false;
        if let Node::Lower(inode) = &dir.node {
            let lower = self.lower.as_mut().ok_or_else(no_image)?;
            lower.for_each_entry(inode, |e| {
                if e.name == b"." || e.name == b".." {
                    return ControlFlow::Continue(());
                }
                while let Some(&(name, child)) = uppers.peek() {
                    if name.as_bytes() > e.name {
                        break;
                    }
                    uppers.next();
                    let shadows = name.as_bytes() == e.name;
                    if let Some(child) = child
                        && f(name, child).is_break()
                    {
                        stopped = true;
                        return ControlFlow::Break(());
                    }
                    if shadows {
                        return ControlFlow::Continue(());
                    }
                }
                // Names are nearly always ASCII: told without the lossy decoder's walk.
                let name = match irix7_kmem::ascii(e.name) {
                    Some(text) => Cow::Borrowed(text),
                    None => String::from_utf8_lossy(e.name),
                };
                if f(&name, Child::Lower(e.nid)).is_break() {
                    stopped = true;
                    return ControlFlow::Break(());
                }
                ControlFlow::Continue(())
            })?;
        }
        if !stopped {
            for (name, child) in uppers {
                if let Some(child) = child
                    && f(name, child).is_break()
                {
                    break;
                }
            }
        }
        Ok(())
    }
}

/// The upper entries directly in the directory `dir` (a canonical path), by name in order; a
/// whiteout has no child. Borrowed from the map: walking it takes no memory.
fn upper_children<'m>(
    upper: &'m BTreeMap<String, Upper>,
    dir: &'m str,
) -> impl Iterator<Item = (&'m str, Option<Child>)> + 'm {
    // Keys below `dir` are `dir` + `/` + name; the root's are `/` + name.
    let base = if dir == "/" { "" } else { dir };
    upper
        .range::<str, _>((Bound::Excluded(base), Bound::Unbounded))
        // Siblings such as `dir-x` and `dir.x` sort between `dir` and `dir/`.
        .skip_while(move |(k, _)| {
            k.strip_prefix(base)
                .and_then(|rest| rest.bytes().next())
                .is_some_and(|b| b < b'/')
        })
        .map_while(move |(k, v)| Some((k.strip_prefix(base)?.strip_prefix('/')?, v)))
        .filter(|(name, _)| !name.contains('/'))
        .map(|(name, v)| {
            let child = match v {
                Upper::File(c) => Some(Child::UpperFile(c.len() as u64)),
                Upper::Dir => Some(Child::UpperDir),
                Upper::Whiteout => None,
            };
            (name, child)
        })
}

fn no_image() -> FsError {
    FsError::new(Errno::Io, "no filesystem image is mounted")
}

/// Applies one write to file contents whose capacity was already reserved.
fn apply_write(content: &mut Vec<u8>, mode: WriteMode, data: &[u8]) {
    let at = match mode {
        WriteMode::Truncate => {
            content.clear();
            0
        }
        WriteMode::Append => content.len(),
        WriteMode::At(off) => off as usize,
    };
    let end = at + data.len();
    if content.len() < end {
        content.resize(end, 0);
    }
    if let Some(dst) = content.get_mut(at..end) {
        dst.copy_from_slice(data);
    }
}

fn upper_file_stat(size: u64) -> Stat {
    Stat {
        file_type: FileType::Regular,
        mode: UPPER_FILE_MODE,
        size,
        uid: 0,
        gid: 0,
        nlink: 1,
        mtime: 0,
        ino: 0,
        rdev: 0,
        origin: Origin::Overlay,
    }
}

fn upper_dir_stat() -> Stat {
    Stat {
        file_type: FileType::Directory,
        mode: UPPER_DIR_MODE,
        size: 0,
        ..upper_file_stat(0)
    }
}

impl<D: BlockDevice> Namespace for Overlay<D> {
    type Node = Node;

    fn root(&mut self) -> FsResult<Node> {
        Ok(match &self.lower {
            Some(fs) => Node::Lower(fs.root().clone()),
            None => Node::UpperDir,
        })
    }

    fn file_type(&self, node: &Node) -> FileType {
        match node {
            Node::Lower(inode) => inode.file_type,
            Node::UpperFile => FileType::Regular,
            Node::UpperDir => FileType::Directory,
        }
    }

    fn lookup(&mut self, dir: &Node, path: &str, name: &str) -> FsResult<Option<Node>> {
        match self.upper.get(path) {
            Some(Upper::Whiteout) => return Ok(None),
            Some(Upper::File(_)) => return Ok(Some(Node::UpperFile)),
            Some(Upper::Dir) => return Ok(Some(Node::UpperDir)),
            None => {}
        }
        match dir {
            Node::Lower(inode) => Ok(self.lower_fs()?.lookup(inode, name)?.map(Node::Lower)),
            Node::UpperDir | Node::UpperFile => Ok(None),
        }
    }

    fn read_link(&mut self, node: &Node) -> FsResult<String> {
        match node {
            Node::Lower(inode) => self.lower_fs()?.read_link(inode),
            _ => Err(FsError::new(
                Errno::Inval,
                "overlay entries are never symlinks",
            )),
        }
    }
}
