use super::*;
use crate::hil::framebuffer::PixelKind;
use crate::services::screen::fake::FakeFb;
use crate::tools::testing::fake;
use rpc::http::{Headers, Method};

fn router(board: Option<FakeFb>, token: Option<&str>) -> Router {
    let mut ctx = fake::ctx();
    ctx.services_mut().screen =
        board.map(|f| Box::new(f) as Box<dyn crate::hil::framebuffer::Framebuffer>);
    let mut config = crate::tools::testing::harness::config();
    config.token = token.map(alloc::string::String::from);
    let entropy: rpc::mcp::Entropy = Box::new(|b: &mut [u8]| b.fill(7));
    let mut mcp = McpServer::new(config, Rc::new(RefCell::new(ctx)), entropy);
    crate::tools::register(&mut mcp).expect("tables register");
    let mut r = Router::new(mcp, 7801);
    r.on_port(7801);
    r
}

fn get(r: &mut Router, method: Method, auth: Option<&str>) -> (Response, Vec<u8>) {
    request(r, method, "/screen.bmp", &[], auth)
}

/// A request of `path` with `fields` and no body.
fn build(method: Method, path: &str, fields: &[(&str, &str)]) -> Request {
    let mut headers = Headers::default();
    for (n, v) in fields {
        headers.push(*n, *v);
    }
    Request {
        method,
        target: path.into(),
        headers,
        body: Vec::new(),
        admission: None,
        answer: Vec::new(),
        earlier: 0,
    }
}

/// What admission says of a `GET` of `path` with `fields`, from another machine: the
/// status of a refusal.
fn admit(r: &mut Router, path: &str, fields: &[(&str, &str)]) -> Result<Admission, u16> {
    let peer = Peer {
        addr: [10, 0, 0, 9],
        port: 1,
    };
    let req = build(Method::Get, path, fields);
    r.admit(&req, peer, None, 0)
        .map_err(|refused| refused.status)
}

fn request(
    r: &mut Router,
    method: Method,
    path: &str,
    extra: &[(&str, &str)],
    auth: Option<&str>,
) -> (Response, Vec<u8>) {
    let mut fields = extra.to_vec();
    fields.extend(auth.map(|a| ("Authorization", a)));
    let mut req = build(method, path, &fields);
    let peer = Peer {
        addr: [127, 0, 0, 1],
        port: 1,
    };
    let mut resp = r.handle(&mut req, peer, 0);
    let mut out = Vec::new();
    if let Body::Stream(src) = &mut resp.body {
        for _ in 0..10_000 {
            if src.poll(&mut out, 1460, 0) == BodyPoll::End {
                break;
            }
        }
    }
    (resp, out)
}

fn board() -> FakeFb {
    let mut fb = FakeFb::new(16, 8, PixelKind::Rgb24);
    fb.set(3, 0, 0x00_30_20_10);
    fb
}

#[test]
fn the_bmp_needs_the_token() {
    let mut r = router(Some(board()), Some("s3cret"));
    let (resp, _) = get(&mut r, Method::Get, None);
    assert_eq!(resp.status, 401);
    assert_eq!(resp.headers.get("WWW-Authenticate"), Some("Bearer"));
    let (resp, _) = get(&mut r, Method::Get, Some("Bearer wrong"));
    assert_eq!(resp.status, 401);
    let (resp, bmp) = get(&mut r, Method::Get, Some("Bearer s3cret"));
    assert_eq!(resp.status, 200);
    assert_eq!(resp.headers.get("Content-Type"), Some("image/bmp"));
    assert_eq!(resp.headers.get("Cache-Control"), Some("no-store"));
    assert_eq!(
        bmp.len() as u64,
        crate::services::screen::bmp::file_len(16, 8)
    );
    // The top row is stored last; pixel 3 is BGR 30 20 10.
    let top = 54 + 7 * 48;
    assert_eq!(&bmp[top + 9..top + 12], &[0x30, 0x20, 0x10]);
}

