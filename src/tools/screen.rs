//! `screen.capture` and `irix7://screen`: a PNG thumbnail of what the display shows, encoded
//! from the framebuffer while the response streams (a batch of rows per poll, so other clients
//! are served meanwhile), plus a link to the full-resolution BMP the router serves at
//! `/screen.bmp`.

use super::Ctx;
use crate::hil::framebuffer::{FbError, Framebuffer, Mode, PixelKind};
use crate::services::screen::{Capture, CaptureError, Format, Poll};
use crate::services::screen::{Region, region::MAX_SCALE};
use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use rpc::json::ValueRef;
use rpc::mcp::{
    Annotations, Content, ContentSource, ErrorCode, ResourceContents, ResourceDef, SourcePoll,
    Started, StreamKind, Structured, ToolCall, ToolDef, ToolError, ToolOutput,
};
use serde_json::{Map, Value, json};

/// Thumbnail divisor when the call names none: 1280×1024 becomes 640×512, where the 8×16
/// console font still reads as text (each glyph a 4×8 box-filtered cell).
pub const DEFAULT_SCALE: u32 = 2;
/// Where the router serves the full-resolution BMP.
pub const BMP_PATH: &str = "/screen.bmp";

pub const TOOLS: &[ToolDef<Ctx>] = &[ToolDef {
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
}];

pub const RESOURCES: &[ResourceDef<Ctx>] = &[ResourceDef {
    uri: "irix7://screen",
    name: "screen",
    title: Some("Screen"),
    description: "A PNG of the whole display at scale 2 (640x512 for 1280x1024), the same \
                  image screen.capture answers by default.",
    mime_type: Some("image/png"),
    read: read_resource,
}];

