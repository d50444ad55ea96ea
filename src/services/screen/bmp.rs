//! A streaming BMP writer: 24-bit BI_RGB with a 40-byte BITMAPINFOHEADER and a positive height,
//! so rows are stored bottom-up — the layout every BMP reader accepts (top-down files with a
//! negative height are refused by some). The caller hands rows over from the bottom, already
//! in BGR order; each row is written as it comes, so a 1280×1024 capture (3.9 MB) never sits in memory.

use alloc::vec::Vec;

/// Bytes before the pixel data: file header (14) and info header (40).
pub const HEADER_LEN: u32 = 54;

/// Bytes of one stored row: three per pixel, padded to a multiple of four.
pub fn stride(width: u32) -> u32 {
    (width * 3).next_multiple_of(4)
}

/// Size of the whole file.
pub fn file_len(width: u32, height: u32) -> u64 {
    u64::from(HEADER_LEN) + u64::from(stride(width)) * u64::from(height)
}

/// Appends the file and info headers of a `width`×`height` image.
pub fn header(width: u32, height: u32, out: &mut Vec<u8>) {
    let image = stride(width).saturating_mul(height);
    let size = HEADER_LEN.saturating_add(image);
    out.extend_from_slice(b"BM");
    for v in [size, 0, HEADER_LEN, 40, width, height] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    // One plane, 24 bits per pixel, BI_RGB (no compression).
    out.extend_from_slice(&1u16.to_le_bytes());
    out.extend_from_slice(&24u16.to_le_bytes());
    // Compression, image size, 2835 pixels per metre (72 dpi) both ways, palette sizes.
    for v in [0, image, 2835, 2835, 0, 0] {
        out.extend_from_slice(&v.to_le_bytes());
    }
}

/// Appends one row given as BGR triples (the order BMP stores), padded.
pub fn row(bgr: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(bgr);
    let pad = (bgr.len() as u32).next_multiple_of(4) as usize - bgr.len();
    out.extend_from_slice(&[0; 3][..pad.min(3)]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_two_by_two_file_is_laid_out_bottom_up_and_padded() {
        let mut out = Vec::new();
        header(2, 2, &mut out);
        assert_eq!(out.len(), HEADER_LEN as usize);
        row(&[3, 2, 1, 6, 5, 4], &mut out); // the bottom row first
        row(&[9, 8, 7, 12, 11, 10], &mut out);
        assert_eq!(out.len() as u64, file_len(2, 2));
        assert_eq!(&out[..2], b"BM");
        assert_eq!(u32::from_le_bytes(out[2..6].try_into().unwrap()), 70);
        assert_eq!(u32::from_le_bytes(out[10..14].try_into().unwrap()), 54);
        assert_eq!(i32::from_le_bytes(out[22..26].try_into().unwrap()), 2);
        assert_eq!(u16::from_le_bytes(out[28..30].try_into().unwrap()), 24);
        assert_eq!(u32::from_le_bytes(out[34..38].try_into().unwrap()), 16);
        assert_eq!(&out[54..62], &[3, 2, 1, 6, 5, 4, 0, 0]);
        assert_eq!(&out[62..70], &[9, 8, 7, 12, 11, 10, 0, 0]);
    }

    #[test]
    fn the_full_screen_needs_no_padding() {
        assert_eq!(stride(1280), 3840);
        assert_eq!(file_len(1280, 1024), 54 + 3840 * 1024);
        assert_eq!(stride(1), 4);
        assert_eq!(stride(5), 16);
    }
}
