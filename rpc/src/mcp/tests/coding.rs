//! `tools/list` coded `deflate` as `Accept-Encoding` asks: the coded body inflates to the
//! identity answer to the same request, byte for byte.

use super::*;
use crate::http::{Handler, Request};
use miniz_oxide::inflate::decompress_to_vec_zlib;

/// `req` as the connection hands it to the server, with `Accept-Encoding` when given.
fn answer(s: &mut McpServer<Ctx>, req: &McpRequest, accept: Option<&str>) -> Response {
    let mut headers = req.headers();
    if let Some(a) = accept {
        headers.push("Accept-Encoding", a);
    }
    let mut http = Request {
        method: Method::Post,
        target: "/mcp".to_string(),
        headers,
        body: req.body(),
        ..Request::default()
    };
    Handler::handle(s, &mut http, PEER, T0)
}

/// The body as sent.
fn sent(mut r: Response) -> (Response, Vec<u8>) {
    let (body, done) = drain(&mut r, T0, 1);
    assert!(done);
    (r, body)
}

fn packed_server() -> McpServer<Ctx> {
    let mut s = server();
    s.pack_listings();
    s
}

#[test]
fn a_coded_listing_inflates_to_the_identity_answer() {
    let mut s = packed_server();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    for id in [
        json!(1),
        json!("a-string-id"),
        json!(9_007_199_254_740_991u64),
    ] {
        loop {
            let params = match &cursor {
                Some(c) => json!({"cursor": c}),
                None => json!({}),
            };
            let req = McpRequest::modern("tools/list", params).id(id.clone());
            let (plain, identity) = sent(answer(&mut s, &req, None));
            let (coded, bytes) = sent(answer(&mut s, &req, Some("gzip, deflate")));
            assert_eq!(plain.headers.get("Content-Encoding"), None);
            assert_eq!(plain.headers.get("Vary"), Some("Accept-Encoding"));
            assert_eq!(coded.headers.get("Content-Encoding"), Some("deflate"));
            assert_eq!(coded.headers.get("Vary"), Some("Accept-Encoding"));
            assert_eq!(coded.headers.get("Content-Type"), Some("application/json"));
            let inflated = decompress_to_vec_zlib(&bytes).expect("a zlib stream");
            assert!(
                inflated == identity,
                "{}",
                String::from_utf8_lossy(&inflated)
            );
            assert!(
                bytes.len() < identity.len(),
                "{} {}",
                bytes.len(),
                identity.len()
            );
            pages += 1;
            let v: Value = serde_json::from_slice(&identity).unwrap();
            assert_eq!(v["id"], id);
            match v["result"]["nextCursor"].as_str() {
                Some(c) => cursor = Some(c.to_string()),
                None => {
                    cursor = None;
                    break;
                }
            }
        }
    }
    assert!(pages > 3, "pages with and without nextCursor: {pages}");
}

#[test]
fn an_id_longer_than_a_stored_block_is_framed_in_several() {
    let mut s = packed_server();
    let id = "i".repeat(70_000);
    let req = McpRequest::modern("tools/list", json!({})).id(id.as_str());
    let (_, identity) = sent(answer(&mut s, &req, None));
    let (coded, bytes) = sent(answer(&mut s, &req, Some("deflate")));
    assert_eq!(coded.headers.get("Content-Encoding"), Some("deflate"));
    assert!(identity.len() > 70_000);
    assert!(decompress_to_vec_zlib(&bytes).expect("a zlib stream") == identity);
}

#[test]
fn a_legacy_session_s_listing_is_coded_too() {
    let mut s = packed_server();
    let (sid, _) = initialize(&mut s, "2025-06-18", T0);
    let req = McpRequest::legacy(&sid, "tools/list", json!({})).id(7);
    let (_, identity) = sent(answer(&mut s, &req, None));
    let (coded, bytes) = sent(answer(&mut s, &req, Some("br, deflate;q=0.9, gzip")));
    assert_eq!(
        coded.headers.get("Content-Encoding"),
        Some("deflate"),
        "{}",
        String::from_utf8_lossy(&identity)
    );
    assert!(decompress_to_vec_zlib(&bytes).expect("a zlib stream") == identity);
}

#[test]
fn only_a_packed_policy_wide_listing_is_coded() {
    let req = McpRequest::modern("tools/list", json!({})).id(2);
    // Not packed: identity, and nothing says it could vary.
    let mut s = server();
    let (r, body) = sent(answer(&mut s, &req, Some("deflate")));
    assert_eq!(r.headers.get("Content-Encoding"), None);
    assert_eq!(r.headers.get("Vary"), None);
    assert!(serde_json::from_slice::<Value>(&body).is_ok());
    // Refused by the client: identity.
    let mut s = packed_server();
    for refusal in ["deflate;q=0", "gzip", "identity"] {
        let (r, body) = sent(answer(&mut s, &req, Some(refusal)));
        assert_eq!(r.headers.get("Content-Encoding"), None, "{refusal}");
        assert_eq!(r.headers.get("Vary"), Some("Accept-Encoding"));
        assert!(serde_json::from_slice::<Value>(&body).is_ok());
    }
    // A cursor to a page that is not one of the packed pages: identity.
    let odd = ::base64::engine::general_purpose::URL_SAFE_NO_PAD.encode("o1");
    let req = McpRequest::modern("tools/list", json!({"cursor": odd})).id(3);
    let (r, body) = sent(answer(&mut s, &req, Some("deflate")));
    assert_eq!(r.headers.get("Content-Encoding"), None);
    let v: Value = serde_json::from_slice(&body).unwrap();
    assert!(v["result"]["tools"].is_array(), "{v}");
    // A caller narrower than the policy (here a gateway's narrowing) gets its tools copied
    // out: identity.
    let req = McpRequest::modern("tools/list", json!({}))
        .id(4)
        .header(crate::mcp::guard::authority::NARROWING_HEADER, "echo");
    let (r, body) = sent(answer(&mut s, &req, Some("deflate")));
    assert_eq!(r.headers.get("Content-Encoding"), None);
    assert_eq!(r.headers.get("Vary"), None);
    let v: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(
        v["result"]["tools"].as_array().map(Vec::len),
        Some(1),
        "{v}"
    );
    // Other answers are never coded.
    let req = McpRequest::modern(
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "x"}}),
    );
    let (r, _) = sent(answer(&mut s, &req, Some("deflate")));
    assert_eq!(r.headers.get("Content-Encoding"), None);
    assert_eq!(r.headers.get("Vary"), None);
}
