//! The checks a path passes before it reaches the filesystem, so a malformed path gets an error
//! that says what is wrong with it rather than a lenient reading.

use super::erofs::MAX_NAME_LEN;
use super::error::{Errno, FsError, FsResult};
use super::path::MAX_PATH_LEN;
use alloc::format;
use alloc::string::String;

/// Checks a path before it reaches the filesystem, so malformed paths get an error saying what
/// is wrong rather than a lenient reading: empty, NUL, too long, an empty component (`a//b`), or
/// `..` climbing above the root (counted on the text, before symlinks).
pub fn check_path(path: &str) -> FsResult<()> {
    let inval = |m: String| Err(FsError::new(Errno::Inval, m));
    if path.is_empty() {
        return inval("the path is empty; use / for the root".into());
    }
    if let Some(i) = path.find('\0') {
        return inval(format!("the path has a NUL byte at byte {i}"));
    }
    if path.len() > MAX_PATH_LEN {
        return Err(FsError::new(
            Errno::NameTooLong,
            format!(
                "the path is {} bytes; the limit is {MAX_PATH_LEN}",
                path.len()
            ),
        ));
    }
    let body = path.strip_prefix('/').unwrap_or(path);
    let body = body.strip_suffix('/').unwrap_or(body);
    if body.is_empty() {
        return Ok(()); // "/" (or "//"): the root.
    }
    let mut depth = 0usize;
    for c in body.split('/') {
        match c {
            "" => return inval(format!("empty component (\"//\") in {path:?}")),
            "." => {}
            ".." => match depth.checked_sub(1) {
                Some(d) => depth = d,
                None => return inval(format!("\"..\" goes above the root in {path:?}")),
            },
            _ if c.len() > MAX_NAME_LEN => {
                return Err(FsError::new(
                    Errno::NameTooLong,
                    format!(
                        "a component of {} bytes; the limit is {}",
                        c.len(),
                        MAX_NAME_LEN
                    ),
                ));
            }
            _ => depth += 1,
        }
    }
    Ok(())
}
