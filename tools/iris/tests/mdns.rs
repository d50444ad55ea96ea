//! The real module image announces itself with mDNS/DNS-SD on the rig's wire and answers
//! DNS-SD queries: the announcement names the service, its port, TXT and address; a browse for
//! `_mcp._tcp.local` gets the instance with SRV, TXT and A; a legacy resolver's query gets its
//! id back by unicast; queries from outside the subnet are ignored. The test speaks raw frames
//! on the wire (no forwarder), answering the guest's ARP itself.

mod support;

use std::net::Ipv4Addr;
use std::time::Duration;

use iris::net::{HostNet, WireEnd};
use iris::{Rig, RunEnd};
use support::guest::guest_options;
use support::image::ProductImage;

const NAME: &str = "bench-indy";
const GROUP_MAC: [u8; 6] = [0x01, 0x00, 0x5e, 0x00, 0x00, 0xfb];
const GROUP: Ipv4Addr = Ipv4Addr::new(224, 0, 0, 251);

/// A UDP datagram from the guest, as the wire carried it.
#[derive(Debug)]
struct Datagram {
    dst_mac: [u8; 6],
    dst: Ipv4Addr,
    dst_port: u16,
    payload: Vec<u8>,
}

/// An Ethernet + IPv4 + UDP frame (UDP checksum 0: none, as IPv4 allows).
fn udp_frame(
    dst_mac: [u8; 6],
    src_mac: [u8; 6],
    (src, sport): (Ipv4Addr, u16),
    (dst, dport): (Ipv4Addr, u16),
    payload: &[u8],
) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&dst_mac);
    f.extend_from_slice(&src_mac);
    f.extend_from_slice(&[0x08, 0x00]);
    let total = (20 + 8 + payload.len()) as u16;
    let mut ip = vec![0x45, 0, 0, 0, 0, 0, 0x40, 0, 255, 17, 0, 0];
    ip[2..4].copy_from_slice(&total.to_be_bytes());
    ip.extend_from_slice(&src.octets());
    ip.extend_from_slice(&dst.octets());
    let mut sum = 0u32;
    for w in ip.chunks(2) {
        sum += u32::from(u16::from_be_bytes([w[0], w[1]]));
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    ip[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
    f.extend_from_slice(&ip);
    f.extend_from_slice(&sport.to_be_bytes());
    f.extend_from_slice(&dport.to_be_bytes());
    f.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    f.extend_from_slice(payload);
    f
}

/// A one-question DNS query.
fn query(id: u16, name: &str, qtype: u16) -> Vec<u8> {
    let mut m = vec![0u8; 12];
    m[0..2].copy_from_slice(&id.to_be_bytes());
    m[5] = 1;
    for l in name.split('.') {
        m.push(l.len() as u8);
        m.extend_from_slice(l.as_bytes());
    }
    m.push(0);
    m.extend_from_slice(&qtype.to_be_bytes());
    m.extend_from_slice(&1u16.to_be_bytes());
    m
}

/// A name at `pos` (no compression: the module writes none), dotted, and where it ends.
fn name_at(m: &[u8], mut pos: usize) -> (String, usize) {
    let mut labels = Vec::new();
    while m[pos] != 0 {
        let n = usize::from(m[pos]);
        labels.push(String::from_utf8(m[pos + 1..pos + 1 + n].to_vec()).unwrap());
        pos += 1 + n;
    }
    (labels.join("."), pos + 1)
}

/// A record: name, type, data.
type Record = (String, u16, Vec<u8>);

/// A DNS response: id, question count, and its records.
fn records(m: &[u8]) -> (u16, u16, Vec<Record>) {
    let c = |i: usize| u16::from_be_bytes([m[i], m[i + 1]]);
    assert_eq!(c(2) & 0x8000, 0x8000, "a response");
    let mut pos = 12;
    for _ in 0..c(4) {
        pos = name_at(m, pos).1 + 4;
    }
    let mut out = Vec::new();
    for _ in 0..c(6) + c(8) + c(10) {
        let (name, next) = name_at(m, pos);
        let len = usize::from(c(next + 8));
        out.push((name, c(next), m[next + 10..next + 10 + len].to_vec()));
        pos = next + 10 + len;
    }
    (c(0), c(4), out)
}

/// The guest's UDP datagrams from port 5353 waiting on the wire; ARP requests for the host's
/// address are answered, other frames dropped.
fn drain_mdns(wire: &WireEnd, net: HostNet) -> Vec<Datagram> {
    let mut out = Vec::new();
    while let Some(f) = wire.recv() {
        if f.len() >= 42 && f[12..14] == [0x08, 0x06] && f[38..42] == net.host_ip.octets() {
            let mut a = Vec::new();
            a.extend_from_slice(&f[6..12]);
            a.extend_from_slice(&net.host_mac);
            a.extend_from_slice(&[0x08, 0x06, 0, 1, 0x08, 0, 6, 4, 0, 2]);
            a.extend_from_slice(&net.host_mac);
            a.extend_from_slice(&net.host_ip.octets());
            a.extend_from_slice(&f[22..32]);
            a.resize(60, 0);
            wire.send(a);
            continue;
        }
        if f.len() < 42 || f[12..14] != [0x08, 0x00] || f[23] != 17 {
            continue;
        }
        let ihl = usize::from(f[14] & 0x0f) * 4;
        let udp = 14 + ihl;
        if u16::from_be_bytes([f[udp], f[udp + 1]]) != 5353 {
            continue;
        }
        out.push(Datagram {
            dst_mac: f[0..6].try_into().unwrap(),
            dst: Ipv4Addr::new(f[30], f[31], f[32], f[33]),
            dst_port: u16::from_be_bytes([f[udp + 2], f[udp + 3]]),
            payload: f[udp + 8..].to_vec(),
        });
    }
    out
}

fn host_end(r: &Rig) -> WireEnd {
    r.net()
        .host_end()
        .expect("no forwarder: the test owns the wire")
        .clone()
}

/// Runs the rig until the guest sends a UDP datagram from port 5353 that `want` accepts.
fn next_mdns(
    rig: &mut Rig,
    net: HostNet,
    limit: Duration,
    want: impl Fn(&Datagram) -> bool,
) -> Option<Datagram> {
    let mut got = None;
    let end = rig
        .run_until(limit, |r| {
            got = drain_mdns(&host_end(r), net).into_iter().find(|d| want(d));
            got.is_some()
        })
        .unwrap();
    (end == RunEnd::Predicate).then(|| got.unwrap())
}

#[test]
fn the_module_announces_and_answers_dns_sd() {
    let Some(image) = ProductImage::find_or_skip() else {
        return;
    };
    let name_env = format!("mcp.name={NAME}");
    let mut rig = Rig::new(guest_options(&image.path, &image, &[&name_env], &[])).unwrap();
    rig.boot().unwrap();
    let net = rig.net().host_net();
    let instance = format!("{NAME}._mcp._tcp.local");

    // The announcement, unasked, to the group.
    let a = next_mdns(&mut rig, net, Duration::from_secs(20), |_| true).expect("an announcement");
    assert_eq!((a.dst_mac, a.dst, a.dst_port), (GROUP_MAC, GROUP, 5353));
    let (_, _, recs) = records(&a.payload);
    let find = |recs: &[Record], t: u16| {
        recs.iter()
            .find(|r| r.1 == t)
            .cloned()
            .unwrap_or_else(|| panic!("no type {t} in {recs:?}"))
    };
    let ptr = find(&recs, 12);
    assert_eq!(
        (ptr.0.as_str(), name_at(&ptr.2, 0).0),
        ("_mcp._tcp.local", instance.clone())
    );
    let srv = find(&recs, 33);
    assert_eq!(srv.0, instance);
    assert_eq!(
        u16::from_be_bytes([srv.2[4], srv.2[5]]),
        7801,
        "the MCP port"
    );
    assert_eq!(name_at(&srv.2, 6).0, format!("{NAME}.local"));
    let txt = String::from_utf8_lossy(&find(&recs, 16).2).into_owned();
    for key in [
        "path=/mcp",
        "eras=2026-07-28,2025-11-25",
        "auth=bearer",
        "build=",
        "version=",
    ] {
        assert!(txt.contains(key), "TXT {txt:?} lacks {key}");
    }
    assert_eq!(
        find(&recs, 1).2,
        net.guest_ip.octets(),
        "A: the guest's address"
    );
    assert!(
        rig.console_text()
            .contains(&format!("mdns: {instance} on {NAME}.local"))
    );

    // A browse from the host, to the group: the answer goes to the group, with the additional
    // records that resolve the instance.
    let browse = query(0, "_mcp._tcp.local", 12);
    let src = (net.host_ip, 5353);
    let wire = host_end;
    wire(&rig).send(udp_frame(
        GROUP_MAC,
        net.host_mac,
        src,
        (GROUP, 5353),
        &browse,
    ));
    let b = next_mdns(&mut rig, net, Duration::from_secs(10), |d| {
        records(&d.payload).2.len() == 4 && records(&d.payload).2[0].1 == 12
    })
    .expect("an answer to the browse");
    assert_eq!(b.dst, GROUP);
    let kinds: Vec<u16> = records(&b.payload).2.iter().map(|r| r.1).collect();
    assert_eq!(kinds, [12, 33, 16, 1]);

    // A legacy resolver (not port 5353): unicast back to it, with its id and question.
    let legacy = query(0x4242, &format!("{NAME}.local"), 1);
    wire(&rig).send(udp_frame(
        GROUP_MAC,
        net.host_mac,
        (net.host_ip, 40000),
        (GROUP, 5353),
        &legacy,
    ));
    let l = next_mdns(&mut rig, net, Duration::from_secs(10), |d| {
        d.dst_port == 40000
    })
    .expect("a unicast answer to the legacy query");
    assert_eq!((l.dst, l.dst_mac), (net.host_ip, net.host_mac));
    let (id, questions, recs) = records(&l.payload);
    assert_eq!((id, questions, recs.len()), (0x4242, 1, 1));
    assert_eq!(recs[0].2, net.guest_ip.octets());

    // From outside the subnet: ignored. The question (the host's A record, from port 5353)
    // would otherwise be answered to the group, which needs no route back.
    let stranger = (Ipv4Addr::new(10, 99, 0, 1), 5353);
    let ask_a = query(0, &format!("{NAME}.local"), 1);
    wire(&rig).send(udp_frame(
        GROUP_MAC,
        net.host_mac,
        stranger,
        (GROUP, 5353),
        &ask_a,
    ));
    let only_a = |d: &Datagram| records(&d.payload).2.iter().all(|r| r.1 == 1);
    assert!(
        next_mdns(&mut rig, net, Duration::from_secs(3), only_a).is_none(),
        "a query from another network was answered"
    );
    // The same from the host's own address is answered (so the silence above was the check).
    wire(&rig).send(udp_frame(
        GROUP_MAC,
        net.host_mac,
        src,
        (GROUP, 5353),
        &ask_a,
    ));
    let a = next_mdns(&mut rig, net, Duration::from_secs(10), only_a).expect("an A answer");
    assert_eq!(a.dst, GROUP);

    // A flood from the subnet that alternates two questions (so the one-second gap for the
    // same answer never applies): at most 10 answers a second of any kind go out.
    let ask_txt = query(0, &instance, 16);
    let start = std::time::Instant::now();
    let mut answers = Vec::new();
    for i in 0..60 {
        let q = if i % 2 == 0 { &ask_a } else { &ask_txt };
        wire(&rig).send(udp_frame(GROUP_MAC, net.host_mac, src, (GROUP, 5353), q));
        rig.run_until(Duration::from_millis(40), |r| {
            answers.extend(drain_mdns(&host_end(r), net));
            false
        })
        .unwrap();
    }
    // Whole seconds the flood spanned, plus the one it started in.
    let seconds = start.elapsed().as_secs() + 1;
    eprintln!(
        "flood: {} answers to 60 queries in under {seconds} s",
        answers.len()
    );
    assert!(
        !answers.is_empty() && answers.len() as u64 <= 10 * (seconds + 1),
        "{} answers to 60 queries in {seconds} s (the rig's clock follows the host's)",
        answers.len()
    );
    // Once the second's budget has passed (queries that met a spent budget are dropped, not
    // kept), the responder answers again.
    rig.run_until(Duration::from_millis(1100), |r| {
        drain_mdns(&host_end(r), net);
        false
    })
    .unwrap();
    wire(&rig).send(udp_frame(
        GROUP_MAC,
        net.host_mac,
        (net.host_ip, 40002),
        (GROUP, 5353),
        &legacy,
    ));
    next_mdns(&mut rig, net, Duration::from_secs(10), |d| {
        d.dst_port == 40002
    })
    .expect("an answer after the flood");
    rig.stop().unwrap();
}
