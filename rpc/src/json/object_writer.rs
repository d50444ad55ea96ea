//! A JSON object written as text, value by value, with a record of where each value lies in
//! it: every structured result a tool gives is written this way.
//!
//! Why: a result built as a `serde_json::Value` takes an allocation for each map, key and
//! string, and the server then weighs, checks and serialises the tree. Written as text it is
//! one buffer. The record is a tape (as [`super::Tape`] is for a request), so the server
//! checks the result against the tool's output schema without reading it again (a second
//! reading of a large result cost a fifth of each response byte, `docs/bench.md`); it is kept
//! only in the builds that make that check ([`RECORDED`]).
//!
//! The bytes are serde_json's for the same value: its maps (no `preserve_order` here) keep
//! keys sorted, so a writer writes members in key order (checked in debug builds), and
//! integers are written as its `itoa` writes them. The order is the caller's to keep: for the
//! writer to sort members itself it would hold each apart and copy it into place at the end,
//! a second copy of every result byte, which writing the text in place exists to save.

use super::escape::{append, escape_str, plain_run};
use super::tape::{EMPTY_NODE, Kind, Node};
use super::value_ref::ValueRef;
use alloc::string::String;
use alloc::vec::Vec;

/// Entries a record holds without the heap: the object's, then a key and a value (with
/// whatever a copied value holds) for each member, so two scalar members. Small, because a
/// tool's result is moved a few times on its way to the server: 80 bytes on the R4400.
const INLINE: usize = 5;

/// Whether a writer keeps a record: only the output schema check reads it, and the server makes
/// that check in debug builds only (`mcp::tools::call::emit::CHECK_RESULTS`); the product
/// image writes the text alone.
const RECORDED: bool = cfg!(debug_assertions);

/// Containers open at once that a record follows; a result nested deeper is written whole
/// but not recorded, and is read when it is checked ([`Written::value`]).
const DEPTH: usize = 6;

/// Writes one JSON object (a tool's structured result): members with [`Self::key`] then a
/// value, nested objects and arrays between `begin_*` and `end_*`.
pub struct ObjectWriter {
    w: Written,
    /// Record entries of the open containers, outermost first (those below [`DEPTH`]).
    open: [usize; DEPTH],
    depth: usize,
    /// The last key written at each open level (its text's range), to check the order.
    #[cfg(debug_assertions)]
    keys: [Option<(usize, usize)>; DEPTH],
}

/// A finished object: its text and, when it was recorded, its record.
pub struct Written {
    /// UTF-8 by construction: everything written is a `str`, escaped or not, or ASCII. Held
    /// as bytes so that a piece is appended without `String`'s calls ([`append`]), and sent
    /// as bytes.
    text: Vec<u8>,
    record: Record,
    /// Values written (recorded or not): with the text's length, how heavy the result is.
    values: usize,
}

/// Members of an object written once ([`Written::into_members`]) and copied into many
/// results ([`ObjectWriter::members`]): what a result shows that only a boot or the
/// configuration changes (`status`'s build, image digest and addresses) need not be written
/// again for every call.
#[derive(Default)]
pub struct Members {
    /// The members' text, without the object's braces.
    text: Vec<u8>,
    /// Values written in them, for [`Written::weight`].
    values: usize,
}

/// Where each value written lies: inline while a result is small, else in one `Vec`.
enum Record {
    Inline {
        nodes: [Node; INLINE],
        len: usize,
    },
    Spilled(Vec<Node>),
    /// Not recorded: too deep, a value without entries, or no heap for the record.
    Off,
}

impl Record {
    #[inline]
    fn len(&self) -> usize {
        match self {
            Record::Inline { len, .. } => *len,
            Record::Spilled(v) => v.len(),
            Record::Off => 0,
        }
    }

    /// Moves an inline record to the heap, with room for `entries`.
    fn spill(&mut self, entries: usize) {
        if let Record::Inline { nodes, len } = self {
            let mut v = Vec::new();
            *self = match v.try_reserve_exact(entries.max(*len)) {
                Ok(()) => {
                    v.extend_from_slice(nodes.get(..*len).unwrap_or(&[]));
                    Record::Spilled(v)
                }
                Err(_) => Record::Off,
            };
        }
    }

