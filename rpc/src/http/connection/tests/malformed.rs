//! Random and broken input: never a panic, and the framing and order of the good requests
//! around it kept.

use super::*;
use irix7_kmem::testing::Lcg;

#[test]
fn random_bytes_never_panic_and_get_an_error_or_nothing() {
    let mut rng = Lcg(99);
    for _ in 0..3000 {
        let len = 1 + (rng.next_u64() % 400) as usize;
        let input: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
        let (mut c, mut h) = (conn(), TestHandler::default());
        let mut rest = &input[..];
        let mut out = Vec::new();
        while !rest.is_empty() {
            let piece = (1 + (rng.next_u64() % 64) as usize).min(rest.len());
            let n = c.recv(&rest[..piece], 0, &mut h);
            rest = &rest[n..];
            out.extend(drain(&mut c, &mut h, 0));
            if n == 0 {
                break;
            }
        }
        c.poll(60_000, &mut h);
        out.extend(drain(&mut c, &mut h, 60_000));
        assert!(h.seen.is_empty());
        let s = text(&out);
        assert!(
            s.starts_with("HTTP/1.1 4") || s.starts_with("HTTP/1.1 5") || s.is_empty(),
            "{s}"
        );
        // Whatever state it is left in, the connection ends on its own.
        c.poll(120_000, &mut h);
        assert!(c.is_finished());
    }
}

#[test]
fn mixed_valid_and_broken_requests_keep_framing_and_order() {
    let fragments: [&[u8]; 10] = [
        b"GET /g HTTP/1.1\r\nHost: x\r\n\r\n",
        b"POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc",
        b"POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2;e\r\nhi\r\n0\r\n\r\n",
        b"POST /e HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\nz",
        b"GET /stream HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET /nocontent HTTP/1.1\r\nHost: x\r\n\r\n",
        b"\r\n",
        b"X-Junk: 1\r\n",
        b"\x00\xff garbage",
        b"GET / HTTP/1.1\r\n",
    ];
    let mut rng = Lcg(2024);
    let (mut handled, mut refused, mut continues) = (0, 0, 0);
    for _ in 0..400 {
        let mut input = Vec::new();
        for _ in 0..1 + rng.next_u64() % 8 {
            input.extend_from_slice(fragments[(rng.next_u64() % 10) as usize]);
        }
        let mut h = TestHandler::default();
        for _ in 0..8 {
            h.scripts
                .push_back(vec![Some(b"s1".to_vec()), Some(b"s2".to_vec())]);
        }
        let mut c = conn();
        let (mut rest, mut out, mut now) = (&input[..], Vec::new(), 0);
        for _ in 0..10_000 {
            // Poll before looking at the output: the contract asks for a poll after
            // `mark_sent` (it answers requests held behind a finished body).
            c.poll(now, &mut h);
            if rest.is_empty() && c.pending_output().is_empty() {
                break;
            }
            let piece = (1 + (rng.next_u64() % 40) as usize).min(rest.len());
            let n = c.recv(&rest[..piece], now, &mut h);
            rest = &rest[n..];
            c.poll(now, &mut h);
            let take = (rng.next_u64() as usize % 300).min(c.pending_output().len());
            out.extend_from_slice(&c.pending_output()[..take]);
            c.mark_sent(take, now);
            now += rng.next_u64() % 50;
        }
        assert!(rest.is_empty());
        let r = replies(&out);
        let finals: Vec<&Reply> = r.iter().filter(|r| r.status != 100).collect();
        handled += h.seen.len();
        refused += finals.iter().filter(|r| r.status >= 400).count();
        continues += r.len() - finals.len();
        // One final response per handled request, in order, and at most one error, last.
        assert_eq!(
            finals.iter().filter(|r| r.status < 400).count(),
            h.seen.len()
        );
        if let Some(i) = finals.iter().position(|r| r.status >= 400) {
            assert_eq!(i, finals.len() - 1);
            assert_eq!(finals[i].header("connection"), Some("close"));
            assert_lingers(&mut c);
        }
        for (reply, target) in finals.iter().zip(h.seen.iter()) {
            let want: &[u8] = match target.as_str() {
                "/stream" => b"s1s2",
                "/nocontent" => b"",
                "/g" => b"GET /g ",
                "/p" => b"POST /p abc",
                "/c" => b"POST /c hi",
                "/e" => b"POST /e z",
                other => panic!("unexpected target {other}"),
            };
            assert_eq!(reply.body, want, "{target}");
        }
    }
    // The mix exercised all three outcomes.
    assert!(
        handled > 300 && refused > 100 && continues > 20,
        "{handled} {refused} {continues}"
    );
}
