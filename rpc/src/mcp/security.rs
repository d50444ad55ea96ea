//! Bearer-token and Origin checks.

use alloc::format;
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
    let value = value.trim();
    let (scheme, rest) = value.split_at(value.find(' ').unwrap_or(value.len()));
    scheme.eq_ignore_ascii_case("bearer") && ct_eq(rest.trim().as_bytes(), expected.as_bytes())
}

/// Whether a browser `Origin` may talk to us: loopback names on any port, the machine's own
/// address, or one of the configured origins. `null` and anything unparsable are refused.
pub(crate) fn origin_ok(origin: &str, own_ip: Option<[u8; 4]>, extra: &[String]) -> bool {
    let origin = origin.trim();
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
    match own_ip {
        Some([a, b, c, d]) => host == format!("{a}.{b}.{c}.{d}"),
        None => false,
    }
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
