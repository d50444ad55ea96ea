//! zlib streams (RFC 1950) around bytes deflated once, ahead of time: an answer whose bulk
//! never changes sends that bulk as the deflate blocks compressed when it was rendered, and
//! only its few own bytes around them as stored blocks, so a coded answer costs no
//! compression and no pass over the bulk. The stream's Adler-32 is combined from the bulk's,
//! computed once, and those of the own bytes.

use alloc::boxed::Box;
use alloc::rc::Rc;
use alloc::vec::Vec;
use miniz_oxide::deflate::core::{
    CompressorOxide, TDEFLFlush, TDEFLStatus, compress_to_output, create_comp_flags_from_zip_params,
};

/// The zlib header: deflate with a 32 KiB window (`0x78`), default level, no dictionary; the
/// two bytes are a multiple of 31 as RFC 1950 asks.
const HEADER: [u8; 2] = [0x78, 0x9C];
/// Adler-32's modulus: the largest prime below 2^16.
const MOD: u32 = 65_521;
/// The most bytes a stored block holds (its length is 16 bits).
const STORED_MAX: usize = 0xFFFF;
/// A stored block's header: the block-type bits padded to a byte, then LEN and NLEN.
const STORED_HEAD: usize = 5;

/// Bytes deflated once: raw deflate blocks that end on a byte boundary and are not final (a
/// sync flush, not a finish), so own bytes can follow them in the same stream; with the
/// Adler-32 and length of what they hold.
#[derive(Clone, Debug)]
pub struct Packed {
    pub deflate: Rc<Vec<u8>>,
    pub adler: u32,
    /// How many bytes they inflate to.
    pub len: usize,
}

impl Packed {
    /// `bytes` deflated at `level` (0–10); `None` if the compressor refuses.
    pub fn new(bytes: &[u8], level: u8) -> Option<Packed> {
        // Negative window bits: raw deflate, no zlib header or trailer.
        let flags = create_comp_flags_from_zip_params(i32::from(level), -15, 0);
        let mut compressor = Box::new(CompressorOxide::new(flags));
        let mut out = Vec::new();
        let (status, used) = compress_to_output(&mut compressor, bytes, TDEFLFlush::Sync, |b| {
            out.extend_from_slice(b);
            true
        });
        if status != TDEFLStatus::Okay || used != bytes.len() {
            return None;
        }
        out.shrink_to_fit();
        Some(Packed {
            deflate: Rc::new(out),
            adler: adler32(bytes),
            len: bytes.len(),
        })
    }
}

/// The zlib stream of `before`, then what `packed` holds, then `after`, less the packed
/// blocks themselves: the own bytes to send, and where in them the packed blocks go.
pub fn frame(before: &[u8], packed: &Packed, after: &[u8]) -> (Vec<u8>, usize) {
    let len = HEADER.len() + stored_len(before) + stored_len(after).max(STORED_HEAD) + 4;
    let mut out = Vec::with_capacity(len);
    out.extend_from_slice(&HEADER);
    stored(&mut out, before, false);
    let at = out.len();
    stored(&mut out, after, true);
    let adler = combine(adler32(before), packed.adler, packed.len);
    let adler = combine(adler, adler32(after), after.len());
    out.extend_from_slice(&adler.to_be_bytes());
    (out, at)
}

/// The bytes of `data` as stored blocks.
fn stored_len(data: &[u8]) -> usize {
    data.len() + data.len().div_ceil(STORED_MAX) * STORED_HEAD
}

/// Appends `data` as stored blocks of at most [`STORED_MAX`] bytes, the last of them final
/// when `last` (then an empty `data` is one empty final block; otherwise it is nothing).
fn stored(out: &mut Vec<u8>, data: &[u8], last: bool) {
    if data.is_empty() && !last {
        return;
    }
    let mut rest = data;
    loop {
        let (block, tail) = rest.split_at(rest.len().min(STORED_MAX));
        let len = block.len() as u16;
        // BFINAL, then BTYPE 00 (stored), padded to the byte.
        out.push(u8::from(last && tail.is_empty()));
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&(!len).to_le_bytes());
        out.extend_from_slice(block);
        rest = tail;
        if rest.is_empty() {
            return;
        }
    }
}

/// The Adler-32 of `bytes` (RFC 1950 §8.2), as miniz_oxide's own zlib streams compute it.
fn adler32(bytes: &[u8]) -> u32 {
    adler2::adler32_slice(bytes)
}

