//! `screen.capture` and `irix7://screen`: a PNG thumbnail of what the display shows, encoded
//! from the framebuffer while the response streams (a batch of rows per poll, so other clients
//! are served meanwhile), plus a link to the full-resolution BMP the router serves at
//! `/screen.bmp`.

use super::Ctx;
use super::reach::{NetFigures, ScreenBoard};
use crate::hil::framebuffer::{FbError, Framebuffer, Mode, PixelKind};
use crate::services::screen::{Capture, CaptureError, Format, Poll};
use crate::services::screen::{Region, region::MAX_SCALE};
use crate::services::status::NetUsage;
use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use irix7_kmem::budget::Lease;
use rpc::json::{ObjectWriter, ValueRef, Written};
use rpc::mcp::{
    Annotations, Content, ContentSource, ErrorCode, ResourceContents, ResourceDef, SourcePoll,
    Started, StreamKind, TaskSupport, TaskTool, ToolCall, ToolDef, ToolError, ToolOutput,
};

/// Thumbnail divisor when the call names none: 1280×1024 becomes 640×512, where the 8×16
/// console font still reads as text (each glyph a 4×8 box-filtered cell).
pub const DEFAULT_SCALE: u32 = 2;
/// Where the router serves the full-resolution BMP.
pub const BMP_PATH: &str = "/screen.bmp";

pub const TOOLS: &[ToolDef<Ctx>] = &[CAPTURE];

/// `screen.capture` may run as a task (when it does not answer at once).
pub const TASKS: &[TaskTool] = &[TaskTool {
    name: CAPTURE.name,
    support: TaskSupport::Optional,
}];

const CAPTURE: ToolDef<Ctx> = ToolDef {
    name: "screen.capture",
    title: Some("Capture the screen"),
    description: "A PNG of what the Indy's display shows, read back from the Newport \
                  framebuffer, shrunk by `scale` (box filter: each scale x scale square is \
                  averaged). `region` cuts out a rectangle of screen pixels first. Also links \
                  the full-resolution, full-screen BMP (GET /screen.bmp with the same bearer \
                  token). The image streams as it is encoded.",
    input_schema: r#"{"type":"object","properties":{
  "scale":{"type":"integer","minimum":1,"maximum":16,"default":2,
    "description":"Divides width and height; 2 turns 1280x1024 into 640x512."},
  "region":{"type":"object","description":"Screen pixels to capture (default: all).",
    "properties":{"x":{"type":"integer","minimum":0},"y":{"type":"integer","minimum":0},
      "width":{"type":"integer","minimum":1},"height":{"type":"integer","minimum":1}},
    "required":["x","y","width","height"],"additionalProperties":false}},
  "additionalProperties":false}"#,
    output_schema: Some(
        r#"{"type":"object","properties":{
  "mode":{"type":"object","properties":{"width":{"type":"integer"},"height":{"type":"integer"},
    "pixels":{"type":"string","enum":["ci8","rgb8","rgb24"]}},
    "required":["width","height","pixels"]},
  "region":{"type":"object","properties":{"x":{"type":"integer"},"y":{"type":"integer"},
    "width":{"type":"integer"},"height":{"type":"integer"}},
    "required":["x","y","width","height"]},
  "scale":{"type":"integer"},"width":{"type":"integer"},"height":{"type":"integer"},
  "bmp":{"type":"string"}},
  "required":["mode","region","scale","width","height","bmp"]}"#,
    ),
    annotations: Annotations::READ_ONLY,
    requires: &[],
    errors: &[
        ErrorCode::NoDev,
        ErrorCode::Timeout,
        ErrorCode::NotSup,
        ErrorCode::Io,
    ],
    start: capture,
};

pub const RESOURCES: &[ResourceDef<Ctx>] = &[ResourceDef {
    uri: "irix7://screen",
    name: "screen",
    title: Some("Screen"),
    description: "A PNG of the whole display at scale 2 (640x512 for 1280x1024), the same \
                  image screen.capture answers by default.",
    mime_type: Some("image/png"),
    read: read_resource,
}];