#[test]
fn no_board_is_503_and_other_methods_405() {
    let mut r = router(None, None);
    let (resp, _) = get(&mut r, Method::Get, None);
    assert_eq!(resp.status, 503);
    let (resp, _) = get(&mut r, Method::Head, None);
    assert_eq!(resp.status, 503);
    let (resp, _) = get(&mut r, Method::Post, None);
    assert_eq!(resp.status, 405);
}

fn text(body: &[u8], resp: &Response) -> alloc::string::String {
    match &resp.body {
        Body::Full(b) => alloc::string::String::from_utf8_lossy(b).into_owned(),
        Body::Spliced(own, s) => {
            let (before, after) = own.split_at(s.at);
            let whole = [before, s.bytes(), after].concat();
            alloc::string::String::from_utf8_lossy(&whole).into_owned()
        }
        _ => alloc::string::String::from_utf8_lossy(body).into_owned(),
    }
}

#[test]
fn port_80_serves_the_status_page_only() {
    let mut r = router(Some(board()), Some("a-token-of-16-chars"));
    r.on_port(80);
    let auth = Some("Bearer a-token-of-16-chars");
    for (method, path) in [
        (Method::Get, "/screen.bmp"),
        (Method::Post, "/mcp"),
        (Method::Get, "/mcp"),
    ] {
        assert_eq!(
            request(&mut r, method, path, &[], auth).0.status,
            404,
            "{path}"
        );
    }
    assert_eq!(request(&mut r, Method::Get, "/", &[], None).0.status, 200);
    // The same requests on the MCP port reach their handlers.
    r.on_port(7801);
    assert_eq!(get(&mut r, Method::Get, auth).0.status, 200);
    // A router not told its port serves the status page only.
    let mut fresh = router(Some(board()), Some("a-token-of-16-chars"));
    fresh.on_port(0);
    assert_eq!(get(&mut fresh, Method::Get, auth).0.status, 404);
}

#[test]
fn the_routes_follow_the_roles_of_the_capability_table() {
    let mut r = router(Some(board()), Some("admin-token-0123456"));
    let roles = "watcher:observe:watcher-token-01234,tty:serial.read:tty-token-012345678";
    let tokens = rpc::mcp::authority::parse_tokens(roles, |_| Ok(())).unwrap();
    let config = {
        let mut c = crate::tools::testing::harness::config();
        c.token = Some("admin-token-0123456".into());
        c.tokens = tokens;
        c
    };
    let ctx = r.mcp.context().clone();
    let entropy: rpc::mcp::Entropy = Box::new(|b: &mut [u8]| b.fill(7));
    r.mcp = McpServer::with_catalog_of(&r.mcp, config, ctx, entropy);
    // The screen is observe: the watcher gets it, a role without screen.capture does not.
    assert_eq!(
        get(&mut r, Method::Get, Some("Bearer watcher-token-01234"))
            .0
            .status,
        200
    );
    let (resp, body) = get(&mut r, Method::Get, Some("Bearer tty-token-012345678"));
    assert_eq!(resp.status, 403);
    let why = text(&body, &resp);
    assert!(
        why.contains("screen.capture") && why.contains("token tty"),
        "{why}"
    );
    // The status page's details are the status capability.
    let page = |r: &mut Router, auth| {
        let (resp, body) = request(r, Method::Get, "/", &[], Some(auth));
        text(&body, &resp).contains("module heap")
    };
    assert!(page(&mut r, "Bearer watcher-token-01234"));
    assert!(!page(&mut r, "Bearer tty-token-012345678"));
    // The legacy event stream is the session capability.
    let (resp, _) = request(
        &mut r,
        Method::Get,
        "/mcp",
        &[],
        Some("Bearer tty-token-012345678"),
    );
    assert_eq!(resp.status, 403);
    let (resp, _) = request(
        &mut r,
        Method::Get,
        "/mcp",
        &[],
        Some("Bearer watcher-token-01234"),
    );
    assert_ne!(resp.status, 403);
}

