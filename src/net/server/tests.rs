use super::*;
use crate::net::config::IpConfig;
use crate::net::stack::{NetStack, instant};
use rpc::http::{Admission, RANK_TOP, Request, Response};
use smoltcp::phy::{Loopback, Medium};
use smoltcp::wire::{IpEndpoint, Ipv4Address, Ipv4Cidr};
use std::string::String;
use std::vec::Vec;

/// Answers with the request path.
struct PathEcho;
impl Handler for PathEcho {
    fn handle(&mut self, req: &mut Request, _peer: Peer, _now: u64) -> Response {
        Response::full(200, "text/plain", req.path().as_bytes().to_vec())
    }
}

const IP: Ipv4Address = Ipv4Address::new(10, 7, 0, 1);

fn setup(per_port: usize) -> (NetStack<Loopback>, HttpServer) {
    let ip = IpConfig::Static {
        cidr: Ipv4Cidr::new(IP, 8),
        gateway: None,
    };
    let cfg = ServerConfig {
        ports: alloc::vec![7801],
        sockets_per_port: per_port,
        ..Default::default()
    };
    let stack = NetStack::new(
        Loopback::new(Medium::Ethernet),
        [2, 0, 0, 0, 0, 1],
        ip,
        0,
        7,
        cfg.sockets(),
    );
    let mut server = HttpServer::new(&cfg, Pool::new("requests", 1 << 20));
    server.per_client = per_port.saturating_sub(1).max(1);
    (stack, server)
}

/// The stack's poll as the module runs it: the server puts up its next listener
/// between received frames.
fn net_poll(stack: &mut NetStack<Loopback>, server: &mut HttpServer, now: u64) {
    stack.ingress(now, |s, _| server.refill(s, now));
    stack.egress(now);
}

fn client(stack: &mut NetStack<Loopback>, local_port: u16) -> SocketHandle {
    client_with_window(stack, local_port, 65536)
}

/// A client whose receive window is `window` bytes (a small one fills when it stops reading).
fn client_with_window(
    stack: &mut NetStack<Loopback>,
    local_port: u16,
    window: usize,
) -> SocketHandle {
    let rx = tcp::SocketBuffer::new(alloc::vec![0; window]);
    let tx = tcp::SocketBuffer::new(alloc::vec![0; 65536]);
    let h = stack.sockets.add(tcp::Socket::new(rx, tx));
    let cx = stack.iface.context();
    let s = stack.sockets.get_mut::<tcp::Socket>(h);
    s.connect(cx, IpEndpoint::new(IP.into(), 7801), local_port)
        .unwrap();
    h
}

fn run(stack: &mut NetStack<Loopback>, server: &mut HttpServer, now: &mut u64, rounds: usize) {
    run_with(stack, server, now, rounds, &mut PathEcho);
}

/// `rounds` polls of the stack and the server, 1 ms apart, with `handler` answering.
fn run_with(
    stack: &mut NetStack<Loopback>,
    server: &mut HttpServer,
    now: &mut u64,
    rounds: usize,
    handler: &mut dyn Handler,
) {
    for _ in 0..rounds {
        *now += 1;
        net_poll(stack, server, *now);
        server.poll(&mut stack.sockets, handler, *now);
        net_poll(stack, server, *now);
    }
}

/// The TCP state of socket `h` (a test's client).
fn state(stack: &NetStack<Loopback>, h: SocketHandle) -> State {
    stack.sockets.get::<tcp::Socket>(h).state()
}

fn drain(stack: &mut NetStack<Loopback>, h: SocketHandle) -> String {
    let s = stack.sockets.get_mut::<tcp::Socket>(h);
    let mut out = Vec::new();
    while s.can_recv() {
        s.recv(|b| {
            out.extend_from_slice(b);
            (b.len(), ())
        })
        .unwrap();
    }
    String::from_utf8(out).unwrap()
}

#[test]
fn pipelined_requests_are_answered_in_order_then_closed() {
    let (mut stack, mut server) = setup(2);
    let mut now = 0;
    run(&mut stack, &mut server, &mut now, 2);
    let c = client(&mut stack, 40001);
    run(&mut stack, &mut server, &mut now, 10);
    let req = "GET /first HTTP/1.1\r\nHost: x\r\n\r\nGET /second HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    stack
        .sockets
        .get_mut::<tcp::Socket>(c)
        .send_slice(req.as_bytes())
        .unwrap();
    run(&mut stack, &mut server, &mut now, 30);
    let text = drain(&mut stack, c);
    let first = text.find("/first").expect("first answered");
    let second = text.find("/second").expect("second answered");
    assert!(first < second, "{text}");
    assert!(text.starts_with("HTTP/1.1 200"));
    assert_eq!(server.stats.accepted, 1);
    // The server closed after `Connection: close`, and the slot listens again.
    assert!(!stack.sockets.get::<tcp::Socket>(c).may_recv());
    assert_eq!(server.open_connections(&stack.sockets), 0);
    let _ = instant(0);
}

