//! Event streams: `GET /mcp` in the legacy era, the session's own stream, which carries
//! `notifications/resources/updated` for the resources it subscribed to (`subscriptions`);
//! and `subscriptions/listen` in the 2026-07-28 era, whose answer is the stream.
//!
//! A listen stream first acknowledges what it will deliver
//! (`notifications/subscriptions/acknowledged` with the subscribable part of the client's
//! `resourceSubscriptions`; list changes never happen here, so they are never honored); every
//! frame carries the request's id as `_meta["io.modelcontextprotocol/subscriptionId"]`; it has
//! no event ids and no replay (the era resumes by listening again and reading again). It
//! counts against the same limit as GET streams.
//!
//! One stream per session: a newer GET of the same session takes over and the older stream
//! ends (a client reconnecting after a dropped connection must not wait for the server to
//! notice the old one is dead). At most `Limits::event_streams` streams in all: past it, 503
//! `E_BUSY` with `Retry-After`. Events have ids `<session serial>-e<sequence>`; a GET with
//! `Last-Event-ID` resumes after that event (`Feed::resume`). An idle stream sends an SSE
//! comment every `KEEP_ALIVE_MS`, which keeps proxies and tunnels from dropping it.

use crate::http::{Body, BodyPoll, BodySource, Headers, Response};
use crate::json;
use crate::jsonrpc::{self, Id, RpcError};
use crate::mcp::eras::session::{Sessions, plausible_id};
use crate::mcp::eras::subscriptions::{Hub, Subscriptions, WatchDef};
use crate::mcp::guard::authority::{Client, Door, Owner};
use crate::mcp::guard::config::Limits;
use crate::mcp::guard::request::{Cx, accepts_sse};
use crate::mcp::wire::event_stream::{KEEP_ALIVE_MS, Utf8Sink};
use crate::mcp::wire::reply;
use crate::mcp::wire::version::LEGACY_VERSIONS;
use alloc::boxed::Box;
use alloc::format;
use alloc::rc::Rc;
use alloc::string::String;
use alloc::vec::Vec;
use core::cell::RefCell;
use core::fmt::Write;
use serde_json::{Value, json};

/// Answers `GET /mcp`: a legacy session's event stream, or why not.
pub(crate) fn get<C: 'static>(
    subs: &Subscriptions<C>,
    sessions: &mut Sessions,
    ctx: &Rc<RefCell<C>>,
    limits: &Limits,
    headers: &Headers,
    owner: Owner,
    now_ms: u64,
) -> Response {
    let version = headers.get("MCP-Protocol-Version").map(str::trim);
    let session = headers.get("Mcp-Session-Id").map(str::trim);
    // The 2026-07-28 era has no GET stream (it listens with `subscriptions/listen`).
    let (Some(sid), false) = (
        session,
        version.is_some_and(|v| !LEGACY_VERSIONS.contains(&v)),
    ) else {
        return reply::not_allowed("POST, DELETE");
    };
    let bad = |status, why: &str| {
        reply::error(status, None, &RpcError::new(jsonrpc::INVALID_REQUEST, why))
    };
    if !accepts_sse(headers.get("Accept")) {
        return bad(406, "Not Acceptable: GET /mcp answers text/event-stream");
    }
    if !plausible_id(sid) {
        return bad(400, "Bad Request: malformed Mcp-Session-Id");
    }
    let Some(session) = sessions.get_mut(sid, owner) else {
        return reply::error(
            404,
            None,
            &RpcError::new(reply::SESSION_NOT_FOUND, "Session not found"),
        );
    };
    session.last_seen_ms = now_ms;
    session.returned = true;
    let serial = session.serial;
    // Only this stream's own events can be replayed; a POST stream's id asks for an answer
    // this server no longer has, and must not be mistaken for a fresh stream.
    let last = match headers.get("Last-Event-ID").map(str::trim) {
        None => None,
        Some(id) => match parse_event_id(id, serial) {
            Some(seq) => Some(seq),
            None => {
                return bad(
                    400,
                    "Bad Request: Last-Event-ID names no event of this session's GET \
                     stream (streams of POST requests are not resumed)",
                );
            }
        },
    };
    let limit = limits.event_streams;
    let mut hub = subs.hub.borrow_mut();
    let takes_over = hub.feed(serial).is_some_and(|f| f.stream != 0);
    let claim = owner.claim(Client::Session(serial));
    if !takes_over && !hub.admits(claim, limit) {
        return streams_busy(None, limit);
    }
    let stream = hub.open_stream(claim);
    let feed = hub.feed_or_new(serial);
    feed.stream = stream;
    let cursor = feed.resume(last);
    drop(hub);
    let opened = Opened {
        serial,
        stream,
        cursor,
        listen: None,
    };
    event_stream(subs, ctx, limits, opened, Vec::new())
}

