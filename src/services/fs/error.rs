//! Filesystem errors: a stable code (which the tools answer as `E_<CODE>: message`) plus a
//! human message saying what exactly was wrong.

use alloc::string::String;
use core::fmt;

/// The kinds of failure of the filesystem layer, named after the POSIX errors they match
/// (the tools answer each with the `ErrorCode` of the same name).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Errno {
    /// No such file or directory.
    NoEnt,
    /// A path component that must be a directory is not one.
    NotDir,
    /// The operation needs a non-directory but got a directory.
    IsDir,
    /// The entry already exists.
    Exist,
    /// The directory is not empty.
    NotEmpty,
    /// The RAM overlay's memory cap would be exceeded.
    NoSpc,
    /// Too many symlinks while resolving a path.
    Loop,
    /// A path component or path is too long.
    NameTooLong,
    /// The request itself is malformed (empty path, NUL byte, bad offset, …).
    Inval,
    /// The image uses a feature this reader does not implement.
    NotSup,
    /// The block device failed.
    Io,
    /// There is no filesystem: no disk, or no image on it.
    NoDev,
    /// The image contradicts itself or the format.
    Corrupt,
}

impl Errno {
    /// The code's name, e.g. `NOENT` (the tools answer `E_NOENT: …`).
    pub const fn as_str(self) -> &'static str {
        match self {
            Errno::NoEnt => "NOENT",
            Errno::NotDir => "NOTDIR",
            Errno::IsDir => "ISDIR",
            Errno::Exist => "EXIST",
            Errno::NotEmpty => "NOTEMPTY",
            Errno::NoSpc => "NOSPC",
            Errno::Loop => "LOOP",
            Errno::NameTooLong => "NAMETOOLONG",
            Errno::Inval => "INVAL",
            Errno::NotSup => "NOTSUP",
            Errno::Io => "IO",
            Errno::NoDev => "NODEV",
            Errno::Corrupt => "CORRUPT",
        }
    }
}

/// An error from the filesystem layer. `Display` gives `E_CODE: message`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FsError {
    /// What kind of failure this is.
    pub code: Errno,
    /// What exactly failed, for a human.
    pub message: String,
}

impl FsError {
    /// Builds an error from a code and a message.
    pub fn new(code: Errno, message: impl Into<String>) -> Self {
        FsError {
            code,
            message: message.into(),
        }
    }

    /// Shorthand for an [`Errno::Corrupt`] error.
    pub fn corrupt(message: impl Into<String>) -> Self {
        FsError::new(Errno::Corrupt, message)
    }
}

impl fmt::Display for FsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "E_{}: {}", self.code.as_str(), self.message)
    }
}

/// Result type of the filesystem layer.
pub type FsResult<T> = Result<T, FsError>;
