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
}
