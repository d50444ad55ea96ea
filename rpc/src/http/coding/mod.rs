//! Content coding `deflate` (RFC 9110 §8.4.1.2: the zlib format) for the big answers whose
//! bulk never changes: the bulk is compressed once, ahead of time ([`Packed`]), and an
//! answer that can be coded carries it beside its identity bytes (a [`Splice`]'s `packed`).
//! [`code`] then sends it coded when the request's `Accept-Encoding` prefers `deflate`, with
//! the answer's own bytes as stored blocks around the packed ones: nothing is compressed,
//! and the bulk is not read, per request.

mod accept;
pub(crate) mod zlib;

pub use accept::prefers_deflate;
pub use zlib::Packed;
use zlib::frame;

use super::message::{Body, Response, Shared, Splice};

/// The level bulk is deflated at, once a boot, at init (0–10): 1, miniz's fastest matcher.
/// Level 6 packs the listing 28 % smaller (a coded `tools/list` 11,900 instructions cheaper) but
/// costs 7.5 M more instructions of init, which every reset of the edit–deploy loop waits for
/// (docs/bench.md, "Content coding").
pub const LEVEL: u8 = 1;

/// The header line of an identity answer that could have been coded: caches keep the two
/// apart.
pub const VARIES: &str = "Vary: Accept-Encoding\r\n";
/// The header lines of a coded answer.
pub const CODED: &str = "Content-Encoding: deflate\r\nVary: Accept-Encoding\r\n";

/// The answer as the request's `Accept-Encoding` (`accept`) asks for it, if it is one that
/// can be coded (a spliced body with its bulk packed, and no header lines of its own); any
/// other answer is returned as it is.
pub fn code(mut resp: Response, accept: Option<&str>) -> Response {
    let Body::Spliced(own, splice) = &mut resp.body else {
        return resp;
    };
    let Some(packed) = splice.packed.take() else {
        return resp;
    };
    if !resp.headers.lines().is_empty() || packed.len != splice.bytes().len() {
        return resp;
    }
    if !prefers_deflate(accept) {
        resp.headers.set_lines(VARIES);
        return resp;
    }
    let (before, after) = own.split_at(splice.at.min(own.len()));
    resp.body = coded(before, &packed, after);
    resp.headers.set_lines(CODED);
    resp
}

/// The body that inflates to `before`, what `packed` holds, then `after`.
pub fn coded(before: &[u8], packed: &Packed, after: &[u8]) -> Body {
    let (own, at) = frame(before, packed, after);
    let splice = Splice {
        at,
        shared: Shared::Kept(packed.deflate.clone()),
        range: 0..packed.deflate.len(),
        packed: None,
    };
    Body::Spliced(own, splice)
}
