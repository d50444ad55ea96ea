//! The little lexing the layer rules need: comments and literals blanked out, identifiers,
//! lines and inline modules found in what is left.

use std::ops::Range;

/// `text` with comments (doc comments too) and the contents of string and character literals
/// replaced by spaces, newlines kept, so byte offsets and line numbers still match.
pub(super) fn strip_comments_and_strings(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    let mut i = 0;
    while i < b.len() {
        let rest = &b[i..];
        if rest.starts_with(b"//") {
            let end = text[i..].find('\n').map_or(b.len(), |e| i + e);
            blank(&mut out, i, end);
            i = end;
        } else if rest.starts_with(b"/*") {
            let mut depth = 0;
            let mut j = i;
            while j < b.len() {
                if b[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if b[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            blank(&mut out, i, j);
            i = j;
        } else if let Some(hashes) = raw_string_start(b, i) {
            let open = text[i..].find('"').map_or(b.len(), |q| i + q + 1);
            let close = format!("\"{}", "#".repeat(hashes));
            let end = text[open..]
                .find(&close)
                .map_or(b.len(), |e| open + e + close.len());
            blank(&mut out, open, end.saturating_sub(close.len()));
            i = end;
        } else if b[i] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            let j = j.min(b.len());
            blank(&mut out, i + 1, j);
            i = j + 1;
        } else if b[i] == b'\'' {
            i = char_literal_end(text, i).map_or(i + 1, |end| {
                blank(&mut out, i + 1, end - 1);
                end
            });
        } else {
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `Some(number of #)` when a raw string (`r"`, `r#"`, `br"`) starts at `i`.
fn raw_string_start(b: &[u8], i: usize) -> Option<usize> {
    let start = if b[i] == b'b' { i + 1 } else { i };
    if b.get(start) != Some(&b'r') || (i > 0 && is_ident(b[i - 1])) {
        return None;
    }
    let hashes = b[start + 1..].iter().take_while(|c| **c == b'#').count();
    (b.get(start + 1 + hashes) == Some(&b'"')).then_some(hashes)
}

/// The end (past the closing quote) of a character literal starting at `i`; `None` for a
/// lifetime or label.
fn char_literal_end(text: &str, i: usize) -> Option<usize> {
    let rest = &text[i + 1..];
    if let Some(escape) = rest.strip_prefix('\\') {
        // Past the backslash and the escaped character, then to the closing quote.
        let escaped = escape.chars().next()?;
        let from = i + 2 + escaped.len_utf8();
        return text[from..].find('\'').map(|e| from + e + 1);
    }
    let c = rest.chars().next()?;
    rest[c.len_utf8()..]
        .starts_with('\'')
        .then(|| i + 1 + c.len_utf8() + 1)
}

pub(super) fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'$'
}

pub(super) fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

pub(super) fn ident_at(code: &str, i: usize) -> Option<String> {
    let len = code.as_bytes()[i.min(code.len())..]
        .iter()
        .take_while(|c| is_ident(**c))
        .count();
    (len > 0).then(|| code[i..i + len].to_string())
}

pub(super) fn line_of(code: &str, at: usize) -> usize {
    code[..at].bytes().filter(|c| *c == b'\n').count() + 1
}

/// The inline `mod name { … }` blocks: each name and the byte range of its braces.
pub(super) fn inline_modules(code: &str) -> Vec<(String, Range<usize>)> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    for (at, _) in code.match_indices("mod") {
        if at > 0 && is_ident(b[at - 1]) || b.get(at + 3).copied().is_some_and(is_ident) {
            continue;
        }
        let i = skip_ws(b, at + 3);
        let Some(name) = ident_at(code, i) else {
            continue;
        };
        let open = skip_ws(b, i + name.len());
        if b.get(open) != Some(&b'{') {
            continue;
        }
        let mut depth = 0;
        for (k, &c) in b.iter().enumerate().skip(open) {
            match c {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        out.push((name.clone(), open..k));
                        break;
                    }
                }
                _ => {}
            }
        }
    }
    out
}
