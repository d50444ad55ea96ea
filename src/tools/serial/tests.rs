use crate::services::serial_ring::{Secrets, Span};
use crate::tools::testing::fake;
use crate::tools::testing::harness::{call, request, server_with};
use alloc::vec::Vec;
use base64::Engine;
use rpc::json::Tape;
use rpc::mcp::{Started, ToolCall};
use serde_json::{Value, json};

/// A 16-byte ring after `text` was written through it.
fn ring_with(text: &[u8]) -> (Vec<u8>, u32) {
    let mut ring = alloc::vec![0u8; 16];
    for (n, &b) in text.iter().enumerate() {
        ring[n % 16] = b;
    }
    (ring, text.len() as u32)
}

#[test]
fn reads_follow_the_console_across_a_wrap() {
    let (ring, head) = ring_with(b"boot ok\nirix7-mcp 0.1.0\nready\n");
    assert_eq!(head, 30);
    let (ctx, state) = fake::ctx_with_ring(ring, head);
    let mut s = server_with(ctx);
    // Offset 0 is older than the ring: 14 bytes lost, reading starts at 14.
    let r = call(&mut s, "serial.read", json!({"offset": 0, "max_bytes": 6}));
    let st = &r["structuredContent"];
    assert_eq!(st["data"], "mcp 0.");
    assert_eq!(
        (st["offset"].as_u64(), st["lost"].as_u64()),
        (Some(14), Some(14))
    );
    assert_eq!(
        (st["oldest"].as_u64(), st["next_offset"].as_u64()),
        (Some(14), Some(20))
    );
    assert_eq!(st["eof"], false);
    let r = call(&mut s, "serial.read", json!({"offset": 20}));
    let st = &r["structuredContent"];
    assert_eq!(st["data"], "1.0\nready\n");
    assert_eq!(
        (st["lost"].as_u64(), st["eof"].as_bool()),
        (Some(0), Some(true))
    );
    assert_eq!(st["next_offset"], 30);
    // Nothing new yet; then the head moves on.
    let r = call(&mut s, "serial.read", json!({"offset": 30}));
    assert_eq!(r["structuredContent"]["data"], "");
    assert_eq!(r["structuredContent"]["eof"], true);
    state.serial_head.set(31);
    let r = call(&mut s, "serial.read", json!({"offset": 30}));
    assert_eq!(r["structuredContent"]["bytes"], 1);
    assert_eq!(r["structuredContent"]["eof"], true);
}

#[test]
fn default_offset_is_the_oldest_byte() {
    let (ring, head) = ring_with(b"0123456789abcdefXYZ");
    let (ctx, _) = fake::ctx_with_ring(ring, head);
    let mut s = server_with(ctx);
    let st = call(&mut s, "serial.read", json!({}))["structuredContent"].clone();
    assert_eq!(st["data"], "3456789abcdefXYZ");
    assert_eq!(
        (st["offset"].as_u64(), st["lost"].as_u64()),
        (Some(3), Some(0))
    );
}

#[test]
fn bytes_the_kernel_overwrites_during_the_read_count_as_lost() {
    let (ring, head) = ring_with(b"0123456789abcdefXYZ");
    let (ctx, state) = fake::ctx_with_ring(ring, head);
    // The kernel writes 5 bytes while the tool copies: 3..8 may be torn.
    state.serial_head_bump.set(5);
    let mut s = server_with(ctx);
    let st = call(&mut s, "serial.read", json!({"offset": 0}))["structuredContent"].clone();
    assert_eq!(st["data"], "89abcdefXYZ");
    assert_eq!(
        (st["offset"].as_u64(), st["lost"].as_u64()),
        (Some(8), Some(8))
    );
    assert_eq!(
        (st["oldest"].as_u64(), st["head"].as_u64()),
        (Some(8), Some(24))
    );
    assert_eq!(st["next_offset"], 19);
    assert_eq!(st["eof"], false, "5 more bytes arrived meanwhile");
}

