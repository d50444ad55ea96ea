//! Roles against what the doors share, on the real image: for each lesser holder (an observe
//! token, an operate token, the administrator's token narrowed by a gateway to observe), while
//! it uses a shared budget to its limit from the administrator's own address (the rig's
//! forwarder gives every client one address), the administrator's `status` is answered within
//! 2 s each time, its legacy session stays its own, its audit record survives, and the
//! machine never resets. Then the same within one token: a noisy client of the
//! administrator's token floods, and a quiet one of it is served within 2 s each time.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use iris::image::find_repo_root;
use rpc::testing::McpRequest;
use serde_json::{Value, json};
use support::guest::{Guest, HOST, TOKEN, boot_guest_with_disk};
use support::http::{Kept, Stream, connect, read_response, request};
use support::mcp::messages;

const WATCHER: &str = "watcher-secret-0123456789";
const OPERATOR: &str = "operator-secret-0123456789";

/// Who loads the machine: a bearer and, for a gateway's narrowing, its `Irix7-Policy`.
#[derive(Clone, Copy)]
struct Holder {
    name: &'static str,
    token: &'static str,
    narrowing: Option<&'static str>,
}

const LESSER: [Holder; 3] = [
    Holder {
        name: "observe",
        token: WATCHER,
        narrowing: None,
    },
    Holder {
        name: "operate",
        token: OPERATOR,
        narrowing: None,
    },
    Holder {
        name: "narrowed administrator",
        token: TOKEN,
        narrowing: Some("observe"),
    },
];

const ADMIN: Holder = Holder {
    name: "administrator",
    token: TOKEN,
    narrowing: None,
};

impl Holder {
    fn raw(&self, req: McpRequest) -> String {
        let req = match self.narrowing {
            Some(n) => req.header("Irix7-Policy", n),
            None => req,
        };
        String::from_utf8_lossy(&req.http("/mcp", HOST, Some(self.token))).into_owned()
    }

    fn call_raw(&self, tool: &str, args: Value) -> String {
        self.raw(McpRequest::modern(
            "tools/call",
            json!({"name": tool, "arguments": args}),
        ))
    }

    /// A tool call on a fresh connection: the last JSON-RPC message of the answer.
    fn call(&self, g: &Guest, tool: &str, args: Value) -> Value {
        let r = request(g.mcp, &self.call_raw(tool, args));
        messages(&r.body).pop().unwrap_or(Value::Null)
    }
}

fn text(v: &Value) -> &str {
    v["result"]["content"][0]["text"]
        .as_str()
        .or(v["error"]["message"].as_str())
        .unwrap_or("")
}

/// The administrator's client the loads are judged by: a fresh connection a call (as `curl`
/// makes), or one connection kept from call to call (as the SDKs keep theirs), opened again
/// when the module closed it. A kept one asks every 0.7 s: beside twelve noisy clients of its
/// own token it stays below its equal part of the token's rate (20 a second among thirteen),
/// which max-min keeps for it (`irix7_kmem::share::fair_rate`; docs/bounds.md, "Owners"),
/// and it is never idle long enough (1 s) to give its slot up.
enum Quiet {
    Fresh,
    Kept(Kept),
}

impl Quiet {
    /// How long the client waits between two of its calls.
    fn pause(&self) -> Duration {
        match self {
            Quiet::Fresh => Duration::from_millis(400),
            Quiet::Kept(_) => Duration::from_millis(700),
        }
    }

    /// The administrator's `status`: the last JSON-RPC message of the answer.
    fn status(&mut self, g: &Guest) -> Value {
        let raw = ADMIN.call_raw("status", json!({}));
        let Quiet::Kept(kept) = self else {
            return ADMIN.call(g, "status", json!({}));
        };
        kept.exchange(raw.as_bytes())
            .and_then(|r| messages(&r.body).pop())
            .unwrap_or(Value::Null)
    }
}

/// The administrator's `status`, answered in full and within 2 s.
fn served(g: &Guest, load: &str, quiet: &mut Quiet) {
    let t = Instant::now();
    let v = quiet.status(g);
    let took = t.elapsed();
    assert!(
        v["result"]["structuredContent"]["uptime_ms"].is_u64(),
        "{load}: the administrator's status: {v}"
    );
    assert!(
        took < Duration::from_secs(2),
        "{load}: the administrator waited {took:?}"
    );
}

/// Runs `load` on a thread until stopped, and meanwhile checks five times, the quiet client's
/// pause apart, that the administrator is served (and once before the load starts).
fn while_loaded(
    g: &Guest,
    what: &str,
    quiet: &mut Quiet,
    load: impl FnOnce(Arc<AtomicBool>) + Send + 'static,
) {
    served(g, &format!("before {what}"), quiet);
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let worker = thread::spawn(move || load(flag));
    thread::sleep(Duration::from_millis(800));
    for _ in 0..5 {
        served(g, what, quiet);
        thread::sleep(quiet.pause());
    }
    stop.store(true, Ordering::Relaxed);
    worker.join().expect("the load ran");
}