fn capture(ctx: &mut Ctx, call: &ToolCall<'_>) -> Result<Started<Ctx>, ToolError> {
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
    let bmp = bmp_url(ctx);
    let fb = board(ctx)?;
    let cap = Capture::start(fb, Format::Png, region, scale).map_err(capture_error)?;
    let facts = facts(cap.mode(), &cap, &bmp);
    Ok(Started::Done(ToolOutput {
        content: alloc::vec![
            Content::stream(
                StreamKind::Image {
                    mime_type: String::from("image/png"),
                },
                Box::new(PngSource { cap }),
            ),
            Content::resource_link(&bmp, "screen.bmp", Some("image/bmp")),
        ],
        structured: Some(Structured::Value(facts)),
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
fn facts(mode: &Mode, cap: &Capture, bmp: &str) -> Value {
    let s = cap.shrink();
    let pixels = match mode.pixels {
        PixelKind::Ci8 { .. } => "ci8",
        PixelKind::Rgb8 => "rgb8",
        PixelKind::Rgb24 => "rgb24",
    };
    let mut m = Map::new();
    m.insert(
        "mode".into(),
        json!({"width": mode.width, "height": mode.height, "pixels": pixels}),
    );
    m.insert(
        "region".into(),
        json!({"x": s.region.x, "y": s.region.y, "width": s.region.width,
            "height": s.region.height}),
    );
    m.insert("scale".into(), s.scale.into());
    m.insert("width".into(), s.width.into());
    m.insert("height".into(), s.height.into());
    m.insert("bmp".into(), bmp.into());
    Value::Object(m)
}

/// The BMP's absolute URL when the module knows its address, else its path.
fn bmp_url(ctx: &Ctx) -> String {
    match ctx.net.ip {
        Some([a, b, c, d]) => format!("http://{a}.{b}.{c}.{d}:{}{BMP_PATH}", ctx.net.port),
        None => String::from(BMP_PATH),
    }
}

/// The graphics board, or why there is none.
pub fn board(ctx: &mut Ctx) -> Result<&mut dyn Framebuffer, ToolError> {
    match ctx.screen.as_deref_mut() {
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
}

impl ContentSource<Ctx> for PngSource {
    fn read(&mut self, ctx: &mut Ctx, buf: &mut [u8]) -> Result<(usize, SourcePoll), ToolError> {
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
pub fn open_resource(ctx: &mut Ctx, uri: &str) -> Result<Content<Ctx>, ToolError> {
    let fb = board(ctx)?;
    let cap = Capture::start(fb, Format::Png, None, DEFAULT_SCALE).map_err(capture_error)?;
    Ok(Content::stream(
        StreamKind::ResourceBlob {
            uri: String::from(uri),
            mime_type: String::from("image/png"),
        },
        Box::new(PngSource { cap }),
    ))
}

/// `irix7://screen` encoded whole in one call: what a server without streamed reads answers.
fn read_resource(ctx: &mut Ctx, uri: &str) -> Result<Vec<ResourceContents>, ToolError> {
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
mod tests {
    use crate::hil::framebuffer::PixelKind;
    use crate::services::screen::fake::FakeFb;
    use crate::services::screen::png::decode::decode;
    use crate::tools::testing::fake;
    use crate::tools::testing::harness::{call, request, server_with};
    use alloc::boxed::Box;
    use base64::Engine;
    use base64::engine::general_purpose::STANDARD;
    use serde_json::{Value, json};

    /// A 96×64 CI screen, black, with a white 8×16 cell at (16, 32).
    fn board() -> FakeFb {
        let mut fb = FakeFb::new(96, 64, PixelKind::Ci8 { cmap_base: 0 });
        fb.set_cmap(1, [255, 255, 255]);
        for y in 32..48 {
            for x in 16..24 {
                fb.set(x, y, 1);
            }
        }
        fb
    }

    fn server(fb: Option<FakeFb>) -> rpc::mcp::McpServer<crate::tools::Ctx> {
        let mut ctx = fake::ctx();
        ctx.screen = fb.map(|f| Box::new(f) as Box<dyn crate::hil::framebuffer::Framebuffer>);
        server_with(ctx)
    }

    fn image(r: &Value) -> crate::services::screen::png::decode::Decoded {
        let block = &r["content"][0];
        assert_eq!(block["type"], "image", "{r}");
        assert_eq!(block["mimeType"], "image/png");
        decode(&STANDARD.decode(block["data"].as_str().unwrap()).unwrap())
    }

    #[test]
    fn captures_a_thumbnail_at_the_default_scale_with_a_bmp_link() {
        let mut s = server(Some(board()));
        let r = call(&mut s, "screen.capture", json!({}));
        let d = image(&r);
        assert_eq!((d.width, d.height), (48, 32));
        let px = |x: usize, y: usize| &d.rgb[(y * 48 + x) * 3..][..3];
        assert_eq!(px(8, 16), [255, 255, 255]);
        assert_eq!(px(11, 23), [255, 255, 255]);
        assert_eq!(px(12, 16), [0, 0, 0]);
        let link = &r["content"][1];
        assert_eq!(link["type"], "resource_link");
        assert_eq!(link["uri"], "http://172.31.77.2:7801/screen.bmp");
        assert_eq!(link["mimeType"], "image/bmp");
        let st = &r["structuredContent"];
        assert_eq!(
            st["mode"],
            json!({"width": 96, "height": 64, "pixels": "ci8"})
        );
        assert_eq!(
            (st["width"].as_u64(), st["height"].as_u64()),
            (Some(48), Some(32))
        );
        assert_eq!(st["scale"], 2);
    }

    #[test]
    fn a_region_at_full_scale() {
        let mut s = server(Some(board()));
        let r = call(
            &mut s,
            "screen.capture",
            json!({"scale": 1, "region": {"x": 20, "y": 40, "width": 10, "height": 3}}),
        );
        let d = image(&r);
        assert_eq!((d.width, d.height), (10, 3));
        assert_eq!(&d.rgb[..3], [255, 255, 255]);
        assert_eq!(&d.rgb[4 * 3..5 * 3], [0, 0, 0]);
        assert_eq!(
            r["structuredContent"]["region"],
            json!({"x": 20, "y": 40, "width": 10, "height": 3})
        );
    }

    #[test]
    fn bad_regions_and_scales_are_inval() {
        let mut s = server(Some(board()));
        let r = call(
            &mut s,
            "screen.capture",
            json!({"region": {"x": 90, "y": 0, "width": 10, "height": 10}}),
        );
        assert_eq!(r["isError"], true);
        let text = r["content"][0]["text"].as_str().unwrap();
        assert!(
            text.starts_with("E_INVAL: region 10x10 at (90,0)"),
            "{text}"
        );
        let r = call(
            &mut s,
            "screen.capture",
            json!({"scale": 16, "region": {"x": 0, "y": 0, "width": 15, "height": 20}}),
        );
        assert_eq!(r["isError"], true);
        assert!(
            r["content"][0]["text"]
                .as_str()
                .unwrap()
                .starts_with("E_INVAL")
        );
    }

    #[test]
    fn no_board_is_nodev_for_the_tool_and_the_resource() {
        let mut s = server(None);
        let r = call(&mut s, "screen.capture", json!({}));
        assert_eq!(r["isError"], true);
        assert!(
            r["content"][0]["text"]
                .as_str()
                .unwrap()
                .starts_with("E_NODEV")
        );
        let r = request(&mut s, "resources/read", json!({"uri": "irix7://screen"}));
        assert!(r.get("error").is_some(), "{r}");
    }

    #[test]
    fn a_board_that_times_out_mid_capture_is_a_timeout_error() {
        let mut fb = board();
        fb.fail_at_row = Some(50);
        let mut s = server(Some(fb));
        let r = call(&mut s, "screen.capture", json!({}));
        assert_eq!(r["isError"], true, "{r}");
        let texts: Vec<&str> = r["content"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect();
        assert!(texts.iter().any(|t| t.starts_with("E_TIMEOUT")), "{r}");
    }

    #[test]
    fn the_streamed_resource_is_the_same_png_read_in_pieces() {
        let mut ctx = fake::ctx();
        ctx.screen = Some(Box::new(board()));
        let whole = match &super::read_resource(&mut ctx, "irix7://screen").unwrap()[..] {
            [rpc::mcp::ResourceContents::Blob { data, .. }] => data.clone(),
            other => panic!("{other:?}"),
        };
        let rpc::mcp::Content::Stream(kind, mut src) =
            super::open_resource(&mut ctx, "irix7://screen").unwrap()
        else {
            panic!("a streamed item");
        };
        assert_eq!(
            kind,
            rpc::mcp::StreamKind::ResourceBlob {
                uri: "irix7://screen".into(),
                mime_type: "image/png".into()
            }
        );
        let (mut png, mut reads, mut buf) = (Vec::new(), 0, [0u8; 100]);
        loop {
            let (n, poll) = src.read(&mut ctx, &mut buf).unwrap();
            png.extend_from_slice(&buf[..n]);
            if poll == rpc::mcp::SourcePoll::End {
                break;
            }
            reads += 1;
        }
        assert_eq!(png, whole);
        assert!(reads > 3, "{reads} reads");
        let mut ctx = fake::ctx();
        assert!(super::open_resource(&mut ctx, "irix7://screen").is_err());
    }

    #[test]
    fn the_resource_is_the_default_thumbnail() {
        let mut s = server(Some(board()));
        let r = request(&mut s, "resources/read", json!({"uri": "irix7://screen"}));
        let c = &r["result"]["contents"][0];
        assert_eq!(c["mimeType"], "image/png");
        let d = decode(&STANDARD.decode(c["blob"].as_str().unwrap()).unwrap());
        assert_eq!((d.width, d.height), (48, 32));
        assert_eq!(&d.rgb[(16 * 48 + 8) * 3..][..3], [255, 255, 255]);
    }

    use alloc::vec::Vec;
}
