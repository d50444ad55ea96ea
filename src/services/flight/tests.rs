use super::record::{self, Flight, FlightCall, FlightError, MAGIC, RECORD_LEN, encode, parse};
use super::recorder::{Figures, Recorder, WRITE_INTERVAL_MS};
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

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
        calls: vec![FlightCall {
            tool: "serial.read".into(),
            client: [10, 0, 2, 2],
            era: record::ERA_LEGACY,
            started_ms: 120_000,
        }],
        dropped: 0,
    }
}

fn bytes(f: &Flight) -> Vec<u8> {
    let mut b = [0u8; RECORD_LEN];
    encode(f, &mut b);
    b.to_vec()
}

#[test]
fn a_record_reads_back_as_written() {
    let f = sample();
    let mut region = bytes(&f);
    region.resize(4096, 0);
    assert_eq!(parse(&region), Ok(f));
}

#[test]
fn nothing_written_is_absent_and_another_layout_is_foreign() {
    assert_eq!(parse(&[]), Err(FlightError::Absent));
    assert_eq!(parse(&[0; 4096]), Err(FlightError::Absent));
    assert_eq!(parse(&[0xFF; 4096]), Err(FlightError::Foreign));
    let mut other = bytes(&sample());
    other[5] = 2; // version 2
    assert_eq!(parse(&other), Err(FlightError::Foreign));
    assert_eq!(parse(&MAGIC), Err(FlightError::Foreign));
}

#[test]
fn every_flipped_bit_is_caught() {
    let good = bytes(&sample());
    for i in 0..good.len() {
        for bit in 0..8 {
            let mut b = good.clone();
            b[i] ^= 1 << bit;
            let r = parse(&b);
            assert!(
                matches!(r, Err(FlightError::Corrupt | FlightError::Foreign)),
                "byte {i} bit {bit}: {r:?}"
            );
        }
    }
}

#[test]
fn a_torn_record_is_corrupt() {
    let good = bytes(&sample());
    // The kernel's copy cut short, and a write that stopped halfway over an older record.
    assert_eq!(parse(&good[..RECORD_LEN - 1]), Err(FlightError::Corrupt));
    let mut older = sample();
    older.seq = 3;
    older.calls.clear();
    let mut torn = bytes(&older);
    torn[..RECORD_LEN / 2].copy_from_slice(&good[..RECORD_LEN / 2]);
    assert_eq!(parse(&torn), Err(FlightError::Corrupt));
}

/// A record whose CRC holds but whose content does not: forged, or written by a broken
/// module. Resealed after each change so only the content checks can refuse it.
#[test]
fn sealed_nonsense_is_corrupt() {
    let reseal = |mut b: Vec<u8>| {
        let arr: &mut [u8; RECORD_LEN] = (&mut b[..RECORD_LEN]).try_into().unwrap();
        record::seal(arr);
        b
    };
    let good = bytes(&sample());
    let mut many = good.clone();
    many[48..50].copy_from_slice(&9u16.to_be_bytes());
    assert_eq!(parse(&reseal(many)), Err(FlightError::Corrupt));
    let mut not_utf8 = good.clone();
    not_utf8[52] = 0xC3; // a lead byte with no continuation, in the build id
    not_utf8[53] = b'(';
    assert_eq!(parse(&reseal(not_utf8)), Err(FlightError::Corrupt));
    let mut backwards = good.clone();
    backwards[40..44].copy_from_slice(&500u32.to_be_bytes());
    assert_eq!(parse(&reseal(backwards)), Err(FlightError::Corrupt));
    let mut era = good.clone();
    let era_at = RECORD_LEN - 8 * 36 + record::TOOL_LEN + 4;
    era[era_at] = 7;
    assert_eq!(parse(&reseal(era)), Err(FlightError::Corrupt));
    let mut len = good;
    len[6..8].copy_from_slice(&100u16.to_be_bytes());
    assert_eq!(parse(&reseal(len)), Err(FlightError::Corrupt));
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
fn the_recorder_tracks_calls_in_flight_and_counts_the_overflow() {
    let mut r = Recorder::new("b1");
    let mut tokens = Vec::new();
    for i in 0..record::MAX_CALLS + 2 {
        tokens.push(r.call_started("serial.read", [10, 0, 0, i as u8], false, 5));
    }
    assert_eq!(r.calls().len(), record::MAX_CALLS);
    assert_eq!(&tokens[record::MAX_CALLS..], &[0, 0]);
    r.call_ended(tokens[0]);
    r.call_ended(0);
    assert_eq!(r.calls().len(), record::MAX_CALLS - 1);
    let fig = Figures {
        uptime_ms: 10,
        heap_used: 5,
        heap_size: 6,
        connections: 1,
        requests: 2,
    };
    let f = parse(r.record(fig)).unwrap();
    assert_eq!(
        (f.calls.len(), f.dropped, f.seq),
        (record::MAX_CALLS - 1, 1, 0)
    );
    assert_eq!(f.calls[0].client, [10, 0, 0, 1]);
    assert_eq!(f.build, "b1");
    assert!(!r.due(10 + WRITE_INTERVAL_MS - 1));
    assert!(r.due(10 + WRITE_INTERVAL_MS));
    r.reset_requested("reboot");
    assert_eq!(parse(r.record(fig)).unwrap().reset_by, "reboot");
}

#[test]
fn a_panic_is_stamped_on_the_last_record_or_on_an_empty_one() {
    let mut rec = [0u8; RECORD_LEN];
    encode(&sample(), &mut rec);
    record::stamp_panic(&mut rec, "attempt to divide by zero at src/x.rs:1:2");
    let got = parse(&rec).unwrap();
    assert_eq!(got.panic, "attempt to divide by zero at src/x.rs:1:2");
    assert_eq!(got.calls, sample().calls);
    let mut blank = [0xA5u8; RECORD_LEN];
    record::stamp_panic(&mut blank, &"ü".repeat(200));
    let got = parse(&blank).unwrap();
    assert_eq!(got.panic, "ü".repeat(80));
    assert!(got.calls.is_empty());
}