/// The Adler-32 of two byte strings one after the other, from each one's and the second's
/// length. With `a` one plus the sum of the bytes and `b` the sum of `a` after each byte:
/// the second string's bytes add to the first's `a` (less the second's starting one), and
/// each of its `n` running sums starts from the first's `a`, so `b` gains `n·(a₁ − 1)`.
fn combine(first: u32, second: u32, second_len: usize) -> u32 {
    let m = u64::from(MOD);
    let (a1, b1) = (u64::from(first & 0xFFFF), u64::from(first >> 16));
    let (a2, b2) = (u64::from(second & 0xFFFF), u64::from(second >> 16));
    let n = (second_len % MOD as usize) as u64;
    let a = (a1 + a2 + m - 1) % m;
    let b = (b1 + b2 + n * ((a1 + m - 1) % m)) % m;
    ((b as u32) << 16) | a as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use irix7_kmem::testing::Lcg;
    use miniz_oxide::inflate::decompress_to_vec_zlib;

    /// Bytes that are neither all alike nor random: JSON-like text with some variety.
    fn text(len: usize) -> Vec<u8> {
        let mut rng = Lcg(1);
        (0..len)
            .map(|i| {
                let r = rng.next_u64();
                match i % 7 {
                    0 => b'"',
                    1 => b'a' + (r % 26) as u8,
                    _ => b"{}:,name"[(r % 8) as usize],
                }
            })
            .collect()
    }

    /// Adler-32 straight from its definition, without the deferred reductions.
    fn adler_by_definition(bytes: &[u8]) -> u32 {
        let (mut a, mut b) = (1u64, 0u64);
        for &x in bytes {
            a = (a + u64::from(x)) % 65_521;
            b = (b + a) % 65_521;
        }
        ((b as u32) << 16) | a as u32
    }

    #[test]
    fn adler32_is_its_definition() {
        assert_eq!(adler32(b""), 1);
        // RFC 1950's usual check value.
        assert_eq!(adler32(b"Wikipedia"), 0x11E6_0398);
        // 5,552 bytes: where the sums must first be reduced.
        for len in [1, 100, 5_551, 5_552, 5_553, 3 * 5_552 + 17, 70_000] {
            let t = text(len);
            assert_eq!(adler32(&t), adler_by_definition(&t), "{len}");
            let ff = alloc::vec![0xFF; len];
            assert_eq!(adler32(&ff), adler_by_definition(&ff), "0xFF × {len}");
        }
    }

    #[test]
    fn combined_adler32s_are_the_adler32_of_the_whole() {
        let t = text(200_000);
        for (split, end) in [
            (0, 0),
            (0, 10),
            (10, 10),
            (7, 65_521),
            (65_520, 65_522 * 2),
            (100, 200_000),
            (131_042, 200_000),
        ] {
            let (x, y) = t[..end].split_at(split);
            assert_eq!(
                combine(adler32(x), adler32(y), y.len()),
                adler32(&t[..end]),
                "{split} {end}"
            );
        }
        let ff = alloc::vec![0xFF; 140_000];
        let (x, y) = ff.split_at(65_521);
        assert_eq!(combine(adler32(x), adler32(y), y.len()), adler32(&ff));
    }

    #[test]
    fn a_framed_stream_inflates_to_its_three_parts() {
        for (before, bulk, after) in [
            (0, 1, 0),
            (40, 31_000, 120),
            (0, 5_000, 70_000),
            (70_000, 5_000, 0),
            (65_535, 200_000, 65_536),
            (131_070, 100, 1),
        ] {
            let t = text(before + bulk + after + 3);
            let (b, rest) = t.split_at(before);
            let (m, rest) = rest.split_at(bulk);
            let a = &rest[..after];
            let packed = Packed::new(m, 6).expect("deflate");
            assert_eq!((packed.len, packed.adler), (m.len(), adler32(m)));
            let (own, at) = frame(b, &packed, a);
            let mut stream = own[..at].to_vec();
            stream.extend_from_slice(&packed.deflate);
            stream.extend_from_slice(&own[at..]);
            let whole = decompress_to_vec_zlib(&stream).expect("inflates");
            assert_eq!(whole.len(), before + bulk + after);
            assert!(whole == [b, m, a].concat(), "{before} {bulk} {after}");
            // The own bytes are the parts and a few bytes of framing, nothing compressed.
            assert_eq!(own.len(), 2 + stored_len(b) + stored_len(a).max(5) + 4);
        }
    }

    #[test]
    fn the_packed_blocks_compress_and_a_stream_without_them_does_not_inflate() {
        let t: Vec<u8> = (0..600)
            .flat_map(|i| {
                alloc::format!("{{\"name\":\"tool{i}\",\"readOnlyHint\":true}},").into_bytes()
            })
            .collect();
        let packed = Packed::new(&t, 6).expect("deflate");
        assert!(
            packed.deflate.len() < t.len() / 4,
            "{}",
            packed.deflate.len()
        );
        let (own, at) = frame(b"{", &packed, b"}");
        // The packed blocks are not final: the stream ends only with the own last block.
        let mut cut = own[..at].to_vec();
        cut.extend_from_slice(&packed.deflate);
        assert!(decompress_to_vec_zlib(&cut).is_err());
        // A wrong trailer is caught.
        let mut stream = cut.clone();
        stream.extend_from_slice(&own[at..]);
        let n = stream.len();
        stream[n - 1] ^= 1;
        assert!(decompress_to_vec_zlib(&stream).is_err());
    }
}
