//! JSON string escaping a machine word at a time: text is mostly printable ASCII, which JSON
//! copies as it is, and four bytes are tested for that at once.

use alloc::vec::Vec;

/// The high bit of each byte of this is clear where JSON copies the byte of `w` as it is
/// (printable ASCII other than `"` and `\`); a borrow into a higher byte only follows a byte
/// that needs escaping, so a word is plain exactly when no high bit is set. Inlined: a call
/// per word would cost more than the test (the image is optimised for size).
#[inline(always)]
fn unplain(w: u32) -> u32 {
    const ONES: u32 = 0x0101_0101;
    // A byte below 0x20, or equal to `"` or `\`, borrows into its high bit; bytes from 0x80
    // up have it set already.
    let ctrl = w.wrapping_sub(0x2020_2020);
    let quote = (w ^ 0x2222_2222).wrapping_sub(ONES);
    let backslash = (w ^ 0x5c5c_5c5c).wrapping_sub(ONES);
    ((ctrl | quote | backslash) & !w) | w
}

const HIGH: u32 = 0x8080_8080;

/// Whether four bytes (in any order) are all printable ASCII other than `"` and `\`, i.e.
/// JSON copies them as they are. One word test instead of four byte tests: streamed text
/// (base64 above all) is almost entirely such bytes.
pub(super) fn plain_word(w: u32) -> bool {
    unplain(w) & HIGH == 0
}

pub(super) fn plain_byte(b: u8) -> bool {
    (0x20..0x80).contains(&b) && b != b'"' && b != b'\\'
}

/// Length of the leading run of `bytes` that JSON copies unescaped (printable ASCII).
pub(crate) fn plain_run(bytes: &[u8]) -> usize {
    let mut n = 0;
    // Two words per branch, then the word where a pair stopped.
    for p in bytes.chunks_exact(8) {
        let a = u32::from_ne_bytes([p[0], p[1], p[2], p[3]]);
        let b = u32::from_ne_bytes([p[4], p[5], p[6], p[7]]);
        if (unplain(a) | unplain(b)) & HIGH != 0 {
            break;
        }
        n += 8;
    }
    for w in bytes.get(n..).unwrap_or(&[]).chunks_exact(4) {
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
    escape_utf8(s.as_bytes(), out);
}

/// [`escape_str`] for bytes already known to be UTF-8 (JSON this module wrote), without
/// validating them again; bytes from 0x80 up are copied as they are.
pub(crate) fn escape_utf8(bytes: &[u8], out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
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

#[cfg(test)]
mod tests {
    use super::*;

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
        // The run stops at the first byte to escape, in either word of a pair or the tail.
        for at in 0..19 {
            for special in [0u8, 0x1f, b'"', b'\\', 0x80, 0xff] {
                let mut text = [b'a'; 19];
                text[at] = special;
                assert_eq!(plain_run(&text), at, "{at} {special}");
            }
        }
        assert_eq!(plain_run(&[b'a'; 19]), 19);
    }
}
