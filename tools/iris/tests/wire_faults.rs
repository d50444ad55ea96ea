//! The module over a bad wire: the real image in the rig, the virtual wire losing 5% and
//! corrupting 1% of the frames in each direction (`RigOptions::wire_faults`), captured to a pcap
//! file. A 4 MiB `fs.read` and `GET /screen.bmp` must arrive byte-identical and the server must
//! keep answering; the capture, read back with `pcap-file` and parsed with smoltcp's wire types,
//! must show the flows, the guest's retransmissions and the damaged frames it was handed.
//!
//! Needs `cargo xtask image` and `cargo xtask fixtures`; without them the test says so and
//! returns.

mod support;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use iris::image::find_repo_root;
use iris::net::WireFaults;
use iris::net::host::HOST_MAC;
use iris::{Rig, RigHandle};
use pcap_file::DataLink;
use pcap_file::pcap::PcapReader;
use serde_json::{Value, json};
use smoltcp::wire::{
    EthernetFrame, EthernetProtocol, IpAddress, IpProtocol, Ipv4Packet, TcpPacket,
};
use std::collections::HashMap;
use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::Instant;
use support::guest::{TOKEN, guest_options};
use support::http::{connect, read_response, request};
use support::image::{PrivateImage, ProductImage};
use support::mcp::{tool_request, tool_result};

/// The guest's Ethernet address (the rig's default `eaddr`).
const GUEST_MAC: [u8; 6] = [0x08, 0x00, 0x69, 0x0e, 0x07, 0x01];
const MCP_PORT: u16 = 7801;
const FAULTS: &str = "loss=5,corrupt=1,seed=7";
const BIG: &str = "/big/4mib.bin";

/// The fixture image and its staging tree, or `None` (said) when they have not been built.
fn fixtures() -> Option<(PathBuf, PathBuf)> {
    let dir = find_repo_root().join("target/fixtures");
    let (disk, staging) = (dir.join("rootfs.erofs"), dir.join("rootfs-staging"));
    if !disk.exists() || !staging.join(&BIG[1..]).exists() {
        println!(
            "skipped: no fixtures under {} (run `cargo xtask fixtures`)",
            dir.display()
        );
        return None;
    }
    Some((disk, staging))
}

/// A guest with the fixture disk, the wire given `faults` and captured to `pcap`, loading
/// `image` from `copy`: guests booted from one copy print the same boot lines, so their
/// screens match.
fn boot(
    image: &ProductImage,
    copy: &PrivateImage,
    disk: &Path,
    faults: Option<WireFaults>,
    pcap: Option<PathBuf>,
) -> Guest {
    let mut o = guest_options(copy.path(), image, &[], &[MCP_PORT, 80]);
    o.no_disk = false;
    o.disks = vec![(2, disk.to_path_buf())];
    o.wire_faults = faults;
    o.pcap = pcap;
    let rig = Rig::spawn(o).expect("the rig boots the image");
    let mcp = rig.forward_addrs()[0];
    Guest { rig, mcp }
}

/// A running guest and the host address of its MCP port.
struct Guest {
    rig: RigHandle,
    mcp: SocketAddr,
}

/// The screen as BMP, whole.
fn screen_bmp(g: &Guest) -> Vec<u8> {
    let r = request(
        g.mcp,
        &format!("GET /screen.bmp HTTP/1.1\r\nHost: indy\r\nAuthorization: Bearer {TOKEN}\r\n\r\n"),
    );
    assert_eq!(r.status, 200, "GET /screen.bmp: {}", r.text());
    assert!(r.body.starts_with(b"BM"), "not a BMP");
    r.body
}

/// A whole file through `fs.read` pages on one kept-alive connection.
fn read_file(g: &Guest, path: &str) -> Vec<u8> {
    let mut s: TcpStream = connect(g.mcp);
    let mut buf = Vec::new();
    let (mut out, mut offset, mut id) = (Vec::new(), 0u64, 0);
    loop {
        // Keeps the calls under the module's per-client request rate.
        g.rig.advance_clock(60);
        id += 1;
        let args =
            json!({"path": path, "encoding": "base64", "offset": offset, "max_output": 8 << 20});
        s.write_all(tool_request(id, "fs.read", args).as_bytes())
            .unwrap();
        let r = read_response(&mut s, &mut buf, false).expect("fs.read: connection closed");
        let r = tool_result("fs.read", r);
        assert_ne!(r["isError"], true, "fs.read {path}: {r}");
        let blob = r["content"][0]["resource"]["blob"]
            .as_str()
            .expect("a blob");
        out.extend(STANDARD.decode(blob).expect("valid base64"));
        match r["structuredContent"]["next_offset"].as_u64() {
            Some(n) => offset = n,
            None => return out,
        }
    }
}

