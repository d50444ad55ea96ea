//! Base64 (standard alphabet, padded) of binary content: whole ([`base64`]) or arriving in
//! pieces ([`Base64Stream`]), encoded straight into the output.
//!
//! Why our own encoder beside the `base64` crate: encoding is the hot path (`fs.read` and the
//! screen captures stream megabytes through it), and here twelve bytes become sixteen
//! characters a step, two characters a lookup in a [`PairTable`] and a word stored at a time
//! (`docs/bench.md`). Decoding is what the crate does: client input only (cursors, header
//! values in the `=?base64?…?=` form, `fs.write`'s base64 content), checked as a decoder must
//! (alphabet, padding, trailing bits), where a hand-made decoder would only add risk. The
//! crate's encoder is not linked.

use crate::json::TextEscaper;
use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;

/// Base64 (standard, padded) of binary arriving in pieces, encoded straight into the output:
/// only the up to two bytes of an incomplete group are held back between pieces.
#[derive(Debug, Default)]
pub(crate) struct Base64Stream {
    carry: [u8; 2],
    carried: usize,
    /// Bytes pushed so far.
    seen: usize,
    /// The shared pair table ([`PairTable::shared`]), taken once [`PAIRS_FROM`] bytes have
    /// come (`None` before, or while the heap cannot spare it: then characters are looked up
    /// singly).
    pairs: Option<&'static PairTable>,
}

/// Input from which building the pair table (4,096 entries, ~40,000 instructions) pays for
/// itself: it saves more than one instruction per character.
const PAIRS_FROM: usize = 4096;

impl Base64Stream {
    pub(crate) fn push(&mut self, input: &[u8], out: &mut Vec<u8>) {
        let mut input = input;
        if self.seen < PAIRS_FROM && self.seen + input.len() >= PAIRS_FROM {
            self.pairs = PairTable::shared();
        }
        self.seen = self.seen.saturating_add(input.len());
        if self.carried > 0 {
            let mut group = [0u8; 3];
            group[..self.carried].copy_from_slice(&self.carry[..self.carried]);
            let take = (3 - self.carried).min(input.len());
            group[self.carried..self.carried + take].copy_from_slice(&input[..take]);
            input = &input[take..];
            if self.carried + take < 3 {
                self.carried += take;
                self.carry.copy_from_slice(&group[..2]);
                return;
            }
            self.carried = 0;
            encode_into(&group, out, None);
        }
        let whole = input.len() / 3 * 3;
        let (now, later) = input.split_at(whole);
        encode_into(now, out, self.pairs);
        self.carry[..later.len()].copy_from_slice(later);
        self.carried = later.len();
    }

    /// The most input whose characters fit in `room` bytes.
    pub(crate) fn fits(&self, room: usize) -> usize {
        (room / 4 * 3).saturating_sub(self.carried)
    }

    pub(crate) fn finish(&mut self, out: &mut Vec<u8>) {
        let rest = self.carry;
        encode_into(&rest[..self.carried], out, None);
        self.carried = 0;
    }
}

/// The four 24-bit groups of twelve bytes, each in the low bits of a word.
#[inline(always)]
fn groups(w: &[u8; 12]) -> [u32; 4] {
    // Whole-word loads (from byte arrays, not assembled from bytes, which the compiler keeps
    // as byte loads on a machine without fast unaligned access).
    let word = |i: usize| u32::from_be_bytes(w[i..i + 4].try_into().unwrap_or([0; 4]));
    let (a, b, d) = (word(0), word(4), word(8));
    [a >> 8, a << 16 | b >> 16, b << 8 | d >> 24, d]
}

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// How a content block streamed into a JSON string is written: as escaped text, or as base64
/// (a tool's streamed content and a streamed resource alike).
pub(crate) enum Enc {
    Text(TextEscaper),
    B64(Base64Stream),
}

/// The two characters of every 12-bit value, the first in the high byte (8 KiB): with it a
/// 24-bit group's four characters are two lookups and one word store, instead of four
/// lookups and four byte stores.
#[derive(Debug)]
pub(crate) struct PairTable(Box<[u16; 4096]>);

impl PairTable {
    /// A new table; `None` when the heap cannot spare its 8 KiB.
    fn new() -> Option<PairTable> {
        let mut t = Vec::new();
        t.try_reserve_exact(4096).ok()?;
        for hi in ALPHABET {
            for lo in ALPHABET {
                t.push(u16::from(*hi) << 8 | u16::from(*lo));
            }
        }
        t.into_boxed_slice().try_into().ok().map(PairTable)
    }

    /// The one table every stream shares: built the first time a stream is long enough to
    /// need it and kept from then on, so a thousand streams cost one table. `None` while the
    /// heap cannot spare it (the next long stream tries again).
    ///
    /// A `spin::Once` rather than a table the server owns and hands to each stream: the table
    /// never changes once built and is the same for every server, so an owner would only be
    /// threaded from the server through each tool call to its stream, and a stream would hold
    /// a counted reference where it now holds a plain one.
    fn shared() -> Option<&'static PairTable> {
        static TABLE: spin::Once<PairTable> = spin::Once::new();
        TABLE.try_call_once(|| PairTable::new().ok_or(())).ok()
    }
}

/// A 24-bit group's four characters as one word, from a [`PairTable`]'s pairs.
#[inline(always)]
fn quad(pairs: &[u16; 4096], g: u32) -> [u8; 4] {
    let p = |v: u32| u32::from(pairs[(v & 0xFFF) as usize]);
    (p(g >> 12) << 16 | p(g)).to_be_bytes()
}

