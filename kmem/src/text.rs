//! UTF-8 validation for the R4400 with an ASCII word loop.
//!
//! Every request body is checked as UTF-8 once (JSON text is UTF-8), and bodies are nearly
//! all ASCII. `core::str::from_utf8`'s ASCII path tests two words at a time and costs about
//! 1.5 instructions a byte here; this one ORs four aligned words per test and branch. The
//! characters beyond ASCII are checked here too (RFC 3629: no overlong forms, no surrogates,
//! nothing past U+10FFFF): this crate is built without builtins and outside the image's LTO,
//! so it cannot call `core::str::from_utf8`, which the link would not find.

/// The high bit of every byte: set only in non-ASCII bytes.
const HIGH: u32 = 0x8080_8080;

/// `bytes` as text, if they are UTF-8.
pub fn utf8(bytes: &[u8]) -> Option<&str> {
    let mut i = ascii_prefix(bytes);
    while let Some(&lead) = bytes.get(i) {
        if lead < 0x80 {
            i += 1 + ascii_prefix(bytes.get(i + 1..).unwrap_or(&[]));
            continue;
        }
        // The character's length and the range its second byte must fall in.
        let (len, low, high) = match lead {
            0xC2..=0xDF => (2, 0x80, 0xBF),
            0xE0 => (3, 0xA0, 0xBF),
            0xED => (3, 0x80, 0x9F),
            0xE1..=0xEF => (3, 0x80, 0xBF),
            0xF0 => (4, 0x90, 0xBF),
            0xF1..=0xF3 => (4, 0x80, 0xBF),
            0xF4 => (4, 0x80, 0x8F),
            _ => return None,
        };
        if !bytes.get(i + 1).is_some_and(|b| (low..=high).contains(b)) {
            return None;
        }
        if !(2..len).all(|k| bytes.get(i + k).is_some_and(|b| b & 0xC0 == 0x80)) {
            return None;
        }
        i += len;
    }
    // SAFETY: every byte was checked above to be ASCII or part of a well-formed character.
    Some(unsafe { core::str::from_utf8_unchecked(bytes) })
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::String;
    use std::vec::Vec;

    #[test]
    fn agrees_with_core_at_every_offset_and_alignment() {
        let text = "plain ASCII long enough for several blocks of four words, then é€😀 and more";
        let base: Vec<u8> = text.bytes().collect();
        for skip in 0..8 {
            // Every start alignment, and every byte made invalid in turn.
            let bytes = &base[skip..];
            assert_eq!(utf8(bytes), core::str::from_utf8(bytes).ok(), "{skip}");
            for at in 0..bytes.len() {
                for bad in [0x80u8, 0xff, 0xc3] {
                    let mut b = bytes.to_vec();
                    b[at] = bad;
                    assert_eq!(
                        utf8(&b),
                        core::str::from_utf8(&b).ok(),
                        "{skip} {at} {bad:#x}"
                    );
                }
            }
        }
        assert_eq!(utf8(b""), Some(""));
        // Every sequence of up to three bytes over the interesting values, ASCII-padded so
        // the word loop and the character check both see them.
        let interesting: Vec<u8> = (0x00..=0x01)
            .chain(0x7e..=0x81)
            .chain([
                0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xc1, 0xc2, 0xdf, 0xe0, 0xe1,
            ])
            .chain([0xec, 0xed, 0xee, 0xef, 0xf0, 0xf1, 0xf3, 0xf4, 0xf5, 0xff])
            .collect();
        for &a in &interesting {
            for &b in &interesting {
                for &c in &interesting {
                    for seq in [&[a][..], &[a, b], &[a, b, c], &[0xf0, a, b, c]] {
                        let mut v = b"abcdefg".to_vec();
                        v.extend_from_slice(seq);
                        v.extend_from_slice(b"hijklmnopqrstuvwxyz");
                        assert_eq!(utf8(&v), core::str::from_utf8(&v).ok(), "{seq:x?}");
                    }
                }
            }
        }
        let long: String = "x".repeat(1000) + "\u{e9}";
        assert_eq!(utf8(long.as_bytes()), Some(long.as_str()));
        // Whole aligned words: at most three bytes short at either end.
        let n = ascii_prefix(&[b'a'; 64]);
        assert!((58..=64).contains(&n), "{n}");
    }
}
