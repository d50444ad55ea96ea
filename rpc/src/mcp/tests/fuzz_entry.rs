//! The fuzzing entry point survives odd and mutated inputs.

use super::*;
use irix7_kmem::testing::Lcg;

#[test]
fn fuzz_entry_survives_odd_inputs() {
    for case in [
        &b""[..],
        b"POST\n\n{",
        b"POST\nMCP-Protocol-Version: 2026-07-28\nMcp-Method: tools/call\nMcp-Name: slow\n\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"slow\",\"_meta\":{\"progressToken\":1,\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":{}}}}",
        b"GET\nMcp-Session-Id: x\n\n",
        b"POST\nContent-Type: text/plain\n\n{}",
        b"POST\n\n[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\"}]",
        &[0xff, 0xfe, b'\n', b'\n', 0x80],
    ] {
        fuzz::one_input(case);
    }
}

#[test]
fn fuzz_entry_survives_mutated_requests() {
    let seeds: [&[u8]; 4] = [
        b"POST\nMCP-Protocol-Version: 2026-07-28\nMcp-Method: tools/call\nMcp-Name: echo\n\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"text\":\"hi\"},\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":{}}}}",
        b"POST\nAccept: text/event-stream\nMCP-Protocol-Version: 2026-07-28\nMcp-Method: tools/call\nMcp-Name: slow\n\n{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"method\":\"tools/call\",\"params\":{\"name\":\"slow\",\"_meta\":{\"progressToken\":7,\"io.modelcontextprotocol/logLevel\":\"debug\",\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":{}}}}",
        b"POST\n\n{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-03-26\",\"capabilities\":{}}}",
        b"POST\nMcp-Session-Id: abc\n\n[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"},{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":1}}]",
    ];
    let mut rng = Lcg(1);
    let mut next = move || rng.next_u64();
    for i in 0..3000 {
        let mut input = seeds[i % seeds.len()].to_vec();
        for _ in 0..(next() % 8) {
            let len = input.len().max(1);
            let at = (next() as usize) % len;
            match next() % 4 {
                0 => {
                    if at < input.len() {
                        input[at] = next() as u8;
                    }
                }
                1 => {
                    let alphabet = b"{}[]\":,\\\n0-e9";
                    input.insert(
                        at.min(input.len()),
                        alphabet[(next() as usize) % alphabet.len()],
                    );
                }
                2 => {
                    if at < input.len() {
                        input.remove(at);
                    }
                }
                _ => input.truncate(at),
            }
        }
        fuzz::one_input(&input);
    }
}

#[test]
fn fuzz_entry_runs_a_legacy_session_across_requests() {
    let case = [
        &b"POST\n\n{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-03-26\",\"capabilities\":{}}}"[..],
        b"POST\nMcp-Session-Id: $SID\n\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}",
        b"POST\nMcp-Session-Id: $SID\n\n[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"},{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"text\":\"hi\"}}}]",
        b"POST\nMcp-Session-Id: not-a-session\n\n{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}",
        b"DELETE\nMcp-Session-Id: $SID\n\n",
        b"POST\nMcp-Session-Id: $SID\n\n{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\"}",
    ]
    .join(fuzz::NEXT);
    assert_eq!(fuzz::one_input(&case), [200, 202, 200, 404, 200, 404]);
    // Without a separator a case is one request, as the older seeds are.
    assert_eq!(fuzz::one_input(b"GET\n\n").len(), 1);
}
