//! Where the values of a JSON text lie: a [`Tape`] of [`Node`]s, one for each value and object
//! key, in the order they appear. The reader writes one ([`super::read`]); a
//! [`super::ValueRef`] reads a value from it; the writer of results records its
//! own as it writes ([`super::ObjectWriter`]).
//!
//! Why: a `serde_json::Value` tree costs a heap allocation per map, key and string — a dozen
//! for the smallest `tools/call` — and is walked once and dropped. A tape is a list of
//! offsets the server keeps and reuses, so reading a request allocates nothing
//! (`docs/bench.md`).

use alloc::vec::Vec;

/// The JSON types, as the schema validator and the readers tell them apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Null,
    Bool,
    Number,
    String,
    Array,
    Object,
}

/// One value on a tape, or one object key (a `String` entry before its value).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Node {
    /// The value's text in the body: `start..end`, quotes and brackets included.
    pub(crate) start: usize,
    pub(crate) end: usize,
    /// The tape index just past this value and everything inside it.
    pub(crate) next: usize,
    pub(crate) kind: Kind,
    /// A string holding a backslash escape (its text is not its value).
    pub(crate) escaped: bool,
}

/// Entries a server's tape keeps between requests: more than any small request needs (a
/// `tools/call` with a few arguments and the modern `_meta` takes about 20), little memory.
const TAPE_KEEP: usize = 256;

impl Node {
    /// An entry whose text starts at `start` and (until it is closed) ends there too.
    pub(crate) fn at(start: usize, kind: Kind, escaped: bool) -> Node {
        Node {
            start,
            end: start,
            next: 0,
            kind,
            escaped,
        }
    }
}

pub(crate) const EMPTY_NODE: Node = Node {
    start: 0,
    end: 0,
    next: 0,
    kind: Kind::Null,
    escaped: false,
};

/// Where the values of a JSON text lie, in the order they appear (a request body's: each
/// message of a batch in turn). A server keeps one and reuses it, so once it has room a
/// request is read without the heap; its memory is charged by the reader (as values) before
/// it is taken.
#[derive(Debug, Default)]
pub struct Tape {
    nodes: Vec<Node>,
}

impl Tape {
    /// A tape with room for `entries` values and keys.
    pub fn with_capacity(entries: usize) -> Self {
        Tape {
            nodes: Vec::with_capacity(entries),
        }
    }

    /// Empties the tape, giving back its memory if a big request grew it past
    /// [`TAPE_KEEP`] entries.
    pub fn clear(&mut self) {
        match self.nodes.capacity() > TAPE_KEEP {
            true => self.nodes = Vec::new(),
            false => self.nodes.clear(),
        }
    }

    /// The entries written so far.
    pub(crate) fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    pub(crate) fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Entries the tape has room for without growing.
    #[cfg(test)]
    pub(crate) fn capacity(&self) -> usize {
        self.nodes.capacity()
    }

    /// Adds an entry; `false` when the heap refused the room for it.
    pub(crate) fn push(&mut self, node: Node) -> bool {
        let room = self.nodes.try_reserve(1).is_ok();
        if room {
            self.nodes.push(node);
        }
        room
    }

    /// Completes the entry at `index` once its value is read: what it is, where its text
    /// ends, and (the entries after it being its contents) where the next value's entry is.
    pub(crate) fn close(&mut self, index: usize, end: usize, kind: Kind, escaped: bool) {
        let next = self.nodes.len();
        if let Some(n) = self.nodes.get_mut(index) {
            *n = Node {
                end,
                next,
                kind,
                escaped,
                ..*n
            };
        }
    }
}
