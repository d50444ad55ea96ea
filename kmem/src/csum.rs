//! The Internet checksum's one's complement sum (RFC 1071), tuned for the R4400.
//!
//! Every byte the module sends over TCP is summed once. Big-endian 32-bit words can be summed
//! instead of 16-bit ones (2^16 is 1 modulo 0xffff, so folding the 32-bit sum gives the same
//! result), and MIPS II has no carry flag, so each word costs a load, an add, a compare for the
//! carry and an add of it. The words are read with aligned loads once the data reaches a word
//! boundary — a frame's TCP segment starts two bytes past one — which a generic loop cannot
//! know (it pays the `lwl`/`lwr` pair or four byte loads a word): about 1.1 instructions a byte
//! against 1.6.

/// Words per iteration of the word loop: one pointer update and one branch for sixteen words
/// (66 instructions for 64 bytes; eight words took 36 for 32). What is left (up to 15 words:
/// 13 of a 1460-byte segment) goes eight and four at a time, then word by word.
const UNROLL: usize = 16;

/// Adds `bytes`, read as big-endian 16-bit words (an odd last byte padded with zero), to the
/// one's complement sum `sum` kept in 32 bits with an end-around carry. The result is not
/// folded: fold it to 16 bits once the whole message is summed.
pub fn ones_sum(sum: u32, bytes: &[u8]) -> u32 {
    let mut sum = sum;
    let mut rest = bytes;
    let addr = rest.as_ptr().addr();
    // An odd start (no frame has one) is left to the 16-bit loop below.
    if addr.is_multiple_of(2) {
        // One 16-bit word brings a half-aligned start to a word boundary.
        if addr % 4 == 2
            && let [a, b, tail @ ..] = rest
        {
            sum = add(sum, u32::from(u16::from_be_bytes([*a, *b])));
            rest = tail;
        }
        let words = rest.len() / 4;
        // SAFETY: `rest` starts on a word boundary here and holds at least `words` words.
        sum = unsafe { sum_words(sum, rest.as_ptr().cast::<u32>(), words) };
        rest = &rest[words * 4..];
    }
    let mut pairs = rest.chunks_exact(2);
    for p in &mut pairs {
        sum = add(sum, u32::from(u16::from_be_bytes([p[0], p[1]])));
    }
    if let [last] = pairs.remainder() {
        sum = add(sum, u32::from(*last) << 8);
    }
    sum
}

/// One's complement addition in 32 bits.
#[inline(always)]
fn add(sum: u32, word: u32) -> u32 {
    let (s, carry) = sum.overflowing_add(word);
    s + u32::from(carry)
}

/// Adds `words` big-endian words from `src`, [`UNROLL`] per iteration.
///
/// # Safety
/// `src` must be word-aligned and valid for reads of `words * 4` bytes.
#[inline(always)]
unsafe fn sum_words(mut sum: u32, mut src: *const u32, words: usize) -> u32 {
    // SAFETY: every pointer below stays within the `words` words the caller vouches for.
    unsafe {
        let end = src.add(words);
        let end_unrolled = src.add(words - words % UNROLL);
        while src != end_unrolled {
            sum = sum_block::<UNROLL>(sum, src);
            src = src.add(UNROLL);
        }
        let left = words % UNROLL;
        if left >= 8 {
            sum = sum_block::<8>(sum, src);
            src = src.add(8);
        }
        if left % 8 >= 4 {
            sum = sum_block::<4>(sum, src);
            src = src.add(4);
        }
        while src != end {
            sum = add(sum, u32::from_be(*src));
            src = src.add(1);
        }
    }
    sum
}

/// Adds the `N` big-endian words at `src`, unrolled.
///
/// # Safety
/// `src` must be word-aligned and valid for reads of `N * 4` bytes.
#[inline(always)]
unsafe fn sum_block<const N: usize>(mut sum: u32, src: *const u32) -> u32 {
    for k in 0..N {
        // SAFETY: `k < N`, within the words the caller vouches for.
        sum = add(sum, u32::from_be(unsafe { *src.add(k) }));
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::ones_sum;
    use std::vec::Vec;

    /// The sum of RFC 1071 as written: 16-bit words, carries folded at the end.
    fn reference(bytes: &[u8]) -> u16 {
        let mut sum: u64 = 0;
        for pair in bytes.chunks(2) {
            let hi = u64::from(pair[0]) << 8;
            sum += hi | pair.get(1).map_or(0, |&b| u64::from(b));
        }
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        sum as u16
    }

    fn fold(sum: u32) -> u16 {
        let s = (sum >> 16) + (sum & 0xffff);
        let s = (s >> 16) + (s & 0xffff);
        s as u16
    }

    #[test]
    fn matches_rfc_1071_at_every_alignment_and_length() {
        // A u64 buffer gives a known 8-aligned start, so the offset sets the alignment.
        let mut words = std::vec![0u64; 260];
        let buf = unsafe {
            std::slice::from_raw_parts_mut(words.as_mut_ptr().cast::<u8>(), words.len() * 8)
        };
        for (i, b) in buf.iter_mut().enumerate() {
            *b = (i * 37 + 11) as u8 ^ 0xc3;
        }
        for at in 0..8 {
            for len in (0..200).chain([1460, 1514, 2047]) {
                let data = &buf[at..at + len];
                assert_eq!(
                    fold(ones_sum(0, data)),
                    reference(data),
                    "offset {at}, length {len}"
                );
            }
        }
    }

    #[test]
    fn carries_wrap_around_and_a_running_sum_continues() {
        // All ones: every addition carries.
        let ones: Vec<u8> = std::vec![0xff; 1501];
        assert_eq!(fold(ones_sum(0, &ones)), reference(&ones));
        // A sum carried over from a pseudo-header adds like any other word.
        let data: Vec<u8> = (0..999u32).map(|i| (i * 7) as u8).collect();
        let mut with_start = std::vec![0x12, 0x34];
        with_start.extend_from_slice(&data);
        assert_eq!(fold(ones_sum(0x1234, &data)), reference(&with_start));
    }
}