/// The padded base64 (standard alphabet) of `data`: every encoder of the module uses this
/// one, so the `base64` crate's encoder is not in the image.
pub fn base64(data: &[u8]) -> String {
    let mut out = Vec::with_capacity(data.len().div_ceil(3) * 4);
    encode_into(data, &mut out, None);
    // Base64 is ASCII.
    String::from_utf8(out).unwrap_or_default()
}

/// Appends the padded base64 of `data` to `out`, a stack buffer at a time: safe code cannot
/// write into the vector's spare capacity, and filling a stack buffer then copying it costs
/// what zeroing the room first would, without the zeroing's many small appends.
pub(crate) fn encode_into(data: &[u8], out: &mut Vec<u8>, pairs: Option<&PairTable>) {
    const IN: usize = 48 * 12;
    /// Word-aligned, so that the characters are stored a word at a time.
    #[repr(align(4))]
    struct Buf([u8; IN / 3 * 4]);
    let mut buf = Buf([0; IN / 3 * 4]);
    for piece in data.chunks(IN) {
        let n = encode_slice(piece, &mut buf.0, pairs);
        out.extend_from_slice(&buf.0[..n]);
    }
}

/// Writes the padded base64 of `data` at the start of `out` and returns its length; `out`
/// holds at least `data.len().div_ceil(3) * 4` bytes (less is written when it does not).
/// Twelve bytes (three big-endian words) become sixteen characters per step, two characters
/// a lookup when `pairs` is given: the loops index arrays over a counted range, which the
/// size-optimised image keeps inline.
fn encode_slice(data: &[u8], out: &mut [u8], pairs: Option<&PairTable>) -> usize {
    let c = |v: u32| ALPHABET[(v & 63) as usize];
    let (words, rest) = data.as_chunks::<12>();
    let (outs, _) = out.as_chunks_mut::<16>();
    let steps = words.len().min(outs.len());
    match pairs {
        Some(PairTable(t)) => {
            let t: &[u16; 4096] = t;
            for i in 0..steps {
                let [g0, g1, g2, g3] = groups(&words[i]);
                let o = &mut outs[i];
                o[0..4].copy_from_slice(&quad(t, g0));
                o[4..8].copy_from_slice(&quad(t, g1));
                o[8..12].copy_from_slice(&quad(t, g2));
                o[12..16].copy_from_slice(&quad(t, g3));
            }
        }
        None => {
            for i in 0..steps {
                let [g0, g1, g2, g3] = groups(&words[i]);
                outs[i] = [
                    c(g0 >> 18),
                    c(g0 >> 12),
                    c(g0 >> 6),
                    c(g0),
                    c(g1 >> 18),
                    c(g1 >> 12),
                    c(g1 >> 6),
                    c(g1),
                    c(g2 >> 18),
                    c(g2 >> 12),
                    c(g2 >> 6),
                    c(g2),
                    c(g3 >> 18),
                    c(g3 >> 12),
                    c(g3 >> 6),
                    c(g3),
                ];
            }
        }
    }
    let mut n = steps * 16;
    let rest = if steps == words.len() {
        rest
    } else {
        &data[steps * 12..]
    };
    for group in rest.chunks(3) {
        let Some(o) = out.get_mut(n..n + 4) else {
            break;
        };
        let b = |i: usize| u32::from(group.get(i).copied().unwrap_or(0));
        let g = b(0) << 16 | b(1) << 8 | b(2);
        o.copy_from_slice(&[c(g >> 18), c(g >> 12), c(g >> 6), c(g)]);
        // One byte leaves two characters unused, two bytes leave one.
        for p in &mut o[group.len() + 1..] {
            *p = b'=';
        }
        n += 4;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::String;
    use base64::Engine;
    use base64::engine::general_purpose::STANDARD;

    #[test]
    fn base64_in_pieces_matches_whole() {
        let data: Vec<u8> = (0..=255u8).cycle().take(10_000).collect();
        let want = STANDARD.encode(&data);
        for piece in [1, 2, 3, 4, 7, 999, 4096, 5000] {
            let mut s = Base64Stream::default();
            let mut out = Vec::new();
            for c in data.chunks(piece) {
                s.push(c, &mut out);
            }
            s.finish(&mut out);
            assert_eq!(String::from_utf8(out).unwrap(), want);
        }
    }

    #[test]
    fn every_length_matches_the_base64_crate() {
        let data: Vec<u8> = (0..2000u32).map(|i| (i * 37 + i / 7) as u8).collect();
        for len in (0..40).chain([575, 576, 577, 1151, 1152, 1153, 2000]) {
            let want = STANDARD.encode(&data[..len]);
            for pairs in [None, PairTable::new()] {
                let mut out = Vec::new();
                encode_into(&data[..len], &mut out, pairs.as_ref());
                assert_eq!(String::from_utf8(out).unwrap(), want, "{len}");
            }
        }
    }

    #[test]
    fn long_streams_share_one_pair_table() {
        let data = [7u8; PAIRS_FROM];
        let (mut a, mut b) = (Base64Stream::default(), Base64Stream::default());
        let mut out = Vec::new();
        a.push(&data, &mut out);
        b.push(&data, &mut out);
        let (ta, tb) = (a.pairs.expect("a's table"), b.pairs.expect("b's table"));
        assert!(core::ptr::eq(ta, tb));
    }

    #[test]
    fn a_short_slice_gets_whole_groups_only() {
        let mut out = [0u8; 10];
        assert_eq!(encode_slice(b"abcdefghi", &mut out, None), 8);
        assert_eq!(&out[..8], b"YWJjZGVm");
    }
}
