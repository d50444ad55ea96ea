//! A `serde_json::Value` written straight onto a byte buffer, in the bytes serde_json writes:
//! the answers the protocol layers build as values (listings, errors, notifications). A
//! tool's structured result is written value by value instead ([`super::ObjectWriter`]).

use super::escape::escape_str;
use alloc::vec::Vec;
use core::fmt::{self, Write as _};
use serde_json::Value;

/// Serialises a value straight onto `out`, in the bytes serde_json writes: strings go through
/// the word-at-a-time escaper, which serde_json's byte-at-a-time one is not. Recursion follows
/// the value's nesting, as serde_json's does; parsed values are limited to
/// [`super::MAX_NESTING`].
pub(crate) fn write_value(out: &mut Vec<u8>, v: &Value) {
    match v {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => {
            // Writing to a `Vec` cannot fail.
            let _ = write!(Appender(out), "{n}");
        }
        Value::String(text) => write_str(out, text),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_value(out, item);
            }
            out.push(b']');
        }
        Value::Object(members) => {
            out.push(b'{');
            for (i, (key, value)) in members.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_str(out, key);
                out.push(b':');
                write_value(out, value);
            }
            out.push(b'}');
        }
    }
}

/// Strings from this long up get room made for them (see [`write_str`]).
const LONG_STR: usize = 4096;

/// A JSON string. Room for a long one, its quotes and the brackets that close around it is
/// made first: appended to a buffer grown to fit it exactly, it would make the buffer move
/// again for its closing quote (a 60 KB string did, 60 KB copied). Short strings keep
/// the buffer's usual growth (the listings kept from init would take 3 KB more otherwise).
fn write_str(out: &mut Vec<u8>, text: &str) {
    if text.len() >= LONG_STR {
        out.reserve(text.len() + 6);
    }
    out.push(b'"');
    escape_str(text, out);
    out.push(b'"');
}

/// A `fmt::Write` that appends to a byte buffer.
struct Appender<'a>(&'a mut Vec<u8>);

impl fmt::Write for Appender<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
        }
    }
}
