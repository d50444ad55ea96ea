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
    ctx.services_mut().screen =
        fb.map(|f| Box::new(f) as Box<dyn crate::hil::framebuffer::Framebuffer>);
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
    ctx.services_mut().screen = Some(Box::new(board()));
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

#[test]
fn one_capture_runs_at_a_time_and_the_next_is_busy_until_it_ends() {
    let mut ctx = fake::ctx();
    ctx.services_mut().screen = Some(Box::new(board()));
    let first = super::open_resource(&mut ctx, "irix7://screen").unwrap();
    let busy = |r: Result<_, rpc::mcp::ToolError>| match r {
        Err(e) => assert_eq!(e.code, rpc::mcp::ErrorCode::Busy, "{e:?}"),
        Ok(_) => panic!("a second capture started while the first ran"),
    };
    busy(super::open_resource(&mut ctx, "irix7://screen").map(|_| ()));
    busy(super::read_resource(&mut ctx, "irix7://screen").map(|_| ()));
    let mut s = server_with(ctx);
    let r = call(&mut s, "screen.capture", json!({}));
    assert_eq!(r["isError"], true, "{r}");
    assert!(
        r["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("E_BUSY: a screen capture is already running"),
        "{r}"
    );
    // The first one's answer ends (here: is dropped), and the room comes back.
    drop(first);
    let r = call(&mut s, "screen.capture", json!({}));
    assert_eq!(image(&r).width, 48);
    let r = call(&mut s, "screen.capture", json!({"scale": 1}));
    assert_eq!(image(&r).width, 96, "each capture gives its room back");
}