    /// `n` more entries at the end, for the caller to fill; `None` once the record is off.
    fn grow(&mut self, n: usize) -> Option<&mut [Node]> {
        let len = self.len();
        if matches!(self, Record::Inline { .. }) && len + n > INLINE {
            self.spill(2 * (len + n));
        }
        if let Record::Spilled(v) = self
            && v.try_reserve(n).is_err()
        {
            *self = Record::Off;
        }
        match self {
            Record::Inline { nodes, len } => {
                *len += n;
                nodes.get_mut(*len - n..*len)
            }
            Record::Spilled(v) => {
                v.resize(len + n, EMPTY_NODE);
                v.get_mut(len..)
            }
            Record::Off => None,
        }
    }

    /// One more entry: in place while there is room (every value written takes one, so this
    /// is inlined), through [`Self::grow`] when there is not.
    #[inline]
    fn push(&mut self, node: Node) {
        match self {
            Record::Inline { nodes, len } if *len < INLINE => {
                if let Some(slot) = nodes.get_mut(*len) {
                    *slot = node;
                    *len += 1;
                }
            }
            Record::Spilled(v) if v.len() < v.capacity() => v.push(node),
            _ => {
                if let Some([slot]) = self.grow(1) {
                    *slot = node;
                }
            }
        }
    }

    fn get_mut(&mut self, index: usize) -> Option<&mut Node> {
        match self {
            Record::Inline { nodes, len } => nodes.get_mut(..*len)?.get_mut(index),
            Record::Spilled(v) => v.get_mut(index),
            Record::Off => None,
        }
    }

    fn nodes(&self) -> Option<&[Node]> {
        match self {
            Record::Inline { nodes, len } => nodes.get(..*len),
            Record::Spilled(v) => Some(v),
            Record::Off => None,
        }
    }
}

impl ObjectWriter {
    /// An empty object with room for `bytes` of members (keys and values with their quotes,
    /// colons and commas), so that a result whose guess holds takes one allocation. The text
    /// cannot be sized before it is written, so the guess is the caller's; the record sizes
    /// itself (it grows as values are written, and only the builds that check results keep
    /// it).
    pub fn new(bytes: usize) -> Self {
        let mut text = Vec::with_capacity(bytes.saturating_add(2));
        text.push(b'{');
        let record = if RECORDED {
            let mut nodes = [EMPTY_NODE; INLINE];
            nodes[0] = Node::at(0, Kind::Object, false);
            Record::Inline { nodes, len: 1 }
        } else {
            Record::Off
        };
        ObjectWriter {
            w: Written {
                text,
                record,
                values: 1,
            },
            open: [0; DEPTH],
            depth: 1,
            #[cfg(debug_assertions)]
            keys: [None; DEPTH],
        }
    }

    /// A comma, unless the value opens its container or follows its key. Inlined: every
    /// value asks, and most (those after their key) need none.
    #[inline(always)]
    fn separate(&mut self) {
        if !matches!(self.w.text.last(), Some(b'{' | b'[' | b':')) {
            self.w.text.push(b',');
        }
    }

    /// A scalar written by `write`, recorded as one entry.
    fn scalar(&mut self, kind: Kind, write: impl FnOnce(&mut Vec<u8>)) -> &mut Self {
        self.separate();
        let start = self.w.text.len();
        write(&mut self.w.text);
        let end = self.w.text.len();
        self.note(|len| Node {
            end,
            next: len + 1,
            ..Node::at(start, kind, false)
        });
        self.w.values += 1;
        self
    }

    /// Records the entry `node` makes of the record's length; nothing where no record is kept
    /// ([`RECORDED`]), which leaves a value written to the text alone.
    #[inline(always)]
    fn note(&mut self, node: impl FnOnce(usize) -> Node) {
        if RECORDED {
            let len = self.w.record.len();
            self.w.record.push(node(len));
        }
    }

    /// Starts the member `key` of the innermost object; its value is written next. A key is a
    /// name the code chose, plain ASCII that JSON copies as it is (checked in debug builds), so
    /// no call scans it for bytes to escape.
    pub fn key(&mut self, key: &'static str) -> &mut Self {
        debug_assert_eq!(
            plain_run(key.as_bytes()),
            key.len(),
            "a key JSON would escape: {key:?}"
        );
        let text = &mut self.w.text;
        let comma = text.last() != Some(&b'{');
        let start = text.len() + usize::from(comma);
        // Separator, quotes, key and colon in one piece when there is room.
        if !irix7_kmem::append_key(text, comma, key.as_bytes()) {
            key_in_pieces(text, comma, key);
        }
        let end = self.w.text.len() - 1;
        self.check_order(start + 1, end - 1);
        // A key's entry points at nothing (0).
        self.note(|_| Node {
            end,
            ..Node::at(start, Kind::String, false)
        });
        self
    }