/// Sends `raw` on a fresh connection and keeps it, unread.
fn held(addr: std::net::SocketAddr, raw: &str) -> TcpStream {
    let mut s = connect(addr);
    s.write_all(raw.as_bytes()).unwrap();
    s
}

/// Sends `raw` on one kept-alive connection every 300 ms until stopped. When the connection
/// is refused or ends, waits the second `Retry-After` asks for, without closing it, and
/// connects again.
fn busy_connection(addr: std::net::SocketAddr, raw: &str, stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        let mut s = connect(addr);
        let mut buf = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            let answered = s.write_all(raw.as_bytes()).is_ok()
                && read_response(&mut s, &mut buf, false).is_some_and(|r| r.status != 503);
            if !answered {
                break;
            }
            thread::sleep(Duration::from_millis(300));
        }
        thread::sleep(Duration::from_secs(1));
        drop(s);
    }
}

fn until(stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        thread::sleep(Duration::from_millis(50));
    }
}

/// What any holder can flood while the administrator's `status` must be served within 2 s
/// each time (the quiet client): its rate, its calls and console waits, legacy sessions,
/// every connection slot kept busy, and (another owner) event streams.
fn floods(g: &Guest, l: Holder, quiet: &mut Quiet) {
    let addr = g.mcp;
    // Its rate: tools/list as fast as it goes.
    while_loaded(g, &format!("{} at its rate", l.name), quiet, move |stop| {
        let raw = l.raw(McpRequest::modern("tools/list", json!({})));
        while !stop.load(Ordering::Relaxed) {
            request(addr, &raw);
        }
    });
    // Its calls and console waits: each on a connection of its own, never read.
    while_loaded(
        g,
        &format!("{} holding waits", l.name),
        quiet,
        move |stop| {
            let wait = l.call_raw(
                "serial.read",
                json!({"wait_ms": 20000, "until": "never-printed-zz"}),
            );
            let _held: Vec<TcpStream> = (0..8).map(|_| held(addr, &wait)).collect();
            until(&stop);
        },
    );
    // Legacy sessions, opened as fast as it may.
    let init_l = l.raw(McpRequest::initialize("2025-11-25"));
    while_loaded(
        g,
        &format!("{} opening sessions", l.name),
        quiet,
        move |stop| {
            while !stop.load(Ordering::Relaxed) {
                request(addr, &init_l);
            }
        },
    );
    // Every connection slot, each kept busy (a call every 300 ms, never idle long
    // enough to yield); a client refused a slot waits what `Retry-After` says, its
    // connection left open meanwhile.
    while_loaded(
        g,
        &format!("{} holding every slot", l.name),
        quiet,
        move |stop| {
            let echo = l.call_raw("echo", json!({"text": "busy"}));
            let workers: Vec<_> = (0..12)
                .map(|_| {
                    let (echo, stop) = (echo.clone(), stop.clone());
                    thread::spawn(move || busy_connection(addr, &echo, &stop))
                })
                .collect();
            workers.into_iter().for_each(|w| w.join().unwrap());
        },
    );
    // Event streams: as many listens as it may open, held unread; the administrator's own
    // is served meanwhile. Not within one token: a listen takes a connection of its own, so
    // eight listens are eight clients of the token, and max-min gives a ninth no more than
    // them.
    if l.token == ADMIN.token && l.narrowing.is_none() {
        return;
    }
    let listen = |h: &Holder| {
        h.raw(McpRequest::modern(
            "subscriptions/listen",
            json!({"notifications": {"resourceSubscriptions": ["irix7://status"]}}),
        ))
    };
    let theirs: Vec<TcpStream> = (0..8).map(|_| held(addr, &listen(&l))).collect();
    thread::sleep(Duration::from_millis(800));
    let mine = Stream::open(addr, &listen(&ADMIN));
    assert_eq!(
        mine.header("content-type"),
        Some("text/event-stream"),
        "{} holding streams: the administrator's listen",
        l.name
    );
    served(g, &format!("{} holding streams", l.name), quiet);
    drop((mine, theirs));
}

