//! Content coding `deflate` end to end: the real image codes `tools/list` and the console's
//! script for a client that accepts it (what agents' HTTP clients and browsers send), and the
//! coded body inflates to the identity answer.

mod support;

use miniz_oxide::inflate::decompress_to_vec_zlib;
use support::guest::boot_guest;
use support::http::request;
use support::mcp::mcp_request;

/// `raw` with `Accept-Encoding: value` added to its head.
fn accepting(raw: &str, value: &str) -> String {
    raw.replacen("\r\n", &format!("\r\nAccept-Encoding: {value}\r\n"), 1)
}

#[test]
fn tools_list_is_coded_for_a_client_that_accepts_deflate() {
    let Some(g) = boot_guest(&[]) else { return };
    let list = mcp_request(
        7,
        "tools/list",
        serde_json::json!({}),
        serde_json::json!({}),
        "application/json",
    );
    let plain = request(g.mcp, &list);
    assert_eq!(plain.status, 200);
    assert_eq!(plain.header("content-encoding"), None);
    assert_eq!(plain.header("vary"), Some("Accept-Encoding"));
    let v: serde_json::Value = serde_json::from_slice(&plain.body).expect("JSON");
    assert!(
        v["result"]["tools"]
            .as_array()
            .is_some_and(|t| t.len() > 20),
        "{v}"
    );

    let coded = request(g.mcp, &accepting(&list, "gzip, deflate"));
    assert_eq!(coded.status, 200);
    assert_eq!(coded.header("content-encoding"), Some("deflate"));
    assert_eq!(coded.header("vary"), Some("Accept-Encoding"));
    assert_eq!(coded.header("content-type"), Some("application/json"));
    let length: usize = coded.header("content-length").unwrap().parse().unwrap();
    assert_eq!(length, coded.body.len());
    let inflated = decompress_to_vec_zlib(&coded.body).expect("a zlib stream");
    // The same answer, byte for byte, but for the era's `_meta` stamps, which carry the time.
    let w: serde_json::Value = serde_json::from_slice(&inflated).expect("JSON");
    assert_eq!(w["id"], 7);
    assert_eq!(w["result"]["tools"], v["result"]["tools"]);
    assert_eq!(inflated.len(), plain.body.len());
    assert!(
        coded.body.len() * 3 < plain.body.len(),
        "{} of {}",
        coded.body.len(),
        plain.body.len()
    );

    // Refused, or another coding only: identity.
    for refusal in ["deflate;q=0", "gzip, br"] {
        let r = request(g.mcp, &accepting(&list, refusal));
        assert_eq!(r.header("content-encoding"), None, "{refusal}");
        assert!(serde_json::from_slice::<serde_json::Value>(&r.body).is_ok());
    }
    // A tool call is never coded.
    let call = support::mcp::tool_request(8, "echo", serde_json::json!({"text": "x"}));
    let r = request(g.mcp, &accepting(&call, "deflate"));
    assert_eq!(r.header("content-encoding"), None);
    g.rig.stop().unwrap();
}

#[test]
fn the_console_script_is_coded_for_a_browser() {
    let Some(g) = boot_guest(&[]) else { return };
    let get = "GET /console.js HTTP/1.1\r\nHost: indy\r\n\r\n";
    let plain = request(g.mcp, get);
    assert_eq!(plain.status, 200);
    assert_eq!(plain.header("content-encoding"), None);
    let coded = request(g.mcp, &accepting(get, "gzip, deflate, br, zstd"));
    assert_eq!(coded.header("content-encoding"), Some("deflate"));
    assert_eq!(coded.header("x-frame-options"), Some("DENY"));
    let inflated = decompress_to_vec_zlib(&coded.body).expect("a zlib stream");
    assert_eq!(inflated, plain.body);
    assert!(coded.body.len() * 2 < plain.body.len());
    g.rig.stop().unwrap();
}