    /// Keys in serde_json's order (its maps sort them), or its bytes would differ.
    #[cfg(debug_assertions)]
    fn check_order(&mut self, start: usize, end: usize) {
        if let Some(last) = self.depth.checked_sub(1).and_then(|d| self.keys.get_mut(d)) {
            let text = &self.w.text;
            if let Some((a, b)) = *last {
                debug_assert!(
                    text.get(a..b) < text.get(start..end),
                    "keys out of serde_json's order: {:?} after {:?}",
                    self.w.text.get(start..end),
                    self.w.text.get(a..b),
                );
            }
            *last = Some((start, end));
        }
    }

    #[cfg(not(debug_assertions))]
    fn check_order(&mut self, _start: usize, _end: usize) {}

    pub fn str(&mut self, s: &str) -> &mut Self {
        self.separate();
        self.string(s)
    }

    /// A string given as bytes the caller made (digits, a date, an address): written as they
    /// are when they are plain printable ASCII, which is tested as they are copied, so text
    /// built on the stack needs no UTF-8 check before it comes here; any other bytes as
    /// [`Self::str`] writes their text (invalid UTF-8 replaced).
    pub fn ascii(&mut self, bytes: &[u8]) -> &mut Self {
        self.separate();
        let start = self.w.text.len();
        if irix7_kmem::append_plain_string(&mut self.w.text, bytes) {
            return self.string_entry(start, false);
        }
        self.string(&String::from_utf8_lossy(bytes))
    }

    /// The string `s`, quoted and escaped, after its separator.
    fn string(&mut self, s: &str) -> &mut Self {
        let start = self.w.text.len();
        // A short name with nothing to escape (most strings of a result) in one pass.
        if irix7_kmem::append_plain_string(&mut self.w.text, s.as_bytes()) {
            return self.string_entry(start, false);
        }
        self.w.text.push(b'"');
        escape_str(s, &mut self.w.text);
        self.w.text.push(b'"');
        // Escaping only ever lengthens a string.
        let escaped = self.w.text.len() - start != s.len() + 2;
        self.string_entry(start, escaped)
    }

    /// Records the string written from `start`.
    fn string_entry(&mut self, start: usize, escaped: bool) -> &mut Self {
        let end = self.w.text.len();
        self.note(|len| Node {
            end,
            next: len + 1,
            ..Node::at(start, Kind::String, escaped)
        });
        self.w.values += 1;
        self
    }

    pub fn u64(&mut self, n: u64) -> &mut Self {
        self.scalar(Kind::Number, |t| {
            // 32-bit numbers (nearly all) digit by digit; itoa's bytes are the same.
            if !irix7_kmem::append_decimal(t, n) {
                append(t, itoa::Buffer::new().format(n).as_bytes());
            }
        })
    }

    pub fn i64(&mut self, n: i64) -> &mut Self {
        self.scalar(Kind::Number, |t| {
            append(t, itoa::Buffer::new().format(n).as_bytes())
        })
    }

    pub fn bool(&mut self, b: bool) -> &mut Self {
        self.scalar(Kind::Bool, |t| {
            append(t, if b { b"true" } else { b"false" })
        })
    }

    pub fn null(&mut self) -> &mut Self {
        self.scalar(Kind::Null, |t| append(t, b"null"))
    }

    /// A value copied as its JSON text was read (having been read, it is JSON a `Value`
    /// holds), with its entries.
    pub fn value(&mut self, value: ValueRef<'_>) -> &mut Self {
        self.separate();
        let (first, entries) = value.entries();
        let from = entries.first().map_or(0, |n| n.start);
        let to = self.w.text.len();
        self.w.text.extend_from_slice(value.raw().as_bytes());
        self.w.values += entries.len();
        let len = self.w.record.len();
        match self.w.record.grow(entries.len()) {
            // No entries (a value not on a tape) would leave a key without its value.
            Some(room) if !room.is_empty() => moved(room, entries, first, len, from, to),
            _ => self.w.record = Record::Off,
        }
        self
    }

    /// Appends the members of `run` to the innermost object, after those written so far: the
    /// order of keys across the run is the caller's to keep, as for members written one at a
    /// time. A result with a run is not recorded; the builds that check results read its text.
    pub fn members(&mut self, run: &Members) -> &mut Self {
        if run.text.is_empty() {
            return self;
        }
        if self.w.text.last() != Some(&b'{') {
            self.w.text.push(b',');
        }
        self.w.text.extend_from_slice(&run.text);
        self.w.values += run.values;
        self.w.record = Record::Off;
        self
    }