#[test]
fn an_offset_past_the_head_is_an_error() {
    let (ring, head) = ring_with(b"abc");
    let (ctx, _) = fake::ctx_with_ring(ring, head);
    let mut s = server_with(ctx);
    let r = call(&mut s, "serial.read", json!({"offset": 4}));
    assert_eq!(r["isError"], true);
    assert_eq!(
        r["content"][0]["text"],
        "E_RANGE: offset 4 is past the head 3: nothing written there yet"
    );
}

#[test]
fn text_keeps_characters_whole_and_base64_is_exact() {
    let text = "ab€\u{ff}".as_bytes(); // € is 3 bytes, ÿ is 2
    let mut bytes = text.to_vec();
    bytes.push(0xFF); // not UTF-8
    let (ring, head) = ring_with(&bytes);
    let (ctx, _) = fake::ctx_with_ring(ring, head);
    let mut s = server_with(ctx);
    // A limit inside € returns "ab" and continues at the €.
    let st = call(&mut s, "serial.read", json!({"offset": 0, "max_bytes": 4}))["structuredContent"]
        .clone();
    assert_eq!(
        (st["data"].as_str(), st["next_offset"].as_u64()),
        (Some("ab"), Some(2))
    );
    let st = call(&mut s, "serial.read", json!({"offset": 2}))["structuredContent"].clone();
    assert_eq!(st["data"], "€ÿ\u{fffd}");
    let st = call(
        &mut s,
        "serial.read",
        json!({"offset": 0, "encoding": "base64"}),
    )["structuredContent"]
        .clone();
    let raw = base64::engine::general_purpose::STANDARD
        .decode(st["data"].as_str().unwrap())
        .unwrap();
    assert_eq!(raw, bytes);
    assert_eq!(st["encoding"], "base64");
}

use rpc::http::{Body, BodyPoll, Response};
use rpc::mcp::McpServer;
use rpc::testing::{McpRequest, drain, last_message};

/// Starts a `serial.read` at `now` (2026-07-28, JSON only): the response, to poll.
fn start_read(s: &mut McpServer<crate::tools::Ctx>, args: Value, now: u64) -> Response {
    McpRequest::modern(
        "tools/call",
        json!({"name": "serial.read", "arguments": args}),
    )
    .accept("application/json")
    .send(s, now)
}

/// One poll of a waiting read: its result once it answered.
fn poll(r: &mut Response, now: u64) -> Option<Value> {
    match &mut r.body {
        Body::Full(b) => Some(serde_json::from_slice::<Value>(b).unwrap()["result"].clone()),
        Body::Stream(src) => {
            let mut out = Vec::new();
            let mut p = src.poll(&mut out, 1 << 16, now);
            // The answer goes out over the polls after the one that found it.
            while p != BodyPoll::End && !out.is_empty() {
                p = src.poll(&mut out, 1 << 16, now);
            }
            (p == BodyPoll::End).then(|| last_message(&out).unwrap()["result"].clone())
        }
        Body::Empty | Body::Spliced(..) => panic!("no answer of a tool call is spliced"),
    }
}

#[test]
fn until_already_on_the_console_answers_at_once_up_to_the_match() {
    let (ring, head) = ring_with(b"PROM ok\nlogin: \nmore");
    let (ctx, _) = fake::ctx_with_ring(ring, head);
    let mut s = server_with(ctx);
    let r = call(
        &mut s,
        "serial.read",
        json!({"until": "login:", "wait_ms": 5000}),
    );
    let st = &r["structuredContent"];
    assert_eq!(st["data"], " ok\nlogin:", "the 16-byte ring lost `PROM`");
    assert_eq!(
        (st["matched"].as_bool(), st["match_offset"].as_u64()),
        (Some(true), Some(8))
    );
    assert_eq!(st["next_offset"], 14);
    // Without waiting, a miss answers at once too.
    let st = call(&mut s, "serial.read", json!({"until": "nope"}))["structuredContent"].clone();
    assert_eq!(st["matched"], false);
    assert!(st.get("match_offset").is_none());
    assert_eq!(st["data"], " ok\nlogin: \nmore");
}

