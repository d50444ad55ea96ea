//! The full path of the module: bytes on up to [`CONNS`] HTTP connections → `rpc::http`'s
//! `Connection` → the module's `Router` → `McpServer` → the real tool families on the fake
//! machine (`src/tools/testing/fake.rs`), with a bearer token configured, the fixture EROFS
//! image mounted under a RAM overlay, the clock moving, and the memory plan `entry.rs` makes
//! for a heap of [`HEAP`] (its request-body and parse pools, its server configuration).
//!
//! Input: one seed byte (splits, clock steps, how much the peer takes, how long each request
//! is pumped), then up to [`MAX_REQUESTS`] parts separated by [`NEXT`]. A part is either
//! - `[c ]METHOD PATH\nName: value\n…\n\nbody`: sent as an HTTP/1.1 request on connection `c`
//!   (0 without a digit), with `Host`, `Authorization: Bearer <token>` and `Content-Length`
//!   added unless the part names them (or `Transfer-Encoding`) itself; or
//! - `[c ]RAW\n<bytes>`: the bytes as they are, for framing the renderer would not produce;
//! - `[c ]CLOSE` or `[c ]RESET`: the peer of connection `c` sends FIN (how a modern client
//!   cancels a streamed call) or the connection is reset; a later part opens it anew.
//!
//! In both, `$SID` stands for the session id the last response announced and `$TOKEN` for the
//! token. A request is pumped only a few polls before the next part is sent, so a part on
//! another connection can cancel, ping or delete while a streamed call is still running; at
//! the end every peer closes and every connection is drained until finished.
//!
//! Oracles: no panic; every connection finishes once its peer is gone; and, in the fuzz
//! target, the heap budget (`crate::budget`).

use crate::fake;
use irix7_kmem::budget::Pool;
use irix7_mcp::hil::block::{BlockDevice, IoError, SECTOR_SIZE};
use irix7_mcp::net::budget::{PoolGauge, ServerBudgets};
use irix7_mcp::net::router::Router;
use irix7_mcp::net::server::ServerConfig;
use irix7_mcp::services::fs::Disk;
use irix7_mcp::services::fs::erofs::Erofs;
use irix7_mcp::services::fs::overlay::Overlay;
use irix7_mcp::services::memory::MemoryPlan;
use rpc::http::{Connection, Peer};
use rpc::mcp::McpServer;
use irix7_kmem::testing::Lcg;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::OnceLock;

/// Separates the parts of one case (the same separator as `mcp_dispatch`'s).
pub const NEXT: &[u8] = b"\n--\n";
/// Parts per case at most, so one case stays quick.
pub const MAX_REQUESTS: usize = 16;
/// Connections a case can open at once.
pub const CONNS: usize = 3;
/// The bearer token the server requires.
pub const TOKEN: &str = "fuzz-token-7801";
/// The heap the server's memory plan is made for: the module's test heap.
pub const HEAP: usize = 8 << 20;
/// The overlay's memory cap, as the module's default.
const OVERLAY_CAP: usize = 4 << 20;
/// Polls of each phase of the final drain at most (each moves the clock 100 ms; the longest
/// tool run, `shell.exec sleep`, is capped far below this many polls' worth).
const DRAIN_POLLS: usize = 4000;
/// Polls without output after which every stream is taken as drained: a running call reports
/// progress every 100 ms.
const QUIET_POLLS: usize = 20;

/// The one-time setup (the fixture image, the idle figure of the memory plan, the catalog),
/// so that the first measured case does not carry it.
pub fn prepare() {
    fixture();
    idle();
    CATALOG.with(|_| ());
}

thread_local! {
    /// What every case's server offers, registered once per thread and copied into each
    /// case's server: registering parses and renders every schema, which was most of a case.
    static CATALOG: McpServer<irix7_mcp::tools::Ctx> = router_without_plan();
}

/// The fixture image (`tools/fixtures`), built once per process by `mkfs.erofs`.
fn fixture() -> &'static [u8] {
    static IMAGE: OnceLock<Vec<u8>> = OnceLock::new();
    IMAGE.get_or_init(|| {
        let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let out = std::env::temp_dir().join(format!("irix7-fuzz-{}", std::process::id()));
        let images = irix7_fixtures::build_fixture_images(&repo, &out)
            .unwrap_or_else(|e| panic!("building the fixture images (mkfs.erofs): {e}"));
        let image = std::fs::read(&images[0]).expect("the fixture image just built");
        let _ = std::fs::remove_dir_all(&out);
        image
    })
}

