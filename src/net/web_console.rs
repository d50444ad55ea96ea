//! The browser console's assets and the security headers of every page the router serves.
//! The script turns the status page into a live console once the developer gives a token
//! (docs/console.md); it and the stylesheet are compiled into the image, served open (they
//! hold no secret: the page's own calls go through `/mcp` and are judged there), and the
//! headers keep the page from running any other script, from being framed and from having
//! its assets read as another type.

use alloc::vec::Vec;
use rpc::http::{Body, Response, Shared, Splice, coding};

/// The script, served on the MCP port only (it talks to `/mcp`).
pub const SCRIPT_PATH: &str = "/console.js";
/// The stylesheet of the page on every port.
pub const STYLE_PATH: &str = "/console.css";

const SCRIPT: &str = include_str!("web_console/console.js");
const STYLE: &str = include_str!("web_console/console.css");

/// The security header lines of the page and its assets, as sent (a macro, so the assets'
/// lines can add to the same text at build time). Script, style and calls from the module
/// only; images only as data (the screen thumbnail); no plugin, frame, form target or base;
/// never inside a frame (`frame-ancestors`, and `X-Frame-Options` for older browsers); no
/// guessing of types.
macro_rules! security {
    () => {
        "Content-Security-Policy: default-src 'none';script-src 'self';\
style-src 'self';img-src data:;connect-src 'self';frame-ancestors 'none';base-uri 'none';\
form-action 'none'\r\nX-Content-Type-Options: nosniff\r\nX-Frame-Options: DENY\r\n"
    };
}

/// The security header lines (see [`security`]).
pub const SECURITY: &str = security!();
/// An asset's lines as identity: it could have been coded (`coding::VARIES`).
const SECURITY_VARIES: &str = concat!(security!(), "Vary: Accept-Encoding\r\n");
/// An asset's lines coded `deflate` (`coding::CODED`).
const SECURITY_CODED: &str = concat!(
    security!(),
    "Content-Encoding: deflate\r\nVary: Accept-Encoding\r\n"
);

/// An asset served on a port: its type, its bytes, and which of [`PackedAssets`]'s it is.
pub struct Asset {
    pub content_type: &'static str,
    pub bytes: &'static str,
    script: bool,
}

/// The asset at `path`, if one is served there on this port.
pub fn asset(path: &str, mcp_port: bool) -> Option<Asset> {
    match path {
        SCRIPT_PATH if mcp_port => Some(Asset {
            content_type: "text/javascript; charset=utf-8",
            bytes: SCRIPT,
            script: true,
        }),
        STYLE_PATH => Some(Asset {
            content_type: "text/css; charset=utf-8",
            bytes: STYLE,
            script: false,
        }),
        _ => None,
    }
}

/// The assets deflated once, at init, for the browsers that accept `deflate` (all of them):
/// the script goes out in a third of its bytes.
pub struct PackedAssets {
    script: Option<coding::Packed>,
    style: Option<coding::Packed>,
}

impl Default for PackedAssets {
    fn default() -> PackedAssets {
        PackedAssets {
            script: coding::Packed::new(SCRIPT.as_bytes(), coding::LEVEL),
            style: coding::Packed::new(STYLE.as_bytes(), coding::LEVEL),
        }
    }
}

/// The answer for an asset: the bytes with the security headers, coded `deflate` when the
/// request's `Accept-Encoding` (`accept`) prefers it. Not cached across builds: `no-cache`
/// makes a browser ask again, so a deploy's new script is the one that runs.
pub fn serve(asset: &Asset, packed: &PackedAssets, accept: Option<&str>) -> Response {
    let coded = if asset.script {
        &packed.script
    } else {
        &packed.style
    };
    let mut resp = match coded {
        Some(p) if coding::prefers_deflate(accept) => {
            let mut resp = Response::empty(200);
            resp.headers.push_static("Content-Type", asset.content_type);
            resp.body = coding::coded(b"", p, b"");
            resp.headers.set_lines(SECURITY_CODED);
            resp
        }
        _ => {
            // Sent from the image: no answer copies the script onto the heap.
            let mut resp = Response::empty(200);
            resp.headers.push_static("Content-Type", asset.content_type);
            let bytes = asset.bytes.as_bytes();
            let splice = Splice {
                at: 0,
                shared: Shared::Image(bytes),
                range: 0..bytes.len(),
            };
            resp.body = Body::Spliced(Vec::new(), splice);
            resp.headers.set_lines(if coded.is_some() {
                SECURITY_VARIES
            } else {
                SECURITY
            });
            resp
        }
    };
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
        let script = asset(SCRIPT_PATH, true).expect("script");
        let js = script.bytes;
        assert!(script.content_type.starts_with("text/javascript"));
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

    #[test]
    fn an_asset_goes_out_coded_when_the_browser_accepts_deflate() {
        assert!(SECURITY_VARIES.starts_with(SECURITY) && SECURITY_VARIES.ends_with(coding::VARIES));
        assert!(SECURITY_CODED.starts_with(SECURITY) && SECURITY_CODED.ends_with(coding::CODED));
        let packed = PackedAssets::default();
        for (path, mcp_port) in [(SCRIPT_PATH, true), (STYLE_PATH, false)] {
            let a = asset(path, mcp_port).expect("asset");
            let mut resp = serve(&a, &packed, Some("gzip, deflate, br, zstd"));
            assert_eq!(resp.headers.get("Content-Encoding"), Some("deflate"));
            assert_eq!(resp.headers.get("Vary"), Some("Accept-Encoding"));
            assert_eq!(resp.headers.get("Content-Type"), Some(a.content_type));
            assert_eq!(resp.headers.get("X-Frame-Options"), Some("DENY"));
            assert_eq!(resp.headers.get("Cache-Control"), Some("no-cache"));
            let (body, _) = rpc::testing::drain(&mut resp, 0, 1);
            let inflated = miniz_oxide::inflate::decompress_to_vec_zlib(&body).expect("zlib");
            assert_eq!(inflated, a.bytes.as_bytes(), "{path}");
            assert!(
                body.len() < a.bytes.len() * 2 / 3,
                "{path}: {} bytes",
                body.len()
            );
            for accept in [None, Some("gzip"), Some("deflate;q=0")] {
                let mut resp = serve(&a, &packed, accept);
                assert_eq!(resp.headers.get("Content-Encoding"), None);
                assert_eq!(resp.headers.get("Vary"), Some("Accept-Encoding"));
                assert_eq!(resp.headers.get("X-Frame-Options"), Some("DENY"));
                let (body, _) = rpc::testing::drain(&mut resp, 0, 1);
                assert_eq!(body, a.bytes.as_bytes());
            }
        }
    }
}
