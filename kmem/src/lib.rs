//! `memcpy`, `memset` and `memcmp` for the module image, tuned for the R4400 (big-endian MIPS II,
//! 32-bit).
//!
//! The generic `memcpy` of `compiler_builtins` costs about 2.5 instructions per byte on the
//! R4400 (a word loop without unrolling, built for size) and was half of every large response's
//! instructions. This one copies eight words per loop iteration: about 0.55 instructions per
//! byte when source and destination are equally aligned and about 0.8 otherwise, so callers
//! need not arrange their buffers' alignment. `memset` stores eight words per iteration.
//!
//! `#![no_builtins]` stops LLVM from recognising these loops as a copy or a fill and turning
//! them back into a call to `memcpy` or `memset`, which here would be an endless recursion.
//!
//! The Internet checksum's sum ([`ones_sum`]) lives here too: it is the other loop every sent
//! byte goes through, and the same alignment knowledge makes it fast. So does the ASCII test
//! every request body goes through ([`ascii`]); beside it, where cut text ends on a whole
//! character ([`complete_utf8`]).
//!
//! And the heap's accounting: the [`budget`] pools every input-driven allocation is charged to,
//! shared by the protocol crate (request bodies, parses, task results) and the module (shell
//! output), which may not depend on each other; the [`share`] rules that divide pools counted
//! in units between their owners; and, shared for the same reason, the [`civil`] date both
//! write and, for tests only, the pseudo-random generator both crates' tests use
//! (`testing`).
#![no_std]
#![no_builtins]

extern crate alloc;

pub mod budget;
pub mod civil;
mod csum;
pub mod share;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
mod text;
pub use csum::ones_sum;
pub use text::{append_json_text, ascii, complete_utf8, hex_byte, short_escape, unicode_escape};

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
/// eight per iteration, and the last 0–3 bytes go byte by byte again. When the source is not
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

/// Pieces up to this long are what [`append_short`] takes.
pub const SHORT_PIECE: usize = 16;

/// Appends `bytes` (at most [`SHORT_PIECE`] of them) byte by byte into the spare room of
/// `out`, if it has that much: true when it did. A JSON result is written in hundreds of such
/// pieces (a key, its quotes, a number), and for each `extend_from_slice` pays a reservation
/// check and a call of `memcpy` that cost more than the bytes; this is one call and a few
/// instructions a byte. Anything longer, or a vector without the room, is the caller's to
/// append as usual (this crate grows no vector: it is outside the image's LTO).
pub fn append_short(out: &mut alloc::vec::Vec<u8>, bytes: &[u8]) -> bool {
    let n = bytes.len();
    if n > SHORT_PIECE || out.capacity() - out.len() < n {
        return false;
    }
    let len = out.len();
    // SAFETY: the `n` bytes after `len` are within the capacity (checked above); each is
    // written by `copy_bytes` before the length takes it in.
    unsafe {
        copy_bytes(out.as_mut_ptr().add(len), bytes.as_ptr(), n);
        out.set_len(len + n);
    }
    true
}

/// Strings up to this long are what [`append_plain_string`] takes.
pub const PLAIN_STRING: usize = 32;

/// Appends `s` as a JSON string, quotes included, when it is at most [`PLAIN_STRING`] bytes
/// of printable ASCII other than `"` and `\` (nothing to escape) and `out` has the room: true
/// when it did. Most strings of a result are such names (a file's, a type, a state), and
/// for them one pass that tests and copies costs less than the word scan, its set-up and
/// the copy after it; anything else is left to the caller's escape.
pub fn append_plain_string(out: &mut alloc::vec::Vec<u8>, s: &[u8]) -> bool {
    let n = s.len();
    if n > PLAIN_STRING || out.capacity() - out.len() < n + 2 {
        return false;
    }
    let len = out.len();
    // SAFETY: the `n + 2` bytes after `len` are within the capacity (checked above); each
    // byte is tested as it is copied, and the length takes them in only once all `n + 2` are
    // written (a refused string leaves its bytes in the spare room, outside the vector).
    unsafe {
        let to = out.as_mut_ptr().add(len);
        *to = b'"';
        for i in 0..n {
            let b = *s.as_ptr().add(i);
            if !(0x20..0x80).contains(&b) || b == b'"' || b == b'\\' {
                return false;
            }
            *to.add(1 + i) = b;
        }
        *to.add(n + 1) = b'"';
        out.set_len(len + n + 2);
    }
    true
}

