//! The screen tools on the rig with the real module image: a line written to the
//! console shows in a `screen.capture` PNG (decoded with the `png` crate) where the rig's
//! Newport drew it; `GET /screen.bmp` (decoded with the `bmp` crate) is the full 1280×1024 mode
//! and, box-filtered by 2, is the PNG pixel for pixel; without the token it is 401; and
//! `resources/read irix7://screen` is the same thumbnail.

mod support;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use host_http::Response;
use serde_json::{Value, json};
use std::net::SocketAddr;
use support::guest::{Guest, boot_guest};
use support::http::request;
use support::mcp::{
    call_tool_with_token, expect_success, mcp_request, messages, tool_request, with_bearer,
};
use support::picture::{Rgb, decode_bmp, decode_png};

const TOKEN: &str = "screen-test-token";

/// A tool call with the token that must succeed; the whole result.
fn call(addr: SocketAddr, tool: &str, args: Value) -> Value {
    expect_success(tool, call_tool_with_token(addr, TOKEN, tool, args))
}

fn capture(g: &Guest, args: Value) -> (Value, Rgb) {
    let r = call(g.mcp, "screen.capture", args);
    let block = &r["content"][0];
    assert_eq!(block["type"], "image", "{r}");
    assert_eq!(block["mimeType"], "image/png");
    let png = STANDARD
        .decode(block["data"].as_str().expect("base64 data"))
        .expect("valid base64");
    (r, decode_png(&png))
}

fn get_bmp(addr: SocketAddr, token: bool) -> Response {
    let auth = if token {
        format!("Authorization: Bearer {TOKEN}\r\n")
    } else {
        String::new()
    };
    request(
        addr,
        &format!("GET /screen.bmp HTTP/1.1\r\nHost: indy\r\n{auth}\r\n"),
    )
}

