//! The two answers every router needs: 404 for an unknown path, 405 with `Allow` for a known
//! path asked with the wrong method.

use alloc::string::String;

use super::message::{Field, Method, Request, Response};

/// Checks `req`'s method against the methods a path serves. HEAD is served wherever GET is
/// (the HTTP layer drops the body). `Err` carries the 405 to send back.
pub fn allow(req: &Request, allowed: &[Method]) -> Result<(), Response> {
    let ok = allowed.contains(&req.method)
        || (req.method == Method::Head && allowed.contains(&Method::Get));
    if ok {
        Ok(())
    } else {
        Err(method_not_allowed(allowed))
    }
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

/// 405 with `Allow` listing `allowed` (plus HEAD where GET is allowed).
pub fn method_not_allowed(allowed: &[Method]) -> Response {
    let mut allow = String::new();
    for m in allowed {
        push_method(&mut allow, m.as_str());
        if *m == Method::Get && !allowed.contains(&Method::Head) {
            push_method(&mut allow, "HEAD");
        }
    }
    let mut resp = Response::full(405, "text/plain; charset=utf-8", "405 Method Not Allowed\n");
    resp.headers.push("Allow", allow);
    resp
}

fn push_method(list: &mut String, method: &str) {
    if !list.is_empty() {
        list.push_str(", ");
    }
    list.push_str(method);
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
        }
    }

    const MCP: &[Method] = &[Method::Get, Method::Post, Method::Delete];

    #[test]
    fn allowed_methods_pass() {
        assert!(allow(&req(Method::Post), MCP).is_ok());
        assert!(allow(&req(Method::Head), MCP).is_ok());
        assert!(allow(&req(Method::Head), &[Method::Post]).is_err());
    }

    #[test]
    fn wrong_method_gets_405_with_allow() {
        let resp = allow(&req(Method::Put), MCP).unwrap_err();
        assert_eq!(resp.status, 405);
        assert_eq!(resp.headers.get("allow"), Some("GET, HEAD, POST, DELETE"));
        let resp = allow(&req(Method::Other("BREW".into())), &[Method::Post]).unwrap_err();
        assert_eq!(resp.headers.get("Allow"), Some("POST"));
    }

    #[test]
    fn not_found_is_404() {
        let resp = not_found();
        assert_eq!(resp.status, 404);
        assert!(matches!(resp.body, Body::Full(ref b) if b.starts_with(b"404")));
    }
}
