//! The shell's long-running builtins: `sleep` waits on the clock across polls, `cat` reads
//! files and `ls` lists directories in bounded pieces per poll (a disk read per entry adds up on
//! big directories). They report progress and simply stop being stepped when the call is
//! cancelled (they hold nothing that needs releasing).

use super::output::Output;
use super::{Job, JobStep};
use crate::services::context::Services;
use crate::services::fs::overlay::FileHandle;
use crate::services::fs::stat::Stat;
use crate::services::fs::{Errno, FileType};
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use core::fmt::Write;

/// `sleep`: done once the clock passes the deadline.
pub struct Sleep {
    start_ms: u64,
    total_ms: u64,
    elapsed_ms: u64,
}

impl Sleep {
    pub fn new(now_ms: u64, total_ms: u64) -> Self {
        Sleep {
            start_ms: now_ms,
            total_ms,
            elapsed_ms: 0,
        }
    }
}

impl Job for Sleep {
    fn step(&mut self, _ctx: &mut Services, _out: &mut Output, now_ms: u64) -> JobStep {
        self.elapsed_ms = now_ms.saturating_sub(self.start_ms).min(self.total_ms);
        if self.elapsed_ms >= self.total_ms {
            JobStep::Done(0)
        } else {
            JobStep::Pending
        }
    }

    /// Milliseconds slept of the total.
    fn progress(&self) -> Option<(f64, f64)> {
        Some((self.elapsed_ms as f64, self.total_ms as f64))
    }
}

/// Most entries `ls` lists per directory.
pub const LS_MAX: usize = 4096;
/// Entries listed per step.
pub const LS_PAGE: usize = 128;

/// `ls`: each path in turn, a page of entries per step. A directory (or a symlink to one) is
/// listed; anything else is shown as itself.
pub struct Ls {
    paths: Vec<String>,
    long: bool,
    next: usize,
    /// Entries of the current directory listed so far.
    offset: usize,
    status: i32,
}

impl Ls {
    pub fn new(paths: Vec<String>, long: bool) -> Self {
        Ls {
            paths,
            long,
            next: 0,
            offset: 0,
            status: 0,
        }
    }

    fn next_path(&mut self) {
        self.next += 1;
        self.offset = 0;
    }
}

impl Job for Ls {
    fn step(&mut self, ctx: &mut Services, out: &mut Output, _now_ms: u64) -> JobStep {
        let Some(path) = self.paths.get(self.next).cloned() else {
            return JobStep::Done(self.status);
        };
        if out.room() == 0 {
            out.mark_truncated();
            return JobStep::Done(self.status);
        }
        let Some(fs) = ctx.fs.as_mut() else {
            out.push_str("ls: the filesystem went away\n");
            return JobStep::Done(1);
        };
        let limit = LS_PAGE.min(LS_MAX - self.offset);
        let listing = match fs.list(&path, self.offset, limit) {
            Ok(l) => l,
            Err(e) if e.code == Errno::NotDir && self.offset == 0 => {
                match fs.stat(&path) {
                    Ok(st) => ls_line(ctx, out, self.long, &path, &path, &st),
                    Err(e) => {
                        let _ = writeln!(out, "ls: {path}: {e}");
                        self.status = 1;
                    }
                }
                self.next_path();
                return JobStep::Pending;
            }
            Err(e) => {
                let _ = writeln!(out, "ls: {path}: {e}");
                self.status = 1;
                self.next_path();
                return JobStep::Pending;
            }
        };
        if self.offset == 0 && self.paths.len() > 1 {
            let sep = if self.next == 0 { "" } else { "\n" };
            let _ = writeln!(out, "{sep}{}:", listing.path);
        }
        for entry in &listing.entries {
            let full = crate::services::fs::path::join(&listing.path, entry.name);
            ls_line(ctx, out, self.long, entry.name, &full, &entry.stat);
        }
        self.offset += listing.entries.len();
        if listing.entries.is_empty() || self.offset >= listing.total.min(LS_MAX) {
            if listing.total > self.offset {
                let _ = writeln!(
                    out,
                    "... {} more entries (ls lists at most {LS_MAX})",
                    listing.total - self.offset
                );
            }
            self.next_path();
        }
        JobStep::Pending
    }

    /// Paths done of the paths given.
    fn progress(&self) -> Option<(f64, f64)> {
        Some((self.next as f64, self.paths.len() as f64))
    }
}

