//! Drives an HTTP `Connection` with arbitrary bytes split at arbitrary points, a socket that
//! takes arbitrary amounts of output and a clock that jumps: nothing may panic, buffered
//! output stays bounded, and a closed peer always leads to a finished connection.
//!
//! Input layout: the first byte seeds the split/clock generator, the rest is the byte stream.
//! Each case runs under the heap budget (`irix7_fuzz::budget`).

#![no_main]

use libfuzzer_sys::fuzz_target;
use rpc::http::{
    Body, BodyPoll, BodySource, Config, Connection, Handler, Headers, Limits, Peer, Request,
    Response,
};
use irix7_kmem::testing::Lcg;

/// A streamed body of `left` bytes that is Pending every other poll.
struct Drip {
    left: usize,
    tick: bool,
}

impl BodySource for Drip {
    fn poll(&mut self, out: &mut Vec<u8>, max: usize, _now_ms: u64) -> BodyPoll {
        self.tick = !self.tick;
        if self.tick {
            return BodyPoll::Pending;
        }
        let n = self.left.min(max).min(100);
        out.extend(std::iter::repeat_n(b'd', n));
        self.left -= n;
        if self.left == 0 {
            BodyPoll::End
        } else {
            BodyPoll::Data
        }
    }
}

/// `/stream…` streams a body as long as the request's; anything else echoes the body length.
struct Trivial;

impl Handler for Trivial {
    fn handle(&mut self, req: &mut Request, _peer: Peer, _now_ms: u64) -> Response {
        if req.path().starts_with("/stream") {
            let mut headers = Headers::default();
            headers.push("Content-Type", "text/event-stream");
            let body = Body::Stream(Box::new(Drip {
                left: req.body.len() + 1,
                tick: false,
            }));
            Response {
                status: 200,
                headers,
                body,
                turned_away: false,
            }
        } else {
            Response::full(200, "text/plain", format!("{} bytes", req.body.len()))
        }
    }
}

const OUT: usize = 512;
/// A response head or one chunk may overshoot the output buffer by its own size.
const SLACK: usize = 1024;

fuzz_target!(|data: &[u8]| {
    irix7_fuzz::budget::case(|| case(data));
});

/// One case: the connection fed, polled and drained as the module's server does it.
fn case(data: &[u8]) {
    let Some((&seed, input)) = data.split_first() else {
        return;
    };
    let mut rng = Lcg(seed.into());
    let config = Config {
        limits: Limits {
            request_line: 256,
            header_count: 8,
            header_section: 1024,
            body: 2048,
            chunk_line: 64,
        },
        idle_timeout_ms: 5_000,
        first_byte_timeout_ms: 2_000,
        request_timeout_ms: 5_000,
        min_body_rate: 512,
        min_send_rate: 256,
        linger_ms: 2_000,
        linger_bytes: 4096,
        output_buffer: OUT,
        input_buffer: 256,
        anonymous_lifetime_ms: 10_000,
    };
    let peer = Peer {
        addr: [10, 0, 2, 2],
        port: 1234,
    };
    let mut handler = Trivial;
    let mut conn = Connection::new(peer, config, 0);
    let mut now = 0u64;
    let mut rest = input;
    let mut rounds = 0;
    while !rest.is_empty() && !conn.is_finished() && rounds < 100_000 {
        rounds += 1;
        let piece = 1 + rng.below(rest.len().min(64));
        let taken = conn.recv(&rest[..piece], now, &mut handler);
        assert!(taken <= piece);
        rest = &rest[taken..];
        conn.poll(now, &mut handler);
        let pending = conn.pending_output().len();
        assert!(pending <= OUT + SLACK, "{pending} bytes buffered");
        conn.mark_sent(rng.below(pending + 1), now);
        now += rng.below(1_500) as u64;
    }
    // The peer goes away: whatever is owed drains, then the connection is finished.
    conn.peer_closed();
    for _ in 0..100_000 {
        if conn.is_finished() {
            break;
        }
        conn.poll(now, &mut handler);
        let pending = conn.pending_output().len();
        conn.mark_sent(pending, now);
    }
    assert!(conn.is_finished());
}
