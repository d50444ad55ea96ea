//! Objects that give a key twice. JSON allows it (RFC 8259: names SHOULD be unique) and
//! readers disagree on which value counts: [`super::ValueRef::get`] takes the last, a
//! summary that lists members shows every one. A request the server acts on must read one
//! way only, so the protocol layers refuse such objects; this finds them.
//!
//! The cost is bounded whatever the object: a small object's keys are compared pairwise
//! without the heap (the common case: a request's objects hold a handful of keys), a bigger
//! one's are sorted in scratch memory, n log n comparisons for its n keys.

use super::scalar::Str;
use super::tape::{Kind, Node};
use super::value_ref::ValueRef;
use alloc::borrow::Cow;
use alloc::vec::Vec;

/// Most keys of an object compared pairwise (at most 120 comparisons, most of them of two
/// lengths); an object with more, or with a key holding an escape, has its keys decoded and
/// sorted.
const PAIRWISE: usize = 16;

/// What [`ValueRef::repeated_key`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum Repeat<'t> {
    /// No object in the value gives a key twice.
    None,
    /// A key some object gives twice, decoded.
    Key(Cow<'t, str>),
    /// The heap refused the scratch memory for a big object's keys: not checked.
    NoRoom,
}

impl<'t> ValueRef<'t> {
    /// The first key that an object in this value (itself or any nested one) gives twice.
    pub fn repeated_key(&self) -> Repeat<'t> {
        let (first, nodes) = self.entries();
        let text = self.source();
        let all = self.tape_nodes();
        for (i, n) in nodes.iter().enumerate() {
            if n.kind != Kind::Object {
                continue;
            }
            let found = object_repeat(text, all, first + i, n);
            if found != Repeat::None {
                return found;
            }
        }
        Repeat::None
    }
}

/// The key entries of the object whose entry is `all[at]`: keys and values alternate, each
/// value's `next` being where the next key is.
fn keys<'n>(all: &'n [Node], at: usize, object: &Node) -> impl Iterator<Item = &'n Node> {
    let mut i = at + 1;
    core::iter::from_fn(move || {
        if i >= object.next {
            return None;
        }
        let k = all.get(i)?;
        i = next_key(all, i);
        Some(k)
    })
}

/// Where the key after the key at `all[i]` is (past its value).
fn next_key(all: &[Node], i: usize) -> usize {
    all.get(i + 1).map_or(i + 2, |v| v.next.max(i + 2))
}

fn key_str<'t>(text: &'t str, k: &Node) -> Option<Str<'t>> {
    text.get(k.start..k.end).map(|q| Str::new(q, k.escaped))
}

