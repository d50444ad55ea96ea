//! JSON string escaping a machine word at a time: text is mostly printable ASCII, which JSON
//! copies as it is, and four bytes are tested for that at once. Whole strings (onto bytes or
//! a written result's bytes), JSON text as a string's content, as much as fits a room, and
//! text arriving in pieces ([`TextEscaper`]).

use alloc::vec::Vec;
use irix7_kmem::complete_utf8;

/// The high bit of each byte of this is clear where JSON copies the byte of `w` as it is
/// (printable ASCII other than `"` and `\`); a borrow into a higher byte only follows a byte
/// that needs escaping, so a word is plain exactly when no high bit is set. Inlined: a call
/// per word would cost more than the test (the image is optimised for size).
#[inline(always)]
fn unplain(w: u32) -> u32 {
    // Flipping bit 1 turns `"` (0x22) into 0x20 and leaves the control characters below
    // 0x20, so one subtraction borrows into the high bit of both; `\` is compared on its
    // own; bytes from 0x80 up have the high bit set already.
    let ctrl_or_quote = (w ^ 0x0202_0202).wrapping_sub(0x2121_2121);
    let backslash = (w ^ 0x5c5c_5c5c).wrapping_sub(0x0101_0101);
    ctrl_or_quote | backslash | w
}

const HIGH: u32 = 0x8080_8080;

/// Whether four bytes (in any order) are all printable ASCII other than `"` and `\`, i.e.
/// JSON copies them as they are. One word test instead of four byte tests: streamed text
/// (base64 above all) is almost entirely such bytes.
fn plain_word(w: u32) -> bool {
    unplain(w) & HIGH == 0
}

fn plain_byte(b: u8) -> bool {
    (0x20..0x80).contains(&b) && b != b'"' && b != b'\\'
}

/// The big-endian word at `i` of `p`, loaded whole (from a slice, not assembled from bytes,
/// which the compiler keeps as byte loads on a machine without fast unaligned access).
#[inline(always)]
fn word(p: &[u8], i: usize) -> u32 {
    u32::from_be_bytes(
        p.get(i..i + 4)
            .and_then(|w| w.try_into().ok())
            .unwrap_or([0; 4]),
    )
}

/// Bytes [`plain_run`] tests one at a time before it tests words: a request's keys and names
/// and a result's short strings end within them, sooner than the set-up of the word tests.
const SHORT_RUN: usize = 16;

/// Length of the leading run of `bytes` that JSON copies unescaped (printable ASCII).
pub(crate) fn plain_run(bytes: &[u8]) -> usize {
    let short = bytes.get(..SHORT_RUN).unwrap_or(bytes);
    if let Some(n) = short.iter().position(|&b| !plain_byte(b)) {
        return n;
    }
    let mut n = short.len();
    // Four words per branch, then the words where a group of four stopped.
    let (blocks, _) = bytes.get(n..).unwrap_or(&[]).as_chunks::<16>();
    for p in blocks {
        if (unplain(word(p, 0)) | unplain(word(p, 4)) | unplain(word(p, 8)) | unplain(word(p, 12)))
            & HIGH
            != 0
        {
            break;
        }
        n += 16;
    }
    let (words, _) = bytes.get(n..).unwrap_or(&[]).as_chunks::<4>();
    for w in words {
        if !plain_word(u32::from_be_bytes(*w)) {
            break;
        }
        n += 4;
    }
    let rest = bytes.get(n..).unwrap_or(&[]);
    n + rest.iter().take_while(|&&b| plain_byte(b)).count()
}

/// Appends `bytes`: a short piece (a key, a number, a word of a result) into room the vector
/// has, a byte at a time ([`irix7_kmem::append_short`]), which on the R4400 costs less than
/// the call of `memcpy` that `extend_from_slice` makes for it (a structured result is written
/// in hundreds of such pieces: `docs/bench.md`, "The request floor"); anything else copied
/// whole.
#[inline(always)]
pub(crate) fn append(out: &mut Vec<u8>, bytes: &[u8]) {
    if !irix7_kmem::append_short(out, bytes) {
        out.extend_from_slice(bytes);
    }
}

/// Appends `s` JSON-escaped (without quotes). Runs that need no escaping are copied whole.
#[inline]
pub(crate) fn escape_str(s: &str, out: &mut Vec<u8>) {
    escape_utf8(s.as_bytes(), out);
}