/// Appends what opens a member of a JSON object, `,"key":` (without the comma for the first
/// member), when `key` is at most [`SHORT_PIECE`] bytes and `out` has the room: true when it
/// did. One call where the pieces took three (`status` writes sixty keys, `fs.list` ten an
/// entry); `key` is the caller's to know plain (a name of its code).
pub fn append_key(out: &mut alloc::vec::Vec<u8>, comma: bool, key: &[u8]) -> bool {
    let k = key.len();
    let n = k + 3 + usize::from(comma);
    if k > SHORT_PIECE || out.capacity() - out.len() < n {
        return false;
    }
    let len = out.len();
    // SAFETY: the `n` bytes after `len` are within the capacity (checked above), and all are
    // written (the comma if any, the quotes, the key, the colon) before the length takes them.
    unsafe {
        let mut to = out.as_mut_ptr().add(len);
        if comma {
            *to = b',';
            to = to.add(1);
        }
        *to = b'"';
        copy_bytes(to.add(1), key.as_ptr(), k);
        *to.add(k + 1) = b'"';
        *to.add(k + 2) = b':';
        out.set_len(len + n);
    }
    true
}

/// Appends `n` in decimal when it fits in 32 bits and `out` has room for its ten digits: true
/// when it did. The R4400 divides 32-bit numbers in one instruction, so a digit costs a few;
/// a general formatter of `u64` pays for 64-bit arithmetic it does not need for the sizes,
/// counts and times a result holds.
pub fn append_decimal(out: &mut alloc::vec::Vec<u8>, n: u64) -> bool {
    let Ok(mut n) = u32::try_from(n) else {
        return false;
    };
    if out.capacity() - out.len() < 10 {
        return false;
    }
    let mut digits = [0u8; 10];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    append_short(out, &digits[at..])
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

/// Words per iteration of the word loops: eight loads and eight stores share one pointer
/// update and one branch, which a shorter unroll pays more often.
const UNROLL: usize = 8;

/// Copies `words` words between word-aligned addresses, [`UNROLL`] per iteration.
///
/// # Safety
/// As [`copy_forward`], for `words * 4` bytes; both pointers word-aligned.
#[inline(always)]
unsafe fn copy_words_aligned(dst: *mut u32, src: *const u32, words: usize) {
    // SAFETY: as `copy_words_with`; an aligned source is read with aligned loads.
    unsafe { copy_words_with(dst, src, words, |p| *p) }
}

/// Copies `words` words from an unaligned source to a word-aligned destination, [`UNROLL`]
/// per iteration.
///
/// # Safety
/// As [`copy_forward`], for `words * 4` bytes; `dst` word-aligned.
#[inline(always)]
unsafe fn copy_words_unaligned(dst: *mut u32, src: *const u32, words: usize) {
    // SAFETY: as `copy_words_with`; the source is only read through unaligned loads.
    unsafe { copy_words_with(dst, src, words, |p| ptr::read_unaligned(p)) }
}

/// The word loops of both copies, reading each source word with `load`: [`UNROLL`] words an
/// iteration in two halves of four (so four registers hold them, none the callee must save),
/// then four more if that many are left, then single words. Stores are plain word stores.
///
/// # Safety
/// As [`copy_forward`], for `words * 4` bytes; `dst` word-aligned; `load` must read the word
/// at the pointer it is given and nothing else.
#[inline(always)]
unsafe fn copy_words_with(
    mut dst: *mut u32,
    mut src: *const u32,
    words: usize,
    load: impl Fn(*const u32) -> u32,
) {
    // SAFETY: every pointer below stays within `words` words of the start of both ranges.
    unsafe {
        let end = dst.add(words);
        let end_unrolled = dst.add(words - words % UNROLL);
        let four = |dst: *mut u32, src: *const u32| {
            let (a, b, c, d) = (
                load(src),
                load(src.add(1)),
                load(src.add(2)),
                load(src.add(3)),
            );
            *dst = a;
            *dst.add(1) = b;
            *dst.add(2) = c;
            *dst.add(3) = d;
        };
        while dst != end_unrolled {
            four(dst, src);
            four(dst.add(4), src.add(4));
            dst = dst.add(UNROLL);
            src = src.add(UNROLL);
        }
        if end.offset_from_unsigned(dst) >= 4 {
            four(dst, src);
            dst = dst.add(4);
            src = src.add(4);
        }
        while dst != end {
            *dst = load(src);
            dst = dst.add(1);
            src = src.add(1);
        }
    }
}

/// Sets `n` bytes at `dst` to `byte`, lowest address first: the destination is brought to a
/// word boundary byte by byte, whole words follow [`UNROLL`] per iteration, then the tail.
///
/// # Safety
/// `dst` must be valid for writes of `n` bytes (the contract of C `memset`).
#[inline(always)]
pub unsafe fn fill(mut dst: *mut u8, byte: u8, mut n: usize) {
    // SAFETY: as in `copy_forward`, the head, the whole words and the tail add up to `n`.
    unsafe {
        if n >= SMALL {
            let head = dst.addr().wrapping_neg() % WORD;
            fill_bytes(dst, byte, head);
            dst = dst.add(head);
            n -= head;
            let words = n / WORD;
            let pattern = u32::from_ne_bytes([byte; WORD]);
            let mut w = dst.cast::<u32>();
            let end = w.add(words);
            let end_unrolled = w.add(words - words % UNROLL);
            while w != end_unrolled {
                w.cast::<[u32; UNROLL]>().write([pattern; UNROLL]);
                w = w.add(UNROLL);
            }
            while w != end {
                *w = pattern;
                w = w.add(1);
            }
            dst = end.cast::<u8>();
            n -= words * WORD;
        }
        fill_bytes(dst, byte, n);
    }
}

/// Sets `n` bytes one at a time.
///
/// # Safety
/// As [`fill`].
#[inline(always)]
unsafe fn fill_bytes(dst: *mut u8, byte: u8, n: usize) {
    for i in 0..n {
        // SAFETY: `i < n`, within the range.
        unsafe { *dst.add(i) = byte };
    }
}

/// The image's `memcpy`. `compiler_builtins` defines its own as a weak symbol on this target,
/// so this strong one replaces it at link time; `memmove` stays theirs.
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

/// Compares `n` bytes at `a` and `b` as unsigned bytes, lowest address first: negative,
/// zero or positive as C `memcmp`. A word at a time while the words are equal (each read with
/// the `lwl`/`lwr` pair whatever its alignment), then bytes from the first word that differs.
/// The compared pieces are mostly a request's keys and names, 4 to 40 bytes, for which the
/// byte loop of `compiler_builtins`' weak `memcmp` cost seven instructions a byte.
///
/// # Safety
/// `a` and `b` must be valid for reads of `n` bytes.
#[inline(always)]
pub unsafe fn compare(mut a: *const u8, mut b: *const u8, n: usize) -> i32 {
    // SAFETY: the words end at or before `a + n` (and `b + n`), and a byte is read only
    // before the end.
    unsafe {
        let end = a.add(n);
        let words_end = a.add(n - n % WORD);
        while a != words_end {
            if ptr::read_unaligned(a.cast::<u32>()) != ptr::read_unaligned(b.cast::<u32>()) {
                break;
            }
            a = a.add(WORD);
            b = b.add(WORD);
        }
        while a != end {
            let (x, y) = (*a, *b);
            if x != y {
                return i32::from(x) - i32::from(y);
            }
            a = a.add(1);
            b = b.add(1);
        }
    }
    0
}

/// The image's `memcmp`, replacing `compiler_builtins`' weak one like [`memcpy`].
///
/// # Safety
/// The contract of C `memcmp`: see [`compare`].
#[cfg(target_os = "none")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn memcmp(a: *const u8, b: *const u8, n: usize) -> i32 {
    // SAFETY: the caller keeps `memcmp`'s contract, which is `compare`'s.
    unsafe { compare(a, b, n) }
}

