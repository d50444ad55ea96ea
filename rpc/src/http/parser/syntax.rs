//! The field syntax the whole HTTP layer shares (RFC 9110 §5.6).

/// The non-empty elements of a comma-separated header list, trimmed.
pub(crate) fn list(value: &str) -> impl Iterator<Item = &str> {
    value
        .split(',')
        .map(|s| s.trim_matches([' ', '\t']))
        .filter(|s| !s.is_empty())
}

/// RFC 9110 token characters.
#[inline]
pub(crate) fn is_tchar(b: u8) -> bool {
    TCHAR[usize::from(b)]
}

/// [`is_tchar`] for every byte, looked up: the name of every header field a response sends is
/// checked a byte at a time, and a search of the 15 symbols cost 24 instructions a byte.
static TCHAR: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        t[b] = c.is_ascii_alphanumeric()
            || matches!(
                c,
                b'!' | b'#'
                    | b'$'
                    | b'%'
                    | b'&'
                    | b'\''
                    | b'*'
                    | b'+'
                    | b'-'
                    | b'.'
                    | b'^'
                    | b'_'
                    | b'`'
                    | b'|'
                    | b'~'
            );
        b += 1;
    }
    t
};

#[cfg(test)]
mod tests {
    #[test]
    fn token_characters_are_rfc_9110s() {
        for b in 0..=255u8 {
            let want = b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
            assert_eq!(super::is_tchar(b), want, "{b:#04x}");
        }
    }
}
