//! The boot environment the Lua script delivers: `key = value` lines (`boot/config.conf`, then
//! the NVRAM variables the module reads, `docs/abi.md`), `#` starting a comment. The stand-in
//! looks up `mcp.sha256` in it and answers `env_get` from it.

/// The value of `key` (surrounding blanks trimmed); the last line naming it wins, as a later
/// `--env` overrides the configuration in the rig.
pub fn lookup<'a>(text: &'a [u8], key: &[u8]) -> Option<&'a [u8]> {
    let mut found = None;
    for line in text.split(|&b| b == b'\n') {
        let line = match line.iter().position(|&b| b == b'#') {
            Some(at) => &line[..at],
            None => line,
        };
        let Some(eq) = line.iter().position(|&b| b == b'=') else {
            continue;
        };
        if trim(&line[..eq]) == key {
            found = Some(trim(&line[eq + 1..]));
        }
    }
    found
}

/// The 32 bytes of a digest written as 64 hex digits (either case).
pub fn digest_bytes(text: &[u8]) -> Option<[u8; 32]> {
    // `from_str_radix` would take a sign too.
    if text.len() != 64 || !text.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, pair) in text.chunks(2).enumerate() {
        let s = core::str::from_utf8(pair).ok()?;
        out[i] = u8::from_str_radix(s, 16).ok()?;
    }
    Some(out)
}

fn trim(s: &[u8]) -> &[u8] {
    let start = s
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(s.len());
    let end = s
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(start, |e| e + 1);
    &s[start..end.max(start)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_trims_and_lets_the_last_line_win() {
        let text = b"# boot\nmcp.url = file:target/image/irix7-mcp.o\nmcp.sha256 = abc \r\n\
                     netaddr=10.0.0.2/24 # static\nnetaddr = 10.77.0.2/24\nnoequals\n";
        assert_eq!(lookup(text, b"mcp.sha256"), Some(&b"abc"[..]));
        assert_eq!(lookup(text, b"netaddr"), Some(&b"10.77.0.2/24"[..]));
        assert_eq!(lookup(text, b"mcp.token"), None);
        assert_eq!(lookup(text, b"noequals"), None);
        assert_eq!(lookup(b"k =\n", b"k"), Some(&b""[..]));
        assert_eq!(lookup(b"", b""), None);
    }

    #[test]
    fn digests_are_64_hex_digits() {
        let hex = "00FF10ab".repeat(8);
        let d = digest_bytes(hex.as_bytes()).unwrap();
        assert_eq!(&d[..4], &[0x00, 0xFF, 0x10, 0xAB]);
        assert_eq!(digest_bytes(&hex.as_bytes()[..62]), None);
        assert_eq!(digest_bytes("zz".repeat(32).as_bytes()), None);
        assert_eq!(digest_bytes("+1".repeat(32).as_bytes()), None);
    }
}