#[test]
fn a_kept_alive_connection_between_requests_is_skipped_until_a_byte_or_its_idle_timeout() {
    let (mut stack, mut server) = setup(2);
    let mut now = 0;
    run(&mut stack, &mut server, &mut now, 2);
    let c = client(&mut stack, 40002);
    run(&mut stack, &mut server, &mut now, 5);
    send(&mut stack, c, "GET /one HTTP/1.1\r\nHost: x\r\n\r\n");
    run(&mut stack, &mut server, &mut now, 5);
    assert!(drain(&mut stack, c).contains("/one"));
    let quiet_until = |server: &HttpServer| {
        let slot = server.slots.iter().find(|s| s.conn.is_some()).unwrap();
        slot.quiet_until
    };
    let until = quiet_until(&server);
    assert!(now < until, "idle between requests");
    assert!(until <= now + server.http.idle_timeout_ms);
    // Before its deadline a poll passes it by, and a request that comes in is answered.
    assert!(!server.poll(&mut stack.sockets, &mut PathEcho, until - 1));
    send(&mut stack, c, "GET /two HTTP/1.1\r\nHost: x\r\n\r\n");
    now = until - 10;
    run(&mut stack, &mut server, &mut now, 5);
    assert!(drain(&mut stack, c).contains("/two"));
    // Its deadline moved with the request; at it, the connection is closed.
    let until = quiet_until(&server);
    assert!(until > now);
    now = until;
    run(&mut stack, &mut server, &mut now, 5);
    assert!(
        !stack.sockets.get::<tcp::Socket>(c).may_send(),
        "closed at the idle timeout"
    );
    assert_eq!(server.open_connections(&stack.sockets), 0);
}