fn ls_line(ctx: &mut Services, out: &mut Output, long: bool, name: &str, full: &str, st: &Stat) {
    if !long {
        let _ = writeln!(out, "{name}");
        return;
    }
    let _ = write!(
        out,
        "{} {:>4} {:>4} {:>10} {}",
        st.mode_symbolic(),
        st.uid,
        st.gid,
        st.size,
        name
    );
    if st.file_type == FileType::Symlink
        && let Some(Ok(target)) = ctx.fs.as_mut().map(|fs| fs.readlink(full))
    {
        let _ = write!(out, " -> {target}");
    }
    out.push_str("\n");
}

/// Bytes `cat` reads per step: bounded work per poll, big enough to move a few MiB quickly.
pub const CAT_STEP: usize = 64 * 1024;
/// Bytes per file read.
const CAT_READ: usize = 16 * 1024;

/// One argument of `cat`: a file opened when the command started, or why it could not be.
enum Item {
    File { file: FileHandle, offset: u64 },
    Error(String),
}

/// `cat`: prints each file in order; a file that cannot be read prints an error and makes the
/// exit status 1, and the others are still printed.
pub struct Cat {
    items: Vec<Item>,
    next: usize,
    status: i32,
    done_bytes: u64,
    total_bytes: u64,
    buf: Vec<u8>,
}

impl Cat {
    /// Opens every file now, so the total is known for progress.
    pub fn new(ctx: &mut Services, paths: &[String]) -> Self {
        let mut items = Vec::with_capacity(paths.len());
        let mut total_bytes = 0u64;
        for p in paths {
            let item = match ctx.fs.as_mut().map(|fs| fs.open(p)) {
                Some(Ok(file)) => {
                    total_bytes = total_bytes.saturating_add(file.size());
                    Item::File { file, offset: 0 }
                }
                Some(Err(e)) => Item::Error(format!("cat: {p}: {e}\n")),
                None => Item::Error(format!("cat: {p}: no filesystem mounted\n")),
            };
            items.push(item);
        }
        Cat {
            items,
            next: 0,
            status: 0,
            done_bytes: 0,
            total_bytes,
            buf: Vec::new(),
        }
    }
}

impl Job for Cat {
    fn step(&mut self, ctx: &mut Services, out: &mut Output, _now_ms: u64) -> JobStep {
        let mut budget = CAT_STEP;
        while budget > 0 {
            let Some(item) = self.items.get_mut(self.next) else {
                return JobStep::Done(self.status);
            };
            match item {
                Item::Error(msg) => {
                    out.push_str(msg);
                    self.status = 1;
                    self.next += 1;
                }
                Item::File { file, offset } => {
                    if out.room() == 0 {
                        // Output full: the rest of the files is dropped, not read.
                        if *offset < file.size() {
                            out.mark_truncated();
                        }
                        if self.items[self.next + 1..].iter().any(|i| match i {
                            Item::File { file, .. } => file.size() > 0,
                            Item::Error(_) => true,
                        }) {
                            out.mark_truncated();
                        }
                        return JobStep::Done(self.status);
                    }
                    let want = CAT_READ.min(budget).min(out.room());
                    if self.buf.len() < want {
                        self.buf = vec![0; want];
                    }
                    let Some(fs) = ctx.fs.as_mut() else {
                        out.push_str("cat: the filesystem went away\n");
                        return JobStep::Done(1);
                    };
                    let Some(dst) = self.buf.get_mut(..want) else {
                        return JobStep::Done(1);
                    };
                    match fs.read_at(file, *offset, dst) {
                        Ok(0) => self.next += 1,
                        Ok(n) => {
                            out.push(dst.get(..n).unwrap_or(&[]));
                            *offset += n as u64;
                            self.done_bytes = self.done_bytes.saturating_add(n as u64);
                            budget = budget.saturating_sub(n);
                        }
                        Err(e) => {
                            out.push_str(&format!("cat: {}: {e}\n", file.path()));
                            self.status = 1;
                            self.next += 1;
                        }
                    }
                }
            }
        }
        JobStep::Pending
    }

    /// Bytes printed of the bytes the files held when opened.
    fn progress(&self) -> Option<(f64, f64)> {
        Some((self.done_bytes as f64, self.total_bytes as f64))
    }
}
