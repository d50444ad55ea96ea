//! The argument summary of an audit line and a consent question: short, free of data, and
//! naming what a call acts on, however a client writes it (padded paths, long strings,
//! characters that reorder or break a line).

use crate::json::{Kind, ValueRef};
use alloc::string::String;
use core::fmt::Write;

/// Bytes of a string shown whole (escaped); a longer one is shown as its head and tail.
pub const MAX_SHOWN_STRING: usize = 64;
/// Bytes of a long string's head and tail as shown: the tail is the longer, as the end of a
/// path names what it is.
const SHOWN_HEAD: usize = 24;
const SHOWN_TAIL: usize = 36;
/// Bytes of one argument summary; the rest is cut at an item boundary and marked `…`.
pub const MAX_SUMMARY: usize = 256;

/// Argument names whose values are data, never shown: only their length is.
const DATA_KEYS: &[&str] = &[
    "data", "content", "contents", "text", "bytes", "base64", "payload", "body", "value", "values",
    "token", "password", "secret", "key",
];

/// A short, data-free summary of a call's arguments: `{path="/etc/motd",offset=0,data=<5
/// bytes>}`. Path arguments (`path`, `*_path`) come first and are shown normalised as the
/// filesystem reads them ([`normalise_path`]: `/tmp/./../etc//passwd` is `/etc/passwd`), so
/// padding cannot push the target out of the line. Numbers and booleans are shown; strings
/// are shown quoted and escaped ([`shown_string`]: control, format and separator characters
/// as `\u{..}`, so a line cannot be reordered by U+202E or broken by U+2028), the head and
/// tail of a long one with `…` between; arguments named like data ([`DATA_KEYS`]: `data`,
/// `content`, `token`…) by their length only; arrays and objects by their size. The whole is
/// cut at [`MAX_SUMMARY`] bytes.
pub fn summarise_args(args: ValueRef<'_>) -> String {
    let mut out = String::from("{");
    let mut first = true;
    // Path arguments, then the others.
    for paths in [true, false] {
        for (k, v) in args.members() {
            let k = k.decode().unwrap_or_default();
            let path = named(&k, "path");
            if path != paths {
                continue;
            }
            let item = summarise_arg(&k, v, path, first);
            if out.len() + item.len() + 2 > MAX_SUMMARY {
                out.push_str(",…}");
                return out;
            }
            out.push_str(&item);
            first = false;
        }
    }
    out.push('}');
    out
}

/// One argument's `key=value`, after a comma unless it is the `first`.
fn summarise_arg(k: &str, v: ValueRef<'_>, path: bool, first: bool) -> String {
    let mut item = String::new();
    let key = if valid_key(k) { k } else { "<key>" };
    let _ = write!(item, "{}{key}=", if first { "" } else { "," });
    let data_key = DATA_KEYS.iter().any(|d| named(k, d));
    match v.kind() {
        // A number as it was written: digits, sign, point and exponent only.
        Kind::Null | Kind::Bool => item.push_str(v.raw()),
        Kind::Number if !data_key => item.push_str(v.raw()),
        Kind::Number => item.push_str("<number>"),
        Kind::String => match v.as_str() {
            Some(s) if data_key => {
                let _ = write!(item, "<{} bytes>", s.len());
            }
            Some(s) if path => item.push_str(&shown_string(&normalise_path(&s))),
            Some(s) => item.push_str(&shown_string(&s)),
            None => item.push_str("<unreadable>"),
        },
        Kind::Array => {
            let _ = write!(item, "<{} items>", v.items().count());
        }
        Kind::Object => {
            let _ = write!(item, "<{} keys>", v.members().count());
        }
    }
    item
}

/// `path` resolved on its text as the filesystem resolves it before symlinks: empty and `.`
/// components dropped, `..` taking the one before it (none above the root), relative paths
/// starting at the root; a trailing `/` (which asks for a directory) kept.
pub fn normalise_path(path: &str) -> String {
    let mut parts: alloc::vec::Vec<&str> = alloc::vec::Vec::new();
    for c in path.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            _ => parts.push(c),
        }
    }
    let mut out = String::with_capacity(path.len() + 1);
    for c in &parts {
        out.push('/');
        out.push_str(c);
    }
    if out.is_empty() || (path.ends_with('/') && path.len() > 1) {
        out.push('/');
    }
    out
}