#[test]
fn a_peer_that_stops_reading_is_skipped_until_its_read_timeout_then_reset() {
    struct Big;
    impl Handler for Big {
        fn handle(&mut self, _req: &mut Request, _peer: Peer, _now: u64) -> Response {
            Response::full(200, "text/plain", alloc::vec![b'b'; 200_000])
        }
    }
    let (mut stack, mut server) = setup(2);
    let mut now = 0;
    run(&mut stack, &mut server, &mut now, 2);
    // A client with a small window that never reads.
    let rx = tcp::SocketBuffer::new(alloc::vec![0; 4096]);
    let tx = tcp::SocketBuffer::new(alloc::vec![0; 4096]);
    let c = stack.sockets.add(tcp::Socket::new(rx, tx));
    let cx = stack.iface.context();
    let sock = stack.sockets.get_mut::<tcp::Socket>(c);
    sock.connect(cx, IpEndpoint::new(IP.into(), 7801), 40001)
        .unwrap();
    run(&mut stack, &mut server, &mut now, 5);
    stack
        .sockets
        .get_mut::<tcp::Socket>(c)
        .send_slice(b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    for _ in 0..40 {
        now += 1;
        net_poll(&mut stack, &mut server, now);
        server.poll(&mut stack.sockets, &mut Big, now);
        net_poll(&mut stack, &mut server, now);
    }
    let slot = server.slots.iter().find(|s| s.conn.is_some()).unwrap();
    let until = slot.blocked_until;
    assert!(now < until, "the connection waits on its peer");
    assert!(until <= now + server.http.idle_timeout_ms);
    // Until its deadline a poll changes nothing; at it, the peer's read timeout resets it.
    assert!(!server.poll(&mut stack.sockets, &mut Big, until - 1));
    net_poll(&mut stack, &mut server, until - 1);
    assert_eq!(state(&stack, c), State::Established);
    assert!(server.poll(&mut stack.sockets, &mut Big, until));
    net_poll(&mut stack, &mut server, until);
    net_poll(&mut stack, &mut server, until);
    assert_eq!(state(&stack, c), State::Closed, "reset at the read timeout");
    assert_eq!(server.open_connections(&stack.sockets), 0);
}

fn buffered(server: &HttpServer) -> usize {
    server.slots.iter().filter(|s| s.handle.is_some()).count()
}

#[test]
fn only_the_listener_and_open_connections_hold_buffers() {
    let (mut stack, mut server) = setup(6);
    server.per_client = 6;
    let mut now = 0;
    run(&mut stack, &mut server, &mut now, 2);
    assert_eq!(buffered(&server), 1, "one listener, nothing else");
    // Four clients at once: each SYN finds a listener, put up between frames.
    let clients: Vec<_> = (0..4).map(|i| client(&mut stack, 44000 + i)).collect();
    run(&mut stack, &mut server, &mut now, 10);
    assert_eq!(server.stats.accepted, 4);
    assert_eq!(
        buffered(&server),
        5,
        "four connections and the next listener"
    );
    for &h in &clients {
        send(
            &mut stack,
            h,
            "GET /bye HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        );
    }
    run(&mut stack, &mut server, &mut now, 30);
    for &h in &clients {
        assert!(drain(&mut stack, h).contains("/bye"));
    }
    // The connections are over: their buffers went back to the heap.
    now += RST_MS;
    run(&mut stack, &mut server, &mut now, 10);
    assert_eq!(server.open_connections(&stack.sockets), 0);
    assert_eq!(buffered(&server), 1);
}

/// Answers with the request path; a request with `Authorization: yes` is authenticated.
struct Guarded;
impl Handler for Guarded {
    fn admit(
        &mut self,
        head: &Request,
        _: Peer,
        _: Option<u8>,
        _: u64,
    ) -> Result<Admission, Response> {
        Ok(match head.headers.get("Authorization") {
            Some("yes") => Admission::Authenticated(0),
            _ => Admission::Anonymous,
        })
    }
    fn handle(&mut self, req: &mut Request, _peer: Peer, _now: u64) -> Response {
        Response::full(200, "text/plain", req.path().as_bytes().to_vec())
    }
}

fn run_guarded(stack: &mut NetStack<Loopback>, server: &mut HttpServer, now: &mut u64) {
    run_with(stack, server, now, 20, &mut Guarded);
}

fn send(stack: &mut NetStack<Loopback>, h: SocketHandle, text: &str) {
    let s = stack.sockets.get_mut::<tcp::Socket>(h);
    s.send_slice(text.as_bytes()).unwrap();
}

#[test]
fn past_its_cap_a_client_s_oldest_anonymous_connection_gives_way_or_it_must_prove_a_token() {
    let (mut stack, mut server) = setup(6);
    server.per_client = 2;
    let mut now = 0;
    run_guarded(&mut stack, &mut server, &mut now);
    let a = client(&mut stack, 43000);
    run_guarded(&mut stack, &mut server, &mut now);
    let b = client(&mut stack, 43001);
    run_guarded(&mut stack, &mut server, &mut now);
    // Past the cap an anonymous request is told so, and its connection ends.
    let c = client(&mut stack, 43002);
    run_guarded(&mut stack, &mut server, &mut now);
    send(&mut stack, c, "GET /more HTTP/1.1\r\nHost: x\r\n\r\n");
    run_guarded(&mut stack, &mut server, &mut now);
    let refused = drain(&mut stack, c);
    assert!(
        refused.starts_with("HTTP/1.1 503") && refused.contains("from this address"),
        "{refused}"
    );
    assert!(refused.contains("Retry-After: 1"), "{refused}");
    assert!(!stack.sockets.get::<tcp::Socket>(c).may_recv(), "closed");
    // Both earlier ones keep polling (never idle); once they are past their grace, the
    // address's next connection takes the place of the oldest, `a`.
    now += GRACE_MS;
    for h in [a, b] {
        send(&mut stack, h, "GET /kept HTTP/1.1\r\nHost: x\r\n\r\n");
    }
    run_guarded(&mut stack, &mut server, &mut now);
    assert!(drain(&mut stack, a).contains("/kept"));
    assert!(drain(&mut stack, b).contains("/kept"));
    let d = client(&mut stack, 43003);
    run_guarded(&mut stack, &mut server, &mut now);
    send(
        &mut stack,
        d,
        "GET /agent HTTP/1.1\r\nHost: x\r\nAuthorization: yes\r\n\r\n",
    );
    run_guarded(&mut stack, &mut server, &mut now);
    assert!(drain(&mut stack, d).contains("/agent"));
    assert_eq!(server.stats.reaped, 1);
    assert_eq!(state(&stack, a), State::Closed);
    assert_eq!(state(&stack, b), State::Established);
    send(&mut stack, b, "GET /still HTTP/1.1\r\nHost: x\r\n\r\n");
    run_guarded(&mut stack, &mut server, &mut now);
    assert!(drain(&mut stack, b).contains("/still"));
}

#[test]
fn a_token_holder_on_probation_makes_its_address_s_idlest_authenticated_connection_give_way() {
    let (mut stack, mut server) = setup(6);
    server.per_client = 2;
    let mut now = 0;
    run_guarded(&mut stack, &mut server, &mut now);
    let auth = "GET /a HTTP/1.1\r\nHost: x\r\nAuthorization: yes\r\n\r\n";
    // The address's cap is held by two authenticated connections: `idle` answered first.
    let (idle, used) = (client(&mut stack, 48000), client(&mut stack, 48001));
    run_guarded(&mut stack, &mut server, &mut now);
    send(&mut stack, idle, auth);
    run_guarded(&mut stack, &mut server, &mut now);
    now += GRACE_MS;
    send(&mut stack, used, auth);
    run_guarded(&mut stack, &mut server, &mut now);
    // No anonymous connection to replace: a third one is on probation. Without a token it
    // is refused; with one, it is served and the idlest of the address goes.
    let anon = client(&mut stack, 48002);
    run_guarded(&mut stack, &mut server, &mut now);
    send(&mut stack, anon, "GET /page HTTP/1.1\r\nHost: x\r\n\r\n");
    run_guarded(&mut stack, &mut server, &mut now);
    assert!(drain(&mut stack, anon).starts_with("HTTP/1.1 503"));
    assert_eq!(server.stats.reaped, 0);
    let agent = client(&mut stack, 48003);
    run_guarded(&mut stack, &mut server, &mut now);
    send(&mut stack, agent, auth);
    run_guarded(&mut stack, &mut server, &mut now);
    assert!(drain(&mut stack, agent).contains("/a"));
    assert_eq!(server.stats.reaped, 1);
    assert_eq!(state(&stack, idle), State::Closed);
    assert_eq!(state(&stack, used), State::Established);
}

#[test]
fn anonymous_connections_leave_a_port_s_last_slots_to_token_holders() {
    let (mut stack, mut server) = setup(4);
    server.per_client = 8;
    server.anonymous_per_port = 2;
    let mut now = 0;
    run_guarded(&mut stack, &mut server, &mut now);
    let anon: Vec<_> = (0..3)
        .map(|k| {
            let h = client(&mut stack, 45000 + k);
            run_guarded(&mut stack, &mut server, &mut now);
            h
        })
        .collect();
    for &h in &anon {
        send(&mut stack, h, "GET /page HTTP/1.1\r\nHost: x\r\n\r\n");
    }
    run_guarded(&mut stack, &mut server, &mut now);
    let answers: Vec<String> = anon.iter().map(|&h| drain(&mut stack, h)).collect();
    assert!(answers[0].contains("/page") && answers[1].contains("/page"));
    assert!(answers[2].contains("without a token"), "{}", answers[2]);
    // The third slot and the fourth go to token holders.
    let agents: Vec<_> = (0..2).map(|k| client(&mut stack, 46000 + k)).collect();
    run_guarded(&mut stack, &mut server, &mut now);
    for &h in &agents {
        send(
            &mut stack,
            h,
            "GET /agent HTTP/1.1\r\nHost: x\r\nAuthorization: yes\r\n\r\n",
        );
    }
    run_guarded(&mut stack, &mut server, &mut now);
    for &h in &agents {
        assert!(drain(&mut stack, h).contains("/agent"));
    }
    assert_eq!(server.stats.reaped, 0);
}

#[test]
fn a_full_pool_of_one_token_s_connections_yields_a_trickler_then_the_one_idle_longest() {
    let (mut stack, mut server) = setup(3);
    server.per_client = 8;
    let mut now = 0;
    run_guarded(&mut stack, &mut server, &mut now);
    // Three connections of the token: one in use, one trickling a body, one that goes idle
    // after its answer.
    let auth = "Host: x\r\nAuthorization: yes\r\n";
    let hs: Vec<_> = (0..3).map(|k| client(&mut stack, 47000 + k)).collect();
    run_guarded(&mut stack, &mut server, &mut now);
    let (used, slow, idle) = (hs[0], hs[1], hs[2]);
    let head = format!("POST /up HTTP/1.1\r\n{auth}Content-Length: 100\r\n\r\nx");
    send(&mut stack, slow, &head);
    run_guarded(&mut stack, &mut server, &mut now);
    // The pool is full; the trickler, behind the minimum rate, yields once its request is
    // SLOW_GRACE_MS old (and only then; a round of polls is 20 ms).
    now += SLOW_GRACE_MS - 65;
    run_guarded(&mut stack, &mut server, &mut now);
    assert_eq!(state(&stack, slow), State::Established);
    now += 30;
    run_guarded(&mut stack, &mut server, &mut now);
    assert_eq!(state(&stack, slow), State::Closed);
    assert_eq!(server.stats.reaped, 1);
    for h in [used, idle] {
        send(&mut stack, h, &format!("GET /a HTTP/1.1\r\n{auth}\r\n"));
    }
    run_guarded(&mut stack, &mut server, &mut now);
    now += GRACE_MS;
    send(&mut stack, used, &format!("GET /a HTTP/1.1\r\n{auth}\r\n"));
    run_guarded(&mut stack, &mut server, &mut now);
    // The next client takes the trickler's slot and fills the pool: the connection idle
    // longest gives way, not the one in use.
    let next = client(&mut stack, 47010);
    run_guarded(&mut stack, &mut server, &mut now);
    send(&mut stack, next, &format!("GET /a HTTP/1.1\r\n{auth}\r\n"));
    run_guarded(&mut stack, &mut server, &mut now);
    let last = client(&mut stack, 47011);
    run_guarded(&mut stack, &mut server, &mut now);
    assert_eq!(state(&stack, last), State::Established);
    assert_eq!(state(&stack, next), State::Established);
    assert_eq!(state(&stack, used), State::Established);
    assert_eq!(state(&stack, idle), State::Closed);
    assert_eq!(server.stats.reaped, 2);
}

#[test]
fn a_slot_taken_back_rests_so_the_client_cut_from_it_cannot_take_it_straight_back() {
    let (mut stack, mut server) = setup(2);
    server.per_client = 8;
    let mut now = 0;
    run_guarded(&mut stack, &mut server, &mut now);
    let step = |stack: &mut NetStack<Loopback>, server: &mut HttpServer, now: &mut u64| {
        run_with(stack, server, now, 1, &mut Guarded);
    };
    // Two connections of the token trickle bodies and fill the pool.
    let head = "POST /up HTTP/1.1\r\nHost: x\r\nAuthorization: yes\r\nContent-Length: 100\r\n\r\nx";
    let tricklers: Vec<_> = (0..2).map(|k| client(&mut stack, 49000 + k)).collect();
    run_guarded(&mut stack, &mut server, &mut now);
    for &h in &tricklers {
        send(&mut stack, h, head);
    }
    while server.stats.reaped == 0 {
        assert!(now < 10 * SLOW_GRACE_MS, "no trickler was cut");
        step(&mut stack, &mut server, &mut now);
    }
    let cut_at = now;
    // The client cut reconnects at once: the port refuses it while the slot rests.
    let again = client(&mut stack, 49010);
    for _ in 0..5 {
        step(&mut stack, &mut server, &mut now);
    }
    assert!(now < cut_at + REST_MS);
    assert_eq!(state(&stack, again), State::Closed);
    // A rest is no work: the kernel need not poll again at once for it.
    assert!(!server.poll(&mut stack.sockets, &mut Guarded, now));
    // The first SYN after the rest gets the slot.
    while now < cut_at + REST_MS {
        step(&mut stack, &mut server, &mut now);
    }
    let next = client(&mut stack, 49011);
    for _ in 0..5 {
        step(&mut stack, &mut server, &mut now);
    }
    assert_eq!(state(&stack, next), State::Established);
}

#[test]
fn one_poll_answers_a_bounded_number_of_requests_and_the_rest_on_later_polls() {
    let (mut stack, mut server) = setup(8);
    let mut now = 0;
    run_guarded(&mut stack, &mut server, &mut now);
    let clients: Vec<_> = (0..7).map(|i| client(&mut stack, 42000 + i)).collect();
    run_guarded(&mut stack, &mut server, &mut now);
    for &h in &clients {
        send(&mut stack, h, "GET /x HTTP/1.1\r\nHost: x\r\n\r\n");
    }
    // Let the requests reach the server's sockets without the server reading them.
    for _ in 0..5 {
        now += 1;
        net_poll(&mut stack, &mut server, now);
    }
    let mut guarded = Guarded;
    let mut counted = Counted::new(&mut guarded);
    assert!(server.poll(&mut stack.sockets, &mut counted, now));
    assert_eq!(counted.handled, REQUESTS_PER_POLL);
    run_guarded(&mut stack, &mut server, &mut now);
    let answered = clients
        .iter()
        .filter(|&&h| drain(&mut stack, h).contains("/x"))
        .count();
    assert_eq!(answered, 7);
}

#[test]
fn a_full_pool_resets_the_idlest_anonymous_connection_and_keeps_authenticated_ones() {
    let (mut stack, mut server) = setup(3);
    // Every client here has the same address: this is about the pool, not the cap.
    server.per_client = 8;
    let mut now = 0;
    run_guarded(&mut stack, &mut server, &mut now);
    let agent = client(&mut stack, 41000);
    run_guarded(&mut stack, &mut server, &mut now);
    send(
        &mut stack,
        agent,
        "GET /a HTTP/1.1\r\nHost: x\r\nAuthorization: yes\r\n\r\n",
    );
    run_guarded(&mut stack, &mut server, &mut now);
    assert!(drain(&mut stack, agent).contains("/a"));
    // Six silent clients, a second apart: each finds a listening socket, because the
    // anonymous connection idle the longest is reset to make room.
    let silent: Vec<_> = (1..=6)
        .map(|i| {
            // Each earlier client has been silent past its grace time.
            now += GRACE_MS;
            let h = client(&mut stack, 41000 + i);
            run_guarded(&mut stack, &mut server, &mut now);
            h
        })
        .collect();
    let last = *silent.last().unwrap();
    assert_eq!(state(&stack, last), State::Established);
    assert_eq!(server.stats.reaped, 5);
    // The reset clients were told.
    for &h in &silent[..5] {
        assert_eq!(state(&stack, h), State::Closed);
    }
    // The authenticated connection was never the one reset.
    send(&mut stack, agent, "GET /again HTTP/1.1\r\nHost: x\r\n\r\n");
    run_guarded(&mut stack, &mut server, &mut now);
    assert!(drain(&mut stack, agent).contains("/again"));
    send(&mut stack, last, "GET /late HTTP/1.1\r\nHost: x\r\n\r\n");
    run_guarded(&mut stack, &mut server, &mut now);
    assert!(drain(&mut stack, last).contains("/late"));
}

#[test]
fn a_full_pool_resets_the_longest_stalled_reader_for_a_new_client() {
    /// `Guarded`, with a big answer at `/big`.
    struct BigGuarded;
    impl Handler for BigGuarded {
        fn admit(
            &mut self,
            head: &Request,
            peer: Peer,
            proven: Option<u8>,
            now: u64,
        ) -> Result<Admission, Response> {
            Guarded.admit(head, peer, proven, now)
        }
        fn handle(&mut self, req: &mut Request, peer: Peer, now: u64) -> Response {
            match req.path() {
                "/big" => Response::full(200, "text/plain", alloc::vec![b'b'; 200_000]),
                _ => Guarded.handle(req, peer, now),
            }
        }
    }
    let round = |stack: &mut NetStack<Loopback>, server: &mut HttpServer, now: &mut u64| {
        run_with(stack, server, now, 20, &mut BigGuarded);
    };
    let (mut stack, mut server) = setup(2);
    server.per_client = 8;
    let mut now = 0;
    round(&mut stack, &mut server, &mut now);
    // Two token holders with small windows ask for a big answer and never read it.
    let reader = |stack: &mut NetStack<Loopback>, port| client_with_window(stack, port, 2048);
    let big = "GET /big HTTP/1.1\r\nHost: x\r\nAuthorization: yes\r\n\r\n";
    let first = reader(&mut stack, 48000);
    round(&mut stack, &mut server, &mut now);
    send(&mut stack, first, big);
    round(&mut stack, &mut server, &mut now);
    let second = reader(&mut stack, 48001);
    round(&mut stack, &mut server, &mut now);
    send(&mut stack, second, big);
    round(&mut stack, &mut server, &mut now);
    // The pool is full of stalled answers, and no socket listens: none yields before
    // STALLED_GRACE_MS, then the one stalled longest does, so that a next client can
    // connect, and it is answered.
    round(&mut stack, &mut server, &mut now);
    assert_eq!(server.stats.reaped, 0);
    now += STALLED_GRACE_MS;
    round(&mut stack, &mut server, &mut now);
    assert_eq!(server.stats.reaped, 1);
    assert_eq!(state(&stack, first), State::Closed);
    assert_eq!(state(&stack, second), State::Established);
    now += RST_MS;
    round(&mut stack, &mut server, &mut now);
    let next = client(&mut stack, 48002);
    round(&mut stack, &mut server, &mut now);
    assert_eq!(state(&stack, next), State::Established);
    send(
        &mut stack,
        next,
        "GET /a HTTP/1.1\r\nHost: x\r\nAuthorization: yes\r\n\r\n",
    );
    round(&mut stack, &mut server, &mut now);
    assert!(drain(&mut stack, next).starts_with("HTTP/1.1 200"));
}

/// Answers with the request path; `Authorization` names the token, each of its own rank:
/// `observe` (token 1, rank 0), `operate` (token 2, rank 1), `admin` (token 0, the top).
struct Ranked;
impl Handler for Ranked {
    fn admit(
        &mut self,
        head: &Request,
        _: Peer,
        _: Option<u8>,
        _: u64,
    ) -> Result<Admission, Response> {
        Ok(match head.headers.get("Authorization") {
            Some("admin") => Admission::Authenticated(0),
            Some("observe") => Admission::Authenticated(1),
            Some("operate") => Admission::Authenticated(2),
            _ => Admission::Anonymous,
        })
    }
    fn rank(&self, _: &Request, token: u8) -> u8 {
        match token {
            1 => 0,
            2 => 1,
            _ => RANK_TOP,
        }
    }
    fn handle(&mut self, req: &mut Request, _peer: Peer, _now: u64) -> Response {
        Response::full(200, "text/plain", req.path().as_bytes().to_vec())
    }
}

#[test]
fn the_last_slot_of_a_port_is_a_door_for_a_higher_rank_than_its_holders() {
    let round = |stack: &mut NetStack<Loopback>, server: &mut HttpServer, now: &mut u64| {
        run_with(stack, server, now, 20, &mut Ranked);
    };
    let ask =
        |token: &str| format!("GET /{token} HTTP/1.1\r\nHost: x\r\nAuthorization: {token}\r\n\r\n");
    let (mut stack, mut server) = setup(3);
    server.per_client = 8;
    let mut now = 0;
    round(&mut stack, &mut server, &mut now);
    // Two busy connections of the lowest rank: none of them ever yields by idleness.
    let watchers: Vec<SocketHandle> = (0..2)
        .map(|k| {
            let h = client(&mut stack, 49000 + k);
            round(&mut stack, &mut server, &mut now);
            send(&mut stack, h, &ask("observe"));
            round(&mut stack, &mut server, &mut now);
            assert!(drain(&mut stack, h).contains("/observe"));
            h
        })
        .collect();
    // A third of the same rank takes the last slot: it outranks nobody, so it is refused and
    // the door stays open.
    let third = client(&mut stack, 49002);
    round(&mut stack, &mut server, &mut now);
    send(&mut stack, third, &ask("observe"));
    round(&mut stack, &mut server, &mut now);
    let refused = drain(&mut stack, third);
    assert!(
        refused.starts_with("HTTP/1.1 503") && refused.contains("the port is full"),
        "{refused}"
    );
    assert!(refused.contains("Retry-After: 1"), "{refused}");
    assert_eq!(server.stats.reaped, 0);
    now += RST_MS;
    round(&mut stack, &mut server, &mut now);
    // An operator outranks them: served, and the oldest watcher gives way.
    let operator = client(&mut stack, 49003);
    round(&mut stack, &mut server, &mut now);
    send(&mut stack, operator, &ask("operate"));
    round(&mut stack, &mut server, &mut now);
    assert!(drain(&mut stack, operator).contains("/operate"));
    assert_eq!(server.stats.reaped, 1);
    assert_eq!(state(&stack, watchers[0]), State::Closed);
    assert_eq!(state(&stack, watchers[1]), State::Established);
    now += RST_MS;
    round(&mut stack, &mut server, &mut now);
    // The administrator takes the lowest rank's slot too, not the operator's.
    let admin = client(&mut stack, 49004);
    round(&mut stack, &mut server, &mut now);
    send(&mut stack, admin, &ask("admin"));
    round(&mut stack, &mut server, &mut now);
    assert!(drain(&mut stack, admin).contains("/admin"));
    assert_eq!(server.stats.reaped, 2);
    assert_eq!(state(&stack, watchers[1]), State::Closed);
    assert_eq!(state(&stack, operator), State::Established);
    // The top rank needs no one below it: a second administrator in the last slot is served
    // though only the operator is below, and the operator goes; a third finds the port full
    // of the top rank and is served all the same (nothing is reset for it).
    now += RST_MS;
    round(&mut stack, &mut server, &mut now);
    let second = client(&mut stack, 49005);
    round(&mut stack, &mut server, &mut now);
    send(&mut stack, second, &ask("admin"));
    round(&mut stack, &mut server, &mut now);
    assert!(drain(&mut stack, second).contains("/admin"));
    assert_eq!(state(&stack, operator), State::Closed);
    assert_eq!(server.stats.reaped, 3);
    now += RST_MS;
    round(&mut stack, &mut server, &mut now);
    let third = client(&mut stack, 49006);
    round(&mut stack, &mut server, &mut now);
    send(&mut stack, third, &ask("admin"));
    round(&mut stack, &mut server, &mut now);
    assert!(drain(&mut stack, third).contains("/admin"));
    assert_eq!(server.stats.reaped, 3);
    for h in [admin, second, third] {
        assert_eq!(state(&stack, h), State::Established);
    }
}

#[test]
fn a_client_refused_the_last_slot_that_keeps_its_connection_open_gives_it_back_soon() {
    let round = |stack: &mut NetStack<Loopback>, server: &mut HttpServer, now: &mut u64| {
        run_with(stack, server, now, 20, &mut Ranked);
    };
    let (mut stack, mut server) = setup(2);
    server.per_client = 8;
    let mut now = 0;
    round(&mut stack, &mut server, &mut now);
    let holder = client(&mut stack, 49100);
    round(&mut stack, &mut server, &mut now);
    send(
        &mut stack,
        holder,
        "GET /h HTTP/1.1\r\nHost: x\r\nAuthorization: observe\r\n\r\n",
    );
    round(&mut stack, &mut server, &mut now);
    assert!(drain(&mut stack, holder).contains("/h"));
    // A request with a body refused in the last slot: the module lingers to discard what
    // follows, and the client never closes.
    let refused = client(&mut stack, 49101);
    round(&mut stack, &mut server, &mut now);
    send(
        &mut stack,
        refused,
        "POST /r HTTP/1.1\r\nHost: x\r\nAuthorization: observe\r\nContent-Length: 4\r\n\r\nbody",
    );
    round(&mut stack, &mut server, &mut now);
    assert!(drain(&mut stack, refused).starts_with("HTTP/1.1 503"));
    assert_eq!(server.stats.reaped, 0);
    now += SLOW_GRACE_MS;
    round(&mut stack, &mut server, &mut now);
    assert_eq!(
        server.stats.reaped, 1,
        "the lingering refusal gave its slot back"
    );
    assert_eq!(state(&stack, holder), State::Established);
    now += RST_MS;
    round(&mut stack, &mut server, &mut now);
    let admin = client(&mut stack, 49102);
    round(&mut stack, &mut server, &mut now);
    send(
        &mut stack,
        admin,
        "GET /a HTTP/1.1\r\nHost: x\r\nAuthorization: admin\r\n\r\n",
    );
    round(&mut stack, &mut server, &mut now);
    assert!(drain(&mut stack, admin).contains("/a"));
}

#[test]
fn a_connection_turned_away_for_load_yields_its_slot_soon() {
    /// `Ranked`, with `/over` answered 429 (the token's rate is spent).
    struct Rated;
    impl Handler for Rated {
        fn admit(
            &mut self,
            head: &Request,
            peer: Peer,
            proven: Option<u8>,
            now: u64,
        ) -> Result<Admission, Response> {
            Ranked.admit(head, peer, proven, now)
        }
        fn handle(&mut self, req: &mut Request, peer: Peer, now: u64) -> Response {
            match req.path() {
                "/over" => Response::full(429, "text/plain", b"over the rate".to_vec()),
                _ => Ranked.handle(req, peer, now),
            }
        }
    }
    let round = |stack: &mut NetStack<Loopback>, server: &mut HttpServer, now: &mut u64| {
        run_with(stack, server, now, 20, &mut Rated);
    };
    let (mut stack, mut server) = setup(2);
    server.per_client = 8;
    let mut now = 0;
    round(&mut stack, &mut server, &mut now);
    // One token's two connections fill the port: one served, one over the token's rate.
    let (served, over) = (client(&mut stack, 49200), client(&mut stack, 49201));
    round(&mut stack, &mut server, &mut now);
    for (h, path) in [(served, "/a"), (over, "/over")] {
        let ask = format!("GET {path} HTTP/1.1\r\nHost: x\r\nAuthorization: admin\r\n\r\n");
        send(&mut stack, h, &ask);
    }
    round(&mut stack, &mut server, &mut now);
    assert!(drain(&mut stack, over).starts_with("HTTP/1.1 429"));
    assert_eq!(server.stats.reaped, 0);
    // Before its grace the served one keeps its slot; the turned-away one gives way.
    now += SLOW_GRACE_MS;
    round(&mut stack, &mut server, &mut now);
    assert_eq!(server.stats.reaped, 1);
    assert_eq!(state(&stack, over), State::Closed);
    assert_eq!(state(&stack, served), State::Established);
}
