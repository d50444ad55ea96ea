//! `tools/call` once its tool is found: the response body of a running call (`stream`), the
//! result it writes (`emit`) and the legacy bridge's rounds of client input (`asking`).

pub(crate) mod asking;
pub(crate) mod emit;
pub(crate) mod gates;
pub(crate) mod stream;
#[cfg(test)]
mod tests;
