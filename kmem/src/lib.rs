//! `memcpy` for the module image, tuned for the R4400 (big-endian MIPS II, 32-bit).
//!
//! The generic `memcpy` of `compiler_builtins` costs about 2.5 instructions per byte on the
//! R4400 (a word loop without unrolling, built for size) and was half of every large response's
//! instructions. This one copies four words per loop iteration: about 0.75 instructions per
//! byte when source and destination are equally aligned and about 1 otherwise.
//!
//! `#![no_builtins]` stops LLVM from recognising these loops as a copy and turning them back
//! into a call to `memcpy`, which here would be an endless recursion.
#![no_std]
#![no_builtins]

#[cfg(test)]
extern crate std;

use core::ptr;

/// Bytes in a machine word.
const WORD: usize = size_of::<u32>();

/// Copies shorter than this go byte by byte: aligning the destination and entering a word loop
/// costs more than it saves on them.
const SMALL: usize = 16;

/// Copies `n` bytes from `src` to `dst`, lowest address first.
///
/// The destination is first brought to a word boundary byte by byte; whole words then follow,
/// four per iteration, and the last 0–3 bytes go byte by byte again. When the source is not
/// word-aligned at that point each word is read with an unaligned load, which LLVM emits as
/// the MIPS `lwl`/`lwr` pair: two instructions per word, and no byte outside the source is
/// read (unlike combining neighbouring aligned words, whose edge words would extend past it).
///
/// # Safety
/// `src` must be valid for reads of `n` bytes, `dst` valid for writes of `n` bytes, and the
/// two ranges must not overlap (the contract of C `memcpy`).
#[inline(always)]
pub unsafe fn copy_forward(mut dst: *mut u8, mut src: *const u8, mut n: usize) {
    // SAFETY: every offset below stays within the `n` bytes the caller vouches for: `head` and
    // the whole words are at most `n` bytes together, and the tail is what is left of `n`.
    unsafe {
        if n >= SMALL {
            let head = dst.addr().wrapping_neg() % WORD;
            copy_bytes(dst, src, head);
            dst = dst.add(head);
            src = src.add(head);
            n -= head;

            let words = n / WORD;
            let dst_words = dst.cast::<u32>();
            if src.addr().is_multiple_of(WORD) {
                copy_words_aligned(dst_words, src.cast::<u32>(), words);
            } else {
                copy_words_unaligned(dst_words, src.cast::<u32>(), words);
            }
            let bytes = words * WORD;
            dst = dst.add(bytes);
            src = src.add(bytes);
            n -= bytes;
        }
        copy_bytes(dst, src, n);
    }
}

/// Copies `n` bytes one at a time.
///
/// # Safety
/// As [`copy_forward`].
#[inline(always)]
unsafe fn copy_bytes(dst: *mut u8, src: *const u8, n: usize) {
    for i in 0..n {
        // SAFETY: `i < n`, within both ranges.
        unsafe { *dst.add(i) = *src.add(i) };
    }
}

/// Copies `words` words between word-aligned addresses, four per iteration.
///
/// # Safety
/// As [`copy_forward`], for `words * 4` bytes; both pointers word-aligned.
#[inline(always)]
unsafe fn copy_words_aligned(mut dst: *mut u32, mut src: *const u32, words: usize) {
    // SAFETY: the loops stop at `words` words from the start of both ranges.
    unsafe {
        let end = dst.add(words);
        let end4 = dst.add(words & !3);
        while dst != end4 {
            let (a, b, c, d) = (*src, *src.add(1), *src.add(2), *src.add(3));
            *dst = a;
            *dst.add(1) = b;
            *dst.add(2) = c;
            *dst.add(3) = d;
            dst = dst.add(4);
            src = src.add(4);
        }
        while dst != end {
            *dst = *src;
            dst = dst.add(1);
            src = src.add(1);
        }
    }
}

