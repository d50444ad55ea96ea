use super::*;
use crate::json::{Tape, read_value};
use serde_json::{Value, json};

/// Every way of reading the record agrees with reading the text.
fn assert_recorded(w: &Written) {
    let v = w.value().expect("recorded");
    assert_eq!(v.raw(), w.text());
    assert_eq!(v.to_value(), read_value(w.text()));
    let mut tape = Tape::default();
    let read = tape.read(w.text()).unwrap();
    assert_same(v, read);
}

/// Two readings of the same text: the same entries, member by member.
fn assert_same(a: ValueRef<'_>, b: ValueRef<'_>) {
    assert_eq!(a.raw(), b.raw());
    assert_eq!(a.kind(), b.kind());
    assert_eq!(a.as_str(), b.as_str());
    for ((ka, va), (kb, vb)) in a.members().zip(b.members()) {
        assert_eq!(ka.decode(), kb.decode());
        assert_same(va, vb);
    }
    assert_eq!(a.members().count(), b.members().count());
    for (ia, ib) in a.items().zip(b.items()) {
        assert_same(ia, ib);
    }
    assert_eq!(a.items().count(), b.items().count());
}

/// A bit of everything, nested, in key order.
fn sample() -> Written {
    let mut w = ObjectWriter::new(0);
    w.key("a").begin_array();
    for n in [0, 7, u64::MAX] {
        w.u64(n);
    }
    w.i64(-12).bool(true).null().str("x\"\n\u{1}é\u{7f}");
    w.str("1.2").str("q\"");
    w.begin_object().key("in").str("").end_object();
    w.begin_array().end_array().end_array();
    w.key("b").begin_object().end_object();
    w.key("c").bool(false);
    w.key("d").begin_object();
    w.key("deep")
        .begin_object()
        .key("er")
        .begin_array()
        .u64(1)
        .end_array();
    w.end_object().end_object();
    w.finish()
}

fn sample_value() -> Value {
    json!({
        "a": [0, 7, u64::MAX, -12, true, null, "x\"\n\u{1}é\u{7f}", "1.2", "q\"", {"in": ""}, []],
        "b": {},
        "c": false,
        "d": {"deep": {"er": [1]}},
    })
}

#[test]
fn the_bytes_are_serde_jsons() {
    let w = sample();
    assert_eq!(w.text(), serde_json::to_string(&sample_value()).unwrap());
    assert_recorded(&w);
}

#[test]
fn strings_escape_as_serde_json_does() {
    let all: String = (0u32..0x300).filter_map(char::from_u32).collect();
    for s in [all.as_str(), "plain", "", "\u{10ffff}\"\\", "ab\u{0}"] {
        let mut w = ObjectWriter::new(0);
        w.key("s").str(s);
        let w = w.finish();
        let mut want = serde_json::Map::new();
        want.insert("s".into(), s.into());
        assert_eq!(w.text(), serde_json::to_string(&want).unwrap());
        assert_recorded(&w);
    }
}