#[test]
fn no_lesser_holder_starves_the_administrator_or_erases_its_trail() {
    let image = find_repo_root().join("target/fixtures/rootfs.erofs");
    assert!(
        image.exists(),
        "no {} (run `cargo xtask fixtures`)",
        image.display()
    );
    let tokens = format!("mcp.tokens=watcher:observe:{WATCHER},ci:operate:{OPERATOR}");
    let Some(g) = boot_guest_with_disk(&[tokens.as_str()], image) else {
        return;
    };
    let addr = g.mcp;
    // The administrator's own legacy session, which no load may end or take.
    let init = ADMIN.raw(McpRequest::initialize("2025-11-25"));
    let opened = request(addr, &init);
    let sid = opened
        .header("mcp-session-id")
        .expect("a session")
        .to_string();
    let ping = ADMIN.raw(McpRequest::legacy(&sid, "ping", json!({})));

    let mut fresh = Quiet::Fresh;
    for (k, l) in LESSER.into_iter().enumerate() {
        floods(&g, l, &mut fresh);
        let r = request(addr, &ping);
        assert_eq!(r.status, 200, "{}: the administrator's session", l.name);
        // The administrator's session is its own: the lesser holder cannot use or end it.
        let theirs = l.raw(McpRequest::legacy(&sid, "ping", json!({})));
        assert_eq!(request(addr, &theirs).status, 404, "{}", l.name);
        // Slow downloads of the screen, a few bytes now and then.
        let bmp = match l.narrowing {
            Some(n) => format!(
                "GET /screen.bmp HTTP/1.1\r\nHost: {HOST}\r\nAuthorization: Bearer {}\r\n\
                 Irix7-Policy: {n}\r\n\r\n",
                l.token
            ),
            None => format!(
                "GET /screen.bmp HTTP/1.1\r\nHost: {HOST}\r\nAuthorization: Bearer {}\r\n\r\n",
                l.token
            ),
        };
        while_loaded(
            &g,
            &format!("{} reading slowly", l.name),
            &mut fresh,
            move |stop| {
                let mut slow: Vec<TcpStream> = (0..8).map(|_| held(addr, &bmp)).collect();
                while !stop.load(Ordering::Relaxed) {
                    for s in &mut slow {
                        let mut b = [0u8; 200];
                        s.set_read_timeout(Some(Duration::from_millis(10))).ok();
                        let _ = s.read(&mut b);
                    }
                    thread::sleep(Duration::from_millis(1000));
                }
            },
        );
        // Screen captures, back to back from four clients.
        while_loaded(
            &g,
            &format!("{} capturing", l.name),
            &mut fresh,
            move |stop| {
                let capture = l.call_raw("screen.capture", json!({"scale": 1}));
                let workers: Vec<_> = (0..4)
                    .map(|_| {
                        let (capture, stop) = (capture.clone(), stop.clone());
                        thread::spawn(move || {
                            while !stop.load(Ordering::Relaxed) {
                                request(addr, &capture);
                            }
                        })
                    })
                    .collect();
                workers.into_iter().for_each(|w| w.join().unwrap());
            },
        );
        // Overlay writes (refused to the observers, which is a load too).
        while_loaded(
            &g,
            &format!("{} writing files", l.name),
            &mut fresh,
            move |stop| {
                let data = "x".repeat(64 * 1024);
                let write = l.call_raw(
                    "fs.write",
                    json!({"path": format!("/tmp/fill-{k}"), "content": data, "append": true}),
                );
                while !stop.load(Ordering::Relaxed) {
                    request(addr, &write);
                }
            },
        );
        // Refusals: the administrator writes, then the lesser holder is refused as fast as
        // it goes; the administrator's record survives.
        let path = format!("/tmp/owned-by-admin-{k}");
        let v = ADMIN.call(&g, "fs.write", json!({"path": path, "content": "mine"}));
        assert_ne!(v["result"]["isError"], true, "{v}");
        while_loaded(
            &g,
            &format!("{} refused", l.name),
            &mut fresh,
            move |stop| {
                let reset = l.call_raw("system.reset", json!({}));
                while !stop.load(Ordering::Relaxed) {
                    request(addr, &reset);
                }
            },
        );
        let audit = ADMIN.raw(McpRequest::modern(
            "resources/read",
            json!({"uri": "irix7://audit"}),
        ));
        let r = request(addr, &audit);
        let log = messages(&r.body).pop().unwrap_or(Value::Null);
        let log = log["result"]["contents"][0]["text"].as_str().unwrap_or("");
        let mine =
            format!("as admin stateless fs.write {{path=\"{path}\",content=<4 bytes>}} -> ok");
        assert!(log.contains(&mine), "{}: {mine} in\n{log}", l.name);
    }
    // Within one token: a noisy client of the administrator's own token floods the same,
    // and its quiet sibling, which keeps its connection, is served within 2 s every time.
    // (A sibling opening a connection a call shares one part of the token's rate with every
    // other such connection: docs/bounds.md, "Owners".)
    let noisy = Holder {
        name: "a sibling of the administrator's token",
        token: TOKEN,
        narrowing: None,
    };
    let mut quiet = Quiet::Kept(Kept::new(g.mcp));
    served(&g, "before its sibling floods", &mut quiet);
    floods(&g, noisy, &mut quiet);
    // Nothing of it reset the machine.
    let v = ADMIN.call(&g, "status", json!({}));
    assert_eq!(
        v["result"]["structuredContent"]["boot"]["boots"],
        1,
        "{}",
        text(&v)
    );
    g.rig.stop().unwrap();
}