fn capture<C: ScreenBoard + NetFigures>(
    ctx: &mut C,
    call: &ToolCall<'_>,
) -> Result<Started<C>, ToolError> {
    let scale = match call.args.get("scale").filter(|v| !v.is_null()) {
        None => DEFAULT_SCALE,
        Some(v) => v
            .as_u64()
            .and_then(|s| u32::try_from(s).ok())
            .filter(|s| (1..=MAX_SCALE).contains(s))
            .ok_or_else(|| {
                ToolError::new(
                    ErrorCode::Inval,
                    format!("`scale` must be an integer 1 to {MAX_SCALE}"),
                )
            })?,
    };
    let region = match call.args.get("region").filter(|v| !v.is_null()) {
        None => None,
        Some(v) => Some(region_arg(v)?),
    };
    let bmp = bmp_url(ctx.net());
    let room = capture_room(ctx)?;
    let fb = board(ctx)?;
    let cap = Capture::start(fb, Format::Png, region, scale).map_err(capture_error)?;
    let facts = facts(cap.mode(), &cap, &bmp);
    Ok(Started::Done(ToolOutput {
        content: alloc::vec![
            Content::stream(
                StreamKind::Image {
                    mime_type: String::from("image/png"),
                },
                Box::new(PngSource { cap, _room: room }),
            ),
            Content::resource_link(&bmp, "screen.bmp", Some("image/bmp")),
        ],
        structured: Some(facts),
        is_error: false,
    }))
}

fn region_arg(v: ValueRef<'_>) -> Result<Region, ToolError> {
    let field = |name: &str| {
        v.get(name)
            .and_then(|n| n.as_u64())
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| {
                ToolError::new(
                    ErrorCode::Inval,
                    format!("`region.{name}` must be a non-negative integer"),
                )
            })
    };
    Ok(Region {
        x: field("x")?,
        y: field("y")?,
        width: field("width")?,
        height: field("height")?,
    })
}

/// The structured result: what was captured and how.
fn facts(mode: &Mode, cap: &Capture, bmp: &str) -> Written {
    let s = cap.shrink();
    let pixels = match mode.pixels {
        PixelKind::Ci8 { .. } => "ci8",
        PixelKind::Rgb8 => "rgb8",
        PixelKind::Rgb24 => "rgb24",
    };
    let mut w = ObjectWriter::new(200 + bmp.len());
    w.key("bmp").str(bmp).key("height").u64(s.height.into());
    w.key("mode")
        .begin_object()
        .key("height")
        .u64(mode.height.into());
    w.key("pixels")
        .str(pixels)
        .key("width")
        .u64(mode.width.into());
    w.end_object();
    w.key("region").begin_object();
    w.key("height").u64(s.region.height.into());
    w.key("width").u64(s.region.width.into());
    w.key("x")
        .u64(s.region.x.into())
        .key("y")
        .u64(s.region.y.into());
    w.end_object();
    w.key("scale")
        .u64(s.scale.into())
        .key("width")
        .u64(s.width.into());
    w.finish()
}

/// The BMP's absolute URL when the module knows its address, else its path.
fn bmp_url(net: &NetUsage) -> String {
    match net.ip {
        Some([a, b, c, d]) => format!("http://{a}.{b}.{c}.{d}:{}{BMP_PATH}", net.port),
        None => String::from(BMP_PATH),
    }
}

/// The graphics board, or why there is none.
/// Room for a PNG capture, or `E_BUSY` while another runs: each boxes a deflate compressor
/// of about 300 KiB, and concurrent ones would run the heap out (`docs/bounds.md`).
fn capture_room(ctx: &impl ScreenBoard) -> Result<Lease, ToolError> {
    ctx.capture_room().ok_or_else(|| {
        ToolError::new(
            ErrorCode::Busy,
            "a screen capture is already running (one at a time); try again when it ends",
        )
    })
}

