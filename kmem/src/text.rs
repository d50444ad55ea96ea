//! UTF-8 for the R4400: the ASCII test of a request body, a word loop, where a cut slice of
//! text ends on a whole character, and JSON text escaped as a string's content.
//!
//! Every request body is checked as UTF-8 once (JSON text is UTF-8), and bodies are nearly
//! all ASCII. `core::str::from_utf8`'s ASCII path tests two words at a time and costs about
//! 1.5 instructions a byte here; [`ascii`] ORs four aligned words per test and branch (about
//! 0.7). Text past ASCII is left to `core::str::from_utf8`, the image's one validator: this
//! crate is built without builtins and outside the image's LTO, so it cannot call it (the link
//! would not find it), and a second validator here would cost 900 bytes for the rare body
//! that needs it.

use core::ptr;

/// The high bit of every byte: set only in non-ASCII bytes.
const HIGH: u32 = 0x8080_8080;

/// Texts shorter than this are tested a byte at a time by [`ascii`].
const SHORT_TEXT: usize = 16;

/// `bytes` as text, if they are all ASCII; `None` for any other text, which the caller checks
/// with `core::str::from_utf8`.
pub fn ascii(bytes: &[u8]) -> Option<&str> {
    // A short text (a file's name) byte by byte: the word loop's set-up costs more than it.
    let n = if bytes.len() < SHORT_TEXT {
        0
    } else {
        ascii_prefix(bytes)
    };
    if !bytes.get(n..)?.iter().all(|&b| b < 0x80) {
        return None;
    }
    // SAFETY: every byte was checked above to be ASCII, and ASCII is UTF-8.
    Some(unsafe { core::str::from_utf8_unchecked(bytes) })
}

/// The length of the character a non-ASCII `lead` byte starts and the range its second byte
/// must fall in (RFC 3629: no overlong forms, no surrogates, nothing past U+10FFFF); `None`
/// when no character starts with it.
#[inline]
fn sequence(lead: u8) -> Option<(usize, u8, u8)> {
    Some(match lead {
        0xC2..=0xDF => (2, 0x80, 0xBF),
        0xE0 => (3, 0xA0, 0xBF),
        0xED => (3, 0x80, 0x9F),
        0xE1..=0xEF => (3, 0x80, 0xBF),
        0xF0 => (4, 0x90, 0xBF),
        0xF1..=0xF3 => (4, 0x80, 0xBF),
        0xF4 => (4, 0x80, 0x8F),
        _ => return None,
    })
}

/// How many leading bytes of `bytes` end on a complete UTF-8 sequence: all of them but a
/// character the slice cuts short at its end (its first bytes, well-formed so far), which
/// waits for the bytes that follow. Text cut anywhere (a piece of a stream, a room, a range)
/// is brought back to a character boundary this way. Bytes no character could complete are
/// not held back: they are the validator's to refuse or replace, as `core::str::from_utf8`
/// sees them (it reports an unfinished end exactly when this holds bytes back).
#[inline]
pub fn complete_utf8(bytes: &[u8]) -> usize {
    let len = bytes.len();
    // A character is at most four bytes: an unfinished one starts in the last three.
    for back in 1..=len.min(3) {
        let at = len - back;
        let Some(&lead) = bytes.get(at) else { break };
        if lead & 0xC0 == 0x80 {
            continue;
        }
        let Some((need, low, high)) = sequence(lead) else {
            return len;
        };
        let rest = bytes.get(at + 1..).unwrap_or(&[]);
        let well_formed = rest.first().is_none_or(|b| (low..=high).contains(b))
            && rest.iter().skip(1).all(|b| b & 0xC0 == 0x80);
        return if need > back && well_formed { at } else { len };
    }
    len
}

/// How many leading bytes of `bytes` are surely ASCII (whole aligned words of it, so it may
/// stop short of the first non-ASCII byte).
fn ascii_prefix(bytes: &[u8]) -> usize {
    // SAFETY: any four bytes are a valid `u32`; `align_to` only splits the slice.
    let (head, words, _) = unsafe { bytes.align_to::<u32>() };
    if head.iter().any(|&b| b >= 0x80) {
        return 0;
    }
    let mut n = 0;
    let (blocks, _) = words.as_chunks::<4>();
    for [a, b, c, d] in blocks {
        if (a | b | c | d) & HIGH != 0 {
            break;
        }
        n += 4;
    }
    n += words
        .get(n..)
        .unwrap_or(&[])
        .iter()
        .take_while(|&&w| w & HIGH == 0)
        .count();
    head.len() + n * 4
}