/// A client's string as an audit line shows it: quoted, with `"` and `\` escaped and every
/// character that could hide or rearrange text (control characters, Unicode format characters
/// such as the bidi overrides, line and paragraph separators) written `\u{..}`. Longer than
/// [`MAX_SHOWN_STRING`] bytes so written, its first [`SHOWN_HEAD`] and last [`SHOWN_TAIL`]
/// bytes with `…` between.
pub fn shown_string(s: &str) -> String {
    let total: usize = s.chars().map(escaped_len).sum();
    let mut out = String::with_capacity(total.min(MAX_SHOWN_STRING) + 8);
    out.push('"');
    if total <= MAX_SHOWN_STRING {
        s.chars().for_each(|c| push_escaped(c, &mut out));
    } else {
        let mut head = 0;
        let mut head_end = 0;
        for (i, c) in s.char_indices() {
            if head + escaped_len(c) > SHOWN_HEAD {
                break;
            }
            head += escaped_len(c);
            head_end = i + c.len_utf8();
        }
        let mut tail = 0;
        let mut tail_start = s.len();
        for (i, c) in s.char_indices().rev() {
            if tail + escaped_len(c) > SHOWN_TAIL || i < head_end {
                break;
            }
            tail += escaped_len(c);
            tail_start = i;
        }
        s.get(..head_end)
            .unwrap_or("")
            .chars()
            .for_each(|c| push_escaped(c, &mut out));
        out.push('…');
        s.get(tail_start..)
            .unwrap_or("")
            .chars()
            .for_each(|c| push_escaped(c, &mut out));
    }
    out.push('"');
    out
}

/// Whether `c` is written escaped: a control character (Cc), a format character (Cf: soft
/// hyphen, bidi marks, embeddings, overrides and isolates, zero-width characters, the BOM,
/// tags…), or a line or paragraph separator (Zl, Zp).
fn hidden(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{ad}'
                | '\u{600}'..='\u{605}'
                | '\u{61c}'
                | '\u{6dd}'
                | '\u{70f}'
                | '\u{890}'..='\u{891}'
                | '\u{8e2}'
                | '\u{180e}'
                | '\u{200b}'..='\u{200f}'
                | '\u{2028}'..='\u{202e}'
                | '\u{2060}'..='\u{2064}'
                | '\u{2066}'..='\u{206f}'
                | '\u{feff}'
                | '\u{fff9}'..='\u{fffb}'
                | '\u{110bd}'
                | '\u{110cd}'
                | '\u{13430}'..='\u{1343f}'
                | '\u{1bca0}'..='\u{1bca3}'
                | '\u{1d173}'..='\u{1d17a}'
                | '\u{e0001}'
                | '\u{e0020}'..='\u{e007f}'
        )
}

fn escaped_len(c: char) -> usize {
    match c {
        '"' | '\\' => 2,
        c if hidden(c) => 4 + hex_digits(c),
        c => c.len_utf8(),
    }
}

fn hex_digits(c: char) -> usize {
    let v = u32::from(c);
    (1..8).find(|&n| v >> (4 * n) == 0).unwrap_or(8)
}

fn push_escaped(c: char, out: &mut String) {
    match c {
        '"' | '\\' => {
            out.push('\\');
            out.push(c);
        }
        c if hidden(c) => {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        }
        c => out.push(c),
    }
}

/// Whether argument `k` is `word` or ends with `_<word>` (ASCII case ignored).
fn named(k: &str, word: &str) -> bool {
    let (k, d) = (k.as_bytes(), word.as_bytes());
    let Some(at) = k.len().checked_sub(d.len()) else {
        return false;
    };
    k[at..].eq_ignore_ascii_case(d) && (at == 0 || k[at - 1] == b'_')
}

