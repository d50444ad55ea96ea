//! JSON values read in place: a [`ValueRef`] reads a value of a [`Tape`] from the text it
//! lies in. Nothing is copied or built unless a caller asks for an owned value
//! ([`ValueRef::to_value`]) or a string holds an escape.

use super::scalar::{Str, number};
use super::tape::{EMPTY_NODE, Kind, Node, Tape};
use alloc::borrow::Cow;
use serde_json::{Map, Value};

/// JSON text read as a `Value`, through a tape of its own: for texts this side keeps (tool
/// schemas, read at registration) and the few values a request hands on whole. `None` unless
/// it is one JSON value a `Value` holds.
pub fn read_value(text: &str) -> Option<Value> {
    Tape::default().read(text)?.to_value()
}

/// A value on a tape. Copy it freely: it is three words.
#[derive(Clone, Copy)]
pub struct ValueRef<'t> {
    text: &'t str,
    nodes: &'t [Node],
    at: usize,
}

/// The empty object, for a request without `params`.
static EMPTY_OBJECT: [Node; 1] = [Node {
    start: 0,
    end: 2,
    next: 1,
    kind: Kind::Object,
    escaped: false,
}];

impl PartialEq for ValueRef<'_> {
    /// Values are equal when they are the same text.
    fn eq(&self, other: &Self) -> bool {
        self.raw() == other.raw()
    }
}

impl core::fmt::Debug for ValueRef<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.raw())
    }
}

impl<'t> ValueRef<'t> {
    /// The value at `index` of a tape still being written: usable once attached.
    pub(crate) fn detached(text: &'t str, index: usize) -> Self {
        ValueRef {
            text,
            nodes: &[],
            at: index,
        }
    }

    /// Points the value at its tape, now that the tape is written.
    pub(crate) fn attach(&mut self, tape: &'t Tape) {
        self.nodes = tape.nodes();
    }

    /// The value `nodes` begins with: the record a writer kept of `text` as it wrote it
    /// ([`super::ObjectWriter`]).
    pub(super) fn recorded(text: &'t str, nodes: &'t [Node]) -> Self {
        ValueRef { text, nodes, at: 0 }
    }

    /// The value's entries (its own, then those of everything inside it) and the index of
    /// the first on its tape.
    pub(super) fn entries(&self) -> (usize, &'t [Node]) {
        let end = self.node().next.max(self.at + 1);
        (self.at, self.nodes.get(self.at..end).unwrap_or(&[]))
    }

    /// The text the value lies in, and the whole tape it was read onto (entry indexes count
    /// from its start).
    pub(super) fn source(&self) -> &'t str {
        self.text
    }

    pub(super) fn tape_nodes(&self) -> &'t [Node] {
        self.nodes
    }

    /// `{}`.
    pub fn empty_object() -> ValueRef<'static> {
        ValueRef {
            text: "{}",
            nodes: &EMPTY_OBJECT,
            at: 0,
        }
    }

    fn node(&self) -> Node {
        self.nodes.get(self.at).copied().unwrap_or(EMPTY_NODE)
    }

    pub fn kind(&self) -> Kind {
        self.node().kind
    }

    /// The value's exact text.
    pub fn raw(&self) -> &'t str {
        let n = self.node();
        self.text.get(n.start..n.end).unwrap_or("null")
    }

    pub fn is_null(&self) -> bool {
        self.kind() == Kind::Null
    }

    pub fn is_object(&self) -> bool {
        self.kind() == Kind::Object
    }

    pub fn is_array(&self) -> bool {
        self.kind() == Kind::Array
    }

    /// A string's value (decoded only when it holds an escape).
    pub fn as_str(&self) -> Option<Cow<'t, str>> {
        self.as_string().and_then(Str::decode)
    }

    fn as_string(&self) -> Option<Str<'t>> {
        let n = self.node();
        let quoted = self.text.get(n.start..n.end)?;
        (n.kind == Kind::String).then_some(Str::new(quoted, n.escaped))
    }

    pub fn as_bool(&self) -> Option<bool> {
        match (self.kind(), self.raw()) {
            (Kind::Bool, text) => Some(text == "true"),
            _ => None,
        }
    }

    /// A number's value as `serde_json::Number` gives it (so `1.0` is no `u64`).
    pub fn as_u64(&self) -> Option<u64> {
        self.as_number().and_then(|n| n.as_u64())
    }

    pub fn as_i64(&self) -> Option<i64> {
        self.as_number().and_then(|n| n.as_i64())
    }

    pub fn as_f64(&self) -> Option<f64> {
        self.as_number().and_then(|n| n.as_f64())
    }

    pub fn as_number(&self) -> Option<serde_json::Number> {
        match self.kind() {
            Kind::Number => number(self.raw()),
            _ => None,
        }
    }

    /// The member `key` of an object (the last, if the key is given twice, as serde_json
    /// keeps it; requests that do so are refused before they are acted on: see
    /// [`ValueRef::repeated_key`]).
    pub fn get(&self, key: &str) -> Option<ValueRef<'t>> {
        let n = self.node();
        if n.kind != Kind::Object {
            return None;
        }
        // Keys and values alternate; each value's `next` is where the next key is.
        let (mut i, mut found) = (self.at + 1, None);
        while i < n.next {
            let k = self.nodes.get(i)?;
            if self.reads(k, key) {
                found = Some(i + 1);
            }
            i = self.nodes.get(i + 1)?.next.max(i + 2);
        }
        found.map(|at| ValueRef { at, ..*self })
    }

    /// Whether the value is the string `s`.
    pub fn str_is(&self, s: &str) -> bool {
        let n = self.node();
        n.kind == Kind::String && self.reads(&n, s)
    }

    /// Whether the string entry `n` (a key or a value) reads `s`: compared in place unless it
    /// holds an escape.
    fn reads(&self, n: &Node, s: &str) -> bool {
        if !n.escaped {
            // The bytes between the quotes are the string. Their count is compared first,
            // here: most keys a lookup passes differ in length, and the image (optimised
            // for size) would call two comparisons to learn it.
            let inner = n.start + 1..n.end.saturating_sub(1);
            return inner.len() == s.len() && self.text.as_bytes().get(inner) == Some(s.as_bytes());
        }
        self.text
            .get(n.start..n.end)
            .and_then(|q| Str::new(q, true).decode())
            .is_some_and(|d| d == s)
    }

    /// Whether an object has the member `key`.
    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// An object's members in order, each key with its value (none for any other type).
    pub fn members(&self) -> Members<'t> {
        Members(self.children(Kind::Object))
    }

    /// An array's items in order (none for any other type).
    pub fn items(&self) -> Items<'t> {
        Items(self.children(Kind::Array))
    }

    fn children(&self, kind: Kind) -> Children<'t> {
        let n = self.node();
        let (at, end) = match n.kind == kind {
            true => (self.at + 1, n.next),
            false => (0, 0),
        };
        Children {
            text: self.text,
            nodes: self.nodes,
            at,
            end,
        }
    }

    /// The value as serde_json builds it, for the few values kept or handed on whole. (The
    /// image's one JSON reader is the tape's: serde_json's `Value` reader is not in it.)
    /// `None` only for text no `Value` holds, which the reader refuses before it reaches a
    /// tape.
    pub fn to_value(&self) -> Option<Value> {
        Some(match self.kind() {
            Kind::Null => Value::Null,
            Kind::Bool => Value::Bool(self.as_bool()?),
            Kind::Number => Value::Number(self.as_number()?),
            Kind::String => Value::String(self.as_str()?.into_owned()),
            Kind::Array => Value::Array(self.items().map(|v| v.to_value()).collect::<Option<_>>()?),
            Kind::Object => {
                let mut map = Map::new();
                for (k, v) in self.members() {
                    map.insert(k.decode()?.into_owned(), v.to_value()?);
                }
                Value::Object(map)
            }
        })
    }
}

