//! On-the-fly encoders for streamed content: JSON string escaping of UTF-8 text that arrives
//! in arbitrary pieces, and base64 of binary that arrives in arbitrary pieces.

use crate::jsonrpc::{escape_str, plain_run};
use alloc::vec::Vec;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;

/// JSON-escapes UTF-8 text arriving in pieces. A sequence split across pieces is carried over;
/// invalid bytes become U+FFFD, so the output is always valid JSON string content.
#[derive(Debug, Default)]
pub(crate) struct TextEscaper {
    carry: Vec<u8>,
}

impl TextEscaper {
    pub(crate) fn push(&mut self, input: &[u8], out: &mut Vec<u8>) {
        let mut input = input;
        if self.carry.is_empty() {
            // The common case (and all of base64): plain ASCII, copied as it is. It ends on a
            // character boundary, so the rest goes through the checks below.
            let n = plain_run(input);
            out.extend_from_slice(input.get(..n).unwrap_or(&[]));
            input = input.get(n..).unwrap_or(&[]);
            if input.is_empty() {
                return;
            }
        }
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

/// Base64 (standard, padded) of binary arriving in pieces, encoded straight into the output:
/// only the up to two bytes of an incomplete group are held back between pieces.
#[derive(Debug, Default)]
pub(crate) struct Base64Stream {
    carry: Vec<u8>,
}

impl Base64Stream {
    pub(crate) fn push(&mut self, input: &[u8], out: &mut Vec<u8>) {
        let mut input = input;
        if !self.carry.is_empty() {
            let take = (3 - self.carry.len()).min(input.len());
            self.carry
                .extend_from_slice(input.get(..take).unwrap_or(&[]));
            input = input.get(take..).unwrap_or(&[]);
            if self.carry.len() < 3 {
                return;
            }
            encode_into(&self.carry, out);
            self.carry.clear();
        }
        let whole = input.len() / 3 * 3;
        let (now, later) = input.split_at(whole);
        encode_into(now, out);
        self.carry.extend_from_slice(later);
    }

    pub(crate) fn finish(&mut self, out: &mut Vec<u8>) {
        let rest = core::mem::take(&mut self.carry);
        encode_into(&rest, out);
    }
}

/// Appends the base64 of `data` to `out`.
fn encode_into(data: &[u8], out: &mut Vec<u8>) {
    if data.is_empty() {
        return;
    }
    let at = out.len();
    let room = super::tool::append_zeroed(out, data.len().div_ceil(3) * 4);
    let n = STANDARD.encode_slice(data, room).unwrap_or(0);
    out.truncate(at + n);
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
    fn long_runs_and_escapes_match_serde_json() {
        let text = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=\"x\\y\u{7}z \
                    é€ long tail of plain text\u{7f}\n";
        let want = serde_json::to_string(text).unwrap();
        let mut out = Vec::new();
        escape_str(text, &mut out);
        assert_eq!(
            alloc::format!("\"{}\"", String::from_utf8(out).unwrap()),
            want
        );
        for piece in [1, 3, 4, 5, 64, 1000] {
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
