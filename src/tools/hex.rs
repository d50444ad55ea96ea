//! Hex text of memory for `mem.read` and `mem.write` (the default encoding: what a developer
//! reads next to a datasheet).

use alloc::string::String;
use alloc::vec::Vec;

/// Lower-case hex digits of `bytes`.
pub fn encode(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(char::from(DIGITS[usize::from(b >> 4)]));
        s.push(char::from(DIGITS[usize::from(b & 15)]));
    }
    s
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
        assert_eq!(decode("00AB7f"), Some(alloc::vec![0x00, 0xAB, 0x7F]));
        assert_eq!(decode("abc"), None);
        assert_eq!(decode("zz"), None);
        assert_eq!(decode(""), Some(alloc::vec![]));
    }
}
