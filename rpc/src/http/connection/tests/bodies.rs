//! How an answer's body goes out: spliced and whole bodies, streamed (chunked) bodies and their
//! backpressure, and a stream cancelled when its request ends early.

use super::*;

#[test]
fn a_spliced_body_is_sent_from_its_pieces_in_any_sizes() {
    let want: Vec<u8> = [&b"[<"[..], &b"0123456789".repeat(300)[5..2005], b">]"].concat();
    for piece in [1, 7, 1460, 5000] {
        let mut c = conn();
        let mut h = TestHandler::default();
        c.recv(b"GET /spliced HTTP/1.1\r\nHost: x\r\n\r\n", 0, &mut h);
        let mut all = Vec::new();
        loop {
            c.poll(0, &mut h);
            let out = c.pending_output();
            let n = out.len().min(piece);
            if n == 0 {
                break;
            }
            all.extend_from_slice(&out[..n]);
            c.mark_sent(n, 0);
        }
        let r = replies(&all);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].header("content-length"), Some("2004"));
        assert_eq!(r[0].body, want, "pieces of {piece}");
        assert!(!c.is_finished());
    }
}

#[test]
fn a_sent_answer_s_room_is_lent_to_the_next_request_unless_it_is_big() {
    let mut c = conn();
    let mut h = TestHandler::default();
    let get = |c: &mut Connection, h: &mut TestHandler, path: &str| {
        let req = format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n");
        c.recv(req.as_bytes(), 0, h);
        replies(&drain(c, h, 0)).remove(0).body
    };
    assert_eq!(get(&mut c, &mut h, "/room"), b"room 0", "no room yet");
    // The room of the first answer is the second's, and the third's.
    assert_ne!(get(&mut c, &mut h, "/room"), b"room 0");
    let second = h.seen.last().cloned();
    get(&mut c, &mut h, "/room");
    assert_eq!(h.seen.last().cloned(), second, "the same buffer");
    // A big answer in between is not kept: the room the small one left is.
    assert_eq!(get(&mut c, &mut h, "/big").len(), 50_000);
    assert!(c.output.kept_answer() <= KEPT_ANSWER);
    get(&mut c, &mut h, "/room");
    assert_eq!(h.seen.last().cloned(), second);
}

#[test]
fn head_of_stream_cancels_source() {
    let (mut c, mut h) = (
        conn(),
        TestHandler::with_script(vec![Some(b"data".to_vec())]),
    );
    c.recv(b"HEAD /stream HTTP/1.1\r\nHost: x\r\n\r\n", 0, &mut h);
    let out = text(&drain(&mut c, &mut h, 0));
    assert!(out.ends_with("Transfer-Encoding: chunked\r\n\r\n"), "{out}");
    assert!(h.log(0).cancelled);
    assert_eq!(h.log(0).polls, 0);
}

#[test]
fn streamed_body_is_chunked_and_later_requests_wait() {
    let steps = vec![
        Some(b"event: a\n\n".to_vec()),
        None,
        Some(b"event: b\n\n".to_vec()),
    ];
    let (mut c, mut h) = (conn(), TestHandler::with_script(steps));
    let input = b"GET /stream HTTP/1.1\r\nHost: x\r\n\r\nGET /after HTTP/1.1\r\nHost: x\r\n\r\n";
    assert_eq!(c.recv(input, 0, &mut h), input.len());
    let first = text(&drain(&mut c, &mut h, 0));
    assert!(first.contains(
        "Content-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\na\r\nevent: a\n\n\r\n"
    ));
    // The pending step held the stream open: /after is not handled yet.
    assert_eq!(h.seen, ["/stream"]);
    assert_eq!(drain(&mut c, &mut h, 1), b"");
    assert_eq!(h.seen, ["/stream"]);
    h.release(0);
    let rest = drain(&mut c, &mut h, 1);
    assert_eq!(h.seen, ["/stream", "/after"]);
    let mut all = first.into_bytes();
    all.extend_from_slice(&rest);
    let r = replies(&all);
    assert_eq!(r.len(), 2);
    assert_eq!(r[0].body, b"event: a\n\nevent: b\n\n");
    assert_eq!(r[1].body, b"GET /after ");
    assert!(h.log(0).ended && !h.log(0).cancelled);
}

#[test]
fn stream_backpressure_bounds_output() {
    let total = 200_000;
    let steps = vec![Some(vec![b's'; total])];
    let (mut c, mut h) = (conn(), TestHandler::with_script(steps));
    c.recv(b"GET /stream HTTP/1.1\r\nHost: x\r\n\r\n", 0, &mut h);
    let cap = Config::default().output_buffer;
    let mut all = Vec::new();
    for _ in 0..10_000 {
        c.poll(0, &mut h);
        let pending = c.pending_output().len();
        assert!(pending <= cap + 200, "{pending} bytes buffered");
        if pending == 0 {
            break;
        }
        // A slow socket: 1000 bytes per round.
        let n = pending.min(1000);
        all.extend_from_slice(&c.pending_output()[..n]);
        c.mark_sent(n, 0);
    }
    assert!(h.log(0).max_seen <= cap);
    let r = replies(&all);
    assert_eq!(r[0].body.len(), total);
    assert!(h.log(0).ended);
}