#[test]
fn a_wait_answers_in_the_poll_after_the_text_completes_across_looks() {
    // The ring already holds what the kernel "will write": the head reveals it.
    let (ring, _) = ring_with(b"boot: READY\n");
    let (ctx, state) = fake::ctx_with_ring(ring, 4);
    let mut s = server_with(ctx);
    let mut r = start_read(
        &mut s,
        json!({"offset": 0, "until": "READY", "wait_ms": 60_000}),
        1000,
    );
    assert_eq!(poll(&mut r, 1000), None);
    state.serial_head.set(9); // "boot: REA"
    assert_eq!(poll(&mut r, 1010), None, "half the text is no match");
    assert_eq!(poll(&mut r, 1020), None);
    state.serial_head.set(11); // "…DY"
    let st = poll(&mut r, 1030).expect("answered in the next poll")["structuredContent"].clone();
    assert_eq!(st["data"], "boot: READY");
    assert_eq!(
        (st["match_offset"].as_u64(), st["next_offset"].as_u64()),
        (Some(6), Some(11))
    );
}

#[test]
fn a_wait_ends_at_its_deadline_with_what_is_there() {
    let (ring, _) = ring_with(b"abcdef");
    let (ctx, state) = fake::ctx_with_ring(ring, 3);
    let mut s = server_with(ctx);
    let mut r = start_read(
        &mut s,
        json!({"offset": 3, "until": "zz", "wait_ms": 2000}),
        1000,
    );
    assert_eq!(poll(&mut r, 1000), None);
    state.serial_head.set(6);
    assert_eq!(poll(&mut r, 2999), None);
    let st = poll(&mut r, 3000).unwrap()["structuredContent"].clone();
    assert_eq!(
        (st["matched"].as_bool(), st["data"].as_str()),
        (Some(false), Some("def"))
    );
    // Without `until`, bytes past the offset end the wait.
    let mut r = start_read(&mut s, json!({"offset": 6, "wait_ms": 2000}), 4000);
    assert_eq!(poll(&mut r, 4000), None);
    assert_eq!(poll(&mut r, 4500), None);
    state.serial_head.set(7);
    let st = poll(&mut r, 4510).unwrap()["structuredContent"].clone();
    assert_eq!(
        (st["offset"].as_u64(), st["bytes"].as_u64()),
        (Some(6), Some(1))
    );
    assert!(st.get("matched").is_none());
}

#[test]
fn waiters_past_the_limit_are_busy_and_a_finished_one_frees_its_place() {
    // The fake allows 2 waiters, one per owner (half of them): this client's second wait is
    // refused (the share's rules are `irix7_kmem::share`'s, tested there and in
    // `services::serial_wait`).
    let (ring, head) = ring_with(b"abc");
    let (ctx, _) = fake::ctx_with_ring(ring, head);
    let mut s = server_with(ctx);
    let args = json!({"offset": 3, "wait_ms": 1000});
    let mut a = start_read(&mut s, args.clone(), 1000);
    let mut c = start_read(&mut s, args.clone(), 1000);
    let refused = poll(&mut c, 1000).unwrap();
    assert_eq!(refused["isError"], true);
    assert_eq!(
        refused["content"][0]["text"],
        "E_BUSY: this token's calls already wait on the console as many times as it may; \
         retry later"
    );
    assert!(poll(&mut a, 2000).is_some(), "deadline");
    drop(a);
    let mut d = start_read(&mut s, args, 2000);
    assert_eq!(poll(&mut d, 2000), None, "waits again");
    // A closed connection gives its place back too.
    drop(d);
    let mut e = start_read(&mut s, json!({"offset": 3, "wait_ms": 1000}), 2000);
    assert_eq!(poll(&mut e, 2000), None);
    let (_, ended) = drain(&mut e, 2000, 1000);
    assert!(ended);
}

#[test]
fn until_is_bounded() {
    let (ctx, _) = fake::ctx_and_state();
    let mut s = server_with(ctx);
    let r = call(&mut s, "serial.read", json!({"until": "é".repeat(200)}));
    assert_eq!(r["isError"], true);
    assert_eq!(
        r["content"][0]["text"],
        "E_INVAL: `until` must be 1 to 256 bytes"
    );
}