/// A key of the object at `all[at]` given twice.
fn object_repeat<'t>(text: &'t str, all: &[Node], at: usize, object: &Node) -> Repeat<'t> {
    // Plain keys are compared as they are written, each with the keys before it, straight on
    // the tape: most pairs differ in length and cost one comparison of integers. An escaped
    // key, or one key too many, sends the object to the sort.
    let bytes = text.as_bytes();
    let (mut count, mut plain) = (0usize, true);
    let mut i = at + 1;
    while i < object.next {
        let Some(k) = all.get(i) else {
            break;
        };
        count += 1;
        plain &= !k.escaped && count <= PAIRWISE;
        if plain {
            let mut j = at + 1;
            while j < i {
                let same = all.get(j).is_some_and(|b| {
                    b.end.wrapping_sub(b.start) == k.end.wrapping_sub(k.start)
                        && bytes.get(b.start..b.end) == bytes.get(k.start..k.end)
                });
                if same {
                    let key = key_str(text, k).and_then(Str::plain).unwrap_or("");
                    return Repeat::Key(Cow::Borrowed(key));
                }
                j = next_key(all, j);
            }
        }
        i = next_key(all, i);
    }
    if plain {
        return Repeat::None;
    }
    let mut scratch: Vec<Cow<'t, str>> = Vec::new();
    if scratch.try_reserve_exact(count).is_err() {
        return Repeat::NoRoom;
    }
    for k in keys(all, at, object) {
        // The reader refuses keys that do not decode; an empty key stands in all the same.
        let decoded = key_str(text, k).and_then(Str::decode).unwrap_or_default();
        scratch.push(decoded);
    }
    scratch.sort_unstable();
    let twice = scratch.windows(2).position(|w| w[0] == w[1]);
    match twice.and_then(|i| scratch.into_iter().nth(i)) {
        Some(key) => Repeat::Key(key),
        None => Repeat::None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::Tape;
    use alloc::format;
    use alloc::string::String;

    fn repeat(text: &str) -> Option<String> {
        let mut tape = Tape::default();
        let v = tape.read(text).expect("JSON");
        match v.repeated_key() {
            Repeat::None => None,
            Repeat::Key(k) => Some(k.into_owned()),
            Repeat::NoRoom => panic!("no room"),
        }
    }

    #[test]
    fn a_key_given_twice_is_found_at_any_depth_and_however_written() {
        assert_eq!(
            repeat(r#"{"path":"/tmp/a","path":"/tmp/b"}"#).as_deref(),
            Some("path")
        );
        assert_eq!(repeat(r#"{"a":1,"b":2,"c":3}"#), None);
        assert_eq!(repeat(r#"[{"a":1},{"a":2}]"#), None);
        assert_eq!(repeat("{}"), None);
        assert_eq!(repeat("7"), None);
        assert_eq!(
            repeat(r#"{"name":"fs.remove","arguments":{"x":{"y":[{"k":1,"k":2}]}}}"#).as_deref(),
            Some("k")
        );
        // An escape names the same key as its plain text.
        assert_eq!(
            repeat(r#"{"path":1,"p\u0061th":2}"#).as_deref(),
            Some("path")
        );
        assert_eq!(
            repeat(r#"{"a\"b":1,"a\u0022b":2}"#).as_deref(),
            Some("a\"b")
        );
        // Keys that only look alike are different.
        assert_eq!(repeat(r#"{"path":1,"Path":2,"path ":3}"#), None);
        // A member whose value is an object, then the same key: the walk steps over the value.
        assert_eq!(repeat(r#"{"a":{"b":1,"c":2},"a":3}"#).as_deref(), Some("a"));
        assert_eq!(repeat(r#"{"a":{"a":1},"b":{"a":2}}"#), None);
    }

    #[test]
    fn big_objects_are_sorted_not_compared_pairwise() {
        for n in [PAIRWISE - 1, PAIRWISE, PAIRWISE + 1, 4000] {
            let members: Vec<String> = (0..n).map(|i| format!("\"k{i}\":{i}")).collect();
            let text = format!("{{{}}}", members.join(","));
            assert_eq!(repeat(&text), None, "{n}");
            let text = format!("{{{},\"k{}\":0}}", members.join(","), n / 2);
            assert_eq!(repeat(&text), Some(format!("k{}", n / 2)), "{n}");
        }
    }

    #[test]
    fn the_worst_object_is_checked_in_bounded_time() {
        extern crate std;
        // About the most keys a request may hold, all long and alike but for their last
        // bytes: a pairwise check would make 8 million comparisons of 2 KB (seconds), a sort
        // about 50,000.
        let prefix = "x".repeat(2000);
        let members: Vec<String> = (0..4000).map(|i| format!("\"{prefix}{i:04}\":0")).collect();
        let text = format!("{{{}}}", members.join(","));
        let mut tape = Tape::default();
        let v = tape.read(&text).unwrap();
        let started = std::time::Instant::now();
        assert_eq!(v.repeated_key(), Repeat::None);
        let took = started.elapsed();
        assert!(took < std::time::Duration::from_secs(1), "{took:?}");
    }
}
