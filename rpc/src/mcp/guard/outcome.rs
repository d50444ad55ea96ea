//! How a call ended, as its audit record and the refusal counts name it.

use crate::mcp::wire::error_code::ErrorCode;
use core::fmt;

/// How an audited call ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Ok,
    /// An `isError` result (or a JSON-RPC error of the call) with this code.
    Failed(ErrorCode),
    /// An `isError` result whose text names no known code.
    Error,
    /// Outside `mcp.policy`: the tool never ran.
    RefusedByPolicy,
    /// The client cancelled, or went away before the result was sent.
    Cancelled,
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Outcome::Ok => f.write_str("ok"),
            Outcome::Failed(code) => write!(f, "E_{code}"),
            Outcome::Error => f.write_str("error"),
            Outcome::RefusedByPolicy => f.write_str("refused by policy"),
            Outcome::Cancelled => f.write_str("cancelled"),
        }
    }
}
