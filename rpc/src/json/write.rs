//! Writing JSON: a `serde_json::Value` straight onto a byte buffer ([`write_value`]), and an
//! object a tool writes as text, member by member, with a record of where each value lies in
//! it ([`ObjectWriter`]).
//!
//! Why the object writer: a small structured result built as a `serde_json::Value` takes an
//! allocation for its map, each key and each string, and the server then serialises it;
//! written as text it is one buffer. The record is a tape (as [`super::Tape`] is for a
//! request), so the server checks the result against the tool's output schema without reading
//! it again: for a large echo that second reading cost a fifth of each response byte
//! (`docs/bench.md`).

use super::escape::{escape_str, escape_str_twice, plain_run};
use super::tape::{EMPTY_NODE, Kind, Node};
use super::value_ref::ValueRef;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::{self, Write as _};
use serde_json::Value;

/// Serialises a value straight onto `out`, in the bytes serde_json writes: strings go through
/// the word-at-a-time escaper, which serde_json's byte-at-a-time one is not. Recursion follows the value's nesting, as
/// serde_json's does; parsed values are limited to [`super::MAX_NESTING`].
pub(crate) fn write_value(out: &mut Vec<u8>, v: &Value) {
    write_json(out, v, false);
}

/// [`write_value`]'s bytes escaped as the content of a JSON string, written in one pass: a
/// tool's structured result also goes out as the text of a text block.
pub(crate) fn write_value_escaped(out: &mut Vec<u8>, v: &Value) {
    write_json(out, v, true);
}

/// A value's JSON, `escaped` as a string's content or not. Only quotes and the strings'
/// contents change when escaped: the rest of JSON's syntax is plain ASCII.
fn write_json(out: &mut Vec<u8>, v: &Value, escaped: bool) {
    match v {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => {
            // Writing to a `Vec` cannot fail.
            let _ = write!(Appender(out), "{n}");
        }
        Value::String(text) => write_str(out, text, escaped),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_json(out, item, escaped);
            }
            out.push(b']');
        }
        Value::Object(members) => {
            out.push(b'{');
            for (i, (key, value)) in members.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_str(out, key, escaped);
                out.push(b':');
                write_json(out, value, escaped);
            }
            out.push(b'}');
        }
    }
}

/// Strings from this long up get room made for them (see [`write_str`]).
const LONG_STR: usize = 4096;

/// A JSON string. Room for a long one, its quotes and the brackets that close around it is
/// made first: appended to a buffer grown to fit it exactly, it would make the buffer move
/// again for its closing quote (a large echo's result did, 60 KB copied). Short strings keep
/// the buffer's usual growth (the listings kept from init would take 3 KB more otherwise).
fn write_str(out: &mut Vec<u8>, text: &str, escaped: bool) {
    if text.len() >= LONG_STR {
        out.reserve(text.len() + 6);
    }
    if escaped {
        out.extend_from_slice(b"\\\"");
        escape_str_twice(text, out);
        out.extend_from_slice(b"\\\"");
    } else {
        out.push(b'"');
        escape_str(text, out);
        out.push(b'"');
    }
}

/// A `fmt::Write` that appends to a byte buffer.
struct Appender<'a>(&'a mut Vec<u8>);

impl fmt::Write for Appender<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

/// Entries a record holds: the object's, then a key and a value (with whatever a copied value
/// holds) for each member, so two scalar members. An object that needs more is written but not
/// recorded, and is read when it is checked ([`Written::value`]). Small, because a tool's
/// result is moved a few times on its way to the server: 80 bytes on the R4400.
const RECORD: usize = 5;

/// Writes `{"key":value,…}` with values read from a request, copied as the client wrote them
/// (having been read, they are JSON a `Value` holds).
pub struct ObjectWriter(Written);

/// A finished object: its text and, when it fitted, its record.
pub struct Written {
    text: String,
    nodes: [Node; RECORD],
    /// Entries recorded; `None` once one did not fit.
    len: Option<usize>,
}

impl ObjectWriter {
    /// An empty object with room for `bytes` of members (keys and values with their quotes,
    /// colons and commas), so that a result that fits takes one allocation.
    pub fn with_capacity(bytes: usize) -> Self {
        let mut text = String::with_capacity(bytes.saturating_add(2));
        text.push('{');
        let mut nodes = [EMPTY_NODE; RECORD];
        nodes[0].kind = Kind::Object;
        ObjectWriter(Written {
            text,
            nodes,
            len: Some(1),
        })
    }

    /// Adds the member `key` with `value`, as its JSON text was read.
    pub fn value(mut self, key: &str, value: ValueRef<'_>) -> Self {
        let w = &mut self.0;
        if w.text.len() > 1 {
            w.text.push(',');
        }
        let start = w.text.len();
        quote(key, &mut w.text);
        let end = w.text.len();
        let key_entry = Node {
            end,
            // Escaping only ever lengthens a string.
            ..Node::at(start, Kind::String, end - start != key.len() + 2)
        };
        w.record(&[key_entry], 0, 0, 0);
        w.text.push(':');
        let (first, entries) = value.entries();
        let from = entries.first().map_or(0, |n| n.start);
        let to = w.text.len();
        w.text.push_str(value.raw());
        w.record(entries, first, from, to);
        self
    }

    /// Closes the object.
    pub fn finish(self) -> Written {
        let mut w = self.0;
        w.text.push('}');
        if let Some(len) = w.len {
            w.nodes[0].end = w.text.len();
            w.nodes[0].next = len;
        }
        w
    }
}

