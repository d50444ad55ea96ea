//! The screen half of `cargo xtask mame --smoke`: what the module reads back through MAME's
//! REX3 (the full-size `screen.capture` PNG and `/screen.bmp`, saved by `rom/tools/mcp-smoke.py
//! --save-screen`) must be the picture MAME itself shows (a snapshot the Lua script takes once
//! the module serves; nothing draws after that). `docs/hardware-fidelity.md` says what the
//! comparison checks and what it cannot.

use std::path::Path;

/// An RGB picture, rows top-down.
#[derive(Debug, PartialEq)]
pub struct Rgb {
    pub width: usize,
    pub height: usize,
    pub px: Vec<[u8; 3]>,
}

/// Columns MAME 0.251 leaves undrawn at the right edge: its Newport `screen_update` loops
/// `x < cliprect.max_x`, so the last visible column keeps the bitmap's initial black.
pub const MAME_UNDRAWN_COLUMNS: usize = 1;

/// A real picture has at least this many colours (the stand-in's has 25): comparing two black
/// screens must not pass.
const MIN_COLOURS: usize = 16;

/// The Lua that stands in for MAME's missing CMAP palette reads. MAME answers a CMAP read at
/// CRS 2 with 0; this read tap on the REX3's DCBDATA0 (in MAME's GIO64 space, where the REX3
/// sits at 0xF0000) replaces that answer, when DCBMODE names CMAP0 or CMAP1 and CRS 2, with the
/// entry at the CMAP's own address register from the CMAP's own palette (MAME's state, the one
/// its screen is drawn from), as `R<<24 | G<<16 | B<<8`. It counts the reads it answered.
pub const CMAP_READ_LUA: &str = r#"
local gfx = manager.machine.devices[":gio64_gfx:xl24"]
local dcb_mode = emu.item(gfx.items["0/m_rex3.m_dcb_mode"])
local cmaps = {}
for n = 0, 1 do
  local d = manager.machine.devices[":gio64_gfx:xl24:cmap" .. n]
  cmaps[n + 2] = { idx = emu.item(d.items["0/m_palette_idx"]), pal = emu.item(d.items["0/m_palette"]) }
end
local cmap_reads = 0
local gio = manager.machine.devices[":gio64"].spaces["gio64"]
cmap_tap = gio:install_read_tap(0xf0240, 0xf0247, "cmap-palette-read", function(offset, data, mask)
  -- Only the DCB mode is looked at: `data` and `mask` reach Lua as floats when their top
  -- bit is set, and bit operations on those fail. Returning nothing keeps MAME's answer.
  local mode = dcb_mode:read(0)
  local c = cmaps[(mode >> 7) & 0xf]
  if c == nil or ((mode >> 4) & 7) ~= 2 then return end
  cmap_reads = cmap_reads + 1
  return (c.pal:read(c.idx:read(0)) & 0xffffff) << 40
end)
"#;

/// Compares the module's two captures in `dir` with MAME's snapshot in `dir/snap`; the
/// summary when they agree, else how they differ.
pub fn compare(dir: &Path) -> Result<String, String> {
    let read = |p: &Path| std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()));
    let snap_dir = dir.join("snap/indy_4610");
    // The first snapshot (0000.png) is the boot the module was captured in; the script takes
    // another after `system.reset`.
    let snap = std::fs::read_dir(&snap_dir)
        .map_err(|e| format!("{}: {e} (MAME took no snapshot)", snap_dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "png"))
        .min()
        .ok_or("MAME took no snapshot")?;
    let mame = decode_png(&read(&snap)?)?;
    let capture = decode_png(&read(&dir.join("capture.png"))?)?;
    let bmp = decode_bmp(&read(&dir.join("screen.bmp"))?)?;
    let colours = colour_count(&mame);
    if colours < MIN_COLOURS {
        return Err(format!(
            "MAME's screen shows {colours} colours: the stand-in's picture is not on it"
        ));
    }
    diff(&capture, &bmp, 0).map_err(|e| format!("screen.capture and /screen.bmp differ: {e}"))?;
    diff(&capture, &mame, MAME_UNDRAWN_COLUMNS)
        .map_err(|e| format!("screen.capture differs from MAME's screen: {e}"))?;
    Ok(format!(
        "screen.capture (scale 1) and /screen.bmp equal MAME's snapshot, {}x{}, {colours} colours, pixel for pixel but for MAME's undrawn last column",
        mame.width, mame.height
    ))
}

/// Distinct colours in `p`.
fn colour_count(p: &Rgb) -> usize {
    p.px.iter().collect::<std::collections::HashSet<_>>().len()
}