#[test]
fn serial_write_reaches_the_console() {
    let (ctx, state) = fake::ctx_and_state();
    let mut s = server_with(ctx);
    let r = call(&mut s, "serial.write", json!({"text": "hi"}));
    assert_eq!(r["structuredContent"]["bytes"], 9);
    assert_eq!(&state.console.borrow()[..], b"[mcp] hi\n");
}

#[test]
fn the_serial_resource_changes_when_the_ring_head_moves() {
    let (mut ctx, state) = fake::ctx_and_state();
    let before = super::ring_version(&mut ctx);
    assert_eq!(before, super::ring_version(&mut ctx));
    state.serial_head.set(state.serial_head.get() + 3);
    assert_ne!(before, super::ring_version(&mut ctx));
}

#[test]
fn the_serial_resource_is_the_ring_as_text() {
    let (ring, head) = ring_with(b"0123456789abcdefXYZ");
    let (ctx, _) = fake::ctx_with_ring(ring, head);
    let mut s = server_with(ctx);
    let r = request(&mut s, "resources/read", json!({"uri": "irix7://serial"}));
    let c = &r["result"]["contents"][0];
    assert_eq!(c["mimeType"], "text/plain");
    assert_eq!(c["text"], "3456789abcdefXYZ");
}

/// A ring whose bytes 6..14 are the generated token `c0ffee42`, and a context that knows it.
fn ring_with_secret() -> (crate::tools::Ctx, alloc::rc::Rc<fake::FakeState>) {
    let (ring, head) = ring_with(b"token c0ffee42 ok\n");
    let (mut ctx, state) = fake::ctx_with_ring(ring, head);
    ctx.services_mut().console_secret = Some(Span { start: 6, end: 14 });
    (ctx, state)
}

