use super::record::{
    self, Flight, FlightCall, FlightError, HEADER_LEN, MAGIC, MAX_CALLS, RECORD_LEN, SLOT_LEN,
    encode, parse, slot_at,
};
use super::recorder::{Figures, Recorder, SlotWrite, WRITE_INTERVAL_MS};
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

fn call(seq: u32, tool: &'static str, client: [u8; 4]) -> FlightCall {
    FlightCall {
        seq,
        tool: tool.into(),
        client,
        era: record::ERA_LEGACY,
        started_ms: 120_000 + seq,
    }
}

fn sample() -> Flight {
    Flight {
        seq: 7,
        uptime_ms: 123_456,
        heap_used: 40_000,
        heap_size: 1 << 20,
        connections: 2,
        requests: 99,
        secret: Some((100, 132)),
        build: String::from("3f2a9c1e07b4"),
        reset_by: String::from("system.reset"),
        panic: String::new(),
        calls: vec![
            call(3, "serial.read", [10, 0, 2, 2]),
            call(5, "fs.stat", [10, 0, 2, 3]),
        ],
        dropped: 0,
        torn: 0,
    }
}

fn bytes(f: &Flight) -> Vec<u8> {
    let mut b = [0u8; RECORD_LEN];
    encode(f, &mut b);
    b.to_vec()
}

const FIGURES: Figures = Figures {
    uptime_ms: 10,
    heap_used: 5,
    heap_size: 6,
    connections: 1,
    requests: 2,
};

/// The region as the board leaves it: the recorder's first record, then each write.
struct Region(Vec<u8>);

impl Region {
    fn first(r: &mut Recorder) -> Region {
        Region(r.first(FIGURES).to_vec())
    }

    fn slot(&mut self, w: Option<SlotWrite>) {
        let w = w.expect("a slot to write");
        self.0[w.at..w.at + SLOT_LEN].copy_from_slice(&w.bytes);
    }

    fn header(&mut self, r: &mut Recorder, f: Figures) {
        self.0[..HEADER_LEN].copy_from_slice(r.header(f));
    }
}

#[test]
fn a_record_reads_back_as_written() {
    let f = sample();
    let mut region = bytes(&f);
    region.resize(4096, 0);
    assert_eq!(parse(&region), Ok(f));
}

#[test]
fn calls_read_back_in_the_order_they_started() {
    let mut f = sample();
    f.calls.reverse();
    let got = parse(&bytes(&f)).unwrap();
    assert_eq!(got.calls, sample().calls);
}

#[test]
fn nothing_written_is_absent_and_another_layout_is_foreign() {
    assert_eq!(parse(&[]), Err(FlightError::Absent));
    assert_eq!(parse(&[0; 4096]), Err(FlightError::Absent));
    assert_eq!(parse(&[0xFF; 4096]), Err(FlightError::Foreign));
    let mut other = bytes(&sample());
    other[5] = 1; // version 1: the record before slots
    assert_eq!(parse(&other), Err(FlightError::Foreign));
    assert_eq!(parse(&MAGIC), Err(FlightError::Foreign));
}

/// A bit flipped in the header makes the record untrusted; in a slot, only that slot.
#[test]
fn every_flipped_bit_is_caught() {
    let good = bytes(&sample());
    for i in 0..RECORD_LEN {
        for bit in 0..8 {
            let mut b = good.clone();
            b[i] ^= 1 << bit;
            let r = parse(&b);
            if i < HEADER_LEN {
                assert!(
                    matches!(r, Err(FlightError::Corrupt | FlightError::Foreign)),
                    "header byte {i} bit {bit}: {r:?}"
                );
                continue;
            }
            let f = r.unwrap_or_else(|e| panic!("slot byte {i} bit {bit}: {e:?}"));
            let slot = (i - HEADER_LEN) / SLOT_LEN;
            let mut kept = sample().calls;
            if slot < kept.len() {
                kept.remove(slot);
            }
            assert_eq!((f.torn, &f.calls), (1, &kept), "slot byte {i} bit {bit}");
        }
    }
}

#[test]
fn a_torn_slot_is_reported_and_the_rest_served() {
    let good = bytes(&sample());
    // A slot write that stopped halfway: a new call over the first's slot.
    let mut new = [0u8; SLOT_LEN];
    record::encode_slot(&call(9, "proc.list", [10, 0, 2, 9]), &mut new);
    let mut torn = good.clone();
    torn[slot_at(0)..slot_at(0) + SLOT_LEN / 2].copy_from_slice(&new[..SLOT_LEN / 2]);
    let f = parse(&torn).unwrap();
    assert_eq!((f.torn, f.calls.len()), (1, 1));
    assert_eq!(f.calls[0].tool, "fs.stat");
    assert_eq!(f.build, "3f2a9c1e07b4");
    // A slot cleared halfway.
    let mut cleared = good;
    cleared[slot_at(1)..slot_at(1) + SLOT_LEN / 2].fill(0);
    let f = parse(&cleared).unwrap();
    assert_eq!((f.torn, f.calls.len()), (1, 1));
    assert_eq!(f.calls[0].tool, "serial.read");
}