/// The image's `memset`, replacing `compiler_builtins`' weak one like [`memcpy`]: zeroing a
/// buffer to read into (`Vec::resize`, `vec![0; n]`) then costs about a third of an
/// instruction per byte.
///
/// # Safety
/// The contract of C `memset`: see [`fill`].
#[cfg(target_os = "none")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn memset(dst: *mut u8, c: i32, n: usize) -> *mut u8 {
    // SAFETY: the caller keeps `memset`'s contract, which is `fill`'s; C passes the byte as
    // an int and uses its low eight bits.
    unsafe { fill(dst, c as u8, n) };
    dst
}

#[cfg(test)]
mod tests {
    use super::{
        PLAIN_STRING, SHORT_PIECE, append_decimal, append_key, append_plain_string, append_short,
        compare, copy_forward, fill,
    };
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

    /// Fills `len` bytes at offset `at` of a guarded buffer and checks exactly those changed.
    fn check_fill(at: usize, len: usize) {
        let mut words = std::vec![0u64; (GUARD + at + len + GUARD).div_ceil(8) + 1];
        let bytes = unsafe {
            std::slice::from_raw_parts_mut(words.as_mut_ptr().cast::<u8>(), words.len() * 8)
        };
        bytes.fill(FILL);
        let mut expected = bytes.to_vec();
        let start = GUARD + at;
        expected[start..start + len].fill(0x3C);
        unsafe { fill(bytes[start..].as_mut_ptr(), 0x3C, len) };
        assert_eq!(bytes, &expected[..], "offset {at}, len {len}");
    }

