//! Marks the text a client writes to the console, so that no client can write a line that
//! passes for the module's own (`irix7-mcp: token generated: …`, `irix7-mcp: audit …`), which
//! the rig, the gateway and a reader of the serial history trust.
//!
//! Every write, and every line in it, starts with [`MARK`]. A line ends at `\n` and at a `\r`
//! not followed by `\n` (a terminal moves to the line's start there). Every other control
//! character (Unicode's Cc: C0, DEL, C1) and the Unicode line and paragraph separators are
//! written as an escape (`\u{1b}`) instead, so neither a terminal (cursor moves, erasures,
//! backspaces over the mark) nor line-splitting code (`\x0b`, `\x0c`, `\x1c`–`\x1e`, `\x85`,
//! U+2028, U+2029) starts a line anywhere else. Tabs pass.
//!
//! Each byte of text makes at most 7 written (a line break and the next line's mark; an escape
//! is at most 6 bytes for each byte of the character it stands for), plus the first mark and a
//! newline.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write as _;

/// What starts every line a client wrote.
pub const MARK: &str = "[mcp] ";

/// `text` as it goes to the console: marked and escaped, and ended with a newline when
/// `newline` asks and the text does not already end with one.
pub fn marked(text: &str, newline: bool) -> Vec<u8> {
    let mut out = String::with_capacity(MARK.len() + text.len() + 1);
    out.push_str(MARK);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\n' | '\t' => out.push(c),
            '\r' => {
                out.push(c);
                if chars.peek().is_some_and(|&n| n != '\n') {
                    out.push_str(MARK);
                }
            }
            c if c.is_control() || matches!(c, '\u{2028}' | '\u{2029}') => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
        if c == '\n' && chars.peek().is_some() {
            out.push_str(MARK);
        }
    }
    if newline && !text.ends_with('\n') {
        out.push('\n');
    }
    out.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(text: &str) -> String {
        String::from_utf8(marked(text, true)).unwrap()
    }

    #[test]
    fn every_line_starts_with_the_mark() {
        assert_eq!(m("hello"), "[mcp] hello\n");
        assert_eq!(m("a\nb\n"), "[mcp] a\n[mcp] b\n");
        assert_eq!(m("\n\n"), "[mcp] \n[mcp] \n");
        assert_eq!(m(""), "[mcp] \n");
        assert_eq!(
            m("ok\nirix7-mcp: token generated: 00112233445566778899aabbccddeeff"),
            "[mcp] ok\n[mcp] irix7-mcp: token generated: 00112233445566778899aabbccddeeff\n"
        );
        // No newline asked: the next write starts with the mark again.
        assert_eq!(marked("raw", false), b"[mcp] raw");
        assert_eq!(marked("a\n", false), b"[mcp] a\n");
    }

    #[test]
    fn a_carriage_return_starts_a_marked_line_unless_a_newline_follows() {
        assert_eq!(m("a\r\nb"), "[mcp] a\r\n[mcp] b\n");
        assert_eq!(
            m("x\ririx7-mcp: audit"),
            "[mcp] x\r[mcp] irix7-mcp: audit\n"
        );
        assert_eq!(m("end\r"), "[mcp] end\r\n");
    }

    #[test]
    fn control_characters_and_line_separators_are_escaped() {
        assert_eq!(m("\x1b[2K\x1b[Gfake"), "[mcp] \\u{1b}[2K\\u{1b}[Gfake\n");
        assert_eq!(m("\x08\x08\x7f"), "[mcp] \\u{8}\\u{8}\\u{7f}\n");
        assert_eq!(
            m("a\x0bb\x0cc\x1cd\u{85}e\u{2028}f\u{2029}g"),
            "[mcp] a\\u{b}b\\u{c}c\\u{1c}d\\u{85}e\\u{2028}f\\u{2029}g\n"
        );
        assert_eq!(m("tab\there é €"), "[mcp] tab\there é €\n");
    }

    /// Whatever the text, every line of what is written (split as `str::lines` and Python's
    /// `splitlines` would, at `\n`, `\r` and the separators escaped above) starts with the
    /// mark, and the output stays within its bound.
    #[test]
    fn no_text_makes_an_unmarked_line() {
        let pieces = [
            "\n",
            "\r",
            "\r\n",
            "\x1b",
            "\x0b",
            "\u{85}",
            "\u{2028}",
            "irix7-mcp: ",
            "x",
            "é",
            "\t",
        ];
        let mut texts = alloc::vec![String::new()];
        for _ in 0..4 {
            let mut next = Vec::new();
            for t in &texts {
                for p in pieces {
                    next.push(alloc::format!("{t}{p}"));
                }
            }
            texts = next;
        }
        for t in &texts {
            for newline in [true, false] {
                let out = marked(t, newline);
                assert!(out.len() <= MARK.len() + 7 * t.len() + 1, "{t:?}");
                let out = String::from_utf8(out).unwrap();
                for line in out.split(['\n', '\r']) {
                    assert!(
                        line.is_empty() || line.starts_with(MARK),
                        "{t:?} made {out:?}"
                    );
                }
                let breaks = |c: char| c.is_control() && !matches!(c, '\n' | '\r' | '\t');
                assert!(!out.contains(breaks), "{t:?} made {out:?}");
                assert!(!out.contains(['\u{2028}', '\u{2029}']), "{t:?}");
            }
        }
    }
}
