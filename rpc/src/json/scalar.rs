//! Strings and numbers as they appear in JSON text: a string checked but not decoded (its
//! value read only when asked), a number's value as serde_json reads it. Shared by the reader,
//! which finds them, and by [`super::ValueRef`], which reads them back.

use alloc::borrow::Cow;
use alloc::string::String;
use serde_json::Number;

/// A string as it appears in the text, quotes included: checked but not decoded.
#[derive(Clone, Copy)]
pub(crate) struct Str<'a> {
    pub(super) quoted: &'a str,
    /// Whether it holds a backslash escape (else its text is its value).
    pub(super) escaped: bool,
}

impl<'a> Str<'a> {
    pub(super) fn new(quoted: &'a str, escaped: bool) -> Self {
        Str { quoted, escaped }
    }

    /// The text between the quotes.
    fn inner(self) -> &'a str {
        self.quoted
            .get(1..self.quoted.len().saturating_sub(1))
            .unwrap_or("")
    }

    /// The text, when it is the value (no escape in it).
    pub(super) fn plain(self) -> Option<&'a str> {
        (!self.escaped).then(|| self.inner())
    }

    /// Whether the string has a value: only a `\u` escape can be half of a surrogate pair,
    /// so a string without one is not decoded to tell (nor allocated for).
    pub(super) fn readable(self) -> bool {
        let has_u = || self.quoted.as_bytes().windows(2).any(|w| w == b"\\u");
        !self.escaped || !has_u() || self.decode().is_some()
    }

    /// The string's value; `None` when a `\u` escape is half of a surrogate pair, which no
    /// Rust string can hold. A string with escapes is rare: serde_json's own string reader
    /// (in the image already) decodes it.
    pub(crate) fn decode(self) -> Option<Cow<'a, str>> {
        match self.escaped {
            false => Some(Cow::Borrowed(self.inner())),
            true => serde_json::from_str::<String>(self.quoted)
                .ok()
                .map(Cow::Owned),
        }
    }
}

/// A number's value as serde_json reads it: an unsigned integer read here (the common case,
/// and cheap), anything else by serde_json's number reader. `None` beyond a double (`1e999`).
pub(super) fn number(text: &str) -> Option<Number> {
    // At most 19 digits always fit a u64.
    if text.len() <= 19 && text.bytes().all(|b| b.is_ascii_digit()) {
        return text.parse::<u64>().ok().map(Number::from);
    }
    text.parse().ok()
}
