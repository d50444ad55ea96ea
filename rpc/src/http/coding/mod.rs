//! Content coding `deflate` (RFC 9110 §8.4.1.2: the zlib format) for the big answers whose
//! bulk never changes: the bulk is compressed once, ahead of time ([`Packed`]), and a handler
//! whose answer splices it in ([`Splice`]) keeps the packed form beside the answer. [`code`],
//! at the handler's boundary, then sends it coded when the request's `Accept-Encoding`
//! prefers `deflate`, with the answer's own bytes as stored blocks around the packed ones:
//! nothing is compressed, and the bulk is not read, per request. The HTTP message itself
//! knows nothing of coding.

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
/// can be coded: `packed` holds its spliced bytes, and it has no header lines of its own (an
/// answer that carries the bulk inside another, a batch, is no longer spliced). Any other
/// answer is returned as it is.
pub fn code(mut resp: Response, packed: Option<Packed>, accept: Option<&str>) -> Response {
    let Some(packed) = packed else {
        return resp;
    };
    let Body::Spliced(own, splice) = &resp.body else {
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
    };
    Body::Spliced(own, splice)
}
