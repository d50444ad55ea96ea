//! Every `E_<CODE>` a tool can answer with, in one enum: a tool's result text is
//! `E_<CODE>: message`, its declared list in `tools/list`'s catalogue names these, and a typo is
//! a compile error rather than a code no client has heard of.

use core::fmt;

/// The codes of `isError` results; [`ErrorCode::meaning`] says what each means.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ErrorCode {
    Inval,
    Range,
    Align,
    TooLarge,
    NoEnt,
    NotDir,
    IsDir,
    Exist,
    NotEmpty,
    NoSpc,
    Loop,
    NameTooLong,
    NotFound,
    NoDev,
    NoSys,
    NotSup,
    Io,
    Corrupt,
    Encoding,
    Busy,
    Timeout,
    Client,
    Perm,
    Internal,
    InvalidParams,
}

impl ErrorCode {
    /// Every code, in declaration order (for the catalogue).
    pub const ALL: &'static [ErrorCode] = &[
        ErrorCode::Inval,
        ErrorCode::Range,
        ErrorCode::Align,
        ErrorCode::TooLarge,
        ErrorCode::NoEnt,
        ErrorCode::NotDir,
        ErrorCode::IsDir,
        ErrorCode::Exist,
        ErrorCode::NotEmpty,
        ErrorCode::NoSpc,
        ErrorCode::Loop,
        ErrorCode::NameTooLong,
        ErrorCode::NotFound,
        ErrorCode::NoDev,
        ErrorCode::NoSys,
        ErrorCode::NotSup,
        ErrorCode::Io,
        ErrorCode::Corrupt,
        ErrorCode::Encoding,
        ErrorCode::Busy,
        ErrorCode::Timeout,
        ErrorCode::Client,
        ErrorCode::Perm,
        ErrorCode::Internal,
        ErrorCode::InvalidParams,
    ];

    /// Codes the server itself may answer for any tool (schema check, limits, its own bugs):
    /// documented once, not in every tool's list (a tool may still list `Busy` when it has a
    /// reason of its own).
    pub const GENERIC: &'static [ErrorCode] = &[
        ErrorCode::Inval,
        ErrorCode::Busy,
        ErrorCode::Perm,
        ErrorCode::Internal,
    ];

    /// The code as it follows `E_` on the wire.
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorCode::Inval => "INVAL",
            ErrorCode::Range => "RANGE",
            ErrorCode::Align => "ALIGN",
            ErrorCode::TooLarge => "TOO_LARGE",
            ErrorCode::NoEnt => "NOENT",
            ErrorCode::NotDir => "NOTDIR",
            ErrorCode::IsDir => "ISDIR",
            ErrorCode::Exist => "EXIST",
            ErrorCode::NotEmpty => "NOTEMPTY",
            ErrorCode::NoSpc => "NOSPC",
            ErrorCode::Loop => "LOOP",
            ErrorCode::NameTooLong => "NAMETOOLONG",
            ErrorCode::NotFound => "NOT_FOUND",
            ErrorCode::NoDev => "NODEV",
            ErrorCode::NoSys => "NOSYS",
            ErrorCode::NotSup => "NOTSUP",
            ErrorCode::Io => "IO",
            ErrorCode::Corrupt => "CORRUPT",
            ErrorCode::Encoding => "ENCODING",
            ErrorCode::Busy => "BUSY",
            ErrorCode::Timeout => "TIMEOUT",
            ErrorCode::Client => "CLIENT",
            ErrorCode::Perm => "PERM",
            ErrorCode::Internal => "INTERNAL",
            ErrorCode::InvalidParams => "INVALID_PARAMS",
        }
    }

    /// What the code means, for people (the tool catalogue prints it).
    pub const fn meaning(self) -> &'static str {
        match self {
            ErrorCode::Inval => {
                "An argument is malformed or out of its domain; also the schema check's answer (`E_INVAL: $.path: reason`)."
            }
            ErrorCode::Range => "An address or offset is outside what exists.",
            ErrorCode::Align => "An address is not aligned to the access width.",
            ErrorCode::TooLarge => "A request asks for more than one call may return or take.",
            ErrorCode::NoEnt => "No such file or directory.",
            ErrorCode::NotDir => "A path component that must be a directory is not one.",
            ErrorCode::IsDir => "A directory where a file is needed.",
            ErrorCode::Exist => "The entry already exists.",
            ErrorCode::NotEmpty => "The directory is not empty.",
            ErrorCode::NoSpc => "The RAM overlay's cap would be exceeded.",
            ErrorCode::Loop => "Too many symbolic links while resolving a path.",
            ErrorCode::NameTooLong => "A path or a path component is too long.",
            ErrorCode::NotFound => {
                "Something other than a file is not there (a shell command, a resource)."
            }
            ErrorCode::NoDev => {
                "The device is absent or does not answer (no disk, no graphics board, a bus error)."
            }
            ErrorCode::NoSys => {
                "The kernel or the server does not offer this (an older ABI, a reserved name)."
            }
            ErrorCode::NotSup => {
                "A feature of the data or of the request is not supported (an image feature, an interaction the client cannot have)."
            }
            ErrorCode::Io => "A device or the kernel reported an I/O failure.",
            ErrorCode::Corrupt => "Data contradicts itself or its format (a damaged image).",
            ErrorCode::Encoding => "Bytes are not valid in the encoding asked for.",
            ErrorCode::Busy => {
                "Too many calls are running, or the action conflicts with one already scheduled."
            }
            ErrorCode::Timeout => "The device did not finish within the driver's bound.",
            ErrorCode::Client => "The client did not answer a request the tool made of it.",
            ErrorCode::Perm => {
                "The machine's `mcp.policy` does not allow this tool (the message names the policy)."
            }
            ErrorCode::Internal => {
                "A server-side bug, e.g. a structured result that does not match its output schema."
            }
            ErrorCode::InvalidParams => {
                "The request itself is unusable (e.g. a tampered `requestState`): answered as JSON-RPC -32602, not as an `isError` result."
            }
        }
    }

    /// The code named `text` (without `E_`).
    pub fn parse(text: &str) -> Option<ErrorCode> {
        ErrorCode::ALL.iter().copied().find(|c| c.as_str() == text)
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The `E_<CODE>` a tool's text starts with, if it names a known code.
pub(crate) fn code_of_text(text: &str) -> Option<ErrorCode> {
    let rest = text.strip_prefix("E_")?;
    let (code, _) = rest.split_once(':')?;
    ErrorCode::parse(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_has_one_distinct_name_that_parses_back() {
        for (i, a) in ErrorCode::ALL.iter().enumerate() {
            assert_eq!(ErrorCode::parse(a.as_str()), Some(*a));
            for b in &ErrorCode::ALL[i + 1..] {
                assert_ne!(a.as_str(), b.as_str());
            }
        }
        assert_eq!(ErrorCode::parse("INVALID_ARGUMENT"), None);
    }

    #[test]
    fn a_tool_text_names_its_code_first() {
        assert_eq!(
            code_of_text("E_NOENT: no such file"),
            Some(ErrorCode::NoEnt)
        );
        assert_eq!(code_of_text("E_WHAT: x"), None);
        assert_eq!(code_of_text("fine"), None);
    }
}
