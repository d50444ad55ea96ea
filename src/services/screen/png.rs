//! A streaming PNG encoder: 8-bit RGB, no interlace, filter type 0 (None) on every row — the
//! cheapest filter, and console screens are runs of one colour that deflate catches anyway.
//! Rows go into one deflate (zlib) stream; whatever compressed bytes a batch of rows produced
//! become one IDAT chunk, so memory stays at the compressor's state plus one batch's output.

use alloc::boxed::Box;
use alloc::vec::Vec;
use miniz_oxide::deflate::core::{
    CompressorOxide, TDEFLFlush, TDEFLStatus, compress_to_output, create_comp_flags_from_zip_params,
};

const SIGNATURE: [u8; 8] = [0x89, b'P', b'N', b'G', b'\r', b'\n', 0x1A, b'\n'];
/// PNG chunk CRC: CRC-32 (ISO-HDLC), over the chunk type and data.
const CRC32: crc::Crc<u32> = crc::Crc::<u32>::new(&crc::CRC_32_ISO_HDLC);
/// zlib level 1 (greedy matching, one probe): screens compress well at it and it is the
/// cheapest level that still finds matches.
const LEVEL: i32 = 1;

/// Why encoding stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PngError {
    /// A row of the wrong length, or a row after the last.
    Misuse,
    /// The compressor refused its input.
    Deflate,
}

pub struct PngEncoder {
    deflate: Box<CompressorOxide>,
    /// Compressed bytes not yet wrapped in an IDAT chunk.
    idat: Vec<u8>,
    width: u32,
    rows_left: u32,
}

impl PngEncoder {
    /// Starts an image of `width`×`height` and appends the signature and IHDR to `out`.
    pub fn new(width: u32, height: u32, out: &mut Vec<u8>) -> PngEncoder {
        let flags = create_comp_flags_from_zip_params(LEVEL, 15, 0);
        out.extend_from_slice(&SIGNATURE);
        let mut ihdr = [0u8; 13];
        ihdr[..4].copy_from_slice(&width.to_be_bytes());
        ihdr[4..8].copy_from_slice(&height.to_be_bytes());
        // Bit depth 8, colour type 2 (RGB), deflate, filter method 0, no interlace.
        ihdr[8..].copy_from_slice(&[8, 2, 0, 0, 0]);
        chunk(out, b"IHDR", &ihdr);
        PngEncoder {
            deflate: Box::new(CompressorOxide::new(flags)),
            idat: Vec::new(),
            width,
            rows_left: height,
        }
    }

    /// Compresses one row as PNG stores it: its filter type (0) and `width` RGB triples. The
    /// caller leaves room for the filter byte, so the row goes to the compressor in one call.
    pub fn row(&mut self, line: &[u8]) -> Result<(), PngError> {
        if self.rows_left == 0 || line.len() != 1 + self.width as usize * 3 || line[0] != 0 {
            return Err(PngError::Misuse);
        }
        self.rows_left -= 1;
        self.compress(line, TDEFLFlush::None)
    }

    /// Wraps the compressed bytes so far in an IDAT chunk (nothing if there are none).
    pub fn drain(&mut self, out: &mut Vec<u8>) {
        if !self.idat.is_empty() {
            chunk(out, b"IDAT", &self.idat);
            self.idat.clear();
        }
    }

    /// Ends the stream after the last row: the last IDAT and IEND.
    pub fn finish(&mut self, out: &mut Vec<u8>) -> Result<(), PngError> {
        if self.rows_left != 0 {
            return Err(PngError::Misuse);
        }
        self.compress(&[], TDEFLFlush::Finish)?;
        self.drain(out);
        chunk(out, b"IEND", &[]);
        Ok(())
    }

    fn compress(&mut self, input: &[u8], flush: TDEFLFlush) -> Result<(), PngError> {
        let idat = &mut self.idat;
        let (status, used) = compress_to_output(&mut self.deflate, input, flush, |bytes| {
            idat.extend_from_slice(bytes);
            true
        });
        match status {
            TDEFLStatus::Okay | TDEFLStatus::Done if used == input.len() => Ok(()),
            _ => Err(PngError::Deflate),
        }
    }
}

