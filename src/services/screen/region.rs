//! Which part of the screen a capture reads and how much it shrinks it: a rectangle checked
//! against the mode, and an integer scale whose box filter averages `scale`×`scale` pixels into
//! one (averaging, unlike dropping pixels, keeps thin console glyph strokes visible).

use crate::hil::framebuffer::Mode;
use alloc::format;
use alloc::string::String;

/// Largest scale divisor: 1280×1024 becomes 80×64.
pub const MAX_SCALE: u32 = 16;

/// A rectangle of screen pixels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    pub x: u32,
    pub y: u32,
    pub width: u32,
    pub height: u32,
}

impl Region {
    /// The whole screen of `mode`.
    pub fn full(mode: &Mode) -> Region {
        Region {
            x: 0,
            y: 0,
            width: mode.width,
            height: mode.height,
        }
    }
}

/// A region and the thumbnail it shrinks to. Pixels past the last whole `scale`×`scale` box
/// (at most `scale - 1` columns on the right and rows at the bottom) are left out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shrink {
    pub region: Region,
    pub scale: u32,
    /// Size of the result.
    pub width: u32,
    pub height: u32,
}

impl Shrink {
    /// Checks that `region` lies inside `mode` and holds at least one `scale`×`scale` box;
    /// the error says what is wrong, for the user.
    pub fn new(mode: &Mode, region: Region, scale: u32) -> Result<Shrink, String> {
        if scale == 0 || scale > MAX_SCALE {
            return Err(format!("scale must be 1 to {MAX_SCALE}, not {scale}"));
        }
        let Region {
            x,
            y,
            width,
            height,
        } = region;
        let inside = x
            .checked_add(width)
            .is_some_and(|right| right <= mode.width)
            && y.checked_add(height)
                .is_some_and(|bottom| bottom <= mode.height);
        if !inside {
            return Err(format!(
                "region {width}x{height} at ({x},{y}) does not fit the {}x{} screen",
                mode.width, mode.height
            ));
        }
        if width < scale || height < scale {
            return Err(format!(
                "region {width}x{height} is smaller than one {scale}x{scale} box"
            ));
        }
        Ok(Shrink {
            region,
            scale,
            width: width / scale,
            height: height / scale,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hil::framebuffer::PixelKind;

    const MODE: Mode = Mode {
        width: 1280,
        height: 1024,
        pixels: PixelKind::Rgb24,
    };

    fn r(x: u32, y: u32, width: u32, height: u32) -> Region {
        Region {
            x,
            y,
            width,
            height,
        }
    }

    #[test]
    fn the_full_screen_at_scale_two_is_640_by_512() {
        let s = Shrink::new(&MODE, Region::full(&MODE), 2).unwrap();
        assert_eq!((s.width, s.height), (640, 512));
    }

    #[test]
    fn partial_boxes_are_left_out() {
        let s = Shrink::new(&MODE, r(10, 20, 101, 35), 4).unwrap();
        assert_eq!((s.width, s.height), (25, 8));
    }

    #[test]
    fn regions_outside_the_screen_are_refused() {
        assert!(Shrink::new(&MODE, r(1279, 0, 2, 1), 1).is_err());
        assert!(Shrink::new(&MODE, r(0, 1000, 1, 25), 1).is_err());
        assert!(Shrink::new(&MODE, r(u32::MAX, 0, 2, 1), 1).is_err());
        assert!(Shrink::new(&MODE, r(0, 0, 1280, 1024), 1).is_ok());
    }

    #[test]
    fn empty_regions_and_bad_scales_are_refused() {
        assert!(Shrink::new(&MODE, r(0, 0, 0, 10), 1).is_err());
        assert!(Shrink::new(&MODE, r(0, 0, 3, 10), 4).is_err());
        let e = Shrink::new(&MODE, Region::full(&MODE), 0).unwrap_err();
        assert!(e.contains("scale must be 1 to 16"), "{e}");
        assert!(Shrink::new(&MODE, Region::full(&MODE), 17).is_err());
    }
}