/// `serial.read` with `args` as a reader whose role gives it `secrets`: the answer's
/// structured content when it answered at once.
fn read_as(ctx: &mut crate::tools::Ctx, args: serde_json::Value, secrets: Secrets) -> Value {
    let text = args.to_string();
    let mut tape = Tape::default();
    let call = ToolCall {
        args: tape.read(&text).unwrap(),
        now_ms: 1000,
        client_capabilities: &Value::Null,
        input_responses: None,
        request_state: None,
        sees_secrets: secrets == Secrets::Reveal,
        holder: ToolCall::MACHINE,
    };
    match super::read_console(ctx, &call, secrets) {
        Ok(Started::Done(out)) => {
            serde_json::from_str(&out.structured.unwrap().into_text()).unwrap()
        }
        Ok(_) => panic!("the read did not answer at once"),
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn a_masked_read_shows_no_byte_of_the_secret_in_any_window() {
    let (mut ctx, _) = ring_with_secret();
    let whole = b"token ******** ok\n";
    // The ring wraps at 16: bytes 0 and 1 are gone, offsets 2..18 held.
    for offset in 2..=18u64 {
        for max in 1..=16u64 {
            let args = json!({"offset": offset, "max_bytes": max});
            let st = read_as(&mut ctx, args.clone(), Secrets::Mask);
            let from = offset as usize;
            let to = (from + max as usize).min(whole.len());
            assert_eq!(
                st["data"].as_str().unwrap().as_bytes(),
                &whole[from..to],
                "{args}"
            );
            let plain = read_as(&mut ctx, args.clone(), Secrets::Reveal);
            for k in ["offset", "bytes", "next_offset", "eof", "lost"] {
                assert_eq!(st[k], plain[k], "{k} of {args}");
            }
            // base64 carries the same masked bytes.
            let mut b64 = args.clone();
            b64["encoding"] = json!("base64");
            let st = read_as(&mut ctx, b64, Secrets::Mask);
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(st["data"].as_str().unwrap())
                .unwrap();
            assert_eq!(bytes, &whole[from..to], "{args} as base64");
        }
    }
    let plain = read_as(&mut ctx, json!({}), Secrets::Reveal);
    assert_eq!(plain["data"], "ken c0ffee42 ok\n", "Reveal shows it");
}

#[test]
fn until_cannot_probe_the_masked_secret() {
    let (mut ctx, _) = ring_with_secret();
    for guess in ["c0ffee42", "c0", "e42 ok"] {
        let args = json!({"offset": 2, "until": guess});
        let st = read_as(&mut ctx, args.clone(), Secrets::Mask);
        assert_eq!(st["matched"], false, "{args}");
        assert_eq!(st["data"], "ken ******** ok\n");
        assert_eq!(read_as(&mut ctx, args, Secrets::Reveal)["matched"], true);
    }
    let st = read_as(&mut ctx, json!({"until": "** ok"}), Secrets::Mask);
    assert_eq!(
        (st["matched"].as_bool(), st["data"].as_str()),
        (Some(true), Some("ken ******** ok"))
    );
}

#[test]
fn a_masked_wait_looks_at_masked_bytes() {
    let (mut ctx, state) = ring_with_secret();
    state.serial_head.set(3);
    let mut wait = super::Wait {
        read: super::ReadArgs {
            offset: Some(3),
            max: 64,
            base64: false,
            secrets: Secrets::Mask,
        },
        until: Some(crate::services::serial_wait::Literal::new(b"ee4").unwrap()),
        scanned: 3,
        deadline_ms: 10_000,
        _slot: None,
    };
    assert!(wait.look(&mut ctx).unwrap().is_none());
    state.serial_head.set(18);
    assert!(
        wait.look(&mut ctx).unwrap().is_none(),
        "the secret's bytes never match"
    );
    let out = wait.give_up(&mut ctx).unwrap();
    let st: Value = serde_json::from_str(&out.structured.unwrap().into_text()).unwrap();
    assert_eq!(st["data"], "en ******** ok\n");
}

#[test]
fn the_masked_resource_text_hides_the_secret() {
    let (ctx, _) = ring_with_secret();
    assert_eq!(
        super::ring_text(&ctx, Secrets::Mask).unwrap(),
        "ken ******** ok\n"
    );
    assert_eq!(
        super::ring_text(&ctx, Secrets::Reveal).unwrap(),
        "ken c0ffee42 ok\n"
    );
}

/// A context whose previous boot left `text` in its ring, with `secret` saying where its
/// token lies.
fn previous_with(text: &[u8], secret: crate::services::boot::PreviousSecret) -> crate::tools::Ctx {
    use crate::services::boot::{BootReport, PreviousRing};
    let (mut ctx, _) = fake::ctx_with_ring(Vec::new(), 0);
    let ring = PreviousRing {
        bytes: text.to_vec(),
        head: text.len() as u32,
        secret,
    };
    ctx.services_mut().boot = alloc::rc::Rc::new(BootReport {
        ring: Some(Ok(ring)),
        ..BootReport::unknown()
    });
    ctx
}

#[test]
fn the_previous_console_is_masked_or_refused_when_its_token_cannot_be_found() {
    use crate::services::boot::PreviousSecret;
    let text = b"token c0ffee42 ok\n";
    let read = |ctx: &crate::tools::Ctx, secrets| {
        super::previous_read(ctx, None, 64, secrets).map(|c| c.data)
    };
    // The flight record says where: masked for whoever may not see it.
    let known = previous_with(
        text,
        PreviousSecret::Known(Some(Span { start: 6, end: 14 })),
    );
    assert_eq!(read(&known, Secrets::Mask).unwrap(), b"token ******** ok\n");
    assert_eq!(read(&known, Secrets::Reveal).unwrap(), text);
    // It says none was printed: nothing to mask.
    let none = previous_with(text, PreviousSecret::Known(None));
    assert_eq!(read(&none, Secrets::Mask).unwrap(), text);
    // No flight record survived: nothing says where, so only the administrator reads it.
    let unknown = previous_with(text, PreviousSecret::Unknown);
    let refused = read(&unknown, Secrets::Mask).unwrap_err();
    assert!(refused.to_string().starts_with("E_PERM"), "{refused}");
    assert_eq!(read(&unknown, Secrets::Reveal).unwrap(), text);
}