/// The fixture image as a disk, read in place: copying megabytes per case would cost more
/// than the case.
struct Fixture(&'static [u8]);

impl BlockDevice for Fixture {
    fn read(&mut self, lba: u32, count: u32, buf: &mut [u8]) -> Result<(), IoError> {
        let start = lba as usize * SECTOR_SIZE;
        let end = start + count as usize * SECTOR_SIZE;
        if end > self.block_count() as usize * SECTOR_SIZE || buf.len() != end - start {
            return Err(IoError { status: -5 });
        }
        let have = self.0.len().min(end);
        let n = have.saturating_sub(start);
        buf[..n].copy_from_slice(&self.0[start..start + n]);
        buf[n..].fill(0);
        Ok(())
    }

    fn block_count(&self) -> u32 {
        self.0.len().div_ceil(SECTOR_SIZE) as u32
    }
}

/// The module's handler and HTTP settings as `entry.rs` makes them for a [`HEAP`] heap, on
/// the fake machine with the fixture mounted; the connections' request-body pool.
fn router() -> (Router, Rc<fake::FakeState>, rpc::http::Config, Rc<Pool>) {
    let mut server = ServerConfig::for_heap(HEAP);
    let budgets = ServerBudgets::plan(HEAP, idle(), &server, OVERLAY_CAP);
    server.http.limits.body = server.http.limits.body.min(budgets.requests.limit());
    let (mut ctx, state) = fake::ctx_and_state();
    let image = fixture();
    let services = ctx.services_mut();
    services.fs = Erofs::mount(Disk(Box::new(Fixture(image))))
        .ok()
        .map(|fs| Overlay::new(Some(fs), budgets.overlay));
    services.open_disk = Box::new(move |target| match target {
        2 => Ok(Disk(Box::new(Fixture(image)))),
        _ => Err(IoError { status: -19 }),
    });
    services.memory = MemoryPlan {
        heap_budget: budgets.heap_budget,
        gauges: vec![
            Box::new(PoolGauge(budgets.requests.clone())),
            Box::new(PoolGauge(budgets.parse.clone())),
        ],
    };
    let mut config = rpc::mcp::Config::new("7.0.0", None);
    config.token = Some(TOKEN.into());
    config.own_ip = Some([172, 31, 77, 2]);
    // The cases name the machine `indy` in Host, as the rig tests do.
    config.hosts = vec!["indy".into()];
    config.parse_budget = budgets.parse.clone();
    let mut counter = 0u8;
    let entropy: rpc::mcp::Entropy = Box::new(move |buf: &mut [u8]| {
        for b in buf {
            counter = counter.wrapping_add(37);
            *b = counter;
        }
    });
    let ctx = Rc::new(RefCell::new(ctx));
    let mcp = CATALOG.with(|c| McpServer::with_catalog_of(c, config, ctx, entropy));
    // Every case is a connection to the MCP port (the HTTP server would say so per slot).
    let mut router = Router::new(mcp, 7801);
    rpc::http::Handler::on_port(&mut router, 7801);
    (router, state, server.http, budgets.requests)
}

/// What the module holds once up, as the plan counts it: a server as [`router`] builds it
/// (measured once, on this host) and the sockets' buffers.
fn idle() -> usize {
    static IDLE: OnceLock<usize> = OnceLock::new();
    *IDLE.get_or_init(|| {
        let before = crate::budget::live();
        let built = router_without_plan();
        let held = crate::budget::live().saturating_sub(before);
        drop(built);
        held + ServerConfig::for_heap(HEAP).socket_bytes()
    })
}

/// A server with the module's tools as `entry.rs` registers them, before any plan exists
/// (pools without limits): the idle figure and the catalog.
fn router_without_plan() -> McpServer<irix7_mcp::tools::Ctx> {
    let (ctx, _) = fake::ctx_and_state();
    let mut mcp = McpServer::new(
        rpc::mcp::Config::new("7.0.0", None),
        Rc::new(RefCell::new(ctx)),
        Box::new(|b: &mut [u8]| b.fill(1)),
    );
    irix7_mcp::tools::register(&mut mcp).expect("the tool tables register");
    mcp
}

/// One case's world: the handler, the machine's clock, the connections and what the peer
/// learnt (the session id).
struct World {
    router: Router,
    state: Rc<fake::FakeState>,
    conns: [Option<Connection>; CONNS],
    http: rpc::http::Config,
    /// The request-body pool every connection charges.
    bodies: Rc<Pool>,
    now: u64,
    session: Option<String>,
    rng: Lcg,
    /// The status of every response head the peers received, in order.
    statuses: Vec<u16>,
    /// The last bytes each peer received, so a status line split between two sends is seen.
    tails: [Vec<u8>; CONNS],
}

impl World {
    fn tick(&mut self, ms: u64) {
        self.now += ms;
        self.state.now.set(self.now);
    }

    /// Offers `bytes` to connection `c` in pieces, pumping between them; what it does not
    /// take (it holds at most its input buffer behind a response) is offered again after
    /// pumping, a bounded number of times, then dropped as a peer that gave up would.
    fn send(&mut self, c: usize, mut bytes: &[u8]) {
        let mut stalls = 0;
        while !bytes.is_empty() && stalls < 64 {
            let piece = 1 + self.rng.below(bytes.len().min(1 << 16));
            let conn = open(&mut self.conns[c], c, self.http, self.now, &self.bodies);
            let taken = conn.recv(&bytes[..piece], self.now, &mut self.router);
            assert!(taken <= piece, "took {taken} of {piece} bytes");
            bytes = &bytes[taken..];
            if taken == 0 {
                stalls += 1;
            }
            self.pump(1);
        }
    }

    /// `rounds` polls of every open connection: the peer takes a random share of the output,
    /// the clock moves, and any `Mcp-Session-Id` in the output is remembered.
    fn pump(&mut self, rounds: usize) {
        for _ in 0..rounds {
            for c in 0..CONNS {
                let Some(conn) = self.conns[c].as_mut() else {
                    continue;
                };
                conn.poll(self.now, &mut self.router);
                // A complete body is offered whole, whatever its size: what bounds it is the
                // heap budget, not the output buffer.
                let out = conn.pending_output();
                if let Some(sid) = session_id(out) {
                    self.session = Some(sid);
                }
                let n = match self.rng.below(4) {
                    0 => self.rng.below(out.len() + 1),
                    _ => out.len(),
                };
                received(&mut self.tails[c], &out[..n], &mut self.statuses);
                conn.mark_sent(n, self.now);
            }
            let ms = [0, 10, 100, 1000][self.rng.below(4)];
            self.tick(ms);
        }
    }

    /// Every peer takes all it is sent until the connections have been quiet for
    /// [`QUIET_POLLS`] (every streamed body drained), then closes; each connection must then
    /// flush what it owes and be finished.
    fn finish(&mut self) {
        let mut quiet = 0;
        for _ in 0..DRAIN_POLLS {
            if quiet >= QUIET_POLLS {
                break;
            }
            quiet = if self.flush_all() { 0 } else { quiet + 1 };
        }
        for conn in self.conns.iter_mut().flatten() {
            conn.peer_closed();
        }
        for _ in 0..DRAIN_POLLS {
            if self.conns.iter().flatten().all(Connection::is_finished) {
                break;
            }
            self.flush_all();
        }
        for (c, conn) in self.conns.iter().enumerate() {
            if let Some(conn) = conn {
                assert!(conn.is_finished(), "connection {c} never finished");
            }
        }
    }

    /// One poll of every connection, the peers taking all of it, then 100 ms pass. Returns
    /// whether any output came.
    fn flush_all(&mut self) -> bool {
        let mut any = false;
        for (c, conn) in self.conns.iter_mut().enumerate() {
            let Some(conn) = conn else { continue };
            conn.poll(self.now, &mut self.router);
            let out = conn.pending_output();
            any |= !out.is_empty();
            received(&mut self.tails[c], out, &mut self.statuses);
            let n = out.len();
            conn.mark_sent(n, self.now);
        }
        self.tick(100);
        any
    }
}

/// The connection in `slot` (number `c`), opened anew if it was never opened or has finished.
fn open<'a>(
    slot: &'a mut Option<Connection>,
    c: usize,
    http: rpc::http::Config,
    now: u64,
    bodies: &Rc<Pool>,
) -> &'a mut Connection {
    if slot.as_ref().is_none_or(Connection::is_finished) {
        let peer = Peer {
            addr: [10, 0, 2, 2],
            port: 40000 + c as u16,
        };
        *slot = Some(Connection::with_pool(peer, http, now, bodies.clone()));
    }
    slot.as_mut().expect("just opened")
}

