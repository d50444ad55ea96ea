//! Sends each HTTP request to its handler. On the MCP port: `/mcp` the MCP endpoint (which
//! checks Host or Origin and the token itself), `/screen.bmp` the full-resolution screen
//! (guarded like `/mcp`), `/` the status page and `/console.js` its live console's script.
//! On any other port (80) only the status page and its stylesheet `/console.css`: a browser
//! pointed at the machine finds it, and nothing else is reachable there. Anything else is 404.
//! Every page and asset carries the security headers of `web_console::SECURITY`.
//!
//! The status page is open in its short form (name, version, uptime, where MCP is and whether
//! it needs the token); the details (address, heap, connections, date) are for a request that
//! carries the token, checked and rate-limited like `/mcp` (docs/security.md).

use super::{debug_rsp, status_page, web_console};
use crate::hil::framebuffer::FbError;
use crate::services::screen::{Capture, CaptureError, Format, Poll};
use crate::tools::Ctx;
use crate::tools::capabilities;
use alloc::boxed::Box;
use alloc::rc::Rc;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::cell::RefCell;
use core::mem;
use rpc::http::{
    Admission, Body, BodyPoll, BodySource, Field, Handler, Peer, Request, Response, route,
};
use rpc::mcp::Door;
use rpc::mcp::McpServer;

/// The module's request handler.
pub struct Router {
    pub mcp: McpServer<Ctx>,
    /// Requests answered since boot.
    pub requests: u64,
    /// The port `/mcp` and `/screen.bmp` are served on.
    mcp_port: u16,
    /// The local port of the connection being served (see `Handler::on_port`); 0 until the
    /// server says, which serves the status page only.
    local_port: u16,
    /// The console's assets, deflated once.
    assets: web_console::PackedAssets,
}

impl Router {
    pub fn new(mcp: McpServer<Ctx>, mcp_port: u16) -> Self {
        Router {
            mcp,
            requests: 0,
            mcp_port,
            local_port: 0,
            assets: web_console::PackedAssets::default(),
        }
    }

    fn on_mcp_port(&self) -> bool {
        self.local_port == self.mcp_port && self.mcp_port != 0
    }

    /// `GET /`: the short page, or the detailed one when the request carries the token (or
    /// `/mcp` is open and the Host check passes).
    fn status_page(&mut self, req: &mut Request, peer: Peer) -> Response {
        if let Err(resp) = route::get_only(req) {
            return resp;
        }
        let detailed = (req.headers.field(Field::Authorization).is_some()
            || !self.mcp.token_required())
            && self
                .mcp
                .authorize(
                    &req.headers,
                    peer,
                    Door::Route(capabilities::STATUS_DETAILS),
                )
                .is_ok();
        let ctx = self.mcp.context().borrow();
        let access = status_page::Access {
            mcp_port: self.mcp_port,
            token_required: self.mcp.token_required(),
            console: self.on_mcp_port(),
        };
        // Written into the room of the connection's last answer: no allocation.
        let mut page = String::from_utf8(mem::take(&mut req.answer)).unwrap_or_default();
        page.clear();
        if detailed {
            status_page::render_details(&mut page, &ctx.services().status(), &access);
        } else {
            status_page::render_open(&mut page, ctx.services(), &access);
        }
        let mut resp = Response::full(200, "text/html; charset=utf-8", page);
        web_console::secure(&mut resp);
        resp.headers.push_static("Cache-Control", "no-store");
        resp
    }

    /// `GET /screen.bmp`: the whole screen as a 24-bit BMP, streamed a batch of rows per poll.
    fn screen_bmp(&mut self, req: &Request, peer: Peer) -> Response {
        if let Err(resp) = route::get_only(req) {
            return resp;
        }
        let door = Door::Route(capabilities::SCREEN_BMP);
        if let Err(refused) = self.mcp.authorize(&req.headers, peer, door) {
            return refused;
        }
        let ctx = self.mcp.context().clone();
        let started = match ctx.borrow_mut().services_mut().screen.as_deref_mut() {
            Some(fb) => Capture::start(fb, Format::Bmp, None, 1),
            None => Err(CaptureError::Fb(FbError::NoDevice)),
        };
        let cap = match started {
            Ok(cap) => cap,
            Err(e) => return unavailable(e),
        };
        let mut resp = Response {
            status: 200,
            headers: Default::default(),
            body: Body::Stream(Box::new(BmpBody { ctx, cap })),
            turned_away: false,
        };
        resp.headers.push_static("Content-Type", "image/bmp");
        resp.headers.push_static("Cache-Control", "no-store");
        resp
    }
}

