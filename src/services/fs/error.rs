//! Filesystem errors: a stable code (which the tools answer as `E_<CODE>: message`) plus a
//! human message saying what exactly was wrong.

use alloc::string::String;
use core::fmt;

/// The error codes the filesystem layer can produce.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorCode {
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

impl ErrorCode {
    /// The code's name, e.g. `NOENT` (the tools answer `E_NOENT: …`).
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorCode::NoEnt => "NOENT",
            ErrorCode::NotDir => "NOTDIR",
            ErrorCode::IsDir => "ISDIR",
            ErrorCode::Exist => "EXIST",
            ErrorCode::NotEmpty => "NOTEMPTY",
            ErrorCode::NoSpc => "NOSPC",
            ErrorCode::Loop => "LOOP",
            ErrorCode::NameTooLong => "NAMETOOLONG",
            ErrorCode::Inval => "INVAL",
            ErrorCode::NotSup => "NOTSUP",
            ErrorCode::Io => "IO",
            ErrorCode::NoDev => "NODEV",
            ErrorCode::Corrupt => "CORRUPT",
        }
    }
}

/// An error from the filesystem layer. `Display` gives `E_CODE: message`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FsError {
    /// What kind of failure this is.
    pub code: ErrorCode,
    /// What exactly failed, for a human.
    pub message: String,
}

impl FsError {
    /// Builds an error from a code and a message.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        FsError {
            code,
            message: message.into(),
        }
    }

    /// Shorthand for an [`ErrorCode::Corrupt`] error.
    pub fn corrupt(message: impl Into<String>) -> Self {
        FsError::new(ErrorCode::Corrupt, message)
    }

    /// The code's name, e.g. `NOTSUP`.
    pub fn code_str(&self) -> &'static str {
        self.code.as_str()
    }
}

impl fmt::Display for FsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "E_{}: {}", self.code.as_str(), self.message)
    }
}

/// Result type of the filesystem layer.
pub type FsResult<T> = Result<T, FsError>;
