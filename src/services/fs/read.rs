//! A range of an open file read in steps: the check that a text read is UTF-8, a piece a step
//! (so a large file never stalls the poll), and then its bytes in order. This is the
//! filesystem's work, whatever protocol carries the result: `tools/fs.rs` wraps it in a tool
//! run and a content source.

use super::Fs;
use super::error::FsError;
use super::overlay::FileHandle;
use alloc::vec::Vec;

/// Bytes a UTF-8 check reads in one step.
pub const CHECK_STEP: usize = 32 * 1024;

/// Why a range could not be read.
#[derive(Debug)]
pub enum ReadError {
    Fs(FsError),
    /// The file ended before the range did: it shrank while it was being read.
    Shrank,
    /// The range is not UTF-8: an invalid sequence starts at this byte of the file.
    NotUtf8 {
        at: u64,
    },
}

impl From<FsError> for ReadError {
    fn from(e: FsError) -> Self {
        ReadError::Fs(e)
    }
}

/// The bytes `[offset, end)` of an open file.
pub struct FileRange {
    pub file: FileHandle,
    pub offset: u64,
    pub end: u64,
}

impl FileRange {
    /// Cuts the range back to end on a whole UTF-8 character (a byte limit may have cut one).
    pub fn end_on_char(&mut self, fs: &mut Fs) -> Result<(), FsError> {
        let mut tail = [0u8; 4];
        let from = self.end.saturating_sub(3).max(self.offset);
        let got = fs.read_at(&self.file, from, &mut tail)?;
        let cut = tail
            .get(..got.min((self.end - from) as usize))
            .unwrap_or(&[]);
        self.end = from + irix7_kmem::complete_utf8(cut) as u64;
        Ok(())
    }
}

/// Checks that a [`FileRange`] is UTF-8, [`CHECK_STEP`] bytes a step; a character cut between
/// two steps is carried to the next.
pub struct Utf8Check {
    pos: u64,
    /// An incomplete character at the end of the last piece.
    carry: Vec<u8>,
    buf: Vec<u8>,
}

impl Utf8Check {
    pub fn new(range: &FileRange) -> Utf8Check {
        Utf8Check {
            pos: range.offset,
            carry: Vec::new(),
            buf: Vec::new(),
        }
    }

    /// Checks the next piece of `range`: `Ok(true)` once all of it is known to be UTF-8.
    pub fn step(&mut self, fs: &mut Fs, range: &FileRange) -> Result<bool, ReadError> {
        if self.pos >= range.end {
            return match self.carry.is_empty() {
                true => Ok(true),
                false => Err(ReadError::NotUtf8 { at: self.pos }),
            };
        }
        let want = ((range.end - self.pos) as usize).min(CHECK_STEP);
        self.buf.clear();
        self.buf.extend_from_slice(&self.carry);
        let have = self.buf.len();
        self.buf.resize(have + want, 0);
        let got = match fs.read_at(&range.file, self.pos, &mut self.buf[have..])? {
            0 => return Err(ReadError::Shrank),
            n => n,
        };
        self.buf.truncate(have + got);
        self.pos += got as u64;
        self.carry.clear();
        if let Err(e) = core::str::from_utf8(&self.buf) {
            if e.error_len().is_some() {
                let at = self.pos - (self.buf.len() - e.valid_up_to()) as u64;
                return Err(ReadError::NotUtf8 { at });
            }
            self.carry
                .extend_from_slice(self.buf.get(e.valid_up_to()..).unwrap_or(&[]));
        }
        Ok(false)
    }
}

/// Hands out a [`FileRange`]'s bytes in order, as many as the caller has room for.
pub struct RangeReader {
    /// Next byte to hand out.
    pos: u64,
}

impl RangeReader {
    pub fn new(range: &FileRange) -> RangeReader {
        RangeReader { pos: range.offset }
    }

