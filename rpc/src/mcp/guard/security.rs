//! Bearer-token, Origin and Host checks.

use alloc::string::String;

/// Constant-time equality: the time taken depends only on the lengths, never on where the
/// inputs first differ.
pub(crate) fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    let mut diff = (a.len() ^ b.len()) as u32;
    let n = a.len().max(b.len());
    for i in 0..n {
        let x = a.get(i).copied().unwrap_or(0);
        let y = b.get(i).copied().unwrap_or(0xff);
        diff |= u32::from(x ^ y);
    }
    core::hint::black_box(diff) == 0
}

/// Whether `Authorization` carries `Bearer <token>` (scheme compared ignoring case).
pub(crate) fn bearer_ok(expected: &str, header: Option<&str>) -> bool {
    let Some(value) = header else { return false };
    let value = value.trim_ascii();
    let (scheme, rest) = value.split_at(value.find(' ').unwrap_or(value.len()));
    scheme.eq_ignore_ascii_case("bearer")
        && ct_eq(rest.trim_ascii().as_bytes(), expected.as_bytes())
}

/// Whether a browser `Origin` may talk to us: loopback names on any port, the machine's own
/// address, or one of the configured origins. `null` and anything unparsable are refused.
pub(crate) fn origin_ok(origin: &str, own_ip: Option<[u8; 4]>, extra: &[String]) -> bool {
    let origin = origin.trim_ascii();
    if extra.iter().any(|o| o.eq_ignore_ascii_case(origin)) {
        return true;
    }
    let rest = if let Some(r) = origin.strip_prefix("http://") {
        r
    } else if let Some(r) = origin.strip_prefix("https://") {
        r
    } else {
        return false;
    };
    let host = if rest.starts_with('[') {
        match rest.find(']') {
            Some(end) => {
                let (h, tail) = rest.split_at(end + 1);
                if !port_ok(tail) {
                    return false;
                }
                h
            }
            None => return false,
        }
    } else {
        let (h, tail) = rest.split_at(rest.find(':').unwrap_or(rest.len()));
        if !port_ok(tail) {
            return false;
        }
        h
    };
    if host.eq_ignore_ascii_case("localhost") || host == "127.0.0.1" || host == "[::1]" {
        return true;
    }
    own_ip.is_some_and(|ip| names_ip(host, ip))
}

/// Whether a request without an `Origin` may be answered, judged by its `Host`: the guard
/// against DNS rebinding. A rebinding page reaches the machine under the attacker's name, and a
/// browser sends that name as `Host` (and no `Origin` on a same-origin GET), so only names the
/// machine is known by pass: the loopback names on any port (an SSH tunnel or the rig's
/// forwarded port: `localhost:7801`, `127.0.0.1:<port>`, `[::1]:<port>`), the machine's own
/// IPv4 literal with any port, and the names configured (`mcp.hosts`, compared ignoring case,
/// with any port; a trailing dot is the same name). A request with no `Host` at all is not a
/// browser's (every browser sends one) and passes.
pub(crate) fn host_ok(host: Option<&str>, own_ip: Option<[u8; 4]>, names: &[String]) -> bool {
    let Some(host) = host else { return true };
    let host = host.trim_ascii();
    let name = if host.starts_with('[') {
        match host.find(']') {
            Some(end) if port_ok(&host[end + 1..]) => &host[..=end],
            _ => return false,
        }
    } else {
        let (h, tail) = host.split_at(host.find(':').unwrap_or(host.len()));
        if !port_ok(tail) {
            return false;
        }
        h
    };
    let name = name.strip_suffix('.').unwrap_or(name);
    if name.is_empty() {
        return false;
    }
    if name.eq_ignore_ascii_case("localhost") || name == "127.0.0.1" || name == "[::1]" {
        return true;
    }
    if own_ip.is_some_and(|ip| names_ip(name, ip)) {
        return true;
    }
    names.iter().any(|n| {
        let n = n.trim_ascii();
        let n = n.strip_suffix('.').unwrap_or(n);
        !n.is_empty() && n.eq_ignore_ascii_case(name)
    })
}