    /// Opens a container whose entry is closed by [`Self::end`].
    fn begin(&mut self, open: u8, kind: Kind) -> &mut Self {
        // Its separator and itself as one piece.
        let comma = !matches!(self.w.text.last(), Some(b'{' | b'[' | b':'));
        let at = self.w.text.len() + usize::from(comma);
        let piece = [b',', open];
        append(&mut self.w.text, &piece[usize::from(!comma)..]);
        let index = self.w.record.len();
        self.note(|_| Node::at(at, kind, false));
        self.w.values += 1;
        match self.open.get_mut(self.depth) {
            Some(slot) => *slot = index,
            // Deeper than a record follows.
            None => self.w.record = Record::Off,
        }
        #[cfg(debug_assertions)]
        if let Some(k) = self.keys.get_mut(self.depth) {
            *k = None;
        }
        self.depth += 1;
        self
    }

    /// Closes the innermost container with `close`.
    fn end(&mut self, close: u8) -> &mut Self {
        self.w.text.push(close);
        self.depth = self.depth.saturating_sub(1);
        let (end, next) = (self.w.text.len(), self.w.record.len());
        if RECORDED
            && let Some(&index) = self.open.get(self.depth)
            && let Some(n) = self.w.record.get_mut(index)
        {
            n.end = end;
            n.next = next;
        }
        self
    }

    pub fn begin_object(&mut self) -> &mut Self {
        self.begin(b'{', Kind::Object)
    }

    pub fn end_object(&mut self) -> &mut Self {
        self.end(b'}')
    }

    pub fn begin_array(&mut self) -> &mut Self {
        self.begin(b'[', Kind::Array)
    }

    pub fn end_array(&mut self) -> &mut Self {
        self.end(b']')
    }

    /// Closes the object.
    pub fn finish(mut self) -> Written {
        debug_assert_eq!(self.depth, 1, "a container left open");
        while self.depth > 1 {
            self.end(b']');
        }
        self.end(b'}');
        self.w
    }
}

/// What opens a member, piece by piece ([`append`]): for a vector without the room, or a key
/// too long for one piece. Out of line, so that the usual key saves no registers for it.
#[inline(never)]
fn key_in_pieces(text: &mut Vec<u8>, comma: bool, key: &str) {
    append(text, if comma { b",\"" } else { b"\"" });
    append(text, key.as_bytes());
    append(text, b"\":");
}

/// Fills `room` with `entries` of a tape where the first is entry `first` and its text starts
/// at `from`, moved to a record where the first is entry `to_entry` and the text starts at
/// `to`.
fn moved(
    room: &mut [Node],
    entries: &[Node],
    first: usize,
    to_entry: usize,
    from: usize,
    to: usize,
) {
    let at = |p: usize| p.wrapping_sub(from).wrapping_add(to);
    for (slot, n) in room.iter_mut().zip(entries) {
        *slot = Node {
            start: at(n.start),
            end: at(n.end),
            // A key's entry points at nothing (0); a value's at the entry past it.
            next: match n.next {
                0 => 0,
                next => next.wrapping_sub(first).wrapping_add(to_entry),
            },
            ..*n
        };
    }
}

impl Written {
    /// The object's JSON text, as it is sent.
    pub fn bytes(&self) -> &[u8] {
        &self.text
    }

    /// The object's JSON text as a `str` (checked again: for readers that need one, not
    /// for the answer).
    pub fn text(&self) -> &str {
        core::str::from_utf8(&self.text).unwrap_or("")
    }

    pub fn into_bytes(self) -> Vec<u8> {
        self.text
    }

    /// The object's members, to be copied into other objects ([`ObjectWriter::members`]).
    pub fn into_members(mut self) -> Members {
        // The writer opened the text with `{` and closed it with `}`.
        self.text.pop();
        self.text.remove(0);
        Members {
            text: self.text,
            values: self.values.saturating_sub(1),
        }
    }

    pub fn into_text(self) -> String {
        String::from_utf8(self.text).unwrap_or_default()
    }

    /// How much work checking and writing the result out is: a value per value written and
    /// one per 64 bytes of text.
    pub fn weight(&self) -> usize {
        self.values.saturating_add(self.text.len() / 64)
    }

    /// The object, read from its record; `None` if it was not recorded, for the caller to
    /// read its text.
    pub fn value(&self) -> Option<ValueRef<'_>> {
        let nodes = self.record.nodes()?;
        Some(ValueRef::recorded(self.text(), nodes))
    }
}

#[cfg(test)]
mod tests;