#[test]
fn full_body_larger_than_buffer_is_sent_in_pieces() {
    let (mut c, mut h) = (conn(), TestHandler::default());
    c.recv(
        b"GET /big HTTP/1.1\r\nHost: x\r\n\r\nGET /next HTTP/1.1\r\nHost: x\r\n\r\n",
        0,
        &mut h,
    );
    assert!(c.pending_output().len() <= Config::default().output_buffer + 200);
    // /next waits until /big is fully in the buffer.
    assert_eq!(h.seen, ["/big"]);
    let r = replies(&drain(&mut c, &mut h, 0));
    assert_eq!(r[0].body, vec![b'b'; 50_000]);
    assert_eq!(r[1].body, b"GET /next ");
}

#[test]
fn full_body_is_handed_out_from_its_own_buffer() {
    let (mut c, mut h) = (conn(), TestHandler::default());
    c.recv(
        b"GET /big HTTP/1.1\r\nHost: x\r\n\r\nGET /next HTTP/1.1\r\nHost: x\r\n\r\n",
        0,
        &mut h,
    );
    // First the head alone, then the whole body at once (no copy through the 16 KiB
    // output buffer), taken here in uneven pieces.
    let head = c.pending_output().to_vec();
    assert!(text(&head).ends_with("\r\n\r\n"), "{}", text(&head));
    c.mark_sent(head.len(), 0);
    c.poll(0, &mut h);
    assert_eq!(c.pending_output().len(), 50_000);
    let mut body = Vec::new();
    for piece in [1, 4095, 30_000] {
        body.extend_from_slice(&c.pending_output()[..piece]);
        c.mark_sent(piece, 1);
        c.poll(1, &mut h);
        assert_eq!(h.seen, ["/big"], "/next waits until the body is sent");
    }
    // A peer that stops reading mid-body is aborted after the idle timeout.
    let idle = Config::default().idle_timeout_ms;
    c.poll(1 + idle - 1, &mut h);
    assert!(!c.is_finished());
    body.extend_from_slice(c.pending_output());
    c.mark_sent(usize::MAX, 2);
    assert_eq!(body, vec![b'b'; 50_000]);
    let r = replies(&drain(&mut c, &mut h, 2));
    assert_eq!(h.seen, ["/big", "/next"]);
    assert_eq!(r[0].body, b"GET /next ");

    let (mut c, mut h) = (conn(), TestHandler::default());
    c.recv(b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n", 0, &mut h);
    let n = c.pending_output().len();
    c.mark_sent(n, 0);
    c.mark_sent(100, idle / 2);
    c.poll(idle, &mut h);
    assert!(!c.is_finished(), "the peer took bytes within the timeout");
    c.poll(idle / 2 + idle, &mut h);
    assert!(c.is_finished(), "a peer that stopped reading is aborted");
}

#[test]
fn input_held_while_streaming_is_bounded() {
    let (mut c, mut h) = (conn(), TestHandler::with_script(vec![None]));
    c.recv(b"GET /stream HTTP/1.1\r\nHost: x\r\n\r\n", 0, &mut h);
    let flood = vec![b'x'; 100_000];
    let took = c.recv(&flood, 0, &mut h);
    assert_eq!(took, Config::default().input_buffer);
    assert_eq!(c.recv(&flood, 0, &mut h), 0);
}

#[test]
fn cancel_on_peer_close_mid_stream() {
    let (mut c, mut h) = (
        conn(),
        TestHandler::with_script(vec![Some(b"x".to_vec()), None]),
    );
    c.recv(b"GET /stream HTTP/1.1\r\nHost: x\r\n\r\n", 0, &mut h);
    drain(&mut c, &mut h, 0);
    assert!(!h.log(0).cancelled);
    c.peer_closed();
    assert!(h.log(0).cancelled);
    assert!(c.is_finished());
}

#[test]
fn cancel_on_drop_and_abort_mid_stream() {
    let (mut c, mut h) = (conn(), TestHandler::with_script(vec![None]));
    c.recv(b"GET /stream HTTP/1.1\r\nHost: x\r\n\r\n", 0, &mut h);
    drop(c);
    assert!(h.log(0).cancelled);

    let (mut c, mut h) = (conn(), TestHandler::with_script(vec![None]));
    c.recv(b"GET /stream HTTP/1.1\r\nHost: x\r\n\r\n", 0, &mut h);
    c.abort();
    assert!(h.log(0).cancelled && c.is_finished());
    assert!(c.pending_output().is_empty());
}

#[test]
fn finished_stream_not_cancelled_on_drop() {
    let (mut c, mut h) = (conn(), TestHandler::with_script(vec![Some(b"x".to_vec())]));
    c.recv(b"GET /stream HTTP/1.1\r\nHost: x\r\n\r\n", 0, &mut h);
    drain(&mut c, &mut h, 0);
    drop(c);
    assert!(h.log(0).ended && !h.log(0).cancelled);
}

#[test]
fn http10_stream_is_delimited_by_close() {
    let (mut c, mut h) = (
        conn(),
        TestHandler::with_script(vec![Some(b"abc".to_vec())]),
    );
    c.recv(b"GET /stream HTTP/1.0\r\n\r\n", 0, &mut h);
    let out = text(&drain(&mut c, &mut h, 0));
    assert!(
        out.ends_with("Content-Type: text/event-stream\r\nConnection: close\r\n\r\nabc"),
        "{out}"
    );
    assert!(c.is_finished());
}

#[test]
fn http10_keep_alive_stream_still_closes() {
    let (mut c, mut h) = (conn(), TestHandler::with_script(vec![Some(b"x".to_vec())]));
    c.recv(
        b"GET /stream HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
        0,
        &mut h,
    );
    let out = text(&drain(&mut c, &mut h, 0));
    assert!(
        out.contains("Connection: close\r\n") && !out.contains("chunked"),
        "{out}"
    );
    assert!(c.is_finished());
}