/// [`escape_str`] of bytes known to be valid UTF-8 (a stretch `core::str::from_utf8` has just
/// accepted), without validating them again.
fn escape_utf8(bytes: &[u8], out: &mut Vec<u8>) {
    // Most strings of an answer are short plain ASCII: one scan and one copy. The rest (a
    // console's lines, a file's text) has an escape every line or so: escaped into room made
    // for it at once, a word at a time, as JSON text is — not a run and an escape at a time.
    let plain = plain_run(bytes);
    let (head, rest) = bytes.split_at(plain);
    append(out, head);
    if !rest.is_empty() {
        escape_json(rest, out);
    }
}

/// [`escape_str`] of as much of `bytes` (UTF-8 known to be valid: JSON this module wrote, or
/// a `String`'s) as fits in `room` more bytes of `out`, whole characters only, without
/// validating them again; returns how many input bytes it escaped. A streamed answer escapes
/// straight into the connection's output buffer this way, a piece per poll, rather than
/// escaping everything into a buffer of its own and copying that out.
pub(crate) fn escape_within(bytes: &[u8], out: &mut Vec<u8>, room: usize) -> usize {
    let limit = out.len().saturating_add(room);
    let mut i = 0;
    while i < bytes.len() {
        let rest = bytes.get(i..).unwrap_or(&[]);
        let left = limit.saturating_sub(out.len());
        let window = rest.get(..left).unwrap_or(rest);
        // Printable ASCII, then (UTF-8 being valid here) whole non-ASCII characters: a
        // character the room cuts is left for the next call. A run of non-ASCII bytes that
        // ends before the window does (on an ASCII byte) or with the input is whole already,
        // so only a run the room cut is brought back to a boundary.
        let plain = plain_run(window);
        let after = window.get(plain..).unwrap_or(&[]);
        let mut high = after.iter().take_while(|&&b| b >= 0x80).count();
        if high == after.len() && window.len() < rest.len() {
            high = complete_utf8(after);
        }
        let run = plain + high;
        if run > 0 {
            out.extend_from_slice(rest.get(..run).unwrap_or(&[]));
            i += run;
            continue;
        }
        let b = rest[0];
        let short = irix7_kmem::short_escape(b);
        // A byte from 0x80 up here is a character that does not fit.
        let need = if short.is_some() { 2 } else { 6 };
        if b >= 0x80 || need > left {
            break;
        }
        match short {
            Some(e) => out.extend_from_slice(&[b'\\', e]),
            None => out.extend_from_slice(&irix7_kmem::unicode_escape(b)),
        }
        i += 1;
    }
    i
}

/// Bytes [`escape_json`] escapes into room it did not make before it grows the vector.
const ESCAPE_STEP: usize = 64;

/// [`escape_str`]'s bytes for valid UTF-8 with escapes to make (this side wrote or read it):
/// a result's JSON as the text of a text block, a console's lines. JSON text is dense with
/// quotes (a run of a few bytes between two of them), so the escaped text is written into
/// room made for it at once ([`irix7_kmem::append_json_text`]) rather than appended a run and
/// an escape at a time, each append checking the vector's room (`docs/bench.md`, "The
/// request floor"). A control byte without a two-character escape (in JSON text a writer's
/// mistake; in a console's text a terminal's escape sequence) takes six, written here.
pub(crate) fn escape_json(json: &[u8], out: &mut Vec<u8>) {
    let mut rest = json;
    while !rest.is_empty() {
        // Every other byte becomes at most two, but few do: the room the caller made (a
        // writer sized for its result) is used as far as it goes, a step of half of it at a
        // time, and the vector grows for the worst case only once it is nearly full.
        if out.capacity() - out.len() < 2 * rest.len().min(ESCAPE_STEP) {
            out.reserve(2 * rest.len());
        }
        let read = irix7_kmem::append_json_text(out, rest);
        rest = rest.get(read..).unwrap_or(&[]);
        if let Some((&b, after)) = rest.split_first().filter(|&(&b, _)| b < 0x20) {
            out.extend_from_slice(&irix7_kmem::unicode_escape(b));
            rest = after;
        }
    }
}

/// JSON-escapes UTF-8 text arriving in pieces. A sequence split across pieces is carried over;
/// invalid bytes become U+FFFD, so the output is always valid JSON string content.
#[derive(Debug, Default)]
pub(crate) struct TextEscaper {
    carry: Vec<u8>,
}

