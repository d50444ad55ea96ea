//! Filesystem errors: a stable code (what tools put in front of `E_<CODE>: message`) plus a
//! human message saying what exactly was wrong.

use alloc::string::String;
use core::fmt;

/// The error codes the filesystem layer can produce. Tools print them verbatim.
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
    /// The image contradicts itself or the format.
    Corrupt,
}

impl ErrorCode {
    /// The code as tools print it, e.g. `E_NOENT`.
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorCode::NoEnt => "E_NOENT",
            ErrorCode::NotDir => "E_NOTDIR",
            ErrorCode::IsDir => "E_ISDIR",
            ErrorCode::Exist => "E_EXIST",
            ErrorCode::NotEmpty => "E_NOTEMPTY",
            ErrorCode::NoSpc => "E_NOSPC",
            ErrorCode::Loop => "E_LOOP",
            ErrorCode::NameTooLong => "E_NAMETOOLONG",
            ErrorCode::Inval => "E_INVAL",
            ErrorCode::NotSup => "E_NOTSUP",
            ErrorCode::Io => "E_IO",
            ErrorCode::Corrupt => "E_CORRUPT",
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

    /// The code string, e.g. `E_NOTSUP`.
    pub fn code_str(&self) -> &'static str {
        self.code.as_str()
    }
}

impl fmt::Display for FsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)
    }
}

/// Result type of the filesystem layer.
pub type FsResult<T> = Result<T, FsError>;