/// The high bit of each byte of this is clear where JSON text copies the byte of `w` as a
/// string's content unchanged: printable ASCII other than `"` and `\`. Flipping bit 1 turns
/// `"` into 0x20 and leaves the control characters below 0x20, so one subtraction borrows into
/// the high bit of both; `\` is compared on its own; bytes from 0x80 up have it set already
/// (they are copied too, a byte at a time). A borrow only spreads above a byte that is flagged,
/// so the word is flagged exactly when one of its bytes is.
#[inline(always)]
fn json_special(w: u32) -> u32 {
    let ctrl_or_quote = (w ^ 0x0202_0202).wrapping_sub(0x2121_2121);
    let backslash = (w ^ 0x5c5c_5c5c).wrapping_sub(0x0101_0101);
    (ctrl_or_quote | backslash | w) & HIGH
}

/// Which bytes of `w` (big-endian: the first in memory is the most significant) are `"`, `\`
/// or below 0x20, exactly: the high bit of each such byte, and of no other (each byte's test
/// is made on its low seven bits, where no carry crosses into the next byte).
#[inline(always)]
fn json_escapes(w: u32) -> u32 {
    const LOW: u32 = 0x7f7f_7f7f;
    let zero = |v: u32| !(((v & LOW).wrapping_add(LOW)) | v) & HIGH;
    let ctrl = !(((w & LOW).wrapping_add(0x6060_6060)) | w) & HIGH;
    ctrl | zero(w ^ 0x2222_2222) | zero(w ^ 0x5c5c_5c5c)
}

/// The letter after the backslash of `b`'s two-character JSON escape (what serde_json writes
/// too), for a byte [`json_escapes`] flags; `None` for any other byte, a control byte among
/// them, which takes [`unicode_escape`]'s six.
#[inline(always)]
pub fn short_escape(b: u8) -> Option<u8> {
    match b {
        b'"' | b'\\' => Some(b),
        b'\n' => Some(b'n'),
        b'\r' => Some(b'r'),
        b'\t' => Some(b't'),
        0x08 => Some(b'b'),
        0x0c => Some(b'f'),
        _ => None,
    }
}

/// `b`'s JSON escape as a code point, `\u00XX` (serde_json's form for a control byte without
/// a short escape).
#[inline]
pub fn unicode_escape(b: u8) -> [u8; 6] {
    let [hi, lo] = hex_byte(b);
    [b'\\', b'u', b'0', b'0', hi, lo]
}

/// The two lower-case hex digits of `b`.
#[inline]
pub fn hex_byte(b: u8) -> [u8; 2] {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    [DIGITS[usize::from(b >> 4)], DIGITS[usize::from(b & 0xf)]]
}

/// Appends UTF-8 text (this side wrote or checked it: a structured result, a console's lines)
/// to `out` as a JSON string's content: `"` and `\` behind a backslash, a control byte that
/// has one as its two-character escape (`\n`, `\r`, `\t`, `\b`, `\f`), every other byte from
/// 0x20 up as it is. Stops at the end of `json`, before a control byte without a short escape
/// (its six-byte `\u00XX` is the caller's), or once it has read half of `out`'s spare room
/// (room for the worst case: no byte here becomes more than two). Returns the bytes read.
/// Written straight into the spare room: the caller reserves it (this crate grows no vector),
/// and nothing zeroes it first.
///
/// A result's JSON goes out twice, once as the text of its text block, and JSON is dense with
/// quotes (a few bytes between two). A word at a time: one that needs nothing is copied
/// whole; in one that does, the bytes before the first to escape are copied with the word
/// (the rest is written again from there), then that byte's escape. No `memcpy` call for the
/// runs between quotes, and no test of each byte.
pub fn append_json_text(out: &mut alloc::vec::Vec<u8>, json: &[u8]) -> usize {
    let len = out.len();
    let n = json.len().min((out.capacity() - len) / 2);
    // SAFETY: `n <= json.len()`, and `2 * n` bytes after `len` are within the capacity; the
    // length takes in only the bytes `escape_into` wrote.
    unsafe {
        let (read, wrote) = escape_into(json.as_ptr(), n, out.as_mut_ptr().add(len));
        out.set_len(len + wrote);
        read
    }
}

