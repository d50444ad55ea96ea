//! On-the-fly encoders for streamed content: JSON string escaping of UTF-8 text that arrives
//! in arbitrary pieces, and base64 of binary that arrives in arbitrary pieces.

use alloc::vec::Vec;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;

/// Appends `s` JSON-escaped (without quotes).
pub(crate) fn escape_str(s: &str, out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0x00..=0x1f => b"",
            _ => continue,
        };
        out.extend_from_slice(bytes.get(start..i).unwrap_or(&[]));
        if esc.is_empty() {
            out.extend_from_slice(b"\\u00");
            out.push(HEX[usize::from(b >> 4)]);
            out.push(HEX[usize::from(b & 0xf)]);
        } else {
            out.extend_from_slice(esc);
        }
        start = i + 1;
    }
    out.extend_from_slice(bytes.get(start..).unwrap_or(&[]));
}

/// JSON-escapes UTF-8 text arriving in pieces. A sequence split across pieces is carried over;
/// invalid bytes become U+FFFD, so the output is always valid JSON string content.
#[derive(Debug, Default)]
pub(crate) struct TextEscaper {
    carry: Vec<u8>,
}

impl TextEscaper {
    pub(crate) fn push(&mut self, input: &[u8], out: &mut Vec<u8>) {
        let mut joined;
        let mut rest: &[u8] = if self.carry.is_empty() {
            input
        } else {
            joined = core::mem::take(&mut self.carry);
            joined.extend_from_slice(input);
            &joined[..]
        };
        loop {
            match core::str::from_utf8(rest) {
                Ok(s) => {
                    escape_str(s, out);
                    return;
                }
                Err(e) => {
                    let (good, bad) = rest.split_at(e.valid_up_to());
                    // `good` is valid UTF-8 by construction.
                    escape_str(core::str::from_utf8(good).unwrap_or(""), out);
                    match e.error_len() {
                        Some(n) => {
                            out.extend_from_slice("\u{fffd}".as_bytes());
                            rest = bad.get(n..).unwrap_or(&[]);
                        }
                        None => {
                            self.carry = bad.to_vec();
                            return;
                        }
                    }
                }
            }
        }
    }

    /// Ends the text: an incomplete trailing sequence becomes U+FFFD.
    pub(crate) fn finish(&mut self, out: &mut Vec<u8>) {
        if !self.carry.is_empty() {
            self.carry.clear();
            out.extend_from_slice("\u{fffd}".as_bytes());
        }
    }
}

/// Base64 (standard, padded) of binary arriving in pieces.
#[derive(Debug, Default)]
pub(crate) struct Base64Stream {
    carry: Vec<u8>,
}

impl Base64Stream {
    pub(crate) fn push(&mut self, input: &[u8], out: &mut Vec<u8>) {
        let mut data = core::mem::take(&mut self.carry);
        data.extend_from_slice(input);
        let whole = data.len() / 3 * 3;
        let (now, later) = data.split_at(whole);
        out.extend_from_slice(STANDARD.encode(now).as_bytes());
        self.carry = later.to_vec();
    }

    pub(crate) fn finish(&mut self, out: &mut Vec<u8>) {
        let rest = core::mem::take(&mut self.carry);
        out.extend_from_slice(STANDARD.encode(rest).as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::String;

    fn escape_in_pieces(input: &[u8], piece: usize) -> String {
        let mut e = TextEscaper::default();
        let mut out = Vec::new();
        for chunk in input.chunks(piece) {
            e.push(chunk, &mut out);
        }
        e.finish(&mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn escaping_matches_serde_json_for_any_split() {
        let text = "a\"b\\c\nd\u{1}é€😀\t\r\u{8}\u{c}\u{1f}";
        let want = serde_json::to_string(text).unwrap();
        for piece in 1..=text.len() {
            let got = escape_in_pieces(text.as_bytes(), piece);
            assert_eq!(alloc::format!("\"{got}\""), want, "piece {piece}");
        }
    }

    #[test]
    fn invalid_utf8_becomes_replacement() {
        assert_eq!(escape_in_pieces(b"a\xffb", 1), "a\u{fffd}b");
        assert_eq!(escape_in_pieces(b"a\xe2\x82", 1), "a\u{fffd}");
    }

    #[test]
    fn base64_in_pieces_matches_whole() {
        let data: Vec<u8> = (0..=255u8).cycle().take(1000).collect();
        let want = STANDARD.encode(&data);
        for piece in [1, 2, 3, 4, 7, 999] {
            let mut s = Base64Stream::default();
            let mut out = Vec::new();
            for c in data.chunks(piece) {
                s.push(c, &mut out);
            }
            s.finish(&mut out);
            assert_eq!(String::from_utf8(out).unwrap(), want);
        }
    }
}