    /// Fills the front of `buf` with the next bytes of `range`: how many, and whether that was
    /// the last of them.
    pub fn read(
        &mut self,
        fs: &mut Fs,
        range: &FileRange,
        buf: &mut [u8],
    ) -> Result<(usize, bool), ReadError> {
        if self.pos >= range.end {
            return Ok((0, true));
        }
        let left = usize::try_from(range.end - self.pos).unwrap_or(usize::MAX);
        let want = buf.len().min(left);
        let got = fs.read_at(
            &range.file,
            self.pos,
            buf.get_mut(..want).unwrap_or_default(),
        )?;
        if got < want {
            return Err(ReadError::Shrank);
        }
        self.pos += got as u64;
        Ok((got, self.pos >= range.end))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::services::fs::overlay::{Overlay, WriteMode};

    /// A filesystem holding `/f` with `data`, and the range `[offset, end)` of it.
    fn file(data: &[u8], offset: u64, end: u64) -> (Fs, FileRange) {
        let mut fs: Fs = Overlay::new(None, 1 << 20);
        fs.write("/f", data, WriteMode::Truncate).unwrap();
        let file = fs.open("/f").unwrap();
        (fs, FileRange { file, offset, end })
    }

    fn check_all(fs: &mut Fs, range: &FileRange) -> Result<usize, ReadError> {
        let mut check = Utf8Check::new(range);
        let mut steps = 1;
        while !check.step(fs, range)? {
            steps += 1;
        }
        Ok(steps)
    }

    #[test]
    fn a_character_cut_between_steps_is_carried_and_a_bad_byte_is_placed() {
        // "é" (2 bytes) straddles the first step's end.
        let mut text = alloc::vec![b'a'; CHECK_STEP - 1];
        text.extend_from_slice("é and more".as_bytes());
        let (mut fs, range) = file(&text, 0, text.len() as u64);
        assert_eq!(
            check_all(&mut fs, &range).unwrap(),
            3,
            "two pieces, then done"
        );

        text[CHECK_STEP + 5] = 0xff;
        let (mut fs, range) = file(&text, 0, text.len() as u64);
        match check_all(&mut fs, &range) {
            Err(ReadError::NotUtf8 { at }) => assert_eq!(at, CHECK_STEP as u64 + 5),
            other => panic!("{other:?}"),
        }
        // A range that ends inside a character is not UTF-8 either.
        let (mut fs, range) = file("aé".as_bytes(), 0, 2);
        assert!(matches!(
            check_all(&mut fs, &range),
            Err(ReadError::NotUtf8 { at: 2 })
        ));
    }

    #[test]
    fn a_range_cut_inside_a_character_ends_before_it() {
        let (mut fs, mut range) = file("abé".as_bytes(), 0, 3);
        range.end_on_char(&mut fs).unwrap();
        assert_eq!(range.end, 2);
        let (mut fs, mut range) = file("abé".as_bytes(), 1, 4);
        range.end_on_char(&mut fs).unwrap();
        assert_eq!(range.end, 4, "a whole character stays");
    }

    #[test]
    fn a_range_is_handed_out_in_order_and_a_shrunk_file_is_an_error() {
        let (mut fs, range) = file(b"0123456789", 2, 9);
        let mut reader = RangeReader::new(&range);
        let mut buf = [0u8; 4];
        assert_eq!(reader.read(&mut fs, &range, &mut buf).unwrap(), (4, false));
        assert_eq!(&buf, b"2345");
        assert_eq!(reader.read(&mut fs, &range, &mut buf).unwrap(), (3, true));
        assert_eq!(&buf[..3], b"678");
        assert_eq!(reader.read(&mut fs, &range, &mut buf).unwrap(), (0, true));

        let (mut fs, range) = file(b"0123456789", 0, 10);
        let mut reader = RangeReader::new(&range);
        fs.write("/f", b"01", WriteMode::Truncate).unwrap();
        assert!(matches!(
            reader.read(&mut fs, &range, &mut buf),
            Err(ReadError::Shrank)
        ));
    }
}