#[test]
fn values_are_copied_with_their_entries() {
    let request = r#"{"a":"x\"y","n":-1.5e3,"o":{"e":"é\u00e9"},"t":true}"#;
    let mut tape = Tape::default();
    let args = tape.read(request).unwrap();
    let mut w = ObjectWriter::new(0);
    w.key("quote").value(args.get("n").unwrap());
    w.key("text").value(args.get("a").unwrap());
    let w = w.finish();
    assert_eq!(w.text(), r#"{"quote":-1.5e3,"text":"x\"y"}"#);
    assert_recorded(&w);
    let v = w.value().unwrap();
    assert_eq!(v.get("text").unwrap().as_str().unwrap(), "x\"y");
    assert_eq!(v.get("quote").unwrap().as_f64(), Some(-1500.0));

    // Copied among written values, past the inline record.
    let mut w = ObjectWriter::new(64);
    w.key("a").u64(1);
    w.key("o").value(args.get("o").unwrap());
    w.key("z").begin_array().value(args.get("t").unwrap());
    w.value(args).end_array();
    let w = w.finish();
    assert_recorded(&w);
    assert_eq!(
        w.value().unwrap().to_value().unwrap(),
        json!({"a": 1, "o": {"e": "éé"}, "z": [true, read_value(request).unwrap()]})
    );
}

#[test]
fn a_value_without_entries_leaves_the_object_unrecorded() {
    let mut w = ObjectWriter::new(0);
    w.key("a").value(ValueRef::empty_object());
    assert!(w.finish().value().is_some());
    let mut tape = Tape::default();
    let args = tape.read(r#"{"a":[1,2,3,4,5,6,7,8]}"#).unwrap();
    let mut w = ObjectWriter::new(0);
    w.key("a").value(args.get("a").unwrap());
    assert_recorded(&w.finish());
}

#[test]
fn an_object_nested_past_the_record_is_written_whole_but_not_recorded() {
    let mut w = ObjectWriter::new(0);
    for _ in 1..DEPTH {
        w.key("a").begin_object();
    }
    for _ in 1..DEPTH {
        w.end_object();
    }
    assert_recorded(&w.finish());
    let mut w = ObjectWriter::new(0);
    for _ in 0..DEPTH {
        w.key("a").begin_object();
    }
    w.key("n").u64(1);
    for _ in 0..DEPTH {
        w.end_object();
    }
    let w = w.finish();
    assert!(w.value().is_none());
    let mut want = json!({"n": 1});
    for _ in 0..DEPTH {
        want = json!({ "a": want });
    }
    assert_eq!(read_value(w.text()), Some(want));
}

#[test]
fn one_allocation_when_the_room_was_given() {
    let mut tape = Tape::default();
    let args = tape.read(r#"{"text":"hello"}"#).unwrap();
    let mut w = ObjectWriter::new(15);
    w.key("text").value(args.get("text").unwrap());
    let room = w.w.text.capacity();
    let w = w.finish();
    assert_eq!(w.text(), r#"{"text":"hello"}"#);
    assert_eq!(w.text.capacity(), room);
    assert!(matches!(w.record, Record::Inline { .. }));
    // A record past the inline room moves to the heap.
    assert!(matches!(sample().record, Record::Spilled(_)));
}

#[test]
fn the_weight_counts_values_and_text() {
    let mut w = ObjectWriter::new(0);
    w.key("a").begin_array().u64(1).u64(2).end_array();
    w.key("b").str(&"y".repeat(640));
    assert_eq!(w.finish().weight(), 5 + 10);
}

#[test]
#[should_panic(expected = "keys out of serde_json's order")]
fn keys_out_of_order_are_caught() {
    let mut w = ObjectWriter::new(0);
    w.key("b").u64(1).key("a").u64(2);
}

#[test]
fn each_object_has_its_own_order() {
    let mut w = ObjectWriter::new(0);
    w.key("b").begin_object().key("z").u64(1).end_object();
    w.key("c")
        .begin_array()
        .begin_object()
        .key("y")
        .null()
        .end_object();
    w.begin_object().key("a").null().end_object().end_array();
    assert_recorded(&w.finish());
}

#[test]
fn ascii_bytes_are_written_as_their_text_would_be() {
    for (bytes, want) in [
        (
            &b"2026-12-06 10:00:00 UTC"[..],
            r#"{"s":"2026-12-06 10:00:00 UTC"}"#,
        ),
        (b"", r#"{"s":""}"#),
        (b"q\"t\\", r#"{"s":"q\"t\\"}"#),
        (b"caf\xc3\xa9", "{\"s\":\"caf\u{e9}\"}"),
        (b"bad \xff", "{\"s\":\"bad \u{fffd}\"}"),
    ] {
        let mut w = ObjectWriter::new(0);
        w.key("s").ascii(bytes);
        assert_eq!(w.finish().text(), want, "{bytes:?}");
    }
}

/// Members written once and copied in are the bytes and the weight of the same members
/// written in place, first, between others or last; an empty run adds nothing.
#[test]
fn members_copied_in_are_the_members_written_in_place() {
    let run = |w: &mut ObjectWriter| {
        w.key("b").begin_object().key("c").str("d\"").end_object();
        w.key("e").u64(5);
    };
    let mut once = ObjectWriter::new(0);
    run(&mut once);
    let members = once.finish().into_members();
    let mut in_place = ObjectWriter::new(0);
    let mut copied = ObjectWriter::new(0);
    for w in [&mut in_place, &mut copied] {
        w.key("a").bool(true);
    }
    run(&mut in_place);
    copied.members(&members).members(&Members::default());
    for w in [&mut in_place, &mut copied] {
        w.key("f").null();
    }
    let (in_place, copied) = (in_place.finish(), copied.finish());
    assert_eq!(copied.text(), in_place.text());
    assert_eq!(
        copied.text(),
        r#"{"a":true,"b":{"c":"d\""},"e":5,"f":null}"#
    );
    assert_eq!(copied.weight(), in_place.weight());
    assert!(
        copied.value().is_none(),
        "a copied run is read from the text"
    );

    let mut first = ObjectWriter::new(0);
    first.members(&members);
    assert_eq!(first.finish().text(), r#"{"b":{"c":"d\""},"e":5}"#);
}