#[test]
fn the_status_page_shows_details_only_with_the_token() {
    let mut r = router(None, Some("a-token-of-16-chars"));
    let (resp, body) = request(&mut r, Method::Get, "/", &[], None);
    let page = text(&body, &resp);
    assert!(page.contains("MCP on port 7801, token required"), "{page}");
    assert!(!page.contains("module heap"), "{page}");
    let (resp, body) = request(
        &mut r,
        Method::Get,
        "/",
        &[],
        Some("Bearer a-token-of-16-chars"),
    );
    let page = text(&body, &resp);
    assert!(page.contains("module heap"), "{page}");
    // A wrong token is refused at admission, like on /mcp.
    let refused = admit(&mut r, "/", &[("Authorization", "Bearer wrong")]);
    assert_eq!(refused.unwrap_err(), 401);
    // Open (mcp.token=none): the page says so and shows the details to a local Host.
    let mut open = router(None, None);
    let (resp, body) = request(
        &mut open,
        Method::Get,
        "/",
        &[("Host", "localhost:7801")],
        None,
    );
    let page = text(&body, &resp);
    assert!(page.contains("open: mcp.token=none"), "{page}");
    assert!(page.contains("module heap"), "{page}");
    let (resp, body) = request(
        &mut open,
        Method::Get,
        "/",
        &[("Host", "rebind.evil")],
        None,
    );
    let page = text(&body, &resp);
    assert!(!page.contains("module heap"), "{page}");
}

#[test]
fn the_page_and_its_assets_carry_the_security_headers() {
    let mut r = router(None, Some("a-token-of-16-chars"));
    for path in ["/", "/console.js", "/console.css"] {
        let (resp, body) = request(&mut r, Method::Get, path, &[], None);
        assert_eq!(resp.status, 200, "{path}");
        // The assets' lines add `Vary`, as they could have been coded.
        assert!(
            resp.headers.lines().starts_with(web_console::SECURITY),
            "{path}"
        );
        assert_eq!(resp.headers.get("X-Frame-Options"), Some("DENY"), "{path}");
        assert!(!text(&body, &resp).is_empty(), "{path}");
    }
    let (resp, body) = request(&mut r, Method::Get, "/", &[], None);
    let page = text(&body, &resp);
    assert!(
        page.contains("<link rel=stylesheet href=/console.css>"),
        "{page}"
    );
    assert!(page.contains("<script src=/console.js></script>"), "{page}");
    // Inline script or style would be refused by the policy: the page has none.
    assert!(
        !page.contains("<style") && !page.contains("<script>"),
        "{page}"
    );
    let (resp, _) = request(&mut r, Method::Get, "/console.js", &[], None);
    assert_eq!(
        resp.headers.get("Content-Type"),
        Some("text/javascript; charset=utf-8")
    );
    // The details page (the token sent by a client, not the browser) is the same page.
    let (resp, body) = request(
        &mut r,
        Method::Get,
        "/",
        &[],
        Some("Bearer a-token-of-16-chars"),
    );
    assert_eq!(resp.headers.lines(), web_console::SECURITY);
    assert!(text(&body, &resp).contains("<script src=/console.js>"));
    // The assets take GET and HEAD only, and no body.
    assert_eq!(
        request(&mut r, Method::Post, "/console.js", &[], None)
            .0
            .status,
        405
    );
    let with_body = admit(&mut r, "/console.css", &[("Content-Length", "5")]);
    assert_eq!(with_body.unwrap_err(), 413);
    assert!(matches!(
        admit(&mut r, "/console.css", &[]),
        Ok(Admission::Anonymous)
    ));
}

#[test]
fn port_80_keeps_its_short_page_without_the_console() {
    let mut r = router(None, Some("a-token-of-16-chars"));
    r.on_port(80);
    let (resp, body) = request(&mut r, Method::Get, "/", &[], None);
    let page = text(&body, &resp);
    assert!(!page.contains("<script"), "{page}");
    assert!(page.contains("/console.css"), "{page}");
    assert_eq!(resp.headers.lines(), web_console::SECURITY);
    assert_eq!(
        request(&mut r, Method::Get, "/console.css", &[], None)
            .0
            .status,
        200
    );
    assert_eq!(
        request(&mut r, Method::Get, "/console.js", &[], None)
            .0
            .status,
        404
    );
}
