//! `POST /debug/rsp`: GDB's remote protocol carried in HTTP exchanges on the MCP port, so that
//! GDB reaches the cell debugger through the module's own door: the bearer token, the
//! administer role, the Host and Origin checks (docs/debug.md, docs/security.md). Each request's
//! body is bytes from GDB (what the host bridge read from it, possibly none); the answer
//! streams the stub's bytes back, ending once the stub has answered everything and is waiting
//! for GDB, or after [`LONG_POLL_MS`] while the context runs (the bridge asks again at once).
//! The first exchange attaches to the context (`?ctx=N`, 1 by default); `DELETE /debug/rsp`,
//! GDB's own detach, or [`crate::services::debug::debugger::IDLE_MS`] of silence end it.
//!
//! An exchange rather than an HTTP Upgrade: every control of the door holds per exchange, and
//! neither the HTTP connection nor the server learns a second protocol.

use crate::services::audit;
use crate::tools::Ctx;
use alloc::rc::Rc;
use alloc::vec::Vec;
use core::cell::RefCell;
use indy::abi::status;
use rpc::http::{Admission, Body, BodyPoll, BodySource, Field, Method, Peer, Request, Response};

/// The path.
pub const PATH: &str = "/debug/rsp";
/// Longest wait for the context's stop in one exchange.
pub const LONG_POLL_MS: u64 = 500;
/// Most bytes of GDB's one exchange carries (two of the stub's packets).
pub const BODY_MAX: usize = 2 * crate::services::debug::rsp::PACKET_SIZE;

/// The owner a request's admission names (`u8::MAX` for an open `/mcp`, `mcp.token=none`).
pub fn owner(req: &Request) -> u8 {
    match req.admission {
        Some(Admission::Authenticated(i)) => i,
        _ => u8::MAX,
    }
}

/// The context a request names with `?ctx=N` (1 without one); `None` for a malformed one.
fn context(req: &Request) -> Option<u32> {
    let query = req.target.split_once('?').map_or("", |(_, q)| q);
    match query.split('&').find_map(|kv| kv.strip_prefix("ctx=")) {
        None => Some(1),
        Some(n) => n.parse().ok().filter(|&n| n != 0),
    }
}

/// 413 before the body is read when it announces more than [`BODY_MAX`] bytes; a chunked
/// body is refused too (the bridge always says its length).
// The error is the answer itself, as `Handler::admit` returns it (rpc allows the same).
#[allow(clippy::result_large_err)]
pub fn check_head(head: &Request) -> Result<(), Response> {
    let h = &head.headers;
    let len_ok = h
        .field(Field::ContentLength)
        .is_none_or(|n| n.trim().parse::<usize>().is_ok_and(|n| n <= BODY_MAX));
    if !len_ok || h.field(Field::TransferEncoding).is_some() {
        return Err(Response::full(
            413,
            "text/plain; charset=utf-8",
            "413 at most 8192 bytes of GDB's per exchange\n",
        ));
    }
    match head.method {
        Method::Post | Method::Delete => Ok(()),
        _ => {
            let mut r = Response::full(405, "text/plain; charset=utf-8", "405 POST or DELETE\n");
            r.headers.push_static("Allow", "POST, DELETE");
            Err(r)
        }
    }
}

/// The status of a refusal: 409 for a context another debugger holds, 501 for a kernel
/// without contexts, 404 for no such context.
fn refused(e: i32) -> Response {
    let (code, text) = match e {
        status::E_BUSY => (409, "409 E_BUSY: another debugger holds this context\n"),
        status::E_NOSYS => (501, "501 E_NOSYS: this kernel has no debuggable contexts\n"),
        status::E_INVAL => (404, "404 E_INVAL: no such context\n"),
        _ => (503, "503 the debugger could not start\n"),
    };
    Response::full(code, "text/plain; charset=utf-8", text)
}

