//! Keeps the machines' tokens out of everything the agent receives. A module that generated
//! its token prints it on its console, so `serial.read` (or `shell.exec cat`) through the
//! gateway would hand it to the agent: every string of a forwarded result or progress
//! message has each machine token replaced, and so has a piece of one (at least `PIECE_MIN`
//! characters) at a string's start or end, where a console read cut it. What the gateway
//! cannot see into stays as it is: a screenshot of the console shows the token as pixels
//! (docs/gateway.md).

use serde_json::Value;

pub const MARK: &str = "[machine token redacted]";
/// The shortest piece of a token that counts at a string's edge: a random 8 hex digits occur
/// by chance in other text about once in four billion places.
const PIECE_MIN: usize = 8;
/// How deep a result's JSON may nest before strings below are dropped instead of searched.
const DEPTH_MAX: usize = 64;

/// `s` with every token (and token piece at its edges) replaced.
pub fn redact_str(s: &str, tokens: &[String]) -> Option<String> {
    let mut out: Option<String> = None;
    for t in tokens.iter().filter(|t| t.len() >= PIECE_MIN) {
        let cur = out.as_deref().unwrap_or(s);
        let mut next = cur.replace(t.as_str(), MARK);
        // A piece at the end: the token's start, cut off by the end of a read.
        if let Some(k) = (PIECE_MIN..t.len())
            .rev()
            .find(|&k| t.is_char_boundary(k) && next.ends_with(&t[..k]))
        {
            next.truncate(next.len() - k);
            next.push_str(MARK);
        }
        // A piece at the start: the token's end, where the next read went on.
        if let Some(k) = (PIECE_MIN..t.len())
            .rev()
            .find(|&k| t.is_char_boundary(t.len() - k) && next.starts_with(&t[t.len() - k..]))
        {
            next = format!("{MARK}{}", &next[k..]);
        }
        if next != cur {
            out = Some(next);
        }
    }
    out
}

/// Redacts every string (and object key) inside `v`.
pub fn redact_value(v: &mut Value, tokens: &[String]) {
    redact_at(v, tokens, 0)
}

fn redact_at(v: &mut Value, tokens: &[String], depth: usize) {
    if depth > DEPTH_MAX {
        *v = Value::Null;
        return;
    }
    match v {
        Value::String(s) => {
            if let Some(r) = redact_str(s, tokens) {
                *s = r;
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| redact_at(x, tokens, depth + 1)),
        Value::Object(o) => {
            let keys: Vec<String> = o
                .keys()
                .filter(|k| redact_str(k, tokens).is_some())
                .cloned()
                .collect();
            for k in keys {
                if let Some(x) = o.remove(&k) {
                    o.insert(redact_str(&k, tokens).unwrap_or_default(), x);
                }
            }
            o.values_mut().for_each(|x| redact_at(x, tokens, depth + 1));
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: &str = "0123456789abcdef0123456789abcdef";

    #[test]
    fn whole_tokens_and_edge_pieces_go() {
        let toks = vec![T.to_string()];
        let s = format!("irix7-mcp: token generated: {T}\nok");
        let r = redact_str(&s, &toks).unwrap();
        assert!(!r.contains(T) && r.contains(MARK), "{r}");
        let cut = format!("token generated: {}", &T[..20]);
        let r = redact_str(&cut, &toks).unwrap();
        assert!(!r.contains(&T[..20]), "{r}");
        let rest = format!("{}\nnext line", &T[20..]);
        let r = redact_str(&rest, &toks).unwrap();
        assert!(r.starts_with(MARK) && r.ends_with("next line"), "{r}");
        assert_eq!(redact_str("nothing to see", &toks), None);
        assert_eq!(
            redact_str("x 0123456", &toks),
            None,
            "too short a piece stays"
        );
    }

    #[test]
    fn every_string_of_a_result() {
        let toks = vec![T.to_string()];
        let mut v = serde_json::json!({
            "content": [{"type": "text", "text": format!("a {T} b")}],
            "structuredContent": {"text": T, T: 1},
        });
        redact_value(&mut v, &toks);
        assert!(!v.to_string().contains(T), "{v}");
    }
}
