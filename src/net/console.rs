//! The browser console's assets and the security headers of every page the router serves.
//! The script turns the status page into a live console once the developer gives a token
//! (docs/console.md); it and the stylesheet are compiled into the image, served open (they
//! hold no secret: the page's own calls go through `/mcp` and are judged there), and the
//! headers keep the page from running any other script, from being framed and from having
//! its assets read as another type.

use rpc::http::Response;

/// The script, served on the MCP port only (it talks to `/mcp`).
pub const SCRIPT_PATH: &str = "/console.js";
/// The stylesheet of the page on every port.
pub const STYLE_PATH: &str = "/console.css";

const SCRIPT: &str = include_str!("console/console.js");
const STYLE: &str = include_str!("console/console.css");

/// The security header lines of the page and its assets, as sent. Script, style and calls
/// from the module only; images only as data (the screen thumbnail); no plugin, frame, form
/// target or base; never inside a frame (`frame-ancestors`, and `X-Frame-Options` for older
/// browsers); no guessing of types.
pub const SECURITY: &str = "Content-Security-Policy: default-src 'none';script-src 'self';\
style-src 'self';img-src data:;connect-src 'self';frame-ancestors 'none';base-uri 'none';\
form-action 'none'\r\nX-Content-Type-Options: nosniff\r\nX-Frame-Options: DENY\r\n";

/// The asset at `path`, if one is served there on this port: its type and bytes.
pub fn asset(path: &str, mcp_port: bool) -> Option<(&'static str, &'static str)> {
    match path {
        SCRIPT_PATH if mcp_port => Some(("text/javascript; charset=utf-8", SCRIPT)),
        STYLE_PATH => Some(("text/css; charset=utf-8", STYLE)),
        _ => None,
    }
}

/// The answer for an asset: the bytes with the security headers. Not cached across builds:
/// `no-cache` makes a browser ask again, so a deploy's new script is the one that runs.
pub fn serve(content_type: &'static str, bytes: &'static str) -> Response {
    let mut resp = Response::full(200, content_type, bytes);
    secure(&mut resp);
    resp.headers.push_static("Cache-Control", "no-cache");
    resp
}

/// Adds the security headers to a page's answer.
pub fn secure(resp: &mut Response) {
    resp.headers.set_lines(SECURITY);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_security_lines_are_well_formed_header_lines() {
        let lines: alloc::vec::Vec<&str> = SECURITY.split_terminator("\r\n").collect();
        assert_eq!(lines.len(), 3);
        assert!(SECURITY.ends_with("\r\n") && !SECURITY.contains("\r\n\r\n"));
        for line in lines {
            let (name, value) = line.split_once(": ").expect("name: value");
            assert!(name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'));
            assert!(value.bytes().all(|b| (0x20..0x7f).contains(&b)), "{line}");
        }
    }

    #[test]
    fn the_policy_allows_only_the_modules_own_script_and_no_framing() {
        let mut resp = Response::empty(200);
        secure(&mut resp);
        let csp = resp.headers.get("Content-Security-Policy").expect("CSP");
        let directives: alloc::vec::Vec<&str> = csp.split(';').collect();
        for want in [
            "default-src 'none'",
            "script-src 'self'",
            "style-src 'self'",
            "connect-src 'self'",
            "frame-ancestors 'none'",
            "base-uri 'none'",
            "form-action 'none'",
        ] {
            assert!(directives.contains(&want), "{want} in {csp}");
        }
        assert!(!csp.contains("-inline") && !csp.contains("-eval"), "{csp}");
        assert_eq!(resp.headers.get("X-Frame-Options"), Some("DENY"));
        assert_eq!(resp.headers.get("X-Content-Type-Options"), Some("nosniff"));
    }

    #[test]
    fn the_script_is_served_only_where_mcp_is() {
        assert!(asset(SCRIPT_PATH, true).is_some());
        assert!(asset(SCRIPT_PATH, false).is_none());
        assert!(asset(STYLE_PATH, false).is_some());
        assert!(asset("/console.js.map", true).is_none());
        let (ty, js) = asset(SCRIPT_PATH, true).expect("script");
        assert!(ty.starts_with("text/javascript"));
        // The token goes only into an Authorization header: the script never puts it in a
        // URL, a cookie or a log.
        for leak in [
            "document.cookie",
            "console.log",
            "localStorage",
            "?token",
            "innerHTML",
        ] {
            assert!(!js.contains(leak), "{leak} in the script");
        }
        assert!(js.contains("sessionStorage"));
    }
}