impl Written {
    /// Appends `entries` to the record: those of a tape where the first is entry `first` and
    /// its text starts at `from`, moved to this text, where it starts at `to`.
    fn record(&mut self, entries: &[Node], first: usize, from: usize, to: usize) {
        let Some(len) = self.len else { return };
        // No entries (a value not on a tape) would leave a key without its value: not recorded.
        let room = self.nodes.get_mut(len..len + entries.len());
        let Some(room) = room.filter(|_| !entries.is_empty()) else {
            self.len = None;
            return;
        };
        let moved = |at: usize| at.wrapping_sub(from).wrapping_add(to);
        for (slot, n) in room.iter_mut().zip(entries) {
            *slot = Node {
                start: moved(n.start),
                end: moved(n.end),
                // A key's entry points at nothing (0); a value's at the entry past it.
                next: match n.next {
                    0 => 0,
                    next => next.wrapping_sub(first).wrapping_add(len),
                },
                ..*n
            };
        }
        self.len = Some(len + entries.len());
    }

    /// The object's JSON text.
    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn into_text(self) -> String {
        self.text
    }

    /// The object, read from its record; `None` if it was not recorded, for the caller to
    /// read its text.
    pub fn value(&self) -> Option<ValueRef<'_>> {
        let nodes = self.nodes.get(..self.len?)?;
        Some(ValueRef::recorded(&self.text, nodes))
    }
}

/// Appends `s` as a JSON string. Keys are names a tool gives, plain ASCII but for a rare one
/// that serde_json writes.
fn quote(s: &str, out: &mut String) {
    if plain_run(s.as_bytes()) == s.len() {
        out.push('"');
        out.push_str(s);
        out.push('"');
    } else {
        out.push_str(&serde_json::to_string(s).unwrap_or_default());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::{Tape, read_value};
    use serde_json::json;

    #[test]
    fn values_are_written_as_serde_json_writes_them() {
        let v = json!({
            "z": [1, -2, 3.5, 1e300, 0.1, u64::MAX, i64::MIN, null, true, false],
            "a\"\\\n\u{1}é😀\u{7f}": {"": "", "nested": [[], {}, [{"x": "y\tz"}]]},
            "text": "plain ASCII long enough to go a word at a time, then \"quoted\"",
        });
        for value in [
            v.clone(),
            json!(null),
            json!("s"),
            json!(7),
            json!([]),
            json!({}),
        ] {
            let mut out = Vec::new();
            write_value(&mut out, &value);
            let json = serde_json::to_string(&value).unwrap();
            assert_eq!(out, json.as_bytes(), "{value}");
            // Escaped: the content of the string whose value is that JSON.
            let mut out = Vec::new();
            write_value_escaped(&mut out, &value);
            let text = serde_json::to_string(&json).unwrap();
            assert_eq!(out, &text.as_bytes()[1..text.len() - 1], "{value}");
        }
    }

    /// Every way of reading the record agrees with reading the text.
    fn assert_recorded(w: &Written) {
        let v = w.value().expect("recorded");
        assert_eq!(v.raw(), w.text());
        assert_eq!(v.to_value(), read_value(w.text()));
        let mut tape = Tape::default();
        let read = tape.read(w.text()).unwrap();
        for (key, value) in read.members() {
            let got = v.get(&key.decode().unwrap()).expect("member");
            assert_eq!(got.raw(), value.raw());
            assert_eq!(got.kind(), value.kind());
        }
    }

    #[test]
    fn values_are_copied_with_their_entries() {
        let request = r#"{"a":"x\"y","n":-1.5e3,"o":{"e":"é\u00e9"},"t":true}"#;
        let mut tape = Tape::default();
        let args = tape.read(request).unwrap();
        let w = ObjectWriter::with_capacity(0)
            .value("text", args.get("a").unwrap())
            .value("q\"uote", args.get("n").unwrap())
            .finish();
        assert_eq!(w.text(), r#"{"text":"x\"y","q\"uote":-1.5e3}"#);
        assert_recorded(&w);
        let v = w.value().unwrap();
        assert_eq!(v.get("text").unwrap().as_str().unwrap(), "x\"y");
        assert_eq!(v.get("q\"uote").unwrap().as_f64(), Some(-1500.0));

        let w = ObjectWriter::with_capacity(64)
            .value("o", args.get("o").unwrap())
            .finish();
        assert_recorded(&w);
        assert_eq!(
            w.value().unwrap().to_value().unwrap(),
            json!({"o": {"e": "éé"}})
        );
    }

    #[test]
    fn an_object_past_the_record_is_written_whole_but_not_recorded() {
        let mut tape = Tape::default();
        let args = tape.read(r#"{"a":[1,2,3,4,5,6,7,8]}"#).unwrap();
        let w = ObjectWriter::with_capacity(0)
            .value("a", args.get("a").unwrap())
            .finish();
        assert!(w.value().is_none());
        assert_eq!(
            read_value(w.text()),
            Some(json!({"a": [1, 2, 3, 4, 5, 6, 7, 8]}))
        );
        // Members up to the record's room are recorded.
        let x = args.get("a").unwrap().items().next().unwrap();
        let mut w = ObjectWriter::with_capacity(0);
        for key in ["a", "b"] {
            w = w.value(key, x);
        }
        assert_recorded(&w.finish());
    }

    #[test]
    fn one_allocation_when_the_room_was_given() {
        let mut tape = Tape::default();
        let args = tape.read(r#"{"text":"hello"}"#).unwrap();
        let w = ObjectWriter::with_capacity(16).value("text", args.get("text").unwrap());
        let room = w.0.text.capacity();
        let w = w.finish();
        assert_eq!(w.text(), r#"{"text":"hello"}"#);
        assert_eq!(w.text.capacity(), room);
    }
}
