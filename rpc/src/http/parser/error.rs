//! What the parser reports when it refuses a request.

/// Why a request was refused: the status to answer with and a short explanation for the body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParseError {
    pub status: u16,
    pub message: &'static str,
}

pub(super) const fn err(status: u16, message: &'static str) -> ParseError {
    ParseError { status, message }
}