fn board(ctx: &mut impl ScreenBoard) -> Result<&mut dyn Framebuffer, ToolError> {
    match ctx.screen() {
        Some(fb) => Ok(fb),
        None => Err(ToolError::new(
            ErrorCode::NoDev,
            "no Newport graphics board was found at boot",
        )),
    }
}

/// The tool error for a capture that could not start or go on.
pub fn capture_error(e: CaptureError) -> ToolError {
    match e {
        CaptureError::Invalid(why) => ToolError::new(ErrorCode::Inval, why),
        CaptureError::Encode => ToolError::new(ErrorCode::Internal, "the PNG encoder failed"),
        CaptureError::Fb(FbError::NoDevice) => {
            ToolError::new(ErrorCode::NoDev, "the graphics board does not answer")
        }
        CaptureError::Fb(FbError::Timeout) => {
            ToolError::new(ErrorCode::Timeout, "the graphics board stayed busy")
        }
        CaptureError::Fb(FbError::Unsupported(why)) => ToolError::new(ErrorCode::NotSup, why),
        CaptureError::Fb(FbError::OutOfRange) => ToolError::new(
            ErrorCode::Io,
            "the screen mode changed during the capture; capture again",
        ),
    }
}

/// The PNG's bytes for the image block, a batch of rows per read.
struct PngSource {
    cap: Capture,
    /// The capture's share of the capture pool, until the PNG is out (or the answer dropped).
    _room: Lease,
}

impl<C: ScreenBoard> ContentSource<C> for PngSource {
    fn read(&mut self, ctx: &mut C, buf: &mut [u8]) -> Result<(usize, SourcePoll), ToolError> {
        let fb = board(ctx)?;
        let (piece, poll) = self.cap.piece(fb, buf.len()).map_err(capture_error)?;
        let n = piece.len().min(buf.len());
        if let (Some(to), Some(from)) = (buf.get_mut(..n), piece.get(..n)) {
            to.copy_from_slice(from);
        }
        Ok((
            n,
            match poll {
                Poll::Data => SourcePoll::Data,
                // Nothing to send yet: give the other clients this poll.
                Poll::Idle => SourcePoll::Pending,
                Poll::End => SourcePoll::End,
            },
        ))
    }
}

/// `irix7://screen` as a streamed item: the PNG is encoded while the answer goes out, a batch
/// of rows per read like `screen.capture`, so no poll runs the whole encode (~22M guest
/// instructions at scale 2). The server reads the resource this way once it is registered as
/// the URI's streamed reader; [`RESOURCES`] keeps the listing.
pub fn open_resource<C: ScreenBoard>(ctx: &mut C, uri: &str) -> Result<Content<C>, ToolError> {
    let room = capture_room(ctx)?;
    let fb = board(ctx)?;
    let cap = Capture::start(fb, Format::Png, None, DEFAULT_SCALE).map_err(capture_error)?;
    Ok(Content::stream(
        StreamKind::ResourceBlob {
            uri: String::from(uri),
            mime_type: String::from("image/png"),
        },
        Box::new(PngSource { cap, _room: room }),
    ))
}

/// `irix7://screen` encoded whole in one call: what a server without streamed reads answers.
fn read_resource<C: ScreenBoard>(
    ctx: &mut C,
    uri: &str,
) -> Result<Vec<ResourceContents>, ToolError> {
    let _room = capture_room(ctx)?;
    let fb = board(ctx)?;
    let png = Capture::start(fb, Format::Png, None, DEFAULT_SCALE)
        .and_then(|cap| cap.encode_all(fb))
        .map_err(capture_error)?;
    Ok(alloc::vec![ResourceContents::Blob {
        uri: String::from(uri),
        mime_type: Some(String::from("image/png")),
        data: png,
    }])
}

#[cfg(test)]
mod tests;