/// Who, from where, did what to the debugger: a line of the audit trail (the calls' ring)
/// and the console, as the MCP calls' records are. Only a session's start and end are
/// recorded, not each exchange of it.
fn audit(ctx: &Rc<RefCell<Ctx>>, peer: Peer, now_ms: u64, who: &str, what: &str) {
    let [a, b, c, d] = peer.addr;
    let line = alloc::format!("audit {now_ms} ms {a}.{b}.{c}.{d} as {who} POST /debug/rsp {what}");
    let mut ctx = ctx.borrow_mut();
    let services = ctx.services_mut();
    services.platform.console_write(line.as_bytes());
    services.platform.console_write(b"\n");
    if let Ok(mut log) = services.audit.try_borrow_mut() {
        // The door is administer: only an owner of that rank passes it.
        log.push(audit::Kind::AdministratorCall, &line);
    }
}

/// Answers an admitted exchange that `who` (the token's name) is authorised for.
pub fn exchange(
    ctx: &Rc<RefCell<Ctx>>,
    req: &mut Request,
    peer: Peer,
    who: &str,
    now_ms: u64,
) -> Response {
    let owner = owner(req);
    let Some(id) = context(req) else {
        return refused(status::E_INVAL);
    };
    if req.method == Method::Delete {
        let r = ctx.borrow_mut().services_mut().debugger.detach(owner);
        return match r {
            Ok(()) => {
                audit(ctx, peer, now_ms, who, "-> detached");
                Response::full(204, "text/plain", "")
            }
            Err(status::E_INVAL) => Response::full(204, "text/plain", ""),
            Err(e) => refused(e),
        };
    }
    let fresh = ctx.borrow().services().debugger.holder().is_none();
    let opened = ctx
        .borrow_mut()
        .services_mut()
        .debugger
        .open_gdb(owner, id, now_ms)
        .map(|_| ());
    if fresh {
        let what = match opened {
            Ok(()) => alloc::format!("ctx={id} -> attached"),
            Err(e) => alloc::format!("ctx={id} -> refused ({e})"),
        };
        audit(ctx, peer, now_ms, who, &what);
    }
    if let Err(e) = opened {
        return refused(e);
    }
    let mut resp = Response {
        status: 200,
        headers: Default::default(),
        body: Body::Stream(alloc::boxed::Box::new(Exchange {
            ctx: ctx.clone(),
            owner,
            id,
            input: core::mem::take(&mut req.body),
            fed: 0,
            started_ms: now_ms,
            answered: false,
        })),
        turned_away: false,
    };
    resp.headers
        .push_static("Content-Type", "application/octet-stream");
    resp.headers.push_static("Cache-Control", "no-store");
    resp
}

/// One exchange's answer, produced as the stub works.
struct Exchange {
    ctx: Rc<RefCell<Ctx>>,
    owner: u8,
    id: u32,
    input: Vec<u8>,
    fed: usize,
    started_ms: u64,
    answered: bool,
}

impl BodySource for Exchange {
    fn poll(&mut self, out: &mut Vec<u8>, max: usize, now_ms: u64) -> BodyPoll {
        let Ok(mut ctx) = self.ctx.try_borrow_mut() else {
            return BodyPoll::Pending;
        };
        let debugger = &mut ctx.services_mut().debugger;
        let Ok(rsp) = debugger.gdb(self.owner, self.id, now_ms) else {
            // The session ended under the exchange (a reset, the idle bound).
            return BodyPoll::End;
        };
        if let Some(rest) = self.input.get(self.fed..)
            && !rest.is_empty()
        {
            self.fed += rsp.feed(rest);
        }
        rsp.poll();
        let pending = rsp.output();
        if !pending.is_empty() {
            let n = pending.len().min(max);
            if out.try_reserve(n).is_err() {
                return BodyPoll::Pending;
            }
            out.extend_from_slice(&pending[..n]);
            rsp.sent(n);
            self.answered = true;
            return BodyPoll::Data;
        }
        if rsp.finished() {
            let _ = debugger.detach(self.owner);
            return BodyPoll::End;
        }
        let all_fed = self.fed >= self.input.len();
        let waited = now_ms.saturating_sub(self.started_ms) >= LONG_POLL_MS;
        if all_fed && (self.answered || !rsp.waiting_for_stop() || waited) {
            BodyPoll::End
        } else {
            BodyPoll::Pending
        }
    }
}