/// What a peer received: the status of each response head that starts in it is noted (a body
/// that spells a status line is counted too; the tests' inputs have none).
fn received(tail: &mut Vec<u8>, sent: &[u8], statuses: &mut Vec<u16>) {
    const LINE: &[u8] = b"HTTP/1.1 ";
    let keep = tail.len();
    tail.extend_from_slice(sent);
    let mut at = 0;
    while let Some(i) = find(&tail[at..], LINE) {
        let code = &tail[at + i + LINE.len()..];
        if code.len() < 3 {
            break;
        }
        if at + i + LINE.len() + 3 > keep {
            let digits = core::str::from_utf8(&code[..3]).ok();
            statuses.extend(digits.and_then(|d| d.parse::<u16>().ok()));
        }
        at += i + 1;
    }
    let cut = tail.len().saturating_sub(LINE.len() + 2);
    tail.drain(..cut);
}

/// The value of an `Mcp-Session-Id` header in `out`, if one starts there.
fn session_id(out: &[u8]) -> Option<String> {
    const NAME: &[u8] = b"\r\nmcp-session-id: ";
    let at = out
        .windows(NAME.len())
        .position(|w| w.eq_ignore_ascii_case(NAME))?;
    let rest = &out[at + NAME.len()..];
    let end = rest.iter().position(|&b| b == b'\r')?;
    String::from_utf8(rest[..end].to_vec()).ok()
}