/// An argument name worth printing: short and of name characters (a client chooses it).
fn valid_key(k: &str) -> bool {
    (1..=32).contains(&k.len())
        && k.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;
    use alloc::string::ToString;
    use serde_json::json;

    fn summary(v: serde_json::Value) -> String {
        let text = v.to_string();
        summarise_args(crate::json::Tape::default().read(&text).unwrap())
    }

    #[test]
    fn summaries_keep_paths_and_numbers_and_hide_data() {
        let s = summary(json!({
            "path": "/tmp/notes.txt",
            "offset": 4096,
            "append": true,
            "data": "c2VjcmV0IGZpbGUgZGF0YQ==",
            "text": "hello",
            "mcp_token": "hunter2hunter2hunter2",
        }));
        assert!(s.contains("path=\"/tmp/notes.txt\""), "{s}");
        assert!(s.contains("offset=4096"), "{s}");
        assert!(s.contains("append=true"), "{s}");
        assert!(s.contains("data=<24 bytes>"), "{s}");
        assert!(s.contains("text=<5 bytes>"), "{s}");
        assert!(s.contains("mcp_token=<21 bytes>"), "{s}");
        for secret in ["c2Vj", "hello", "hunter2"] {
            assert!(!s.contains(secret), "{s}");
        }
    }

    #[test]
    fn long_strings_nested_values_and_odd_keys_are_summarised() {
        let long = format!("{}{}", "x".repeat(MAX_SHOWN_STRING), "-the-end");
        let s = summary(json!({
            "name": long,
            "list": [1, 2, 3],
            "obj": {"a": 1},
            "line": "a\nb",
            "quoted": "a\"b\\",
            "Auth_Token": "xy",
            "tokens": "ab",
            "we ird\"key": 1,
        }));
        let shown = format!(
            "name=\"{}…{}-the-end\"",
            "x".repeat(SHOWN_HEAD),
            "x".repeat(28)
        );
        assert!(s.contains(&shown), "{s}");
        assert!(s.contains("list=<3 items>"), "{s}");
        assert!(s.contains("obj=<1 keys>"), "{s}");
        assert!(s.contains("line=\"a\\u{a}b\""), "{s}");
        assert!(s.contains("quoted=\"a\\\"b\\\\\""), "{s}");
        assert!(s.contains("Auth_Token=<2 bytes>"), "{s}");
        assert!(s.contains("tokens=\"ab\""), "{s}");
        assert!(s.contains("<key>=1"), "{s}");
    }

    #[test]
    fn paths_are_shown_normalised_first_and_whole_at_the_end() {
        let padded = format!("{}/../etc/passwd", "/.".repeat(40));
        let s = summary(json!({"recursive": true, "path": padded}));
        assert_eq!(s, "{path=\"/etc/passwd\",recursive=true}");
        for (raw, want) in [
            ("/", "/"),
            ("", "/"),
            ("//", "/"),
            ("/tmp//x/./y/", "/tmp/x/y/"),
            ("tmp/x", "/tmp/x"),
            ("/tmp/x/..", "/tmp"),
            ("/../../etc", "/etc"),
            ("/a/b/../../c/./d/..", "/c"),
            ("/tmp/...", "/tmp/..."),
        ] {
            assert_eq!(normalise_path(raw), want, "{raw:?}");
        }
        // A long path keeps its end, where the name of what is acted on is.
        let deep = format!("/tmp/{}/victim.txt", "d/".repeat(60));
        let s = summary(json!({"dest_path": deep, "path": "/x"}));
        let want = format!(
            "{{dest_path=\"/tmp{}…{}victim.txt\",path=\"/x\"}}",
            "/d".repeat(10),
            "d/".repeat(13)
        );
        assert_eq!(s, want);
        // Many decoy arguments before it do not push a path out of the line.
        let mut m = serde_json::Map::new();
        for i in 0..30 {
            m.insert(format!("decoy{i:02}"), json!("/tmp/harmless/file"));
        }
        m.insert("path".into(), json!("/boot/unix"));
        let s = summary(serde_json::Value::Object(m));
        assert!(s.starts_with("{path=\"/boot/unix\",decoy00="), "{s}");
    }

    #[test]
    fn format_and_separator_characters_are_escaped_like_control_characters() {
        let s = summary(json!({
            "path": "/tmp/\u{202e}txt.exe",
            "name": "a\u{2028}b\u{2029}c\u{200b}d\u{feff}e\u{e0041}f\u{7}g",
            "plain": "caf\u{e9} \u{65e5}\u{672c}",
        }));
        assert!(s.contains("path=\"/tmp/\\u{202e}txt.exe\""), "{s}");
        assert!(
            s.contains("name=\"a\\u{2028}b\\u{2029}c\\u{200b}d\\u{feff}e\\u{e0041}f\\u{7}g\""),
            "{s}"
        );
        assert!(s.contains("plain=\"caf\u{e9} \u{65e5}\u{672c}\""), "{s}");
        for c in [
            '\u{202e}', '\u{2028}', '\u{2029}', '\u{200b}', '\u{feff}', '\u{7}',
        ] {
            assert!(!s.contains(c), "{c:?} in {s}");
        }
        // Escapes count against the bound: a long string of them is cut between escapes.
        let s = shown_string(&"\u{202e}".repeat(100));
        assert!(s.len() <= SHOWN_HEAD + SHOWN_TAIL + 5, "{s}");
        assert!(
            s.starts_with("\"\\u{202e}\\u{202e}\\u{202e}…\\u{202e}"),
            "{s}"
        );
    }
}