/// A stream just opened: feed `serial`'s stream number `stream`, from event `cursor` on; a
/// listen stream's subscription id.
struct Opened {
    serial: u64,
    stream: u64,
    cursor: u64,
    listen: Option<String>,
}

/// The response whose body is the event stream `opened`, `pending` first.
fn event_stream<C: 'static>(
    subs: &Subscriptions<C>,
    ctx: &Rc<RefCell<C>>,
    limits: &Limits,
    opened: Opened,
    pending: Vec<u8>,
) -> Response {
    let body = GetStream {
        hub: subs.hub.clone(),
        defs: subs.defs.clone(),
        ctx: ctx.clone(),
        serial: opened.serial,
        stream: opened.stream,
        cursor: opened.cursor,
        listen: opened.listen,
        pending,
        sent: 0,
        quiet_since: None,
        lifetime_ms: limits.event_stream_lifetime_ms,
        retry_ms: limits.sse_retry_ms,
        opened_ms: None,
        ending: false,
    };
    reply::stream(true, Body::Stream(Box::new(body)))
}

/// `subscriptions/listen` (2026-07-28): the answer is the event stream.
pub(crate) fn listen<C: 'static>(
    subs: &Subscriptions<C>,
    ctx: &Rc<RefCell<C>>,
    limits: &Limits,
    cx: &Cx<'_>,
) -> Response {
    if !cx.accept_sse() {
        let err = RpcError::new(
            jsonrpc::INVALID_REQUEST,
            "Not Acceptable: subscriptions/listen answers text/event-stream",
        );
        return reply::error(406, Some(cx.id), &err);
    }
    let wanted = cx
        .params
        .get("notifications")
        .and_then(|n| n.get("resourceSubscriptions"))
        .filter(|w| w.is_array());
    let (mut mask, mut honored) = (0u32, Vec::new());
    for uri in wanted
        .iter()
        .flat_map(|w| w.items())
        .filter_map(|u| u.as_str())
    {
        let uri = &*uri;
        // Subscriptions the caller may not hold are not honored (the acknowledgement lists
        // what is).
        if let Some(i) = subs.defs.iter().position(|d| d.uri == uri)
            && mask & (1 << i) == 0
            && cx
                .authority
                .check_door(Door::Watch(subs.defs[i].uri))
                .is_ok()
        {
            mask |= 1 << i;
            honored.push(Value::from(uri));
        }
    }
    let limit = limits.event_streams;
    let mut hub = subs.hub.borrow_mut();
    let claim = cx.key.owner.claim(cx.key.client);
    if !hub.admits(claim, limit) {
        return streams_busy(Some(cx.id), limit);
    }
    let stream = hub.open_stream(claim);
    let serial = LISTEN | stream;
    let feed = hub.feed_or_new(serial);
    feed.mask = mask;
    feed.stream = stream;
    let cursor = feed.next_seq;
    drop(hub);
    let id = String::from(cx.id.as_json());
    let mut pending = Vec::from(
        &br#"data: {"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":"#[..],
    );
    pending.extend_from_slice(br#"{"resourceSubscriptions":"#);
    json::write_value(&mut pending, &Value::Array(honored));
    pending.push(b'}');
    let _ = write!(
        Utf8Sink(&mut pending),
        ",\"_meta\":{{\"{SUBSCRIPTION_ID}\":{id}}}}}}}\n\n"
    );
    let opened = Opened {
        serial,
        stream,
        cursor,
        listen: Some(id),
    };
    event_stream(subs, ctx, limits, opened, pending)
}

/// 503 `E_BUSY`: every event stream (GET or listen) this caller may have is taken.
fn streams_busy(id: Option<&Id>, limit: usize) -> Response {
    let msg = format!(
        "E_BUSY: all {limit} event streams (GET /mcp, subscriptions/listen) are open, or as \
         many as this token may hold; retry later, or close one"
    );
    let data = json!({"code": "E_BUSY", "limit": limit});
    let mut r = reply::error(503, id, &RpcError::with_data(reply::BUSY, msg, data));
    r.headers.push("Retry-After", "5");
    r
}

/// Feeds of listen streams have serials with this bit (sessions' never do).
const LISTEN: u64 = 1 << 63;
const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// The sequence number in an event id of this session's stream (`<serial>-e<seq>`); ids of
/// other sessions or of POST streams resume nothing.
fn parse_event_id(id: &str, serial: u64) -> Option<u64> {
    let (s, seq) = id.split_once("-e")?;
    (s.parse::<u64>().ok()? == serial).then_some(())?;
    seq.parse().ok()
}

/// The body of a GET stream.
struct GetStream<C> {
    hub: Rc<RefCell<Hub>>,
    defs: Vec<WatchDef<C>>,
    ctx: Rc<RefCell<C>>,
    serial: u64,
    stream: u64,
    /// The sequence of the next event to send.
    cursor: u64,
    /// A listen stream: its subscription id (the request's id as JSON).
    listen: Option<String>,
    pending: Vec<u8>,
    sent: usize,
    quiet_since: Option<u64>,
    /// How long the stream may last (`Limits::event_stream_lifetime_ms`), since its first
    /// poll; past it, it says so and ends.
    lifetime_ms: u64,
    /// `retry:` a legacy stream's last frame advertises.
    retry_ms: u64,
    opened_ms: Option<u64>,
    ending: bool,
}

impl<C> GetStream<C> {
    /// Renders the events from `cursor` on into `pending`; false when the stream is over
    /// (the session is gone or a newer GET took over).
    fn gather(&mut self, now_ms: u64) -> bool {
        let mut hub = self.hub.borrow_mut();
        hub.check(&self.defs, &self.ctx, now_ms);
        let Some(feed) = hub.feed(self.serial).filter(|f| f.stream == self.stream) else {
            return false;
        };
        let from = self.cursor;
        for &(seq, watch) in feed.events.iter().filter(|e| e.0 >= from) {
            let Some(def) = self.defs.get(usize::from(watch)) else {
                continue;
            };
            if self.listen.is_none() {
                let _ = writeln!(Utf8Sink(&mut self.pending), "id: {}-e{seq}", self.serial);
            }
            self.pending.extend_from_slice(
                br#"data: {"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"#,
            );
            json::write_value(&mut self.pending, &Value::from(def.uri));
            if let Some(id) = &self.listen {
                let _ = write!(
                    Utf8Sink(&mut self.pending),
                    ",\"_meta\":{{\"{SUBSCRIPTION_ID}\":{id}}}"
                );
            }
            self.pending.extend_from_slice(b"}}\n\n");
            self.cursor = seq + 1;
        }
        true
    }
}

impl<C> BodySource for GetStream<C> {
    fn poll(&mut self, out: &mut Vec<u8>, max: usize, now_ms: u64) -> BodyPoll {
        let opened = *self.opened_ms.get_or_insert(now_ms);
        if self.pending.is_empty()
            && !self.ending
            && now_ms.saturating_sub(opened) >= self.lifetime_ms
        {
            self.ending = true;
            if self.listen.is_none() {
                let _ = writeln!(Utf8Sink(&mut self.pending), "retry: {}", self.retry_ms);
            }
            self.pending
                .extend_from_slice(b": this stream's lifetime is over; open another\n\n");
        }
        // New events only once what was rendered has gone (a client that does not read
        // holds at most one log's worth here; the rest waits in the bounded log).
        let live = if self.ending {
            false
        } else if self.pending.is_empty() {
            self.gather(now_ms)
        } else {
            true
        };
        if self.pending.is_empty() {
            let since = *self.quiet_since.get_or_insert(now_ms);
            if live && now_ms.saturating_sub(since) >= KEEP_ALIVE_MS {
                self.pending.extend_from_slice(b": keep-alive\n\n");
            }
        }
        let end = self.pending.len().min(self.sent + max);
        let wrote = end > self.sent;
        out.extend_from_slice(self.pending.get(self.sent..end).unwrap_or(&[]));
        self.sent = end;
        if self.sent >= self.pending.len() {
            self.pending.clear();
            self.sent = 0;
        }
        if wrote {
            self.quiet_since = Some(now_ms);
        }
        match (live, self.pending.is_empty(), wrote) {
            (false, true, _) => BodyPoll::End,
            (_, _, true) => BodyPoll::Data,
            _ => BodyPoll::Pending,
        }
    }
}

impl<C> Drop for GetStream<C> {
    fn drop(&mut self) {
        if let Ok(mut hub) = self.hub.try_borrow_mut() {
            hub.close_stream(self.serial, self.stream);
            if self.listen.is_some() {
                hub.forget(self.serial);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parse_event_id;

    #[test]
    fn event_ids_resume_only_their_own_session() {
        assert_eq!(parse_event_id("7-e12", 7), Some(12));
        assert_eq!(parse_event_id("8-e12", 7), None);
        assert_eq!(parse_event_id("7-0-3", 7), None);
        assert_eq!(parse_event_id("7-e", 7), None);
        assert_eq!(parse_event_id("", 7), None);
    }
}
