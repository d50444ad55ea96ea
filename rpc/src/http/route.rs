//! The answers every router needs: 404 for an unknown path, 405 with `Allow` for a path
//! that serves only GET asked with another method, 413 for a body a resource does not take.

use super::message::{Field, Method, Request, Response};

/// Checks that `req` is a GET, or a HEAD (served wherever GET is: the HTTP layer drops the
/// body). `Err` carries the 405 to send back, with `Allow: GET, HEAD`. (The MCP endpoint
/// answers its own 405s: every other path of the module's serves GET only.)
pub fn get_only(req: &Request) -> Result<(), Response> {
    if matches!(req.method, Method::Get | Method::Head) {
        return Ok(());
    }
    let mut resp = Response::full(405, "text/plain; charset=utf-8", "405 Method Not Allowed\n");
    resp.headers.push_static("Allow", "GET, HEAD");
    Err(resp)
}

/// For [`super::Handler::admit`]: 413 when a request head announces a body that the
/// resource does not take (so it is discarded, not buffered).
pub fn no_body(head: &Request) -> Result<(), Response> {
    let announced = head.headers.field(Field::TransferEncoding).is_some()
        || head
            .headers
            .field(Field::ContentLength)
            .is_some_and(|n| n.trim() != "0");
    if announced {
        Err(super::response::error(
            413,
            "this resource takes no request body",
        ))
    } else {
        Ok(())
    }
}

/// 404 with a short plain-text body.
pub fn not_found() -> Response {
    Response::full(404, "text/plain; charset=utf-8", "404 Not Found\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::message::{Body, Headers};
    use alloc::vec::Vec;

    fn req(method: Method) -> Request {
        Request {
            method,
            target: "/mcp".into(),
            headers: Headers::default(),
            body: Vec::new(),
            admission: None,
            answer: Vec::new(),
            earlier: 0,
        }
    }

    #[test]
    fn only_get_and_head_pass_and_others_get_405_with_allow() {
        assert!(get_only(&req(Method::Get)).is_ok());
        assert!(get_only(&req(Method::Head)).is_ok());
        for m in [Method::Post, Method::Put, Method::Other("BREW".into())] {
            let resp = get_only(&req(m)).unwrap_err();
            assert_eq!(resp.status, 405);
            assert_eq!(resp.headers.get("allow"), Some("GET, HEAD"));
        }
    }

    #[test]
    fn not_found_is_404() {
        let resp = not_found();
        assert_eq!(resp.status, 404);
        assert!(matches!(resp.body, Body::Full(ref b) if b.starts_with(b"404")));
    }
}
