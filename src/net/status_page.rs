//! The human status page at `GET /`: what a developer opens in a browser to see that the
//! machine is up, before pointing an agent at `/mcp`. Open, it says only what a passer-by
//! needs (name, version, uptime, where MCP is and whether it needs the token); the details
//! (address, date, heap, connections, cache) are for a request carrying the token.

use crate::hil::platform::c_str;
use crate::services::context::Services;
use crate::services::identity::VERSION;
use crate::services::identity::{BUILD_ID, Identity};
use crate::services::status::{Status, write_duration};
use alloc::string::String;
use core::fmt::Write as _;

/// How MCP is reached, for the page's access line.
pub struct Access {
    pub mcp_port: u16,
    pub token_required: bool,
    /// Whether the page is served where `/mcp` is: then it loads the console's script.
    pub console: bool,
}

impl Access {
    fn write_line(&self, out: &mut String) {
        let _ = if self.token_required {
            write!(out, "MCP on port {}, token required", self.mcp_port)
        } else {
            write!(
                out,
                "MCP on port {}, open: mcp.token=none (no token needed)",
                self.mcp_port
            )
        };
    }
}

const HEAD: &str = "<!DOCTYPE html>\n<html lang=en><meta charset=utf-8><title>irix7-mcp</title>\
<link rel=stylesheet href=/console.css>\n";

/// Room for the open page in one allocation (it is about 750 bytes), kept by a connection for
/// its next answer.
const OPEN_PAGE: usize = 1024;
/// Room for the detailed page in one allocation.
const DETAILED_PAGE: usize = 2048;

/// What the top of both pages says: what is running (which build, so an agent can see its
/// deploy took) and for how long.
pub struct Top<'a> {
    pub os_version: &'a str,
    pub abi_version: u32,
    pub identity: Identity,
    pub uptime_ms: u64,
}

/// The top of the pages from a full snapshot.
fn top(s: &Status) -> Top<'_> {
    Top {
        os_version: s.os_version(),
        abi_version: s.abi_version,
        identity: s.identity,
        uptime_ms: s.uptime_ms,
    }
}

/// Appends the open page, read straight from the platform: a full status snapshot would cost
/// allocations the page does not need, and `GET /` is the request a browser repeats.
pub fn render_open(out: &mut String, services: &Services, access: &Access) {
    let p = &*services.platform;
    let machine = p.machine_status();
    let top = Top {
        os_version: c_str(&machine.os_version),
        abi_version: services.abi_version,
        identity: Identity {
            image: p.image_info(),
        },
        uptime_ms: p.clock_ms(),
    };
    render(out, &top, access);
}

/// The open page. Nothing in it is secret or helps an attacker aim: no address, no figures.
/// Written into `out` with room made for it at once.
fn render(out: &mut String, top: &Top<'_>, access: &Access) {
    out.reserve(OPEN_PAGE);
    write_top(out, top);
    out.push_str("</table>\n<p>");
    access.write_line(out);
    out.push_str(
        "</p>\n<p>Details: send the token (<code>Authorization: Bearer</code>) or call the \
<code>status</code> tool.</p>\n",
    );
    write_end(out, access);
}

/// The end of both pages: the console's script where `/mcp` is, so a browser with
/// JavaScript turns the page into the live console (without it, the page is all there is).
/// The pages leave out the tags HTML makes optional (`head`, `body`, their ends): `GET /` is
/// the request a browser repeats, and every byte of it costs.
fn write_end(out: &mut String, access: &Access) {
    if access.console {
        out.push_str("<script src=/console.js></script>\n");
    }
}

/// Appends the page for a request that carried the token (or any local one when MCP is open).
pub fn render_details(out: &mut String, s: &Status, access: &Access) {
    out.reserve(DETAILED_PAGE);
    write_top(out, &top(s));
    for (label, value) in &s.rows() {
        for piece in ["<tr><td>", label, "</td><td>", value, "</td></tr>\n"] {
            out.push_str(piece);
        }
    }
    if let Some(line) = s.identity.refused_line() {
        out.push_str("<tr><td>deploy</td><td>");
        write_escaped(out, &line);
        out.push_str("</td></tr>\n");
    }
    // The cause, the previous boot's build and what was running: text the previous boot's
    // record supplied, so escaped like any other.
    if let Some(b) = &s.boot {
        out.push_str("<tr><td>boot</td><td>");
        write_escaped(out, &b.line());
        out.push_str("</td></tr>\n");
    }
    out.push_str("</table>\n<p>");
    access.write_line(out);
    out.push_str(
        "</p>\n<h2>Endpoints</h2>\n<ul>\n\
<li><a href=\"/mcp\">/mcp</a> &mdash; MCP over HTTP: POST JSON-RPC (2026-07-28 stateless, or a \
2025-11-25 session after <code>initialize</code>)</li>\n\
<li><a href=\"/\">/</a> &mdash; this page</li>\n</ul>\n",
    );
    write_end(out, access);
}