/// Whether `a` and `b` are the same size and pixel for pixel equal, leaving out the last
/// `skip_right` columns; else the count of differing pixels and the first one.
pub fn diff(a: &Rgb, b: &Rgb, skip_right: usize) -> Result<(), String> {
    if (a.width, a.height) != (b.width, b.height) {
        return Err(format!(
            "{}x{} against {}x{}",
            a.width, a.height, b.width, b.height
        ));
    }
    let mut first = None;
    let mut count = 0usize;
    for y in 0..a.height {
        for x in 0..a.width.saturating_sub(skip_right) {
            let (p, q) = (a.px[y * a.width + x], b.px[y * b.width + x]);
            if p != q {
                count += 1;
                first.get_or_insert((x, y, p, q));
            }
        }
    }
    match first {
        None => Ok(()),
        Some((x, y, p, q)) => Err(format!(
            "{count} pixels differ, the first at ({x}, {y}): {p:?} against {q:?}"
        )),
    }
}

pub fn decode_png(bytes: &[u8]) -> Result<Rgb, String> {
    let decoder = png::Decoder::new(std::io::Cursor::new(bytes));
    let mut reader = decoder.read_info().map_err(|e| format!("PNG: {e}"))?;
    let size = reader.output_buffer_size().ok_or("PNG: no size")?;
    let mut buf = vec![0; size];
    let info = reader
        .next_frame(&mut buf)
        .map_err(|e| format!("PNG: {e}"))?;
    let step = match (info.color_type, info.bit_depth) {
        (png::ColorType::Rgb, png::BitDepth::Eight) => 3,
        (png::ColorType::Rgba, png::BitDepth::Eight) => 4,
        other => return Err(format!("PNG of {other:?}, not 8-bit RGB")),
    };
    let px = buf[..info.buffer_size()]
        .chunks_exact(step)
        .map(|c| [c[0], c[1], c[2]])
        .collect();
    Ok(Rgb {
        width: info.width as usize,
        height: info.height as usize,
        px,
    })
}

pub fn decode_bmp(bytes: &[u8]) -> Result<Rgb, String> {
    let img =
        bmp::from_reader(&mut std::io::Cursor::new(bytes)).map_err(|e| format!("BMP: {e}"))?;
    let (w, h) = (img.get_width(), img.get_height());
    let mut px = Vec::with_capacity(w as usize * h as usize);
    for y in 0..h {
        for x in 0..w {
            let p = img.get_pixel(x, y);
            px.push([p.r, p.g, p.b]);
        }
    }
    Ok(Rgb {
        width: w as usize,
        height: h as usize,
        px,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn picture(w: usize, h: usize, f: impl Fn(usize, usize) -> [u8; 3]) -> Rgb {
        let px = (0..h)
            .flat_map(|y| (0..w).map(move |x| (x, y)))
            .map(|(x, y)| f(x, y))
            .collect();
        Rgb {
            width: w,
            height: h,
            px,
        }
    }

    #[test]
    fn diff_counts_and_names_the_first_difference() {
        let a = picture(4, 3, |x, y| [x as u8, y as u8, 7]);
        let mut b = picture(4, 3, |x, y| [x as u8, y as u8, 7]);
        assert_eq!(diff(&a, &b, 0), Ok(()));
        b.px[6] = [0, 0, 0];
        b.px[11] = [1, 1, 1];
        assert_eq!(
            diff(&a, &b, 0),
            Err("2 pixels differ, the first at (2, 1): [2, 1, 7] against [0, 0, 0]".into())
        );
        // The last column (x = 3, which holds pixel 11) is left out with skip_right 1.
        assert!(diff(&a, &b, 1).unwrap_err().starts_with("1 pixels differ"));
        let c = picture(3, 3, |_, _| [0; 3]);
        assert_eq!(diff(&a, &c, 0), Err("4x3 against 3x3".into()));
    }

    #[test]
    fn png_and_bmp_decode_to_the_same_pixels() {
        let want = picture(5, 2, |x, y| [x as u8 * 40, y as u8 * 90, 200]);
        let mut png_bytes = Vec::new();
        {
            let mut enc = png::Encoder::new(&mut png_bytes, 5, 2);
            enc.set_color(png::ColorType::Rgb);
            enc.set_depth(png::BitDepth::Eight);
            let mut w = enc.write_header().unwrap();
            let flat: Vec<u8> = want.px.iter().flatten().copied().collect();
            w.write_image_data(&flat).unwrap();
        }
        assert_eq!(decode_png(&png_bytes), Ok(want));
        let mut img = bmp::Image::new(5, 2);
        for (x, y) in img.coordinates() {
            img.set_pixel(x, y, bmp::Pixel::new(x as u8 * 40, y as u8 * 90, 200));
        }
        let mut bmp_bytes = Vec::new();
        img.to_writer(&mut bmp_bytes).unwrap();
        assert_eq!(
            decode_bmp(&bmp_bytes),
            Ok(picture(5, 2, |x, y| [x as u8 * 40, y as u8 * 90, 200]))
        );
        assert!(decode_png(b"not a png").is_err());
    }

    #[test]
    fn a_screen_of_few_colours_is_not_a_picture() {
        assert_eq!(colour_count(&picture(8, 8, |_, _| [0; 3])), 1);
        assert_eq!(colour_count(&picture(64, 2, |x, _| [x as u8, 0, 0])), 64);
    }
}
