//! A page of a merged directory listing, held in two allocations whatever its length: the
//! names end to end in one string, the stats beside them, and entries that borrow their names.

use alloc::string::String;
use alloc::vec::Vec;
use core::slice;

use super::stat::Stat;

/// A page of a merged, sorted directory listing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listing {
    /// Canonical path of the directory.
    pub path: String,
    /// Entries `offset .. offset + limit` of the sorted listing, without `.` and `..`.
    pub entries: ListEntries,
    /// Number of entries in the whole directory.
    pub total: usize,
}

/// One entry of a merged listing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ListEntry<'a> {
    /// Name within the directory.
    pub name: &'a str,
    /// Its metadata (symlinks not followed).
    pub stat: Stat,
}

/// The entries of a listing page, in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListEntries {
    names: String,
    /// Each entry's stat and where its name ends in `names`.
    items: Vec<(usize, Stat)>,
}

impl ListEntries {
    /// Room for `entries` entries with names of about 16 bytes, taken once.
    pub(super) fn with_capacity(entries: usize) -> Self {
        ListEntries {
            names: String::with_capacity(entries * 16),
            items: Vec::with_capacity(entries),
        }
    }

    /// Adds an entry at the end.
    pub(super) fn push(&mut self, name: &str, stat: Stat) {
        self.names.push_str(name);
        self.items.push((self.names.len(), stat));
    }

    /// The stats, in order, to fill in after the directory walk.
    pub(super) fn stats_mut(&mut self) -> impl Iterator<Item = &mut Stat> {
        self.items.iter_mut().map(|(_, stat)| stat)
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether the page has no entries.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Entry `i`.
    pub fn get(&self, i: usize) -> Option<ListEntry<'_>> {
        let start = match i.checked_sub(1) {
            Some(before) => self.items.get(before)?.0,
            None => 0,
        };
        let (end, stat) = *self.items.get(i)?;
        Some(ListEntry {
            name: self.names.get(start..end)?,
            stat,
        })
    }

    /// The entries in order.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            names: &self.names,
            start: 0,
            items: self.items.iter(),
        }
    }
}

impl<'a> IntoIterator for &'a ListEntries {
    type Item = ListEntry<'a>;
    type IntoIter = Iter<'a>;
    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

/// The entries of a [`ListEntries`] in order.
pub struct Iter<'a> {
    names: &'a str,
    start: usize,
    items: slice::Iter<'a, (usize, Stat)>,
}

impl<'a> Iterator for Iter<'a> {
    type Item = ListEntry<'a>;
    fn next(&mut self) -> Option<ListEntry<'a>> {
        let &(end, stat) = self.items.next()?;
        let name = self.names.get(self.start..end).unwrap_or("");
        self.start = end;
        Some(ListEntry { name, stat })
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.items.size_hint()
    }
}

impl ExactSizeIterator for Iter<'_> {}