/// `$SID` and `$TOKEN` replaced in `bytes`.
fn substitute(bytes: &[u8], session: Option<&str>) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut rest = bytes;
    while let Some((&b, tail)) = rest.split_first() {
        if let Some(after) = rest.strip_prefix(b"$SID".as_slice()) {
            out.extend_from_slice(session.unwrap_or("none").as_bytes());
            rest = after;
        } else if let Some(after) = rest.strip_prefix(b"$TOKEN".as_slice()) {
            out.extend_from_slice(TOKEN.as_bytes());
            rest = after;
        } else {
            out.push(b);
            rest = tail;
        }
    }
    out
}

/// The connection a part names and the rest of its first line.
fn connection_of(line: &[u8]) -> (usize, &[u8]) {
    match line {
        [d @ b'0'..=b'9', b' ', rest @ ..] => (usize::from(d - b'0') % CONNS, rest),
        _ => (0, line),
    }
}

/// One part rendered as the bytes the peer sends.
fn render(first: &[u8], rest: &[u8], session: Option<&str>) -> Vec<u8> {
    if first == b"RAW" {
        return substitute(rest, session);
    }
    let split = find(rest, b"\n\n");
    let (head, body) = match split {
        Some(at) => (&rest[..at], &rest[at + 2..]),
        None => (rest, &[][..]),
    };
    let mut out = Vec::with_capacity(body.len() + 256);
    out.extend_from_slice(first);
    out.extend_from_slice(b" HTTP/1.1\r\n");
    let (mut host, mut auth, mut framed) = (false, false, false);
    for line in head.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let name = line.split(|&b| b == b':').next().unwrap_or_default();
        host |= name.eq_ignore_ascii_case(b"host");
        auth |= name.eq_ignore_ascii_case(b"authorization");
        framed |= name.eq_ignore_ascii_case(b"content-length")
            || name.eq_ignore_ascii_case(b"transfer-encoding");
        out.extend_from_slice(line);
        out.extend_from_slice(b"\r\n");
    }
    if !host {
        out.extend_from_slice(b"Host: indy\r\n");
    }
    if !auth {
        out.extend_from_slice(b"Authorization: Bearer $TOKEN\r\n");
    }
    if !framed && !body.is_empty() {
        out.extend_from_slice(format!("Content-Length: {}\r\n", body.len()).as_bytes());
    }
    out.extend_from_slice(b"\r\n");
    let mut out = substitute(&out, session);
    out.extend_from_slice(body);
    out
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// One fuzz case (see the module docs for the layout). Returns the statuses of the responses
/// the peers received, in order.
pub fn run(data: &[u8]) -> Vec<u16> {
    let Some((&seed, mut rest)) = data.split_first() else {
        return Vec::new();
    };
    let (router, state, http, bodies) = router();
    let mut world = World {
        router,
        now: state.now.get(),
        state,
        conns: [None, None, None],
        http,
        bodies,
        session: None,
        statuses: Vec::new(),
        tails: Default::default(),
        rng: Lcg(seed.into()),
    };
    for _ in 0..MAX_REQUESTS {
        let (part, next) = match find(rest, NEXT) {
            Some(at) => (&rest[..at], Some(&rest[at + NEXT.len()..])),
            None => (rest, None),
        };
        let line_end = part.iter().position(|&b| b == b'\n').unwrap_or(part.len());
        let (c, first) = connection_of(&part[..line_end]);
        let body = part.get(line_end + 1..).unwrap_or_default();
        match (first, world.conns[c].as_mut()) {
            (b"CLOSE", Some(conn)) => conn.peer_closed(),
            (b"RESET", Some(conn)) => conn.abort(),
            (b"CLOSE" | b"RESET", None) => {}
            _ => {
                let bytes = render(first, body, world.session.as_deref());
                world.send(c, &bytes);
            }
        }
        let rounds = 1 + world.rng.below(8);
        world.pump(rounds);
        match next {
            Some(n) => rest = n,
            None => break,
        }
    }
    world.finish();
    world.statuses
}