    #[test]
    fn fill_every_alignment_and_length() {
        for at in 0..8 {
            for len in (0..200).chain([1024, 4093]) {
                check_fill(at, len);
            }
        }
    }

    /// `compare` orders as slices of unsigned bytes do, at every alignment of both sides,
    /// whichever byte of a word differs first (or none).
    #[test]
    fn compare_orders_as_unsigned_bytes_at_every_alignment() {
        let base = pattern(64);
        for len in 0..40 {
            for ao in 0..4 {
                for bo in 0..4 {
                    let a = [&[0u8; 4][..ao], &base[..len]].concat();
                    for at in (0..len).chain([usize::MAX]) {
                        for other in [0x00, 0x7f, 0x80, 0xff] {
                            let mut b = [&[9u8; 4][..bo], &base[..len]].concat();
                            if at != usize::MAX {
                                b[bo + at] = other;
                            }
                            let got = unsafe { compare(a[ao..].as_ptr(), b[bo..].as_ptr(), len) };
                            let want = a[ao..].cmp(&b[bo..]);
                            assert_eq!(got.cmp(&0), want, "len {len}, {ao}/{bo}, at {at}");
                        }
                    }
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

    #[test]
    fn a_short_piece_goes_into_the_room_there_is() {
        for n in 0..=SHORT_PIECE + 1 {
            let piece: Vec<u8> = (0..n).map(|i| b'a' + i as u8).collect();
            for room in [0, n, 64] {
                let mut out = Vec::with_capacity(3 + room);
                out.extend_from_slice(b"abc");
                let cap = out.capacity();
                let took = append_short(&mut out, &piece);
                assert_eq!(took, n <= SHORT_PIECE && cap - 3 >= n, "{n} {room}");
                let want = if took {
                    [&b"abc"[..], &piece].concat()
                } else {
                    b"abc".to_vec()
                };
                assert_eq!(out, want, "{n} {room}");
                assert_eq!(out.capacity(), cap, "never grows");
            }
        }
    }

    #[test]
    fn keys_and_numbers_are_appended_where_there_is_room() {
        for comma in [false, true] {
            let mut out = Vec::with_capacity(64);
            out.push(b'{');
            assert!(append_key(&mut out, comma, b"abc"));
            let want: &[u8] = if comma { b"{,\"abc\":" } else { b"{\"abc\":" };
            assert_eq!(out, want);
        }
        let mut full = Vec::with_capacity(4);
        assert!(!append_key(&mut full, true, b"abc"), "no room");
        assert!(!append_key(
            &mut Vec::with_capacity(64),
            false,
            &[b'k'; SHORT_PIECE + 1]
        ));
        for n in [0, 7, 10, 99, 100, 4_294_967_295, 1_234_567] {
            let mut out = Vec::with_capacity(16);
            assert!(append_decimal(&mut out, n));
            assert_eq!(out, std::format!("{n}").into_bytes());
        }
        assert!(
            !append_decimal(&mut Vec::with_capacity(32), 1 << 32),
            "past 32 bits"
        );
        assert!(
            !append_decimal(&mut Vec::with_capacity(9), 1),
            "no room for ten digits"
        );
    }

    #[test]
    fn a_plain_string_is_appended_quoted_and_any_other_left_alone() {
        for s in [
            &b""[..],
            b"etc",
            b"a name with spaces and ~!#",
            &[b'x'; PLAIN_STRING],
        ] {
            let mut out = Vec::with_capacity(64);
            out.push(b':');
            assert!(append_plain_string(&mut out, s), "{s:?}");
            assert_eq!(out, [&b":\""[..], s, b"\""].concat());
        }
        for s in [
            &b"q\"uote"[..],
            b"back\\slash",
            b"tab\t",
            b"\x7f\x80",
            &[b'x'; PLAIN_STRING + 1],
        ] {
            let mut out = Vec::with_capacity(64);
            out.push(b':');
            assert!(!append_plain_string(&mut out, s), "{s:?}");
            assert_eq!(out, b":", "nothing of it stays: {s:?}");
        }
        assert!(
            !append_plain_string(&mut Vec::with_capacity(4), b"abc"),
            "no room"
        );
    }
}