/// The head, the title and the rows both pages show.
fn write_top(out: &mut String, top: &Top<'_>) {
    out.push_str(HEAD);
    out.push_str("<h1>IRIX ");
    write_escaped(out, top.os_version);
    let digits = top.identity.sha256_short_digits();
    let sha = digits
        .as_ref()
        .and_then(|d| core::str::from_utf8(d).ok())
        .unwrap_or("unknown");
    // Pieces pushed as they are: the formatting machinery costs the repeated request more.
    for piece in [
        " &middot; irix7-mcp ",
        VERSION,
        "</h1>\n<table>\n<tr><td>module</td><td>irix7-mcp ",
        VERSION,
    ] {
        out.push_str(piece);
    }
    let _ = write!(out, ", ABI {}", top.abi_version);
    for piece in [
        "</td></tr>\n<tr><td>build</td><td>",
        BUILD_ID,
        ", image sha256 ",
        sha,
        "</td></tr>\n<tr><td>uptime</td><td>",
    ] {
        out.push_str(piece);
    }
    let _ = write_duration(out, top.uptime_ms);
    out.push_str("</td></tr>\n");
}

/// Appends text from the kernel, escaped for HTML.
fn write_escaped(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            _ => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::services::fs::cache::CacheStats;
    use crate::tools::testing::fake;

    fn open_page(services: &Services, access: &Access) -> String {
        let mut page = String::new();
        render_open(&mut page, services, access);
        page
    }

    fn details_page(s: &Status, access: &Access) -> String {
        let mut page = String::new();
        render_details(&mut page, s, access);
        page
    }

    #[test]
    fn the_page_says_which_build_runs() {
        let status = fake::ctx().services().status();
        let access = Access {
            mcp_port: 7801,
            token_required: true,
            console: true,
        };
        let want = format!(
            "<td>build</td><td>{}, image sha256 {}</td>",
            crate::services::identity::BUILD_ID,
            "5b".repeat(6)
        );
        let open = open_page(fake::ctx().services(), &access);
        let details = details_page(&status, &access);
        // Read from the platform or from a snapshot, the top is the same, uptime included.
        let top = |page: &str| {
            let uptime = page.find("<td>uptime</td>").expect("uptime");
            String::from(&page[..uptime + page[uptime..].find("</tr>").expect("row end")])
        };
        assert_eq!(top(&open), top(&details));
        assert!(top(&open).contains("<td>uptime</td><td>0d 00:"), "{open}");
        for page in [open, details] {
            assert!(page.contains(&want), "{page}");
            assert!(!page.contains("deploy"), "{page}");
        }
    }

    #[test]
    fn the_page_shows_the_disk_cache() {
        let mut status = fake::ctx().services().status();
        status.cache = Some(CacheStats {
            hits: 3,
            misses: 1,
            ..Default::default()
        });
        let access = Access {
            mcp_port: 7801,
            token_required: true,
            console: true,
        };
        let page = details_page(&status, &access);
        assert!(
            page.contains("<td>disk cache</td><td>3 hits, 1 misses, 0 evictions (75.0% hits)"),
            "{page}"
        );
    }

    #[test]
    fn the_open_page_shows_no_address_or_figures() {
        let mut ctx = fake::ctx();
        ctx.services_mut().net.ip = Some([10, 1, 2, 3]);
        ctx.services_mut().net.mac = [8, 0, 0x69, 1, 2, 3];
        let status = ctx.services().status();
        let access = Access {
            mcp_port: 7801,
            token_required: true,
            console: true,
        };
        let page = open_page(ctx.services(), &access);
        assert!(page.contains("MCP on port 7801, token required"), "{page}");
        assert!(page.contains("uptime"), "{page}");
        for secret in ["10.1.2.3", "08:00:69", "heap", "connections", "date", "ram"] {
            assert!(!page.contains(secret), "{secret} in {page}");
        }
        let open = Access {
            mcp_port: 7801,
            token_required: false,
            console: true,
        };
        assert!(open_page(ctx.services(), &open).contains("open: mcp.token=none"));
        assert!(details_page(&status, &access).contains("10.1.2.3"));
    }
}
