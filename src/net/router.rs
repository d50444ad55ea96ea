//! Sends each HTTP request to its handler: `/` is the status page (open without a token),
//! `/mcp` the MCP endpoint (which checks token and origin itself); anything else is 404.

use super::status_page;
use crate::tools::Ctx;
use rpc::http::{Handler, Method, Peer, Request, Response, route};
use rpc::mcp::McpServer;

/// The module's request handler, the same on every port.
pub struct Router {
    pub mcp: McpServer<Ctx>,
    /// Requests answered since boot.
    pub requests: u64,
}

impl Router {
    pub fn new(mcp: McpServer<Ctx>) -> Self {
        Router { mcp, requests: 0 }
    }
}

impl Handler for Router {
    fn handle(&mut self, req: Request, peer: Peer, now_ms: u64) -> Response {
        self.requests += 1;
        match req.path() {
            "/" | "/index.html" => match route::allow(&req, &[Method::Get]) {
                Ok(()) => {
                    let ctx = self.mcp.context().borrow();
                    let mut resp = Response::full(
                        200,
                        "text/html; charset=utf-8",
                        status_page::render(&ctx.status()),
                    );
                    resp.headers.push("Cache-Control", "no-store");
                    resp
                }
                Err(resp) => resp,
            },
            "/mcp" => self.mcp.handle(req, peer, now_ms),
            _ => route::not_found(),
        }
    }
}
