//! On-the-fly encoders for streamed content: JSON string escaping of UTF-8 text that arrives
//! in arbitrary pieces, and base64 of binary that arrives in arbitrary pieces.

use alloc::vec::Vec;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;

/// Whether four bytes (in any order) are all printable ASCII other than `"` and `\`, i.e.
/// JSON copies them as they are. One word test instead of four byte tests: streamed text
/// (base64 above all) is almost entirely such bytes.
fn plain_word(w: u32) -> bool {
    const ONES: u32 = 0x0101_0101;
    const HIGH: u32 = 0x8080_8080;
    // A byte below 0x20, or equal to `"` or `\`, borrows into its high bit; bytes from 0x80
    // up have it set already. A borrow into a higher byte only follows a byte that matched.
    let ctrl = w.wrapping_sub(0x2020_2020);
    let quote = (w ^ 0x2222_2222).wrapping_sub(ONES);
    let backslash = (w ^ 0x5c5c_5c5c).wrapping_sub(ONES);
    (((ctrl | quote | backslash) & !w) | w) & HIGH == 0
}

fn plain_byte(b: u8) -> bool {
    (0x20..0x80).contains(&b) && b != b'"' && b != b'\\'
}

/// Length of the leading run of `bytes` that JSON copies unescaped (printable ASCII).
fn plain_run(bytes: &[u8]) -> usize {
    let mut n = 0;
    for w in bytes.chunks_exact(4) {
        if !plain_word(u32::from_ne_bytes([w[0], w[1], w[2], w[3]])) {
            break;
        }
        n += 4;
    }
    let rest = bytes.get(n..).unwrap_or(&[]);
    n + rest.iter().take_while(|&&b| plain_byte(b)).count()
}

/// Appends `s` JSON-escaped (without quotes). Runs that need no escaping are copied whole.
pub(crate) fn escape_str(s: &str, out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = s.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let rest = bytes.get(i..).unwrap_or(&[]);
        // Printable ASCII, then (UTF-8 being valid here) whole non-ASCII characters.
        let mut run = plain_run(rest);
        run += rest
            .get(run..)
            .unwrap_or(&[])
            .iter()
            .take_while(|&&b| b >= 0x80)
            .count();
        if run > 0 {
            out.extend_from_slice(rest.get(..run).unwrap_or(&[]));
            i += run;
            continue;
        }
        let b = rest[0];
        let esc: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            _ => b"",
        };
        if esc.is_empty() {
            out.extend_from_slice(b"\\u00");
            out.push(HEX[usize::from(b >> 4)]);
            out.push(HEX[usize::from(b & 0xf)]);
        } else {
            out.extend_from_slice(esc);
        }
        i += 1;
    }
}

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
    fn the_word_test_agrees_with_the_byte_test() {
        let specials = [
            0u8, 0x1f, 0x20, b'"', b'\\', b'!', b'#', b'[', b']', 0x7f, 0x80, 0xff,
        ];
        for &a in &specials {
            for &b in &specials {
                for pos in 0..4 {
                    let mut w = [b'a', b'b', b'c', b'd'];
                    w[pos] = a;
                    w[(pos + 1) % 4] = b;
                    let want = w.iter().all(|&x| plain_byte(x));
                    assert_eq!(plain_word(u32::from_ne_bytes(w)), want, "{w:?}");
                }
            }
        }
        for x in 0..=255u8 {
            assert_eq!(plain_word(u32::from_ne_bytes([x; 4])), plain_byte(x), "{x}");
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