fn echo(g: &Guest, text: &str) -> Value {
    let r = tool_result(
        "echo",
        request(g.mcp, &tool_request(1, "echo", json!({"text": text}))),
    );
    assert_ne!(r["isError"], true, "echo: {r}");
    r
}

/// One TCP segment of the capture, as far as it could be read.
#[derive(Debug)]
struct Segment {
    to_guest: bool,
    /// The host-side port (the forwarder's ephemeral port).
    host_port: u16,
    guest_port: u16,
    seq: u32,
    payload: Vec<u8>,
}

/// A captured frame: an intact TCP segment, something else intact, or damaged (a bad Ethernet
/// header, IPv4 header checksum or TCP checksum: what one flipped bit leaves behind).
#[derive(Debug)]
enum Frame {
    Tcp(Segment),
    Other,
    Damaged {
        to_guest: bool,
        seg: Option<Segment>,
    },
}

fn parse(data: &[u8]) -> Frame {
    let Ok(eth) = EthernetFrame::new_checked(data) else {
        return Frame::Damaged {
            to_guest: false,
            seg: None,
        };
    };
    let (dst, src) = (eth.dst_addr().0, eth.src_addr().0);
    let to_guest = src == HOST_MAC;
    let macs_ok = (dst == GUEST_MAC && src == HOST_MAC)
        || (dst == HOST_MAC && src == GUEST_MAC)
        || (dst == [0xff; 6] && (src == HOST_MAC || src == GUEST_MAC));
    let damaged = |seg| Frame::Damaged { to_guest, seg };
    match eth.ethertype() {
        EthernetProtocol::Arp if macs_ok => return Frame::Other,
        EthernetProtocol::Ipv4 => {}
        _ => return damaged(None),
    }
    let Ok(ip) = Ipv4Packet::new_checked(eth.payload()) else {
        return damaged(None);
    };
    if ip.next_header() != IpProtocol::Tcp {
        return if macs_ok && ip.verify_checksum() {
            Frame::Other
        } else {
            damaged(None)
        };
    }
    let Ok(tcp) = TcpPacket::new_checked(ip.payload()) else {
        return damaged(None);
    };
    let (host_port, guest_port) = if to_guest {
        (tcp.src_port(), tcp.dst_port())
    } else {
        (tcp.dst_port(), tcp.src_port())
    };
    let seg = Segment {
        to_guest,
        host_port,
        guest_port,
        seq: tcp.seq_number().0 as u32,
        payload: tcp.payload().to_vec(),
    };
    let (s, d) = (
        IpAddress::Ipv4(ip.src_addr()),
        IpAddress::Ipv4(ip.dst_addr()),
    );
    if macs_ok && ip.verify_checksum() && tcp.verify_checksum(&s, &d) {
        Frame::Tcp(seg)
    } else {
        damaged(Some(seg))
    }
}

fn read_pcap(path: &Path) -> Vec<Frame> {
    let mut r = PcapReader::new(std::fs::File::open(path).expect("the capture exists"))
        .expect("a pcap header");
    assert_eq!(r.header().datalink, DataLink::ETHERNET);
    let mut frames = Vec::new();
    while let Some(p) = r.next_packet() {
        frames.push(parse(&p.expect("a whole pcap record").data));
    }
    frames
}

