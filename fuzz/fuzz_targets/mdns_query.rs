//! Arbitrary bytes as a datagram to the mDNS responder: read as a query for a fixed service,
//! then answered in each of the three ways (multicast, QU unicast, legacy unicast). Nothing may
//! panic; an answer fits its buffer and starts with the response header the query asked for.

#![no_main]

use irix7_mcp::net::mdns::message::{Reply, Service, read_query, write_answer};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    irix7_fuzz::budget::case(|| {
        let service = Service {
            name: "indy-0a1b2c".into(),
            port: 7801,
            ipv4: [172, 31, 77, 2],
            txt: vec!["path=/mcp".into(), "auth=bearer".into()],
        };
        let Some(q) = read_query(data, &service) else {
            return;
        };
        assert!(q.wanted.any() && q.questions_end <= data.len());
        let mut out = [0u8; 1024];
        for reply in [Reply::Multicast, Reply::Unicast, Reply::Legacy] {
            if let Some(n) = write_answer(&service, Some((&q, data)), reply, &mut out) {
                assert!(n >= 12 && out[2] == 0x84, "a response header");
                let id = u16::from_be_bytes([out[0], out[1]]);
                assert_eq!(id, if reply == Reply::Legacy { q.id } else { 0 });
            }
        }
    });
});