#[test]
fn a_torn_header_or_record_is_corrupt() {
    let good = bytes(&sample());
    // The kernel's copy cut short, and a header write that stopped halfway over an older one.
    assert_eq!(parse(&good[..RECORD_LEN - 1]), Err(FlightError::Corrupt));
    let mut older = sample();
    older.seq = 3;
    older.uptime_ms = 1_000;
    older.panic = "x".repeat(100);
    let mut torn = bytes(&older);
    torn[..HEADER_LEN / 2].copy_from_slice(&good[..HEADER_LEN / 2]);
    assert_eq!(parse(&torn), Err(FlightError::Corrupt));
}

/// A record whose CRCs hold but whose content does not: forged, or written by a broken
/// module. Resealed after each change so only the content checks can refuse it.
#[test]
fn sealed_nonsense_is_refused() {
    let reseal = |mut b: Vec<u8>| {
        let h: &mut [u8; HEADER_LEN] = (&mut b[..HEADER_LEN]).try_into().unwrap();
        record::seal_header(h);
        b
    };
    let good = bytes(&sample());
    let mut slots = good.clone();
    slots[48..50].copy_from_slice(&9u16.to_be_bytes());
    assert_eq!(parse(&reseal(slots)), Err(FlightError::Corrupt));
    let mut not_utf8 = good.clone();
    not_utf8[52] = 0xC3; // a lead byte with no continuation, in the build id
    not_utf8[53] = b'(';
    assert_eq!(parse(&reseal(not_utf8)), Err(FlightError::Corrupt));
    let mut backwards = good.clone();
    backwards[40..44].copy_from_slice(&500u32.to_be_bytes());
    assert_eq!(parse(&reseal(backwards)), Err(FlightError::Corrupt));
    let mut len = good.clone();
    len[6..8].copy_from_slice(&100u16.to_be_bytes());
    assert_eq!(parse(&reseal(len)), Err(FlightError::Corrupt));
    // A slot sealed over an unknown era or a tool name that is not UTF-8: torn, not read.
    let mut era = [0u8; SLOT_LEN];
    record::encode_slot(&call(1, "echo", [1, 2, 3, 4]), &mut era);
    let mut tool = era;
    era[16] = 7;
    tool[20] = 0xC3;
    tool[21] = b'(';
    for mut slot in [era, tool] {
        let crc = crc::Crc::<u32>::new(&crc::CRC_32_ISO_HDLC).checksum(&slot[4..]);
        slot[..4].copy_from_slice(&crc.to_be_bytes());
        let mut b = good.clone();
        b[slot_at(2)..slot_at(3)].copy_from_slice(&slot);
        let f = parse(&b).unwrap();
        assert_eq!((f.torn, f.calls), (1, sample().calls));
    }
}

#[test]
fn long_texts_are_cut_at_a_character() {
    let mut f = sample();
    f.build = "é".repeat(20); // 40 bytes: cut to 24, a whole number of characters
    f.calls[0].tool = "a-very-long-tool-name-indeed.x".into();
    let got = parse(&bytes(&f)).unwrap();
    assert_eq!(got.build, "é".repeat(12));
    assert_eq!(got.calls[0].tool, "a-very-long-tool-name-in");
}