/// The value rebuilt through the accessors alone (members, items, strings, numbers), for the
/// tests and the fuzzer that compare a tape's reading with serde_json's.
#[cfg(any(test, feature = "fuzzing"))]
pub(super) fn rebuild(v: ValueRef<'_>) -> Option<Value> {
    Some(match v.kind() {
        Kind::Null => Value::Null,
        Kind::Bool => Value::Bool(v.as_bool()?),
        Kind::Number => Value::Number(v.as_number()?),
        Kind::String => Value::String(v.as_str()?.into_owned()),
        Kind::Array => Value::Array(v.items().map(rebuild).collect::<Option<_>>()?),
        Kind::Object => {
            let mut map = Map::new();
            for (k, item) in v.members() {
                let key = k.decode()?;
                // `get` finds what serde_json keeps of a key given twice: its last value.
                let last = v.get(&key)?;
                let later = v.members().skip_while(|(_, i)| i.at != item.at).skip(1);
                let is_last = !later.into_iter().any(|(k2, _)| k2.is(&key));
                if is_last != (last.at == item.at) {
                    return None;
                }
                map.insert(key.into_owned(), rebuild(item)?);
            }
            Value::Object(map)
        }
    })
}

/// The entries between a container's own and its end, stepped over a value at a time.
struct Children<'t> {
    text: &'t str,
    nodes: &'t [Node],
    at: usize,
    end: usize,
}

impl<'t> Children<'t> {
    fn next_value(&mut self) -> Option<ValueRef<'t>> {
        if self.at >= self.end {
            return None;
        }
        let v = ValueRef {
            text: self.text,
            nodes: self.nodes,
            at: self.at,
        };
        // A well-formed tape always moves forward; a zero `next` would be a bug, not a loop.
        self.at = v.node().next.max(self.at + 1);
        Some(v)
    }
}

/// An object's members: see [`ValueRef::members`].
pub struct Members<'t>(Children<'t>);

impl<'t> Iterator for Members<'t> {
    type Item = (Key<'t>, ValueRef<'t>);

    fn next(&mut self) -> Option<Self::Item> {
        let c = &mut self.0;
        if c.at >= c.end {
            return None;
        }
        // A key's entry, then its value's, whose `next` is where the next key is.
        let k = c.nodes.get(c.at)?;
        let key = Str::new(c.text.get(k.start..k.end)?, k.escaped);
        let value = ValueRef {
            text: c.text,
            nodes: c.nodes,
            at: c.at + 1,
        };
        c.at = c.nodes.get(c.at + 1)?.next.max(c.at + 2);
        Some((Key(key), value))
    }
}

/// An array's items: see [`ValueRef::items`].
pub struct Items<'t>(Children<'t>);

impl<'t> Iterator for Items<'t> {
    type Item = ValueRef<'t>;

    fn next(&mut self) -> Option<Self::Item> {
        self.0.next_value()
    }
}

/// An object key as it appears in the body.
#[derive(Clone, Copy)]
pub struct Key<'t>(Str<'t>);

impl<'t> Key<'t> {
    /// Whether the key's value is `name` (compared without decoding a plain key).
    pub fn is(&self, name: &str) -> bool {
        match self.0.plain() {
            Some(raw) => raw == name,
            None => self.0.decode().is_some_and(|k| k == name),
        }
    }

    /// The key's value.
    pub fn decode(&self) -> Option<Cow<'t, str>> {
        self.0.decode()
    }
}
