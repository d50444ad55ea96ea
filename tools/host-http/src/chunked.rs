//! The chunked transfer coding (RFC 9112 §7.1): httparse reads each size line, this walks the
//! chunks, whole bodies for [`crate::parse`] and bodies as they arrive for [`Dechunker`].

use crate::Error;

/// One step through a chunked body.
enum Step {
    /// A chunk's data (`at..end` of the input) and the bytes the chunk takes.
    Data { at: usize, end: usize, used: usize },
    /// The last chunk and its trailer section: the bytes they take.
    Last(usize),
    /// More bytes are needed.
    Partial,
}

fn step(raw: &[u8]) -> Result<Step, Error> {
    let (at, size) = match httparse::parse_chunk_size(raw).map_err(|_| Error::BadChunk)? {
        httparse::Status::Partial => return Ok(Step::Partial),
        httparse::Status::Complete(c) => c,
    };
    let rest = &raw[at..];
    if size == 0 {
        // Trailer fields end with a blank line; with none, that line follows at once.
        if rest.starts_with(b"\r\n") {
            return Ok(Step::Last(at + 2));
        }
        return Ok(match rest.windows(4).position(|w| w == b"\r\n\r\n") {
            Some(i) => Step::Last(at + i + 4),
            None => Step::Partial,
        });
    }
    let size = usize::try_from(size).map_err(|_| Error::BadChunk)?;
    let Some(end) = at.checked_add(size) else {
        return Err(Error::BadChunk);
    };
    match raw.get(end..end + 2) {
        None => Ok(Step::Partial),
        Some(b"\r\n") => Ok(Step::Data {
            at,
            end,
            used: end + 2,
        }),
        Some(_) => Err(Error::BadChunk),
    }
}

/// Hands each chunk's data of the body at the start of `raw` to `data`; the bytes the whole body
/// takes, or `None` while it is incomplete.
pub(crate) fn walk(raw: &[u8], mut data: impl FnMut(&[u8])) -> Result<Option<usize>, Error> {
    let mut pos = 0;
    loop {
        match step(&raw[pos..])? {
            Step::Data { at, end, used } => {
                data(&raw[pos + at..pos + end]);
                pos += used;
            }
            Step::Last(used) => return Ok(Some(pos + used)),
            Step::Partial => return Ok(None),
        }
    }
}

/// A chunked body decoded as it arrives (an event stream's).
#[derive(Debug, Default)]
pub struct Dechunker {
    done: bool,
}

impl Dechunker {
    /// Appends the data of the complete chunks at the start of `raw` to `out`; returns how many
    /// bytes of `raw` they took. After the last chunk nothing more is taken.
    pub fn feed(&mut self, raw: &[u8], out: &mut Vec<u8>) -> Result<usize, Error> {
        let mut pos = 0;
        while !self.done {
            match step(&raw[pos..])? {
                Step::Data { at, end, used } => {
                    out.extend_from_slice(&raw[pos + at..pos + end]);
                    pos += used;
                }
                Step::Last(used) => {
                    pos += used;
                    self.done = true;
                }
                Step::Partial => break,
            }
        }
        Ok(pos)
    }

    /// Whether the last chunk has arrived.
    pub fn done(&self) -> bool {
        self.done
    }
}