/// Whether `text` is `ip` written as `a.b.c.d` in plain decimal (no leading zeros): that text
/// is made on the stack, not formatted on the heap for every request.
fn names_ip(text: &str, ip: [u8; 4]) -> bool {
    let mut buf = [0u8; 15];
    let mut n = 0;
    for (i, &octet) in ip.iter().enumerate() {
        let digits = [octet / 100, octet / 10 % 10, octet % 10];
        let skip = if octet >= 100 {
            0
        } else if octet >= 10 {
            1
        } else {
            2
        };
        let dot = (i > 0).then_some(b'.');
        for b in dot
            .into_iter()
            .chain(digits[skip..].iter().map(|d| b'0' + d))
        {
            if let Some(slot) = buf.get_mut(n) {
                *slot = b;
            }
            n += 1;
        }
    }
    buf.get(..n) == Some(text.as_bytes())
}

/// An empty tail or `:<digits>`.
fn port_ok(tail: &str) -> bool {
    match tail.strip_prefix(':') {
        None => tail.is_empty(),
        Some(p) => !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;
    use alloc::vec;

    #[test]
    fn bearer() {
        assert!(bearer_ok("s3cret", Some("Bearer s3cret")));
        assert!(bearer_ok("s3cret", Some("bearer  s3cret ")));
        assert!(!bearer_ok("s3cret", Some("Bearer s3cre")));
        assert!(!bearer_ok("s3cret", Some("Bearer s3cret2")));
        assert!(!bearer_ok("s3cret", Some("Basic s3cret")));
        assert!(!bearer_ok("s3cret", Some("s3cret")));
        assert!(!bearer_ok("s3cret", None));
        assert!(ct_eq(b"", b""));
        assert!(!ct_eq(b"a", b""));
    }

    #[test]
    fn hosts() {
        let names = vec!["indy".to_string(), "Indy.Lab.".to_string()];
        let ip = Some([192, 168, 1, 20]);
        for ok in [
            None,
            Some("localhost"),
            Some("localhost:7801"),
            Some("LOCALHOST:1"),
            Some("127.0.0.1:49152"),
            Some("[::1]:7801"),
            Some("[::1]"),
            Some("192.168.1.20"),
            Some("192.168.1.20:7801"),
            Some("indy"),
            Some("INDY:7801"),
            Some("indy.lab"),
            Some("indy.lab.:80"),
            Some(" indy "),
        ] {
            assert!(host_ok(ok, ip, &names), "{ok:?}");
        }
        for bad in [
            "evil.example.com",
            "evil.example.com:7801",
            "localhost.evil.com",
            "127.0.0.1.evil.com",
            "192.168.1.21",
            "192.168.1.20.nip.io",
            "indy.evil",
            "indy:",
            "indy:80x",
            "indy:123456",
            "[::1",
            "[::2]:7801",
            "",
            ":7801",
            ".",
        ] {
            assert!(!host_ok(Some(bad), ip, &names), "{bad}");
        }
        // Without an address yet (DHCP pending) only loopback and the names pass.
        assert!(!host_ok(Some("192.168.1.20"), None, &names));
        assert!(host_ok(Some("indy"), None, &names));
        assert!(!host_ok(Some("indy"), ip, &[]));
        // An empty configured name matches nothing.
        assert!(!host_ok(Some("."), ip, &[String::new()]));
    }

    #[test]
    fn only_the_plain_decimal_form_names_the_address() {
        let ip = [192, 168, 1, 20];
        assert!(names_ip("192.168.1.20", ip));
        assert!(names_ip("0.0.0.0", [0; 4]));
        assert!(names_ip("255.255.255.255", [255; 4]));
        for bad in [
            "192.168.1.2",
            "192.168.1.200",
            "192.168.01.20",
            "192.168.1.20.",
            "192.168.1",
            "192.168.1.20.1",
            "192.168..20",
            "192.168.+1.20",
            "192.168.1.020",
            "",
        ] {
            assert!(!names_ip(bad, ip), "{bad}");
        }
    }

    #[test]
    fn origins() {
        let extra = vec!["https://agent.example:8443".to_string()];
        let ip = Some([192, 168, 1, 20]);
        for ok in [
            "http://localhost",
            "http://localhost:5173",
            "https://127.0.0.1:1",
            "http://[::1]:8080",
            "http://192.168.1.20:7801",
            "HTTPS://AGENT.EXAMPLE:8443",
        ] {
            assert!(origin_ok(ok, ip, &extra), "{ok}");
        }
        for bad in [
            "http://evil.example.com",
            "http://localhost.evil.com",
            "http://127.0.0.1.evil.com",
            "null",
            "file://localhost",
            "http://localhost:",
            "http://localhost:80x",
            "http://[::1",
            "http://192.168.1.21",
            "https://agent.example",
        ] {
            assert!(!origin_ok(bad, ip, &extra), "{bad}");
        }
    }
}