#[test]
fn a_console_line_shows_in_the_capture_and_the_bmp_is_the_full_mode() {
    let Some(g) = boot_guest(&[&format!("mcp.token={TOKEN}")]) else {
        return;
    };
    let before = decode_bmp(&get_bmp(g.mcp, true).body);

    // A client's line is written after the mark `[mcp] `: the row shows both.
    let marker = "[mcp] SCREEN CAPTURE MARKER 7 ##########";
    call(
        g.mcp,
        "console.write",
        json!({"text": "SCREEN CAPTURE MARKER 7 ##########"}),
    );
    let (result, thumb) = capture(&g, json!({}));

    // The stated size: the default scale 2 of the 1280×1024 mode.
    let st = &result["structuredContent"];
    assert_eq!(st["mode"]["width"], 1280, "{st}");
    assert_eq!(st["mode"]["height"], 1024);
    assert_eq!(st["scale"], 2);
    assert_eq!(
        (st["width"].as_u64(), st["height"].as_u64()),
        (Some(640), Some(512))
    );
    assert_eq!((thumb.width, thumb.height), (640, 512));
    let link = &result["content"][1];
    assert_eq!(link["type"], "resource_link", "{result}");
    assert_eq!(link["uri"], "http://172.31.77.2:7801/screen.bmp");

    // The full-resolution BMP: the whole mode.
    let resp = get_bmp(g.mcp, true);
    assert_eq!(resp.status, 200, "{}", resp.text());
    assert_eq!(resp.header("Content-Type"), Some("image/bmp"));
    assert_eq!(resp.header("Cache-Control"), Some("no-store"));
    let after = decode_bmp(&resp.body);
    assert_eq!((after.width, after.height), (1280, 1024));

    // Where the line was drawn: the pixels that changed, one 16-pixel text row starting at
    // the left edge, as wide as the marker's 8-pixel cells. The console.write is audited, so
    // its audit line follows in the next text row (and nothing else changed).
    let all_changed: Vec<(usize, usize)> = (0..1024)
        .flat_map(|y| (0..1280).map(move |x| (x, y)))
        .filter(|&(x, y)| before.at(x, y) != after.at(x, y))
        .collect();
    assert!(!all_changed.is_empty(), "the marker line changed no pixel");
    let top = all_changed.iter().map(|p| p.1).min().unwrap();
    let row_end = (top / 16 + 1) * 16;
    let changed: Vec<(usize, usize)> = all_changed
        .iter()
        .copied()
        .filter(|p| p.1 < row_end)
        .collect();
    let bottom = changed.iter().map(|p| p.1).max().unwrap();
    let right = changed.iter().map(|p| p.0).max().unwrap();
    assert!(bottom - top < 16, "changes span rows {top}..={bottom}");
    assert!(
        all_changed.iter().all(|p| p.1 < row_end + 16),
        "changes below the marker's row and the audit line's"
    );
    assert!(
        right < marker.len() * 8 && right >= (marker.len() - 1) * 8,
        "changes end at x {right}"
    );
    let bg = after.background();
    assert!(changed.iter().all(|&(x, y)| after.at(x, y) != bg));

    // In the thumbnail, the marker's cells differ from the background there too.
    let thumb_bg = thumb.background();
    assert_eq!(thumb_bg, bg);
    let band = (top / 2..=bottom / 2).flat_map(|y| (0..marker.len() * 4).map(move |x| (x, y)));
    let inked = band.filter(|&(x, y)| thumb.at(x, y) != thumb_bg).count();
    assert!(
        inked > marker.len(),
        "only {inked} thumbnail pixels show the marker"
    );

    // The thumbnail is the full capture box-filtered by 2, pixel for pixel.
    let shrunk = after.shrink(2);
    let mismatch = (0..512 * 640)
        .filter(|&i| shrunk.px[i] != thumb.px[i])
        .count();
    assert_eq!(
        mismatch, 0,
        "thumbnail pixels differing from the BMP shrunk by 2"
    );

    // A region at full scale is those very pixels.
    let (_, cut) = capture(
        &g,
        json!({"scale": 1, "region": {"x": 0, "y": top, "width": 64, "height": 16}}),
    );
    assert_eq!((cut.width, cut.height), (64, 16));
    for y in 0..16 {
        for x in 0..64 {
            assert_eq!(cut.at(x, y), after.at(x, top + y), "({x},{})", top + y);
        }
    }

    // The resource is the default thumbnail.
    let raw = mcp_request(
        2,
        "resources/read",
        json!({"uri": "irix7://screen"}),
        json!({}),
        "application/json, text/event-stream",
    );
    let raw = raw.replacen("\r\nHost:", "\r\nMcp-Name: irix7://screen\r\nHost:", 1);
    let r = request(g.mcp, &with_bearer(&raw, TOKEN));
    assert_eq!(r.status, 200, "{}", r.text());
    let msg = messages(&r.body).pop().expect("a JSON-RPC message");
    let c = &msg["result"]["contents"][0];
    assert_eq!(c["mimeType"], "image/png", "{msg}");
    let res = decode_png(&STANDARD.decode(c["blob"].as_str().unwrap()).unwrap());
    assert_eq!((res.width, res.height), (640, 512));
    assert_eq!(res.px, thumb.px);
}

#[test]
fn the_bmp_needs_the_token_and_bad_regions_are_refused() {
    let Some(g) = boot_guest(&[&format!("mcp.token={TOKEN}")]) else {
        return;
    };
    let r = get_bmp(g.mcp, false);
    assert_eq!(r.status, 401, "{}", r.text());
    assert_eq!(r.header("WWW-Authenticate"), Some("Bearer"));
    let r = request(
        g.mcp,
        "GET /screen.bmp HTTP/1.1\r\nHost: indy\r\nAuthorization: Bearer wrong\r\n\r\n",
    );
    assert_eq!(r.status, 401);

    let r = request(
        g.mcp,
        &with_bearer(
            &tool_request(
                3,
                "screen.capture",
                json!({"region": {"x": 1200, "y": 0, "width": 100, "height": 10}}),
            ),
            TOKEN,
        ),
    );
    let msg = messages(&r.body).pop().expect("a JSON-RPC message");
    assert_eq!(msg["result"]["isError"], true, "{msg}");
    let text = msg["result"]["content"][0]["text"].as_str().unwrap_or("");
    assert!(
        text.starts_with("E_INVAL: region 100x10 at (1200,0)"),
        "{text}"
    );
}