/// 503 with what is wrong with the board, in plain text: the same `E_<CODE>: message` that
/// `screen.capture` answers.
fn unavailable(e: CaptureError) -> Response {
    let mut body = crate::tools::screen::capture_error(e)
        .to_string()
        .into_bytes();
    body.push(b'\n');
    Response::full(503, "text/plain; charset=utf-8", body)
}

/// The BMP's bytes. It borrows the context only while it encodes a batch, so tool calls run
/// between polls. A board failure mid-way ends the body early: the file is then shorter than
/// its header says.
struct BmpBody {
    ctx: Rc<RefCell<Ctx>>,
    cap: Capture,
}

impl BodySource for BmpBody {
    fn poll(&mut self, out: &mut Vec<u8>, max: usize, _now_ms: u64) -> BodyPoll {
        let Ok(mut ctx) = self.ctx.try_borrow_mut() else {
            return BodyPoll::Pending;
        };
        let Some(fb) = ctx.services_mut().screen.as_deref_mut() else {
            return BodyPoll::End;
        };
        match self.cap.read(fb, out, max) {
            Ok(Poll::Data) => BodyPoll::Data,
            Ok(Poll::Idle) => BodyPoll::Pending,
            Ok(Poll::End) | Err(_) => BodyPoll::End,
        }
    }
}

impl Handler for Router {
    /// Every request is judged from its head: only `/mcp` takes a body, and only once its
    /// token and Origin passed; `/screen.bmp` is guarded the same way. A refused request's
    /// body is never buffered. A status-page request that carries a token has it checked (and
    /// failures counted) like `/mcp`, so the page is no oracle for guessing.
    fn admit(
        &mut self,
        head: &Request,
        peer: Peer,
        proven: Option<u8>,
        now_ms: u64,
    ) -> Result<Admission, Response> {
        let mcp_port = self.on_mcp_port();
        match head.path() {
            "/mcp" if mcp_port => self.mcp.admit(&head.headers, peer, proven, now_ms),
            "/" | "/index.html" => {
                route::get_only(head)?;
                route::no_body(head)?;
                if head.headers.field(Field::Authorization).is_some() {
                    self.mcp.admit(&head.headers, peer, proven, now_ms)
                } else {
                    Ok(Admission::Anonymous)
                }
            }
            crate::tools::screen::BMP_PATH if mcp_port => {
                route::get_only(head)?;
                route::no_body(head)?;
                self.mcp.admit(&head.headers, peer, proven, now_ms)
            }
            debug_rsp::PATH if mcp_port => {
                debug_rsp::check_head(head)?;
                self.mcp.admit(&head.headers, peer, proven, now_ms)
            }
            path if web_console::asset(path, mcp_port).is_some() => {
                route::get_only(head)?;
                route::no_body(head)?;
                Ok(Admission::Anonymous)
            }
            _ => Err(route::not_found()),
        }
    }

    fn handle(&mut self, req: &mut Request, peer: Peer, now_ms: u64) -> Response {
        self.requests += 1;
        let mcp_port = self.on_mcp_port();
        match req.path() {
            "/" | "/index.html" => self.status_page(req, peer),
            "/mcp" if mcp_port => self.mcp.handle(req, peer, now_ms),
            crate::tools::screen::BMP_PATH if mcp_port => self.screen_bmp(req, peer),
            debug_rsp::PATH if mcp_port => {
                let door = Door::Route(capabilities::DEBUG_RSP);
                match self.mcp.authorize(&req.headers, peer, door) {
                    Ok(authority) => {
                        let ctx = self.mcp.context().clone();
                        debug_rsp::exchange(&ctx, req, peer, authority.token_name(), now_ms)
                    }
                    Err(refused) => refused,
                }
            }
            path => match web_console::asset(path, mcp_port) {
                Some(asset) => match route::get_only(req) {
                    Ok(()) => {
                        let accept = req.headers.field(Field::AcceptEncoding);
                        web_console::serve(&asset, &self.assets, accept)
                    }
                    Err(refused) => refused,
                },
                None => route::not_found(),
            },
        }
    }

    fn rank(&self, head: &Request, token: u8) -> u8 {
        self.mcp.rank(&head.headers, token)
    }

    fn on_port(&mut self, local_port: u16) {
        self.local_port = local_port;
    }
}

#[cfg(test)]
mod tests;