/// Appends one chunk: length, type, data, CRC.
fn chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    out.extend_from_slice(kind);
    out.extend_from_slice(data);
    let mut crc = CRC32.digest();
    crc.update(kind);
    crc.update(data);
    out.extend_from_slice(&crc.finalize().to_be_bytes());
}

#[cfg(test)]
pub(crate) mod decode {
    //! A minimal PNG reader for the tests: checks every chunk's CRC and inflates the IDATs.
    use alloc::vec::Vec;

    pub struct Decoded {
        pub width: u32,
        pub height: u32,
        /// Rows of RGB, each without its filter byte (the encoder writes filter 0 only).
        pub rgb: Vec<u8>,
    }

    pub fn decode(png: &[u8]) -> Decoded {
        assert_eq!(&png[..8], &super::SIGNATURE);
        let mut at = 8;
        let (mut width, mut height) = (0, 0);
        let mut z = Vec::new();
        let mut ended = false;
        while at < png.len() {
            let len = u32::from_be_bytes(png[at..at + 4].try_into().unwrap()) as usize;
            let kind = &png[at + 4..at + 8];
            let data = &png[at + 8..at + 8 + len];
            let crc = u32::from_be_bytes(png[at + 8 + len..at + 12 + len].try_into().unwrap());
            let mut d = super::CRC32.digest();
            d.update(kind);
            d.update(data);
            assert_eq!(d.finalize(), crc, "CRC of {kind:?}");
            match kind {
                b"IHDR" => {
                    width = u32::from_be_bytes(data[..4].try_into().unwrap());
                    height = u32::from_be_bytes(data[4..8].try_into().unwrap());
                    assert_eq!(&data[8..], &[8, 2, 0, 0, 0]);
                }
                b"IDAT" => {
                    z.extend_from_slice(data);
                }
                b"IEND" => ended = true,
                _ => panic!("unexpected chunk"),
            }
            at += 12 + len;
        }
        assert!(ended);
        let raw = miniz_oxide::inflate::decompress_to_vec_zlib(&z).expect("zlib stream");
        let stride = width as usize * 3 + 1;
        assert_eq!(raw.len(), stride * height as usize);
        let mut rgb = Vec::new();
        for row in raw.chunks_exact(stride) {
            assert_eq!(row[0], 0, "filter type");
            rgb.extend_from_slice(&row[1..]);
        }
        Decoded { width, height, rgb }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_round_trip_through_a_zlib_decoder() {
        let mut out = Vec::new();
        let mut png = PngEncoder::new(3, 2, &mut out);
        png.row(&[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]).unwrap();
        png.drain(&mut out);
        png.row(&[0, 9, 8, 7, 6, 5, 4, 3, 2, 1]).unwrap();
        png.finish(&mut out).unwrap();
        let d = decode::decode(&out);
        assert_eq!((d.width, d.height), (3, 2));
        assert_eq!(
            d.rgb,
            [1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 8, 7, 6, 5, 4, 3, 2, 1]
        );
    }

    #[test]
    fn misuse_is_an_error_not_a_bad_file() {
        let mut out = Vec::new();
        let mut png = PngEncoder::new(2, 1, &mut out);
        assert_eq!(png.row(&[0; 6]), Err(PngError::Misuse));
        assert_eq!(png.row(&[1, 0, 0, 0, 0, 0, 0]), Err(PngError::Misuse));
        assert_eq!(png.finish(&mut out), Err(PngError::Misuse));
        png.row(&[0; 7]).unwrap();
        assert_eq!(png.row(&[0; 7]), Err(PngError::Misuse));
    }

    #[test]
    fn the_ihdr_crc_is_the_known_one() {
        // IHDR of a 1×1 RGB image: CRC 0x907753DE (computed by zlib's crc32).
        let mut out = Vec::new();
        PngEncoder::new(1, 1, &mut out);
        assert_eq!(&out[29..33], &[0x90, 0x77, 0x53, 0xDE]);
    }
}