/// [`append_json_text`]'s loop over the first `n` bytes at `src`, into `out`: (read, written).
///
/// # Safety
/// `src` valid for reads of `n` bytes, `out` for writes of `2 * n`.
#[inline(always)]
unsafe fn escape_into(src: *const u8, n: usize, out: *mut u8) -> (usize, usize) {
    let (mut i, mut w) = (0usize, 0usize);
    // SAFETY: `i < n` for every byte read (`i + 4 <= n` for a word). Every byte read is
    // written at most twice, so `w <= 2 * i`; a word is stored at `w` only when `i + 4 <= n`,
    // so it ends at or before `2 * n`, and an escape of the byte at `i + k < n` ends at
    // `w + k + 2 <= 2 * (i + k + 1) <= 2 * n`.
    unsafe {
        while i + 4 <= n {
            let word = ptr::read_unaligned(src.add(i).cast::<u32>());
            ptr::write_unaligned(out.add(w).cast::<u32>(), word);
            let be = u32::from_be(word);
            if json_special(be) == 0 {
                i += 4;
                w += 4;
                continue;
            }
            let flags = json_escapes(be);
            // The bytes before the first to escape are written (with the word): keep them.
            // (MIPS II has no count of leading zeros: four tests.)
            let k = match flags {
                0x8000_0000.. => 0,
                0x0080_0000.. => 1,
                0x0000_8000.. => 2,
                0x0000_0001.. => 3,
                0 => 4,
            };
            i += k;
            w += k;
            if k == 4 {
                // Only bytes from 0x80 up made the word look special: all copied.
                continue;
            }
            // A flagged byte from 0x20 up is `"` or `\`, escaped as itself.
            let b = *src.add(i);
            let e = match b {
                0x20.. => b,
                _ => match short_escape(b) {
                    Some(e) => e,
                    None => return (i, w),
                },
            };
            *out.add(w) = b'\\';
            *out.add(w + 1) = e;
            i += 1;
            w += 2;
        }
        while i < n {
            let b = *src.add(i);
            if b < 0x20 || b == b'"' || b == b'\\' {
                let Some(e) = short_escape(b) else { break };
                *out.add(w) = b'\\';
                *out.add(w + 1) = e;
                w += 2;
            } else {
                *out.add(w) = b;
                w += 1;
            }
            i += 1;
        }
    }
    (i, w)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::String;
    use std::vec::Vec;

    #[test]
    fn ascii_text_is_told_at_every_offset_and_alignment() {
        let text = "plain ASCII long enough for several blocks of four words, and more of it";
        let base: Vec<u8> = text.bytes().collect();
        for skip in 0..8 {
            // Every start alignment, and every byte made non-ASCII in turn.
            let bytes = &base[skip..];
            assert_eq!(ascii(bytes), Some(&text[skip..]), "{skip}");
            for at in 0..bytes.len() {
                for high in [0x80u8, 0xc3, 0xff] {
                    let mut b = bytes.to_vec();
                    b[at] = high;
                    assert_eq!(ascii(&b), None, "{skip} {at} {high:#x}");
                }
            }
        }
        assert_eq!(ascii(b""), Some(""));
        let long: String = "x".repeat(1000) + "\u{e9}";
        assert_eq!(ascii(long.as_bytes()), None);
        // Whole aligned words: at most three bytes short at either end.
        let n = ascii_prefix(&[b'a'; 64]);
        assert!((58..=64).contains(&n), "{n}");
    }

    /// Where core's validator says the text ended in the middle of a character (after
    /// skipping what it calls invalid), or the length if it did not.
    fn core_cut(v: &[u8]) -> usize {
        let mut at = 0;
        loop {
            match core::str::from_utf8(&v[at..]) {
                Ok(_) => return v.len(),
                Err(e) => match e.error_len() {
                    Some(len) => at += e.valid_up_to() + len,
                    None => return at + e.valid_up_to(),
                },
            }
        }
    }

    #[test]
    fn a_cut_character_waits_exactly_when_core_says_the_text_ended_early() {
        assert_eq!(complete_utf8(b"abc"), 3);
        assert_eq!(complete_utf8("a\u{20ac}".as_bytes()), 4);
        assert_eq!(complete_utf8(&"a\u{20ac}".as_bytes()[..3]), 1);
        assert_eq!(complete_utf8(&"a\u{20ac}".as_bytes()[..2]), 1);
        assert_eq!(complete_utf8(&[0xF0, 0x9F, 0x98]), 0);
        assert_eq!(complete_utf8(&[0x80, 0x80, 0x80]), 3);
        assert_eq!(complete_utf8(&[]), 0);
        // Not the start of any character: not held back.
        assert_eq!(complete_utf8(&[b'a', 0xE0, 0x80]), 3);
        assert_eq!(complete_utf8(&[b'a', 0xF5, 0x80]), 3);
        // Every tail of up to three bytes after some ASCII, against core's own verdict.
        let values: Vec<u8> = (0x7e..=0x81)
            .chain([
                0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xc1, 0xc2, 0xdf, 0xe0, 0xe1,
            ])
            .chain([0xec, 0xed, 0xee, 0xef, 0xf0, 0xf1, 0xf3, 0xf4, 0xf5, 0xff])
            .collect();
        for &a in &values {
            for &b in &values {
                for &c in &values {
                    for tail in [&[a][..], &[a, b], &[a, b, c]] {
                        let mut v = b"xyz".to_vec();
                        v.extend_from_slice(tail);
                        // The bytes held back are what core calls an unfinished end.
                        assert_eq!(complete_utf8(&v), core_cut(&v), "{tail:x?}");
                    }
                }
            }
        }
    }

    /// The escape a byte at a time, the reference.
    fn escaped(json: &[u8]) -> (usize, Vec<u8>) {
        let mut out = Vec::new();
        for (i, &b) in json.iter().enumerate() {
            let short = match b {
                b'\n' => b'n',
                b'\r' => b'r',
                b'\t' => b't',
                0x08 => b'b',
                0x0c => b'f',
                b'"' | b'\\' => b,
                0..0x20 => return (i, out),
                _ => {
                    out.push(b);
                    continue;
                }
            };
            out.extend_from_slice(&[b'\\', short]);
        }
        (json.len(), out)
    }

    #[test]
    fn json_text_is_appended_as_byte_by_byte_escapes_at_every_position_and_room() {
        let specials = [
            b'"', b'\\', 0x1f, 0x00, b'\n', b'\r', b'\t', 0x08, 0x0c, 0x7f, 0x80, 0xe9, b' ', b'!',
            b'#', b'[',
        ];
        for len in 0..12 {
            for at in 0..len {
                for &special in &specials {
                    let mut json: Vec<u8> = (0..len).map(|i| b'a' + i as u8).collect();
                    json[at] = special;
                    let (read, want) = escaped(&json);
                    for room in [2 * len, 2 * len + 7, 3] {
                        // Behind bytes already there, in exactly `room` bytes of spare room.
                        let mut out = Vec::with_capacity(2 + room);
                        out.extend_from_slice(b"<>");
                        out.shrink_to(2 + room);
                        let room = out.capacity() - 2;
                        let r = append_json_text(&mut out, &json);
                        let (cut, cut_want) = escaped(&json[..read.min(room / 2)]);
                        let (r_want, bytes) = if room >= 2 * len {
                            (read, &want)
                        } else {
                            (cut, &cut_want)
                        };
                        assert_eq!(&out[..2], b"<>");
                        assert_eq!((r, &out[2..]), (r_want, &bytes[..]), "{json:x?} {room}");
                    }
                }
            }
        }
        // JSON as results look: quotes every few bytes, a long plain run, an escape.
        let json = br#"{"a":"x\"y","bb":[1,2],"text":"plain ASCII long enough for words"}"#;
        let mut out = Vec::with_capacity(2 * json.len());
        let r = append_json_text(&mut out, json);
        assert_eq!((r, &out[..]), (json.len(), &escaped(json).1[..]));
    }
}
