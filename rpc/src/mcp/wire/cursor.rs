//! Opaque pagination cursors: the offset of the next page, base64url-wrapped so clients treat
//! it as a token. A cursor that does not decode to an offset within the list is -32602.

use crate::json::{Kind, ValueRef};
use crate::jsonrpc::RpcError;
use alloc::format;
use alloc::string::String;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// The cursor of `offset`: URL-safe base64 without padding (the module's one encoder, with
/// the URL-safe alphabet's two characters swapped in).
fn encode(offset: usize) -> String {
    let mut b = crate::mcp::wire::base64::base64(format!("o{offset}").as_bytes()).into_bytes();
    b.retain(|c| *c != b'=');
    for c in &mut b {
        *c = match *c {
            b'+' => b'-',
            b'/' => b'_',
            c => c,
        };
    }
    String::from_utf8(b).unwrap_or_default()
}

fn decode(cursor: &str) -> Option<usize> {
    if cursor.len() > 32 {
        return None;
    }
    let bytes = URL_SAFE_NO_PAD.decode(cursor).ok()?;
    let text = core::str::from_utf8(&bytes).ok()?;
    text.strip_prefix('o')?.parse().ok()
}

/// The page of `items` that `params.cursor` asks for, and the cursor of the next page.
pub fn page<'a, T>(
    items: &'a [T],
    params: ValueRef<'_>,
    page_size: usize,
) -> Result<(&'a [T], Option<String>), RpcError> {
    let start = match params.get("cursor").filter(|c| !c.is_null()) {
        None => 0,
        Some(c) if c.kind() == Kind::String => match c.as_str().and_then(|c| decode(&c)) {
            Some(n) if n <= items.len() => n,
            _ => return Err(RpcError::invalid_params("Invalid params: unknown cursor")),
        },
        Some(_) => {
            return Err(RpcError::invalid_params(
                "Invalid params: cursor must be a string",
            ));
        }
    };
    let size = page_size.max(1);
    let end = start.saturating_add(size).min(items.len());
    let next = (end < items.len()).then(|| encode(end));
    Ok((items.get(start..end).unwrap_or(&[]), next))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn cursors_are_url_safe_base64_without_padding() {
        for offset in [0, 7, 48, 1000, 123_456, usize::MAX] {
            let want = URL_SAFE_NO_PAD.encode(alloc::format!("o{offset}"));
            assert_eq!(encode(offset), want);
            assert_eq!(decode(&want), Some(offset));
        }
        assert_eq!(encode(63), "bzYz");
        assert_eq!(encode(7), "bzc", "no padding");
    }

    /// The page `params` (JSON text) asks for.
    fn page_of<'a>(items: &'a [i32], params: &serde_json::Value) -> PageOf<'a> {
        let text = alloc::string::ToString::to_string(params);
        let mut tape = crate::json::Tape::default();
        page(items, tape.read(&text).unwrap(), 2)
    }

    type PageOf<'a> = Result<(&'a [i32], Option<String>), RpcError>;

    #[test]
    fn walks_pages_and_rejects_forged_cursors() {
        let items = [1, 2, 3, 4, 5];
        let (p1, c1) = page(&items, ValueRef::empty_object(), 2).unwrap();
        assert_eq!(p1, &[1, 2]);
        let c1 = c1.unwrap();
        let (p2, c2) = page_of(&items, &json!({"cursor": c1})).unwrap();
        assert_eq!(p2, &[3, 4]);
        let (p3, c3) = page_of(&items, &json!({"cursor": c2.unwrap()})).unwrap();
        assert_eq!((p3, c3), (&[5][..], None));
        // A null cursor asks for the first page.
        let (p2, _) = page_of(&items, &json!({"cursor": null})).unwrap();
        assert_eq!(p2, &[1, 2]);
        for bad in [
            json!({"cursor": "nope"}),
            json!({"cursor": encode(6)}),
            json!({"cursor": 3}),
        ] {
            assert_eq!(page_of(&items, &bad).unwrap_err().code, -32602);
        }
    }
}
