//! The lines of a chunked body: chunk-size lines and the trailer's field lines (the parser's
//! state machine collects them; the chunk data is copied into the body as it comes).

use super::error::{ParseError, err};
use super::syntax::is_tchar;

/// Parses a chunk-size line (`1*HEXDIG [ BWS ; extensions ] CRLF`, bare LF accepted). Sizes
/// too big for u64 saturate; extensions are checked for stray control bytes and ignored.
pub(super) fn chunk_size(line: &[u8]) -> Result<u64, ParseError> {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let digits = line.iter().take_while(|b| b.is_ascii_hexdigit()).count();
    if digits == 0 {
        return Err(err(400, "malformed chunk size"));
    }
    let mut size = 0u64;
    for &b in &line[..digits] {
        let d = match b {
            b'0'..=b'9' => b - b'0',
            b'a'..=b'f' => b - b'a' + 10,
            _ => b - b'A' + 10,
        };
        size = size.saturating_mul(16).saturating_add(u64::from(d));
    }
    let rest = &line[digits..];
    let ext_start = rest.iter().position(|&b| b != b' ' && b != b'\t');
    if let Some(i) = ext_start {
        let ext = &rest[i..];
        if ext[0] != b';' || ext.iter().any(|&b| (b < 0x20 && b != b'\t') || b == 0x7f) {
            return Err(err(400, "malformed chunk extension"));
        }
    } else if !rest.is_empty() {
        // Whitespace after the size with no extension following it.
        return Err(err(400, "malformed chunk size"));
    }
    Ok(size)
}

/// A trailer field line: `token ":" value` with no control bytes but HTAB.
pub(super) fn valid_field_line(line: &[u8]) -> bool {
    let Some(colon) = line.iter().position(|&b| b == b':') else {
        return false;
    };
    let (name, value) = (&line[..colon], &line[colon + 1..]);
    !name.is_empty()
        && name.iter().all(|&b| is_tchar(b))
        && value
            .iter()
            .all(|&b| b == b'\t' || (b >= 0x20 && b != 0x7f))
}
