//! The human status page at `GET /`: what a developer opens in a browser to see that the
//! machine is up, before pointing an agent at `/mcp`.

use crate::services::identity::BUILD_ID;
use crate::services::status::VERSION;
use crate::services::status::{Status, format_duration};
use alloc::format;
use alloc::string::String;

/// Renders the page. Every value comes from [`Status`]; nothing secret is in it (the token is
/// never part of the status).
pub fn render(s: &Status) -> String {
    let ip = s.ip_text();
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<title>irix7-mcp on {ip}</title>\
<style>body{{font-family:monospace;margin:2em;background:#1d1f21;color:#c5c8c6}}\
h1{{color:#81a2be}}td{{padding:0 1.5em 0 0}}a{{color:#8abeb7}}</style></head><body>\n\
<h1>IRIX {os} &middot; irix7-mcp {VERSION}</h1>\n<table>\n\
<tr><td>module</td><td>irix7-mcp {VERSION}, ABI {abi}</td></tr>\n\
<tr><td>build</td><td>{BUILD_ID}, image sha256 {sha}</td></tr>\n{deploy}\
<tr><td>uptime</td><td>{up}</td></tr>\n\
<tr><td>date</td><td>{date}</td></tr>\n\
<tr><td>ip</td><td>{ip}</td></tr>\n\
<tr><td>mac</td><td>{mac}</td></tr>\n\
<tr><td>ram</td><td>{ram} MiB</td></tr>\n\
<tr><td>module heap</td><td>{hu} of {hs} bytes in use (peak {hp})</td></tr>\n\
<tr><td>connections</td><td>{conn} open, {req} requests served</td></tr>\n\
<tr><td>disk cache</td><td>{cache}</td></tr>\n\
</table>\n<h2>Endpoints</h2>\n<ul>\n\
<li><a href=\"/mcp\">/mcp</a> &mdash; MCP over HTTP: POST JSON-RPC (2026-07-28 stateless, or a \
2025-11-25 session after <code>initialize</code>)</li>\n\
<li><a href=\"/\">/</a> &mdash; this page</li>\n</ul>\n</body></html>\n",
        os = escape(&s.os_version),
        abi = s.abi_version,
        sha = s.identity.sha256_short().as_deref().unwrap_or("unknown"),
        deploy = s.identity.refused_line().map_or(String::new(), |l| format!(
            "<tr><td>deploy</td><td>{}</td></tr>\n",
            escape(&l)
        )),
        up = format_duration(s.uptime_ms),
        date = s.date_text(),
        mac = s.mac_text(),
        ram = s.ram_bytes >> 20,
        hu = s.heap.used,
        hs = s.heap.size,
        hp = s.heap.peak,
        conn = s.net.open_connections,
        req = s.net.requests,
        cache = s.cache_text(),
    )
}

/// Escapes text from the kernel for HTML.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::services::fs::cache::CacheStats;
    use crate::tools::testing::fake;

    #[test]
    fn the_page_says_which_build_runs() {
        let status = fake::ctx().status();
        let page = render(&status);
        let want = format!(
            "<td>build</td><td>{}, image sha256 {}</td>",
            crate::services::identity::BUILD_ID,
            "5b".repeat(6)
        );
        assert!(page.contains(&want), "{page}");
        assert!(!page.contains("deploy"), "{page}");
    }

    #[test]
    fn the_page_shows_the_disk_cache() {
        let mut status = fake::ctx().status();
        status.cache = Some(CacheStats {
            hits: 3,
            misses: 1,
            ..Default::default()
        });
        let page = render(&status);
        assert!(
            page.contains("<td>disk cache</td><td>3 hits, 1 misses, 0 evictions (75.0% hits)"),
            "{page}"
        );
    }
}