#[test]
fn the_recorder_writes_each_call_in_its_slot_and_counts_the_overflow() {
    let mut r = Recorder::new("b1");
    let mut region = Region::first(&mut r);
    let mut tokens = Vec::new();
    for i in 0..MAX_CALLS {
        let (token, w) = r.call_started("serial.read", [10, 0, 0, i as u8], false, 5);
        region.slot(w);
        tokens.push(token);
    }
    // Two more: no slot, counted in the header.
    for _ in 0..2 {
        assert_eq!(r.call_started("echo", [1, 1, 1, 1], true, 6), (0, None));
    }
    let f = parse(&region.0).unwrap();
    assert_eq!((f.calls.len(), f.dropped, f.torn), (MAX_CALLS, 0, 0));
    region.header(&mut r, FIGURES);
    assert_eq!(parse(&region.0).unwrap().dropped, 2);
    // An end clears its slot at once; a dropped call's end is counted off.
    region.slot(r.call_ended(tokens[0]));
    assert_eq!(r.call_ended(0), None);
    assert_eq!(r.calls().count(), MAX_CALLS - 1);
    let f = parse(&region.0).unwrap();
    assert_eq!(f.calls.len(), MAX_CALLS - 1);
    assert_eq!(f.calls[0].client, [10, 0, 0, 1]);
    assert_eq!(f.calls[0].era, record::ERA_MODERN);
    // The freed slot is taken by the next call, listed last (it started last).
    let (token, w) = r.call_started("fs.stat", [10, 0, 0, 99], true, 7);
    assert_eq!(w.map(|w| w.at), Some(slot_at(0)));
    region.slot(w);
    let f = parse(&region.0).unwrap();
    assert_eq!(
        f.calls.last().map(|c| (c.seq, &*c.tool)),
        Some((token, "fs.stat"))
    );
    assert_eq!(f.build, "b1");
    assert!(!r.due(10 + WRITE_INTERVAL_MS - 1));
    assert!(r.due(10 + WRITE_INTERVAL_MS));
    r.reset_requested("reboot");
    region.header(&mut r, FIGURES);
    let f = parse(&region.0).unwrap();
    assert_eq!((&*f.reset_by, f.dropped, f.seq), ("reboot", 1, 2));
}

/// A new boot's region may still hold what an earlier boot wrote there: its first record
/// names none of those calls, while the previous boot's copy still names them.
#[test]
fn calls_in_flight_before_a_restart_are_the_previous_boots_only() {
    let mut old = Recorder::new("old");
    let mut previous = Region::first(&mut old);
    let (_, w) = old.call_started("serial.read", [10, 0, 2, 2], false, 50);
    previous.slot(w);
    let kept = previous.0.clone();
    let mut r = Recorder::new("new");
    previous.0.copy_from_slice(&r.first(FIGURES));
    let now = parse(&previous.0).unwrap();
    assert_eq!((&*now.build, now.calls.len(), now.torn), ("new", 0, 0));
    let before = parse(&kept).unwrap();
    assert_eq!(before.build, "old");
    assert_eq!(before.calls.len(), 1);
    assert_eq!(
        (&*before.calls[0].tool, before.calls[0].started_ms),
        ("serial.read", 50)
    );
}

#[test]
fn a_panic_is_stamped_on_the_last_header_or_on_an_empty_one() {
    let mut rec = bytes(&sample());
    let header: &mut [u8; HEADER_LEN] = (&mut rec[..HEADER_LEN]).try_into().unwrap();
    record::stamp_panic(header, "attempt to divide by zero at src/x.rs:1:2");
    let got = parse(&rec).unwrap();
    assert_eq!(got.panic, "attempt to divide by zero at src/x.rs:1:2");
    assert_eq!(got.calls, sample().calls);
    let mut blank = [0xA5u8; RECORD_LEN];
    let header: &mut [u8; HEADER_LEN] = (&mut blank[..HEADER_LEN]).try_into().unwrap();
    record::stamp_panic(header, &"ü".repeat(200));
    let got = parse(&blank).unwrap();
    assert_eq!(got.panic, "ü".repeat(80));
    assert!(got.calls.is_empty());
    assert_eq!(got.torn, MAX_CALLS as u16);
}

#[test]
fn the_bytes_are_where_docs_abi_md_puts_them() {
    let b = bytes(&sample());
    let be32 = |at: usize| u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
    let be16 = |at: usize| u16::from_be_bytes([b[at], b[at + 1]]);
    assert_eq!(&b[..4], b"I7FR");
    assert_eq!((be16(4), be16(6)), (2, 612), "version, len");
    assert_eq!(be32(12), 7, "seq");
    assert_eq!(&b[16..24], &123_456u64.to_be_bytes(), "uptime_ms");
    assert_eq!((be32(24), be32(28)), (40_000, 1 << 20), "heap");
    assert_eq!((be32(32), be32(36)), (2, 99), "connections, requests");
    assert_eq!((be32(40), be32(44)), (100, 132), "secret");
    assert_eq!((be16(48), be16(50)), (8, 0), "slots, dropped");
    assert_eq!(&b[52..64], b"3f2a9c1e07b4", "build");
    assert_eq!(&b[76..88], b"system.reset", "reset_by");
    assert!(b[100..260].iter().all(|&x| x == 0), "no panic");
    // The first slot: seq, started_ms, client, era, padding, tool.
    let s = 260;
    assert_eq!((be32(s + 4), be32(s + 8)), (3, 120_003));
    assert_eq!(&b[s + 12..s + 20], &[10, 0, 2, 2, 1, 0, 0, 0]);
    assert_eq!(&b[s + 20..s + 31], b"serial.read");
}
