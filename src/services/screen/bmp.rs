//! A streaming BMP writer: 24-bit BI_RGB with a 40-byte BITMAPINFOHEADER and a positive height,
//! so rows are stored bottom-up — the layout every BMP reader accepts (top-down files with a
//! negative height are refused by some). The capture writes the rows from the bottom, in BGR
//! order, a batch at a time, so a 1280×1024 capture (3.9 MB) never sits in memory.

/// Bytes before the pixel data: file header (14) and info header (40).
pub const HEADER_LEN: u32 = 54;

/// Bytes of one stored row: three per pixel, padded to a multiple of four.
pub fn stride(width: u32) -> u32 {
    (width * 3).next_multiple_of(4)
}

/// Size of the whole file (the tests check what the encoders and the router write by it).
#[cfg(test)]
pub fn file_len(width: u32, height: u32) -> u64 {
    u64::from(HEADER_LEN) + u64::from(stride(width)) * u64::from(height)
}

/// The file and info headers of a `width`×`height` image.
pub fn header(width: u32, height: u32) -> [u8; HEADER_LEN as usize] {
    let image = stride(width).saturating_mul(height);
    let size = HEADER_LEN.saturating_add(image);
    let mut out = [0u8; HEADER_LEN as usize];
    out[..2].copy_from_slice(b"BM");
    // Size, reserved, pixel data offset, info header size, width, height; one plane, 24 bits
    // per pixel; BI_RGB (no compression), image size, 2835 pixels per metre (72 dpi) both
    // ways, palette sizes.
    let fields = [
        size,
        0,
        HEADER_LEN,
        40,
        width,
        height,
        1 | 24 << 16,
        0,
        image,
        2835,
        2835,
    ];
    for (at, v) in out[2..].as_chunks_mut::<4>().0.iter_mut().zip(fields) {
        *at = v.to_le_bytes();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_of_a_two_by_two_file() {
        let out = header(2, 2);
        assert_eq!(&out[..2], b"BM");
        let u32_at = |at: usize| u32::from_le_bytes(out[at..at + 4].try_into().unwrap());
        let u16_at = |at: usize| u16::from_le_bytes(out[at..at + 2].try_into().unwrap());
        assert_eq!(u64::from(u32_at(2)), file_len(2, 2));
        assert_eq!(u32_at(6), 0);
        assert_eq!(u32_at(10), 54);
        assert_eq!(u32_at(14), 40);
        assert_eq!((u32_at(18), u32_at(22)), (2, 2));
        assert_eq!((u16_at(26), u16_at(28)), (1, 24));
        assert_eq!(u32_at(30), 0);
        assert_eq!(u32_at(34), 16);
        assert_eq!((u32_at(38), u32_at(42)), (2835, 2835));
        assert_eq!(&out[46..], &[0; 8]);
    }

    #[test]
    fn the_full_screen_needs_no_padding() {
        assert_eq!(stride(1280), 3840);
        assert_eq!(file_len(1280, 1024), 54 + 3840 * 1024);
        assert_eq!(stride(1), 4);
        assert_eq!(stride(5), 16);
    }
}
