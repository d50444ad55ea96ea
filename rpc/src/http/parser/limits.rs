//! The bounds on one request; the parser's docs list the status each breach is answered with.

/// Hard limits on one request. Every byte the parser keeps is bounded by one of these.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Longest request line, without its line ending (→ 414).
    pub request_line: usize,
    /// Most header fields in the head, and separately in the chunked trailer (→ 431).
    pub header_count: usize,
    /// Most bytes of the head (request line included), and separately of the trailer (→ 431).
    pub header_section: usize,
    /// Largest body after de-chunking (→ 413).
    pub body: usize,
    /// Longest chunk-size line, extensions included (→ 400).
    pub chunk_line: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            request_line: 8 * 1024,
            header_count: 64,
            header_section: 16 * 1024,
            body: 1024 * 1024,
            chunk_line: 1024,
        }
    }
}
