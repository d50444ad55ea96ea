//! Reading JSON text (a request body above all) onto a [`Tape`] in one pass: the syntax
//! checked (RFC 8259), the nesting and the number of values bounded, and the memory of the
//! values charged to a budget before it is taken.
//!
//! Why not serde_json's deserializer: most of a big body is string content, and serde_json's
//! string scan assembles each word little-endian from byte loads on this big-endian CPU (6.5
//! instructions per byte), after a pre-scan of our own had already walked every byte to bound
//! the nesting and the values (2.7 more). Here one pass does both, testing strings four words
//! at a time with the escaper's plain-run test (`docs/bench.md`).
//! Numbers other than small unsigned integers are still read by serde_json, so every value is
//! the one serde_json would build.

use super::escape::plain_run;
use super::scalar::{Str, number};
use super::tape::{Kind, Node, Tape};
use super::value_ref::ValueRef;
use irix7_kmem::budget::Lease;

/// Deepest array/object nesting accepted. MCP messages need a handful of levels; the limit
/// keeps the recursive readers (this one, the schema validator) within a small kernel stack.
pub const MAX_NESTING: usize = 32;

/// Most values (scalars and containers, nested or not) in one request. A built value costs
/// tens of bytes whatever its text costs (`[]` is 2 bytes of input and a whole `Value`), so
/// this, not the body size, bounds the memory a parse takes. MCP requests hold a few dozen;
/// big inputs (`fs.write`) are one string.
pub const MAX_VALUES: usize = 4096;

/// Heap a read takes at most per value (the `Value`, its slot in a map or vector) and per
/// byte of body (strings are copied into their values).
pub(super) const COST_PER_VALUE: usize = 64;
pub(crate) const COST_PER_BYTE: usize = 2;

/// Values charged to the budget at a time: a small request pays once.
const VALUES_PER_CHARGE: usize = 32;

/// Why a read stopped.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Fault {
    /// Not JSON.
    Syntax,
    /// Nested deeper than [`MAX_NESTING`].
    Deep,
    /// More than [`MAX_VALUES`] values.
    Many,
    /// The budget would not take the memory of the next values.
    OverBudget,
}

