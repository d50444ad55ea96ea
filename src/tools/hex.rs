//! Hex text of memory for `mem.read` and `mem.write` (the default encoding: what a developer
//! reads next to a datasheet).

use alloc::string::String;
use alloc::vec::Vec;
use irix7_kmem::hex_byte;

/// Lower-case hex digits of `bytes`. Written as bytes into place, then checked once: a
/// `String::push` per digit (UTF-8 encoding, a capacity check) cost ~47 guest instructions a
/// byte, 6M of the 12M one poll of a 64 KiB `mem.read` ran.
pub fn encode(bytes: &[u8]) -> String {
    let mut out = alloc::vec![0u8; bytes.len() * 2];
    for (pair, &b) in out.chunks_exact_mut(2).zip(bytes) {
        if let [hi, lo] = pair {
            [*hi, *lo] = hex_byte(b);
        }
    }
    // Hex digits are ASCII: the check cannot fail.
    String::from_utf8(out).unwrap_or_default()
}

/// The bytes of an even-length string of hex digits, or `None`.
pub fn decode(text: &str) -> Option<Vec<u8>> {
    let t = text.as_bytes();
    if !t.len().is_multiple_of(2) {
        return None;
    }
    let digit = |c: u8| char::from(c).to_digit(16).map(|d| d as u8);
    t.chunks_exact(2)
        .map(|p| Some(digit(p[0])? << 4 | digit(p[1])?))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refuses_bad_text() {
        assert_eq!(encode(&[0x00, 0xAB, 0x7f]), "00ab7f");
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(decode(&encode(&all)), Some(all));
        assert_eq!(encode(&[]), "");
        assert_eq!(decode("00AB7f"), Some(alloc::vec![0x00, 0xAB, 0x7F]));
        assert_eq!(decode("abc"), None);
        assert_eq!(decode("zz"), None);
        assert_eq!(decode(""), Some(alloc::vec![]));
    }
}
