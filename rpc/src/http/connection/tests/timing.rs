//! Time: idle and lifetime limits, a request's minimum rate and deadlines, peers that stop
//! reading, and when a blocked connection needs polling again.

use super::*;

#[test]
fn a_peer_reading_a_few_bytes_every_few_seconds_is_given_up_on() {
    let (mut c, mut h) = (conn(), TestHandler::default());
    c.recv(b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n", 0, &mut h);
    // 100 bytes every 10 s: each read would reset a stall timer, but what the peer takes
    // buys it only 100 ms at the minimum rate.
    let mut t = 0;
    while !c.is_finished() {
        t += 10_000;
        c.poll(t, &mut h);
        c.mark_sent(100, t);
        assert!(t < 100_000, "never given up on");
    }
    assert!(c.is_aborted());
    let idle = Config::default().idle_timeout_ms;
    // The wait is first seen at the first poll (10 s), and judged at each poll after.
    assert!(t <= idle + 20_000, "given up on at {t} ms");
    // One that takes the answer at the minimum rate, however long that takes, gets it all.
    let (mut c, mut h) = (conn(), TestHandler::default());
    c.recv(b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n", 0, &mut h);
    let rate = Config::default().min_send_rate;
    let mut got = 0;
    let mut t = 0;
    while !c.pending_output().is_empty() {
        t += 2_000;
        c.poll(t, &mut h);
        let n = c.pending_output().len().min(2 * rate);
        got += n;
        c.mark_sent(n, t);
    }
    assert!(!c.is_finished(), "at {t} ms");
    assert!(got > 50_000 && t > idle, "{got} bytes in {t} ms");
}

#[test]
fn idle_timeout_closes_silently() {
    // A client that never sends anything has 10 s.
    let (mut c, mut h) = (conn(), TestHandler::default());
    c.poll(9_999, &mut h);
    assert!(!c.is_finished());
    c.poll(10_000, &mut h);
    assert!(c.is_finished());
    assert!(c.pending_output().is_empty());

    // Activity restarts the clock.
    let (mut c, mut h) = (lasting_conn(), TestHandler::default());
    send(&mut c, &mut h, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", 20_000);
    c.poll(49_999, &mut h);
    assert!(!c.is_finished());
    c.poll(50_000, &mut h);
    assert!(c.is_finished());
}

#[test]
fn an_anonymous_connection_ends_at_its_lifetime_however_busy() {
    // A status page polled every 500 ms on one keep-alive connection: answered and kept
    // until 30 s after it opened; the answer past that closes it.
    let (mut c, mut h) = (conn(), TestHandler::default());
    let mut now = 0;
    while now < 30_000 {
        let r = send(&mut c, &mut h, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", now);
        assert_eq!(
            (r[0].status, r[0].header("connection")),
            (200, None),
            "{now}"
        );
        assert!(!c.is_finished());
        now += 500;
    }
    let r = send(&mut c, &mut h, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", now);
    assert_eq!(
        (r[0].status, r[0].header("connection")),
        (200, Some("close"))
    );
    assert!(c.is_finished());
    // One idle at its lifetime closes without a word.
    let (mut c, mut h) = (conn(), TestHandler::default());
    send(&mut c, &mut h, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", 29_000);
    c.poll(29_999, &mut h);
    assert!(!c.is_finished());
    c.poll(30_000, &mut h);
    assert!(c.is_finished() && c.pending_output().is_empty());
}

#[test]
fn a_request_below_the_minimum_rate_is_behind_and_one_being_answered_is_owed() {
    let (mut c, mut h) = (conn(), TestHandler::default());
    assert!(!c.receiving_behind(1_000));
    assert_eq!(c.owing_nothing_since(), Some(0));
    let head = b"POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 8192\r\n\r\n";
    c.recv(head, 1_000, &mut h);
    assert_eq!(
        c.owing_nothing_since(),
        Some(1_000),
        "since the request began"
    );
    // At 8 KiB/s the head is on schedule for as long as its bytes last, then behind.
    let on_time = head.len() as u64 * 1000 / 8192;
    assert!(!c.receiving_behind(1_000 + on_time));
    assert!(c.receiving_behind(1_000 + on_time + 1));
    // Half the body 400 ms in is ahead of the rate again.
    c.recv(&[b'z'; 4096], 1_400, &mut h);
    assert!(!c.receiving_behind(1_400));
    // The whole request: nothing is being received, and the answer is owed.
    c.recv(&[b'z'; 4096], 1_500, &mut h);
    assert!(!c.receiving_behind(60_000));
    assert_eq!(c.owing_nothing_since(), None);
    drain(&mut c, &mut h, 1_500);
    assert_eq!(c.owing_nothing_since(), Some(1_500));
}

#[test]
fn half_sent_request_gets_408() {
    let (mut c, mut h) = (conn(), TestHandler::default());
    c.recv(b"GET / HTTP/1.1\r\nHo", 1_000, &mut h);
    // Trickling bytes does not extend the deadline.
    c.recv(b"s", 20_000, &mut h);
    c.poll(30_999, &mut h);
    assert!(c.pending_output().is_empty());
    c.poll(31_000, &mut h);
    let r = replies(&drain(&mut c, &mut h, 31_000));
    assert_eq!(r[0].status, 408);
    assert_eq!(r[0].header("connection"), Some("close"));
    assert_lingers(&mut c);
    assert!(h.seen.is_empty());
}

#[test]
fn a_trickled_body_is_cut_off_at_its_deadline() {
    let (mut c, mut h) = (conn(), TestHandler::default());
    c.recv(
        b"POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\n",
        0,
        &mut h,
    );
    // One byte every 10 s: each byte keeps the body moving, but the deadline (30 s plus
    // 4 bytes at the minimum rate, from the head) is not moved by them.
    for (i, b) in b"abc".iter().enumerate() {
        let now = 10_000 * (i as u64 + 1);
        c.poll(now - 1, &mut h);
        assert!(c.pending_output().is_empty());
        c.recv(&[*b], now, &mut h);
    }
    c.poll(30_000, &mut h);
    let r = replies(&drain(&mut c, &mut h, 30_000));
    assert_eq!(r[0].status, 408);
    assert!(h.seen.is_empty());
    assert_lingers(&mut c);
}

#[test]
fn a_big_body_gets_time_by_its_length() {
    let (mut c, mut h) = (conn(), TestHandler::default());
    // 80 KiB at the minimum 8 KiB/s: 10 s beyond the 30 s head allowance.
    c.recv(
        b"POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 81920\r\n\r\n",
        0,
        &mut h,
    );
    let piece = vec![b'z'; 2048];
    for i in 0..39u64 {
        assert_eq!(c.recv(&piece, i * 1000, &mut h), 2048);
        c.poll(i * 1000, &mut h);
        assert!(c.pending_output().is_empty());
    }
    c.recv(&piece, 39_000, &mut h);
    let r = replies(&drain(&mut c, &mut h, 39_000));
    assert_eq!(r[0].status, 200, "{}", text(&r[0].body));
    assert_eq!(h.seen, ["/up"]);
}

#[test]
fn long_stream_is_not_idle() {
    let (mut c, mut h) = (
        lasting_conn(),
        TestHandler::with_script(vec![None, None, Some(b"late".to_vec())]),
    );
    c.recv(b"GET /stream HTTP/1.1\r\nHost: x\r\n\r\n", 0, &mut h);
    drain(&mut c, &mut h, 0);
    h.release(0);
    c.poll(100_000, &mut h);
    assert!(!c.is_finished());
    h.release(0);
    // Output produced after a long quiet spell is not mistaken for a stalled peer.
    let out = drain(&mut c, &mut h, 200_000);
    assert!(text(&out).contains("late"));
    assert!(!c.is_finished());
}

#[test]
fn peer_that_stops_reading_is_aborted() {
    let (mut c, mut h) = (
        conn(),
        TestHandler::with_script(vec![Some(vec![b'z'; 100_000])]),
    );
    c.recv(b"GET /stream HTTP/1.1\r\nHost: x\r\n\r\n", 0, &mut h);
    c.poll(0, &mut h);
    assert!(!c.pending_output().is_empty());
    c.poll(29_999, &mut h);
    assert!(!c.is_finished());
    c.poll(30_000, &mut h);
    assert!(c.is_finished());
    assert!(h.log(0).cancelled);
}

#[test]
fn a_blocked_connection_says_until_when_its_polls_change_nothing() {
    let idle = Config::default().idle_timeout_ms;
    let stream = || {
        (
            conn(),
            TestHandler::with_script(vec![Some(vec![b'z'; 100_000])]),
        )
    };
    let (mut c, mut h) = stream();
    assert_eq!(c.blocked_until(), None, "nothing to send");
    c.recv(b"GET /stream HTTP/1.1\r\nHost: x\r\n\r\n", 5, &mut h);
    c.poll(5, &mut h);
    let until = c.blocked_until().expect("the output buffer is full");
    assert_eq!(until, 5 + idle, "the peer's read timeout");
    let before = c.pending_output().to_vec();
    c.poll(until - 1, &mut h);
    assert_eq!(c.pending_output(), before);
    assert_eq!(c.blocked_until(), Some(until));
    c.poll(until, &mut h);
    assert!(
        c.is_finished(),
        "the read timeout fires at the time it named"
    );

    // Room for another piece: the stream is polled again, no skipping until it is full.
    let (mut c, mut h) = stream();
    c.recv(b"GET /stream HTTP/1.1\r\nHost: x\r\n\r\n", 0, &mut h);
    c.poll(0, &mut h);
    c.mark_sent(4096, 1);
    assert_eq!(c.blocked_until(), None);
    c.poll(1, &mut h);
    assert_eq!(c.blocked_until(), Some(1 + idle));

    // A complete body waits too; a lingering close ends sooner than the read timeout.
    let (mut c, mut h) = (conn(), TestHandler::default());
    c.recv(b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n", 0, &mut h);
    c.poll(0, &mut h);
    assert_eq!(c.blocked_until(), Some(idle));
    let mut c = conn();
    c.recv(
        b"POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999\r\n\r\n",
        0,
        &mut h,
    );
    c.poll(0, &mut h);
    let linger = Config::default().linger_ms;
    assert!(linger < idle);
    assert_eq!(c.blocked_until(), Some(linger));
}

#[test]
fn client_that_pipelines_without_reading_is_throttled() {
    let (mut c, mut h) = (conn(), TestHandler::default());
    let one = b"GET /x HTTP/1.1\r\nHost: x\r\n\r\n";
    let flood: Vec<u8> = one.iter().copied().cycle().take(one.len() * 5000).collect();
    let took = c.recv(&flood, 0, &mut h);
    assert!(took < flood.len());
    let cfg = Config::default();
    assert!(c.pending_output().len() <= cfg.output_buffer + 200);
    assert!(
        h.seen.len() < 1000,
        "{} requests answered ahead",
        h.seen.len()
    );
    // Draining lets the rest through, still in order.
    let mut rest = &flood[took..];
    let mut answered = 0;
    while !rest.is_empty() {
        answered += replies(&drain(&mut c, &mut h, 0)).len();
        let n = c.recv(rest, 0, &mut h);
        rest = &rest[n..];
    }
    answered += replies(&drain(&mut c, &mut h, 0)).len();
    assert_eq!(answered, 5000);
    assert_eq!(h.seen.len(), 5000);
}