/// A cursor over JSON text.
pub(crate) struct Reader<'a> {
    text: &'a str,
    at: usize,
    values: usize,
    /// Values paid for so far.
    paid: usize,
    /// Where values are charged; `None` reads without a budget.
    lease: Option<Lease>,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(text: &'a str, lease: Option<Lease>) -> Self {
        Reader {
            text,
            at: 0,
            values: 0,
            paid: 0,
            lease,
        }
    }

    /// The lease, with every value read so far charged to it.
    pub(crate) fn into_lease(self) -> Option<Lease> {
        self.lease
    }

    /// The whole text being read.
    pub(crate) fn text(&self) -> &'a str {
        self.text
    }

    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    /// The next byte after any whitespace.
    pub(crate) fn peek(&mut self) -> Option<u8> {
        let bytes = self.bytes();
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = bytes.get(self.at) {
            self.at += 1;
        }
        bytes.get(self.at).copied()
    }

    fn eat(&mut self, b: u8) -> Result<(), Fault> {
        match self.peek() == Some(b) {
            true => {
                self.at += 1;
                Ok(())
            }
            false => Err(Fault::Syntax),
        }
    }

    /// Nothing but whitespace is left.
    pub(crate) fn end(&mut self) -> Result<(), Fault> {
        match self.peek() {
            None => Ok(()),
            Some(_) => Err(Fault::Syntax),
        }
    }

    /// Counts one more value, charging a batch of them first when the last is used up.
    fn count(&mut self) -> Result<(), Fault> {
        self.values += 1;
        if self.values > MAX_VALUES {
            return Err(Fault::Many);
        }
        if self.values > self.paid {
            if let Some(lease) = &mut self.lease
                && !lease.grow(VALUES_PER_CHARGE * COST_PER_VALUE)
            {
                return Err(Fault::OverBudget);
            }
            self.paid += VALUES_PER_CHARGE;
        }
        Ok(())
    }

    /// The members of the object that starts here, each handed to `each` with its key and the
    /// nesting of its value, which `each` must read.
    pub(crate) fn members(
        &mut self,
        depth: usize,
        mut each: impl FnMut(&mut Self, Str<'a>, usize) -> Result<(), Fault>,
    ) -> Result<(), Fault> {
        let inner = nest(depth)?;
        self.eat(b'{')?;
        if self.peek() == Some(b'}') {
            self.at += 1;
            return Ok(());
        }
        loop {
            if self.peek() != Some(b'"') {
                return Err(Fault::Syntax);
            }
            let key = self.string()?;
            self.eat(b':')?;
            each(self, key, inner)?;
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b'}') => {
                    self.at += 1;
                    return Ok(());
                }
                _ => return Err(Fault::Syntax),
            }
        }
    }

    /// The items of the array that starts here, each handed to `each` with its nesting.
    pub(crate) fn items(
        &mut self,
        depth: usize,
        mut each: impl FnMut(&mut Self, usize) -> Result<(), Fault>,
    ) -> Result<(), Fault> {
        let inner = nest(depth)?;
        self.eat(b'[')?;
        if self.peek() == Some(b']') {
            self.at += 1;
            return Ok(());
        }
        loop {
            each(self, inner)?;
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b']') => {
                    self.at += 1;
                    return Ok(());
                }
                _ => return Err(Fault::Syntax),
            }
        }
    }

    /// Counts the value that starts here (a container by the caller, which reads it).
    pub(crate) fn enter(&mut self) -> Result<(), Fault> {
        self.count()
    }

    /// Checks the value that starts here and steps over it (onto `tape`, which a request
    /// has anyway: one walker of values in the image, not two).
    pub(crate) fn skip(&mut self, depth: usize, tape: &mut Tape) -> Result<(), Fault> {
        self.tape(depth, tape).map(drop)
    }

    /// The text of the value that starts here, checked (and put on `tape`).
    pub(crate) fn raw(&mut self, depth: usize, tape: &mut Tape) -> Result<&'a str, Fault> {
        self.peek();
        let start = self.at;
        self.skip(depth, tape)?;
        self.text.get(start..self.at).ok_or(Fault::Syntax)
    }

    /// Puts the value that starts here on `tape`, with everything inside it. `Ok(false)`
    /// when it is well-formed JSON that no `Value` holds (a number beyond a double, half a
    /// surrogate pair): callers refuse it as serde_json would.
    pub(crate) fn tape(&mut self, depth: usize, tape: &mut Tape) -> Result<bool, Fault> {
        self.count()?;
        let first = self.peek();
        let (start, index) = (self.at, tape.len());
        // Its entry goes first; what it is and where it ends are set once it is read.
        push(tape, Node::at(start, Kind::Null, false))?;
        let mut readable = true;
        let (kind, escaped) = match first {
            Some(b'{') => {
                self.members(depth, |r, key, inner| {
                    readable &= key.readable();
                    let at = r.offset(key.quoted);
                    let mut k = Node::at(at, Kind::String, key.escaped);
                    k.end = at + key.quoted.len();
                    push(tape, k)?;
                    readable &= r.tape(inner, tape)?;
                    Ok(())
                })?;
                (Kind::Object, false)
            }
            Some(b'[') => {
                self.items(depth, |r, inner| {
                    readable &= r.tape(inner, tape)?;
                    Ok(())
                })?;
                (Kind::Array, false)
            }
            Some(b'"') => {
                let s = self.string()?;
                readable = s.readable();
                (Kind::String, s.escaped)
            }
            _ => {
                let kind = self.scalar()?;
                if kind == Kind::Number {
                    readable = self.text.get(start..self.at).and_then(number).is_some();
                }
                (kind, false)
            }
        };
        tape.close(index, self.at, kind, escaped);
        Ok(readable)
    }

    /// Where `part`, a slice of the text, starts in it.
    fn offset(&self, part: &str) -> usize {
        (part.as_ptr() as usize).saturating_sub(self.text.as_ptr() as usize)
    }

    /// The string that starts here (at its quote), checked: escapes well-formed, no control
    /// character. The text is UTF-8 already, so bytes from 0x80 up are parts of characters.
    pub(crate) fn string(&mut self) -> Result<Str<'a>, Fault> {
        let bytes = self.bytes();
        let start = self.at + 1;
        let mut i = start;
        let mut escaped = false;
        loop {
            i += plain_run(bytes.get(i..).unwrap_or(&[]));
            match bytes.get(i) {
                Some(b'"') => break,
                Some(b'\\') => {
                    escaped = true;
                    i += match bytes.get(i + 1) {
                        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => 2,
                        Some(b'u')
                            if bytes
                                .get(i + 2..i + 6)
                                .is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit)) =>
                        {
                            6
                        }
                        _ => return Err(Fault::Syntax),
                    };
                }
                Some(&b) if b >= 0x80 => {
                    let rest = bytes.get(i..).unwrap_or(&[]);
                    i += rest.iter().take_while(|&&b| b >= 0x80).count();
                }
                // A control character, or the end of the text.
                _ => return Err(Fault::Syntax),
            }
        }
        let quoted = self.text.get(start - 1..i + 1).ok_or(Fault::Syntax)?;
        self.at = i + 1;
        Ok(Str::new(quoted, escaped))
    }

    /// The literal or number that starts here, stepped over; its kind.
    fn scalar(&mut self) -> Result<Kind, Fault> {
        let rest = self.bytes().get(self.at..).unwrap_or(&[]);
        let (kind, len) = match rest.first() {
            Some(b'n') if rest.starts_with(b"null") => (Kind::Null, 4),
            Some(b't') if rest.starts_with(b"true") => (Kind::Bool, 4),
            Some(b'f') if rest.starts_with(b"false") => (Kind::Bool, 5),
            _ => (Kind::Number, number_len(rest).ok_or(Fault::Syntax)?),
        };
        self.at += len;
        Ok(kind)
    }
}