/// Copies `words` words from an unaligned source to a word-aligned destination, four per
/// iteration.
///
/// # Safety
/// As [`copy_forward`], for `words * 4` bytes; `dst` word-aligned.
#[inline(always)]
unsafe fn copy_words_unaligned(mut dst: *mut u32, mut src: *const u32, words: usize) {
    // SAFETY: the loops stop at `words` words from the start of both ranges; the source is
    // only read through unaligned loads.
    unsafe {
        let end = dst.add(words);
        let end4 = dst.add(words & !3);
        while dst != end4 {
            let a = ptr::read_unaligned(src);
            let b = ptr::read_unaligned(src.add(1));
            let c = ptr::read_unaligned(src.add(2));
            let d = ptr::read_unaligned(src.add(3));
            *dst = a;
            *dst.add(1) = b;
            *dst.add(2) = c;
            *dst.add(3) = d;
            dst = dst.add(4);
            src = src.add(4);
        }
        while dst != end {
            *dst = ptr::read_unaligned(src);
            dst = dst.add(1);
            src = src.add(1);
        }
    }
}

/// The image's `memcpy`. `compiler_builtins` defines its own as a weak symbol on this target,
/// so this strong one replaces it at link time; `memmove` and `memset` stay theirs.
///
/// # Safety
/// The contract of C `memcpy`: see [`copy_forward`].
#[cfg(target_os = "none")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn memcpy(dst: *mut u8, src: *const u8, n: usize) -> *mut u8 {
    // SAFETY: the caller keeps `memcpy`'s contract, which is `copy_forward`'s.
    unsafe { copy_forward(dst, src, n) };
    dst
}

#[cfg(test)]
mod tests {
    use super::copy_forward;
    use std::vec::Vec;

    /// Bytes left around the destination to catch writes outside it.
    const GUARD: usize = 8;
    const FILL: u8 = 0xA5;

    /// A pattern whose bytes differ from their neighbours and from `FILL`.
    fn pattern(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 7 + 1) as u8 ^ 0x5A).collect()
    }

    /// Copies `len` bytes from offset `so` of a source buffer to offset `do_` of a destination
    /// buffer and checks the result against `copy_from_slice`, and that nothing around the
    /// destination changed.
    fn check(so: usize, do_: usize, len: usize) {
        // A u64 buffer gives a known 8-aligned start, so the offsets set the alignment.
        let mut src_words = std::vec![0u64; (so + len).div_ceil(8) + 1];
        let mut dst_words = std::vec![0u64; (GUARD + do_ + len + GUARD).div_ceil(8) + 1];
        let src_bytes = unsafe {
            std::slice::from_raw_parts_mut(src_words.as_mut_ptr().cast::<u8>(), src_words.len() * 8)
        };
        src_bytes[so..so + len].copy_from_slice(&pattern(len));
        let dst_bytes = unsafe {
            std::slice::from_raw_parts_mut(dst_words.as_mut_ptr().cast::<u8>(), dst_words.len() * 8)
        };
        dst_bytes.fill(FILL);

        let mut expected = dst_bytes.to_vec();
        let at = GUARD + do_;
        expected[at..at + len].copy_from_slice(&src_bytes[so..so + len]);

        unsafe { copy_forward(dst_bytes[at..].as_mut_ptr(), src_bytes[so..].as_ptr(), len) };
        assert_eq!(
            dst_bytes,
            &expected[..],
            "src offset {so}, dst offset {do_}, len {len}"
        );
    }

    #[test]
    fn every_alignment_and_small_length() {
        for so in 0..8 {
            for do_ in 0..8 {
                for len in 0..200 {
                    check(so, do_, len);
                }
            }
        }
    }

    #[test]
    fn big_copies() {
        for &len in &[1024, 1514, 4093, 65536 + 3] {
            for so in 0..4 {
                for do_ in 0..4 {
                    check(so, do_, len);
                }
            }
        }
    }

    #[test]
    fn copies_every_byte_value() {
        let src: Vec<u8> = (0..=255u8).collect();
        let mut dst = [0u8; 256];
        unsafe { copy_forward(dst[1..].as_mut_ptr(), src[..255].as_ptr(), 255) };
        assert_eq!(dst[0], 0);
        assert_eq!(&dst[1..], &src[..255]);
    }
}