#[test]
fn a_lossy_corrupting_wire_delivers_4_mib_and_the_screen_intact() {
    let Some((disk, staging)) = fixtures() else {
        return;
    };
    let Some(image) = ProductImage::find_or_skip() else {
        return;
    };
    let copy = image.private_copy();
    let t = Instant::now();
    // The reference screen, over a clean wire.
    let clean = boot(&image, &copy, &disk, None, None);
    let screen = screen_bmp(&clean);
    clean.rig.stop().expect("the clean guest stops");
    println!(
        "clean guest: {} B of BMP, {:.1?}",
        screen.len(),
        t.elapsed()
    );

    let pcap = find_repo_root().join("target/wire-faults/lossy.pcap");
    std::fs::create_dir_all(pcap.parent().unwrap()).unwrap();
    let faults = WireFaults::parse(FAULTS).unwrap();
    let g = boot(&image, &copy, &disk, Some(faults), Some(pcap.clone()));
    // The reference is the same screen fetched again over the same lossy wire: two boots'
    // consoles differ in the milliseconds of their boot-time audit lines (machine events),
    // so the clean guest's screen is compared by size and header only. Two transfers that
    // lose and corrupt different segments and still agree bit for bit arrived intact.
    let bmp = screen_bmp(&g);
    let again = screen_bmp(&g);
    let header = |b: &[u8]| b.get(..54).map(<[u8]>::to_vec);
    if bmp != again || bmp.len() != screen.len() || header(&bmp) != header(&screen) {
        // Kept for a look: a changed pixel is a change on screen, a changed bit damage.
        let (a, b) = (
            pcap.with_extension("clean.bmp"),
            pcap.with_extension("faulty.bmp"),
        );
        std::fs::write(&a, &screen).unwrap();
        std::fs::write(&b, &bmp).unwrap();
        std::fs::write(pcap.with_extension("faulty-again.bmp"), &again).unwrap();
        panic!(
            "the BMP over the faulty wire differs: {} (and faulty-again.bmp) against {}",
            b.display(),
            a.display()
        );
    }
    let file = read_file(&g, BIG);
    let want = std::fs::read(staging.join(&BIG[1..])).unwrap();
    assert_eq!(file.len(), want.len(), "{BIG}: length");
    assert!(file == want, "{BIG} over the faulty wire differs");
    let r = echo(&g, "still here");
    assert_eq!(r["structuredContent"]["text"], "still here", "{r}");
    let stats = g.rig.counters();
    // Stopping the rig ends the forwarder and so the capture.
    g.rig.stop().expect("the guest stops");
    println!(
        "faulty guest ({FAULTS}): {} polls, largest {} insns; {:.1?} in all",
        stats.polls,
        stats.max_poll_insns,
        t.elapsed()
    );

    let frames = read_pcap(&pcap);
    let segs: Vec<&Segment> = frames
        .iter()
        .filter_map(|f| match f {
            Frame::Tcp(s) => Some(s),
            _ => None,
        })
        .collect();
    let mcp = |to_guest: bool| {
        segs.iter()
            .filter(|s| s.guest_port == MCP_PORT && s.to_guest == to_guest)
            .count()
    };
    println!(
        "capture: {} frames, {} to port {MCP_PORT}, {} from it",
        frames.len(),
        mcp(true),
        mcp(false)
    );
    assert!(mcp(true) > 100 && mcp(false) > 1000, "the MCP flows");

    // The guest's retransmissions: a data segment it sent again (the capture holds what the guest
    // sent, before the wire lost any of it).
    let mut sent: HashMap<(u16, u32), u32> = HashMap::new();
    for s in segs.iter().filter(|s| !s.to_guest && !s.payload.is_empty()) {
        *sent.entry((s.host_port, s.seq)).or_default() += 1;
    }
    let resent = sent.values().filter(|n| **n > 1).count();
    println!("guest data segments sent more than once: {resent}");
    assert!(resent > 0, "no retransmission in the capture");

    // The damaged frames the guest was handed (the capture holds what reached the guest, after the
    // wire's damage), and what became of those that carried data: the guest dropped them, so the
    // host sent the same bytes again intact.
    let damaged: Vec<&Option<Segment>> = frames
        .iter()
        .filter_map(|f| match f {
            Frame::Damaged {
                to_guest: true,
                seg,
            } => Some(seg),
            _ => None,
        })
        .collect();
    println!("damaged frames handed to the guest: {}", damaged.len());
    assert!(!damaged.is_empty(), "no corrupted frame in the capture");
    for (i, d) in damaged.iter().enumerate() {
        let Some(d) = d.as_ref().filter(|d| !d.payload.is_empty()) else {
            continue;
        };
        // One flipped bit: either the sequence number and ports or the payload are intact.
        let again = segs.iter().any(|s| {
            s.to_guest
                && ((s.host_port == d.host_port && s.seq == d.seq)
                    || s.payload.windows(d.payload.len()).any(|w| w == d.payload))
        });
        assert!(
            again,
            "damaged data segment {i} was never sent again: {d:?}"
        );
    }
}

#[test]
fn a_reordering_duplicating_slow_wire_still_serves() {
    let Some((disk, staging)) = fixtures() else {
        return;
    };
    let Some(image) = ProductImage::find_or_skip() else {
        return;
    };
    let copy = image.private_copy();
    let faults = WireFaults::parse("reorder=5,dup=5,delay=2ms,seed=3").unwrap();
    let g = boot(&image, &copy, &disk, Some(faults), None);
    let path = "/big/over-1mib.bin";
    let file = read_file(&g, path);
    assert!(
        file == std::fs::read(staging.join(&path[1..])).unwrap(),
        "{path} over the reordering wire differs"
    );
    let r = echo(&g, "in order");
    assert_eq!(r["structuredContent"]["text"], "in order", "{r}");
    g.rig.stop().expect("the guest stops");
}