impl Tape {
    /// The one JSON value that is the whole of `text`, read onto this tape (emptied first)
    /// without a budget, for values this side keeps or tests give; `None` unless it is JSON
    /// a `Value` holds.
    pub fn read<'a>(&'a mut self, text: &'a str) -> Option<ValueRef<'a>> {
        self.clear();
        let mut r = Reader::new(text, None);
        let readable = r.tape(0, self).ok()?;
        r.end().ok()?;
        let mut v = ValueRef::detached(text, 0);
        v.attach(self);
        readable.then_some(v)
    }
}

/// Adds `node` to `tape`, or says the heap refused the room.
fn push(tape: &mut Tape, node: Node) -> Result<(), Fault> {
    match tape.push(node) {
        true => Ok(()),
        false => Err(Fault::OverBudget),
    }
}

/// The nesting inside a container at `depth`, if allowed.
fn nest(depth: usize) -> Result<usize, Fault> {
    match depth + 1 {
        inner if inner > MAX_NESTING => Err(Fault::Deep),
        inner => Ok(inner),
    }
}

/// The length of the JSON number at the start of `b`:
/// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
fn number_len(b: &[u8]) -> Option<usize> {
    let digits = |at: usize| {
        b.get(at..)
            .unwrap_or(&[])
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count()
    };
    let mut i = usize::from(b.first() == Some(&b'-'));
    match b.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => i += digits(i),
        _ => return None,
    }
    if b.get(i) == Some(&b'.') {
        match digits(i + 1) {
            0 => return None,
            n => i += 1 + n,
        }
    }
    if let Some(b'e' | b'E') = b.get(i) {
        i += 1;
        if let Some(b'+' | b'-') = b.get(i) {
            i += 1;
        }
        match digits(i) {
            0 => return None,
            n => i += n,
        }
    }
    Some(i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::borrow::Cow;
    use alloc::format;
    use alloc::vec;
    use serde_json::Value;

    /// Our read of `text` as one value: `Err` a fault, `Ok(None)` unreadable.
    fn read(text: &str) -> Result<Option<Value>, Fault> {
        let mut r = Reader::new(text, None);
        let readable = r.tape(0, &mut Tape::default())?;
        r.end()?;
        let mut tape = Tape::default();
        Ok(match readable {
            true => super::super::value_ref::rebuild(tape.read(text).expect("read twice")),
            false => None,
        })
    }

    #[test]
    fn a_string_is_compared_in_place_or_decoded_when_it_holds_an_escape() {
        let mut tape = Tape::default();
        let v = tape
            .read(r#"{"a":"power-on","b":"po\u0077er-on","c":7,"d":""}"#)
            .expect("readable");
        let is = |k: &str, s: &str| v.get(k).is_some_and(|x| x.str_is(s));
        assert!(is("a", "power-on") && is("b", "power-on") && is("d", ""));
        assert!(!is("a", "power") && !is("a", "power-on ") && !is("b", "po\\u0077er-on"));
        assert!(!is("c", "7"));
    }

    #[test]
    fn values_are_what_serde_json_builds_and_syntax_errors_are_refused_alike() {
        let long = "ab\\\"c".repeat(40);
        let cases = [
            "null",
            " true ",
            "false",
            "0",
            "-0",
            "7",
            "18446744073709551615",
            "18446744073709551616",
            "-9223372036854775808",
            "-9223372036854775809",
            "1.5",
            "-1.25e-3",
            "1E+2",
            "12345678901234567890123",
            "\"\"",
            "\"plain text, long enough to take the word loop: 0123456789abcdef\"",
            "\"caf\u{e9} \u{1F600} \u{65e5}\u{672c}\"",
            "\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"",
            "\"\\u0041\\u00e9\\u65e5\\ud83d\\ude00\"",
            // An escaped backslash before a `u`: no `\u` escape, nothing to check.
            "\"\\\\u0041 \\\\ud800\"",
            &format!("\"{long}\""),
            "[]",
            "{}",
            "[1,[2,[3]],{\"a\":{}}]",
            "{\"a\":1,\"b\":[true,null],\"a\":2}",
            "{\"\\u0061\":\"x\"}",
            " { \"k\" : [ 1 , 2 ] } ",
            // Refused by both.
            "",
            " ",
            "nul",
            "tru",
            "01",
            "-",
            "1.",
            ".5",
            "1e",
            "+1",
            "0x10",
            "NaN",
            "[1,]",
            "[,1]",
            "{\"a\"}",
            "{\"a\":}",
            "{\"a\":1,}",
            "{a:1}",
            "{\"a\":1 \"b\":2}",
            "[1 2]",
            "\"unterminated",
            "\"bad \\x escape\"",
            "\"short \\u12\"",
            "\"tab\tinside\"",
            "\"newline\ninside\"",
            "[1]]",
            "{}{}",
            "1 2",
            "'a'",
        ];
        for text in cases {
            let theirs = serde_json::from_str::<Value>(text).ok();
            let ours = read(text);
            match theirs {
                Some(v) => assert_eq!(ours, Ok(Some(v)), "{text:?}"),
                None => assert_eq!(ours, Err(Fault::Syntax), "{text:?}"),
            }
        }
    }

    #[test]
    fn well_formed_values_no_value_holds_are_unreadable_not_syntax_errors() {
        for text in [
            "1e999",
            "-1e999",
            "\"\\ud800\"",
            "\"\\udc00x\"",
            "\"\\ud800\\u0041\"",
            "[1,1e999,3]",
            "{\"a\":{\"b\":\"\\ud83d\"}}",
            "{\"\\ud800\":1}",
        ] {
            assert_eq!(read(text), Ok(None), "{text:?}");
            // Checked and stepped over all the same.
            let mut r = Reader::new(text, None);
            assert_eq!(r.skip(0, &mut Tape::default()), Ok(()), "{text:?}");
            assert_eq!(r.end(), Ok(()), "{text:?}");
        }
    }

    #[test]
    fn strings_are_scanned_right_at_every_offset_from_a_word() {
        // Every special byte at every offset of a long string: a quote ends it, an escape is
        // decoded, a control character is refused, non-ASCII is kept whole.
        for at in 0..40 {
            for (special, want) in [
                ("\\\"", Some("\"")),
                ("\\n", Some("\n")),
                ("\u{e9}", Some("\u{e9}")),
                ("\u{1}", None),
            ] {
                let text = format!("\"{}{special}{}\"", "x".repeat(at), "y".repeat(41 - at));
                let expect = want.map(|w| {
                    Value::String(format!("{}{w}{}", "x".repeat(at), "y".repeat(41 - at)))
                });
                match expect {
                    Some(v) => assert_eq!(read(&text), Ok(Some(v)), "{text:?}"),
                    None => assert_eq!(read(&text), Err(Fault::Syntax), "{text:?}"),
                }
            }
        }
        // A string's raw text and whether it needs decoding.
        let mut r = Reader::new("\"a\\tb\" \"ab\"", None);
        let s = r.string().unwrap();
        assert_eq!((s.quoted, s.escaped), ("\"a\\tb\"", true));
        r.peek();
        let s = r.string().unwrap();
        assert!(matches!(s.decode(), Some(Cow::Borrowed("ab"))));
    }

    #[test]
    fn nesting_and_values_are_bounded_and_charged_before_they_are_built() {
        let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        assert!(read(&deep(MAX_NESTING)).is_ok());
        assert_eq!(read(&deep(MAX_NESTING + 1)), Err(Fault::Deep));
        // A deep body that is also malformed stops at the nesting, not past the stack.
        assert_eq!(read(&"[".repeat(100_000)), Err(Fault::Deep));
        let many = |n: usize| format!("[{}]", vec!["0"; n].join(","));
        assert!(read(&many(MAX_VALUES - 1)).is_ok());
        assert_eq!(read(&many(MAX_VALUES)), Err(Fault::Many));
        // A long string is one value, whatever its commas.
        assert!(read(&format!("[\"{}\"]", ",".repeat(100_000))).is_ok());

        let pool = irix7_kmem::budget::Pool::new("parse", 4 * VALUES_PER_CHARGE * COST_PER_VALUE);
        let body = many(3 * VALUES_PER_CHARGE);
        let mut r = Reader::new(&body, pool.take(0));
        assert!(r.tape(0, &mut Tape::default()).is_ok());
        assert_eq!(
            r.into_lease().map(|l| l.bytes()),
            Some(4 * VALUES_PER_CHARGE * COST_PER_VALUE)
        );
        let body = many(4 * VALUES_PER_CHARGE);
        let mut r = Reader::new(&body, pool.take(0));
        assert_eq!(r.tape(0, &mut Tape::default()), Err(Fault::OverBudget));
    }
}