impl TextEscaper {
    pub(crate) fn push(&mut self, input: &[u8], out: &mut Vec<u8>) {
        let mut input = input;
        if self.carry.is_empty() {
            // The common case (and all of base64): plain ASCII, copied as it is. It ends on a
            // character boundary, so the rest goes through the checks below.
            let n = plain_run(input);
            out.extend_from_slice(input.get(..n).unwrap_or(&[]));
            input = input.get(n..).unwrap_or(&[]);
            if input.is_empty() {
                return;
            }
        }
        let mut joined;
        let text: &[u8] = if self.carry.is_empty() {
            input
        } else {
            joined = core::mem::take(&mut self.carry);
            joined.extend_from_slice(input);
            &joined[..]
        };
        // A character the piece cuts waits for the next; what is left is escaped now. Each
        // byte is validated once: binary output (a `cat` of a binary file) is an invalid
        // sequence every few bytes, and validating the valid stretch before each again would
        // double the work of a poll that streams it.
        let (mut rest, cut) = text.split_at(complete_utf8(text));
        loop {
            match core::str::from_utf8(rest) {
                Ok(valid) => break escape_str(valid, out),
                Err(e) => {
                    let (good, bad) = rest.split_at(e.valid_up_to());
                    // `good` is valid UTF-8: core has just said so.
                    escape_utf8(good, out);
                    out.extend_from_slice("\u{fffd}".as_bytes());
                    // `rest` may end with the start of a character that `cut` does not
                    // continue: core calls it unfinished here, and it is replaced whole, as
                    // core does once it sees the bytes after it.
                    rest = bad.get(e.error_len().unwrap_or(bad.len())..).unwrap_or(&[]);
                }
            }
        }
        self.carry = cut.to_vec();
    }

    /// Ends the text: an incomplete trailing sequence becomes U+FFFD.
    pub(crate) fn finish(&mut self, out: &mut Vec<u8>) {
        if !self.carry.is_empty() {
            self.carry.clear();
            out.extend_from_slice("\u{fffd}".as_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::String;
    use irix7_kmem::testing::Lcg;

    #[test]
    fn the_word_test_agrees_with_the_byte_test() {
        let specials = [
            0u8, 0x1f, 0x20, b'"', b'\\', b'!', b'#', b'[', b']', 0x7f, 0x80, 0xff,
        ];
        for &a in &specials {
            for &b in &specials {
                for pos in 0..4 {
                    let mut w = [b'a', b'b', b'c', b'd'];
                    w[pos] = a;
                    w[(pos + 1) % 4] = b;
                    let want = w.iter().all(|&x| plain_byte(x));
                    assert_eq!(plain_word(u32::from_ne_bytes(w)), want, "{w:?}");
                }
            }
        }
        for x in 0..=255u8 {
            assert_eq!(plain_word(u32::from_ne_bytes([x; 4])), plain_byte(x), "{x}");
            for pos in 0..4 {
                let mut w = *b"abcd";
                w[pos] = x;
                let want = plain_byte(x);
                assert_eq!(plain_word(u32::from_be_bytes(w)), want, "{x} at {pos}");
                assert_eq!(plain_word(u32::from_le_bytes(w)), want, "{x} at {pos}");
            }
        }
        // The run stops at the first byte to escape, in either word of a pair or the tail.
        for at in 0..39 {
            for special in [0u8, 0x1f, b'"', b'\\', 0x80, 0xff] {
                let mut text = [b'a'; 39];
                text[at] = special;
                assert_eq!(plain_run(&text), at, "{at} {special}");
            }
        }
        assert_eq!(plain_run(&[b'a'; 39]), 39);
    }

    #[test]
    fn a_piece_appends_the_same_bytes_short_or_long() {
        for n in [0, 1, 15, 16, 17, 100] {
            let piece: Vec<u8> = (0..n).map(|i| b'a' + (i % 26) as u8).collect();
            for room in [0, n, 200] {
                let mut out = Vec::with_capacity(4 + room);
                out.extend_from_slice(b"head");
                append(&mut out, &piece);
                assert_eq!(out, [&b"head"[..], &piece].concat(), "{n} {room}");
            }
        }
    }

    #[test]
    fn json_text_escapes_as_any_text() {
        let all: String = (0u32..0x800).filter_map(char::from_u32).collect();
        for text in [
            "",
            r#"{"a":"x\"y","b":[1,2],"c":"é"}"#,
            "{\n\t\"a\" :\r 1}",
            "\u{1}\u{2}\u{1f}\"\u{0}",
            "\"\"\"\\\\",
            &all,
        ] {
            let mut want = b"head".to_vec();
            escape_str(text, &mut want);
            let mut got = b"head".to_vec();
            escape_json(text.as_bytes(), &mut got);
            assert_eq!(got, want, "{text:?}");
        }
    }

    #[test]
    fn escaping_within_a_room_keeps_to_it_and_adds_up_to_the_whole() {
        let text = "plain words, then \"quotes\" \\ \u{1}\n é€😀 and more plain text\u{1f}";
        let mut whole = Vec::new();
        escape_str(text, &mut whole);
        assert_eq!(
            alloc::format!("\"{}\"", core::str::from_utf8(&whole).unwrap()),
            serde_json::to_string(text).unwrap()
        );
        // Rooms from 6 (the longest escape) up: each piece fits, ends on a character, and
        // the pieces add up to the whole.
        for room in 6..80 {
            let mut out = Vec::new();
            let mut at = 0;
            while at < text.len() {
                let before = out.len();
                let n = escape_within(&text.as_bytes()[at..], &mut out, room);
                assert!(n > 0 && out.len() - before <= room, "room {room} at {at}");
                at += n;
                assert!(text.is_char_boundary(at), "room {room} at {at}");
            }
            assert_eq!(out, whole, "room {room}");
        }
        // Less room than the next character or escape takes: nothing is written.
        let mut out = Vec::new();
        assert_eq!(escape_within("😀".as_bytes(), &mut out, 3), 0);
        assert_eq!(escape_within(b"\x01", &mut out, 5), 0);
        assert!(out.is_empty());
    }

    fn escape_in_pieces(input: &[u8], piece: usize) -> String {
        let mut e = TextEscaper::default();
        let mut out = Vec::new();
        for chunk in input.chunks(piece) {
            e.push(chunk, &mut out);
        }
        e.finish(&mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn escaping_matches_serde_json_for_any_split() {
        let text = "a\"b\\c\nd\u{1}é€😀\t\r\u{8}\u{c}\u{1f}";
        let want = serde_json::to_string(text).unwrap();
        for piece in 1..=text.len() {
            let got = escape_in_pieces(text.as_bytes(), piece);
            assert_eq!(alloc::format!("\"{got}\""), want, "piece {piece}");
        }
    }

    #[test]
    fn long_runs_and_escapes_match_serde_json() {
        let text = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=\"x\\y\u{7}z \
                    é€ long tail of plain text\u{7f}\n";
        let want = serde_json::to_string(text).unwrap();
        let mut out = Vec::new();
        escape_str(text, &mut out);
        assert_eq!(
            alloc::format!("\"{}\"", String::from_utf8(out).unwrap()),
            want
        );
        for piece in [1, 3, 4, 5, 64, 1000] {
            let got = escape_in_pieces(text.as_bytes(), piece);
            assert_eq!(alloc::format!("\"{got}\""), want, "piece {piece}");
        }
    }

    #[test]
    fn invalid_utf8_becomes_replacement() {
        assert_eq!(escape_in_pieces(b"a\xffb", 1), "a\u{fffd}b");
        assert_eq!(escape_in_pieces(b"a\xe2\x82", 1), "a\u{fffd}");
    }

    #[test]
    fn binary_escapes_as_its_lossy_text_in_pieces() {
        // Every byte value, then pseudo-random bytes with valid characters spliced in:
        // invalid sequences between valid stretches, as a `cat` of a binary file gives.
        let mut input: Vec<u8> = (0..=255u8).collect();
        let mut rng = Lcg(1);
        for i in 0..2000 {
            if i % 97 == 0 {
                input.extend_from_slice("é€😀 \"q\"\n".as_bytes());
            }
            input.push(rng.next_u64() as u8);
        }
        let want = serde_json::to_string(&String::from_utf8_lossy(&input)).unwrap();
        for piece in [1, 2, 3, 5, 64, 1000, input.len()] {
            let got = escape_in_pieces(&input, piece);
            assert_eq!(alloc::format!("\"{got}\""), want, "piece {piece}");
        }
    }
}
